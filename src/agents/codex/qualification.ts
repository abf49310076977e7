// Which Codex versions are qualified: the one source of truth.
//
// A version is qualified when a qualification record for it exists whose every check passed:
//   - shipped in the package: <package>/data/qualified/<version>.json (produced by `latch qualify
//     codex` on the real binaries and committed), or
//   - this machine's: $LATCH_HOME/qualified/<version>.json (written by `latch qualify codex` here).
// Native resume (src/agents/codex/qualify.ts via continuity.ts), `latch doctor`'s version check and
// `latch doctor FILE` (src/agents/codex/fsck/fsck.ts) all read this list; nothing else names a version.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../base/paths.js';

export const RECORD_SCHEMA = 'latch.qualification/1';

export interface QualificationCheck {
  name: string;
  ok: boolean;
  /**
   * Not evaluated because a step ran out of time (a busy machine, not a verdict on the release): the
   * run is inconclusive, `latch qualify` retries it and never records it over an earlier record.
   */
  inconclusive?: boolean;
  /** What was observed (the evidence), or why it failed. */
  evidence: string;
  /** Structured evidence (optional). */
  data?: unknown;
}

export interface QualificationRecord {
  schema: typeof RECORD_SCHEMA;
  /** Codex version (`codex --version` → x.y.z). */
  version: string;
  /** `codex --version` output, verbatim (first line). */
  version_output: string;
  binary: { path: string; sha256: string; size: number; launcher: string | null };
  latch_version: string;
  /** ISO time the run started. */
  date: string;
  platform: string;
  duration_ms: number;
  /** True only when every check passed. */
  qualified: boolean;
  /** Some check is inconclusive (a step timed out) and none failed on evidence. */
  inconclusive?: boolean;
  checks: QualificationCheck[];
  /** Set on the throwaway record a qualification run writes into its own scratch LATCH_HOME. */
  provisional?: boolean;
}

export type RecordSource = 'package' | 'machine';

export interface LoadedRecord {
  source: RecordSource;
  path: string;
  record: QualificationRecord | null;
  /** Why the file does not qualify its version (unreadable, a failed check, ...), or null. */
  problem: string | null;
}

const VERSION_RE = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

export function isVersion(v: unknown): v is string {
  return typeof v === 'string' && VERSION_RE.test(v);
}

/** <package>/data, found from the running file (the bundle in dist/, or the sources). */
export function packageDataDir(): string | null {
  const root = packageRoot();
  return root && existsSync(join(root, 'data')) ? join(root, 'data') : null;
}

export function shippedRecordsDir(): string | null {
  const d = packageDataDir();
  return d ? join(d, 'qualified') : null;
}

export function machineRecordsDir(home: string): string {
  return join(home, 'qualified');
}

/** Why `rec` does not qualify `expectVersion` (null: it does). */
export function recordProblem(rec: unknown, expectVersion: string | null): string | null {
  if (!rec || typeof rec !== 'object' || Array.isArray(rec)) return 'not a JSON object';
  const r = rec as Partial<QualificationRecord>;
  if (r.schema !== RECORD_SCHEMA) return `schema ${JSON.stringify(r.schema)} is not ${RECORD_SCHEMA}`;
  if (!isVersion(r.version)) return `version ${JSON.stringify(r.version)} is not x.y.z`;
  if (expectVersion !== null && r.version !== expectVersion)
    return `the record is for ${r.version}, not ${expectVersion} (file name)`;
  if (!Array.isArray(r.checks) || r.checks.length === 0) return 'no checks';
  const failed = r.checks
    .filter((c) => !c || c.ok !== true)
    .map((c) => (c && typeof c.name === 'string' ? c.name : '?'));
  if (failed.length) return `failed check(s): ${failed.join(', ')}`;
  if (r.qualified !== true) return 'qualified is not true';
  return null;
}

function loadDir(dir: string | null, source: RecordSource): LoadedRecord[] {
  if (!dir) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: LoadedRecord[] = [];
  for (const n of names.sort()) {
    const m = /^(.+)\.json$/.exec(n);
    if (!m || !isVersion(m[1])) continue;
    const path = join(dir, n);
    let record: QualificationRecord | null = null;
    let problem: string | null;
    try {
      record = JSON.parse(readFileSync(path, 'utf8')) as QualificationRecord;
      problem = recordProblem(record, m[1]!);
    } catch (err) {
      problem = `unreadable: ${err instanceof Error ? err.message : String(err)}`;
    }
    out.push({ source, path, record, problem });
  }
  return out;
}

let shipped: LoadedRecord[] | null = null;

/** Every record: the package's (read once per process), then this machine's ($home/qualified; home null: none). */
export function loadRecords(home: string | null | undefined): LoadedRecord[] {
  shipped ??= loadDir(shippedRecordsDir(), 'package');
  return [...shipped, ...(home ? loadDir(machineRecordsDir(home), 'machine') : [])];
}

export interface VersionStatus {
  version: string;
  qualified: boolean;
  /** The passing record that qualifies it (the package's first), else null. */
  by: { source: RecordSource; path: string; date: string; binary_sha256: string } | null;
  /** Records for this version that do not qualify it (a failed run, an unreadable file). */
  rejected: { source: RecordSource; path: string; problem: string }[];
}

export function versionStatus(version: string, home: string | null | undefined): VersionStatus {
  const st: VersionStatus = { version, qualified: false, by: null, rejected: [] };
  for (const l of loadRecords(home)) {
    if (!l.path.endsWith(`${version}.json`) || (l.record && l.record.version !== version && l.problem === null))
      continue;
    if (l.problem === null && l.record) {
      if (!st.by)
        st.by = { source: l.source, path: l.path, date: l.record.date, binary_sha256: l.record.binary?.sha256 ?? '' };
      st.qualified = true;
    } else st.rejected.push({ source: l.source, path: l.path, problem: l.problem ?? 'unknown' });
  }
  return st;
}

/** The qualified versions (sorted, unique): every version with a passing record. */
export function qualifiedVersions(home: string | null | undefined): string[] {
  const set = new Set<string>();
  for (const l of loadRecords(home)) if (l.problem === null && l.record) set.add(l.record.version);
  return [...set].sort(compareVersions);
}

/** The versions the package itself qualified (what a fresh install trusts). */
export function shippedQualifiedVersions(): string[] {
  return qualifiedVersions(null);
}

/** Numeric x.y.z comparison (a pre-release sorts before its release). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('-')[0]!.split('.').map(Number);
  const pb = b.split('-')[0]!.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  const ra = a.includes('-') ? 0 : 1;
  const rb = b.includes('-') ? 0 : 1;
  return ra - rb || a.localeCompare(b);
}

/** `codex-cli 0.169.0` → 0.169.0 (null when no version is in the text). */
export function parseCodexVersion(text: string): string | null {
  const m = /(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)/.exec(text);
  return m ? m[1]! : null;
}
