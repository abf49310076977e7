// Reading the file: its lines (readLines) and what each holds (the Analyser: record checks, compactions, and
// the tool calls paired with their results).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { errorMessage, LatchError } from '../../../base/errors.js';
import { addFinding } from '../../shared/file-doctor.js';
import { encodeToolResult } from '../outputs.js';
import { classifyTool } from '../tools.js';
import { resultText } from '../transcript.js';
import {
  CHUNK,
  type ClaudeCall,
  type ClaudeCompaction,
  type ClaudeDoctorReport,
  type ClaudeFinding,
  type ClaudeSeverity,
  KNOWN_TYPES,
  LIST_CAP,
} from './types.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

class Findings {
  readonly map = new Map<string, ClaudeFinding>();
  add(code: string, severity: ClaudeSeverity, message: string, line?: number): void {
    addFinding(this.map, LIST_CAP, code, severity, message, line);
  }
}

export interface PendingRead {
  line: number;
  callId: string | null;
  envelope: string;
  text: string;
}

export class Analyser {
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
export function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

export function readLines(path: string, a: Analyser): void {
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
