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
// Beside the journal it keeps the sentry (sentry.ts): an eye on the transcripts of the workspace's
// mutable sessions, which counts and trips a compaction when the agent's hooks are killed.
//
// It exits when idle (LATCH_WATCH_IDLE_MS, default 30 min without a sync while no session of the
// workspace has a running agent), when the root or the store
// goes away (checked every 5 s), when another instance has taken over its row, and on SIGTERM/SIGINT.
//
// The pieces: lease.ts (the watchers row: claim, ready, release), intake.ts (the fs.watch handles and
// their events), journal.ts (the paths recorded, flushed at a sync); this file runs one watcher:
// setup, the sync cookies, the housekeeping and the stop.
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  renameSync,
  rmSync,
  unlinkSync,
  watch,
  type FSWatcher,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { cookieDir, dbPath } from '../base/paths.js';
import { immediate, openStore } from '../store/store.js';
import { observeWorkspace } from '../ledger/observe.js';
import { FAILED } from './client.js';
import { TreeWatch } from './intake.js';
import { Journal } from './journal.js';
import { Lease, now } from './lease.js';
import { Sentry } from './sentry.js';
import { isAlive } from '../ledger/ledger.js';

export type { JournalKind } from './journal.js';

export const DEFAULT_IDLE_MS = 30 * 60_000;
export const DEFAULT_MAX_DIRS = 8192;

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
  const lease = new Lease(db, root, randomBytes(8).toString('hex'));
  if (!lease.claim()) {
    db.close();
    return Promise.resolve(0);
  }
  return new Watcher(opts.home, lease, idleMs, maxDirs).run();
}

/** One claimed watcher: its cookie directory, tree watches and journal, from setup to stop. */
class Watcher {
  private readonly root: string;
  private readonly cookies: string;
  private readonly journal: Journal;
  private readonly tree: TreeWatch;
  /** The out-of-band look at the workspace's sessions (src/watch/sentry.ts); null: LATCH_SENTRY=off. */
  private readonly sentry: Sentry | null;
  private lastSync: number;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  private cookieWatch: FSWatcher | undefined;
  private resolveExit!: (code: number) => void;
  private readonly exited = new Promise<number>((r) => (this.resolveExit = r));

  constructor(
    private readonly home: string,
    private readonly lease: Lease,
    private readonly idleMs: number,
    private readonly maxDirs: number,
  ) {
    this.root = lease.root;
    this.cookies = cookieDir(home, lease.instance);
    this.journal = new Journal(lease);
    this.tree = new TreeWatch(this.root, maxDirs, this.journal, () => this.stop(0, this.tooMany()));
    this.lastSync = Date.now();
    this.sentry =
      process.env.LATCH_SENTRY === 'off' ? null : new Sentry(home, this.root, (pid, start) => isAlive({ pid, start }));
  }

  private tooMany(): { unavailable: string } {
    return { unavailable: `more than ${this.maxDirs} directories to watch` };
  }

  run(): Promise<number> {
    const rootSt = this.setup();
    if (!rootSt) return this.exited;
    // Housekeeping: idle, root gone or replaced, store gone, row taken over.
    const storeFile = dbPath(this.home);
    this.timer = setInterval(
      () => this.housekeeping(rootSt, storeFile),
      Math.min(5_000, Math.max(200, this.idleMs / 4)),
    );
    process.once('SIGTERM', () => this.stop(0));
    process.once('SIGINT', () => this.stop(0));
    return this.exited;
  }

  /**
   * Set up: the cookie directory first (its watch is on the same inotify queue), then the tree.
   * The root's stat, or undefined when it could not (the watcher is stopped).
   */
  private setup(): Stats | undefined {
    const rootSt = lstatSync(this.root, { throwIfNoEntry: false });
    try {
      if (!rootSt?.isDirectory()) throw new Error('the workspace is not a directory');
      // Never recreates a state directory that is being removed: only the last two levels are made.
      try {
        mkdirSync(path.dirname(this.cookies), { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      mkdirSync(this.cookies, { mode: 0o700 });
      this.cookieWatch = watch(this.cookies, { persistent: true }, this.onCookie);
      this.cookieWatch.on('error', () => this.stop(1));
      if (!this.tree.watchTree('')) {
        this.stop(0, this.tooMany());
        return undefined;
      }
      this.lease.ready(this.tree.size);
      this.sentry?.refresh();
    } catch {
      this.stop(1);
      return undefined;
    }
    return rootSt;
  }

  // A cookie `s-…` asks for a sync, `o-…` for a sync and the Close's observation (src/watch/client.ts).
  private readonly onCookie = (_type: string, name: string | Buffer | null): void => {
    if (this.finished || typeof name !== 'string' || name.endsWith(FAILED)) return;
    const file = path.join(this.cookies, name);
    if (!lstatSync(file, { throwIfNoEntry: false })) return; // our own removal, or already answered
    this.lastSync = Date.now();
    const flushed = this.journal.flush(this.tree.size);
    if (flushed === 'replaced') this.stop(0);
    if (flushed !== 'ok') return; // the store is busy: the hook times out and does without
    if (name.startsWith('o-')) {
      const { db, root, instance } = this.lease;
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

  private housekeeping(rootSt: Stats, storeFile: string): void {
    const st = lstatSync(this.root, { throwIfNoEntry: false });
    // Idle: no sync for idleMs, and no session of the workspace whose agent runs (the sentry keeps an
    // eye on those however long their hooks stay silent).
    this.sentry?.refresh();
    const idle = Date.now() - this.lastSync > this.idleMs && !this.sentry?.watching();
    let done = !st || st.ino !== rootSt.ino || !existsSync(storeFile) || idle;
    // A config or global excludes file changed: see TreeWatch.checkConfigs.
    if (!done) this.tree.checkConfigs();
    try {
      done ||= !this.lease.mine();
    } catch {
      done = true; // the store is unusable
    }
    if (done) this.stop(0);
  }

  private stop(code: number, state?: { unavailable: string }): void {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.timer);
    this.cookieWatch?.close();
    this.sentry?.close();
    this.tree.close();
    this.lease.release(state);
    rmSync(this.cookies, { recursive: true, force: true });
    this.lease.db.close();
    this.resolveExit(code);
  }
}
