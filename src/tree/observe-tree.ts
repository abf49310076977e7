// Observations: a delta-first snapshot for src/ledger/observe.ts (on a Close, a turn's end, a
// recovery, a baseline). observeTree() lists the workspace (or reuses the stored listing:
// enumerate.ts), stats every listed path (or, synced with a watcher, only the paths its journal names),
// hashes what changed (hash.ts), reports the delta against the stored per-workspace state (state.ts)
// and saves the new state.
//
// observeTree() enumerates and hashes exactly like snapshotTree() (same paths, same entries, same
// racy-clean rule), but against a compact per-workspace state (table tree_state, one row per root)
// and reports the delta against it; the sorted entries and the digest are computed only when read.

import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Database } from 'better-sqlite3';
import { checkDeadline } from '../base/deadline.js';
import { isInsideWorkTree } from '../base/git.js';
import {
  captureListing,
  envFingerprint,
  gitValidators,
  listAllPaths,
  listGitPaths,
  listingHoldsForWatch,
  validListing,
  type ListingState,
} from './enumerate.js';
import { hashEntry, realDir, type HashPass } from './hash.js';
import {
  compareUtf8,
  digestEntries,
  GITLINK_SHA256,
  MODE_EXEC,
  MODE_FILE,
  MODE_GITLINK,
  MODE_SYMLINK,
  sortEntries,
  type TreeEntry,
  type TreeSnapshot,
} from './listing.js';
import {
  F_AT,
  F_CTIME,
  F_DEV,
  F_INO,
  F_MODE,
  F_MTIME,
  F_SIZE,
  NUM,
  TreeStateStore,
  type LoadedState,
  type WatchToken,
} from './state.js';

/** One change between the stored state and the workspace now. */
export interface TreeDeltaEntry {
  path: string;
  change: 'added' | 'modified' | 'removed';
  before: TreeEntry | null;
  after: TreeEntry | null;
}

export interface TreeObservation {
  /** Lazy: entries and sha256 are computed on first read (the same canonical listing and digest as snapshotTree). */
  snapshot: TreeSnapshot;
  /** Added and modified (sorted by path), then removed (sorted by path). Gitlinks are never "added". */
  delta: TreeDeltaEntry[];
  /** Number of cached entries in the stored state before this observation (0: never observed). */
  beforeCount: number;
  /** True when git ls-files was skipped because the stored listing was still valid. */
  listingReused: boolean;
  /** 'hinted': only the paths the watcher journaled (and new paths) were stat'ed; 'full': every path. */
  mode: 'hinted' | 'full';
  /** Listed paths stat'ed by this observation. */
  statted: number;
}

/** A watcher this observation synced with (src/watch/client.ts). full: stat everything anyway, but take its position. */
export interface WatchSyncHint {
  instance: string;
  full?: boolean;
}

/** The watcher journal since an observation state's position: what may have changed. */
interface Journal {
  /** Every journaled path. */
  paths: Set<string>;
  /** Paths whose entry was created, removed or renamed (everything below them may be new). */
  entries: Set<string>;
  /** Git metadata or an ignore file changed: the listing must be taken again. */
  listing: boolean;
}

function cacheStampMs(): number {
  const ms = Date.now() - 50;
  return ms - (ms % 1000);
}

/** lstat that maps "not there" (ENOENT, ENOTDIR) to undefined. */
function lstatOrNull(abs: string): Stats | undefined {
  try {
    return lstatSync(abs, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Where this observation stands with the watcher it synced with: the position to store (the
 * journal's flushed seq, read in this transaction), and the journal since the stored state's
 * position: null when everything must be stat'ed (no position, another instance, lost coverage).
 */
function watchPosition(
  db: Database,
  root: string,
  prev: LoadedState | null,
  hint: WatchSyncHint | null,
): { token: WatchToken | null; journal: Journal | null } {
  if (!hint) return { token: null, journal: null };
  const w = db
    .prepare("SELECT flushed_seq FROM watchers WHERE workspace = ? AND instance = ? AND state = 'ready'")
    .get(root, hint.instance) as { flushed_seq: number } | undefined;
  if (!w) return { token: null, journal: null };
  const token: WatchToken = [hint.instance, w.flushed_seq];
  const since = prev?.token;
  if (hint.full || !since || since[0] !== hint.instance || since[1] > w.flushed_seq) return { token, journal: null };
  const rows = db
    .prepare<[string, string, number], [string | null, string]>(
      'SELECT path, kind FROM watch_journal WHERE workspace = ? AND instance = ? AND seq > ?',
    )
    .raw(true)
    .all(root, hint.instance, since[1]);
  const journal: Journal = { paths: new Set(), entries: new Set(), listing: false };
  for (const [p, kind] of rows) {
    if (p === null) return { token, journal: null };
    journal.paths.add(p);
    if (kind === 'r') journal.entries.add(p);
    if (kind === 'g' || p === '.gitignore' || p.endsWith('/.gitignore')) journal.listing = true;
  }
  return { token, journal };
}

/** Is some ancestor directory of rel in the set? */
function below(dirs: Set<string>, rel: string): boolean {
  for (let k = rel.indexOf('/'); k > 0; k = rel.indexOf('/', k + 1)) if (dirs.has(rel.slice(0, k))) return true;
  return false;
}

/**
 * The sparse pass's bookkeeping over every slot, kept in its own small function (its locals stay in
 * registers; as a closure over observeTree's variables it costs several times more on a cold start):
 * marks the slots with no cached entry for a visit, marks the cached unmarked ones KIND_CACHED.
 * Returns [cached slots, cached slots kept without a visit].
 */
function markSparse(num: Float64Array, n: number, mark: Uint8Array, kind: Uint8Array): [number, number] {
  let cached = 0;
  let kept = 0;
  for (let i = 0, o = F_MODE; i < n; i++, o += NUM) {
    if (num[o] === 0) mark[i] = 1;
    else {
      cached++;
      if (mark[i] === 0) {
        kind[i] = KIND_CACHED;
        kept++;
      }
    }
  }
  return [cached, kept];
}

const KIND_ABSENT = 0;
const KIND_CACHED = 1; // present; the new slot holds its entry
const KIND_GITLINK = 2;
const KIND_OTHER = 3; // present; entry in `loose` (hashed, but not cacheable)

/**
 * Observe the tree under root against the stored state: the same entries as snapshotTree(root),
 * the delta against the previous observation, and the state saved for the next one. Run it inside
 * a write transaction (observations of one root must be serialised).
 */
export function observeTree(
  root: string,
  db: Database,
  opts: { isGit?: boolean; watch?: WatchSyncHint | null } = {},
): TreeObservation {
  const absRoot = path.resolve(root);
  const store = new TreeStateStore(db);
  const prev = store.load(absRoot);
  const stamp = cacheStampMs(); // before anything is stat'ed
  // With a journal, only journaled paths (and paths below a changed entry, and new paths) are stat'ed.
  const { token, journal } = watchPosition(db, absRoot, prev, opts.watch ?? null);
  let isGit = opts.isGit;
  let paths: string[];
  let listing: ListingState | null = null;
  let reused = false;
  if (
    journal &&
    prev?.listing &&
    !journal.listing &&
    journal.entries.size === 0 &&
    listingHoldsForWatch(prev.listing, isGit)
  ) {
    paths = prev.paths;
    listing = prev.listing;
    reused = true;
    isGit = !prev.listing.nogit;
  } else if (!journal && prev?.listing && isGit !== false && validListing(absRoot, prev.listing)) {
    paths = prev.paths;
    listing = prev.listing;
    reused = true;
    isGit = true;
  } else {
    isGit ??= isInsideWorkTree(absRoot);
    if (isGit) {
      // Under a watcher the directories need no validators (their entry changes are journaled).
      listing = journal ? gitValidators(absRoot, stamp) : captureListing(absRoot, stamp, prev?.listing ?? null);
      paths = listGitPaths(absRoot);
    } else {
      listing = { v: 1, stamp, env: envFingerprint(), nogit: true };
      paths = listAllPaths(absRoot);
    }
  }

  const n = paths.length;
  let num: Float64Array;
  let sha: Buffer;
  let oldIndex: Map<string, number> | null = null;
  const oldNum = prev?.num;
  const oldSha = prev?.sha;
  if (reused) {
    num = prev!.num; // mutated in place: slot i is path i in both
    sha = prev!.sha;
  } else {
    num = new Float64Array(n * NUM);
    sha = Buffer.alloc(n * 32);
    if (prev) {
      oldIndex = new Map();
      for (let j = 0; j < prev.paths.length; j++) if (prev.num[j * NUM + F_MODE] !== 0) oldIndex.set(prev.paths[j]!, j);
    }
  }
  let beforeCount = 0;

  // Leading-symlink rule: directories the validator saw (no symlinks, same inodes) are real.
  const dirOk = new Map<string, boolean>();
  if (reused && listing?.dirs) for (const d of listing.dirs) dirOk.set(d[0], true);
  const pass = isGit ? ({ root: absRoot, dirOk } as unknown as HashPass) : null;

  const kind = new Uint8Array(n);
  const loose = new Map<number, TreeEntry>();
  const present: TreeDeltaEntry[] = [];
  const removed: TreeDeltaEntry[] = [];
  const stats = { hashed: 0, reused: 0, racy: 0 };
  const touched: number[] = []; // slots this observation wrote
  let files = 0;
  let statted = 0;
  const seenOld = reused ? null : new Set<number>();
  const sep = path.sep;
  const slash = sep === '/';

  const beforeEntry = (j: number, p: string): TreeEntry => ({
    path: p,
    mode: oldNum![j * NUM + F_MODE]!,
    size: oldNum![j * NUM + F_SIZE]!,
    sha256: oldSha!.toString('hex', j * 32, j * 32 + 32),
  });

  /** Slot i takes slot j's cached entry (nothing to copy when the listing is reused: i === j). */
  const keepSlot = (i: number, j: number): void => {
    if (reused) return;
    num.set(oldNum!.subarray(j * NUM, j * NUM + NUM), i * NUM);
    oldSha!.copy(sha, i * 32, j * 32, j * 32 + 32);
  };

  // One listed path: stat it (unless the journal shows it unchanged), hash it when its stat changed,
  // record the change and update slot i.
  const visit = (i: number): void => {
    if ((i & 255) === 255) checkDeadline('observing the workspace');
    const rel = paths[i]!;
    let j = -1; // old slot with cached data
    if (reused) {
      if (num[i * NUM + F_MODE] !== 0) j = i;
    } else if (oldIndex) {
      const k = oldIndex.get(rel);
      if (k !== undefined) {
        j = k;
        seenOld!.add(k);
      }
    }
    if (journal && j >= 0 && !journal.paths.has(rel) && (journal.entries.size === 0 || !below(journal.entries, rel))) {
      // Not journaled since the stored state: unchanged, its slot stays.
      files++;
      stats.reused++;
      kind[i] = KIND_CACHED;
      keepSlot(i, j);
      return;
    }
    const o = i * NUM;
    // The old values of slot j, read before slot i (== j when reused) is overwritten.
    let oMode = 0,
      oSize = 0,
      oDev = 0,
      oIno = 0,
      oMtime = 0,
      oCtime = 0,
      oAt = 0;
    if (j >= 0) {
      const q = j * NUM;
      oDev = oldNum![q + F_DEV]!;
      oIno = oldNum![q + F_INO]!;
      oSize = oldNum![q + F_SIZE]!;
      oMtime = oldNum![q + F_MTIME]!;
      oCtime = oldNum![q + F_CTIME]!;
      oMode = oldNum![q + F_MODE]!;
      oAt = oldNum![q + F_AT]!;
    }
    statted++;
    const abs = absRoot + sep + (slash ? rel : rel.split('/').join(sep));
    // A path that is gone (or not a file/link/dir): a removal if the previous observation had it.
    const absent = (): void => {
      kind[i] = KIND_ABSENT;
      if (j >= 0) {
        removed.push({ path: rel, change: 'removed', before: beforeEntry(j, rel), after: null });
        if (reused) num[o + F_MODE] = 0;
        touched.push(i);
      }
    };
    let st: Stats | undefined;
    if (pass) {
      const s = rel.lastIndexOf('/');
      st = s > 0 && !realDir(pass, rel.slice(0, s)) ? undefined : lstatOrNull(abs);
    } else {
      st = lstatOrNull(abs);
    }
    const isLink = st !== undefined && st.isSymbolicLink();
    if (st === undefined || (!isLink && !st.isFile() && !st.isDirectory())) {
      absent();
      return;
    }
    files++;
    if (st.isDirectory()) {
      kind[i] = KIND_GITLINK;
      if (j >= 0) {
        // A cached file that is now a directory: recorded as modified, its slot dropped.
        present.push({
          path: rel,
          change: 'modified',
          before: beforeEntry(j, rel),
          after: { path: rel, mode: MODE_GITLINK, size: 0, sha256: GITLINK_SHA256 },
        });
        if (reused) num[o + F_MODE] = 0;
        touched.push(i);
      }
      return;
    }
    const mode = isLink ? MODE_SYMLINK : (st.mode & 0o100) !== 0 ? MODE_EXEC : MODE_FILE;
    const size = st.size;
    const mtime = st.mtimeMs;
    let racy = false;
    if (
      j >= 0 &&
      oSize === size &&
      oMode === mode &&
      oMtime === mtime &&
      oCtime === st.ctimeMs &&
      oIno === st.ino &&
      oDev === st.dev
    ) {
      if (mtime < oAt) {
        stats.reused++;
        kind[i] = KIND_CACHED;
        keepSlot(i, j);
        return;
      }
      racy = true;
    }
    const h = hashEntry(abs, isLink);
    if (h === null) {
      files--;
      absent();
      return;
    }
    stats.hashed++;
    if (racy) stats.racy++;
    const [digest, hashedSize] = h;
    let changed = true;
    if (j >= 0 && oMode === mode && oSize === hashedSize)
      changed = !digest.equals(oldSha!.subarray(j * 32, j * 32 + 32));
    const after: TreeEntry | null = changed
      ? { path: rel, mode, size: hashedSize, sha256: digest.toString('hex') }
      : null;
    if (changed) {
      if (j >= 0) present.push({ path: rel, change: 'modified', before: beforeEntry(j, rel), after });
      else present.push({ path: rel, change: 'added', before: null, after });
    }
    if (hashedSize === size) {
      kind[i] = KIND_CACHED;
      num[o + F_DEV] = st.dev;
      num[o + F_INO] = st.ino;
      num[o + F_SIZE] = size;
      num[o + F_MTIME] = mtime;
      num[o + F_CTIME] = st.ctimeMs;
      num[o + F_MODE] = mode;
      num[o + F_AT] = stamp;
      digest.copy(sha, i * 32);
      touched.push(i);
    } else {
      // Changed while being read: not cached; the previous cached data (if any) stays, as in snapshotTree.
      kind[i] = KIND_OTHER;
      loose.set(i, after ?? { path: rel, mode, size: hashedSize, sha256: digest.toString('hex') });
      if (j >= 0) keepSlot(i, j);
    }
  };
  if (reused && journal) {
    // Sparse: the listing and every slot stand; visit only the journaled paths and the slots with no
    // cached entry (absent, gitlink, changed while read). Array indexOf keeps this O(journal x n) in
    // native code instead of a pass of JavaScript over every path.
    const mark = new Uint8Array(n);
    for (const p of journal.paths) {
      const i = paths.indexOf(p);
      if (i >= 0) mark[i] = 1;
    }
    const [cached, kept] = markSparse(num, n, mark, kind);
    beforeCount = cached;
    files += kept;
    stats.reused += kept;
    for (let i = 0; i < n; i++) if (mark[i] === 1) visit(i);
  } else {
    if (prev) for (let j = 0; j < prev.paths.length; j++) if (prev.num[j * NUM + F_MODE] !== 0) beforeCount++;
    for (let i = 0; i < n; i++) visit(i);
  }
  if (prev && !reused) {
    for (let j = 0; j < prev.paths.length; j++) {
      if (prev.num[j * NUM + F_MODE] !== 0 && !seenOld!.has(j)) {
        const p = prev.paths[j]!;
        removed.push({ path: p, change: 'removed', before: beforeEntry(j, p), after: null });
      }
    }
  }
  present.sort((a, b) => compareUtf8(a.path, b.path));
  removed.sort((a, b) => compareUtf8(a.path, b.path));
  const position = token ?? prev?.token ?? null; // an older position stays valid: its journal is a superset
  if (!reused) store.save(absRoot, paths, num, sha, listing, position);
  else if (touched.length > 0) store.save(absRoot, paths, num, sha, listing, position, touched);
  else store.saveToken(absRoot, position);
  if (token)
    db.prepare('DELETE FROM watch_journal WHERE workspace = ? AND NOT (instance = ? AND seq > ?)').run(
      absRoot,
      token[0],
      token[1],
    );

  // Lazy full snapshot: built from this pass's slots (later observations cannot alter them: the
  // arrays are not reused after this call).
  let entries: TreeEntry[] | null = null;
  let digest: string | null = null;
  const buildEntries = (): TreeEntry[] => {
    if (entries) return entries;
    const out: TreeEntry[] = [];
    for (let i = 0; i < n; i++) {
      const k = kind[i];
      if (k === KIND_CACHED) {
        out.push({
          path: paths[i]!,
          mode: num[i * NUM + F_MODE]!,
          size: num[i * NUM + F_SIZE]!,
          sha256: sha.toString('hex', i * 32, i * 32 + 32),
        });
      } else if (k === KIND_GITLINK) {
        out.push({ path: paths[i]!, mode: MODE_GITLINK, size: 0, sha256: GITLINK_SHA256 });
      } else if (k === KIND_OTHER) {
        out.push(loose.get(i)!);
      }
    }
    return (entries = sortEntries(out));
  };
  const snapshot: TreeSnapshot = {
    root: absRoot,
    files,
    stats,
    get entries(): TreeEntry[] {
      return buildEntries();
    },
    get sha256(): string {
      return (digest ??= digestEntries(buildEntries()));
    },
  };
  return {
    snapshot,
    delta: [...present, ...removed],
    beforeCount,
    listingReused: reused,
    mode: journal ? 'hinted' : 'full',
    statted,
  };
}
