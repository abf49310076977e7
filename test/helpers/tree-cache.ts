// The SQLite stat cache of snapshotTree (SqliteStatCache, table tree_cache) and snapshotPaths, which
// snapshots only the given paths: used by the tree tests and bench/tree.ts only (Latch itself observes
// through observeTree and its tree_state, src/tree/observe-tree.ts; the tree_cache rows an older store
// still holds are read once by TreeStateStore, src/tree/state.ts).

import path from 'node:path';
import type { Database, Statement } from 'better-sqlite3';
import { entryFor, newPass, type StatCacheEntry } from '../../src/tree/hash.js';
import { MODE_GITLINK, sortEntries, type TreeEntry } from '../../src/tree/listing.js';
import type { StatCache } from '../../src/tree/snapshot.js';
import type { CacheRow } from '../../src/tree/state.js';

export class SqliteStatCache implements StatCache {
  private readonly selectAll: Statement<[string], CacheRow>;
  private readonly selectOne: Statement<[string, string], CacheRow>;
  private readonly upsert: Statement<unknown[]>;
  private readonly del: Statement<[string, string]>;
  private readonly saveTx: (root: string, upserts: StatCacheEntry[], removed: string[]) => void;

  /** The tree_cache table must already exist (see TREE_CACHE_SQL, src/store/schema.ts). */
  constructor(db: Database) {
    const cols = 'path, dev, ino, size, mtime_ns, ctime_ns, mode, sha256, cached_at_ns';
    this.selectAll = db.prepare<[string], CacheRow>(`SELECT ${cols} FROM tree_cache WHERE root = ?`).raw(true);
    this.selectOne = db
      .prepare<[string, string], CacheRow>(`SELECT ${cols} FROM tree_cache WHERE root = ? AND path = ?`)
      .raw(true);
    this.upsert = db.prepare(`INSERT OR REPLACE INTO tree_cache (root, ${cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
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
  if (cache)
    cache.save(
      absRoot,
      pass.upserts,
      removed.filter((p) => cached.has(p)),
    );
  return sortEntries(entries);
}

/** Normalize a caller-supplied relative path; null when it escapes root or is empty. */
function normalizeRel(p: string): string | null {
  const s = path.sep === '\\' ? p.replace(/\\/g, '/') : p;
  const norm = path.posix
    .normalize(s)
    .replace(/^(\.\/)+/, '')
    .replace(/\/+$/, '');
  if (norm === '' || norm === '.' || norm === '..' || norm.startsWith('../') || path.posix.isAbsolute(norm))
    return null;
  return norm;
}
