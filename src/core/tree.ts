// Canonical, incremental snapshot of a workspace tree.
//
// Which files
//   - Inside a git work tree: `git ls-files -z --cached --others --exclude-standard`
//     (tracked files plus untracked-but-not-ignored files), deduplicated.
//     Entries that no longer exist on disk are skipped, and so are paths below a
//     directory that has been replaced by a symlink (git's leading-symlink rule:
//     nothing outside the tree is ever read through a symlinked directory).
//   - Outside git: every file under root, recursively. Any entry named `.git`
//     is excluded; symlinks (to files or directories) are recorded as links and
//     never followed. Empty directories are not recorded (as in git).
//   - Files that are neither regular files, symlinks nor directories (FIFOs,
//     sockets, devices) are skipped.
//
// Directories that git lists (gitlinks / submodules, and untracked nested
// repositories that `--others` reports as `dir/`) are RECORDED as mode 160000
// with size 0 and a placeholder hash of 64 zeros (GITLINK_SHA256): their
// presence is part of the digest, their content is not (the submodule's own
// state is not inspected).
//
// Per file: path (relative, '/'-separated), git-like mode (100644, 100755 when
// the owner-execute bit is set, 120000 for symlinks, 160000 for gitlinks),
// size in bytes, sha256 of the content (of the link target bytes for symlinks).
//
// Digest: sha256 over the canonical listing, entries sorted by the UTF-8 byte
// order of their paths, one line per entry: `${mode} ${size} ${sha256}\t${path}\n`.
// A path that contains a control character (e.g. '\n') or begins with '"' is
// written JSON-quoted, so the listing stays unambiguous; ordinary paths are
// written verbatim.
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
import {
  closeSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type BigIntStats,
} from 'node:fs';
import { constants as fsc } from 'node:fs';
import path from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import type { Database, Statement } from 'better-sqlite3';
import { isInsideWorkTree, runGit } from './git.js';

// ---------------------------------------------------------------------------
// Types

export interface TreeEntry {
  path: string;
  mode: number;
  size: number;
  sha256: string;
}

export interface TreeSnapshot {
  root: string;
  sha256: string;
  files: number;
  entries: TreeEntry[];
  /** hashed: files whose content was read (includes racy); reused: served from the stat cache; racy: re-hashed because racily clean. */
  stats: { hashed: number; reused: number; racy: number };
}

export interface TreeDiff {
  added: TreeEntry[];
  removed: TreeEntry[];
  modified: { before: TreeEntry; after: TreeEntry }[];
}

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

export interface StatCache {
  load(root: string): Map<string, StatCacheEntry>;
  save(root: string, upserts: StatCacheEntry[], removed: string[]): void;
  /** Optional: load only the given paths (used by snapshotPaths to avoid loading the whole cache). */
  loadPaths?(root: string, paths: string[]): Map<string, StatCacheEntry>;
}

export interface SnapshotOptions {
  cache?: StatCache;
  /** Force git / non-git file enumeration; detected with `git rev-parse` when omitted. */
  isGit?: boolean;
}

export const MODE_FILE = 100644;
export const MODE_EXEC = 100755;
export const MODE_SYMLINK = 120000;
export const MODE_GITLINK = 160000;
export const GITLINK_SHA256 = '0'.repeat(64);

export { TREE_CACHE_SQL } from './schema.js';

// ---------------------------------------------------------------------------
// Stat cache implementations

export class MemoryStatCache implements StatCache {
  private readonly roots = new Map<string, Map<string, StatCacheEntry>>();

  load(root: string): Map<string, StatCacheEntry> {
    const m = this.roots.get(root);
    const out = new Map<string, StatCacheEntry>();
    if (m) for (const [k, v] of m) out.set(k, { ...v });
    return out;
  }

  loadPaths(root: string, paths: string[]): Map<string, StatCacheEntry> {
    const m = this.roots.get(root);
    const out = new Map<string, StatCacheEntry>();
    if (m) {
      for (const p of paths) {
        const e = m.get(p);
        if (e) out.set(p, { ...e });
      }
    }
    return out;
  }

  save(root: string, upserts: StatCacheEntry[], removed: string[]): void {
    let m = this.roots.get(root);
    if (!m) this.roots.set(root, (m = new Map()));
    for (const p of removed) m.delete(p);
    for (const e of upserts) m.set(e.path, { ...e });
  }
}

type CacheRow = [string, string, string, number, string, string, number, string, string];

export class SqliteStatCache implements StatCache {
  private readonly selectAll: Statement<[string], CacheRow>;
  private readonly selectOne: Statement<[string, string], CacheRow>;
  private readonly upsert: Statement<unknown[]>;
  private readonly del: Statement<[string, string]>;
  private readonly saveTx: (root: string, upserts: StatCacheEntry[], removed: string[]) => void;

  /** The tree_cache table must already exist (see TREE_CACHE_SQL). */
  constructor(db: Database) {
    const cols = 'path, dev, ino, size, mtime_ns, ctime_ns, mode, sha256, cached_at_ns';
    this.selectAll = db.prepare<[string], CacheRow>(`SELECT ${cols} FROM tree_cache WHERE root = ?`).raw(true);
    this.selectOne = db
      .prepare<[string, string], CacheRow>(`SELECT ${cols} FROM tree_cache WHERE root = ? AND path = ?`)
      .raw(true);
    this.upsert = db.prepare(
      `INSERT OR REPLACE INTO tree_cache (root, ${cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.del = db.prepare<[string, string]>('DELETE FROM tree_cache WHERE root = ? AND path = ?');
    this.saveTx = db.transaction((root: string, upserts: StatCacheEntry[], removed: string[]) => {
      for (const p of removed) this.del.run(root, p);
      for (const e of upserts) {
        this.upsert.run(root, e.path, e.dev, e.ino, e.size, e.mtimeNs, e.ctimeNs, e.mode, e.sha256, e.cachedAtNs);
      }
    });
  }

  private static fromRow(r: CacheRow): StatCacheEntry {
    return {
      path: r[0],
      dev: r[1],
      ino: r[2],
      size: Number(r[3]),
      mtimeNs: r[4],
      ctimeNs: r[5],
      mode: Number(r[6]),
      sha256: r[7],
      cachedAtNs: r[8],
    };
  }

  load(root: string): Map<string, StatCacheEntry> {
    const out = new Map<string, StatCacheEntry>();
    for (const r of this.selectAll.iterate(root)) out.set(r[0], SqliteStatCache.fromRow(r));
    return out;
  }

  loadPaths(root: string, paths: string[]): Map<string, StatCacheEntry> {
    const out = new Map<string, StatCacheEntry>();
    for (const p of paths) {
      const r = this.selectOne.get(root, p);
      if (r) out.set(p, SqliteStatCache.fromRow(r));
    }
    return out;
  }

  save(root: string, upserts: StatCacheEntry[], removed: string[]): void {
    if (upserts.length === 0 && removed.length === 0) return;
    this.saveTx(root, upserts, removed);
  }
}

// ---------------------------------------------------------------------------
// Path ordering and canonical listing

/**
 * Compare two strings by the byte order of their UTF-8 encodings without
 * encoding them. UTF-16 code-unit order equals UTF-8 byte order except that
 * surrogates (0xD800-0xDFFF, i.e. code points >= 0x10000) must sort after
 * 0xE000-0xFFFF.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

// eslint-disable-next-line no-control-regex
const NEEDS_QUOTE = /[\u0000-\u001f\u007f]/;

function listingPath(p: string): string {
  return p.charCodeAt(0) === 0x22 /* " */ || NEEDS_QUOTE.test(p) ? JSON.stringify(p) : p;
}

function sortEntries(entries: TreeEntry[]): TreeEntry[] {
  return entries.sort((a, b) => compareUtf8(a.path, b.path));
}

/** The canonical listing text for entries (sorted copy; the input is not modified). */
export function canonicalListing(entries: TreeEntry[]): string {
  const sorted = sortEntries(entries.slice());
  const parts: string[] = new Array(sorted.length);
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    parts[i] = `${e.mode} ${e.size} ${e.sha256}\t${listingPath(e.path)}\n`;
  }
  return parts.join('');
}

/** sha256 (hex) of the canonical listing. */
export function digestEntries(entries: TreeEntry[]): string {
  return createHash('sha256').update(canonicalListing(entries), 'utf8').digest('hex');
}

/** zlib-deflated canonical listing, for compact storage. */
export function encodeListing(entries: TreeEntry[]): Buffer {
  return deflateSync(Buffer.from(canonicalListing(entries), 'utf8'));
}

const LINE_RE = /^(\d+) (\d+) ([0-9a-f]{64})\t/;

/** Inverse of encodeListing. Throws on malformed input. */
export function decodeListing(buf: Buffer): TreeEntry[] {
  const text = inflateSync(buf).toString('utf8');
  const out: TreeEntry[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    if (nl < 0) throw new Error(`decodeListing: unterminated line at offset ${pos}`);
    const line = text.slice(pos, nl);
    pos = nl + 1;
    const m = LINE_RE.exec(line);
    if (!m) throw new Error(`decodeListing: malformed line ${JSON.stringify(line)}`);
    const raw = line.slice(m[0].length);
    let p: string;
    if (raw.charCodeAt(0) === 0x22) {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'string') throw new Error(`decodeListing: bad quoted path ${raw}`);
      p = parsed;
    } else {
      p = raw;
    }
    out.push({ path: p, mode: Number(m[1]), size: Number(m[2]), sha256: m[3]! });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Diff

export function diffTrees(before: TreeEntry[], after: TreeEntry[]): TreeDiff {
  const prev = new Map<string, TreeEntry>();
  for (const e of before) prev.set(e.path, e);
  const added: TreeEntry[] = [];
  const modified: { before: TreeEntry; after: TreeEntry }[] = [];
  const seen = new Set<string>();
  for (const a of after) {
    seen.add(a.path);
    const b = prev.get(a.path);
    if (!b) added.push(a);
    else if (b.mode !== a.mode || b.size !== a.size || b.sha256 !== a.sha256) modified.push({ before: b, after: a });
  }
  const removed: TreeEntry[] = [];
  for (const b of before) if (!seen.has(b.path)) removed.push(b);
  sortEntries(added);
  sortEntries(removed);
  modified.sort((x, y) => compareUtf8(x.after.path, y.after.path));
  return { added, removed, modified };
}

// ---------------------------------------------------------------------------
// Enumeration

/** Relative paths (deduplicated, '/'-separated, no trailing slash) git tracks or would track under root. */
export function listGitPaths(root: string): string[] {
  const r = runGit(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (r.status !== 0) throw new Error(`git ls-files failed in ${root}: ${r.stderr.trim()}`);
  const text = r.stdout.toString('utf8');
  const out: string[] = [];
  const seen = new Set<string>();
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\0', start);
    if (end < 0) end = text.length;
    let p = text.slice(start, end);
    start = end + 1;
    if (p.endsWith('/')) p = p.slice(0, -1); // untracked nested repository reported as "dir/"
    if (p === '' || seen.has(p)) continue; // tracked files appear once per conflict stage
    seen.add(p);
    out.push(p);
  }
  return out;
}

/** Relative paths of all non-directory entries under root (excluding `.git`), without following symlinks. */
export function listAllPaths(root: string): string[] {
  const out: string[] = [];
  const stack: string[] = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const abs = rel === '' ? root : root + path.sep + rel;
    let dirents;
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue; // vanished meanwhile
      throw err;
    }
    for (const d of dirents) {
      const name = d.name;
      if (name === '.git') continue;
      const childRel = rel === '' ? name : rel + '/' + name;
      if (d.isDirectory()) stack.push(childRel);
      else if (d.isFile() || d.isSymbolicLink()) out.push(childRel);
      else if (!d.isFIFO() && !d.isSocket() && !d.isBlockDevice() && !d.isCharacterDevice()) {
        // Unknown dirent type (some filesystems): decide with lstat.
        try {
          const st = lstatSync(root + path.sep + childRel);
          if (st.isDirectory()) stack.push(childRel);
          else if (st.isFile() || st.isSymbolicLink()) out.push(childRel);
        } catch {
          // vanished
        }
      }
    }
  }
  return out;
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

interface HashPass {
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
function entryFor(pass: HashPass, rel: string): TreeEntry | null {
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

  let sha256: string;
  let hashedSize: number;
  if (isLink) {
    let target: Buffer;
    try {
      target = readlinkSync(abs, { encoding: 'buffer' });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EINVAL') return null;
      throw err;
    }
    sha256 = createHash('sha256').update(target).digest('hex');
    hashedSize = target.length;
  } else {
    const h = hashFile(abs);
    if (!h) return null;
    sha256 = h.sha256;
    hashedSize = h.size;
  }
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
function realDir(pass: HashPass, dirRel: string): boolean {
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

function newPass(root: string, cached: Map<string, StatCacheEntry>, checkDirs: boolean): HashPass {
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

// ---------------------------------------------------------------------------
// Public snapshot API

/** Snapshot the whole tree under root. */
export function snapshotTree(root: string, opts: SnapshotOptions = {}): TreeSnapshot {
  const absRoot = path.resolve(root);
  const isGit = opts.isGit ?? isInsideWorkTree(absRoot);
  const cache = opts.cache;
  const cached = cache ? cache.load(absRoot) : new Map<string, StatCacheEntry>();
  // Stamp before enumerating/stat'ing anything.
  // The directory walk never descends into symlinks; git paths and caller-supplied
  // paths are checked for symlinked leading directories.
  const pass = newPass(absRoot, cached, isGit);
  const paths = isGit ? listGitPaths(absRoot) : listAllPaths(absRoot);

  const entries: TreeEntry[] = [];
  for (const rel of paths) {
    const e = entryFor(pass, rel);
    if (e) entries.push(e);
  }
  sortEntries(entries);

  if (cache) {
    const present = new Set<string>();
    for (const e of entries) if (e.mode !== MODE_GITLINK) present.add(e.path);
    const removed: string[] = [];
    for (const k of cached.keys()) if (!present.has(k)) removed.push(k);
    cache.save(absRoot, pass.upserts, removed);
  }

  return { root: absRoot, sha256: digestEntries(entries), files: entries.length, entries, stats: pass.stats };
}

/**
 * Snapshot only the given relative paths ('/'-separated). Missing files are
 * omitted; a path that is a directory yields a gitlink-style entry. Results are
 * sorted by path and deduplicated. The cache is consulted and updated for these
 * paths only.
 */
export function snapshotPaths(root: string, paths: string[], cache?: StatCache): TreeEntry[] {
  const absRoot = path.resolve(root);
  const unique: string[] = [];
  const seen = new Set<string>();
  for (const raw of paths) {
    const p = normalizeRel(raw);
    if (p === null || seen.has(p)) continue;
    seen.add(p);
    unique.push(p);
  }
  let cached: Map<string, StatCacheEntry>;
  if (!cache) cached = new Map();
  else if (cache.loadPaths) cached = cache.loadPaths(absRoot, unique);
  else cached = cache.load(absRoot);

  const pass = newPass(absRoot, cached, true);
  const entries: TreeEntry[] = [];
  const removed: string[] = [];
  for (const rel of unique) {
    const e = entryFor(pass, rel);
    if (e) {
      if (e.mode === MODE_GITLINK) removed.push(rel); // never keep a stale file entry for a directory
      entries.push(e);
    } else if (cached.has(rel)) removed.push(rel);
  }
  if (cache) cache.save(absRoot, pass.upserts, removed.filter((p) => cached.has(p)));
  return sortEntries(entries);
}

/** Normalize a caller-supplied relative path; null when it escapes root or is empty. */
function normalizeRel(p: string): string | null {
  const s = path.sep === '\\' ? p.replace(/\\/g, '/') : p;
  const norm = path.posix.normalize(s).replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  if (norm === '' || norm === '.' || norm === '..' || norm.startsWith('../') || path.posix.isAbsolute(norm)) return null;
  return norm;
}
