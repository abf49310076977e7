// The watcher's journal: the paths that may have changed since the last flush, kept in memory as the
// events come (intake.ts), and flushed to watch_journal (one transaction, with watchers.flushed_seq)
// when a hook asks for a sync (daemon.ts).
import { immediate } from '../store/store.js';
import { now, type Lease } from './lease.js';

export type JournalKind = 'c' | 'r' | 'g';

/** Distinct paths kept in memory between two flushes before the watcher journals "observe everything" instead. */
const MAX_PENDING = 100_000;

export class Journal {
  private readonly pending = new Map<string, JournalKind>();
  /** Coverage may have been lost: the next flush journals a NULL path (the next observation stats everything). */
  lost = false;
  private flushedSeq = 0;

  constructor(private readonly lease: Lease) {}

  record(rel: string, kind: JournalKind): void {
    const pending = this.pending;
    const had = pending.get(rel);
    if (had === undefined || (had === 'c' && kind !== 'c')) pending.set(rel, kind);
    if (pending.size > MAX_PENDING) {
      pending.clear();
      this.lost = true;
    }
  }

  /**
   * Writes what was recorded since the last flush as the next seq (`dirs`: how many directories are
   * watched, for the row). 'busy': the store is busy, the paths are kept for the next flush (the
   * waiting hook times out and scans everything); 'replaced': another instance has the row.
   */
  flush(dirs: number): 'ok' | 'busy' | 'replaced' {
    if (this.pending.size === 0 && !this.lost) return 'ok';
    const { db, root, instance } = this.lease;
    try {
      immediate(db, () => {
        if (!this.lease.mine()) throw new Error('replaced');
        const seq = this.flushedSeq + 1;
        const ins = db.prepare(
          'INSERT INTO watch_journal (workspace, instance, seq, path, kind) VALUES (?, ?, ?, ?, ?)',
        );
        if (this.lost) ins.run(root, instance, seq, null, 'r');
        else for (const [rel, kind] of this.pending) ins.run(root, instance, seq, rel, kind);
        db.prepare(
          'UPDATE watchers SET flushed_seq = ?, dirs = ?, updated_at = ? WHERE workspace = ? AND instance = ?',
        ).run(seq, dirs, now(), root, instance);
        this.flushedSeq = seq;
      });
    } catch (err) {
      return err instanceof Error && err.message === 'replaced' ? 'replaced' : 'busy';
    }
    this.pending.clear();
    this.lost = false;
    return 'ok';
  }
}
