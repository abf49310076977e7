// Incremental scan of a Claude Code transcript (`transcript_path`:
// $CLAUDE_CONFIG_DIR/projects/<mangled cwd>/<session>.jsonl) for compactions, tool results and brief
// reads. Reads only the bytes appended since the last scan; consumes whole lines only.
//
// Claude Code 2.1.332 writes one JSON object per line: `user`, `assistant`, `attachment`, `system`
// (`compact_boundary`, `stop_hook_summary`), and metadata records (`queue-operation`, `api-request*`,
// `last-prompt`, `atis-latch`, `tools-used`, `cost-state`, `mode`, ...; unknown types are tolerated).
// A compaction appends a `{"type":"system","subtype":"compact_boundary",...}` line (then the
// `isCompactSummary` user line); it may reach the file only after PostCompact and the first tool call
// after it, so the hooks are the first signal and this scan the second. A fork (`--fork-session`)
// starts with copies of its parent's latest boundary and summary, uuid and timestamp unchanged: each
// boundary line counts, and the scan reports its uuid (`boundaryId`) and whether it opens the file
// (`atHead`: only metadata records before it), so the guard can tell a fork's copy of a compaction a
// human already verified in another session (src/guard/compaction.ts) from the session's own.
import { closeSync, existsSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { ProtectedPath } from '../../guard/held.js';
import {
  EMPTY_SCAN,
  type BriefOutput,
  type ScanResult,
  type ScanState,
  type SessionMeta,
  type TranscriptCompaction,
} from '../../session/transcript.js';
import { encodeToolResult } from './outputs.js';

const CHUNK = 1 << 16;
const NL = 0x0a;
/** Lines this long or longer are not parsed for the session's identity (they are API snapshots). */
const META_LINE_MAX = 16 << 10;

const BOUNDARY_MARK = Buffer.from('"subtype":"compact_boundary"');
const RESULT_MARK = Buffer.from('"type":"tool_result"');
const BRIEF_MARK = '<<<LATCH-BRIEF';
const LEAD_TYPE = Buffer.from('{"type":"');
/** Records of the conversation (they start with parentUuid, or with one of these types). */
const CONVERSATION_TYPES = new Set(['user', 'assistant', 'system', 'attachment']);
/** A boundary uuid as Claude Code writes it (a UUID); anything else is not an identity. */
const BOUNDARY_ID = /^[0-9A-Za-z][0-9A-Za-z_-]{7,127}$/;

/**
 * What the scan carries between reads (ScanState.group): `{ head: true }` while the bytes read so
 * far hold only metadata records; null otherwise, or when unknown (a state from before this field).
 */
interface ClaudeScanGroup {
  head: true;
}

/** Scan `path` from `prev.offset`. Throws when the file cannot be read (callers fail closed). */
export function scanClaudeTranscript(path: string, prev: ScanState): ScanResult {
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) throw new Error(`transcript ${path} is not a regular file`);
    const dev = String(st.dev);
    const ino = String(st.ino);
    const size = Number(st.size);
    let reset: string | null = null;
    let start: ScanState = prev;
    if (prev.dev !== null && (prev.dev !== dev || prev.ino !== ino)) {
      reset = `transcript ${path} was replaced (device/inode changed)`;
    } else if (size < prev.offset) {
      reset = `transcript ${path} shrank from ${prev.offset} to ${size} bytes`;
    }
    if (reset) start = { ...EMPTY_SCAN };
    const scanner = new LineScanner(start);
    const bytesRead = scanner.run(fd, size);
    const state: ScanState = {
      offset: scanner.offset,
      dev,
      ino,
      compactions: Math.max(scanner.count, reset ? prev.compactions : 0),
      group: scanner.head ? ({ head: true } satisfies ClaudeScanGroup) : null,
    };
    // After a reset only compactions beyond what was already counted are new.
    const compactions = reset ? scanner.found.filter((c) => c.index > prev.compactions) : scanner.found;
    return {
      state,
      compactions,
      outputs: scanner.outputs,
      turnContext: null,
      briefOutputs: scanner.briefOutputs,
      meta: scanner.metaResult(),
      reset,
      badLines: scanner.badLines,
      bytesRead,
    };
  } finally {
    closeSync(fd);
  }
}

class LineScanner {
  offset: number;
  count: number;
  found: TranscriptCompaction[] = [];
  outputs: string[] = [];
  briefOutputs: BriefOutput[] = [];
  badLines = 0;
  /** No conversation record read yet in this file: a boundary here opens it (a fork's copy). */
  head: boolean;
  private meta: { id: string | null; cliVersion: string | null; cwd: string | null } = {
    id: null,
    cliVersion: null,
    cwd: null,
  };

  constructor(s: ScanState) {
    this.offset = s.offset;
    this.count = s.compactions;
    // From the file's start, nothing read yet; past it, only a state that says so (unknown: not the head).
    this.head = s.offset === 0 || (s.group as Partial<ClaudeScanGroup> | null)?.head === true;
  }

  metaResult(): SessionMeta | null {
    const m = this.meta;
    if (m.id === null && m.cliVersion === null && m.cwd === null) return null;
    // A fork names its parent only inside copied content: there is no fork link to report.
    return { ...m, forkedFrom: null };
  }

  run(fd: number, size: number): number {
    let pos = this.offset;
    let carry: Buffer | null = null;
    let read = 0;
    const buf = Buffer.allocUnsafe(CHUNK);
    while (pos < size) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
      if (n <= 0) break;
      read += n;
      pos += n;
      const data: Buffer = carry ? Buffer.concat([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
      // Offset of data[0] in the file.
      const base = pos - data.length;
      let lineStart = 0;
      for (;;) {
        const nl = data.indexOf(NL, lineStart);
        if (nl < 0) break;
        this.line(data.subarray(lineStart, nl), base + nl + 1);
        lineStart = nl + 1;
      }
      this.offset = base + lineStart;
      carry = lineStart < data.length ? Buffer.from(data.subarray(lineStart)) : null;
    }
    return read;
  }

  private line(line: Buffer, end: number): void {
    if (line.length === 0) return;
    // Metadata records start with their type; conversation lines (user, assistant, attachment, system)
    // start with parentUuid. Only `user` and `system` lines matter here.
    const lead = leadType(line);
    const wanted = lead === null || lead === 'user' || lead === 'system';
    // Whether this line is the first conversation record (any line that is not a metadata record is).
    const atHead = this.head;
    if (lead === null || CONVERSATION_TYPES.has(lead)) this.head = false;
    // The boundary's bytes are looked for in EVERY line: an unterminated line the agent left in the
    // file joins the next line Claude Code appends, under the agent's lead type (fail closed below).
    const boundary = line.indexOf(BOUNDARY_MARK) >= 0;
    const result = wanted && !boundary && line.indexOf(RESULT_MARK) >= 0;
    const needMeta = this.meta.id === null || this.meta.cliVersion === null || this.meta.cwd === null;
    if (!boundary && !result && !(needMeta && line.length < META_LINE_MAX)) return;
    let obj: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line.toString('utf8'));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      obj = parsed as Record<string, unknown>;
    } catch {
      this.badLines++;
      // A line with the boundary's bytes that cannot be read is counted as one (fail closed; its time
      // unknown, so it also trips again after a restore).
      // Nor has it an identity, so it is never taken for another session's compaction.
      if (boundary) this.compaction(end, null, null, false);
      return;
    }
    if (needMeta) this.readMeta(obj);
    if (boundary && obj.type === 'system' && obj.subtype === 'compact_boundary')
      this.compaction(
        end,
        typeof obj.timestamp === 'string' ? obj.timestamp : null,
        typeof obj.uuid === 'string' && BOUNDARY_ID.test(obj.uuid) ? obj.uuid : null,
        atHead,
      );
    else if (result && obj.type === 'user') this.toolResults(obj, end);
  }

  private compaction(end: number, at: string | null, boundaryId: string | null, atHead: boolean): void {
    this.count++;
    this.found.push({
      index: this.count,
      endOffset: end,
      via: 'compact_boundary',
      summaryKind: null,
      at,
      boundaryId,
      atHead,
    });
  }

  /** The tool_result blocks of a user line: their ids, and those that carry a brief page. */
  private toolResults(obj: Record<string, unknown>, end: number): void {
    const message = obj.message as { content?: unknown } | undefined;
    const content = message?.content;
    if (!Array.isArray(content)) return;
    const blocks = content.filter(
      (b): b is Record<string, unknown> =>
        !!b && typeof b === 'object' && (b as Record<string, unknown>).type === 'tool_result',
    );
    for (const b of blocks) {
      const id = typeof b.tool_use_id === 'string' ? b.tool_use_id : null;
      if (!id) continue;
      this.outputs.push(id);
      if (!resultText(b.content).includes(BRIEF_MARK)) continue;
      // The line's toolUseResult describes its one call; with several results it is not attributable.
      const record = blocks.length === 1 ? obj.toolUseResult : undefined;
      this.briefOutputs.push({
        callId: id,
        output: encodeToolResult(b, record),
        compactionsBefore: this.count,
        endOffset: end,
      });
    }
  }

  private readMeta(obj: Record<string, unknown>): void {
    const m = this.meta;
    if (m.id === null && typeof obj.sessionId === 'string') m.id = obj.sessionId;
    if (m.cliVersion === null && typeof obj.version === 'string') m.cliVersion = obj.version;
    if (m.cwd === null && typeof obj.cwd === 'string') m.cwd = obj.cwd;
  }
}

/** The text of a tool_result's content: a string, or the text blocks of an array. */
export function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c) =>
      c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string'
        ? (c as { text: string }).text
        : '',
    )
    .join('\n');
}

/** The type of a line that starts with it (`{"type":"queue-operation",...`), else null. */
export function leadType(line: Buffer): string | null {
  if (line.length < LEAD_TYPE.length || line.compare(LEAD_TYPE, 0, LEAD_TYPE.length, 0, LEAD_TYPE.length) !== 0)
    return null;
  const e = line.indexOf(0x22, LEAD_TYPE.length);
  if (e < 0 || e - LEAD_TYPE.length > 64) return null;
  return line.toString('latin1', LEAD_TYPE.length, e);
}

/** The transcript of session `id` beside `near` (Claude Code keeps a project's sessions in one directory). */
export function findClaudeTranscript(near: string, id: string): string | null {
  if (!/^[A-Za-z0-9._-]+$/.test(id) || id === '.' || id === '..') return null;
  const p = join(dirname(near), `${id}.jsonl`);
  try {
    return existsSync(p) && statSync(p).isFile() ? p : null;
  } catch {
    return null;
  }
}

/** A fork's history is copied into its own file: nothing of the parent's file is inherited. */
export function claudeInheritedEnd(_path: string): number | null {
  return null;
}

/** Claude Code's user configuration directory: $CLAUDE_CONFIG_DIR, else ~/.claude. */
export function claudeConfigDir(env: NodeJS.ProcessEnv): string {
  return env.CLAUDE_CONFIG_DIR ? resolve(env.CLAUDE_CONFIG_DIR) : join(env.HOME || homedir(), '.claude');
}

/**
 * Claude Code's hook registration and what can switch it off (`disableAllHooks`, a hook replaced),
 * protected in every state: the user settings, the project's `.claude/` (settings.json,
 * settings.local.json), the managed settings, and the shell snapshots Claude Code sources before every
 * Bash call outside any wrapper.
 */
export function claudeRegistrationPaths(env: NodeJS.ProcessEnv, cwd: string): ProtectedPath[] {
  const dir = claudeConfigDir(env);
  // Claude Code loads the project's `.claude/` and `.mcp.json` from the directory it was started in,
  // which the payload's cwd no longer names after a `cd`: every ancestor of the cwd, and
  // CLAUDE_PROJECT_DIR, are protected.
  const projects = new Set<string>();
  for (let d = resolve(cwd), i = 0; i < 64; i++) {
    projects.add(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  if (env.CLAUDE_PROJECT_DIR) projects.add(resolve(env.CLAUDE_PROJECT_DIR));
  const home = env.HOME || homedir();
  return [
    ...[...projects].flatMap((p) => [
      { path: join(p, '.claude'), reason: `the project’s Claude Code settings (${join(p, '.claude')}/)` },
      {
        path: join(p, '.mcp.json'),
        reason: `the project’s MCP servers (${join(p, '.mcp.json')}), started by Claude Code`,
      },
    ]),
    { path: join(dir, '.claude.json'), reason: 'the Claude Code state and MCP servers (.claude.json)' },
    { path: join(home, '.claude.json'), reason: 'the Claude Code state and MCP servers (~/.claude.json)' },
    { path: join(dir, 'plugins'), reason: 'the Claude Code plugins (their hooks and MCP servers)' },
    { path: join(dir, 'settings.json'), reason: 'the Claude Code hook registration (settings.json)' },
    { path: join(dir, 'settings.local.json'), reason: 'the Claude Code user settings (settings.local.json)' },
    { path: join(dir, 'cowork_settings.json'), reason: 'the Claude Code user settings (cowork_settings.json)' },
    {
      path: join(dir, 'shell-snapshots'),
      reason: 'Claude Code’s shell snapshots (sourced before every Bash call)',
    },
    {
      path: process.platform === 'darwin' ? '/Library/Application Support/ClaudeCode' : '/etc/claude-code',
      reason: 'the Claude Code managed settings',
    },
  ];
}
