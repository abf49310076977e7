// Hashing one path of the tree into its entry (entryFor), against a stat cache so that a file whose
// stat has not changed is not read again; the leading-symlink check (realDir: nothing is read through
// a symlinked directory); hashEntry, the content hash of a regular file or a symlink's target, shared
// with observeTree (observe-tree.ts), which keeps its own compact form of the same cache (state.ts).
//
// Stat cache (like git's index): path -> (dev, ino, size, mtime ns, ctime ns,
// mode, sha256, cachedAtNs). An entry whose stat still matches is reused
// without reading the file, unless it is "racily clean": its mtime is not older
// than the time the entry was cached, in which case a modification in the same
// timestamp tick could be invisible to stat, so the file is re-hashed.
// cachedAtNs is taken from the wall clock BEFORE the file is stat'ed, minus a
// 50 ms margin (file timestamps come from the kernel's coarse clock), then
// truncated down to a whole second (so filesystems with 1 s timestamp
// granularity are safe too). The cost: files modified within about a second
// before a snapshot are re-hashed once more by the next snapshot.

import { createHash } from 'node:crypto';
import { closeSync, lstatSync, openSync, readlinkSync, readSync, type BigIntStats } from 'node:fs';
import { constants as fsc } from 'node:fs';
import path from 'node:path';
import { GITLINK_SHA256, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK, type TreeEntry } from './listing.js';

export interface StatCacheEntry {
  path: string;
  dev: string;
  ino: string;
  size: number;
  mtimeNs: string;
  ctimeNs: string;
  /** git-like mode (100644, 100755, 120000) */
  mode: number;
  sha256: string;
  cachedAtNs: string;
}

// ---------------------------------------------------------------------------
// Hashing

const CHUNK = 1024 * 1024;
let sharedBuf: Buffer | undefined;

/** Hash a regular file with a fixed reusable buffer. Returns null if it vanished. */
function hashFile(abs: string): { sha256: string; size: number } | null {
  let fd: number;
  try {
    fd = openSync(abs, fsc.O_RDONLY | (fsc.O_NOFOLLOW ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null; // gone or replaced by a symlink
    throw err;
  }
  try {
    const buf = (sharedBuf ??= Buffer.allocUnsafe(CHUNK));
    const h = createHash('sha256');
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      h.update(n === CHUNK ? buf : buf.subarray(0, n));
      size += n;
    }
    return { sha256: h.digest('hex'), size };
  } finally {
    closeSync(fd);
  }
}

function gitMode(st: BigIntStats): number {
  if (st.isSymbolicLink()) return MODE_SYMLINK;
  if (st.isDirectory()) return MODE_GITLINK;
  return (st.mode & 0o100n) !== 0n ? MODE_EXEC : MODE_FILE;
}

/** Timestamp stored as cachedAtNs for entries hashed in a pass starting now (see header comment). */
function cacheStampNs(): bigint {
  const nowNs = BigInt(Date.now()) * 1_000_000n - 50_000_000n;
  return nowNs - (nowNs % 1_000_000_000n);
}

export interface HashPass {
  root: string;
  /** Memo for realDir: directory (relative) -> is a real directory reachable without symlinks. */
  dirOk: Map<string, boolean> | null;
  cached: Map<string, StatCacheEntry>;
  stampNs: bigint;
  stamp: string;
  upserts: StatCacheEntry[];
  /** Last parsed cachedAtNs (entries written by one pass share it). */
  atStr: string;
  atNs: bigint;
  stats: { hashed: number; reused: number; racy: number };
}

/** Snapshot one relative path. Returns null when it does not exist or is not a recordable type. */
export function entryFor(pass: HashPass, rel: string): TreeEntry | null {
  if (pass.dirOk) {
    const slash = rel.lastIndexOf('/');
    if (slash > 0 && !realDir(pass, rel.slice(0, slash))) return null;
  }
  const abs = pass.root + path.sep + (path.sep === '/' ? rel : rel.split('/').join(path.sep));
  let st: BigIntStats;
  try {
    st = lstatSync(abs, { bigint: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
  if (st.isDirectory()) return { path: rel, mode: MODE_GITLINK, size: 0, sha256: GITLINK_SHA256 };
  const isLink = st.isSymbolicLink();
  if (!isLink && !st.isFile()) return null;

  const mode = gitMode(st);
  const size = Number(st.size);
  const dev = st.dev.toString();
  const ino = st.ino.toString();
  const mtimeNs = st.mtimeNs.toString();
  const ctimeNs = st.ctimeNs.toString();

  const c = pass.cached.get(rel);
  let wasRacy = false;
  if (
    c !== undefined &&
    c.size === size &&
    c.mode === mode &&
    c.mtimeNs === mtimeNs &&
    c.ctimeNs === ctimeNs &&
    c.ino === ino &&
    c.dev === dev
  ) {
    if (c.cachedAtNs !== pass.atStr) {
      pass.atStr = c.cachedAtNs;
      try {
        pass.atNs = BigInt(c.cachedAtNs);
      } catch {
        pass.atNs = 0n; // unparsable stamp: never trust the entry
      }
    }
    if (st.mtimeNs < pass.atNs) {
      pass.stats.reused++;
      return { path: rel, mode, size, sha256: c.sha256 };
    }
    wasRacy = true;
  }

  const hashed = hashEntry(abs, isLink);
  if (!hashed) return null;
  const sha256 = hashed[0].toString('hex');
  const hashedSize = hashed[1];
  pass.stats.hashed++;
  if (wasRacy) pass.stats.racy++;

  // Only cache when what we hashed is consistent with the stat we keyed it by;
  // a file that changed size while being read is simply hashed again next time.
  if (hashedSize === size) {
    pass.upserts.push({ path: rel, dev, ino, size, mtimeNs, ctimeNs, mode, sha256, cachedAtNs: pass.stamp });
  }
  return { path: rel, mode, size: hashedSize, sha256 };
}

/**
 * True when the relative directory exists and neither it nor any ancestor
 * below root is a symlink, so that lstat of a path below it cannot escape the
 * tree through a symlinked directory (git's "leading symlink" check).
 */
export function realDir(pass: HashPass, dirRel: string): boolean {
  const memo = pass.dirOk!;
  const known = memo.get(dirRel);
  if (known !== undefined) return known;
  const slash = dirRel.lastIndexOf('/');
  let ok = slash <= 0 || realDir(pass, dirRel.slice(0, slash));
  if (ok) {
    try {
      ok = lstatSync(pass.root + path.sep + dirRel.split('/').join(path.sep)).isDirectory();
    } catch {
      ok = false;
    }
  }
  memo.set(dirRel, ok);
  return ok;
}

export function newPass(root: string, cached: Map<string, StatCacheEntry>, checkDirs: boolean): HashPass {
  const stampNs = cacheStampNs();
  return {
    root,
    dirOk: checkDirs ? new Map() : null,
    cached,
    stampNs,
    stamp: stampNs.toString(),
    upserts: [],
    atStr: '',
    atNs: 0n,
    stats: { hashed: 0, reused: 0, racy: 0 },
  };
}

/** Hash a symlink target or a regular file: [sha256 bytes, hashed size] or null when it vanished. */
export function hashEntry(abs: string, isLink: boolean): [Buffer, number] | null {
  if (isLink) {
    let target: Buffer;
    try {
      target = readlinkSync(abs, { encoding: 'buffer' });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EINVAL') return null;
      throw err;
    }
    return [createHash('sha256').update(target).digest(), target.length];
  }
  const h = hashFile(abs);
  return h ? [Buffer.from(h.sha256, 'hex'), h.size] : null;
}
