// `latch doctor FILE`: fsck for Codex rollouts (legacy or paginated 0.169 layout, plain or .jsonl.zst)
// and captured `codex app-server` JSON-RPC streams.
//
// Streaming, constant memory: the file is read through two fixed buffers (the next chunk is read by
// the thread pool while this one is analysed) and handled line by line; a line longer than MAX_KEEP
// keeps only its head and its last TAIL_KEEP bytes (the analyser, fsck-analyser.ts). Most lines are classified from their first
// bytes (`{"timestamp":..,"ordinal":N,"type":"T","payload":{"type":"S"`) without JSON.parse or a
// string per line; tool calls and outputs are read from their string fields in place. Those byte
// readers (fsck-bytes.ts) each either return what the string-based reading would, or give up and
// let the line take that reading: the report is the same either way, only faster. Only the few
// lines whose content matters (session_meta, compacted) are parsed whole. When the Latch store
// knows the session, the report is cross-checked against it:
// a checkpoint and a trip per compaction, denials vs blocked outputs, tree digests at checkpoint and
// at verify, and the transcript prefix hashed at each checkpoint vs the bytes of FILE now.
// A captured app-server stream is not the transcript: the prefix is compared with the file the
// checkpoint hashed (its transcript path), and denials and compactions only with the store records
// made while the stream was written (its emittedAtMs); its blocked calls are its PreToolUse runs
// with status "blocked" (the analyser's hook/started / hook/completed handling).
import {
  doctorExit,
  gradeFindings,
  qualifiedWriters,
  type DoctorExit,
  type DoctorSeverity,
} from '../qualification-doctor.js';
import type { Hash } from 'node:crypto';
import { nodeCrypto } from '../../../base/lazy.js';
import { closeSync, existsSync, fstatSync, openSync, read, readSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { safeJsonArray, safeRealpath } from '../../shared/file-doctor.js';
import { errorMessage, isLatchError, LatchError } from '../../../base/errors.js';
import {
  Analyser,
  CHUNK,
  LineSplitter,
  LIST_CAP,
  obj,
  type Attempt,
  type CompactionReport,
  type Finding,
  type Format,
  type HeldInterval,
  type HookRunsReport,
  type Layout,
  type OutcomeCounts,
  type SessionInfo,
  type WriterInfo,
} from './analyser.js';
import { openStore, type Db } from '../../../store/store.js';
import { dbPath } from '../../../base/paths.js';

export { classifyOutput, MAX_KEEP } from './analyser.js';
export { ROLLOUT_RECORD_TYPES } from '../records.js';
export type {
  Attempt,
  CompactionReport,
  Finding,
  HookRunInfo,
  HookRunsReport,
  Outcome,
  OutcomeCounts,
  Severity,
} from './analyser.js';

/** The versions the package qualified (data/qualified); a report uses qualifiedWriters($LATCH_HOME), which adds this machine's. */
export const QUALIFIED_WRITERS: readonly string[] = qualifiedWriters(null);
export { DOCTOR_EXIT, doctorExit, type DoctorExit, type DoctorSeverity } from '../qualification-doctor.js';

export interface StoreCrossCheck {
  home: string;
  status: 'not_found' | 'unreadable' | 'session_unknown' | 'checked';
  detail: string;
  session_id: string | null;
  policy?: string;
  state?: string;
  transcript_path?: string | null;
  compactions?: {
    seq: number;
    trigger: string | null;
    observed_via: string[];
    checkpoint_id: string | null;
    tripped_at: string | null;
    in_transcript: boolean;
  }[];
  checkpoints?: {
    id: string;
    compaction_seq: number;
    created_at: string;
    tree_sha256: string;
    tree_files: number;
    transcript_size: number | null;
    transcript_sha256: string | null;
    /** The file whose prefix was hashed: FILE for a rollout; for an app-server stream, the checkpoint's own transcript (null: not there to check). */
    compared_file: string | null;
    prefix_now_sha256: string | null;
    prefix: 'same' | 'rewritten' | 'shorter' | 'not_recorded' | 'not_checked';
  }[];
  /** app-server stream: the time it covers (emittedAtMs); store records outside it are not compared with it. */
  stream_window?: { from: string | null; to: string | null; compactions_before: number; denials_outside: number };
  verifies?: {
    at: string;
    accepted_changes: boolean;
    baseline_tree_sha256: string | null;
    current_tree_sha256: string | null;
    checkpoint_tree_sha256: string | null;
  }[];
  held_intervals?: { from: string; to: string | null; state: string }[];
  denials?: {
    store: number;
    transcript_blocked_by_latch: number;
    transcript_blocked_other: number;
    missing_in_transcript: string[];
    missing_in_store: string[];
  };
  attempts_recorded?: number;
}

export interface FsckReport {
  schema: 'latch.doctor.transcript/1';
  file: string;
  compression: 'zstd' | null;
  /** Bytes analysed (decompressed). */
  bytes: number;
  format: Format;
  layout: Layout;
  lines: number;
  ok: boolean;
  /** 0 healthy, 1 damage (an error or warning finding), 2 unreadable, 3 healthy but written by an unqualified Codex (notices only). */
  exit_code: DoctorExit;
  unreadable: string | null;
  records: Record<string, number>;
  payload_types: Record<string, number>;
  writer: WriterInfo;
  sessions: SessionInfo[];
  turns: { count: number; ids: string[]; ids_truncated: boolean };
  ordinals: { first: number | null; last: number | null } | null;
  parse_errors: number;
  truncated_last_line: { line: number; bytes: number } | null;
  unknown_types: { type: string; count: number; first_line: number }[];
  compactions: CompactionReport[];
  tool_calls: { total: number; by_name: Record<string, number> };
  /** read_only_listed: read-only shell commands among the listed (and store-checked) attempts. */
  attempts_after_compaction: OutcomeCounts & { read_only_listed: number; list: Attempt[]; list_truncated: number };
  hook_blocked_outputs: number;
  /** app-server stream: the hook runs it reports (hook/started, hook/completed); null for a rollout. */
  hook_runs: HookRunsReport | null;
  store: StoreCrossCheck | null;
  findings: ReportFinding[];
}

/** A finding as reported: the analyser's, graded error | warning | notice (src/agents/codex/qualification-doctor.ts). */
export type ReportFinding = Omit<Finding, 'severity'> & { severity: DoctorSeverity };

export interface FsckOptions {
  /** $LATCH_HOME for the store cross-check; null skips it. */
  latchHome?: string | null;
  /** JSON.parse every line (slower): catches damage inside lines that the fast path only frames. */
  full?: boolean;
  allowlist?: readonly string[];
  /** Called about every 64 MiB with (bytes read from the file, file size). */
  onProgress?: (done: number, total: number) => void;
}

// ---------------------------------------------------------------------------------------------
// Prefix hashing (only while the store has checkpoints of this transcript)

class PrefixHasher {
  private hash: Hash | null = nodeCrypto().createHash('sha256');
  private pos = 0;
  private targets: number[] = [];
  readonly digests = new Map<number, string>();
  /** A target was set after the stream had passed it. */
  readonly missed = new Set<number>();

  get active(): boolean {
    return this.hash !== null;
  }

  setTargets(sizes: number[]): void {
    const t = [...new Set(sizes)].sort((a, b) => a - b);
    for (const s of t) if (s < this.pos && !this.digests.has(s)) this.missed.add(s);
    this.targets = t.filter((s) => s >= this.pos && !this.digests.has(s));
    if (this.targets.length === 0) this.hash = null;
    else if (this.targets[0] === this.pos && this.hash) this.take();
  }

  stop(): void {
    this.hash = null;
  }

  feed(b: Buffer): void {
    if (!this.hash) {
      this.pos += b.length;
      return;
    }
    let off = 0;
    while (off < b.length && this.hash) {
      const next = this.targets[0]!;
      const upto = Math.min(b.length, off + (next - this.pos));
      if (upto > off) this.hash.update(b.subarray(off, upto));
      this.pos += upto - off;
      off = upto;
      if (this.pos === next) this.take();
    }
    this.pos += b.length - off;
  }

  private take(): void {
    while (this.hash && this.targets.length > 0 && this.targets[0] === this.pos) {
      this.digests.set(this.pos, this.hash.copy().digest('hex'));
      this.targets.shift();
    }
    if (this.targets.length === 0) this.hash = null;
  }
}

// ---------------------------------------------------------------------------------------------
// The store view

interface SessionRowLite {
  session_id: string;
  policy: string;
  state: string;
  transcript_path: string | null;
}
interface CompactionRowLite {
  seq: number;
  first_seen_at: string;
  trigger: string | null;
  observed_via: string;
  checkpoint_id: string | null;
  tripped_at: string | null;
}
interface CheckpointRowLite {
  id: string;
  compaction_seq: number;
  created_at: string;
  tree_sha256: string;
  tree_files: number;
  transcript_path: string | null;
  transcript_size: number | null;
  transcript_sha256: string | null;
}
interface TransitionRowLite {
  at: string;
  event: string;
  from_state: string;
  to_state: string;
  evidence_json: string;
}
interface StoreSession {
  row: SessionRowLite;
  compactions: CompactionRowLite[];
  checkpoints: CheckpointRowLite[];
  transitions: TransitionRowLite[];
  denials: { tool_use_id: string | null; tool_name: string; summary: string | null; at: string }[];
  attempts: number;
  held: HeldInterval[];
}

class StoreView {
  private constructor(
    readonly home: string,
    private readonly db: Db,
  ) {}

  static open(home: string): { view: StoreView | null; status: StoreCrossCheck['status']; detail: string } {
    if (!existsSync(dbPath(home)))
      return { view: null, status: 'not_found', detail: `no Latch store at ${dbPath(home)}` };
    try {
      return {
        view: new StoreView(home, openStore(home, { create: false, readonly: true })),
        status: 'checked',
        detail: '',
      };
    } catch (err) {
      return { view: null, status: 'unreadable', detail: errorMessage(err) };
    }
  }

  close(): void {
    this.db.close();
  }

  sessionIdByPath(path: string): string | null {
    const r = this.db
      .prepare('SELECT session_id FROM sessions WHERE transcript_path = ? ORDER BY created_at LIMIT 1')
      .get(path) as { session_id: string } | undefined;
    return r?.session_id ?? null;
  }

  load(id: string): StoreSession | null {
    const row = this.db
      .prepare('SELECT session_id, policy, state, transcript_path FROM sessions WHERE session_id = ?')
      .get(id) as SessionRowLite | undefined;
    if (!row) return null;
    const transitions = this.db
      .prepare(
        'SELECT at, event, from_state, to_state, evidence_json FROM transitions WHERE session_id = ? ORDER BY id',
      )
      .all(id) as TransitionRowLite[];
    const held: StoreSession['held'] = [];
    for (const t of transitions) {
      const open = held.length > 0 && held[held.length - 1]!.to === null;
      if (t.to_state !== 'mutable' && !open) held.push({ from: t.at, to: null, state: t.to_state });
      else if (t.to_state === 'mutable' && open) held[held.length - 1]!.to = t.at;
    }
    return {
      row,
      compactions: this.db
        .prepare(
          'SELECT seq, first_seen_at, trigger, observed_via, checkpoint_id, tripped_at FROM compactions WHERE session_id = ? ORDER BY seq',
        )
        .all(id) as CompactionRowLite[],
      checkpoints: this.db
        .prepare(
          'SELECT id, compaction_seq, created_at, tree_sha256, tree_files, transcript_path, transcript_size, transcript_sha256 FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq, created_at',
        )
        .all(id) as CheckpointRowLite[],
      transitions,
      denials: this.db
        .prepare('SELECT tool_use_id, tool_name, summary, at FROM denials WHERE session_id = ? ORDER BY id')
        .all(id) as StoreSession['denials'],
      attempts: (this.db.prepare('SELECT count(*) AS n FROM attempts WHERE session_id = ?').get(id) as { n: number }).n,
      held,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Reading

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

interface Reader {
  compression: 'zstd' | null;
  run(push: (b: Buffer) => void): Promise<void>;
}

/** The rollout cannot be read or decoded; fsck reports it as the file's `unreadable` reason. */
export class UnreadableError extends LatchError {
  constructor(message: string) {
    super('E_UNREADABLE', message);
    this.name = 'UnreadableError';
  }
}

function readAt(fd: number, buf: Buffer, pos: number): Promise<number> {
  return new Promise((done, fail) => read(fd, buf, 0, buf.length, pos, (err, n) => (err ? fail(err) : done(n))));
}

async function openReader(
  fd: number,
  size: number,
  path: string,
  onProgress?: (done: number, total: number) => void,
): Promise<Reader> {
  const magic = Buffer.alloc(4);
  const got = size >= 4 ? readSync(fd, magic, 0, 4, 0) : 0;
  const zstd = (got === 4 && magic.equals(ZSTD_MAGIC)) || /\.zst$/.test(path);
  const buf = Buffer.allocUnsafe(CHUNK);
  const progressStep = 64 << 20;
  let nextProgress = progressStep;
  const readAll = (each: (b: Buffer) => void) => {
    let pos = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, pos);
      if (n <= 0) break;
      pos += n;
      each(buf.subarray(0, n));
      if (onProgress && pos >= nextProgress) {
        onProgress(pos, size);
        nextProgress += progressStep;
      }
    }
    return pos;
  };
  /**
   * A plain file: while this thread analyses one chunk, libuv's thread pool reads the next into the
   * other buffer, so the copy out of the page cache overlaps the analysis. A read is never left in
   * flight when run() ends (the caller closes fd).
   */
  const readAhead = async (each: (b: Buffer) => void): Promise<void> => {
    const bufs = [buf, Buffer.allocUnsafe(CHUNK)];
    let pos = 0;
    let k = 0;
    let next: Promise<number> | null = readAt(fd, bufs[0]!, pos);
    try {
      for (;;) {
        const n: number = await next;
        next = null;
        if (n <= 0) break;
        pos += n;
        const cur = bufs[k]!;
        k ^= 1;
        next = readAt(fd, bufs[k]!, pos);
        each(cur.subarray(0, n));
        if (onProgress && pos >= nextProgress) {
          onProgress(pos, size);
          nextProgress += progressStep;
        }
      }
    } finally {
      if (next) await next.catch(() => 0);
    }
  };
  if (!zstd) return { compression: null, run: readAhead };
  let fzstd: typeof import('fzstd');
  try {
    fzstd = await import('fzstd');
  } catch (err) {
    throw new UnreadableError(`cannot load the zstd decoder (fzstd): ${errorMessage(err)}`);
  }
  return {
    compression: 'zstd',
    async run(push) {
      if (got === 4 && !magic.equals(ZSTD_MAGIC))
        throw new UnreadableError('the file is named .zst but is not a zstd stream');
      const d = new fzstd.Decompress((data) => push(Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
      try {
        readAll((b) => d.push(new Uint8Array(b.buffer, b.byteOffset, b.byteLength)));
        d.push(new Uint8Array(0), true);
      } catch (err) {
        if (isLatchError(err, 'E_UNREADABLE')) throw err;
        throw new UnreadableError(`the zstd stream cannot be decoded: ${errorMessage(err)}`);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Entry point

/** Analyses a rollout or app-server capture. Never throws for a bad file: exit_code 2 says unreadable. */
export async function fsckFile(file: string, opts: FsckOptions = {}): Promise<FsckReport> {
  const path = resolve(file);
  const allow = opts.allowlist ?? qualifiedWriters(opts.latchHome ?? null);
  const a = new Analyser(opts.full ?? false, allow);
  let compression: FsckReport['compression'] = null;
  let unreadable: string | null = null;
  let store: StoreCrossCheck | null = null;
  let view: StoreView | null = null;
  let session: StoreSession | null = null;

  let fd = -1;
  try {
    fd = openSync(path, 'r');
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new UnreadableError(`${path} is a directory`);
    if (!st.isFile()) throw new UnreadableError(`${path} is not a regular file`);
    const reader = await openReader(fd, st.size, path, opts.onProgress);
    compression = reader.compression;

    // The store: opened before reading so the prefix hash can start at byte 0.
    if (opts.latchHome) {
      const o = StoreView.open(opts.latchHome);
      view = o.view;
      store = { home: opts.latchHome, status: o.status, detail: o.detail, session_id: null };
    }
    let hashing: PrefixHasher | null = null;
    if (view) {
      const v = view;
      hashing = new PrefixHasher();
      const real = safeRealpath(path);
      const fromName =
        /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(?:\.zst)?$/i.exec(basename(path))?.[1] ??
        null;
      const adopt = (id: string | null): void => {
        if (!id || session?.row.session_id === id) return;
        const s = v.load(id);
        if (!s) return;
        session = s;
        a.held = s.held;
        a.deniedCalls = new Map(
          s.denials
            .filter((d) => d.tool_use_id)
            .map((d) => [d.tool_use_id!, { tool: d.tool_name, summary: d.summary }]),
        );
        // A stream is not the transcript the checkpoints hashed: crossCheck hashes that file instead.
        if (a.format !== 'app-server')
          hashing?.setTargets(
            s.checkpoints
              .filter((c) => c.transcript_size !== null && c.transcript_sha256)
              .map((c) => c.transcript_size!),
          );
      };
      adopt(v.sessionIdByPath(real) ?? v.sessionIdByPath(path));
      if (!session) adopt(fromName);
      a.onSession = (id) => adopt(id);
      if (!session) {
        // keep hashing from byte 0 until the first session id shows up (line 1 of a rollout)
        hashing.setTargets([Number.MAX_SAFE_INTEGER]);
      }
    }
    const split = new LineSplitter(a.line);
    const h = hashing;
    await reader.run((b) => {
      split.push(b);
      if (h && h.active) {
        // The session id comes from line 1 (session_meta); once a line is read without it, stop.
        if (!session && a.lines > 0) h.stop();
        else h.feed(b);
      }
    });
    split.end();
    hashing?.stop();
    a.finish();
    if (view && store) {
      store =
        a.format === 'app-server'
          ? crossCheck(a, store, session, new Map(), path)
          : crossCheck(a, store, session, prefixDigests(session, hashing, compression === null ? path : null), path);
    }
  } catch (err) {
    unreadable = isLatchError(err, 'E_UNREADABLE') ? err.message : `cannot read ${path}: ${errorMessage(err)}`;
    a.finish();
  } finally {
    if (fd >= 0) closeSync(fd);
    view?.close();
  }
  return buildReport(a, path, compression, unreadable, store);
}

/**
 * Prefix digests keyed by size: those computed during the pass, plus (plain files only) a second
 * bounded read for a checkpoint the pass could not hash (its session id showed up too late).
 */
function prefixDigests(
  session: StoreSession | null,
  h: PrefixHasher | null,
  plainPath: string | null,
): Map<number, string> {
  const out = new Map(h?.digests ?? []);
  if (!session || !plainPath) return out;
  for (const c of session.checkpoints) {
    if (c.transcript_size === null || !c.transcript_sha256 || out.has(c.transcript_size)) continue;
    try {
      out.set(c.transcript_size, hashFilePrefix(plainPath, c.transcript_size));
    } catch {
      /* shorter than the prefix: reported by the caller */
    }
  }
  return out;
}

function hashFilePrefix(path: string, size: number): string {
  const fd = openSync(path, 'r');
  try {
    const h = nodeCrypto().createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    let pos = 0;
    while (pos < size) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
      if (n <= 0) throw new Error('short file');
      h.update(buf.subarray(0, n));
      pos += n;
    }
    return h.digest('hex');
  } finally {
    closeSync(fd);
  }
}

function crossCheck(
  a: Analyser,
  base: StoreCrossCheck,
  s: StoreSession | null,
  digests: Map<number, string>,
  path: string,
): StoreCrossCheck {
  const sid = a.sessions[0]?.session_id ?? null;
  if (!s) {
    return {
      ...base,
      status: 'session_unknown',
      session_id: sid,
      detail: sid
        ? `the Latch store does not know session ${sid}`
        : 'no session id in the file and no store session for this path',
    };
  }
  const out: StoreCrossCheck = {
    ...base,
    status: 'checked',
    session_id: s.row.session_id,
    detail: `Latch store knows session ${s.row.session_id}`,
    policy: s.row.policy,
    state: s.row.state,
    transcript_path: s.row.transcript_path,
    held_intervals: s.held,
    attempts_recorded: s.attempts,
  };
  const stream = a.format === 'app-server';
  if (stream) {
    out.detail += `; FILE is a codex app-server stream of it${s.row.transcript_path ? ` (its transcript: ${s.row.transcript_path})` : ''}`;
  } else if (s.row.transcript_path && safeRealpath(s.row.transcript_path) !== safeRealpath(path)) {
    out.detail += `; FILE is not the recorded transcript ${s.row.transcript_path} (a copy?)`;
  }
  // A stream covers the server's life only (emittedAtMs): the store's records from before or after
  // it (an earlier `codex exec`, a later resume) are not expected in it.
  const win = stream ? streamWindow(a) : null;
  const inWindow = (iso: string) => {
    if (!win) return true;
    const t = Date.parse(iso);
    return !Number.isFinite(t) || (t >= win.from && t <= win.to);
  };
  const before = win
    ? s.compactions.filter(
        (c) => Number.isFinite(Date.parse(c.first_seen_at)) && Date.parse(c.first_seen_at) < win.from,
      ).length
    : 0;
  // compactions: one store row (with a checkpoint and a trip) per compaction in the file
  const T = a.compactions.length;
  const byseq = new Map(s.compactions.map((c) => [c.seq - before, c]));
  out.compactions = s.compactions.map((c) => ({
    seq: c.seq,
    trigger: c.trigger,
    observed_via: safeJsonArray(c.observed_via),
    checkpoint_id: c.checkpoint_id,
    tripped_at: c.tripped_at,
    in_transcript: c.seq > before && c.seq - before <= T,
  }));
  const cpById = new Map(s.checkpoints.map((c) => [c.id, c]));
  for (let k = 1; k <= T; k++) {
    const c = byseq.get(k);
    const rep = a.compactions[k - 1]!;
    if (!c) {
      a.finding(
        'store_missing_compaction',
        'error',
        'a compaction in the file has no record in the Latch store (Latch did not see it)',
        rep.line,
      );
      continue;
    }
    if (c.trigger) {
      rep.trigger = c.trigger;
      rep.trigger_source = 'store';
    }
    if (!c.checkpoint_id || !cpById.has(c.checkpoint_id))
      a.finding('no_checkpoint', 'error', 'a compaction has no checkpoint in the Latch store', rep.line);
    if (!c.tripped_at)
      a.finding('no_trip', 'error', 'a compaction did not trip the policy in the Latch store', rep.line);
  }
  for (const c of s.compactions) {
    if (stream && !(c.seq > before && inWindow(c.first_seen_at))) continue;
    if (c.seq - before > T)
      a.finding(
        'transcript_missing_compaction',
        'error',
        `the Latch store recorded compaction #${c.seq} but the file shows only ${T}: the transcript lost lines or was rewritten`,
      );
  }
  // prefix hashes
  out.checkpoints = s.checkpoints.map((c) => {
    let prefix: NonNullable<StoreCrossCheck['checkpoints']>[number]['prefix'] = 'not_recorded';
    let now: string | null = null;
    let compared: string | null = path;
    if (stream) {
      // The checkpoint hashed its transcript (a rollout), never the stream: compare with that file.
      compared = c.transcript_path && isPlainFile(c.transcript_path) ? c.transcript_path : null;
      if (c.transcript_size !== null && c.transcript_sha256) {
        if (compared === null) prefix = 'not_checked';
        else {
          now = hashPrefixOrNull(compared, c.transcript_size);
          if (now === null) {
            prefix = 'shorter';
            a.finding(
              'prefix_rewritten',
              'error',
              `the transcript ${compared} is shorter than the ${c.transcript_size} bytes hashed at checkpoint ${c.id}: it was truncated or rewritten`,
            );
          } else if (now === c.transcript_sha256) prefix = 'same';
          else {
            prefix = 'rewritten';
            a.finding(
              'prefix_rewritten',
              'error',
              `prefix rewritten: the first ${c.transcript_size} bytes of the transcript ${compared} differ from what checkpoint ${c.id} hashed`,
            );
          }
        }
      }
    } else if (c.transcript_size !== null && c.transcript_sha256) {
      if (a.bytes < c.transcript_size) {
        prefix = 'shorter';
        a.finding(
          'prefix_rewritten',
          'error',
          `the file is shorter (${a.bytes} bytes) than the ${c.transcript_size} bytes hashed at checkpoint ${c.id}: it was truncated or rewritten`,
        );
      } else {
        now = digests.get(c.transcript_size) ?? null;
        if (now === null) prefix = 'not_checked';
        else if (now === c.transcript_sha256) prefix = 'same';
        else {
          prefix = 'rewritten';
          a.finding(
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
      created_at: c.created_at,
      tree_sha256: c.tree_sha256,
      tree_files: c.tree_files,
      transcript_size: c.transcript_size,
      transcript_sha256: c.transcript_sha256,
      compared_file: compared,
      prefix_now_sha256: now,
      prefix,
    };
  });
  // verify transitions: tree digests at checkpoint vs at verify
  out.verifies = [];
  for (const t of s.transitions) {
    if (t.event !== 'verify') continue;
    let ev: {
      accepted_changes?: boolean;
      baseline?: { id?: string; tree_sha256?: string } | null;
      current?: { tree_sha256?: string };
    } = {};
    try {
      ev = JSON.parse(t.evidence_json) as typeof ev;
    } catch {
      /* recorded below as nulls */
    }
    const cp = ev.baseline?.id ? cpById.get(ev.baseline.id) : undefined;
    const v = {
      at: t.at,
      accepted_changes: ev.accepted_changes === true,
      baseline_tree_sha256: ev.baseline?.tree_sha256 ?? null,
      current_tree_sha256: ev.current?.tree_sha256 ?? null,
      checkpoint_tree_sha256: cp?.tree_sha256 ?? null,
    };
    out.verifies.push(v);
    if (cp && v.baseline_tree_sha256 !== cp.tree_sha256)
      a.finding('verify_inconsistent', 'error', `a verify's baseline tree digest differs from checkpoint ${cp.id}'s`);
    if (
      !v.accepted_changes &&
      v.baseline_tree_sha256 &&
      v.current_tree_sha256 &&
      v.baseline_tree_sha256 !== v.current_tree_sha256
    ) {
      a.finding(
        'verify_inconsistent',
        'error',
        'a verify restored authority with a tree digest different from the checkpoint without accepting the changes',
      );
    }
  }
  // denials vs blocked outputs (a stream: the denials made while it was written)
  const denials = stream ? s.denials.filter((d) => inWindow(d.at)) : s.denials;
  if (win) {
    out.stream_window = {
      from: new Date(win.from).toISOString(),
      to: new Date(win.to).toISOString(),
      compactions_before: before,
      denials_outside: s.denials.length - denials.length,
    };
  }
  const denied = denials.map((d) => d.tool_use_id).filter((x): x is string => !!x);
  const deniedSet = new Set(denied);
  const missingInTranscript = denied.filter((id) => !a.blockedLatch.has(id));
  const missingInStore = [...a.blockedLatch].filter((id) => !deniedSet.has(id));
  out.denials = {
    store: s.denials.length,
    transcript_blocked_by_latch: a.blockedLatch.size,
    transcript_blocked_other: a.blockedOther,
    missing_in_transcript: missingInTranscript.slice(0, LIST_CAP),
    missing_in_store: missingInStore.slice(0, LIST_CAP),
  };
  if (missingInTranscript.length > 0) {
    a.finding(
      'denial_not_in_transcript',
      'error',
      stream
        ? `${missingInTranscript.length} denial(s) recorded by Latch while the stream was written have no blocked PreToolUse run in it (the call ran anyway, or the stream lost lines)`
        : `${missingInTranscript.length} denial(s) recorded by Latch have no "Command blocked" output in the file (the call ran anyway, or the transcript was altered)`,
    );
  }
  if (missingInStore.length > 0) {
    a.finding(
      'block_not_in_store',
      'warning',
      `${missingInStore.length} call(s) blocked by Latch in the file have no denial in the store`,
    );
  }
  return out;
}

/** The time an app-server stream covers (its first and last emittedAtMs, widened by a second for clock steps), or null. */
function streamWindow(a: Analyser): { from: number; to: number } | null {
  if (a.emittedFirst === null || a.emittedLast === null) return null;
  return { from: a.emittedFirst - 1000, to: a.emittedLast + 1000 };
}

function isPlainFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function hashPrefixOrNull(p: string, size: number): string | null {
  try {
    return hashFilePrefix(p, size);
  } catch {
    return null;
  }
}

function buildReport(
  a: Analyser,
  path: string,
  compression: FsckReport['compression'],
  unreadable: string | null,
  store: StoreCrossCheck | null,
): FsckReport {
  if (!unreadable) {
    if (a.lines === 0) a.finding('empty_file', 'error', 'the file is empty');
    else if (a.format === 'unknown')
      unreadable = 'not a Codex rollout or app-server stream: no line could be read as a record';
  }
  if (!unreadable && a.format === 'rollout') {
    if (!a.records.get('session_meta'))
      a.finding(
        'missing_session_meta',
        'error',
        'no session_meta record: the session id, writer version and fork origin are unknown',
      );
    else if (a.sessions[0] && a.sessions[0].line !== 1)
      a.finding('session_meta_not_first', 'warning', 'session_meta is not the first line', a.sessions[0].line);
  }
  a.writer.qualified = a.writer.cli_version !== null && a.writer.allowlist.includes(a.writer.cli_version);
  if (!unreadable && a.lines > 0 && a.format !== 'unknown' && !a.writer.qualified) {
    a.finding(
      'unqualified_writer',
      'error',
      a.writer.cli_version
        ? `written by Codex ${a.writer.cli_version}, which Latch has not qualified (allowlist: ${a.writer.allowlist.join(', ')})`
        : `the writer version is unknown (Latch qualifies: ${a.writer.allowlist.join(', ')})`,
    );
  }
  // Damage vs age (src/agents/codex/qualification-doctor.ts): an unqualified writer's differences are notices (exit 3).
  const findings = gradeFindings([...a.findings.values()], a.writer);
  const exit = doctorExit(unreadable !== null, findings);
  return {
    schema: 'latch.doctor.transcript/1',
    file: path,
    compression,
    bytes: a.bytes,
    format: a.format,
    layout: a.layout,
    lines: a.lines,
    ok: exit === 0,
    exit_code: exit,
    unreadable,
    records: obj(a.records),
    payload_types: obj(a.payloadTypes),
    writer: a.writer,
    sessions: a.sessions,
    turns: { count: a.turnCount, ids: a.turnList, ids_truncated: a.turnCount > a.turnList.length },
    ordinals: a.ordFirst === null ? null : { first: a.ordFirst, last: a.ordLast },
    parse_errors: a.parseErrors,
    truncated_last_line: a.truncated,
    unknown_types: [...a.unknown.entries()].map(([type, u]) => ({ type, count: u.count, first_line: u.first })),
    compactions: a.compactions,
    tool_calls: { total: a.toolTotal, by_name: obj(a.toolNames) },
    attempts_after_compaction: { ...a.attempts, list: a.attemptList, list_truncated: a.attemptDropped },
    hook_blocked_outputs: a.hookBlocked,
    hook_runs:
      a.format === 'app-server'
        ? {
            started: a.hookRuns.started,
            completed: a.hookRuns.completed,
            by_event_status: obj(a.hookRuns.byEventStatus),
            runs: a.hookRuns.runs,
            runs_truncated: a.hookRuns.dropped,
          }
        : null,
    store,
    findings,
  };
}
