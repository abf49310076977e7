// What `latch verify` shows of the workspace's changes since its baseline, in the form of
// `git diff --stat`: per path, the lines added and removed, or why they are not counted.
//
// The paths come from the evidence (the baseline's recorded entries against the tree observed now),
// never from git's idea of the working tree. A checkpoint records each file's sha256, not its bytes,
// so the content a path had at the baseline is read back from git (the commit the baseline recorded,
// HEAD, the index) and used only when its sha256 is the recorded one; otherwise the line is shown
// with its sizes and the reason. The current content is read from the workspace (regular files only).
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { catBlobs } from '../base/git.js';
import type { TreeEntry } from '../tree/listing.js';
import { MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK } from '../tree/listing.js';
import type { Change } from './evidence.js';

export interface StatFile {
  path: string;
  change: Change['change'];
  /** Lines added and removed; null when not counted (see `uncounted`). */
  added: number | null;
  removed: number | null;
  binary: boolean;
  /** Bytes at the baseline and now (null: absent there). */
  size_before: number | null;
  size_after: number | null;
  /** The modes, when they differ (e.g. 100644 -> 100755). */
  mode_change: string | null;
  /** Why the lines are not counted (null: counted, or binary). */
  uncounted: string | null;
}

export interface DiffStat {
  /** Every changed path. */
  total: number;
  /** The first `limit` of them (by path), with their counts. */
  files: StatFile[];
  /** Sums over the files shown whose lines were counted. */
  insertions: number;
  deletions: number;
}

/** The most bytes read of one side of one file to count its lines. */
export const MAX_COUNT_BYTES = 4 * 1024 * 1024;
/** git's rule: a NUL byte among the first 8000 bytes makes a file binary. */
const BINARY_PROBE = 8000;

const isRegular = (mode: number): boolean => mode === MODE_FILE || mode === MODE_EXEC;

/**
 * The stat of `changes` (sorted by path, as the evidence lists them) between the baseline's entries
 * and the workspace's, for the first `limit` paths. `baseGitHead`: the commit the baseline recorded.
 */
export function diffStat(
  root: string,
  changes: readonly Pick<Change, 'path' | 'change'>[],
  before: readonly TreeEntry[],
  after: readonly TreeEntry[],
  opts: { baseGitHead: string | null; isRepo: boolean; limit: number },
): DiffStat {
  const shown = changes.slice(0, opts.limit);
  const was = new Map(before.map((e) => [e.path, e]));
  const now = new Map(after.map((e) => [e.path, e]));
  const old = opts.isRepo ? baselineContents(root, shown, was, opts.baseGitHead) : new Map<string, Buffer>();
  const files = shown.map((c) => statFile(root, c, was.get(c.path), now.get(c.path), old.get(c.path) ?? null));
  let insertions = 0;
  let deletions = 0;
  for (const f of files) {
    insertions += f.added ?? 0;
    deletions += f.removed ?? 0;
  }
  return { total: changes.length, files, insertions, deletions };
}

/** The content each shown path had at the baseline, when git holds exactly those bytes. */
function baselineContents(
  root: string,
  shown: readonly Pick<Change, 'path' | 'change'>[],
  was: ReadonlyMap<string, TreeEntry>,
  baseGitHead: string | null,
): Map<string, Buffer> {
  const wanted = shown
    .map((c) => was.get(c.path))
    .filter((e): e is TreeEntry => !!e && isRegular(e.mode) && e.size <= MAX_COUNT_BYTES);
  const revs = [...(baseGitHead ? [baseGitHead] : []), 'HEAD', ''];
  const names = wanted.flatMap((e) => revs.map((r) => `${r}:${e.path}`));
  const blobs = catBlobs(root, names, MAX_COUNT_BYTES);
  const out = new Map<string, Buffer>();
  for (const e of wanted)
    for (const r of revs) {
      const b = blobs.get(`${r}:${e.path}`);
      if (b && b.length === e.size && sha256(b) === e.sha256) {
        out.set(e.path, b);
        break;
      }
    }
  return out;
}

function statFile(
  root: string,
  c: Pick<Change, 'path' | 'change'>,
  was: TreeEntry | undefined,
  now: TreeEntry | undefined,
  oldBytes: Buffer | null,
): StatFile {
  const f: StatFile = {
    path: c.path,
    change: c.change,
    added: null,
    removed: null,
    binary: false,
    size_before: was?.size ?? null,
    size_after: now?.size ?? null,
    mode_change: was && now && was.mode !== now.mode ? `${was.mode} -> ${now.mode}` : null,
    uncounted: null,
  };
  const special = [was, now].find((e) => e && !isRegular(e.mode));
  if (special) {
    f.uncounted =
      special.mode === MODE_SYMLINK ? 'a symbolic link' : special.mode === MODE_GITLINK ? 'a submodule' : 'not a file';
    return f;
  }
  if (was && now && was.sha256 === now.sha256) {
    f.added = 0;
    f.removed = 0;
    return f; // the mode alone changed
  }
  const before = was ? oldBytes : Buffer.alloc(0);
  if (before === null) {
    f.uncounted = was!.size > MAX_COUNT_BYTES ? 'too large to count' : 'its content at the baseline is not in git';
    return f;
  }
  let afterBytes: Buffer | null = Buffer.alloc(0);
  if (now) {
    afterBytes = readRegular(join(root, c.path));
    if (afterBytes === null) {
      f.uncounted = now.size > MAX_COUNT_BYTES ? 'too large to count' : 'it cannot be read now';
      return f;
    }
  }
  if (isBinary(before) || isBinary(afterBytes)) {
    f.binary = true;
    return f;
  }
  const d = lineDelta(splitLines(before.toString('utf8')), splitLines(afterBytes.toString('utf8')));
  if (!d) {
    f.uncounted = 'too many differences to count';
    return f;
  }
  f.added = d.added;
  f.removed = d.removed;
  return f;
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

function isBinary(b: Buffer): boolean {
  return b.subarray(0, BINARY_PROBE).includes(0);
}

/** A regular file's bytes (not through a symbolic link), or null: absent, not a file, too large. */
function readRegular(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_COUNT_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    let pos = 0;
    while (pos < buf.length) {
      const n = readSync(fd, buf, pos, buf.length - pos, pos);
      if (n <= 0) break;
      pos += n;
    }
    return buf.subarray(0, pos);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Lines with their terminators, as git compares them ("a" and "a\n" differ). */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/**
 * Lines removed from `a` and added in `b` by a shortest edit script (Myers' O(ND) search over the
 * part between the common head and tail), or null when that would take more than `budget` steps
 * (each diagonal tried and each line compared is one; 20 million take ~0.1-0.2 s).
 */
export function lineDelta(
  a: readonly string[],
  b: readonly string[],
  budget = 20_000_000,
): { added: number; removed: number } | null {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let endA = a.length;
  let endB = b.length;
  while (endA > head && endB > head && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - head;
  const m = endB - head;
  if (n === 0 || m === 0) return { added: m, removed: n };
  // Lines as numbers: comparing them is then one integer comparison.
  const ids = new Map<string, number>();
  const idOf = (s: string): number => {
    let id = ids.get(s);
    if (id === undefined) ids.set(s, (id = ids.size));
    return id;
  };
  const x0 = Int32Array.from({ length: n }, (_, i) => idOf(a[head + i]!));
  const y0 = Int32Array.from({ length: m }, (_, i) => idOf(b[head + i]!));
  const max = n + m;
  const v = new Int32Array(2 * max + 2);
  let steps = 0;
  for (let d = 0; d <= max; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[max + k - 1]! < v[max + k + 1]!) ? v[max + k + 1]! : v[max + k - 1]! + 1;
      let y = x - k;
      const from = x;
      while (x < n && y < m && x0[x] === y0[y]) {
        x++;
        y++;
      }
      v[max + k] = x;
      if (x >= n && y >= m) {
        const common = (n + m - d) / 2;
        return { added: m - common, removed: n - common };
      }
      steps += 1 + x - from;
    }
    if (steps > budget) return null;
  }
  return null;
}
