// A workspace watcher's row in the store (watchers): the claim that makes one process per workspace
// its watcher, the check that it still is (another instance may take the row over), the 'ready'
// state once the tree is watched, and the release when it leaves. The journal (journal.ts) writes
// through the same lease.
import { isoTime } from '../base/clock.js';
import { isAlive, selfId } from '../ledger/ledger.js';
import { immediate, type Db } from '../store/store.js';

export const now = (): string => isoTime();

export class Lease {
  constructor(
    readonly db: Db,
    readonly root: string,
    readonly instance: string,
  ) {}

  /** Takes the workspace's row (a fresh journal, state 'starting'), unless a live watcher holds it. */
  claim(): boolean {
    const { db, root, instance } = this;
    const me = selfId();
    return immediate(db, () => {
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
  }

  /** The row is still this instance's. */
  mine(): boolean {
    const r = this.db.prepare('SELECT instance FROM watchers WHERE workspace = ?').get(this.root) as
      | { instance: string }
      | undefined;
    return r?.instance === this.instance;
  }

  /** The whole tree is watched: hooks may sync from now on. */
  ready(dirs: number): void {
    const { db, root, instance } = this;
    immediate(db, () => {
      if (this.mine())
        db.prepare(
          "UPDATE watchers SET state = 'ready', dirs = ?, updated_at = ? WHERE workspace = ? AND instance = ?",
        ).run(dirs, now(), root, instance);
    });
  }

  /**
   * Leaves: this instance's journal goes, and its row too, or (state given) the row stays as
   * 'unavailable' with the reason, so that hooks scan without a watcher instead of starting another.
   */
  release(state?: { unavailable: string }): void {
    const { db, root, instance } = this;
    try {
      immediate(db, () => {
        if (!this.mine()) return;
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
  }
}
