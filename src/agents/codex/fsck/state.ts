// The analyser's first layer: what every format records, and the checks of a line both formats
// share. The Analyser (analyser.ts) is one object built in layers, each a file:
//   state.ts      counts, findings, sessions, turns, compactions (the segments they cut the file into)
//   attempts.ts   tool calls: their attempts after a compaction, paired with their outputs, settled
//   rollout.ts    a rollout's lines (the byte-level fast path)
//   app-server.ts a captured `codex app-server` stream's lines
//   analyser.ts   the line entry (format detection) and finish()
// Each extends the one before it; members a later layer uses are protected.
import { errorMessage } from '../../../base/errors.js';
import { addFinding } from '../../shared/file-doctor.js';
import { Needle } from './bytes.js';
import { Names } from './names.js';
import { PendingCalls } from './pending.js';
import type {
  Attempt,
  CompactionReport,
  Finding,
  Format,
  HeldInterval,
  Layout,
  OutcomeCounts,
  SessionInfo,
  Severity,
  WriterInfo,
} from './types.js';
import { emptyCounts, oneLine } from './util.js';

export const LIST_CAP = 50;
export const ID_CAP = 100_000;

export const TS_PREFIX = new Needle('{"timestamp":"');

interface OpenGroup {
  compacted: boolean;
  item: boolean;
  itemId: string | null;
  legacy: boolean;
  thread: boolean;
}

export abstract class AnalyserState {
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
  protected group: OpenGroup | null = null;
  /** A DataView over the current line's buffer (for matchWords). */
  protected dv: DataView = new DataView(new ArrayBuffer(0));
  /** Tool calls by name, per segment (0: before the first compaction, k: after compaction k); toolNames sums them in finish(). */
  protected segments: Map<string, number>[] = [new Map()];
  protected segAttempts: OutcomeCounts[] = [emptyCounts()];
  readonly toolNames = new Map<string, number>();
  toolTotal = 0;
  readonly attempts: OutcomeCounts & { read_only_listed: number } = { ...emptyCounts(), read_only_listed: 0 };
  readonly attemptList: Attempt[] = [];
  attemptDropped = 0;
  protected readonly pending = new PendingCalls();
  hookBlocked = 0;
  readonly blockedLatch = new Set<string>();
  blockedOther = 0;
  /** Filled when the store knows the session: the intervals during which it was not allowed to mutate. */
  held: HeldInterval[] = [];
  onSession: ((id: string) => void) | null = null;

  constructor(
    protected readonly full: boolean,
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
    addFinding(this.findings, LIST_CAP, code, severity, message, line);
  }

  protected badLine(n: number, terminated: boolean, why: string, buf: Buffer, s: number, e: number): void {
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

  /** JSON.parse of a whole kept line; null (and a finding) when it does not parse. */
  protected parse(
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

  protected unknownType(type: string, n: number): void {
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

  protected timestamp(buf: Buffer, s: number, e: number): string | null {
    if (buf.compare(TS_PREFIX.bytes, 0, TS_PREFIX.length, s, s + TS_PREFIX.length) !== 0) return null;
    const q = buf.indexOf(0x22, s + TS_PREFIX.length);
    return q >= 0 && q < Math.min(e, s + 80) ? buf.toString('latin1', s + TS_PREFIX.length, q) : null;
  }

  protected turn(id: string): void {
    this.currentTurn = id;
    if (this.turnIds.has(id)) return;
    this.turnCount++;
    if (this.turnIds.size < ID_CAP) this.turnIds.add(id);
    if (this.turnList.length < LIST_CAP) this.turnList.push(id);
  }

  /** Joins a marker to the open compaction group or starts a new compaction. */
  protected marker(
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
}
