// The workspace watchers as recorded in the store (src/watch/daemon.ts writes them), each with whether
// its process still runs: `latch watch` lists and stops them, `latch doctor` checks them.
import { isAlive } from '../../ledger/ledger.js';
import type { Db } from '../../store/store.js';

export interface WatcherJson {
  workspace: string;
  pid: number;
  alive: boolean;
  state: string;
  directories: number;
  journal_seq: number;
  reason: string | null;
  started_at: string;
  updated_at: string;
}

type Row = {
  workspace: string;
  pid: number;
  pid_start: string;
  state: string;
  dirs: number;
  flushed_seq: number;
  reason: string | null;
  started_at: string;
  updated_at: string;
};

/** The watchers of one workspace (or all), each with whether its process still runs. */
export function listWatchers(db: Db, workspace: string | null): WatcherJson[] {
  const rows = (
    workspace === null
      ? db.prepare('SELECT * FROM watchers ORDER BY workspace').all()
      : db.prepare('SELECT * FROM watchers WHERE workspace = ?').all(workspace)
  ) as Row[];
  return rows.map((r) => ({
    workspace: r.workspace,
    pid: r.pid,
    alive: isAlive({ pid: r.pid, start: r.pid_start }),
    state: r.state,
    directories: r.dirs,
    journal_seq: r.flushed_seq,
    reason: r.reason,
    started_at: r.started_at,
    updated_at: r.updated_at,
  }));
}

/** Sends SIGTERM to the running watchers in `list`; the workspaces whose watcher was signalled. */
export function stopWatchers(list: readonly WatcherJson[]): string[] {
  const stopped: string[] = [];
  for (const w of list) {
    if (!w.alive) continue;
    try {
      process.kill(w.pid, 'SIGTERM');
      stopped.push(w.workspace);
    } catch {
      /* it exited meanwhile */
    }
  }
  return stopped;
}
