// `latch doctor FILE` for a Claude Code transcript ($CLAUDE_CONFIG_DIR/projects/<mangled cwd>/<session>.jsonl),
// in the spirit of the Codex fsck (src/agents/codex/fsck/): what the file holds (sessions, writer
// versions, line types, lines that are not JSON), each compaction (its compact_boundary line and the
// isCompactSummary line after it), the tool calls after each compaction and how they ended (ran, error,
// blocked by a PreToolUse hook: `PreToolUse:<Tool> hook error: …`, and whether the text names Latch),
// the Latch brief pages read (the one page-read rule, src/continuity/page-read.ts, with Claude Code's
// toolOutput) and, when the Latch store knows the session (opened read-only), the cross-check: the
// session's state, the compactions the store saw against the file's, the denials it recorded against
// the calls blocked in the file, the calls that ran while it held the session, and each checkpoint's
// transcript prefix hash against this file.
//
// Exit codes (the Codex doctor's vocabulary): 0 healthy (no ERROR or WARN finding), 1 damage (an ERROR:
// the file is damaged or contradicts Latch's record; or a WARN: something a healthy Claude Code does not
// write), 2 unreadable. Exit 3 (an unqualified writer) does not apply: Latch qualifies no Claude Code
// release (every resume gets the full brief), and the report says so. NOTE findings do not change the exit.
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { errorMessage, isLatchError, LatchError } from '../../base/errors.js';
import { dbPath } from '../../base/paths.js';
import { homeOf, json, type Io } from '../../commands/io.js';
import { pageRead, parsePages, type BriefDigest } from '../../continuity/page-read.js';
import { openStore, type Db } from '../../store/store.js';
import { claudeToolOutput, encodeToolResult } from './outputs.js';
import { classifyTool } from './tools.js';
import { resultText } from './transcript.js';

export type ClaudeSeverity = 'error' | 'warning' | 'notice';
export type ClaudeDoctorExit = 0 | 1 | 2;

export interface ClaudeFinding {
  code: string;
  severity: ClaudeSeverity;
  message: string;
  /** How many times it occurred. */
  count: number;
  /** 1-based line numbers of the first occurrences (at most LIST_CAP). */
  lines: number[];
}

export type CallOutcome = 'ran' | 'error' | 'blocked' | 'no_result';

export interface ClaudeCall {
  /** The assistant line holding the tool_use. */
  line: number;
  /** The user line holding its tool_result (null: none in the file). */
  result_line: number | null;
  id: string | null;
  tool: string;
  /** Latch's classification (src/agents/claude/tools.ts): shell | patch | mcp | agent | unknown, null = read-only tool. */
  kind: string | null;
  summary: string;
  timestamp: string | null;
  /** compact_boundary lines before it in the file. */
  compaction: number;
  outcome: CallOutcome;
  /** The error or the hook's reason (first line, clipped). */
  detail: string | null;
  exit_code: number | null;
  /** For a blocked call: which hook, whether its text names Latch, and whether Latch records such a block (a fail-closed crash or a touch of Latch's own files is denied without a store record). */
  blocked: { hook: string; names_latch: boolean; unrecorded: boolean } | null;
}

export interface ClaudeCompaction {
  index: number;
  line: number;
  session_id: string | null;
  uuid: string | null;
  timestamp: string | null;
  trigger: string | null;
  pre_tokens: number | null;
  post_tokens: number | null;
  /** The isCompactSummary user line after it (null: none before the next boundary or the end). */
  summary_line: number | null;
  /** The tool calls from this boundary to the next one. */
  calls_after: ClaudeCall[];
  calls_after_truncated: number;
}

export interface BriefReadInfo {
  line: number;
  call_id: string | null;
  /** What the page block says of itself (null: no complete header). */
  session: string | null;
  version: number | null;
  page: number | null;
  total: number | null;
  ok: boolean;
  reasons: string[];
  /** store: against the Latch brief version the store checked it with; page: only against its own header (no brief to compare). */
  checked_against: 'store' | 'page';
  /** What the store recorded for this read (null: no record). */
  store_ok: boolean | null;
}

export interface ClaudeStoreCheck {
  home: string;
  status: 'not_found' | 'unreadable' | 'session_unknown' | 'checked';
  detail: string;
  session_id: string | null;
  agent?: string;
  policy?: string;
  state?: string;
  state_reason?: string | null;
  transcript_path?: string | null;
  compactions?: {
    seq: number;
    trigger: string | null;
    observed_via: string[];
    checkpoint_id: string | null;
    tripped_at: string | null;
    in_file: boolean;
  }[];
  checkpoints?: {
    id: string;
    compaction_seq: number;
    transcript_path: string | null;
    transcript_size: number | null;
    transcript_sha256: string | null;
    prefix_now_sha256: string | null;
    prefix: 'same' | 'rewritten' | 'shorter' | 'not_recorded';
  }[];
  held_intervals?: { from: string; to: string | null; state: string }[];
  denials?: {
    store: number;
    blocked_by_latch_in_file: number;
    blocked_by_other_hooks_in_file: number;
    missing_in_file: string[];
    missing_in_store: string[];
    in_subagent_transcripts: string[];
  };
  attempts_recorded?: number;
  brief_reads_recorded?: number;
}

export interface ClaudeDoctorReport {
  schema: 'latch.doctor.claude-transcript/1';
  file: string;
  format: 'claude-transcript';
  bytes: number;
  lines: number;
  ok: boolean;
  /** 0 healthy, 1 damage (an ERROR or WARN finding), 2 unreadable. Never 3: see qualification. */
  exit_code: ClaudeDoctorExit;
  unreadable: string | null;
  qualification: { applies: false; detail: string };
  sessions: { session_id: string; first_line: number; last_line: number; lines: number }[];
  /** Claude Code versions (the lines' `version`) and how many lines each wrote. */
  writer: { versions: Record<string, number> };
  /** Lines by `type`; system lines also by subtype. */
  records: Record<string, number>;
  system_subtypes: Record<string, number>;
  bad_lines: { line: number; bytes: number; why: string }[];
  bad_lines_truncated: number;
  truncated_last_line: { line: number; bytes: number } | null;
  compactions: ClaudeCompaction[];
  tool_calls: {
    total: number;
    by_name: Record<string, number>;
    outcomes: Record<CallOutcome, number>;
    /** Every call a hook blocked, before or after a compaction. */
    blocked: ClaudeCall[];
  };
  brief_reads: BriefReadInfo[];
  store: ClaudeStoreCheck | null;
  findings: ClaudeFinding[];
}

export interface ClaudeDoctorOptions {
  file: string;
  json?: boolean;
  /** $LATCH_HOME for the store cross-check (default: the io's); null skips it. */
  latchHome?: string | null;
}

const LIST_CAP = 50;
const CHUNK = 1 << 20;
const QUALIFICATION =
  'Latch does not qualify Claude Code releases (native resume is never used for Claude Code: every resume gets the full brief), so exit 3 does not apply';

/** The line types Claude Code 2.1.332 writes (others are tolerated, noted). */
const KNOWN_TYPES: ReadonlySet<string> = new Set([
  'user',
  'assistant',
  'attachment',
  'system',
  'queue-operation',
  'last-prompt',
  'atis-latch',
  'api-request',
  'api-request-shape',
  'api-request-blob',
  'tools-used',
  'cost-state',
  'mode',
  // written by earlier releases
  'summary',
  'file-history-snapshot',
  'progress',
  'custom-title',
]);

// ---------------------------------------------------------------------------------------------
// Format sniffing (src/cli.ts routes `latch doctor FILE` with it)

/**
 * Which doctor reads FILE: `claude` when one of its first lines is a Claude Code transcript record (a
 * top-level string `sessionId` and `type`, no Codex `payload`, no JSON-RPC fields) and none is a Codex
 * rollout or app-server line; `codex` otherwise (a zstd file, a missing or unreadable file, anything
 * else: the Codex doctor's reading and messages are unchanged).
 */
export function sniffTranscriptFormat(file: string): 'claude' | 'codex' {
  let fd = -1;
  try {
    fd = openSync(file, 'r');
    if (!fstatSync(fd).isFile()) return 'codex';
    const buf = Buffer.alloc(256 << 10);
    const n = readSync(fd, buf, 0, buf.length, 0);
    if (n >= 4 && buf.readUInt32BE(0) === 0x28b52ffd) return 'codex';
    const text = buf.toString('utf8', 0, n);
    let claude = 0;
    let seen = 0;
    for (const line of text.split('\n')) {
      if (seen >= 20) break;
      const t = line.trim();
      if (!t) continue;
      seen++;
      let o: unknown;
      try {
        o = JSON.parse(t);
      } catch {
        continue;
      }
      if (!o || typeof o !== 'object' || Array.isArray(o)) continue;
      const r = o as Record<string, unknown>;
      // A Codex rollout line has no top-level sessionId (its id is inside a payload), nor has a JSON-RPC message.
      if (typeof r.sessionId === 'string' && typeof r.type === 'string' && !('payload' in r)) claude++;
      else if ('payload' in r || 'jsonrpc' in r || 'method' in r || 'result' in r) return 'codex';
    }
    return claude > 0 ? 'claude' : 'codex';
  } catch {
    return 'codex';
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// The command

export async function claudeTranscriptDoctor(io: Io, opts: ClaudeDoctorOptions): Promise<number> {
  const latchHome = opts.latchHome === undefined ? homeOf(io) : opts.latchHome;
  const report = doctorClaudeFile(opts.file, { latchHome });
  if (opts.json) json(io, report);
  else io.out(renderClaudeReport(report));
  if (report.unreadable && !opts.json) io.err(`latch doctor: ${report.unreadable}\n`);
  return report.exit_code;
}

// ---------------------------------------------------------------------------------------------
// Reading the file

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

class Findings {
  readonly map = new Map<string, ClaudeFinding>();
  add(code: string, severity: ClaudeSeverity, message: string, line?: number): void {
    let f = this.map.get(code);
    if (!f) {
      f = { code, severity, message, count: 0, lines: [] };
      this.map.set(code, f);
    }
    f.count++;
    if (line !== undefined && f.lines.length < LIST_CAP) f.lines.push(line);
  }
}

interface PendingRead {
  line: number;
  callId: string | null;
  envelope: string;
  text: string;
}

class Analyser {
  lines = 0;
  bytes = 0;
  /** Lines that are Claude Code records (a sessionId, or a known type). */
  claudeRecords = 0;
  records = new Map<string, number>();
  subtypes = new Map<string, number>();
  versions = new Map<string, number>();
  sessions = new Map<string, { session_id: string; first_line: number; last_line: number; lines: number }>();
  bad: ClaudeDoctorReport['bad_lines'] = [];
  badDropped = 0;
  truncated: { line: number; bytes: number } | null = null;
  compactions: ClaudeCompaction[] = [];
  calls: ClaudeCall[] = [];
  callById = new Map<string, ClaudeCall>();
  toolNames = new Map<string, number>();
  reads: PendingRead[] = [];
  readonly f = new Findings();
  private uuids = new Set<string>();
  private unknown = new Map<string, { count: number; first: number }>();
  private awaitingSummary: ClaudeCompaction | null = null;

  line(buf: Buffer, terminated: boolean): void {
    const n = ++this.lines;
    this.bytes += buf.length + (terminated ? 1 : 0);
    let end = buf.length;
    while (end > 0 && (buf[end - 1] === 0x0d || buf[end - 1] === 0x20)) end--;
    if (end === 0) {
      if (terminated) this.f.add('blank_line', 'warning', 'blank line (Claude Code never writes one)', n);
      return;
    }
    let o: unknown;
    try {
      o = JSON.parse(buf.toString('utf8', 0, end));
    } catch (err) {
      if (!terminated) {
        this.truncated = { line: n, bytes: end };
        this.f.add(
          'truncated_last_line',
          'error',
          'the last line is cut off (no newline and not a complete JSON object): the writer stopped mid-line, or the file was truncated',
          n,
        );
        return;
      }
      this.badLine(
        n,
        end,
        `not valid JSON (${clip(errorMessage(err), 60)}; starts ${JSON.stringify(clip(buf.toString('utf8', 0, Math.min(end, 60)), 60))})`,
      );
      return;
    }
    if (!isObj(o)) {
      this.badLine(n, end, 'valid JSON but not an object');
      return;
    }
    if (!terminated)
      this.f.add(
        'missing_final_newline',
        'warning',
        'the last line has no newline (Claude Code ends every line with one)',
        n,
      );
    this.record(o, n);
  }

  private badLine(n: number, bytes: number, why: string): void {
    this.f.add('parse_error', 'error', 'a line is not a JSON object (damaged or edited)', n);
    if (this.bad.length < LIST_CAP) this.bad.push({ line: n, bytes, why });
    else this.badDropped++;
  }

  private record(o: Obj, n: number): void {
    const type = str(o.type);
    if (type === null) {
      this.f.add('not_a_record', 'warning', 'a JSON line without a string `type` (not a Claude Code record)', n);
      return;
    }
    this.records.set(type, (this.records.get(type) ?? 0) + 1);
    if (KNOWN_TYPES.has(type) || typeof o.sessionId === 'string') this.claudeRecords++;
    if (!KNOWN_TYPES.has(type)) {
      const u = this.unknown.get(type);
      if (u) u.count++;
      else this.unknown.set(type, { count: 1, first: n });
    }
    const sid = str(o.sessionId);
    if (sid !== null) {
      const s = this.sessions.get(sid);
      if (s) {
        s.last_line = n;
        s.lines++;
      } else this.sessions.set(sid, { session_id: sid, first_line: n, last_line: n, lines: 1 });
    }
    const version = str(o.version);
    if (version !== null) this.versions.set(version, (this.versions.get(version) ?? 0) + 1);
    // The conversation chain: every parentUuid names a line earlier in the file (a fork copies the lines it starts from).
    const parent = str(o.parentUuid);
    if (parent !== null && !this.uuids.has(parent))
      this.f.add(
        'broken_chain',
        'warning',
        'a line’s parentUuid names no earlier line of the file: lines before it were lost, reordered or edited',
        n,
      );
    const uuid = str(o.uuid);
    if (uuid !== null) this.uuids.add(uuid);

    if (type === 'system') {
      const sub = str(o.subtype) ?? '(none)';
      this.subtypes.set(sub, (this.subtypes.get(sub) ?? 0) + 1);
      if (sub === 'compact_boundary') this.boundary(o, n);
    } else if (type === 'user') {
      if (o.isCompactSummary === true) this.summary(n);
      this.userLine(o, n);
    } else if (type === 'assistant') this.assistantLine(o, n);
  }

  private boundary(o: Obj, n: number): void {
    if (this.awaitingSummary)
      this.f.add(
        'boundary_without_summary',
        'warning',
        'a compact_boundary line is not followed by its isCompactSummary user line',
        this.awaitingSummary.line,
      );
    const m = isObj(o.compactMetadata) ? o.compactMetadata : {};
    const c: ClaudeCompaction = {
      index: this.compactions.length + 1,
      line: n,
      session_id: str(o.sessionId),
      uuid: str(o.uuid),
      timestamp: str(o.timestamp),
      trigger: str(m.trigger),
      pre_tokens: num(m.preTokens),
      post_tokens: num(m.postTokens),
      summary_line: null,
      calls_after: [],
      calls_after_truncated: 0,
    };
    this.compactions.push(c);
    this.awaitingSummary = c;
  }

  private summary(n: number): void {
    if (!this.awaitingSummary) {
      this.f.add(
        'summary_without_boundary',
        'warning',
        'an isCompactSummary line with no compact_boundary line before it (the boundary was lost or edited out)',
        n,
      );
      return;
    }
    this.awaitingSummary.summary_line = n;
    this.awaitingSummary = null;
  }

  finish(): void {
    if (this.awaitingSummary) {
      this.f.add(
        'boundary_without_summary',
        'warning',
        'a compact_boundary line is not followed by its isCompactSummary user line',
        this.awaitingSummary.line,
      );
      this.awaitingSummary = null;
    }
    for (const u of this.unknown.values())
      this.f.add(
        'unknown_line_type',
        'notice',
        `line type(s) Claude Code 2.1.332 does not write (a newer release; tolerated): ${[...this.unknown.keys()].slice(0, 8).join(', ')}`,
        u.first,
      );
    for (const c of this.calls) {
      if (c.outcome === 'no_result')
        this.f.add(
          'no_tool_result',
          'notice',
          'a tool call has no tool_result in the file (the session was interrupted, or is still running)',
          c.line,
        );
    }
    if (this.sessions.size > 1)
      this.f.add(
        'several_sessions',
        'warning',
        `lines of ${this.sessions.size} sessions in one transcript (Claude Code writes one session per file; a fork gets its own)`,
      );
  }

  private assistantLine(o: Obj, n: number): void {
    const content = isObj(o.message) ? o.message.content : undefined;
    if (!Array.isArray(content)) return;
    for (const b of content) {
      if (!isObj(b) || b.type !== 'tool_use') continue;
      const name = str(b.name) ?? '(no name)';
      const id = str(b.id);
      const call = classifyTool(name, b.input, id);
      const c: ClaudeCall = {
        line: n,
        result_line: null,
        id,
        tool: name,
        kind: call.kind,
        summary: callSummary(name, b.input),
        timestamp: str(o.timestamp),
        compaction: this.compactions.length,
        outcome: 'no_result',
        detail: null,
        exit_code: null,
        blocked: null,
      };
      this.calls.push(c);
      if (id !== null) this.callById.set(id, c);
      this.toolNames.set(name, (this.toolNames.get(name) ?? 0) + 1);
      const k = this.compactions[this.compactions.length - 1];
      if (k) {
        if (k.calls_after.length < LIST_CAP) k.calls_after.push(c);
        else k.calls_after_truncated++;
      }
    }
  }

  private userLine(o: Obj, n: number): void {
    const content = isObj(o.message) ? o.message.content : undefined;
    if (!Array.isArray(content)) return;
    const blocks = content.filter((b): b is Obj => isObj(b) && b.type === 'tool_result');
    for (const b of blocks) {
      const id = str(b.tool_use_id);
      const text = resultText(b.content);
      const c = id !== null ? this.callById.get(id) : undefined;
      if (!c) {
        this.f.add(
          'result_without_call',
          'warning',
          'a tool_result answers no tool_use earlier in the file (lines were lost or edited)',
          n,
        );
      } else {
        c.result_line = n;
        settle(c, b, text);
      }
      if (text.includes('<<<LATCH-BRIEF')) {
        // As the transcript scan records it (src/agents/claude/transcript.ts): the line's toolUseResult
        // describes its one call; with several results it is not attributable.
        const record = blocks.length === 1 ? o.toolUseResult : undefined;
        this.reads.push({ line: n, callId: id, envelope: encodeToolResult(b, record), text });
      }
    }
  }
}

const HOOK_BLOCK = /^(PreToolUse):(\S+) hook error: ([\s\S]*)$/;
/** Latch's denials that are not recorded in the store: a fail-closed crash and a touch of Latch's own files (src/hook.ts, guard.ts preToolShortcut, the setup wrapper). */
const UNRECORDED = /could not check (?:it|this call)|Latch.s own state or registration/;

function settle(c: ClaudeCall, b: Obj, text: string): void {
  const isError = b.is_error === true;
  const block = isError ? HOOK_BLOCK.exec(text) : null;
  if (block) {
    const reason = block[3] ?? '';
    c.outcome = 'blocked';
    c.detail = clip(firstLine(reason), 200);
    c.blocked = { hook: block[1]!, names_latch: /\bLatch\b/.test(reason), unrecorded: UNRECORDED.test(reason) };
    return;
  }
  if (isError) {
    c.outcome = 'error';
    const exit = /^Exit code (\d+)/.exec(text);
    c.exit_code = exit ? Number(exit[1]) : null;
    c.detail = clip(firstLine(text), 200);
    return;
  }
  c.outcome = 'ran';
}

function callSummary(name: string, input: unknown): string {
  const i = isObj(input) ? input : {};
  const s =
    str(i.command) ??
    str(i.file_path) ??
    str(i.notebook_path) ??
    str(i.path) ??
    str(i.description) ??
    str(i.pattern) ??
    str(i.url) ??
    (Object.keys(i).length ? JSON.stringify(i) : name);
  return clip(oneLine(s), 120);
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? '';
}
function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function readLines(path: string, a: Analyser): void {
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new LatchError('E_UNREADABLE', `${path} is a directory`);
    if (!st.isFile()) throw new LatchError('E_UNREADABLE', `${path} is not a regular file`);
    const buf = Buffer.allocUnsafe(CHUNK);
    // The pieces of a line that spans chunks (copied: buf is reused), joined once when it ends.
    let pieces: Buffer[] = [];
    let pos = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, pos);
      if (n <= 0) break;
      pos += n;
      const chunk = buf.subarray(0, n);
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, start);
        if (nl < 0) break;
        const part = chunk.subarray(start, nl);
        a.line(pieces.length ? Buffer.concat([...pieces, part]) : part, true);
        pieces = [];
        start = nl + 1;
      }
      if (start < n) pieces.push(Buffer.from(chunk.subarray(start)));
    }
    if (pieces.length) a.line(Buffer.concat(pieces), false);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Brief reads

function checkRead(r: PendingRead, digest: BriefDigest | null): BriefReadInfo {
  const pages = parsePages(claudeToolOutput(r.envelope).body ?? r.text);
  const p = pages[0];
  let d = digest;
  if (!d) {
    // No Latch brief to compare with: the page is checked against its own header (complete, whole, digest).
    d = p
      ? {
          session: p.session,
          version: p.version,
          pages: Array.from({ length: Math.max(p.total, 0) }, (_, i) => ({
            n: i + 1,
            sha256: i + 1 === p.page ? p.sha256 : '',
          })),
        }
      : { session: '', version: 0, pages: [] };
  }
  const v = pageRead(r.envelope, d, claudeToolOutput);
  return {
    line: r.line,
    call_id: r.callId,
    session: p?.session ?? null,
    version: p?.version ?? null,
    page: p?.page ?? v.page,
    total: p?.total ?? null,
    ok: v.ok,
    reasons: v.reasons,
    checked_against: digest ? 'store' : 'page',
    store_ok: null,
  };
}

// ---------------------------------------------------------------------------------------------
// The store cross-check (read-only)

interface StoreRows {
  session: {
    session_id: string;
    agent: string;
    policy: string;
    state: string;
    state_reason: string | null;
    transcript_path: string | null;
    created_at: string;
  };
  compactions: {
    seq: number;
    trigger: string | null;
    observed_via: string;
    checkpoint_id: string | null;
    tripped_at: string | null;
  }[];
  checkpoints: {
    id: string;
    compaction_seq: number;
    transcript_path: string | null;
    transcript_size: number | null;
    transcript_sha256: string | null;
  }[];
  transitions: { at: string; to_state: string }[];
  denials: { tool_use_id: string | null; tool_name: string; at: string }[];
  attempts: { tool_use_id: string | null; started_at: string }[];
  reads: { call_id: string; version: number | null; ok: number }[];
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function findSession(db: Db, path: string, ids: string[]): string | null {
  const byPath = db.prepare('SELECT session_id FROM sessions WHERE transcript_path = ? ORDER BY created_at LIMIT 1');
  for (const p of [path, safeRealpath(path)]) {
    const r = byPath.get(p) as { session_id: string } | undefined;
    if (r) return r.session_id;
  }
  const byId = db.prepare('SELECT session_id FROM sessions WHERE session_id = ?');
  for (const id of ids) if (byId.get(id)) return id;
  return null;
}

function loadRows(db: Db, id: string): StoreRows {
  const all = <T>(sql: string): T[] => db.prepare(sql).all(id) as T[];
  return {
    session: db
      .prepare(
        'SELECT session_id, agent, policy, state, state_reason, transcript_path, created_at FROM sessions WHERE session_id = ?',
      )
      .get(id) as StoreRows['session'],
    compactions: all(
      'SELECT seq, trigger, observed_via, checkpoint_id, tripped_at FROM compactions WHERE session_id = ? ORDER BY seq',
    ),
    checkpoints: all(
      'SELECT id, compaction_seq, transcript_path, transcript_size, transcript_sha256 FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq, created_at',
    ),
    transitions: all('SELECT at, to_state FROM transitions WHERE session_id = ? ORDER BY id'),
    denials: all('SELECT tool_use_id, tool_name, at FROM denials WHERE session_id = ? ORDER BY id'),
    attempts: all('SELECT tool_use_id, started_at FROM attempts WHERE session_id = ?'),
    reads: all('SELECT call_id, version, ok FROM brief_reads WHERE session_id = ? ORDER BY id'),
  };
}

function briefDigest(db: Db, session: string, version: number): BriefDigest | null {
  const r = db.prepare('SELECT page_digests FROM briefs WHERE session_id = ? AND version = ?').get(session, version) as
    | { page_digests: string }
    | undefined;
  if (!r) return null;
  const shas = safeJsonArray(r.page_digests);
  return { session, version, pages: shas.map((sha256, i) => ({ n: i + 1, sha256 })) };
}

function safeJsonArray(s: string): string[] {
  try {
    const v = JSON.parse(s) as unknown;
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}

function hashPrefix(path: string, size: number): string | null {
  let fd = -1;
  try {
    fd = openSync(path, 'r');
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    let pos = 0;
    while (pos < size) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
      if (n <= 0) return null;
      h.update(buf.subarray(0, n));
      pos += n;
    }
    return h.digest('hex');
  } catch {
    return null;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** The ids of a session's sub-agent transcripts (`<dir>/<session>/subagents/*.jsonl`) that mention `ids`. */
function inSubagentTranscripts(path: string, session: string, ids: string[]): Set<string> {
  const found = new Set<string>();
  if (ids.length === 0) return found;
  const dir = join(dirname(path), session, 'subagents');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return found;
  }
  for (const n of names) {
    let text = '';
    try {
      text = readFileSync(join(dir, n), 'utf8');
    } catch {
      continue;
    }
    for (const id of ids) if (text.includes(`"${id}"`)) found.add(id);
  }
  return found;
}

function heldIntervals(transitions: StoreRows['transitions']): { from: string; to: string | null; state: string }[] {
  const held: { from: string; to: string | null; state: string }[] = [];
  for (const t of transitions) {
    const open = held.length > 0 && held[held.length - 1]!.to === null;
    if (t.to_state !== 'mutable' && !open) held.push({ from: t.at, to: null, state: t.to_state });
    else if (t.to_state === 'mutable' && open) held[held.length - 1]!.to = t.at;
  }
  return held;
}

function crossCheck(
  a: Analyser,
  path: string,
  home: string,
  reads: BriefReadInfo[],
  pending: PendingRead[],
): ClaudeStoreCheck {
  const base: ClaudeStoreCheck = { home, status: 'not_found', detail: '', session_id: null };
  if (!existsSync(dbPath(home))) return { ...base, detail: `no Latch store at ${dbPath(home)}` };
  let db: Db;
  try {
    db = openStore(home, { create: false, readonly: true });
  } catch (err) {
    return { ...base, status: 'unreadable', detail: errorMessage(err) };
  }
  try {
    const ids = [...a.sessions.keys()];
    const sid = findSession(db, path, ids);
    if (!sid)
      return {
        ...base,
        status: 'session_unknown',
        session_id: ids[0] ?? null,
        detail: ids.length
          ? `the Latch store knows no session of this file (${ids.slice(0, 3).join(', ')}) and no session with this transcript path`
          : 'no session id in the file and no store session for this path',
      };
    const s = loadRows(db, sid);
    const f = a.f;
    const out: ClaudeStoreCheck = {
      ...base,
      status: 'checked',
      session_id: sid,
      detail: `Latch store knows session ${sid}`,
      agent: s.session.agent,
      policy: s.session.policy,
      state: s.session.state,
      state_reason: s.session.state_reason,
      transcript_path: s.session.transcript_path,
      attempts_recorded: s.attempts.length,
      brief_reads_recorded: s.reads.length,
    };
    if (s.session.agent !== 'claude')
      f.add(
        'store_agent_mismatch',
        'warning',
        `the Latch store records session ${sid} as a ${s.session.agent} session, not a Claude Code one`,
      );
    if (s.session.transcript_path && safeRealpath(s.session.transcript_path) !== safeRealpath(path))
      out.detail += `; FILE is not the recorded transcript ${s.session.transcript_path} (a copy?)`;

    // Compactions: the n-th store compaction is the n-th compact_boundary of the file.
    const T = a.compactions.length;
    const byseq = new Map(s.compactions.map((c) => [c.seq, c]));
    const cps = new Set(s.checkpoints.map((c) => c.id));
    out.compactions = s.compactions.map((c) => ({
      seq: c.seq,
      trigger: c.trigger,
      observed_via: safeJsonArray(c.observed_via),
      checkpoint_id: c.checkpoint_id,
      tripped_at: c.tripped_at,
      in_file: c.seq >= 1 && c.seq <= T,
    }));
    for (const k of a.compactions) {
      const c = byseq.get(k.index);
      if (!c) {
        f.add(
          'store_missing_compaction',
          'error',
          'a compaction in the file has no record in the Latch store (Latch did not see it)',
          k.line,
        );
        continue;
      }
      if (c.trigger && k.trigger && c.trigger !== k.trigger)
        f.add(
          'trigger_mismatch',
          'warning',
          `the store recorded a different trigger for a compaction than its compact_boundary line (${c.trigger} vs ${k.trigger})`,
          k.line,
        );
      if (!c.checkpoint_id || !cps.has(c.checkpoint_id))
        f.add('no_checkpoint', 'error', 'a compaction has no checkpoint in the Latch store', k.line);
      if (!c.tripped_at) f.add('no_trip', 'error', 'a compaction did not trip the policy in the Latch store', k.line);
    }
    for (const c of s.compactions) {
      if (c.seq <= T) continue;
      const via = safeJsonArray(c.observed_via);
      if (via.length > 0 && via.every((v) => v === 'pre_compact') && !c.tripped_at)
        f.add(
          'pre_compact_only',
          'notice',
          `the store recorded compaction #${c.seq} from PreCompact alone (Claude Code may give up after PreCompact: no compaction then)`,
        );
      else if (via.includes('transcript'))
        f.add(
          'transcript_missing_compaction',
          'error',
          `Latch read compaction #${c.seq} in the transcript, but the file shows only ${T}: the transcript lost lines or was rewritten`,
        );
      else
        f.add(
          'transcript_missing_compaction',
          'warning',
          `the store recorded compaction #${c.seq} (via ${via.join(' + ') || '?'}) but the file shows only ${T} compact_boundary line(s) (Claude Code writes the boundary late: if the session is still running, check again after its turn ends)`,
        );
    }

    // Checkpoints: the transcript prefix hashed at each one, against this file.
    out.checkpoints = s.checkpoints.map((c) => {
      let prefix: NonNullable<ClaudeStoreCheck['checkpoints']>[number]['prefix'] = 'not_recorded';
      let now: string | null = null;
      if (c.transcript_size !== null && c.transcript_sha256) {
        if (a.bytes < c.transcript_size) {
          prefix = 'shorter';
          f.add(
            'prefix_rewritten',
            'error',
            `the file is shorter (${a.bytes} bytes) than the ${c.transcript_size} bytes hashed at checkpoint ${c.id}: it was truncated or rewritten`,
          );
        } else {
          now = hashPrefix(path, c.transcript_size);
          if (now === c.transcript_sha256) prefix = 'same';
          else {
            prefix = 'rewritten';
            f.add(
              'prefix_rewritten',
              'error',
              `prefix rewritten: the first ${c.transcript_size} bytes differ from what checkpoint ${c.id} hashed`,
            );
          }
        }
      }
      return {
        id: c.id,
        compaction_seq: c.compaction_seq,
        transcript_path: c.transcript_path,
        transcript_size: c.transcript_size,
        transcript_sha256: c.transcript_sha256,
        prefix_now_sha256: now,
        prefix,
      };
    });

    // Denials vs calls blocked in the file.
    const held = heldIntervals(s.transitions);
    out.held_intervals = held;
    const denied = s.denials.map((d) => d.tool_use_id).filter((x): x is string => !!x);
    const deniedSet = new Set(denied);
    const blockedLatch = a.calls.filter((c) => c.outcome === 'blocked' && c.blocked?.names_latch);
    const blockedOther = a.calls.filter((c) => c.outcome === 'blocked' && !c.blocked?.names_latch).length;
    const absent = denied.filter((id) => !a.callById.has(id));
    const sub = inSubagentTranscripts(path, sid, absent);
    const missingInFile: string[] = [];
    for (const id of denied) {
      const c = a.callById.get(id);
      if (!c) {
        if (sub.has(id)) continue;
        missingInFile.push(id);
        f.add(
          'denial_not_in_transcript',
          'error',
          'a denial Latch recorded has no blocked call in the file (the call is not in it: lines were lost, or FILE is not this session’s transcript)',
        );
      } else if (c.outcome === 'no_result') {
        missingInFile.push(id);
        f.add(
          'denial_without_result',
          'warning',
          'a call Latch denied has no tool_result in the file (the file ends before it, or lost it)',
          c.line,
        );
      } else if (c.outcome !== 'blocked') {
        missingInFile.push(id);
        f.add(
          'denial_not_in_transcript',
          'error',
          `a call Latch denied is not blocked in the file: it ${c.outcome === 'error' ? 'ran and failed' : 'ran'} (the deny did not take, or the transcript was altered)`,
          c.result_line ?? c.line,
        );
      }
    }
    if (sub.size > 0)
      f.add(
        'denial_in_subagent',
        'notice',
        `${sub.size} denial(s) are of sub-agent calls, in the sub-agent transcripts beside the file (not compared)`,
      );
    const missingInStore: string[] = [];
    for (const c of blockedLatch) {
      if (c.id && deniedSet.has(c.id)) continue;
      if (c.blocked?.unrecorded) {
        f.add(
          'block_unrecorded',
          'notice',
          'a call Latch blocked without a store record (it could not check the call, or the call touched Latch’s own files: such denials are not recorded)',
          c.result_line ?? c.line,
        );
        continue;
      }
      if (c.id) missingInStore.push(c.id);
      f.add(
        'block_not_in_store',
        'warning',
        'a call blocked by Latch in the file has no denial in the Latch store',
        c.result_line ?? c.line,
      );
    }
    out.denials = {
      store: s.denials.length,
      blocked_by_latch_in_file: blockedLatch.length,
      blocked_by_other_hooks_in_file: blockedOther,
      missing_in_file: missingInFile.slice(0, LIST_CAP),
      missing_in_store: missingInStore.slice(0, LIST_CAP),
      in_subagent_transcripts: [...sub].slice(0, LIST_CAP),
    };

    // Calls that ran without Latch admitting them (no attempt): while the session was held, and after
    // Latch first saw the session. A tracked call Latch admits (a read while held runs rewritten) has an attempt.
    const attempted = new Set(s.attempts.map((x) => x.tool_use_id).filter((x): x is string => !!x));
    const since = Date.parse(s.session.created_at);
    const inHeld = (t: number) => held.some((h) => t >= Date.parse(h.from) && (h.to === null || t < Date.parse(h.to)));
    for (const c of a.calls) {
      if (c.kind === null || c.outcome === 'blocked' || c.outcome === 'no_result' || !c.id || attempted.has(c.id))
        continue;
      const t = c.timestamp ? Date.parse(c.timestamp) : Number.NaN;
      if (!Number.isFinite(t)) continue;
      if (inHeld(t))
        f.add(
          'ran_while_held',
          'error',
          'a tracked call ran while the Latch store had the session latched or paused, and Latch never admitted it',
          c.line,
        );
      else if (Number.isFinite(since) && t >= since)
        f.add(
          'call_not_in_ledger',
          'warning',
          'a tracked call ran after Latch first saw the session but has no attempt in the store (its hook did not run, or failed open)',
          c.line,
        );
    }

    // Brief reads: checked with the brief version the store checked them with; the store's verdict must agree.
    const rec = new Map(s.reads.map((r) => [r.call_id, r]));
    reads.forEach((info, i) => {
      const r = info.call_id ? rec.get(info.call_id) : undefined;
      if (!r) return;
      // No brief was recorded when the guard read it: the store says "not complete" for that reason alone.
      const digest = r.version !== null ? briefDigest(db, sid, r.version) : null;
      if (!digest) {
        reads[i] = { ...info, store_ok: r.ok === 1 };
        return;
      }
      const mine = checkRead(pending[i]!, digest);
      reads[i] = { ...mine, store_ok: r.ok === 1 };
      if ((r.ok === 1) !== mine.ok)
        f.add(
          'brief_read_mismatch',
          'warning',
          `the store recorded a brief page read as ${r.ok === 1 ? 'complete' : 'not complete'}, but the file shows ${mine.ok ? 'a complete' : 'an incomplete'} read`,
          info.line,
        );
    });
    return out;
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Entry point

/** Analyses a Claude Code transcript. Never throws for a bad file: exit_code 2 says unreadable. */
export function doctorClaudeFile(file: string, opts: { latchHome?: string | null } = {}): ClaudeDoctorReport {
  const path = resolve(file);
  const a = new Analyser();
  let unreadable: string | null = null;
  let store: ClaudeStoreCheck | null = null;
  let reads: BriefReadInfo[] = [];
  try {
    readLines(path, a);
    a.finish();
    if (a.lines === 0) a.f.add('empty_file', 'error', 'the file is empty');
    else if (a.claudeRecords === 0)
      unreadable =
        'not a Claude Code transcript: no line is one of its records (a `sessionId`, or a type Claude Code writes)';
    if (!unreadable) {
      reads = a.reads.map((r) => checkRead(r, null));
      if (opts.latchHome) store = crossCheck(a, path, opts.latchHome, reads, a.reads);
    }
  } catch (err) {
    unreadable = isLatchError(err, 'E_UNREADABLE') ? err.message : `cannot read ${path}: ${errorMessage(err)}`;
  }
  const findings = [...a.f.map.values()];
  const exit: ClaudeDoctorExit =
    unreadable !== null ? 2 : findings.some((f) => f.severity === 'error' || f.severity === 'warning') ? 1 : 0;
  const outcomes: Record<CallOutcome, number> = { ran: 0, error: 0, blocked: 0, no_result: 0 };
  for (const c of a.calls) outcomes[c.outcome]++;
  return {
    schema: 'latch.doctor.claude-transcript/1',
    file: path,
    format: 'claude-transcript',
    bytes: a.bytes,
    lines: a.lines,
    ok: exit === 0,
    exit_code: exit,
    unreadable,
    qualification: { applies: false, detail: QUALIFICATION },
    sessions: [...a.sessions.values()],
    writer: { versions: Object.fromEntries(a.versions) },
    records: Object.fromEntries(a.records),
    system_subtypes: Object.fromEntries(a.subtypes),
    bad_lines: a.bad,
    bad_lines_truncated: a.badDropped,
    truncated_last_line: a.truncated,
    compactions: a.compactions,
    tool_calls: {
      total: a.calls.length,
      by_name: Object.fromEntries(a.toolNames),
      outcomes,
      blocked: a.calls.filter((c) => c.outcome === 'blocked').slice(0, LIST_CAP),
    },
    brief_reads: reads,
    store,
    findings,
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering

function hist(r: Record<string, number>, max = 12): string {
  const e = Object.entries(r);
  if (e.length === 0) return 'none';
  const shown = e.slice(0, max).map(([k, v]) => `${k} ${v}`);
  return shown.join(', ') + (e.length > max ? `, … (${e.length - max} more)` : '');
}

function outcomeText(c: ClaudeCall): string {
  switch (c.outcome) {
    case 'ran':
      return 'ran';
    case 'error':
      return `error${c.detail ? `: ${c.detail}` : ''}`;
    case 'blocked':
      return `BLOCKED by a ${c.blocked?.hook ?? 'PreToolUse'} hook${c.blocked?.names_latch ? ' (Latch)' : ' (not Latch)'}: ${c.detail ?? ''}`;
    default:
      return 'no result in the file';
  }
}

const short = (h: string | null | undefined) => (h ? `${h.slice(0, 12)}…` : '(none)');

/** The human-readable summary. */
export function renderClaudeReport(r: ClaudeDoctorReport): string {
  const out: string[] = [];
  out.push(r.file);
  out.push(`  Claude Code transcript: ${r.lines} lines, ${r.bytes} bytes`);
  if (r.unreadable) {
    out.push(`  UNREADABLE: ${r.unreadable}`);
    if (r.lines === 0) return out.join('\n') + '\n';
  }
  const versions = Object.keys(r.writer.versions);
  out.push(
    `  writer: ${versions.length ? `Claude Code ${versions.join(', ')}` : 'unknown version'} — not qualified: ${r.qualification.detail}`,
  );
  for (const s of r.sessions.slice(0, 5))
    out.push(`  session ${s.session_id} (lines ${s.first_line}..${s.last_line}, ${s.lines} lines)`);
  if (r.sessions.length > 5) out.push(`  … ${r.sessions.length - 5} more sessions`);
  if (r.sessions.length === 0) out.push('  session: no line names one');
  out.push(`  records: ${hist(r.records)}`);
  if (Object.keys(r.system_subtypes).length) out.push(`  system lines: ${hist(r.system_subtypes)}`);
  if (r.bad_lines.length) {
    out.push(`  BAD lines (not JSON objects): ${r.bad_lines.length + r.bad_lines_truncated}`);
    for (const b of r.bad_lines.slice(0, 10)) out.push(`    line ${b.line} (${b.bytes} bytes): ${b.why}`);
  }
  const t = r.tool_calls;
  out.push(
    `  tool calls: ${t.total}${t.total ? ` (${hist(t.by_name)})` : ''}; ran ${t.outcomes.ran}, error ${t.outcomes.error}, blocked by a hook ${t.outcomes.blocked}${t.outcomes.no_result ? `, no result ${t.outcomes.no_result}` : ''}`,
  );
  out.push(`  compactions: ${r.compactions.length}`);
  for (const c of r.compactions) {
    out.push(
      `    #${c.index} at line ${c.line}: trigger ${c.trigger ?? 'unknown'}, preTokens ${c.pre_tokens ?? '?'}, uuid ${c.uuid ?? '(none)'}; summary ${c.summary_line !== null ? `at line ${c.summary_line}` : 'MISSING'}`,
    );
    const n = c.calls_after.length + c.calls_after_truncated;
    out.push(`       tool calls after it: ${n === 0 ? 'none' : n}`);
    for (const x of c.calls_after.slice(0, 20))
      out.push(`       line ${x.line} ${x.tool}: ${x.summary} → ${clip(outcomeText(x), 160)}`);
    if (n > 20) out.push(`       … ${n - 20} more (see --json)`);
  }
  const early = t.blocked.filter((c) => c.compaction === 0);
  if (early.length) {
    out.push(`  blocked before any compaction: ${early.length}`);
    for (const x of early.slice(0, 10))
      out.push(`    line ${x.line} ${x.tool}: ${x.summary} → ${clip(outcomeText(x), 160)}`);
  }
  if (r.brief_reads.length) {
    out.push(`  Latch brief page reads: ${r.brief_reads.length}`);
    for (const b of r.brief_reads.slice(0, 10)) {
      const what =
        b.page !== null
          ? `page ${b.page}/${b.total ?? '?'} of session ${b.session ?? '?'} version ${b.version ?? '?'}`
          : 'no page';
      const against = b.checked_against === 'store' ? 'against the store’s brief' : 'against its own header';
      out.push(
        `    line ${b.line} ${b.call_id ?? ''}: ${what} — ${b.ok ? 'complete' : `NOT complete (${b.reasons.join('; ')})`} (${against}${b.store_ok !== null ? `; store: ${b.store_ok ? 'complete' : b.checked_against === 'page' ? 'not complete: no brief recorded then' : 'not complete'}` : ''})`,
      );
    }
  }
  const st = r.store;
  if (st) {
    out.push(
      `  Latch store ${st.home}: ${st.status === 'checked' ? st.detail : `${st.status.replace('_', ' ')}${st.detail ? ` (${st.detail})` : ''}`}`,
    );
    if (st.status === 'checked') {
      out.push(
        `    agent ${st.agent}, policy ${st.policy}, state now ${st.state}${st.state_reason ? ` (${st.state_reason})` : ''}; ${st.attempts_recorded} attempt(s), ${st.brief_reads_recorded} brief read(s) recorded`,
      );
      for (const c of st.compactions ?? [])
        out.push(
          `    compaction #${c.seq}: checkpoint ${c.checkpoint_id ?? 'NONE'}, ${c.tripped_at ? `tripped ${c.tripped_at}` : 'NOT tripped'}, via ${c.observed_via.join(' + ')}${c.in_file ? '' : ' — NOT in the file'}`,
        );
      for (const c of st.checkpoints ?? [])
        out.push(
          `    checkpoint ${c.id}: transcript prefix ${c.transcript_size ?? '?'} bytes ${short(c.transcript_sha256)}: ${c.prefix === 'rewritten' ? 'REWRITTEN' : c.prefix === 'shorter' ? 'the file is SHORTER' : c.prefix}`,
        );
      for (const h of st.held_intervals ?? []) out.push(`    ${h.state} from ${h.from} to ${h.to ?? 'now'}`);
      const d = st.denials;
      if (d) {
        out.push(
          `    denials: ${d.store} in the store; ${d.blocked_by_latch_in_file} call(s) blocked by Latch in the file${d.blocked_by_other_hooks_in_file ? `, ${d.blocked_by_other_hooks_in_file} by other hooks` : ''}`,
        );
        if (d.missing_in_file.length)
          out.push(`      denied but not blocked in the file: ${d.missing_in_file.join(', ')}`);
        if (d.missing_in_store.length)
          out.push(`      blocked in the file without a denial: ${d.missing_in_store.join(', ')}`);
        if (d.in_subagent_transcripts.length)
          out.push(`      in sub-agent transcripts: ${d.in_subagent_transcripts.join(', ')}`);
      }
    }
  }
  if (r.findings.length === 0 && !r.unreadable) out.push('  findings: none — OK');
  else if (r.findings.length > 0) {
    out.push(`  findings (${r.findings.length}):`);
    for (const f of r.findings) {
      const lines = f.lines.length
        ? ` (line${f.lines.length > 1 ? 's' : ''} ${f.lines.slice(0, 8).join(', ')}${f.lines.length > 8 || f.count > f.lines.length ? ', …' : ''})`
        : '';
      out.push(
        `    ${f.severity === 'error' ? 'ERROR' : f.severity === 'warning' ? 'WARN ' : 'NOTE '} ${f.code}${f.count > 1 ? ` ×${f.count}` : ''}${lines}: ${f.message}`,
      );
    }
  }
  if (r.exit_code === 1) out.push('  verdict: damaged or inconsistent (exit 1)');
  if (r.truncated_last_line)
    out.push(`  truncated last line: line ${r.truncated_last_line.line} (${r.truncated_last_line.bytes} bytes)`);
  return out.join('\n') + '\n';
}
