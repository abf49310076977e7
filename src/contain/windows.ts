// Attempt windows and exclusions from the store: when a tool call may have started a process (each
// attempt's start - 50 ms to its end + 2 s) and which processes are Latch's own watchers.
import type { Db } from '../store/store.js';
import { bootNs, wallNs } from './proc.js';

export const WINDOW_BEFORE_NS = 50_000_000n;
export const WINDOW_AFTER_NS = 2_000_000_000n;

export interface AttemptWindow {
  id: string;
  session_id: string;
  from: bigint;
  to: bigint;
}

/**
 * Windows of every attempt (of `workspace`, or all) that may hold a live process's start. An untimed
 * attempt (started_ns 0: a PostToolUse without its Start) has no window, and no window opens before
 * its session was first seen or before the boot: a bogus start must never make every orphan since
 * then a candidate.
 */
export function attemptWindows(db: Db, opts: { workspace?: string | null; sinceNs?: bigint } = {}): AttemptWindow[] {
  const now = wallNs();
  const since = (opts.sinceNs ?? 0n) - WINDOW_AFTER_NS;
  const boot = bootNs();
  const rows = db
    .prepare(
      `SELECT a.id, a.session_id, a.started_ns, a.closing_ns, a.ended_ns, s.created_at FROM attempts a LEFT JOIN sessions s ON s.session_id = a.session_id
       WHERE (? IS NULL OR a.workspace = ?) AND (a.ended_ns IS NULL OR CAST(a.ended_ns AS INTEGER) >= ?)`,
    )
    .all(opts.workspace ?? null, opts.workspace ?? null, since.toString()) as {
    id: string;
    session_id: string;
    started_ns: string;
    closing_ns: string | null;
    ended_ns: string | null;
    created_at: string | null;
  }[];
  const out: AttemptWindow[] = [];
  for (const r of rows) {
    try {
      const start = BigInt(r.started_ns);
      if (start <= 0n) continue;
      const created = r.created_at ? Date.parse(r.created_at) : NaN;
      const floor = Number.isFinite(created) ? BigInt(created) * 1_000_000n - 1_000_000_000n : boot;
      const from = start - WINDOW_BEFORE_NS;
      const end = r.ended_ns && BigInt(r.ended_ns) > 0n ? BigInt(r.ended_ns) : now;
      const w = { id: r.id, session_id: r.session_id, from: from > floor ? from : floor, to: end + WINDOW_AFTER_NS };
      if (w.from < boot || w.from > w.to) continue;
      out.push(w);
    } catch {
      /* a malformed row is no window */
    }
  }
  return out;
}

export function windowOf(windows: readonly AttemptWindow[], ns: bigint): AttemptWindow | null {
  for (const w of windows) if (ns >= w.from && ns <= w.to) return w;
  return null;
}

/** `pid:pid_start` of the watchers the store knows (none when it cannot say). */
export function watcherIds(db: Db): Set<string> {
  try {
    const rows = db.prepare('SELECT pid, pid_start FROM watchers').all() as { pid: number; pid_start: string }[];
    return new Set(rows.map((r) => `${r.pid}:${r.pid_start}`));
  } catch {
    return new Set();
  }
}
