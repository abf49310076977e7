// The rollout / app-server analyser behind `latch doctor FILE`: it is fed lines (LineSplitter) and
// keeps the counts, compactions, tool calls and attempts of the report. It touches no file and no
// store: fsck.ts reads the file, opens the store, cross-checks and builds the report.
import { errorMessage } from '../../../base/errors.js';
import {
  ARGS_KEY,
  CALL_ID_KEY,
  DIGITS,
  digitsAt,
  exitCodeAt,
  FIELD_AT,
  find,
  INPUT_KEY,
  jsonStringEnd,
  matchAt,
  matchWords,
  NAME_KEY,
  Needle,
  PAGED,
  pagedHead,
  payloadTypeAt,
  PieceNeedle,
  PieceScanner,
  quoteAt,
  SCANNED,
  stringEndShort,
  timestampEnd,
  turnIdAt,
  walkFields,
} from './bytes.js';
import { classifyCommand } from '../../../shell/readonly.js';
import { ROLLOUT_RECORD_TYPES } from '../records.js';

/** Server → client methods of the 0.169.0 app-server protocol (generate-ts: ServerNotification, ServerRequest). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(
  (
    'error thread/started thread/status/changed thread/readState/changed thread/archived thread/deleted thread/unarchived thread/closed ' +
    'thread/reverted skills/changed thread/name/updated thread/section/changed thread/attachment/updated thread/goal/updated ' +
    'thread/prediction/updated thread/goal/cleared thread/queue/changed project/changed thread/project/updated ' +
    'thread/environment/connected thread/environment/disconnected thread/settings/updated thread/tokenUsage/updated turn/started ' +
    'hook/started turn/completed hook/completed turn/diff/updated turn/plan/updated item/started item/autoApprovalReview/started ' +
    'item/autoApprovalReview/completed item/completed item/agentMessage/delta item/plan/delta command/exec/outputDelta ' +
    'process/outputDelta process/exited item/commandExecution/outputDelta item/commandExecution/terminalInteraction ' +
    'item/fileChange/outputDelta item/fileChange/patchUpdated item/mcpToolCall/progress account/updated ' +
    'account/gatewayOAuth/changed account/rateLimits/updated app/list/updated fs/changed item/reasoning/summaryTextDelta ' +
    'item/reasoning/summaryPartAdded item/reasoning/textDelta thread/compacted model/rerouted model/verification ' +
    'turn/moderationMetadata model/safetyBuffering/updated thread/realtime/started thread/realtime/itemAdded ' +
    'thread/realtime/item/started thread/realtime/item/transcript/delta thread/realtime/item/completed ' +
    'thread/realtime/transcript/delta thread/realtime/transcript/done thread/realtime/outputAudio/delta thread/realtime/sdp ' +
    'thread/realtime/error thread/realtime/closed windows/worldWritableWarning account/login/completed remoteControl/status/changed ' +
    'mcpServer/startupStatus/updated configWarning deprecationNotice ' +
    // server requests
    'item/commandExecution/requestApproval item/fileChange/requestApproval item/tool/requestUserInput item/tool/call ' +
    'applyPatchApproval execCommandApproval account/chatgptAuthTokens/refresh item/permissions/requestApproval mcpServer/elicitation/request ' +
    // client requests/notifications, when a capture holds both directions
    'initialize initialized thread/start thread/resume thread/fork turn/start turn/interrupt thread/compact/start hooks/list'
  ).split(' '),
);

const SHELL_TOOLS = new Set([
  'exec_command',
  'shell',
  'shell_command',
  'container.exec',
  'local_shell',
  'local_shell_call',
  'Bash',
]);
const PATCH_TOOLS = new Set(['apply_patch', 'Write', 'Edit']);

/** Longest part of one line kept in memory; longer lines keep this head plus TAIL_KEEP bytes. */
export const MAX_KEEP = 8 << 20;
const TAIL_KEEP = 64 << 10;
export const CHUNK = 4 << 20;
export const LIST_CAP = 50;
const ATTEMPT_CAP = 200;
const ENTRY_TEXT_CAP = 2000;
/** The fields key of a call's description when the file has no call text (not a Codex field name). */
const DESCRIBED = '\u0000described';
const ID_CAP = 100_000;
const SMALL_PENDING = 16;

export type Severity = 'error' | 'warning';

export interface Finding {
  code: string;
  severity: Severity;
  message: string;
  /** How many times it occurred (lines, calls, ...). */
  count: number;
  /** 1-based line numbers of the first occurrences (at most 50). */
  lines: number[];
}

export type Outcome = 'ran' | 'failed' | 'blocked' | 'unknown' | 'no_output';

export interface Attempt {
  compaction: number;
  line: number;
  timestamp: string | null;
  call_id: string | null;
  tool: string;
  /** unknown: an app-server call seen only through its blocked PreToolUse run (the stream names no tool). */
  kind: 'shell' | 'patch' | 'mcp' | 'unknown';
  summary: string;
  read_only: boolean | null;
  outcome: Outcome;
  exit_code: number | null;
  detail: string | null;
  output_line: number | null;
  /** app-server: the hook run that blocked the call (PreToolUse), with its output entries. */
  hook?: HookRunInfo;
}

/** A hook run as `hook/completed` reports it (codex app-server). */
export interface HookRunInfo {
  line: number;
  event: string | null;
  status: string | null;
  run_id: string | null;
  source_path: string | null;
  status_message: string | null;
  /** The run's output entries (kind: warning | stop | feedback | context | error); each text at most ENTRY_TEXT_CAP characters. */
  entries: { kind: string; text: string }[];
}

/** What a captured app-server stream shows of hook runs (null for a rollout). */
export interface HookRunsReport {
  started: number;
  completed: number;
  /** `<eventName>:<status>` → count, over hook/completed. */
  by_event_status: Record<string, number>;
  /** The completed runs that blocked, failed or wrote output entries (first LIST_CAP). */
  runs: HookRunInfo[];
  runs_truncated: number;
}

export interface OutcomeCounts {
  total: number;
  ran: number;
  failed: number;
  blocked: number;
  unknown: number;
  no_output: number;
}

export interface CompactionReport {
  /** 1-based count of this compaction within the file. */
  index: number;
  line: number;
  record_ordinal: number | null;
  timestamp: string | null;
  via: string[];
  turn_id: string | null;
  window_number: number | null;
  window_id: string | null;
  previous_window_id: string | null;
  /** auto | manual, from the store or (app-server) inferred; null when unknown. */
  trigger: string | null;
  trigger_source: 'store' | 'inferred' | null;
  /** local: the compacted message holds the summary; remote: `message: ""`. */
  summary: 'local' | 'remote' | null;
  tool_calls_before: Record<string, number>;
  tool_calls_after: Record<string, number>;
  attempts_after: OutcomeCounts;
}

// ---------------------------------------------------------------------------------------------
// Line splitting with bounded memory

/** A line is buf[s..e) (dv: a DataView over buf's bytes); fullLen and tail tell an oversize line (see LineSplitter). */
type LineSink = (
  buf: Buffer,
  dv: DataView,
  s: number,
  e: number,
  fullLen: number,
  tail: Buffer | null,
  terminated: boolean,
) => void;

export class LineSplitter {
  private carry = Buffer.allocUnsafe(1 << 16);
  private carryLen = 0;
  private pending = false;
  private total = 0;
  private tail: Buffer | null = null;
  private tailLen = 0;

  constructor(private readonly sink: LineSink) {}

  push(b: Buffer): void {
    let pos = 0;
    if (this.pending) {
      const nl = b.indexOf(0x0a);
      if (nl < 0) {
        this.append(b, 0, b.length);
        return;
      }
      this.append(b, 0, nl);
      this.flush(true);
      pos = nl + 1;
    }
    const sink = this.sink;
    const dv = new DataView(b.buffer, b.byteOffset, b.length);
    for (;;) {
      const nl = b.indexOf(0x0a, pos);
      if (nl < 0) break;
      sink(b, dv, pos, nl, nl - pos, null, true);
      pos = nl + 1;
    }
    if (pos < b.length) {
      this.pending = true;
      this.append(b, pos, b.length);
    }
  }

  /** Ends the stream; an unterminated last line is emitted with terminated = false. */
  end(): void {
    if (this.pending) this.flush(false);
  }

  private append(b: Buffer, s: number, e: number): void {
    const n = e - s;
    this.total += n;
    const room = MAX_KEEP - this.carryLen;
    if (room > 0) {
      const take = Math.min(room, n);
      if (this.carryLen + take > this.carry.length) {
        const bigger = Buffer.allocUnsafe(Math.min(MAX_KEEP, Math.max(this.carry.length * 2, this.carryLen + take)));
        this.carry.copy(bigger, 0, 0, this.carryLen);
        this.carry = bigger;
      }
      b.copy(this.carry, this.carryLen, s, s + take);
      this.carryLen += take;
    }
    if (this.total > MAX_KEEP) {
      // Oversize: also keep the last TAIL_KEEP bytes.
      if (!this.tail) this.tail = Buffer.allocUnsafe(TAIL_KEEP);
      if (n >= TAIL_KEEP) {
        b.copy(this.tail, 0, e - TAIL_KEEP, e);
        this.tailLen = TAIL_KEEP;
      } else {
        const keep = Math.min(this.tailLen, TAIL_KEEP - n);
        this.tail.copy(this.tail, 0, this.tailLen - keep, this.tailLen);
        b.copy(this.tail, keep, s, e);
        this.tailLen = keep + n;
      }
    }
  }

  private flush(terminated: boolean): void {
    const tail = this.total > MAX_KEEP && this.tail ? this.tail.subarray(0, this.tailLen) : null;
    this.sink(
      this.carry,
      new DataView(this.carry.buffer, this.carry.byteOffset, this.carry.length),
      0,
      this.carryLen,
      this.total,
      tail,
      terminated,
    );
    this.pending = false;
    this.carryLen = 0;
    this.total = 0;
    this.tailLen = 0;
    if (this.carry.length > 1 << 20) this.carry = Buffer.allocUnsafe(1 << 16);
  }
}

// ---------------------------------------------------------------------------------------------
// The analyser

const TYPE_KEY = Buffer.from('"type":"');
const ORD_KEY = Buffer.from('"ordinal":');
const TS_PREFIX = new Needle('{"timestamp":"');
const ORD_TAIL = new Needle(',"ordinal":');
const TYPE_TAIL = new Needle(',"type":"');
/** Searched through `Compac` (item types are capitalised; CommandExecution differs at its 4th byte). */
const CC_ITEM = new PieceNeedle(Buffer.from('"type":"ContextCompaction"'), 15);
const BLOCKED = 'Command blocked by PreToolUse hook: ';
const BLOCKED_BYTES = Buffer.from(BLOCKED);
const OUTPUT_TAIL = new Needle(',"output":"');

const HEAD = 1024;

/**
 * Short names (record types, payload types, tool names) read from bytes without allocating a string
 * per line. A name seen before is found from its first four bytes in a small table and checked
 * against the bytes of the candidate and the quote after them (known()); a new one by a hash of all
 * its bytes, which finds or makes its one canonical string (entry()).
 */
interface NameEntry {
  readonly bytes: Needle;
  readonly str: string;
  /** ROLLOUT_RECORD_TYPES.has(str) */
  readonly known: boolean;
  /** Lines counted with this record type (rollout fast path; flushed into records by finish()). */
  records: number;
  /** Lines counted with this payload type under response_item / event_msg (flushed into payload_types). */
  ri: number;
  em: number;
}

const WORD_BITS = 10;
const WORD_SLOTS = 1 << WORD_BITS;
const WORD_PROBES = 4;

class Names {
  private readonly buckets = new Map<number, NameEntry[]>();
  private readonly pairs = new Map<string, Map<string, string>>();
  /**
   * Names of four bytes or more with no '"' or '\\' by their first four bytes: entry index + 1 (0:
   * empty), at most WORD_PROBES slots after the word's own (names that do not fit are only hashed).
   */
  private readonly byWord = new Int32Array(WORD_SLOTS);
  readonly entries: NameEntry[] = [];
  /** Set by at(): the index of the quote that ends the name, or -1. */
  end = -1;

  /**
   * The entry of a name in byWord that buf[from..] holds, closed by a quote before `to`. That quote
   * is the first one after `from` (the name has none) and is not escaped (the name has no '\\'):
   * where quoteAt and stringEndShort end the name. null when there is none (the caller reads on).
   */
  known(buf: Buffer, dv: DataView, from: number, to: number): NameEntry | null {
    if (from + 4 > to) return null;
    let slot = wordSlot(dv.getInt32(from, true));
    for (let k = 0; k < WORD_PROBES; k++, slot = (slot + 1) & (WORD_SLOTS - 1)) {
      const id = this.byWord[slot]! - 1;
      if (id < 0) return null;
      const c = this.entries[id]!;
      const q = from + c.bytes.length;
      if (q < to && buf[q] === 0x22 && matchWords(buf, dv, from, c.bytes)) return c;
    }
    return null;
  }

  /** The name from `from` up to the first '"' before `to`, left in `end` (-1: none): its entry, or null when none or uncached. */
  at(buf: Buffer, dv: DataView, from: number, to: number): NameEntry | null {
    const hit = this.known(buf, dv, from, to);
    if (hit) {
      this.end = from + hit.bytes.length;
      return hit;
    }
    this.end = quoteAt(buf, from, to);
    return this.end < 0 ? null : this.entry(buf, from, this.end);
  }

  get(buf: Buffer, from: number, to: number): string {
    return this.entry(buf, from, to)?.str ?? buf.toString('utf8', from, to);
  }

  /** The canonical entry for these bytes; null once 10,000 distinct names were seen (not cached). */
  entry(buf: Buffer, from: number, to: number): NameEntry | null {
    const len = to - from;
    let h = len;
    for (let i = from; i < to; i++) h = (Math.imul(h, 31) + buf[i]!) | 0;
    const bucket = this.buckets.get(h);
    if (bucket) {
      outer: for (let k = 0; k < bucket.length; k++) {
        const c = bucket[k]!;
        const cb = c.bytes.bytes;
        if (cb.length !== len) continue;
        for (let i = 0; i < len; i++) if (cb[i] !== buf[from + i]) continue outer;
        return c;
      }
    }
    if (this.entries.length >= 10_000) return null;
    const str = interned(buf.toString('utf8', from, to));
    const entry: NameEntry = {
      bytes: new Needle(buf.subarray(from, to)),
      str,
      known: ROLLOUT_RECORD_TYPES.has(str),
      records: 0,
      ri: 0,
      em: 0,
    };
    this.entries.push(entry);
    if (bucket) bucket.push(entry);
    else this.buckets.set(h, [entry]);
    this.addWord(entry.bytes.bytes, this.entries.length);
    return entry;
  }

  private addWord(b: Buffer, idPlus1: number): void {
    if (b.length < 4 || b.includes(0x22) || b.includes(0x5c)) return;
    let slot = wordSlot(b.readInt32LE(0));
    for (let k = 0; k < WORD_PROBES; k++, slot = (slot + 1) & (WORD_SLOTS - 1)) {
      if (this.byWord[slot] === 0) {
        this.byWord[slot] = idPlus1;
        return;
      }
    }
  }

  pair(a: string, b: string): string {
    let m = this.pairs.get(a);
    if (!m) this.pairs.set(a, (m = new Map()));
    let v = m.get(b);
    if (v === undefined) m.set(b, (v = `${a}/${b}`));
    return v;
  }
}

/**
 * The engine's one shared copy of s (property keys are interned): names are compared with string
 * literals on every line, and two interned strings compare by pointer.
 */
function interned(s: string): string {
  return Object.keys({ [s]: 0 })[0] ?? s;
}

function wordSlot(w: number): number {
  return Math.imul(w, 0x9e3779b1) >>> (32 - WORD_BITS);
}

function emptyCounts(): OutcomeCounts {
  return { total: 0, ran: 0, failed: 0, blocked: 0, unknown: 0, no_output: 0 };
}

/** c[o]++, spelled out: a computed key on this path costs a generic keyed store per call. */
function countOutcome(c: OutcomeCounts, o: Outcome): void {
  switch (o) {
    case 'ran':
      c.ran++;
      return;
    case 'failed':
      c.failed++;
      return;
    case 'blocked':
      c.blocked++;
      return;
    case 'unknown':
      c.unknown++;
      return;
    case 'no_output':
      c.no_output++;
      return;
  }
}

function bump(m: Map<string, number>, k: string, n = 1): void {
  m.set(k, (m.get(k) ?? 0) + n);
}

export function obj(m: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}

function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

function num(x: unknown): number | null {
  return typeof x === 'number' && Number.isFinite(x) ? x : null;
}

/** JSON string body (escaped) → text; tolerant of a cut-off body. */
function unescapeJson(body: string): string {
  let b = body;
  for (let i = 0; i < 8; i++) {
    try {
      return JSON.parse(`"${b}"`) as string;
    } catch {
      b = b.slice(0, -1);
    }
  }
  return body;
}

function oneLine(s: string, max = 160): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

interface PendingCall {
  attempt: Attempt;
  /** The call's fields (name, arguments / input), read again only when the attempt is listed or checked. */
  fields: Record<string, unknown>;
}

/**
 * The calls waiting for their output by call id, with a Map's semantics and order (finish() settles
 * the rest in that order). There is usually one, the call just made: up to SMALL_PENDING are kept
 * in arrays searched by string equality, which spares hashing two fresh id strings per call and a
 * Map that reallocates its table each time it empties; past that, a Map holds them.
 */
class PendingCalls {
  private ids: string[] = [];
  private calls: PendingCall[] = [];
  private map: Map<string, PendingCall> | null = null;

  get size(): number {
    return this.map ? this.map.size : this.ids.length;
  }

  get(id: string): PendingCall | undefined {
    if (this.map) return this.map.get(id);
    const i = this.ids.indexOf(id);
    return i < 0 ? undefined : this.calls[i];
  }

  set(id: string, p: PendingCall): void {
    if (!this.map) {
      const i = this.ids.indexOf(id);
      if (i >= 0) this.calls[i] = p;
      else if (this.ids.length < SMALL_PENDING) {
        this.ids.push(id);
        this.calls.push(p);
      } else {
        this.map = new Map(this.ids.map((k, j) => [k, this.calls[j]!]));
        this.ids = [];
        this.calls = [];
      }
    }
    this.map?.set(id, p);
  }

  /**
   * get() then delete() of the id that is the text of buf[a..z), compared with the ids kept without
   * decoding it while its bytes are ASCII (an ASCII byte is the character of the same code).
   */
  take(buf: Buffer, a: number, z: number): PendingCall | undefined {
    if (this.map) {
      const id = buf.toString('utf8', a, z);
      const p = this.map.get(id);
      if (p) this.delete(id);
      return p;
    }
    for (let i = 0; i < this.ids.length; i++) {
      if (!sameText(this.ids[i]!, buf, a, z)) continue;
      const p = this.calls[i]!;
      this.removeAt(i);
      return p;
    }
    return undefined;
  }

  delete(id: string): void {
    if (this.map) {
      this.map.delete(id);
      if (this.map.size === 0) this.map = null;
      return;
    }
    const i = this.ids.indexOf(id);
    if (i >= 0) this.removeAt(i);
  }

  private removeAt(i: number): void {
    for (let j = i + 1; j < this.ids.length; j++) {
      this.ids[j - 1] = this.ids[j]!;
      this.calls[j - 1] = this.calls[j]!;
    }
    this.ids.pop();
    this.calls.pop();
  }

  values(): PendingCall[] {
    return this.map ? [...this.map.values()] : [...this.calls];
  }

  clear(): void {
    this.ids = [];
    this.calls = [];
    this.map = null;
  }
}

/** s equals the text buf[a..z) decodes to. */
function sameText(s: string, buf: Buffer, a: number, z: number): boolean {
  for (let k = 0; a + k < z; k++) {
    const c = buf[a + k]!;
    if (c >= 0x80) return s === buf.toString('utf8', a, z);
    if (s.charCodeAt(k) !== c) return false;
  }
  return s.length === z - a;
}

interface OpenGroup {
  compacted: boolean;
  item: boolean;
  itemId: string | null;
  legacy: boolean;
  thread: boolean;
}

export type Format = 'rollout' | 'app-server' | 'unknown';
export type Layout = 'paginated' | 'legacy' | null;
export interface WriterInfo {
  cli_version: string | null;
  qualified: boolean;
  allowlist: string[];
  originator: string | null;
  history_mode: string | null;
  source: string | null;
}
export interface SessionInfo {
  session_id: string | null;
  line: number;
  forked_from: string | null;
  cwd: string | null;
}
/** An interval during which the store had the session latched or paused (not allowed to mutate). */
export interface HeldInterval {
  from: string;
  to: string | null;
  state: string;
}

export class Analyser {
  format: Format = 'unknown';
  layout: Layout = null;
  lines = 0;
  bytes = 0;
  parseErrors = 0;
  truncated: { line: number; bytes: number } | null = null;
  readonly names = new Names();
  readonly records = new Map<string, number>();
  readonly payloadTypes = new Map<string, number>();
  readonly unknown = new Map<string, { count: number; first: number }>();
  readonly findings = new Map<string, Finding>();
  readonly sessions: SessionInfo[] = [];
  writer: WriterInfo;
  readonly turnIds = new Set<string>();
  turnCount = 0;
  readonly turnList: string[] = [];
  currentTurn: string | null = null;
  ordFirst: number | null = null;
  ordLast: number | null = null;
  readonly compactions: CompactionReport[] = [];
  private group: OpenGroup | null = null;
  /** A DataView over the current line's buffer (for matchWords). */
  private dv: DataView = new DataView(new ArrayBuffer(0));
  /** Just past the payload type's closing quote on the current line (fast path), or -1. */
  private subEnd = -1;
  /** Tool calls by name, per segment (0: before the first compaction, k: after compaction k); toolNames sums them in finish(). */
  private segments: Map<string, number>[] = [new Map()];
  private segAttempts: OutcomeCounts[] = [emptyCounts()];
  readonly toolNames = new Map<string, number>();
  toolTotal = 0;
  readonly attempts: OutcomeCounts & { read_only_listed: number } = { ...emptyCounts(), read_only_listed: 0 };
  readonly attemptList: Attempt[] = [];
  attemptDropped = 0;
  private readonly pending = new PendingCalls();
  /** The item_completed / item_started lines' search for a compaction item (rare: see PieceScanner). */
  private readonly ccItem = new PieceScanner(CC_ITEM);
  hookBlocked = 0;
  /** app-server: hook runs (hook/started, hook/completed). */
  readonly hookRuns = {
    started: 0,
    completed: 0,
    byEventStatus: new Map<string, number>(),
    runs: [] as HookRunInfo[],
    dropped: 0,
  };
  /** app-server: started and not yet completed, by kind → `<threadId> <id>` → lines of the starts. */
  private readonly open = {
    hook: new Map<string, number[]>(),
    item: new Map<string, number[]>(),
    turn: new Map<string, number[]>(),
  };
  /** app-server: the first and last `emittedAtMs` of the stream (the time it covers), or null. */
  emittedFirst: number | null = null;
  emittedLast: number | null = null;
  /** Set from the store when it knows the session: what Latch recorded of a call it denied, by call id. */
  deniedCalls: Map<string, { tool: string; summary: string | null }> | null = null;
  readonly blockedLatch = new Set<string>();
  blockedOther = 0;
  /** Filled when the store knows the session: the intervals during which it was not allowed to mutate. */
  held: HeldInterval[] = [];
  private readonly roCache = new Map<string, boolean>();
  /** app-server: whether the current turn had a user message before its compaction (→ auto). */
  private turnHadUser = new Map<string, boolean>();
  onSession: ((id: string) => void) | null = null;

  constructor(
    private readonly full: boolean,
    allowlist: readonly string[],
  ) {
    this.writer = {
      cli_version: null,
      qualified: false,
      allowlist: [...allowlist],
      originator: null,
      history_mode: null,
      source: null,
    };
  }

  finding(code: string, severity: Severity, message: string, line?: number): void {
    let f = this.findings.get(code);
    if (!f) {
      f = { code, severity, message, count: 0, lines: [] };
      this.findings.set(code, f);
    }
    f.count++;
    if (line !== undefined && f.lines.length < LIST_CAP) f.lines.push(line);
  }

  // -- lines ----------------------------------------------------------------------------------

  line = (
    buf: Buffer,
    dv: DataView,
    s: number,
    e: number,
    fullLen: number,
    tail: Buffer | null,
    terminated: boolean,
  ): void => {
    const n = ++this.lines;
    this.dv = dv;
    this.bytes += fullLen + (terminated ? 1 : 0);
    // Trailing \r or spaces are not Codex's, but they do not make a line unreadable.
    let end = e;
    while (end > s && (buf[end - 1] === 0x0d || buf[end - 1] === 0x20)) end--;
    if (end === s) {
      if (!terminated) return;
      this.finding('blank_line', 'warning', 'blank line (Codex never writes one)', n);
      return;
    }
    const oversize = tail !== null;
    const last = oversize ? lastNonSpace(tail) : buf[end - 1];
    if (buf[s] !== 0x7b || last !== 0x7d) {
      this.badLine(n, terminated, buf[s] !== 0x7b ? 'not a JSON object' : 'does not end with "}"', buf, s, end);
      return;
    }
    if (this.format === 'unknown') this.detect(buf, s, end);
    if (this.format === 'app-server') {
      this.appServerLine(buf, s, end, n, oversize, terminated);
      return;
    }
    this.rolloutLine(buf, s, end, n, oversize, tail, terminated);
  };

  private badLine(n: number, terminated: boolean, why: string, buf: Buffer, s: number, e: number): void {
    if (!terminated) {
      this.truncated = { line: n, bytes: e - s };
      this.finding(
        'truncated_last_line',
        'error',
        'the last line is cut off (no newline and not a complete JSON object): the writer stopped mid-line',
        n,
      );
      return;
    }
    this.parseErrors++;
    this.finding(
      'parse_error',
      'error',
      `line is not valid JSON (${why}; e.g. ${JSON.stringify(oneLine(buf.toString('utf8', s, Math.min(e, s + 60)), 60))})`,
      n,
    );
  }

  private detect(buf: Buffer, s: number, e: number): void {
    const head = buf.toString('utf8', s, Math.min(e, s + 200));
    if (/^\{"(?:jsonrpc|id|method)"/.test(head) || (/"method":"/.test(head) && !/^\{"(?:timestamp|type)"/.test(head))) {
      this.format = 'app-server';
      return;
    }
    if (/^\{"timestamp":"[^"]*","ordinal":/.test(head)) {
      this.format = 'rollout';
      this.layout = 'paginated';
    } else if (/"type":"/.test(head)) {
      this.format = 'rollout';
      this.layout = 'legacy';
    }
  }

  /** JSON.parse of a whole kept line; null (and a finding) when it does not parse. */
  private parse(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    terminated: boolean,
    oversize: boolean,
  ): Record<string, unknown> | null {
    if (oversize) return null;
    try {
      const v = JSON.parse(buf.toString('utf8', s, e)) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
      this.badLine(n, terminated, 'not a JSON object', buf, s, e);
      return null;
    } catch (err) {
      this.badLine(n, terminated, errorMessage(err).replace(/^Unexpected /, 'unexpected '), buf, s, e);
      return null;
    }
  }

  // -- rollouts -------------------------------------------------------------------------------

  private rolloutLine(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
  ): void {
    const dv = this.dv;
    const headEnd = Math.min(e, s + HEAD);
    // Fast path: {"timestamp":"<ts>","ordinal":<n>,"type":"<type>" read in place, no allocation;
    // first with constant words (a paginated rollout's lines), else a needle at a time.
    let p = s;
    let ord = -1;
    let ti = -1;
    /** The bytes up to the record type were read in the fixed shape (no search). */
    let fastHead = false;
    const paged = pagedHead(buf, dv, s, headEnd);
    if (paged >= 0) {
      ti = paged - TYPE_KEY.length;
      ord = PAGED.ordinal;
      fastHead = true;
    } else if (matchWords(buf, dv, p, TS_PREFIX)) {
      const q = timestampEnd(buf, dv, p + TS_PREFIX.length, Math.min(headEnd, p + 64));
      p = q < 0 ? -1 : q + 1;
      if (p > 0 && matchWords(buf, dv, p, ORD_TAIL)) {
        const v = digitsAt(buf, p + ORD_TAIL.length, headEnd);
        if (v >= 0) {
          ord = v;
          p = DIGITS.end;
        }
      }
      if (p > 0 && matchWords(buf, dv, p, TYPE_TAIL)) {
        ti = p + 1;
        fastHead = true;
      }
    }
    if (ti < 0) {
      ti = find(buf, TYPE_KEY, s, headEnd);
      // The record's own "type" key: at the line start or after a comma (a payload's follows "{").
      while (ti >= 0 && !(ti === s + 1 || buf[ti - 1] === 0x2c)) ti = find(buf, TYPE_KEY, ti + 1, headEnd);
      if (ti >= 0 && ord < 0) {
        const oi = find(buf, ORD_KEY, s, ti);
        if (oi >= 0) ord = digitsAt(buf, oi + ORD_KEY.length, ti);
      }
    }
    let type: string | null = null;
    let typeE: NameEntry | null = null;
    let te = -1;
    if (ti >= 0) {
      typeE = this.names.at(buf, dv, ti + TYPE_KEY.length, headEnd);
      te = this.names.end;
      if (te >= 0) type = typeE ? typeE.str : buf.toString('utf8', ti + TYPE_KEY.length, te);
    }
    let parsed: Record<string, unknown> | null = null;
    if (type === null) {
      parsed = this.parse(buf, s, e, n, terminated, oversize);
      if (!parsed) {
        if (oversize) this.badLine(n, terminated, 'no record type in its first bytes', buf, s, e);
        return;
      }
      type = str(parsed.type);
      if (type === null) {
        this.unknownType('(no type)', n);
        return;
      }
    } else if (!terminated || this.full) {
      // The last line without a newline, or --full: prove it parses.
      parsed = this.parse(buf, s, e, n, terminated, oversize);
      if (!parsed && !oversize) return;
    }
    if (!terminated)
      this.finding(
        'missing_final_newline',
        'warning',
        'the last line has no trailing newline (the writer may have stopped mid-write)',
        n,
      );
    if (typeE) typeE.records++;
    else bump(this.records, type);

    // Ordinal (paginated layout): consecutive from the first line on.
    if (ord >= 0) {
      if (this.ordLast !== null && ord !== this.ordLast + 1) {
        this.finding(
          'ordinal_gap',
          'error',
          'record ordinals are not consecutive: lines were removed, inserted or reordered',
          n,
        );
      }
      if (this.ordFirst === null) this.ordFirst = ord;
      this.ordLast = ord;
    }

    if (!(typeE ? typeE.known : ROLLOUT_RECORD_TYPES.has(type))) {
      this.unknownType(type, n);
      return;
    }
    switch (type) {
      case 'response_item':
      case 'event_msg': {
        this.subEnd = -1;
        const st = parsed
          ? str((parsed.payload as Record<string, unknown> | undefined)?.type)
          : this.subtype(buf, te, headEnd, fastHead);
        let sub: string | null;
        if (st !== null && typeof st === 'object') {
          sub = st.str;
          if (type === 'response_item') st.ri++;
          else st.em++;
        } else {
          sub = st;
          bump(this.payloadTypes, this.names.pair(type, sub ?? '?'));
        }
        if (type === 'response_item') this.responseItem(sub, buf, s, e, n, oversize, tail, terminated, parsed);
        else this.eventMsg(sub, buf, s, e, n, headEnd);
        return;
      }
      case 'turn_context':
        this.turnIdIn(buf, s, headEnd);
        return;
      case 'session_meta':
        this.sessionMeta(buf, s, e, n, oversize, terminated, parsed);
        return;
      case 'compacted':
        this.compacted(buf, s, e, n, oversize, tail, terminated, parsed);
        return;
      default:
        return;
    }
  }

  private unknownType(type: string, n: number): void {
    const u = this.unknown.get(type);
    if (u) u.count++;
    else this.unknown.set(type, { count: 1, first: n });
    this.finding(
      'unknown_record_type',
      'error',
      'record of a type Latch does not know (not skipped silently: Latch cannot tell what it means)',
      n,
    );
  }

  /** The payload type read from the bytes after the record type: its name entry (counted by the caller), or the string when uncached. */
  private subtype(buf: Buffer, te: number, headEnd: number, fastHead: boolean): NameEntry | string | null {
    if (te < 0) return null;
    let p = -1;
    let fixed = false;
    if (payloadTypeAt(buf, this.dv, te)) {
      p = te + 21;
      fixed = fastHead;
    } else {
      const i = find(buf, '"payload":{"type":"', te, headEnd);
      if (i >= 0) p = i + 19;
    }
    if (p < 0) return null;
    const en = this.names.at(buf, this.dv, p, headEnd);
    const q = this.names.end;
    if (q < 0) return null;
    // Only a line read in the fixed shape up to here lets the field walk start at the payload type.
    if (fixed) this.subEnd = q + 1;
    return en ?? buf.toString('utf8', p, q);
  }

  private timestamp(buf: Buffer, s: number, e: number): string | null {
    if (buf.compare(TS_PREFIX.bytes, 0, TS_PREFIX.length, s, s + TS_PREFIX.length) !== 0) return null;
    const q = buf.indexOf(0x22, s + TS_PREFIX.length);
    return q >= 0 && q < Math.min(e, s + 80) ? buf.toString('latin1', s + TS_PREFIX.length, q) : null;
  }

  private turn(id: string): void {
    this.currentTurn = id;
    if (this.turnIds.has(id)) return;
    this.turnCount++;
    if (this.turnIds.size < ID_CAP) this.turnIds.add(id);
    if (this.turnList.length < LIST_CAP) this.turnList.push(id);
  }

  private sessionMeta(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    let p: Record<string, unknown> = {};
    const o = parsed ?? this.parse(buf, s, e, n, terminated, oversize);
    if (o) p = (o.payload as Record<string, unknown>) ?? {};
    else {
      // oversize: read the fields from the head
      const head = buf.toString('utf8', s, Math.min(e, s + 65536));
      for (const k of [
        'id',
        'session_id',
        'cli_version',
        'originator',
        'history_mode',
        'cwd',
        'forked_from_id',
        'source',
      ]) {
        const m = new RegExp(`"${k}":"((?:[^"\\\\]|\\\\.)*)"`).exec(head);
        if (m) p[k] = unescapeJson(m[1]!);
      }
    }
    const id = str(p.id) ?? str(p.session_id);
    const base = p.history_base as Record<string, unknown> | undefined;
    this.sessions.push({
      session_id: id,
      line: n,
      forked_from: str(p.forked_from_id) ?? str(base?.thread_id) ?? null,
      cwd: str(p.cwd),
    });
    if (this.sessions.length === 1) {
      this.writer.cli_version = str(p.cli_version);
      this.writer.originator = str(p.originator);
      this.writer.history_mode = str(p.history_mode);
      this.writer.source = typeof p.source === 'string' ? p.source : p.source ? JSON.stringify(p.source) : null;
      if (id && this.onSession) this.onSession(id);
    } else if (id !== this.sessions[0]!.session_id) {
      this.finding('several_sessions', 'warning', 'more than one session_meta with different ids in one rollout', n);
    }
  }

  private responseItem(
    sub: string | null,
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    // The model spoke again: the next compaction marker belongs to a new compaction.
    this.group = null;
    switch (sub) {
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        let p: Record<string, unknown> | null = parsed ? ((parsed.payload as Record<string, unknown>) ?? {}) : null;
        if (!p && !this.full)
          p = this.callFields(
            buf,
            s,
            e,
            sub === 'custom_tool_call' ? 'input' : sub === 'local_shell_call' ? null : 'arguments',
            this.subEnd,
          );
        if (!p) {
          const o = this.parse(buf, s, e, n, terminated, oversize);
          if (o) p = (o.payload as Record<string, unknown>) ?? {};
          else {
            if (!oversize) return; // a parse error was recorded
            const head = buf.toString('utf8', s, Math.min(e, s + 65536));
            p = {
              name: /"name":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1],
              call_id:
                /"call_id":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1] ??
                /"call_id":"((?:[^"\\]|\\.)*)"/.exec(tail!.toString('utf8'))?.[1],
            };
          }
        }
        const name = sub === 'local_shell_call' ? 'local_shell_call' : (str(p.name) ?? '?');
        this.toolCall(
          name,
          p,
          n,
          this.compactions.length > 0 && this.keepsCallText() ? this.timestamp(buf, s, e) : null,
        );
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
        this.toolOutput(buf, s, e, n, this.subEnd);
        return;
      default:
        return;
    }
  }

  private toolCall(name: string, p: Record<string, unknown>, n: number, ts: string | null, unknownKind = false): void {
    this.toolTotal++;
    bump(this.segments[this.segments.length - 1]!, name);
    const seg = this.compactions.length;
    if (seg === 0) return;
    const kind: Attempt['kind'] | null = SHELL_TOOLS.has(name)
      ? 'shell'
      : PATCH_TOOLS.has(name)
        ? 'patch'
        : name.startsWith('mcp__')
          ? 'mcp'
          : unknownKind
            ? 'unknown'
            : null;
    if (!kind) return;
    const callId = str(p.call_id) ?? str(p.id);
    const attempt: Attempt = {
      compaction: seg,
      line: n,
      timestamp: ts,
      call_id: callId,
      tool: name,
      kind,
      summary: '',
      read_only: null,
      outcome: 'no_output',
      exit_code: null,
      detail: null,
      output_line: null,
    };
    // The command text is worked out only for attempts that are listed or checked (settle()).
    const pend: PendingCall = { attempt, fields: p };
    this.attempts.total++;
    this.segAttempts[seg]!.total++;
    if (callId && this.pending.size < ID_CAP) this.pending.set(callId, pend);
    else this.settle(pend);
  }

  /**
   * name, call_id and (after a compaction) the argument string of a tool call, read from the line's
   * JSON strings without parsing the rest of it. null when the line is not in the expected shape, or
   * its argument string is one JSON.parse rejects (the full parse then reports the line). The
   * argument string is checked always but decoded only while keepsCallText().
   */
  private callFields(
    buf: Buffer,
    s: number,
    e: number,
    argKey: 'arguments' | 'input' | null,
    from: number,
  ): Record<string, unknown> | null {
    const out: Record<string, unknown> = {};
    const headEnd = Math.min(e, s + 4096);
    const post = this.compactions.length > 0;
    const key = argKey === 'arguments' ? ARGS_KEY : INPUT_KEY;
    // The needles' first occurrences, walked from the payload type when the line has the usual shape.
    const walked = from > s && (argKey !== null || !post) && walkFields(buf, this.dv, from, e, key, post ? 7 : 1);
    let ni = walked ? FIELD_AT[0]! : find(buf, NAME_KEY.bytes, s, headEnd);
    if (ni + NAME_KEY.length > headEnd) ni = -1;
    if (ni >= 0) {
      const a = ni + NAME_KEY.length;
      const known = this.names.known(buf, this.dv, a, headEnd);
      if (known) out.name = known.str;
      else {
        const z = stringEndShort(buf, this.dv, a, headEnd);
        if (z < 0) return null;
        out.name = this.names.get(buf, a, z);
      }
    }
    if (!post) return out; // before any compaction only the name is counted
    if (argKey) {
      const ai = walked ? FIELD_AT[1]! : find(buf, key.bytes, s, headEnd);
      if (ai < 0 || ai + key.length > headEnd) return null;
      const a = ai + key.length;
      const scanned = walked && FIELD_AT[3]! >= 0;
      const z = scanned ? FIELD_AT[3]! : jsonStringEnd(buf, this.dv, a, e);
      // A text JSON.parse would reject sends the line to the full parse (and its parse error).
      if (z < 0 || !(scanned ? FIELD_AT[4] === 1 : SCANNED.valid)) return null;
      // Decoded only while an attempt made from it may still be listed or checked (settle()).
      if (this.keepsCallText()) out[argKey] = JSON.parse(buf.toString('utf8', a - 1, z + 1)) as string;
    }
    const ci = walked ? FIELD_AT[2]! : find(buf, CALL_ID_KEY.bytes, s, e);
    if (ci < 0) return null;
    const z = stringEndShort(buf, this.dv, ci + CALL_ID_KEY.length, e);
    if (z < 0) return null;
    out.call_id = buf.toString('utf8', ci + CALL_ID_KEY.length, z);
    return argKey === null ? null : out;
  }

  private toolOutput(buf: Buffer, s: number, e: number, n: number, from: number): void {
    const headEnd = Math.min(e, s + 2048);
    const dv = this.dv;
    // Fast path: "call_id":"<id>","output":"<text>
    let ci =
      from > s && walkFields(buf, dv, from, e, null, 4) ? FIELD_AT[2]! : find(buf, CALL_ID_KEY.bytes, s, headEnd);
    if (ci + CALL_ID_KEY.length > headEnd) ci = -1;
    if (ci >= 0) {
      const a = ci + CALL_ID_KEY.length;
      const z = stringEndShort(buf, dv, a, headEnd);
      if (z >= 0 && matchWords(buf, dv, z + 1, OUTPUT_TAIL)) {
        const o = z + 1 + OUTPUT_TAIL.length;
        const end = Math.min(e, o + 600);
        // The text matters only to tell a hook's block, or for a call being followed: then its
        // exit code is read from the bytes when it can be, else from the decoded text.
        if (!matchAt(buf, o, BLOCKED_BYTES)) {
          const p = this.pending.take(buf, a, z);
          if (!p) return;
          const exit = exitCodeAt(buf, dv, o, end);
          this.answered(p, exit === null ? classifyOutput(buf.toString('utf8', o, end)) : exited(exit), n);
          return;
        }
        this.output(buf.toString('utf8', a, z), classifyOutput(buf.toString('utf8', o, end)), n);
        return;
      }
    }
    const head = buf.toString('utf8', s, headEnd);
    const id = /"call_id":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1] ?? null;
    // output: a string, or (older writers) content items whose first text is the output
    const m =
      /"output":"((?:[^"\\]|\\.)*)/.exec(head) ??
      /"output":\[\{[^}]*?"text":"((?:[^"\\]|\\.)*)/.exec(head) ??
      /"output":\{"output":"((?:[^"\\]|\\.)*)/.exec(head);
    this.output(id, classifyOutput(m?.[1] ?? ''), n);
  }

  /** A call's output read on line n: a hook's block is counted, and the call it answers (if followed) settled. */
  private output(id: string | null, outcome: Classified, n: number): void {
    if (outcome.outcome === 'blocked') {
      this.hookBlocked++;
      if (outcome.detail?.startsWith('Latch')) {
        if (id && this.blockedLatch.size < ID_CAP) this.blockedLatch.add(id);
      } else this.blockedOther++;
    }
    const p = id ? this.pending.get(id) : undefined;
    if (!p) return;
    this.pending.delete(id!);
    this.answered(p, outcome, n);
  }

  private answered(p: PendingCall, outcome: Classified, n: number): void {
    p.attempt.outcome = outcome.outcome;
    p.attempt.exit_code = outcome.exit;
    p.attempt.detail = outcome.detail;
    p.attempt.output_line = n;
    this.settle(p);
  }

  /**
   * Whether settle() may still read the text of a call made now (its arguments, its timestamp): only
   * for an attempt it lists (the first ATTEMPT_CAP) or one timed inside an interval the store held
   * the session. The list only grows and `held` is set only when the first session id is adopted,
   * so once the list is full and no held interval can come, the text of later calls is never read.
   */
  private keepsCallText(): boolean {
    return (
      this.attemptList.length < ATTEMPT_CAP ||
      this.held.length > 0 ||
      (this.onSession !== null && this.sessions.length === 0)
    );
  }

  /** An attempt whose outcome is known (or never will be): counted, checked against the store, listed. */
  private settle(p: PendingCall): void {
    const a = p.attempt;
    countOutcome(this.segAttempts[a.compaction]!, a.outcome);
    countOutcome(this.attempts, a.outcome);
    const executed = a.outcome === 'ran' || a.outcome === 'failed';
    const listed = this.attemptList.length < ATTEMPT_CAP;
    const inHeld =
      executed &&
      a.timestamp !== null &&
      this.held.some((h) => a.timestamp! >= h.from && (h.to === null || a.timestamp! < h.to));
    if (listed || inHeld) {
      const f = p.fields;
      // A call the stream shows only through its blocked hook run: described as the store recorded it.
      const described = str(f[DESCRIBED]);
      const command =
        described ??
        (a.kind === 'shell'
          ? shellCommand(f)
          : a.kind === 'patch'
            ? patchFiles(str(f.input) ?? patchArgument(str(f.arguments)))
            : oneLine(str(f.arguments) ?? '', 80));
      a.summary = oneLine(command || a.tool);
      if (a.kind === 'shell' && described === null) a.read_only = this.readOnly(command);
    }
    if (a.read_only) this.attempts.read_only_listed++;
    if (inHeld && a.read_only !== true) {
      this.finding(
        'ran_while_held',
        'error',
        'a mutating call ran while the Latch store had the session latched or paused',
        a.line,
      );
    }
    if (listed) this.attemptList.push(a);
    else this.attemptDropped++;
  }

  private readOnly(cmd: string): boolean {
    const hit = this.roCache.get(cmd);
    if (hit !== undefined) return hit;
    // As the hook classified it while held: with the held-read environment (git's programs off) and
    // Latch's own read (`node <dist>/latch.cjs status|brief …`, which the hook ran and replayed).
    const latchBin = /^\s*node\s+(\/\S*\/latch\.cjs)\s/.exec(cmd)?.[1];
    const v = classifyCommand(cmd, { latchHome: '/nonexistent-latch-home', gitEnvHardened: true, latchBin }).readOnly;
    if (this.roCache.size > 1000) this.roCache.clear();
    this.roCache.set(cmd, v);
    return v;
  }

  private eventMsg(sub: string | null, buf: Buffer, s: number, e: number, n: number, headEnd: number): void {
    if (sub === 'item_completed' || sub === 'item_started') {
      if (this.ccItem.find(buf, this.dv, s, headEnd) >= 0) {
        const m = /"item":\{"type":"ContextCompaction","id":"((?:[^"\\]|\\.)*)"/.exec(buf.toString('utf8', s, headEnd));
        this.marker('item', m?.[1] ?? null, n, buf, s, e);
      }
    } else if (sub === 'context_compacted') {
      this.marker('legacy', null, n, buf, s, e);
    } else if (sub === 'task_started') {
      this.turnIdIn(buf, s, headEnd);
    }
  }

  /** The first "turn_id" in buf[s..headEnd) starts a turn: read from the bytes, or by the regex when its value has a backslash. */
  private turnIdIn(buf: Buffer, s: number, headEnd: number): void {
    let id = turnIdAt(buf, s, headEnd);
    if (id === undefined) id = /"turn_id":"((?:[^"\\]|\\.)*)"/.exec(buf.toString('utf8', s, headEnd))?.[1] ?? null;
    if (id !== null) this.turn(id);
  }

  private compacted(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    const c = this.marker('compacted', null, n, buf, s, e);
    const o = parsed ?? this.parse(buf, s, e, n, terminated, oversize);
    if (o) {
      const p = (o.payload as Record<string, unknown>) ?? {};
      const msg = p.message;
      c.summary = typeof msg === 'string' ? (msg.length === 0 ? 'remote' : 'local') : c.summary;
      c.window_number = num(p.window_number) ?? c.window_number;
      c.window_id = str(p.window_id) ?? c.window_id;
      c.previous_window_id = str(p.previous_window_id) ?? c.previous_window_id;
    } else if (oversize) {
      const head = buf.toString('utf8', s, Math.min(e, s + 4096));
      const t = tail!.toString('utf8');
      if (/"payload":\{"message":""/.test(head)) c.summary = 'remote';
      else if (/"payload":\{"message":"./.test(head)) c.summary = 'local';
      const wn = /"window_number":(\d+)/.exec(t);
      if (wn) c.window_number = Number(wn[1]);
      c.window_id = /"window_id":"([^"]*)"/.exec(t.replace(/"(first|previous)_window_id"/g, '"_'))?.[1] ?? c.window_id;
      c.previous_window_id = /"previous_window_id":"([^"]*)"/.exec(t)?.[1] ?? c.previous_window_id;
    }
  }

  /** Joins a marker to the open compaction group or starts a new compaction. */
  private marker(
    via: 'compacted' | 'item' | 'legacy' | 'thread',
    itemId: string | null,
    n: number,
    buf: Buffer | null,
    s: number,
    e: number,
  ): CompactionReport {
    const g = this.group;
    const joins =
      g !== null &&
      (via === 'compacted'
        ? !g.compacted
        : via === 'legacy'
          ? !g.legacy
          : via === 'thread'
            ? !g.thread
            : !g.item || g.itemId === null || itemId === null || g.itemId === itemId);
    if (!joins) {
      this.group = { compacted: false, item: false, itemId: null, legacy: false, thread: false };
      const c: CompactionReport = {
        index: this.compactions.length + 1,
        line: n,
        record_ordinal: this.format === 'rollout' ? this.ordLast : null,
        timestamp: buf ? this.timestamp(buf, s, e) : null,
        via: [],
        turn_id: this.currentTurn,
        window_number: null,
        window_id: null,
        previous_window_id: null,
        trigger: null,
        trigger_source: null,
        summary: null,
        tool_calls_before: {},
        tool_calls_after: {},
        attempts_after: emptyCounts(),
      };
      this.compactions.push(c);
      this.segments.push(new Map());
      this.segAttempts.push(emptyCounts());
    }
    const group = this.group!;
    const c = this.compactions[this.compactions.length - 1]!;
    const name =
      via === 'compacted'
        ? 'compacted'
        : via === 'item'
          ? 'context_compaction_item'
          : via === 'legacy'
            ? 'context_compacted'
            : 'thread/compacted';
    if (!c.via.includes(name)) c.via.push(name);
    if (via === 'compacted') group.compacted = true;
    if (via === 'legacy') group.legacy = true;
    if (via === 'thread') group.thread = true;
    if (via === 'item') {
      group.item = true;
      group.itemId = group.itemId ?? itemId;
    }
    return c;
  }

  // -- app-server streams ---------------------------------------------------------------------

  private appServerLine(buf: Buffer, s: number, e: number, n: number, oversize: boolean, terminated: boolean): void {
    let o: Record<string, unknown> | null = null;
    if (oversize) {
      const head = buf.toString('utf8', s, Math.min(e, s + 4096));
      const m = /"method":"([^"]*)"/.exec(head);
      bump(this.records, m ? 'notification' : 'response');
      if (m) bump(this.payloadTypes, m[1]!);
      return;
    }
    o = this.parse(buf, s, e, n, terminated, false);
    if (!o) return;
    if (!terminated)
      this.finding(
        'missing_final_newline',
        'warning',
        'the last line has no trailing newline (the capture may have stopped mid-write)',
        n,
      );
    const method = str(o.method);
    const hasId = 'id' in o;
    const kind = method
      ? hasId
        ? 'request'
        : 'notification'
      : hasId && 'result' in o
        ? 'response'
        : hasId && 'error' in o
          ? 'error_response'
          : null;
    if (!kind) {
      this.unknownType('(neither method nor id/result)', n);
      return;
    }
    bump(this.records, kind);
    const at = num(o.emittedAtMs);
    if (at !== null) {
      if (this.emittedFirst === null || at < this.emittedFirst) this.emittedFirst = at;
      if (this.emittedLast === null || at > this.emittedLast) this.emittedLast = at;
    }
    const params = (o.params !== null && typeof o.params === 'object' ? o.params : {}) as Record<string, unknown>;
    if (method) {
      bump(this.payloadTypes, method);
      if (!KNOWN_METHODS.has(method)) {
        const u = this.unknown.get(`method ${method}`);
        if (u) u.count++;
        else this.unknown.set(`method ${method}`, { count: 1, first: n });
        this.finding('unknown_method', 'warning', 'a JSON-RPC method Latch does not know', n);
      }
    }
    if (kind === 'response') {
      const r = (o.result ?? {}) as Record<string, unknown>;
      const ua = str(r.userAgent);
      if (ua && !this.writer.cli_version) {
        const v = /\/(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)/.exec(ua);
        if (v) this.writer.cli_version = v[1]!;
        this.writer.originator = ua.split('/')[0] ?? null;
      }
      const th = r.thread as Record<string, unknown> | undefined;
      if (th) this.thread(th, n);
      return;
    }
    switch (method) {
      case 'thread/started':
        this.thread((params.thread ?? {}) as Record<string, unknown>, n);
        return;
      case 'turn/completed': {
        const id = str((params.turn as Record<string, unknown> | undefined)?.id);
        if (id) this.closed('turn', `${str(params.threadId) ?? ''} ${id}`, n);
        return;
      }
      case 'hook/started':
      case 'hook/completed':
        this.hookRun(method, params, n);
        return;
      case 'turn/started': {
        const t = params.turn as Record<string, unknown> | undefined;
        const id = str(t?.id);
        if (id) {
          this.opened('turn', `${str(params.threadId) ?? ''} ${id}`, n);
          this.turn(id);
          this.turnHadUser.set(id, false);
          if (this.turnHadUser.size > 1000) this.turnHadUser.delete(this.turnHadUser.keys().next().value!);
        }
        return;
      }
      case 'thread/compacted': {
        const c = this.marker('thread', null, n, null, s, e);
        c.turn_id = str(params.turnId) ?? c.turn_id;
        this.inferTrigger(c);
        return;
      }
      case 'item/started':
      case 'item/completed': {
        const item = (params.item ?? {}) as Record<string, unknown>;
        const t = str(item.type);
        const itemId = str(item.id);
        if (itemId) {
          const key = `${str(params.threadId) ?? ''} ${itemId}`;
          if (method === 'item/started') this.opened('item', key, n);
          else this.closed('item', key, n);
        }
        if (t === 'userMessage' && this.currentTurn) this.turnHadUser.set(this.currentTurn, true);
        if (t === 'contextCompaction') {
          const c = this.marker('item', str(item.id), n, null, s, e);
          c.turn_id = str(params.turnId) ?? c.turn_id;
          this.inferTrigger(c);
          return;
        }
        // Any other item closes an open compaction group (as a response_item does in a rollout).
        if (t && t !== 'contextCompaction') this.group = null;
        if (method === 'item/completed' && t) this.appServerTool(t, item, n);
        return;
      }
      default:
        return;
    }
  }

  /** A `hook/started` / `hook/completed` notification: runs paired, counted, and a blocked PreToolUse read as the blocked call. */
  private hookRun(method: 'hook/started' | 'hook/completed', params: Record<string, unknown>, n: number): void {
    const run = params.run !== null && typeof params.run === 'object' ? (params.run as Record<string, unknown>) : null;
    const runId = str(run?.id);
    const key = `${str(params.threadId) ?? ''} ${runId ?? ''}`;
    if (method === 'hook/started') {
      this.hookRuns.started++;
      this.opened('hook', key, n);
      return;
    }
    this.hookRuns.completed++;
    this.closed('hook', key, n);
    if (!run) return;
    const event = str(run.eventName);
    const status = str(run.status);
    bump(this.hookRuns.byEventStatus, `${event ?? '?'}:${status ?? '?'}`);
    const entries = (Array.isArray(run.entries) ? run.entries : []).map((x: unknown) => {
      const en = (x !== null && typeof x === 'object' ? x : {}) as Record<string, unknown>;
      const text = str(en.text) ?? '';
      return {
        kind: str(en.kind) ?? '?',
        text: text.length > ENTRY_TEXT_CAP ? text.slice(0, ENTRY_TEXT_CAP - 1) + '…' : text,
      };
    });
    const info: HookRunInfo = {
      line: n,
      event,
      status,
      run_id: runId,
      source_path: str(run.sourcePath),
      status_message: str(run.statusMessage),
      entries,
    };
    if (status === 'blocked' || status === 'failed' || entries.length > 0) {
      if (this.hookRuns.runs.length < LIST_CAP) this.hookRuns.runs.push(info);
      else this.hookRuns.dropped++;
    }
    if (status === 'failed') {
      this.finding('hook_failed', 'warning', 'a hook run failed (its output entries are listed with the hook runs)', n);
    }
    if (status === 'blocked' && event === 'preToolUse') this.blockedByHook(info, runId, n);
  }

  /**
   * A PreToolUse run that blocked: the call never started, so the stream has no item for it, only
   * this run, whose id ends with the call id (`pre-tool-use:<n>:<hooks file>:<call id>`). Counted as
   * a tool call and an attempt, blocked by the hook, with the hook's entries; the tool and command
   * are the store's record of the denial when it has one.
   */
  private blockedByHook(info: HookRunInfo, runId: string | null, n: number): void {
    // Without a call id in the run's id, the run's own id keeps the attempt (it is still blocked).
    const callId = callIdOfRun(runId, info.source_path) ?? runId ?? `hook-run-line-${n}`;
    // The feedback entries are what the model was told (a rollout's "Command blocked by PreToolUse hook: …").
    const feedback = info.entries.filter((x) => x.kind === 'feedback');
    const text = (feedback.length > 0 ? feedback : info.entries).map((x) => x.text).join(' ');
    const byLatch =
      info.entries.some((x) => x.text.startsWith('Latch')) ||
      (info.entries.length === 0 && (info.status_message ?? '').startsWith('Latch'));
    this.hookBlocked++;
    if (byLatch) {
      if (this.blockedLatch.size < ID_CAP) this.blockedLatch.add(callId);
    } else this.blockedOther++;
    const denied = this.deniedCalls?.get(callId);
    const fields: Record<string, unknown> = { call_id: callId };
    if (denied?.summary)
      fields[DESCRIBED] = denied.summary.startsWith(`${denied.tool}: `)
        ? denied.summary.slice(denied.tool.length + 2)
        : denied.summary;
    else fields[DESCRIBED] = `call ${callId} (blocked before it started: the stream shows only its PreToolUse run)`;
    this.toolCall(denied?.tool ?? 'unknown', fields, n, null, true);
    const p = this.pending.get(callId);
    if (!p) return;
    this.pending.delete(callId);
    p.attempt.hook = info;
    this.answered(
      p,
      {
        outcome: 'blocked',
        exit: null,
        detail: oneLine(text || `blocked by the PreToolUse hook (${info.status_message ?? 'no output'})`),
      },
      n,
    );
  }

  private opened(kind: 'hook' | 'item' | 'turn', key: string, n: number): void {
    const m = this.open[kind];
    const at = m.get(key);
    if (at) at.push(n);
    else if (m.size < ID_CAP) m.set(key, [n]);
  }

  private closed(kind: 'hook' | 'item' | 'turn', key: string, n: number): void {
    const m = this.open[kind];
    const at = m.get(key);
    if (at && at.length > 0) {
      at.shift();
      if (at.length === 0) m.delete(key);
      return;
    }
    this.finding(
      'completion_without_start',
      'error',
      'a hook/completed, item/completed or turn/completed whose start is not in the stream: lines were lost, or the capture did not start with the server',
      n,
    );
  }

  private inferTrigger(c: CompactionReport): void {
    if (c.trigger_source === 'store') return;
    const had = c.turn_id ? this.turnHadUser.get(c.turn_id) : undefined;
    if (had === undefined) return;
    c.trigger = had ? 'auto' : 'manual';
    c.trigger_source = 'inferred';
  }

  private thread(th: Record<string, unknown>, n: number): void {
    const id = str(th.id);
    if (!id || this.sessions.some((x) => x.session_id === id)) return;
    this.sessions.push({ session_id: id, line: n, forked_from: str(th.forkedFromId) ?? null, cwd: str(th.cwd) });
    const v = str(th.cliVersion);
    if (v) this.writer.cli_version = v;
    this.writer.source = str(th.source) ?? this.writer.source;
    if (this.sessions.length === 1 && this.onSession) this.onSession(id);
  }

  private appServerTool(t: string, item: Record<string, unknown>, n: number): void {
    const name =
      t === 'commandExecution'
        ? 'exec_command'
        : t === 'fileChange'
          ? 'apply_patch'
          : t === 'mcpToolCall'
            ? `mcp__${str(item.server) ?? '?'}__${str(item.tool) ?? '?'}`
            : t === 'dynamicToolCall'
              ? (str(item.tool) ?? t)
              : null;
    if (!name) return;
    const p: Record<string, unknown> = { call_id: item.id };
    if (t === 'commandExecution') p.arguments = JSON.stringify({ cmd: commandOfItem(item) });
    if (t === 'fileChange')
      p.input = (Array.isArray(item.changes) ? item.changes : [])
        .map(
          (c: { path?: string; kind?: { type?: string } }) =>
            `*** ${c?.kind?.type ?? 'Update'} File: ${c?.path ?? '?'}`,
        )
        .join('\n');
    this.toolCall(name, p, n, null);
    const id = str(item.id);
    const pend = id ? this.pending.get(id) : undefined;
    if (!pend) return;
    this.pending.delete(id!);
    const status = str(item.status);
    const out = str(item.aggregatedOutput) ?? '';
    const exit = num(item.exitCode);
    const a = pend.attempt;
    a.output_line = n;
    a.exit_code = exit;
    if (status === 'declined' || out.startsWith(BLOCKED)) {
      a.outcome = 'blocked';
      a.detail = out.startsWith(BLOCKED) ? oneLine(out.slice(BLOCKED.length)) : 'declined';
      this.hookBlocked++;
      if (a.detail.startsWith('Latch')) {
        if (id && this.blockedLatch.size < ID_CAP) this.blockedLatch.add(id);
      } else this.blockedOther++;
    } else if (status === 'completed' && (exit === null || exit === 0)) a.outcome = 'ran';
    else if (status === 'failed' || (exit !== null && exit !== 0)) {
      a.outcome = 'failed';
      a.detail = oneLine(out || status || '');
    } else a.outcome = 'unknown';
    this.settle(pend);
  }

  // -- end ------------------------------------------------------------------------------------

  finish(): void {
    // Counts kept on the name entries by the rollout fast path.
    for (const en of this.names.entries) {
      if (en.records > 0) bump(this.records, en.str, en.records);
      if (en.ri > 0) bump(this.payloadTypes, this.names.pair('response_item', en.str), en.ri);
      if (en.em > 0) bump(this.payloadTypes, this.names.pair('event_msg', en.str), en.em);
      en.records = en.ri = en.em = 0;
    }
    for (const p of this.pending.values()) this.settle(p);
    this.pending.clear();
    if (this.format === 'app-server') {
      const parts: string[] = [];
      const starts: number[] = [];
      for (const kind of ['hook', 'item', 'turn'] as const) {
        const lines = [...this.open[kind].values()].flat();
        if (lines.length > 0) parts.push(`${lines.length} ${kind === 'hook' ? 'hook run' : kind}(s)`);
        starts.push(...lines);
        this.open[kind].clear();
      }
      const message = `${parts.join(', ')} started in the stream never completed: the capture stopped early or lost lines`;
      for (const line of starts.sort((x, y) => x - y)) this.finding('missing_completion', 'error', message, line);
    }
    // Tool calls by name overall: the sum of the segments' counts.
    this.toolNames.clear();
    for (const seg of this.segments) for (const [name, count] of seg) bump(this.toolNames, name, count);
    for (let i = 0; i < this.compactions.length; i++) {
      const c = this.compactions[i]!;
      c.tool_calls_before = obj(this.segments[i]!);
      c.tool_calls_after = obj(this.segments[i + 1]!);
      c.attempts_after = this.segAttempts[i + 1]!;
    }
  }
}

/**
 * The shell text of an app-server commandExecution item: its one command action's text (Codex's
 * `bash -lc` wrapper removed), else the item's command. A held read Latch rewrote (its clean shell,
 * inside `codex sandbox` or not: src/agents/codex/sandbox.ts) is reported as the command the model gave.
 */
export function commandOfItem(item: Record<string, unknown>): string {
  const actions = Array.isArray(item.commandActions) ? (item.commandActions as unknown[]) : [];
  const one =
    actions.length === 1 && actions[0] !== null && typeof actions[0] === 'object'
      ? str((actions[0] as Record<string, unknown>).command)
      : null;
  const cmd = one ?? str(item.command) ?? '';
  const held =
    /^(?:(?:PATH='[^']*':"\$PATH" )?CODEX_HOME='[^']*' exec '[^']*' sandbox -- |exec )?\/usr\/bin\/env -u BASH_ENV .* \/bin\/bash --noprofile --norc -c '((?:[^']|'\\'')*)'$/s.exec(
      cmd,
    );
  return held ? held[1]!.split("'\\''").join("'") : cmd;
}

/** The call id a PreToolUse run's id ends with (`pre-tool-use:<n>:<hooks file>:<call id>`), or null. */
export function callIdOfRun(runId: string | null, sourcePath: string | null): string | null {
  if (!runId) return null;
  if (sourcePath) {
    const i = runId.indexOf(`:${sourcePath}:`);
    if (i >= 0) return runId.slice(i + sourcePath.length + 2) || null;
  }
  const j = runId.lastIndexOf(':');
  return j >= 0 && j < runId.length - 1 ? runId.slice(j + 1) : null;
}

function lastNonSpace(b: Buffer): number | undefined {
  let i = b.length - 1;
  while (i >= 0 && (b[i] === 0x0d || b[i] === 0x20)) i--;
  return i >= 0 ? b[i] : undefined;
}

function shellCommand(p: Record<string, unknown>): string {
  let args: unknown = p.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return args as string;
    }
  }
  const a = (args ?? (p.action as Record<string, unknown> | undefined) ?? {}) as Record<string, unknown>;
  const c = a.cmd ?? a.command;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    // ["bash","-lc","<script>"] → the script
    if (c.length === 3 && /(^|\/)(ba|z)?sh$/.test(String(c[0])) && /^-l?c$/.test(String(c[1]))) return String(c[2]);
    return c.map(String).join(' ');
  }
  return '';
}

function exited(exit: number): Classified {
  return { outcome: exit === 0 ? 'ran' : 'failed', exit, detail: exit === 0 ? null : `exit code ${exit}` };
}

/** apply_patch as a function call: arguments = '{"input":"<patch>"}'. */
function patchArgument(args: string | null): string {
  if (!args) return '';
  try {
    const v = JSON.parse(args) as Record<string, unknown>;
    return str(v.input) ?? str(v.patch) ?? '';
  } catch {
    return args;
  }
}

function patchFiles(patch: string): string {
  const files: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+)$/gim))
    files.push(`${m[1]!.toLowerCase()} ${m[2]}`);
  return files.join(', ');
}

type Classified = { outcome: Exclude<Outcome, 'no_output'>; exit: number | null; detail: string | null };

/** The outcome of a call from the start of its output text (still JSON-escaped). */
export function classifyOutput(raw: string): Classified {
  if (raw.startsWith(BLOCKED)) {
    const text = unescapeJson(raw.slice(BLOCKED.length, BLOCKED.length + 400));
    const reason = text.split('. Command: ')[0]!;
    return { outcome: 'blocked', exit: null, detail: oneLine(reason) };
  }
  if (raw.startsWith('apply_patch verification failed'))
    return { outcome: 'failed', exit: null, detail: oneLine(unescapeJson(raw.slice(0, 300))) };
  // (exitCodeAt in fsck-bytes.ts reads these two from the bytes.)
  const code = /Process exited with code (-?\d+)/.exec(raw.slice(0, 400)) ?? /^Exit code: (-?\d+)/.exec(raw);
  if (code) return exited(Number(code[1]));
  if (raw.startsWith('{')) {
    // older writers: {"output":"...","metadata":{"exit_code":N}}
    const m = /\\"exit_code\\":(-?\d+)/.exec(raw);
    if (m) return { outcome: Number(m[1]) === 0 ? 'ran' : 'failed', exit: Number(m[1]), detail: null };
  }
  return { outcome: 'unknown', exit: null, detail: raw ? oneLine(unescapeJson(raw.slice(0, 200))) : null };
}
