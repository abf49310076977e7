// Native-resume qualification. On SessionStart(source=resume) Latch decides whether the session can
// continue from its own rollout ("native": the brief it read after its latest compaction is still in
// the transcript, byte for byte) or needs the brief delivered again ("full"). Every check is always
// evaluated and reported with its reason; any failed or unevaluable check means "full".
//
// The transcript is read once, in chunks: the recorded prefix is hashed as it streams by, and lines
// are split as they arrive (only the lines the checks need are parsed, plus every line of the tail).
import { createHash } from 'node:crypto';
import { closeSync, constants as FS, fstatSync, lstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { qualifiedVersions, shippedQualifiedVersions } from './qualification.js';
import { pageRead, type BriefDigest, type PageRead } from '../../continuity/page-read.js';
import type { ToolOutput } from '../agent.js';
import {
  QUALIFY_CHECKS,
  type QualifyCheck,
  type QualifyCheckName,
  type QualifyDecision,
  type QualifyInput,
  type QualifyOptions,
} from '../../continuity/qualify.js';
import { codexToolOutput } from './outputs.js';
import { RESUMABLE_RECORD_TYPES } from './records.js';
export type { QualifyDecision, QualifyInput, RecordedTranscript } from '../../continuity/qualify.js';

/**
 * The versions the package itself qualified (data/qualified/*.json), read once at load. Native
 * resume uses qualifiedVersionsOfStore(db), which adds this machine's own records.
 * @deprecated kept for callers that have no store; prefer qualifiedVersions(home).
 */
export const QUALIFIED_VERSIONS: readonly string[] = shippedQualifiedVersions();

/** The qualified versions for the Latch store `db` ($LATCH_HOME = the directory of latch.db): shipped + this machine's records. */
export function qualifiedVersionsOfStore(db: { name: string }): string[] {
  return qualifiedVersions(dirname(db.name));
}

const TOOL_OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output']);
const NL = 0x0a;
const MARK_BRIEF = Buffer.from('LATCH-BRIEF');
const MARK_META = Buffer.from('session_meta');
const MARK_TURN = Buffer.from('turn_context');
const MARK_COMPACT = Buffer.from('ompact');

/**
 * The complete-read check's verdict on one tool output: the one page-read rule (the same the read
 * receipts use: src/continuity/page-read.ts) with Codex's tool-output unwrapping.
 */
export function resumeRead(
  output: string,
  brief: BriefDigest,
  toolOutput: (output: string) => ToolOutput = codexToolOutput,
): PageRead {
  return pageRead(output, brief, toolOutput);
}

// ---------------------------------------------------------------------------------------------
// The qualification.

interface Candidate {
  start: number;
  page: number | null;
  problems: string[];
}

interface Scan {
  size: number;
  firstLine: { type: unknown; payload: Record<string, unknown> } | string;
  extraMeta: number[];
  turnContext: { payload: Record<string, unknown>; start: number } | null;
  turnContextProblems: string[];
  prefixSha: string | null;
  prefixAtLineBoundary: boolean;
  tailLines: number;
  tailProblems: string[];
  tailProblemCount: number;
  partial: { start: number; bytes: number } | null;
  compactions: number;
  lastMarkerEnd: number;
  tailCompactions: number;
  candidates: Candidate[];
  ignoredReads: number;
}

/** Decide native vs full for a resuming session. Never throws: anything unreadable is a failed check. */
export function qualifyResume(input: QualifyInput, opts: QualifyOptions = {}): QualifyDecision {
  const checks = new Map<QualifyCheckName, QualifyCheck>();
  const set = (name: QualifyCheckName, ok: boolean, reason: string) => checks.set(name, { name, ok, reason });
  const { recorded } = input;
  const path = input.transcriptPath;

  // --- file ---------------------------------------------------------------------------------
  const fileProblems: string[] = [];
  if (!recorded) fileProblems.push('no recorded transcript (never recorded)');
  let symlink = false;
  try {
    const l = lstatSync(path);
    if (l.isSymbolicLink()) {
      symlink = true;
      fileProblems.push(`${path} is a symbolic link`);
    }
  } catch (err) {
    fileProblems.push(`cannot lstat ${path}: ${message(err)}`);
  }
  let fd: number | null = null;
  let openError: string | null = null;
  try {
    const flags = FS.O_RDONLY | (FS.O_NONBLOCK ?? 0);
    // O_NOFOLLOW: what is opened is what lstat saw. A symlinked path is still read (decision is
    // already full) so that the other checks can report on its content.
    fd = openSync(path, symlink ? flags : flags | (FS.O_NOFOLLOW ?? 0));
  } catch (err) {
    openError = `cannot open ${path}: ${message(err)}`;
    if (!symlink) fileProblems.push(openError);
  }
  let size = 0;
  try {
    if (fd !== null) {
      const st = fstatSync(fd, { bigint: true });
      if (!st.isFile()) {
        fileProblems.push(`${path} is not a regular file`);
        openError = `${path} is not a regular file`;
        closeSync(fd);
        fd = null;
      } else {
        size = Number(st.size);
        const uid = opts.uid ?? (typeof process.getuid === 'function' ? process.getuid() : null);
        if (uid === null) fileProblems.push('cannot determine the current user');
        else if (Number(st.uid) !== uid)
          fileProblems.push(`owned by uid ${st.uid}, not by the current user (uid ${uid})`);
        if (recorded) {
          const dev = String(st.dev);
          const ino = String(st.ino);
          if (dev !== recorded.dev || ino !== recorded.ino) {
            fileProblems.push(
              `replaced: device/inode ${dev}:${ino} differs from the recorded ${recorded.dev}:${recorded.ino}`,
            );
          }
          if (Number(st.uid) !== recorded.uid)
            fileProblems.push(`owner uid ${st.uid} differs from the recorded uid ${recorded.uid}`);
        }
      }
    }
    if (recorded) {
      try {
        const real = realpathSync.native(path);
        if (real !== recorded.realpath)
          fileProblems.push(`realpath ${real} differs from the recorded ${recorded.realpath}`);
      } catch (err) {
        fileProblems.push(`cannot resolve the realpath of ${path}: ${message(err)}`);
      }
    }
    set(
      'file',
      fileProblems.length === 0,
      fileProblems.length
        ? fileProblems.join('; ')
        : `regular file owned by the current user, same device/inode and realpath as recorded (${recorded!.realpath})`,
    );

    // --- content checks ---------------------------------------------------------------------
    let scan: Scan | null = null;
    let scanError: string | null = openError;
    if (fd !== null) {
      try {
        scan = scanRollout(fd, size, input, opts);
      } catch (err) {
        scanError = `cannot read ${path}: ${message(err)}`;
      }
    }
    if (!scan) {
      const why = `not evaluated: ${scanError ?? 'transcript unreadable'}`;
      for (const name of QUALIFY_CHECKS) if (name !== 'file') set(name, false, why);
    } else {
      identityCheck(scan, input, set);
      writerCheck(scan, input, set);
      appendOnlyCheck(scan, input, set);
      tailCheck(scan, input, set);
      completeReadCheck(scan, input, set);
      forkCheck(scan, set);
    }
  } finally {
    if (fd !== null) closeSync(fd);
  }

  const list = QUALIFY_CHECKS.map((name) => checks.get(name) ?? { name, ok: false, reason: 'not evaluated' });
  return { decision: list.every((c) => c.ok) ? 'native' : 'full', checks: list };
}

type Setter = (name: QualifyCheckName, ok: boolean, reason: string) => void;

function metaPayload(scan: Scan): Record<string, unknown> | null {
  if (typeof scan.firstLine === 'string' || scan.firstLine.type !== 'session_meta') return null;
  return scan.firstLine.payload;
}

function metaProblem(scan: Scan): string {
  if (typeof scan.firstLine === 'string') return scan.firstLine;
  return `the first line is a ${JSON.stringify(scan.firstLine.type)} record, not session_meta`;
}

function identityCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const e = input.expected;
  const problems: string[] = [];
  const meta = metaPayload(scan);
  if (!meta) problems.push(metaProblem(scan));
  else {
    if (meta.id !== e.session_id)
      problems.push(`session_meta.id ${fmt(meta.id)} != expected session ${fmt(e.session_id)}`);
    if (meta.session_id !== undefined && meta.session_id !== e.session_id) {
      problems.push(`session_meta.session_id ${fmt(meta.session_id)} != expected session ${fmt(e.session_id)}`);
    }
  }
  if (scan.extraMeta.length) problems.push(`another session_meta line at offset ${scan.extraMeta.join(', ')}`);
  problems.push(...scan.turnContextProblems);
  const tc = scan.turnContext;
  if (!tc) problems.push('no turn_context line in the transcript');
  else {
    const p = tc.payload;
    const at = `(latest turn_context at offset ${tc.start})`;
    if (p.cwd !== e.cwd) problems.push(`cwd ${fmt(p.cwd)} != expected ${fmt(e.cwd)} ${at}`);
    if (!same(p.model, e.model)) problems.push(`model ${fmt(p.model)} != expected ${fmt(e.model)} ${at}`);
    if (!same(p.approval_policy, e.approval_policy))
      problems.push(`approval_policy ${fmt(p.approval_policy)} != expected ${fmt(e.approval_policy)} ${at}`);
    if (!same(p.sandbox_policy, e.sandbox_policy))
      problems.push(`sandbox_policy ${fmt(p.sandbox_policy)} != expected ${fmt(e.sandbox_policy)} ${at}`);
    if (!same(p.permission_profile, e.permission_profile)) {
      problems.push(`permission_profile ${fmt(p.permission_profile)} != expected ${fmt(e.permission_profile)} ${at}`);
    }
  }
  const hp = input.payload;
  if (hp.session_id !== e.session_id)
    problems.push(`hook payload session_id ${fmt(hp.session_id)} != expected ${fmt(e.session_id)}`);
  if (hp.cwd !== e.cwd) problems.push(`hook payload cwd ${fmt(hp.cwd)} != expected ${fmt(e.cwd)}`);
  if (!same(hp.model, e.model)) problems.push(`hook payload model ${fmt(hp.model)} != expected ${fmt(e.model)}`);
  set(
    'identity',
    problems.length === 0,
    problems.length
      ? problems.join('; ')
      : `session ${e.session_id}, cwd ${e.cwd}, model ${e.model}, approval/sandbox/permission profile match (session_meta, turn_context at offset ${tc!.start}, hook payload)`,
  );
}

function writerCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const meta = metaPayload(scan);
  if (!meta) return set('writer', false, metaProblem(scan));
  const v = meta.cli_version;
  const list = `[${input.qualifiedVersions.join(', ')}]`;
  if (typeof v !== 'string') return set('writer', false, `session_meta has no cli_version (qualified: ${list})`);
  if (!input.qualifiedVersions.includes(v)) {
    return set(
      'writer',
      false,
      `cli_version ${v} is not on the qualified list ${list} (run \`latch qualify codex ${v}\` to qualify it on this machine)`,
    );
  }
  set('writer', true, `cli_version ${v} is qualified (a passing qualification record)`);
}

function appendOnlyCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const r = input.recorded;
  if (!r) return set('append-only', false, 'no recorded prefix (never recorded)');
  if (scan.size < r.size)
    return set('append-only', false, `file is shorter (${scan.size} bytes) than the recorded prefix (${r.size} bytes)`);
  if (scan.prefixSha !== r.sha256) {
    return set(
      'append-only',
      false,
      `recorded prefix [0, ${r.size}) changed: sha256 ${short(scan.prefixSha ?? '')} != recorded ${short(r.sha256)}`,
    );
  }
  set(
    'append-only',
    true,
    `first ${r.size} bytes unchanged (sha256 ${short(r.sha256)}), ${scan.size - r.size} bytes appended`,
  );
}

function tailCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const r = input.recorded;
  const from = r ? r.size : 0;
  if (r && scan.size < r.size)
    return set('tail', false, `not evaluated: file is shorter than the recorded prefix (${scan.size} < ${r.size})`);
  const problems: string[] = [];
  if (!scan.prefixAtLineBoundary) problems.push(`the recorded position ${from} is inside a line`);
  if (scan.tailProblemCount) {
    problems.push(...scan.tailProblems);
    if (scan.tailProblemCount > scan.tailProblems.length)
      problems.push(`and ${scan.tailProblemCount - scan.tailProblems.length} more`);
  }
  const partial = scan.partial
    ? `; ignored a partial last line at offset ${scan.partial.start} (${scan.partial.bytes} bytes, no trailing newline: still being written)`
    : '';
  set(
    'tail',
    problems.length === 0,
    problems.length
      ? problems.join('; ') + partial
      : `${scan.tailLines} line(s) after offset ${from}, all of understood record types${partial}`,
  );
}

function completeReadCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const brief = input.currentBrief;
  const from = input.recorded ? input.recorded.size : 0;
  const boundary = Math.max(input.lastCompactionOffset ?? 0, scan.lastMarkerEnd);
  if (!brief) {
    const recordedLater = input.lastCompactionOffset !== null && input.lastCompactionOffset > from;
    if (scan.tailCompactions > 0 || recordedLater) {
      return set(
        'complete-read',
        false,
        `no brief, but a compaction happened since the recorded position ${from} (ends at offset ${boundary}): the context must be re-delivered`,
      );
    }
    return set('complete-read', true, `no brief, and no compaction since the recorded position ${from}`);
  }
  if (brief.pages.length === 0)
    return set('complete-read', false, `brief ${brief.session} v${brief.version} has no pages`);
  const where = boundary > 0 ? `after the latest compaction (offset ${boundary})` : 'in the transcript (no compaction)';
  const problems: string[] = [];
  const found: string[] = [];
  const valid = scan.candidates.filter((c) => c.start >= boundary);
  const ignored = scan.ignoredReads + (scan.candidates.length - valid.length);
  for (const p of brief.pages) {
    const label = `page ${p.n}/${brief.pages.length}`;
    const ok = valid.find((c) => c.page === p.n && c.problems.length === 0);
    if (ok) {
      found.push(`${label} at offset ${ok.start}`);
      continue;
    }
    const rejected = valid.filter((c) => c.page === p.n || c.page === null);
    const detail = rejected.length
      ? ` (rejected: ${rejected
          .slice(-3)
          .map((c) => `offset ${c.start}: ${c.problems.join(', ')}`)
          .join('; ')})`
      : '';
    problems.push(`${label}: no complete successful read ${where}${detail}`);
  }
  const ignoredNote = ignored
    ? `; ${ignored} brief read(s) before the latest compaction (offset ${boundary}) ignored`
    : '';
  set(
    'complete-read',
    problems.length === 0,
    problems.length
      ? problems.join('; ') + ignoredNote
      : `all ${brief.pages.length} page(s) of brief ${brief.session} v${brief.version} read completely ${where}: ${found.join(', ')}${ignoredNote}`,
  );
}

function forkCheck(scan: Scan, set: Setter): void {
  const meta = metaPayload(scan);
  if (!meta) return set('fork', false, metaProblem(scan));
  const base = meta.history_base;
  if (meta.forked_from_id !== undefined && meta.forked_from_id !== null) {
    return set(
      'fork',
      false,
      `fork: session_meta.forked_from_id ${fmt(meta.forked_from_id)} (a fork is not a plain resume)`,
    );
  }
  if (base !== undefined && base !== null)
    return set('fork', false, `fork: session_meta.history_base ${fmt(base)} (history inherited by reference)`);
  set('fork', true, 'not a fork (no forked_from_id, no history_base)');
}

// ---------------------------------------------------------------------------------------------
// The single streaming pass.

const MAX_LISTED = 5;

function scanRollout(fd: number, size: number, input: QualifyInput, opts: QualifyOptions): Scan {
  const recordedSize = input.recorded ? input.recorded.size : 0;
  const hashPrefix = input.recorded !== null && size >= recordedSize;
  const hash = createHash('sha256');
  const tailStart = recordedSize;
  const toolOutput = opts.toolOutput ?? codexToolOutput;
  const brief = input.currentBrief;
  const lastKnown = input.lastCompactionOffset ?? 0;
  const s: Scan = {
    size,
    firstLine: 'the transcript is empty (no session_meta line)',
    extraMeta: [],
    turnContext: null,
    turnContextProblems: [],
    prefixSha: null,
    prefixAtLineBoundary: true,
    tailLines: 0,
    tailProblems: [],
    tailProblemCount: 0,
    partial: null,
    compactions: 0,
    lastMarkerEnd: 0,
    tailCompactions: 0,
    candidates: [],
    ignoredReads: 0,
  };
  const tailProblem = (msg: string) => {
    s.tailProblemCount++;
    if (s.tailProblems.length < MAX_LISTED) s.tailProblems.push(msg);
  };
  const marker = (start: number, end: number) => {
    s.compactions++;
    s.lastMarkerEnd = end;
    if (start >= tailStart) s.tailCompactions++;
    // A read before this compaction no longer counts.
    s.ignoredReads += s.candidates.length;
    s.candidates = [];
  };

  let lineNo = 0;
  const onLine = (line: Buffer, start: number, end: number) => {
    const first = lineNo++ === 0;
    const inTail = end > tailStart;
    if (inTail) s.tailLines++;
    const wantMeta = first || line.indexOf(MARK_META) >= 0;
    const wantTurn = line.indexOf(MARK_TURN) >= 0;
    const wantCompact = line.indexOf(MARK_COMPACT) >= 0;
    const wantBrief = brief !== null && line.indexOf(MARK_BRIEF) >= 0;
    if (!inTail && !wantMeta && !wantTurn && !wantCompact && !wantBrief) return;
    let obj: unknown;
    try {
      obj = JSON.parse(line.toString('utf8'));
    } catch {
      if (inTail) tailProblem(`line at offset ${start} is not JSON`);
      if (first) s.firstLine = 'the first line is not JSON';
      if (wantTurn) s.turnContextProblems.push(`unreadable line mentioning turn_context at offset ${start}`);
      if (wantCompact) marker(start, end); // fail closed: an unreadable line that may be a compaction is one
      return;
    }
    const rec = isObject(obj) ? obj : {};
    const type = rec.type;
    const payload = isObject(rec.payload) ? rec.payload : {};
    if (inTail && (typeof type !== 'string' || !RESUMABLE_RECORD_TYPES.has(type))) {
      tailProblem(`unknown record type ${fmt(type)} at offset ${start}`);
    }
    if (first) {
      s.firstLine = { type, payload };
      return;
    }
    switch (type) {
      case 'session_meta':
        s.extraMeta.push(start);
        return;
      case 'turn_context':
        s.turnContext = { payload, start };
        return;
      case 'compacted':
        marker(start, end);
        return;
      case 'event_msg': {
        const t = payload.type;
        const item = isObject(payload.item) ? payload.item : null;
        if (
          t === 'context_compacted' ||
          ((t === 'item_started' || t === 'item_completed') && item?.type === 'ContextCompaction')
        ) {
          marker(start, end);
        }
        return;
      }
      case 'response_item': {
        if (!wantBrief || !brief || !TOOL_OUTPUT_TYPES.has(payload.type as string)) return;
        if (start < lastKnown) {
          s.ignoredReads++;
          return;
        }
        const output = payload.output;
        if (typeof output !== 'string') {
          s.candidates.push({ start, page: null, problems: ['tool output is not text'] });
          return;
        }
        const r = resumeRead(output, brief, toolOutput);
        s.candidates.push({ start, page: r.page, problems: r.reasons });
        return;
      }
      default:
        return;
    }
  };

  const chunk = Buffer.allocUnsafe(Math.max(4096, opts.chunkSize ?? 1 << 20));
  let pos = 0;
  let pending: Buffer[] = [];
  let lineStart = 0;
  while (pos < size) {
    const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - pos), pos);
    if (n <= 0) break;
    const data = chunk.subarray(0, n);
    if (hashPrefix && pos < recordedSize) hash.update(data.subarray(0, Math.min(n, recordedSize - pos)));
    if (recordedSize > 0 && pos < recordedSize && recordedSize <= pos + n)
      s.prefixAtLineBoundary = data[recordedSize - 1 - pos] === NL;
    let from = 0;
    for (;;) {
      const nl = data.indexOf(NL, from);
      if (nl < 0) break;
      const piece = data.subarray(from, nl);
      const line = pending.length ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      onLine(line, lineStart, pos + nl + 1);
      lineStart = pos + nl + 1;
      from = nl + 1;
    }
    if (from < n) pending.push(Buffer.from(data.subarray(from)));
    pos += n;
  }
  if (pos < size) throw new Error(`short read at ${pos} of ${size} bytes`);
  if (hashPrefix) s.prefixSha = hash.digest('hex');
  if (lineStart < size) {
    // Still being written: not a line yet. Not parsed and no read in it counts (reported by `tail`),
    // but if it may be a turn_context or a compaction, what it will say is unknown: fail closed.
    s.partial = { start: lineStart, bytes: size - lineStart };
    if (lineNo === 0) s.firstLine = 'the first line is incomplete (no trailing newline)';
    const rest = pending.length ? Buffer.concat(pending) : Buffer.alloc(0);
    if (rest.indexOf(MARK_TURN) >= 0) {
      s.turnContextProblems.push(
        `the partial last line at offset ${lineStart} mentions turn_context (still being written): the latest turn context is unknown`,
      );
    }
    if (rest.indexOf(MARK_COMPACT) >= 0) marker(lineStart, size);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Structural equality of JSON values (key order ignored; undefined and null are the same). */
function same(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(x: unknown): string {
  if (x === undefined || x === null) return 'null';
  if (Array.isArray(x)) return `[${x.map(canonical).join(',')}]`;
  if (isObject(x)) {
    const keys = Object.keys(x)
      .filter((k) => x[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(x[k])}`).join(',')}}`;
  }
  return JSON.stringify(x);
}

function fmt(x: unknown): string {
  return clip(x === undefined ? 'undefined' : canonical(x), 200);
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function short(hex: string): string {
  return hex.slice(0, 12);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
