// `latch doctor --repair`: the corrupt store and its -wal, -shm and -journal are moved aside to
// `latch.db.corrupt-<time>` in the same directory (never deleted), and a fresh store is put in their
// place with a store_repairs row in it from its first moment: no hook sees the fresh store without
// it. The store is missing between the two steps, so every tracked call is denied meanwhile. The
// fresh store cannot tell which sessions were latched: a session it has not seen starts latched
// unless it is provably new (src/guard/guard.ts createSession), and only `latch verify` releases it.
// So the repair only ever makes Latch more restrictive, whoever runs it.
//
// An open SQLite connection removes its WAL and shared-memory files by name when it closes: a
// connection to the old store that outlived the move would remove the fresh store's. So the resident
// hooks are told to leave first (as `latch uninstall` does), the old main file is moved (a watcher
// leaves when it is gone, src/watch/daemon.ts), and the fresh store is put in place once no process
// holds the old files open, or after WAIT_MS (those still holding them are named in the result).
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { errorMessage, StoreError } from '../base/errors.js';
import { dbPath } from '../base/paths.js';
import { dismissResidentHooks } from '../resident/list.js';
import { inspectStore, repairable, type MovedFile } from './health.js';
import { ensureHomeDir, immediate, lstatOrNull, openStoreFile, SCHEMA_VERSION } from './store.js';

export type { MovedFile } from './health.js';

/** A process that still held the old store open when the fresh one was put in place. */
export interface Holder {
  pid: number;
  cmdline: string;
}

export type RepairResult =
  /** Nothing moved: the store is usable (`detail` says so). */
  | { status: 'healthy'; store: string; detail: string }
  /** Nothing moved: there is no store to repair (`latch setup` makes one). */
  | { status: 'missing'; store: string; detail: string }
  /** Nothing moved: the store is unusable, but not found corrupt (a lock, a permission, a symlink...). */
  | { status: 'refused'; store: string; detail: string }
  | {
      status: 'repaired';
      /** The fresh store (latch.db, in the same place). */
      store: string;
      problem: string;
      /** The old files, moved aside and kept. */
      evidence: MovedFile[];
      repaired_at: string;
      /** Processes that still held the old files open after the wait (see the head of this file). */
      holders: Holder[];
    };

const SUFFIXES = ['', '-wal', '-shm', '-journal'] as const;

/** How long the repair waits for the old store's last connections to close. */
const WAIT_MS = 10_000;

/** `2026-07-01T12:00:00.123Z` as `20260701T120000.123Z` (ISO 8601's basic form: no `:` in a file name). */
export function basicIso(iso: string): string {
  return iso.replace(/[-:]/g, '');
}

/** The evidence name for `file` at `at`, free for every suffix (`.1`, `.2`... when taken). */
function evidenceBase(file: string, at: string): string {
  const base = `${file}.corrupt-${basicIso(at)}`;
  for (let n = 0; ; n++) {
    const b = n === 0 ? base : `${base}.${n}`;
    if (SUFFIXES.every((s) => lstatOrNull(b + s) === null)) return b;
  }
}

/**
 * Repairs the store of `home` when inspectStore finds it corrupt (or written by a newer Latch): see
 * the head of this file. Anything else is left as it is and said (`healthy`, `missing`, `refused`).
 * `now` stamps the evidence name and the store_repairs row. Throws (StoreError) only when a step of
 * the move itself fails, saying what was moved.
 */
export function repairStore(home: string, now: string, opts: { waitMs?: number } = {}): RepairResult {
  const store = dbPath(home);
  if (lstatOrNull(home) === null)
    return { status: 'missing', store, detail: `there is no state directory ${home}: nothing to repair` };
  try {
    ensureHomeDir(home, false);
  } catch (err) {
    return { status: 'refused', store, detail: errorMessage(err) };
  }
  const st = lstatOrNull(store);
  if (st === null) return { status: 'missing', store, detail: `there is no store ${store}: nothing to repair` };
  const me = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (st.isSymbolicLink() || !st.isFile() || (me !== undefined && st.uid !== me))
    return {
      status: 'refused',
      store,
      detail: `${store} is ${st.isSymbolicLink() ? 'a symlink' : !st.isFile() ? 'not a regular file' : `owned by uid ${st.uid}`}: Latch does not use it, and does not move it`,
    };
  const found = inspectStore(store);
  if (found.ok)
    return {
      status: 'healthy',
      store,
      detail: `${store} is healthy (quick_check ok, schema ${found.version}${found.migrates ? `, migrates to ${SCHEMA_VERSION}` : ''}): nothing to repair`,
    };
  if (!repairable(found))
    return {
      status: 'refused',
      store,
      detail: `${store}: ${found.problem}. That is not corruption: the store is left in place (fix the cause and run \`latch doctor\` again)`,
    };

  // Built under a name of its own first: the migrations and the repair row are in it before it is
  // latch.db. Closed cleanly, so it has no WAL of its own to carry along.
  const tmp = join(home, `.latch.db.repair-${process.pid}-${Date.now()}`);
  const built = openStoreFile(tmp, { create: true });
  built.close();
  const evidence: MovedFile[] = [];
  try {
    // The resident hooks keep the store open: told to leave (within a second), as uninstall does.
    dismissResidentHooks(home, null);
    const base = evidenceBase(store, now);
    const again = lstatOrNull(store);
    if (!again || again.ino !== st.ino || again.dev !== st.dev) {
      throw new StoreError(`${store} changed while it was being checked (another repair?); run \`latch doctor\` again`);
    }
    // The main file first: from now on no process opens the old store by name (a hook finds no store
    // and denies), and its WAL is never read without it.
    const moved = (suffix: string): void => {
      const from = store + suffix;
      const s = lstatOrNull(from);
      if (s === null) return;
      const to = base + suffix;
      if (lstatOrNull(to) !== null) throw new StoreError(`${to} appeared meanwhile`);
      renameSync(from, to);
      evidence.push({ from, to, bytes: s.size });
    };
    moved('');
    const ids = [idOf(base)].filter((x): x is string => x !== null);
    const wal = idOf(store + '-wal');
    if (wal) ids.push(wal);
    const holders = awaitClosed(ids, opts.waitMs ?? WAIT_MS);
    for (const s of SUFFIXES.slice(1)) moved(s);

    // The repair's row, written while the fresh store is not latch.db yet.
    const db = openStoreFile(tmp, { create: false });
    try {
      immediate(db, () =>
        db
          .prepare('INSERT INTO store_repairs (repaired_at, problem, evidence_json) VALUES (?, ?, ?)')
          .run(now, found.problem, JSON.stringify(evidence)),
      );
    } finally {
      db.close();
    }
    for (const s of ['-wal', '-shm', '-journal'])
      if (existsSync(tmp + s))
        throw new StoreError(`the fresh store ${tmp} was not closed cleanly (${tmp + s} remains)`);
    place(tmp, store, base, evidence);
    syncDir(home);
    return { status: 'repaired', store, problem: found.problem, evidence, repaired_at: now, holders };
  } catch (err) {
    for (const s of SUFFIXES) rmQuiet(tmp + s);
    throw new StoreError(`the repair of ${store} failed: ${errorMessage(err)}.${putBack(evidence)}`, { cause: err });
  }
}

/**
 * After a failed step, before the fresh store was in place: the files moved so far go back where they
 * were (the main file last, so that it is never there without its WAL). Says what it could not undo.
 */
function putBack(evidence: MovedFile[]): string {
  const stuck: MovedFile[] = [];
  for (const e of [...evidence].reverse()) {
    try {
      if (lstatOrNull(e.from) !== null) throw new Error(`${e.from} exists`);
      renameSync(e.to, e.from);
    } catch {
      stuck.push(e);
    }
  }
  if (evidence.length === 0) return '';
  if (stuck.length === 0) return ' The files moved were put back; nothing changed.';
  return ` Still moved aside: ${stuck.map((e) => `${e.to} (was ${basename(e.from)})`).join(', ')}; every tracked tool call is denied until they are moved back (\`mv\`, the main file last) and \`latch doctor --repair\` runs again.`;
}

/**
 * Puts the fresh store in place without replacing anything: a store some command created meanwhile
 * (none of the hooks does) is moved aside with the evidence first.
 */
function place(tmp: string, store: string, base: string, evidence: MovedFile[]): void {
  for (let n = 1; ; n++) {
    try {
      linkSync(tmp, store);
      rmQuiet(tmp);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || n > 3) throw err;
    }
    for (const s of SUFFIXES) {
      const from = store + s;
      const size = lstatOrNull(from)?.size;
      if (size === undefined) continue;
      const to = `${base}.late-${n}${s}`;
      renameSync(from, to);
      evidence.push({ from, to, bytes: size });
    }
  }
}

/** dev:ino of a file, or null when it is absent. */
function idOf(p: string): string | null {
  const s = lstatOrNull(p);
  return s ? `${s.dev}:${s.ino}` : null;
}

/**
 * Waits (up to `ms`) until no process of ours holds any of the files `ids` open (from /proc/<pid>/fd;
 * elsewhere nothing is found). Returns those that still do.
 */
function awaitClosed(ids: string[], ms: number): Holder[] {
  const deadline = Date.now() + ms;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const holders = holdersOf(new Set(ids));
    if (holders.length === 0 || Date.now() >= deadline) return holders;
    Atomics.wait(sleeper, 0, 0, 100);
  }
}

function holdersOf(ids: ReadonlySet<string>): Holder[] {
  if (ids.size === 0) return [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    return [];
  }
  const out: Holder[] = [];
  for (const p of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${p}/fd`);
    } catch {
      continue; // another user's, or gone
    }
    for (const fd of fds) {
      try {
        const s = statSync(`/proc/${p}/fd/${fd}`);
        if (!ids.has(`${s.dev}:${s.ino}`)) continue;
      } catch {
        continue;
      }
      out.push({ pid: Number(p), cmdline: cmdlineOf(p) });
      break;
    }
  }
  return out;
}

function cmdlineOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').slice(0, 200);
  } catch {
    return '';
  }
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // a file system that cannot sync a directory: the renames are still made
  }
}

function rmQuiet(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    // absent
  }
}
