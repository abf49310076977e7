// The hook's side of the workspace watcher (src/watch/daemon.ts): find the live watcher of a
// workspace, start one when there is none, and sync with it before an observation.
import { existsSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { childProcess } from '../base/lazy.js';
import { isAlive } from '../ledger/ledger.js';
import { cookieDir, installedEntry } from '../base/paths.js';
import type { Db } from '../store/store.js';

/** A watcher the caller has synced with: its journal holds every change made before the sync. */
export interface WatchSync {
  instance: string;
}

interface WatcherRow {
  instance: string;
  pid: number;
  pid_start: string;
  state: string;
  updated_at: string;
}

/** After a watcher gave up on a workspace (too many directories), hooks wait this long before trying again. */
const RETRY_UNAVAILABLE_MS = 10 * 60_000;
const SYNC_TIMEOUT_MS = 2_000;
/** An observation by the watcher may be a full one (its first, or after lost coverage). */
const OBSERVE_TIMEOUT_MS = 5_000;
/** The suffix a watcher gives a cookie whose request failed. */
export const FAILED = '.failed';

let cookieCounter = 0;
/** For Atomics.wait while polling a cookie; made on first use (this module is on every hook's path). */
let sleeper: Int32Array | undefined;

export function watchEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.LATCH_WATCH !== 'off' && process.platform === 'linux';
}

function watcherRow(db: Db, workspace: string): WatcherRow | undefined {
  return db
    .prepare('SELECT instance, pid, pid_start, state, updated_at FROM watchers WHERE workspace = ?')
    .get(workspace) as WatcherRow | undefined;
}

/**
 * One request to a watcher through its cookie directory: `s-…` sync (journal flushed), `o-…` sync
 * and observe (the watcher runs the Close's observation itself). The watcher removes the cookie when
 * done, or renames it to `….failed`. 'none': no answer in time (the cookie is withdrawn).
 */
function request(home: string, instance: string, kind: 's' | 'o', timeoutMs: number): 'done' | 'failed' | 'none' {
  const cookie = path.join(cookieDir(home, instance), `${kind}-${process.pid}-${++cookieCounter}-${Date.now()}`);
  try {
    writeFileSync(cookie, '', { flag: 'wx', mode: 0o600 });
  } catch {
    return 'none'; // the watcher is going away
  }
  const deadline = Date.now() + timeoutMs;
  for (let spins = 0; existsSync(cookie); spins++) {
    if (Date.now() > deadline) {
      try {
        unlinkSync(cookie);
        return 'none';
      } catch {
        break; // answered at the last moment
      }
    }
    if (spins > 20) Atomics.wait((sleeper ??= new Int32Array(new SharedArrayBuffer(4))), 0, 0, 0.1);
  }
  try {
    unlinkSync(`${cookie}${FAILED}`);
    return 'failed';
  } catch {
    return 'done';
  }
}

/**
 * Syncs with the workspace's watcher: null when there is none ready (one is started in the
 * background if needed; this observation scans everything), or it does not answer in time.
 */
export function syncWatcher(db: Db, home: string, workspace: string): WatchSync | null {
  if (!watchEnabled()) return null;
  const row = watcherRow(db, workspace);
  if (!row || !usable(row)) {
    if (!row || restartable(row)) startWatcher(home, workspace);
    return null;
  }
  return request(home, row.instance, 's', SYNC_TIMEOUT_MS) === 'done' ? { instance: row.instance } : null;
}

/**
 * Has the workspace's ready watcher observe the workspace for a Close (after flushing its journal,
 * with its already compiled code: cheaper than this process loading and running the observation).
 * 'done': observed. Otherwise the caller observes: 'no-watcher' (none ready), 'failed' (the
 * observation failed there), 'unanswered' (no answer in time: a sync would not be answered either).
 */
export function observeByWatcher(
  db: Db,
  home: string,
  workspace: string,
): 'done' | 'failed' | 'unanswered' | 'no-watcher' {
  if (!watchEnabled()) return 'no-watcher';
  const row = watcherRow(db, workspace);
  if (!row || !usable(row)) return 'no-watcher';
  const answer = request(home, row.instance, 'o', OBSERVE_TIMEOUT_MS);
  return answer === 'none' ? 'unanswered' : answer;
}

/** Starts a watcher when the workspace has none (or a dead one); no sync. */
export function ensureWatcher(db: Db, home: string, workspace: string): void {
  if (!watchEnabled()) return;
  const row = watcherRow(db, workspace);
  if (!row || (!usable(row) && restartable(row))) startWatcher(home, workspace);
}

function usable(row: WatcherRow): boolean {
  return row.state === 'ready' && isAlive({ pid: row.pid, start: row.pid_start });
}

function restartable(row: WatcherRow): boolean {
  if (row.state !== 'unavailable') return !isAlive({ pid: row.pid, start: row.pid_start });
  return Date.now() - Date.parse(row.updated_at) > RETRY_UNAVAILABLE_MS;
}

/** The node option the watcher process runs with (see startWatcher). */
export const WATCHER_NODE_FLAG = '--max-semi-space-size=1';

function startWatcher(home: string, workspace: string): void {
  const entry = installedEntry();
  if (!entry) return;
  try {
    // A young generation of 1 MB: the watcher allocates little per request, and V8's default
    // semi-spaces left it holding ~65-75 MB of private memory after a few hundred Closes on a
    // 10k-file repository, against ~28 MB with this (docs/benchmarks.md), at no cost to the Close.
    // V8 rejects the code caches written without that option, so the watcher compiles without them
    // and must not write its own over the hooks' (LATCH_WRITE_CODE_CACHE=0, see src/loader.ts).
    const child = childProcess().spawn(process.execPath, [WATCHER_NODE_FLAG, entry, '__watch', workspace], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, LATCH_HOME: home, LATCH_WRITE_CODE_CACHE: '0' },
    });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    /* no watcher: observations scan everything */
  }
}
