// The reference snapshot: snapshotTree() lists, stats and hashes the whole tree in one pass and
// returns its sorted entries and digest, optionally against a stat cache (StatCache; MemoryStatCache
// keeps one in memory). `latch demo` uses it, and the tests use it as the oracle that observeTree
// (observe-tree.ts, the incremental form the ledger runs) must agree with.

import path from 'node:path';
import { checkDeadline } from '../base/deadline.js';
import { isInsideWorkTree } from '../base/git.js';
import { listAllPaths, listGitPaths } from './enumerate.js';
import { entryFor, newPass, type StatCacheEntry } from './hash.js';
import { digestEntries, MODE_GITLINK, sortEntries, type TreeEntry, type TreeSnapshot } from './listing.js';

// ---------------------------------------------------------------------------
// Stat cache

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
