// The per-workspace observation state of observeTree (observe-tree.ts) in SQLite, tables tree_state
// and tree_state_pages: the blob of slots and its pages, TreeStateStore (load, and save writing only
// the pages that changed; a store that predates tree_state is read once from its tree_cache rows),
// and the slot layout (NUM, F_*) with which observeTree reads and writes the slots in place.
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

import type { Database, Statement } from 'better-sqlite3';
import type { ListingState } from './enumerate.js';

const STATE_MAGIC = 0x4c545331; // "LTS1"
export const NUM = 7; // float64 fields per slot
export const F_DEV = 0;
export const F_INO = 1;
export const F_SIZE = 2;
export const F_MTIME = 3;
export const F_CTIME = 4;
export const F_MODE = 5;
export const F_AT = 6;

/** A row of the legacy tree_cache table (the stat cache of snapshotTree, before tree_state existed). */
export type CacheRow = [string, string, string, number, string, string, number, string, string];

/** The watcher position a state is complete up to: [instance, journal seq]. */
export type WatchToken = [string, number];

export interface LoadedState {
  paths: string[];
  num: Float64Array;
  sha: Buffer;
  listing: ListingState | null;
  token: WatchToken | null;
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
  for (const [base, bytes] of [
    [16, numBytes],
    [16 + n * NUM * 8, sha.subarray(0, n * 32)],
  ] as const) {
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
      .prepare<[string], [number, string | null, string | null, number | null]>(
        'SELECT pages, listing, watch_instance, watch_seq FROM tree_state WHERE root = ?',
      )
      .raw(true);
    this.selPages = db
      .prepare<[string], [number, Buffer]>('SELECT page, bytes FROM tree_state_pages WHERE root = ? ORDER BY page')
      .raw(true);
    this.putHead = db.prepare<[string, number, string | null, string | null, number | null]>(
      'INSERT OR REPLACE INTO tree_state (root, pages, listing, watch_instance, watch_seq) VALUES (?, ?, ?, ?, ?)',
    );
    this.putPage = db.prepare<[string, number, Buffer]>(
      'INSERT OR REPLACE INTO tree_state_pages (root, page, bytes) VALUES (?, ?, ?)',
    );
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
        .prepare<[string], CacheRow>(
          'SELECT path, dev, ino, size, mtime_ns, ctime_ns, mode, sha256, cached_at_ns FROM tree_cache WHERE root = ?',
        )
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
  save(
    root: string,
    paths: string[],
    num: Float64Array,
    sha: Buffer,
    listing: ListingState | null,
    token: WatchToken | null,
    touched: number[] | null = null,
  ): void {
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
