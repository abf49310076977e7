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

export interface RecordedTranscript {
  path: string;
  realpath: string;
  dev: string;
  ino: string;
  uid: number;
  size: number;
  /** SHA-256 (hex) of bytes [0, size). */
  sha256: string;
}

export interface Identity {
  session_id: string;
  cwd: string;
  model: string | null;
  approval_policy: string | null;
  sandbox_policy: unknown;
  permission_profile: unknown;
}

export interface BriefDigest {
  session: string;
  version: number;
  pages: { n: number; sha256: string }[];
}

export interface QualifyInput {
  /** transcript_path of the resuming hook payload. */
  transcriptPath: string;
  /** What Latch recorded earlier (null: never recorded → full). */
  recorded: RecordedTranscript | null;
  /** Latch's record of the session (from the latest turn_context Latch saw). */
  expected: Identity;
  payload: { session_id: string; cwd: string; model: string | null; permission_mode: string | null };
  /**
   * Exact allowlist of session_meta.cli_version values (no ranges): the versions with a passing
   * qualification record (src/agents/codex/qualification.ts), e.g. qualifiedVersionsOfStore(db).
   */
  qualifiedVersions: readonly string[];
  currentBrief: BriefDigest | null;
  /** Byte offset just past the session's latest compaction in this transcript (null: none known). */
  lastCompactionOffset: number | null;
}

export interface QualifyCheck {
  name: string;
  ok: boolean;
  reason: string;
}

export interface QualifyDecision {
  decision: 'native' | 'full';
  checks: QualifyCheck[];
}

export interface QualifyOptions {
  /** The current user's uid (default: process.getuid()). Injectable so tests running as root can fail it. */
  uid?: number;
  /** Truncation predicate for a tool output: a reason when truncated, null when complete. */
  truncation?: (output: string) => string | null;
  /** Read size in bytes (default 1 MiB). */
  chunkSize?: number;
}

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

/** Check names, in report order. */
export const QUALIFY_CHECKS = ['file', 'identity', 'writer', 'append-only', 'tail', 'complete-read', 'fork'] as const;
export type QualifyCheckName = (typeof QUALIFY_CHECKS)[number];

/**
 * Record types Latch understands well enough to resume natively (docs/codex-notes.md, test/fixtures/rollouts/).
 * Deliberately narrower than fsck.ts's KNOWN_RECORD_TYPES (everything 0.169 can write): a type Latch
 * only recognises, such as inter_agent_communication, still makes a resume `full`.
 */
export const KNOWN_RECORD_TYPES: ReadonlySet<string> = new Set([
  'session_meta',
  'response_item',
  'event_msg',
  'turn_context',
  'compacted',
  'world_state',
  'token_usage_record',
]);

const TOOL_OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output']);
const NL = 0x0a;
const MARK_BRIEF = Buffer.from('LATCH-BRIEF');
const MARK_META = Buffer.from('session_meta');
const MARK_TURN = Buffer.from('turn_context');
const MARK_COMPACT = Buffer.from('ompact');

// ---------------------------------------------------------------------------------------------
// Tool output predicates (exported so the brief delivery and the guard can use the same rules).

export interface ExecOutput {
  /** The header lines before "Output:" (Chunk ID, Wall time, Process exited with code N, ...). */
  header: string[];
  /** Everything after "Output:\n": the command's (possibly truncated) output as the model saw it. */
  body: string;
}

/** Splits a Codex exec_command tool output ("<header lines>\nOutput:\n<output>"); null if not that shape. */
export function parseExecOutput(output: string): ExecOutput | null {
  let at: number;
  if (output.startsWith('Output:\n')) at = 0;
  else {
    const i = output.indexOf('\nOutput:\n');
    if (i < 0) return null;
    at = i + 1;
  }
  const head = output.slice(0, at === 0 ? 0 : at - 1);
  return { header: head === '' ? [] : head.split('\n'), body: output.slice(at + 'Output:\n'.length) };
}

/** Codex's token estimate: ceil(UTF-8 bytes / 4). */
export function approxTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

const TRUNCATED_LINE = /tokens? truncated/i;
const TRUNCATED_HEAD = 'Warning: truncated output';
const OMITTED_LINE = /^\.\.\. \d+ bytes omitted \.\.\.$/;

/**
 * Why a tool output is truncated, or null when it is complete. Codex 0.169 (docs/codex-notes.md):
 * the text after "Output:\n" starts with "Warning: truncated output (original token count: N)",
 * may hold "... N bytes omitted ..." and a mid-line "…N tokens truncated…". Truncated when any of
 * these is present (any line matching /tokens? truncated/i, in whatever wrapper), or when the
 * header's "Original token count: N" exceeds Codex's estimate (ceil(bytes/4)) of what was shown.
 */
export function outputTruncation(output: string): string | null {
  const exec = parseExecOutput(output);
  if (exec?.body.startsWith(TRUNCATED_HEAD)) return `truncated ("${TRUNCATED_HEAD}")`;
  for (const line of output.split('\n')) {
    if (TRUNCATED_LINE.test(line)) return `truncated (marker line ${JSON.stringify(clip(line, 60))})`;
    if (OMITTED_LINE.test(line)) return `truncated (${JSON.stringify(line)})`;
  }
  if (exec) {
    for (const line of exec.header) {
      const m = /^Original token count: (\d+)$/.exec(line);
      if (!m) continue;
      const original = Number(m[1]);
      const shown = approxTokens(exec.body);
      if (original > shown) return `truncated (original token count ${original} > ${shown} shown)`;
    }
  }
  return null;
}

export function isTruncatedOutput(output: string): boolean {
  return outputTruncation(output) !== null;
}

/** Why a tool output reports an error (isError wrapper, hook denial), or null. */
export function outputError(output: string): string | null {
  if (/"isError"\s*:\s*true/.test(output)) return 'wrapped in an error ({"isError": true})';
  if (output.includes('Command blocked by PreToolUse hook')) return 'Command blocked by PreToolUse hook';
  return null;
}

export interface BriefPage {
  session: string;
  version: number;
  n: number;
  total: number;
  sha256: string;
  body: string;
}

const HEADER_RE = /^<<<LATCH-BRIEF session=(\S+) version=(\d+) page=(\d+)\/(\d+) sha256=([0-9a-f]{64})>>>$/;
const END_RE = /^<<<END-LATCH-BRIEF page=(\d+)\/(\d+) version=(\d+)>>>$/;

/**
 * The single brief page block in `text`, or a reason. Format:
 *   <<<LATCH-BRIEF session=<id> version=<v> page=<n>/<total> sha256=<hex>>>>\n<body>\n<<<END-LATCH-BRIEF page=<n>/<total> version=<v>>>>
 * The body is the exact text between the header line's newline and the newline before <<<END; its
 * UTF-8 SHA-256 must equal the header's digest.
 */
export function parseBriefPage(text: string): { page: BriefPage } | { reason: string } {
  const heads = occurrences(text, '<<<LATCH-BRIEF ');
  const ends = occurrences(text, '<<<END-LATCH-BRIEF ');
  if (heads.length !== 1 || ends.length !== 1) {
    return { reason: `expected exactly one page block, found ${heads.length} header(s) and ${ends.length} end marker(s)` };
  }
  const h = heads[0]!;
  const e = ends[0]!;
  if (h !== 0 && text[h - 1] !== '\n') return { reason: 'page header is not at the start of a line' };
  const headerEnd = text.indexOf('\n', h);
  if (headerEnd < 0 || headerEnd >= e) return { reason: 'page header line is not followed by a body' };
  const hm = HEADER_RE.exec(text.slice(h, headerEnd));
  if (!hm) return { reason: `malformed page header ${JSON.stringify(clip(text.slice(h, headerEnd), 120))}` };
  if (text[e - 1] !== '\n') return { reason: 'page end marker is not at the start of a line' };
  let endLineEnd = text.indexOf('\n', e);
  if (endLineEnd < 0) endLineEnd = text.length;
  const em = END_RE.exec(text.slice(e, endLineEnd).replace(/\r$/, ''));
  if (!em) return { reason: `malformed page end marker ${JSON.stringify(clip(text.slice(e, endLineEnd), 120))}` };
  // Body: between the header's newline and the newline before <<<END (empty body: the two coincide).
  const body = e - 1 > headerEnd ? text.slice(headerEnd + 1, e - 1) : '';
  const page: BriefPage = {
    session: hm[1]!,
    version: Number(hm[2]),
    n: Number(hm[3]),
    total: Number(hm[4]),
    sha256: hm[5]!,
    body,
  };
  if (Number(em[1]) !== page.n || Number(em[2]) !== page.total || Number(em[3]) !== page.version) {
    return { reason: `end marker page=${em[1]}/${em[2]} version=${em[3]} does not match header page=${page.n}/${page.total} version=${page.version}` };
  }
  const digest = sha256Hex(body);
  if (digest !== page.sha256) return { reason: `page body digest ${short(digest)} does not match its header (${short(page.sha256)})` };
  return { page };
}

/** Why `output` is not a complete, successful read of a page of `brief` (null: it is). */
export function briefReadProblems(output: string, brief: BriefDigest, truncation = outputTruncation): { page: number | null; problems: string[] } {
  const problems: string[] = [];
  const attributed = /LATCH-BRIEF session=\S+ version=\d+ page=(\d+)\//.exec(output);
  let page: number | null = attributed ? Number(attributed[1]) : null;
  const err = outputError(output);
  if (err) problems.push(err);
  const exec = parseExecOutput(output);
  if (!exec) problems.push('not an exec_command output (no "Output:" section)');
  else if (!exec.header.includes('Process exited with code 0')) {
    const status = exec.header.find((l) => l.startsWith('Process exited with code ') || l.startsWith('Process running'));
    problems.push(status ? `did not exit 0 (${status})` : 'no "Process exited with code 0"');
  }
  const t = truncation(output);
  if (t) problems.push(t);
  if (exec) {
    const parsed = parseBriefPage(exec.body);
    if ('reason' in parsed) problems.push(parsed.reason);
    else {
      const p = parsed.page;
      page = p.n;
      if (p.session !== brief.session) problems.push(`page of session ${p.session}, not ${brief.session}`);
      if (p.version !== brief.version) problems.push(`page of brief version ${p.version}, not ${brief.version}`);
      if (p.total !== brief.pages.length) problems.push(`page ${p.n}/${p.total} but the brief has ${brief.pages.length} page(s)`);
      const want = brief.pages.find((x) => x.n === p.n);
      if (!want) problems.push(`page ${p.n} is not a page of the current brief`);
      else if (want.sha256 !== p.sha256) problems.push(`page ${p.n} digest ${short(p.sha256)} differs from the current brief's ${short(want.sha256)}`);
    }
  }
  return { page, problems };
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
        else if (Number(st.uid) !== uid) fileProblems.push(`owned by uid ${st.uid}, not by the current user (uid ${uid})`);
        if (recorded) {
          const dev = String(st.dev);
          const ino = String(st.ino);
          if (dev !== recorded.dev || ino !== recorded.ino) {
            fileProblems.push(`replaced: device/inode ${dev}:${ino} differs from the recorded ${recorded.dev}:${recorded.ino}`);
          }
          if (Number(st.uid) !== recorded.uid) fileProblems.push(`owner uid ${st.uid} differs from the recorded uid ${recorded.uid}`);
        }
      }
    }
    if (recorded) {
      try {
        const real = realpathSync.native(path);
        if (real !== recorded.realpath) fileProblems.push(`realpath ${real} differs from the recorded ${recorded.realpath}`);
      } catch (err) {
        fileProblems.push(`cannot resolve the realpath of ${path}: ${message(err)}`);
      }
    }
    set(
      'file',
      fileProblems.length === 0,
      fileProblems.length ? fileProblems.join('; ') : `regular file owned by the current user, same device/inode and realpath as recorded (${recorded!.realpath})`,
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
    if (meta.id !== e.session_id) problems.push(`session_meta.id ${fmt(meta.id)} != expected session ${fmt(e.session_id)}`);
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
    if (!same(p.approval_policy, e.approval_policy)) problems.push(`approval_policy ${fmt(p.approval_policy)} != expected ${fmt(e.approval_policy)} ${at}`);
    if (!same(p.sandbox_policy, e.sandbox_policy)) problems.push(`sandbox_policy ${fmt(p.sandbox_policy)} != expected ${fmt(e.sandbox_policy)} ${at}`);
    if (!same(p.permission_profile, e.permission_profile)) {
      problems.push(`permission_profile ${fmt(p.permission_profile)} != expected ${fmt(e.permission_profile)} ${at}`);
    }
  }
  const hp = input.payload;
  if (hp.session_id !== e.session_id) problems.push(`hook payload session_id ${fmt(hp.session_id)} != expected ${fmt(e.session_id)}`);
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
    return set('writer', false, `cli_version ${v} is not on the qualified list ${list} (run \`latch qualify codex ${v}\` to qualify it on this machine)`);
  }
  set('writer', true, `cli_version ${v} is qualified (a passing qualification record)`);
}

function appendOnlyCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const r = input.recorded;
  if (!r) return set('append-only', false, 'no recorded prefix (never recorded)');
  if (scan.size < r.size) return set('append-only', false, `file is shorter (${scan.size} bytes) than the recorded prefix (${r.size} bytes)`);
  if (scan.prefixSha !== r.sha256) {
    return set('append-only', false, `recorded prefix [0, ${r.size}) changed: sha256 ${short(scan.prefixSha ?? '')} != recorded ${short(r.sha256)}`);
  }
  set('append-only', true, `first ${r.size} bytes unchanged (sha256 ${short(r.sha256)}), ${scan.size - r.size} bytes appended`);
}

function tailCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const r = input.recorded;
  const from = r ? r.size : 0;
  if (r && scan.size < r.size) return set('tail', false, `not evaluated: file is shorter than the recorded prefix (${scan.size} < ${r.size})`);
  const problems: string[] = [];
  if (!scan.prefixAtLineBoundary) problems.push(`the recorded position ${from} is inside a line`);
  if (scan.tailProblemCount) {
    problems.push(...scan.tailProblems);
    if (scan.tailProblemCount > scan.tailProblems.length) problems.push(`and ${scan.tailProblemCount - scan.tailProblems.length} more`);
  }
  const partial = scan.partial ? `; ignored a partial last line at offset ${scan.partial.start} (${scan.partial.bytes} bytes, no trailing newline: still being written)` : '';
  set(
    'tail',
    problems.length === 0,
    problems.length ? problems.join('; ') + partial : `${scan.tailLines} line(s) after offset ${from}, all of understood record types${partial}`,
  );
}

function completeReadCheck(scan: Scan, input: QualifyInput, set: Setter): void {
  const brief = input.currentBrief;
  const from = input.recorded ? input.recorded.size : 0;
  const boundary = Math.max(input.lastCompactionOffset ?? 0, scan.lastMarkerEnd);
  if (!brief) {
    const recordedLater = input.lastCompactionOffset !== null && input.lastCompactionOffset > from;
    if (scan.tailCompactions > 0 || recordedLater) {
      return set('complete-read', false, `no brief, but a compaction happened since the recorded position ${from} (ends at offset ${boundary}): the context must be re-delivered`);
    }
    return set('complete-read', true, `no brief, and no compaction since the recorded position ${from}`);
  }
  if (brief.pages.length === 0) return set('complete-read', false, `brief ${brief.session} v${brief.version} has no pages`);
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
  const ignoredNote = ignored ? `; ${ignored} brief read(s) before the latest compaction (offset ${boundary}) ignored` : '';
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
    return set('fork', false, `fork: session_meta.forked_from_id ${fmt(meta.forked_from_id)} (a fork is not a plain resume)`);
  }
  if (base !== undefined && base !== null) return set('fork', false, `fork: session_meta.history_base ${fmt(base)} (history inherited by reference)`);
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
  const truncation = opts.truncation ?? outputTruncation;
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
    if (inTail && (typeof type !== 'string' || !KNOWN_RECORD_TYPES.has(type))) {
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
        if (t === 'context_compacted' || ((t === 'item_started' || t === 'item_completed') && item?.type === 'ContextCompaction')) {
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
        const r = briefReadProblems(output, brief, truncation);
        s.candidates.push({ start, page: r.page, problems: r.problems });
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
    if (recordedSize > 0 && pos < recordedSize && recordedSize <= pos + n) s.prefixAtLineBoundary = data[recordedSize - 1 - pos] === NL;
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
      s.turnContextProblems.push(`the partial last line at offset ${lineStart} mentions turn_context (still being written): the latest turn context is unknown`);
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

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function occurrences(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) out.push(i);
  return out;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
