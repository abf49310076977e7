// The workspace watcher: one long-lived process per workspace (`latch __watch ROOT`, started by a hook)
// that turns inotify events into a journal of paths that may have changed. A Close then stats only
// those paths instead of every file (src/tree/tree.ts, observeTree with a watch hint).
//
// How a hook knows the journal is complete up to "now" (the sync): it creates a cookie file in this
// watcher's cookie directory ($LATCH_HOME/watch/<instance>/) and waits until the file is gone. All of
// this process's fs.watch handles share libuv's single inotify descriptor, whose queue is in the order
// the kernel saw the operations; a change the tool finished before the hook started is therefore
// queued before the cookie's creation, handled before it, and flushed to watch_journal (one
// transaction, with watchers.flushed_seq) before the cookie is removed.
//
// Coverage: every directory under the root, without following symlinks, except the insides of `.git`
// (only `.git` and `.git/info` themselves are watched: the index, config and info/exclude feed the
// git listing). A directory that appears is watched at once, in the event handler, before any later
// event (the cookie included) is handled; what was written into it before its watch existed is
// covered because the hook stats everything below a path whose entry changed (kind 'r').
// When coverage may have been lost (a watch error, an event without a name, the journal growing
// past its bound) a NULL path is journaled: the next observation stats everything. Beyond
// LATCH_WATCH_MAX_DIRS directories (default 8192) the watcher gives up (state 'unavailable') and hooks
// scan as without it. Known limit: when more than fs.inotify.max_queued_events events pile up unread,
// the kernel drops events and neither libuv nor Node report it; the full scans at each turn's end,
// checkpoint and verify then find such changes (timed by ctime like every change).
//
// It exits when idle (LATCH_WATCH_IDLE_MS, default 30 min without a sync), when the root or the store
// goes away (checked every 5 s), when another instance has taken over its row, and on SIGTERM/SIGINT.
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  unlinkSync,
  watch,
  type Dirent,
  type FSWatcher,
} from 'node:fs';
import path from 'node:path';
import { isAlive, selfId } from '../ledger/ledger.js';
import { cookieDir, dbPath } from '../base/paths.js';
import { immediate, openStore } from '../store/store.js';
import { configFiles } from '../tree/enumerate.js';
import { observeWorkspace } from '../ledger/observe.js';
import { FAILED } from './client.js';
import { ignoredDirs } from './ignored.js';

export const DEFAULT_IDLE_MS = 30 * 60_000;
export const DEFAULT_MAX_DIRS = 8192;
/** Distinct paths kept in memory between two flushes before the watcher journals "observe everything" instead. */
const MAX_PENDING = 100_000;

export type JournalKind = 'c' | 'r' | 'g';

interface WatchedDir {
  watcher: FSWatcher;
  ino: number;
}

export interface WatcherOptions {
  home: string;
  root: string;
  idleMs?: number;
  maxDirs?: number;
}

function envNumber(v: string | undefined, fallback: number): number {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** Runs the watcher until it has a reason to stop; resolves with the process exit code. */
export function runWatcher(opts: WatcherOptions): Promise<number> {
  const root = path.resolve(opts.root);
  const idleMs = opts.idleMs ?? envNumber(process.env.LATCH_WATCH_IDLE_MS, DEFAULT_IDLE_MS);
  const maxDirs = opts.maxDirs ?? envNumber(process.env.LATCH_WATCH_MAX_DIRS, DEFAULT_MAX_DIRS);
  // A workspace that is already gone (a hook's late start): leave before touching the store.
  if (!lstatSync(root, { throwIfNoEntry: false })?.isDirectory()) return Promise.resolve(1);
  const db = openStore(opts.home, { create: false, busyTimeoutMs: 10_000 });
  const instance = randomBytes(8).toString('hex');
  const me = selfId();
  const now = () => new Date().toISOString();

  const claimed = immediate(db, () => {
    const row = db.prepare('SELECT pid, pid_start, state FROM watchers WHERE workspace = ?').get(root) as
      | { pid: number; pid_start: string; state: string }
      | undefined;
    if (row && row.state !== 'unavailable' && isAlive({ pid: row.pid, start: row.pid_start })) return false;
    db.prepare('DELETE FROM watch_journal WHERE workspace = ?').run(root);
    db.prepare(
      `INSERT OR REPLACE INTO watchers (workspace, instance, pid, pid_start, state, flushed_seq, dirs, reason, started_at, updated_at)
       VALUES (?, ?, ?, ?, 'starting', 0, 0, NULL, ?, ?)`,
    ).run(root, instance, me.pid, me.start, now(), now());
    return true;
  });
  if (!claimed) {
    db.close();
    return Promise.resolve(0);
  }

  const cookies = cookieDir(opts.home, instance);
  const dirs = new Map<string, WatchedDir>();
  // In a git work tree, directories git ignores (and that hold no tracked file) are not watched:
  // nothing below them is listed, and a large node_modules would exhaust the watches.
  const gitTree = existsSync(path.join(root, '.git'));
  let ignored: Set<string> = (gitTree && ignoredDirs(root)) || new Set();
  const { configs, globalIgnore } = configFiles(path.join(root, '.git'));
  const configStamp = (): string =>
    [...configs, globalIgnore]
      .map((f) => {
        const st = f ? lstatSync(f, { throwIfNoEntry: false }) : undefined;
        return st ? `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : '-';
      })
      .join('|');
  let configSeen = gitTree ? configStamp() : '';
  const pending = new Map<string, JournalKind>();
  let lost = false;
  let flushedSeq = 0;
  let lastSync = Date.now();
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  let cookieWatch: FSWatcher | undefined;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((r) => (resolveExit = r));

  const mine = (): boolean => {
    const r = db.prepare('SELECT instance FROM watchers WHERE workspace = ?').get(root) as
      | { instance: string }
      | undefined;
    return r?.instance === instance;
  };

  const stop = (code: number, state?: { unavailable: string }): void => {
    if (finished) return;
    finished = true;
    clearInterval(timer);
    cookieWatch?.close();
    for (const d of dirs.values()) d.watcher.close();
    dirs.clear();
    try {
      immediate(db, () => {
        if (!mine()) return;
        db.prepare('DELETE FROM watch_journal WHERE workspace = ? AND instance = ?').run(root, instance);
        if (state) {
          db.prepare(
            "UPDATE watchers SET state = 'unavailable', reason = ?, updated_at = ? WHERE workspace = ? AND instance = ?",
          ).run(state.unavailable, now(), root, instance);
        } else {
          db.prepare('DELETE FROM watchers WHERE workspace = ? AND instance = ?').run(root, instance);
        }
      });
    } catch {
      /* the store is gone or locked: a hook finds a dead pid and starts over */
    }
    rmSync(cookies, { recursive: true, force: true });
    db.close();
    resolveExit(code);
  };

  const record = (rel: string, kind: JournalKind): void => {
    const had = pending.get(rel);
    if (had === undefined || (had === 'c' && kind !== 'c')) pending.set(rel, kind);
    if (pending.size > MAX_PENDING) {
      pending.clear();
      lost = true;
    }
  };

  const flush = (): boolean => {
    if (pending.size === 0 && !lost) return true;
    try {
      immediate(db, () => {
        if (!mine()) throw new Error('replaced');
        const seq = flushedSeq + 1;
        const ins = db.prepare(
          'INSERT INTO watch_journal (workspace, instance, seq, path, kind) VALUES (?, ?, ?, ?, ?)',
        );
        if (lost) ins.run(root, instance, seq, null, 'r');
        else for (const [rel, kind] of pending) ins.run(root, instance, seq, rel, kind);
        db.prepare(
          'UPDATE watchers SET flushed_seq = ?, dirs = ?, updated_at = ? WHERE workspace = ? AND instance = ?',
        ).run(seq, dirs.size, now(), root, instance);
        flushedSeq = seq;
      });
    } catch (err) {
      if (err instanceof Error && err.message === 'replaced') stop(0);
      return false; // busy: kept for the next flush; the waiting hook times out and scans everything
    }
    pending.clear();
    lost = false;
    return true;
  };

  /** Watches `rel` and every directory below it. False when the directory bound is exceeded. */
  const watchTree = (rel: string): boolean => {
    const stack = [rel];
    while (stack.length > 0 && !finished) {
      const d = stack.pop()!;
      const abs = d === '' ? root : path.join(root, d);
      const st = lstatSync(abs, { throwIfNoEntry: false });
      if (!st || !st.isDirectory()) continue;
      const old = dirs.get(d);
      if (old && old.ino === st.ino) continue;
      if (old) unwatch(d);
      if (dirs.size >= maxDirs) return false;
      let w: FSWatcher;
      try {
        w = watch(abs, { persistent: true }, (type, name) => onEvent(d, type, name));
      } catch {
        lost = true; // vanished or no watch left: the next observation scans everything
        continue;
      }
      w.on('error', () => {
        lost = true;
        unwatch(d);
      });
      dirs.set(d, { watcher: w, ino: st.ino });
      let names: Dirent[];
      try {
        names = readdirSync(abs, { withFileTypes: true });
      } catch {
        lost = true;
        continue;
      }
      for (const e of names) {
        const childRel = d === '' ? e.name : `${d}/${e.name}`;
        if (e.name === '.git') {
          if (d === '' && e.isDirectory()) watchGitDir();
          continue;
        }
        if (e.isDirectory() && !ignored.has(childRel)) stack.push(childRel);
      }
    }
    return true;
  };

  /**
   * The ignore rules, the index or the directories changed: derive the ignored directories again and
   * watch those no longer ignored, journaling each as a changed entry (everything below it is then
   * stat'ed by the next observation: it was not watched until now).
   */
  const refreshIgnored = (): void => {
    if (!gitTree) return;
    const before = ignored;
    ignored = ignoredDirs(root) ?? new Set();
    for (const d of before) {
      if (finished) return;
      if (ignored.has(d) || dirs.has(d)) continue;
      if (!lstatSync(path.join(root, d), { throwIfNoEntry: false })?.isDirectory()) continue;
      record(d, 'r');
      if (!watchTree(d)) stop(0, { unavailable: `more than ${maxDirs} directories to watch` });
    }
  };

  /** .git and .git/info themselves (not recursive): the index, config and info/exclude. */
  const watchGitDir = (): void => {
    for (const d of ['.git', '.git/info']) {
      if (dirs.has(d)) continue;
      const abs = path.join(root, d);
      const st = lstatSync(abs, { throwIfNoEntry: false });
      if (!st || !st.isDirectory()) continue;
      try {
        const w = watch(abs, { persistent: true }, (_type, name) => {
          if (finished || !(name === 'index' || name === 'config' || name === 'exclude' || name === 'info')) return;
          record(d, 'g');
          refreshIgnored();
        });
        w.on('error', () => {
          lost = true;
          unwatch(d);
        });
        dirs.set(d, { watcher: w, ino: st.ino });
      } catch {
        lost = true;
      }
    }
  };

  const unwatch = (rel: string): void => {
    const prefix = rel === '' ? '' : rel + '/';
    for (const [d, w] of dirs) {
      if (d === rel || d.startsWith(prefix)) {
        w.watcher.close();
        dirs.delete(d);
      }
    }
  };

  function onEvent(dirRel: string, type: string, name: string | Buffer | null): void {
    if (finished) return;
    if (name === null || typeof name !== 'string') {
      lost = true;
      return;
    }
    const rel = dirRel === '' ? name : `${dirRel}/${name}`;
    if (name === '.git') {
      record(rel, 'g');
      if (dirRel === '') watchGitDir();
      return;
    }
    if (type !== 'rename') {
      record(rel, 'c');
      if (name === '.gitignore') refreshIgnored();
      return;
    }
    record(rel, 'r');
    // An entry appeared, went away or was replaced: keep the watches in step, now (before any later event).
    const st = lstatSync(path.join(root, rel), { throwIfNoEntry: false });
    const known = dirs.get(rel);
    if (st?.isDirectory()) {
      if (!known || known.ino !== st.ino) {
        if (known) unwatch(rel);
        refreshIgnored(); // is the new directory (or one inside it) ignored?
        if (!ignored.has(rel) && !watchTree(rel)) stop(0, { unavailable: `more than ${maxDirs} directories to watch` });
      }
    } else {
      if (known) unwatch(rel);
      if (name === '.gitignore') refreshIgnored();
    }
  }

  // A cookie `s-…` asks for a sync, `o-…` for a sync and the Close's observation (src/watch/client.ts).
  const onCookie = (_type: string, name: string | Buffer | null): void => {
    if (finished || typeof name !== 'string' || name.endsWith(FAILED)) return;
    const file = path.join(cookies, name);
    if (!lstatSync(file, { throwIfNoEntry: false })) return; // our own removal, or already answered
    lastSync = Date.now();
    if (!flush()) return; // the store is busy: the hook times out and does without
    if (name.startsWith('o-')) {
      try {
        immediate(db, () => observeWorkspace(db, root, 'close', now(), undefined, { watch: { instance } }));
      } catch {
        try {
          renameSync(file, file + FAILED);
        } catch {
          /* the hook gave up */
        }
        return;
      }
    }
    try {
      unlinkSync(file);
    } catch {
      /* the hook gave up and removed it */
    }
  };

  // Set up: cookie directory first (its watch is on the same inotify queue), then the tree.
  const rootSt = lstatSync(root, { throwIfNoEntry: false });
  try {
    if (!rootSt?.isDirectory()) throw new Error('the workspace is not a directory');
    // Never recreates a state directory that is being removed: only the last two levels are made.
    try {
      mkdirSync(path.dirname(cookies), { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    mkdirSync(cookies, { mode: 0o700 });
    cookieWatch = watch(cookies, { persistent: true }, onCookie);
    cookieWatch.on('error', () => stop(1));
    if (!watchTree('')) {
      stop(0, { unavailable: `more than ${maxDirs} directories to watch` });
      return exited;
    }
    immediate(db, () => {
      if (mine())
        db.prepare(
          "UPDATE watchers SET state = 'ready', dirs = ?, updated_at = ? WHERE workspace = ? AND instance = ?",
        ).run(dirs.size, now(), root, instance);
    });
  } catch {
    stop(1);
    return exited;
  }

  // Housekeeping: idle, root gone or replaced, store gone, row taken over.
  const storeFile = dbPath(opts.home);
  timer = setInterval(
    () => {
      const st = lstatSync(root, { throwIfNoEntry: false });
      let done = !st || st.ino !== rootSt!.ino || !existsSync(storeFile) || Date.now() - lastSync > idleMs;
      if (!done && gitTree) {
        // A config or global excludes file (outside the tree: not watched) changed: the ignored set may
        // have too; until now a newly unignored directory went unwatched, so coverage is declared lost.
        const stamp = configStamp();
        if (stamp !== configSeen) {
          configSeen = stamp;
          lost = true;
          refreshIgnored();
        }
      }
      try {
        done ||= !mine();
      } catch {
        done = true; // the store is unusable
      }
      if (done) stop(0);
    },
    Math.min(5_000, Math.max(200, idleMs / 4)),
  );
  process.once('SIGTERM', () => stop(0));
  process.once('SIGINT', () => stop(0));
  return exited;
}
