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
  readFileSync,
  readlinkSync,
  readSync,
  type BigIntStats,
  type Stats,
} from 'node:fs';
import { constants as fsc } from 'node:fs';
import path from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import type { Database, Statement } from 'better-sqlite3';
import { checkDeadline } from '../base/deadline.js';
import { isInsideWorkTree, runGit } from '../base/git.js';

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

export { TREE_CACHE_SQL } from '../store/schema.js';

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
    checkDeadline('listing the workspace');
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
  let k = 0;
  for (const rel of paths) {
    if ((++k & 255) === 0) checkDeadline('snapshotting the workspace');
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

// ---------------------------------------------------------------------------
// Observations: a delta-first snapshot for src/ledger/observe.ts
//
// observeTree() enumerates and hashes exactly like snapshotTree() (same paths, same entries, same
// racy-clean rule), but against a compact per-workspace state (table tree_state, one row per root)
// and reports the delta against it; the sorted entries and the digest are computed only when read.
//
// State: one blob of slots aligned with the last path listing, stored in 32 KiB pages (table
// tree_state_pages; only the pages whose bytes changed are rewritten), the listing validators as
// JSON in tree_state. Blob layout:
//   16-byte header (u32 magic, u32 n, u32 paths byte length, u32 0),
//   n x 7 float64 (dev, ino, size, mtimeMs, ctimeMs, mode, cachedAtMs; mode 0 = no cached data),
//   n x 32 bytes sha256, then the n paths as UTF-8 joined by NUL.
// Times are the non-bigint lstat milliseconds (sec * 1e3 + nsec / 1e6, a double: about 0.24 us
// resolution). The racy-clean rule stays exact in its effect: an entry is reused only when its stat
// matches AND mtimeMs < cachedAtMs, where cachedAtMs is (wall clock before the pass - 50 ms) truncated
// to a whole second. Two writes that the double cannot tell apart are < 1 us apart; if the second came
// after the hash, the first was < 1 us before the pass, hence not older than the stamp: re-hashed.
// dev and ino are compared as doubles (exact below 2^53).
//
// Listing reuse (git only): `git ls-files --cached --others --exclude-standard` is skipped and the
// stored listing reused when NONE of its inputs can have changed since it was taken:
//   - the index: <root>/.git/index (ino, size, mtime, ctime, or absence; git replaces it by rename);
//   - the work tree's directories: every directory reachable from the root without following
//     symlinks, not entering `.git` nor a directory that contains a `.git` entry (nested repository):
//     (ino, mtime, ctime). Any entry created, removed or renamed in a directory changes its mtime and
//     ctime; restoring an mtime (touch -d, tar) still changes the ctime.
//   - the ignore rules: every `.gitignore` in those directories (created/removed: its directory's
//     mtime; edited: its stat), <root>/.git/info/exclude, the default global excludes file
//     ($XDG_CONFIG_HOME/git/ignore or ~/.config/git/ignore), the config files .git/config,
//     ~/.gitconfig, $XDG_CONFIG_HOME/git/config (or ~/.config/git/config) and /etc/gitconfig;
//   - the environment: HOME, XDG_CONFIG_HOME and every GIT_* variable;
//   - <root>/.git is still a directory with the same inode.
// Each of these is stat'ed BEFORE git runs; a recorded mtime or ctime not older than the listing's
// stamp (same rule and stamp as file entries) makes the listing non-reusable (a change in the same
// timestamp tick after git read it would be invisible). The listing is never reused when:
// <root>/.git is not a directory (worktrees, submodules: `.git` file), a config file mentions
// excludesFile or include/includeIf (the excludes file could be anywhere), the walk exceeds
// MAX_WATCH_DIRS directories (e.g. an ignored node_modules: the walk cannot tell ignored directories
// apart; it is retried when the root directory changes), or the caller says isGit: false.
// Limits: a system config outside /etc/gitconfig (another prefix) that sets core.excludesFile is not
// watched; a change that restores a watched file's or directory's ino, size, mtime AND ctime exactly
// is not seen (ctime cannot be set from user space). When the listing is reused, the isGit
// detection (`git rev-parse`) is skipped too: a valid listing implies <root> is a git top level.

/** Directories the listing validator may watch; beyond this, git ls-files runs on every observation. */
export const MAX_WATCH_DIRS = 4096;

const STATE_MAGIC = 0x4c545331; // "LTS1"
const NUM = 7; // float64 fields per slot
const F_DEV = 0;
const F_INO = 1;
const F_SIZE = 2;
const F_MTIME = 3;
const F_CTIME = 4;
const F_MODE = 5;
const F_AT = 6;

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

interface ListingState {
  v: 1;
  /** Stamp (ms) taken before anything was stat'ed; validators must be older. */
  stamp: number;
  env: string;
  /** Set when the walk exceeded MAX_WATCH_DIRS: [ino, mtimeMs, ctimeMs] of the root, to retry when it changes. */
  over?: [number, number, number];
  /** [relative dir ('' = root), ino, mtimeMs, ctimeMs] */
  dirs?: [string, number, number, number][];
  /** [absolute path, ino, size, mtimeMs, ctimeMs] or [absolute path] when absent; ino only (size -1) for .git */
  files?: ([string, number, number, number, number] | [string])[];
  /** The paths were listed without git (every file under the root). */
  nogit?: true;
}

/** The watcher position a state is complete up to: [instance, journal seq]. */
type WatchToken = [string, number];

interface LoadedState {
  paths: string[];
  num: Float64Array;
  sha: Buffer;
  listing: ListingState | null;
  token: WatchToken | null;
}

function cacheStampMs(): number {
  const ms = Date.now() - 50;
  return ms - (ms % 1000);
}

function encodeState(paths: string[], num: Float64Array, sha: Buffer): Buffer {
  const n = paths.length;
  const text = Buffer.from(paths.join('\0'), 'utf8');
  const buf = Buffer.allocUnsafe(16 + n * NUM * 8 + n * 32 + text.length);
  buf.writeUInt32LE(STATE_MAGIC, 0);
  buf.writeUInt32LE(n, 4);
  buf.writeUInt32LE(text.length, 8);
  buf.writeUInt32LE(0, 12);
  Buffer.from(num.buffer, num.byteOffset, n * NUM * 8).copy(buf, 16);
  sha.copy(buf, 16 + n * NUM * 8, 0, n * 32);
  text.copy(buf, 16 + n * NUM * 8 + n * 32);
  return buf;
}

/** Copies bytes [from, to) of the blob stored as `pages` (each PAGE long but the last) into dest at destOffset. */
function copyOut(pages: Buffer[], from: number, to: number, dest: Uint8Array, destOffset: number): void {
  for (let k = Math.floor(from / PAGE); from < to; k++) {
    const page = pages[k]!;
    const start = from - k * PAGE;
    const end = Math.min(page.length, to - k * PAGE);
    dest.set(page.subarray(start, end), destOffset);
    destOffset += end - start;
    from += end - start;
  }
}

/** Decodes the stored state straight from its pages (no concatenated copy of the blob). */
function decodePages(pages: Buffer[]): { paths: string[]; num: Float64Array; sha: Buffer } | null {
  const total = pages.reduce((a, p) => a + p.length, 0);
  const head = pages[0];
  if (!head || head.length < 16 || head.readUInt32LE(0) !== STATE_MAGIC) return null;
  for (let k = 0; k < pages.length - 1; k++) if (pages[k]!.length !== PAGE) return null;
  const n = head.readUInt32LE(4);
  const textLen = head.readUInt32LE(8);
  const numBytes = n * NUM * 8;
  if (total !== 16 + numBytes + n * 32 + textLen) return null;
  // A private, 8-byte aligned copy of the numbers (mutated in place when the listing is reused).
  const num = new Float64Array(n * NUM);
  copyOut(pages, 16, 16 + numBytes, new Uint8Array(num.buffer), 0);
  const sha = Buffer.allocUnsafe(n * 32);
  copyOut(pages, 16 + numBytes, 16 + numBytes + n * 32, sha, 0);
  const text = Buffer.allocUnsafe(textLen);
  copyOut(pages, 16 + numBytes + n * 32, total, text, 0);
  const paths = n === 0 ? [] : text.toString('utf8').split('\0');
  if (paths.length !== n) return null;
  return { paths, num, sha };
}

/**
 * A stored page with the number and hash regions it overlaps rewritten from num and sha (the header
 * and the paths are unchanged: same listing). Page k covers blob bytes [k * PAGE, k * PAGE + length).
 */
function patchPage(prevPage: Buffer, k: number, n: number, num: Float64Array, sha: Buffer): Buffer {
  const page = Buffer.from(prevPage);
  const start = k * PAGE;
  const end = start + page.length;
  const numBytes = new Uint8Array(num.buffer, num.byteOffset, n * NUM * 8);
  for (const [base, bytes] of [[16, numBytes], [16 + n * NUM * 8, sha.subarray(0, n * 32)]] as const) {
    const a = Math.max(start, base);
    const b = Math.min(end, base + bytes.length);
    if (a < b) page.set(bytes.subarray(a - base, b - base), a - start);
  }
  return page;
}

/** ns (decimal string) -> the double lstat would report as *Ms. */
function nsToMs(ns: string): number {
  try {
    const b = BigInt(ns);
    return Number(b / 1_000_000_000n) * 1e3 + Number(b % 1_000_000_000n) / 1e6;
  } catch {
    return NaN; // never matches: re-hashed
  }
}

/** Page size of the stored state: an observation rewrites only the pages whose bytes changed. */
const PAGE = 32 * 1024;

/** The per-workspace observation state in SQLite (tables tree_state + tree_state_pages; falls back to tree_cache rows once). */
export class TreeStateStore {
  private readonly selHead: Statement<[string], [number, string | null, string | null, number | null]>;
  private readonly selPages: Statement<[string], [number, Buffer]>;
  private readonly putHead: Statement<[string, number, string | null, string | null, number | null]>;
  private readonly putPage: Statement<[string, number, Buffer]>;
  private readonly dropPages: Statement<[string, number]>;
  /** The bytes and listing text loaded by the last load() of each root (to write only what changed). */
  private readonly loaded = new Map<string, { pages: Buffer[]; listing: string | null; token: string }>();
  constructor(private readonly db: Database) {
    this.selHead = db
      .prepare<[string], [number, string | null, string | null, number | null]>('SELECT pages, listing, watch_instance, watch_seq FROM tree_state WHERE root = ?')
      .raw(true);
    this.selPages = db.prepare<[string], [number, Buffer]>('SELECT page, bytes FROM tree_state_pages WHERE root = ? ORDER BY page').raw(true);
    this.putHead = db.prepare<[string, number, string | null, string | null, number | null]>(
      'INSERT OR REPLACE INTO tree_state (root, pages, listing, watch_instance, watch_seq) VALUES (?, ?, ?, ?, ?)',
    );
    this.putPage = db.prepare<[string, number, Buffer]>('INSERT OR REPLACE INTO tree_state_pages (root, page, bytes) VALUES (?, ?, ?)');
    this.dropPages = db.prepare<[string, number]>('DELETE FROM tree_state_pages WHERE root = ? AND page >= ?');
  }

  load(root: string): LoadedState | null {
    const head = this.selHead.get(root);
    if (head) {
      const rows = this.selPages.all(root);
      let ok = rows.length === head[0];
      for (let k = 0; ok && k < rows.length; k++) ok = rows[k]![0] === k;
      const pages = rows.map((r) => r[1]);
      const d = ok ? decodePages(pages) : null;
      if (d) {
        let listing: ListingState | null = null;
        try {
          const parsed = head[1] === null ? null : (JSON.parse(head[1]) as ListingState);
          if (parsed && parsed.v === 1) listing = parsed;
        } catch {
          listing = null;
        }
        const token: WatchToken | null = head[2] !== null && head[3] !== null ? [head[2], head[3]] : null;
        this.loaded.set(root, { pages, listing: head[1], token: JSON.stringify(token) });
        return { ...d, listing, token };
      }
    }
    this.loaded.delete(root);
    return this.loadLegacy(root);
  }

  /** Stat-cache rows written by snapshotTree's SqliteStatCache (observations before tree_state existed). */
  private loadLegacy(root: string): LoadedState | null {
    let rows: CacheRow[];
    try {
      rows = this.db
        .prepare<[string], CacheRow>('SELECT path, dev, ino, size, mtime_ns, ctime_ns, mode, sha256, cached_at_ns FROM tree_cache WHERE root = ?')
        .raw(true)
        .all(root);
    } catch {
      return null; // no tree_cache table
    }
    if (rows.length === 0) return null;
    const n = rows.length;
    const num = new Float64Array(n * NUM);
    const sha = Buffer.alloc(n * 32);
    const paths: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      paths[i] = r[0];
      const o = i * NUM;
      num[o + F_DEV] = Number(r[1]);
      num[o + F_INO] = Number(r[2]);
      num[o + F_SIZE] = Number(r[3]);
      num[o + F_MTIME] = nsToMs(r[4]);
      num[o + F_CTIME] = nsToMs(r[5]);
      num[o + F_MODE] = /^[0-9a-f]{64}$/.test(r[7]) ? Number(r[6]) : 0;
      num[o + F_AT] = nsToMs(r[8]);
      if (num[o + F_MODE] !== 0) sha.write(r[7], i * 32, 'hex');
    }
    return { paths, num, sha, listing: null, token: null };
  }

  /** Writes the head row alone (the slots did not change). */
  saveToken(root: string, token: WatchToken | null): void {
    const prev = this.loaded.get(root);
    if (!prev || prev.token === JSON.stringify(token)) return;
    this.putHead.run(root, prev.pages.length, prev.listing, token?.[0] ?? null, token?.[1] ?? null);
    prev.token = JSON.stringify(token);
  }

  /**
   * Stores the state. touched: when the listing is the loaded one (same paths, slots updated in
   * place), the slots written by this observation: only their pages are rebuilt and written.
   */
  save(root: string, paths: string[], num: Float64Array, sha: Buffer, listing: ListingState | null, token: WatchToken | null, touched: number[] | null = null): void {
    const text = listing === null ? null : JSON.stringify(listing);
    const tokenText = JSON.stringify(token);
    const prev = this.loaded.get(root);
    let pages: Buffer[];
    if (prev && touched) {
      const n = paths.length;
      pages = prev.pages.slice();
      const dirty = new Set<number>();
      const span = (from: number, len: number): void => {
        dirty.add(Math.floor(from / PAGE));
        dirty.add(Math.floor((from + len - 1) / PAGE));
      };
      for (const i of touched) {
        span(16 + i * NUM * 8, NUM * 8);
        span(16 + n * NUM * 8 + i * 32, 32);
      }
      for (const k of dirty) {
        pages[k] = patchPage(prev.pages[k]!, k, n, num, sha);
        if (!pages[k]!.equals(prev.pages[k]!)) this.putPage.run(root, k, pages[k]!);
      }
    } else {
      const raw = encodeState(paths, num, sha);
      pages = [];
      for (let k = 0; k * PAGE < raw.length; k++) {
        const page = raw.subarray(k * PAGE, Math.min(raw.length, (k + 1) * PAGE));
        pages.push(page);
        if (prev && k < prev.pages.length && page.equals(prev.pages[k]!)) continue;
        this.putPage.run(root, k, page);
      }
      if (!prev || prev.pages.length > pages.length) this.dropPages.run(root, pages.length);
    }
    if (!prev || prev.pages.length !== pages.length || prev.listing !== text || prev.token !== tokenText) {
      this.putHead.run(root, pages.length, text, token?.[0] ?? null, token?.[1] ?? null);
    }
    this.loaded.set(root, { pages, listing: text, token: tokenText });
    if (!prev) {
      try {
        this.db.prepare('DELETE FROM tree_cache WHERE root = ?').run(root);
      } catch {
        /* no tree_cache table */
      }
    }
  }
}

function envFingerprint(): string {
  const keys = Object.keys(process.env)
    .filter((k) => k.startsWith('GIT_') || k === 'HOME' || k === 'XDG_CONFIG_HOME')
    .sort();
  return JSON.stringify(keys.map((k) => [k, process.env[k]]));
}

/** The git config files and the default global excludes file the listing depends on (outside the work tree). */
export function configFiles(gitDir: string): { configs: string[]; globalIgnore: string } {
  const home = process.env.HOME ?? '';
  const xdg = process.env.XDG_CONFIG_HOME || (home ? path.join(home, '.config') : '');
  const configs = [path.join(gitDir, 'config'), '/etc/gitconfig'];
  if (home) configs.push(path.join(home, '.gitconfig'));
  if (xdg) configs.push(path.join(xdg, 'git', 'config'));
  return { configs, globalIgnore: xdg ? path.join(xdg, 'git', 'ignore') : '' };
}

function statFile(abs: string): [string, number, number, number, number] | [string] {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  return st ? [abs, st.ino, st.size, st.mtimeMs, st.ctimeMs] : [abs];
}

const EXCLUDES_IN_CONFIG = /excludesfile|\[\s*include/i;

/**
 * The validators outside the work tree's directories: .git, its index and info/exclude, the config
 * files and the global excludes file. null: the listing can never be reused.
 */
function gitValidators(root: string, stamp: number): ListingState | null {
  const gitDir = path.join(root, '.git');
  const g = lstatSync(gitDir, { throwIfNoEntry: false });
  if (!g || !g.isDirectory()) return null;
  const { configs, globalIgnore } = configFiles(gitDir);
  const files: ([string, number, number, number, number] | [string])[] = [[gitDir, g.ino, -1, 0, 0]];
  for (const f of [path.join(gitDir, 'index'), path.join(gitDir, 'info', 'exclude'), ...configs, ...(globalIgnore ? [globalIgnore] : [])]) {
    files.push(statFile(f));
  }
  for (const c of configs) {
    let text: string;
    try {
      text = readFileSync(c, 'utf8');
    } catch {
      continue;
    }
    if (EXCLUDES_IN_CONFIG.test(text)) return null;
  }
  return { v: 1, stamp, env: envFingerprint(), files };
}

/**
 * The validators of a git listing about to be taken (call BEFORE running git ls-files). null: the
 * listing can never be reused (see the header of this section).
 */
function captureListing(root: string, stamp: number, prev: ListingState | null): ListingState | null {
  const base = gitValidators(root, stamp);
  if (!base) return null;
  const { env, files } = base as { env: string; files: ([string, number, number, number, number] | [string])[] };
  const rootSt = lstatSync(root);
  if (prev?.over && prev.env === env && prev.over[0] === rootSt.ino && prev.over[1] === rootSt.mtimeMs && prev.over[2] === rootSt.ctimeMs) {
    return prev; // still too big to watch; not reusable (see validListing)
  }
  const dirs: [string, number, number, number][] = [];
  const stack: string[] = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const abs = rel === '' ? root : root + path.sep + rel;
    const st = rel === '' ? rootSt : lstatSync(abs, { throwIfNoEntry: false });
    if (!st || !st.isDirectory()) return null; // changed under us: list without a validator
    if (dirs.length >= MAX_WATCH_DIRS) return { v: 1, stamp, env, over: [rootSt.ino, rootSt.mtimeMs, rootSt.ctimeMs] };
    dirs.push([rel, st.ino, st.mtimeMs, st.ctimeMs]);
    let dirents;
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch {
      return null;
    }
    const children: string[] = [];
    let nested = false;
    for (const d of dirents) {
      const name = d.name;
      if (name === '.git') {
        nested = rel !== '';
        continue;
      }
      const childRel = rel === '' ? name : rel + '/' + name;
      if (name === '.gitignore') files.push(statFile(abs + path.sep + name));
      let isDir = d.isDirectory();
      if (!isDir && !d.isFile() && !d.isSymbolicLink() && !d.isFIFO() && !d.isSocket() && !d.isBlockDevice() && !d.isCharacterDevice()) {
        isDir = lstatSync(abs + path.sep + name, { throwIfNoEntry: false })?.isDirectory() ?? false;
      }
      if (isDir) children.push(childRel);
    }
    if (!nested) for (const c of children) stack.push(c);
  }
  return { v: 1, stamp, env, dirs, files };
}

function sameFile(rec: [string, number, number, number, number] | [string]): boolean {
  const st = lstatSync(rec[0], { throwIfNoEntry: false });
  if (rec.length === 1) return st === undefined;
  if (!st || st.ino !== rec[1]) return false;
  if (rec[2] === -1) return st.isDirectory(); // .git: inode only
  return st.size === rec[2] && st.mtimeMs === rec[3] && st.ctimeMs === rec[4];
}

/** The validator files still as recorded (and none racily so). */
function filesHold(l: ListingState): boolean {
  for (const f of l.files ?? []) {
    if (f.length === 5 && f[2] !== -1 && (f[3] >= l.stamp || f[4] >= l.stamp)) return false; // racy
    if (!sameFile(f)) return false;
  }
  return true;
}

/**
 * With a watcher journal that shows no entry, ignore-file or git-metadata change since the state was
 * taken: may its listing be reused? The directories need no check (an entry change in any of them
 * is journaled); the files outside the tree (config, global excludes) and the environment do.
 */
function listingHoldsForWatch(l: ListingState, isGit: boolean | undefined): boolean {
  if (l.env !== envFingerprint()) return false;
  if (l.nogit) return isGit !== true;
  return isGit !== false && l.files !== undefined && filesHold(l);
}

/** True when the listing stored with these validators is still what git ls-files would print. */
function validListing(root: string, l: ListingState): boolean {
  if (!l.dirs || !l.files || l.env !== envFingerprint()) return false;
  if (!filesHold(l)) return false;
  for (const d of l.dirs) {
    if (d[2] >= l.stamp || d[3] >= l.stamp) return false; // racy
    const st = lstatSync(d[0] === '' ? root : root + path.sep + d[0], { throwIfNoEntry: false });
    if (!st || !st.isDirectory() || st.ino !== d[1] || st.mtimeMs !== d[2] || st.ctimeMs !== d[3]) return false;
  }
  return true;
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

/** Hash a symlink target or a regular file: [sha256 bytes, hashed size] or null when it vanished. */
function hashEntry(abs: string, isLink: boolean): [Buffer, number] | null {
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

/**
 * Where this observation stands with the watcher it synced with: the position to store (the
 * journal's flushed seq, read in this transaction), and the journal since the stored state's
 * position: null when everything must be stat'ed (no position, another instance, lost coverage).
 */
function watchPosition(db: Database, root: string, prev: LoadedState | null, hint: WatchSyncHint | null): { token: WatchToken | null; journal: Journal | null } {
  if (!hint) return { token: null, journal: null };
  const w = db.prepare("SELECT flushed_seq FROM watchers WHERE workspace = ? AND instance = ? AND state = 'ready'").get(root, hint.instance) as
    | { flushed_seq: number }
    | undefined;
  if (!w) return { token: null, journal: null };
  const token: WatchToken = [hint.instance, w.flushed_seq];
  const since = prev?.token;
  if (hint.full || !since || since[0] !== hint.instance || since[1] > w.flushed_seq) return { token, journal: null };
  const rows = db
    .prepare<[string, string, number], [string | null, string]>('SELECT path, kind FROM watch_journal WHERE workspace = ? AND instance = ? AND seq > ?')
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
export function observeTree(root: string, db: Database, opts: { isGit?: boolean; watch?: WatchSyncHint | null } = {}): TreeObservation {
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
  if (journal && prev?.listing && !journal.listing && journal.entries.size === 0 && listingHoldsForWatch(prev.listing, isGit)) {
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
    let oMode = 0, oSize = 0, oDev = 0, oIno = 0, oMtime = 0, oCtime = 0, oAt = 0;
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
        present.push({ path: rel, change: 'modified', before: beforeEntry(j, rel), after: { path: rel, mode: MODE_GITLINK, size: 0, sha256: GITLINK_SHA256 } });
        if (reused) num[o + F_MODE] = 0;
        touched.push(i);
      }
      return;
    }
    const mode = isLink ? MODE_SYMLINK : (st.mode & 0o100) !== 0 ? MODE_EXEC : MODE_FILE;
    const size = st.size;
    const mtime = st.mtimeMs;
    let racy = false;
    if (j >= 0 && oSize === size && oMode === mode && oMtime === mtime && oCtime === st.ctimeMs && oIno === st.ino && oDev === st.dev) {
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
    if (j >= 0 && oMode === mode && oSize === hashedSize) changed = !digest.equals(oldSha!.subarray(j * 32, j * 32 + 32));
    const after: TreeEntry | null = changed ? { path: rel, mode, size: hashedSize, sha256: digest.toString('hex') } : null;
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
  if (token) db.prepare('DELETE FROM watch_journal WHERE workspace = ? AND NOT (instance = ? AND seq > ?)').run(absRoot, token[0], token[1]);

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
        out.push({ path: paths[i]!, mode: num[i * NUM + F_MODE]!, size: num[i * NUM + F_SIZE]!, sha256: sha.toString('hex', i * 32, i * 32 + 32) });
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
  return { snapshot, delta: [...present, ...removed], beforeCount, listingReused: reused, mode: journal ? 'hinted' : 'full', statted };
}
