// The watcher's sentry (issue 29.2): a compaction is seen even when every hook of the agent is killed.
//
// Codex and Claude Code run a tool call whose PreToolUse hook was killed by a signal (docs/hook-failures.md),
// so a job the agent left running while it could still write, one that kills each Latch hook as it
// appears, would let the agent write on after a compaction: no hook completes to count it. The
// workspace watcher is a Latch process of its own (started by a hook, recorded in the store, spared by
// containment by that record), so it keeps an eye on the transcript of every mutable session of its
// workspace whose agent still runs, and on the compaction announcements the hooks write before anything
// else (src/session/announce.ts). When one grows, it runs the guard's out-of-band look (probeSession in
// src/guard/guard.ts): the same counting a hook does, the same trip, and the containment, started from
// the agent process the session's hooks recorded (session_agents) and its cgroup. The trip is then in
// the store: the next hook that completes denies.
//
// What it does not cover: a job that kills the watcher too (it is the user's process, as the agent is:
// the managed install of issue 26 is what puts Latch out of the agent's reach), a workspace too big to
// watch (the watcher gives up above LATCH_WATCH_MAX_DIRS), LATCH_WATCH=off, and a session whose agent
// its hooks never recorded (it is not watched). LATCH_SENTRY=off turns it off.
import { existsSync, type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import { isoTime } from '../base/clock.js';
import { announcedDir, sessionKey } from '../session/announce.js';
import { openStore, type Db } from '../store/store.js';

/**
 * How long after a change the look runs. The agent's own hooks count a compaction within a moment of its
 * transcript line when they run (and tell the human: the trip notice is the hook's); the look is for
 * when they do not, so it leaves them that moment. LATCH_SENTRY_SETTLE_MS overrides it.
 */
const SETTLE_MS = 2000;

function settleMs(): number {
  const n = Number(process.env.LATCH_SENTRY_SETTLE_MS);
  return Number.isFinite(n) && n >= 0 && n <= 60_000 ? n : SETTLE_MS;
}

interface Watched {
  path: string;
  agent: string;
  handle: FSWatcher | null;
}

interface Row {
  session_id: string;
  agent: string;
  transcript_path: string;
  transcript_offset: number;
  pid: number;
  start_ticks: string;
}

export class Sentry {
  private readonly sessions = new Map<string, Watched>();
  private announced: FSWatcher | null = null;
  private db: Db | null = null;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private closed = false;
  constructor(
    private readonly home: string,
    private readonly root: string,
    private readonly isLive: (pid: number, start: string) => boolean,
  ) {}

  /** Does a session of this workspace need the watcher to stay (its agent runs)? */
  watching(): boolean {
    return this.sessions.size > 0;
  }

  /**
   * The mutable sessions of the workspace whose recorded agent runs: each transcript watched, the rest
   * let go. Called at the watcher's start and at each housekeeping turn; a look follows when any
   * transcript or announcement may hold something new.
   */
  refresh(): void {
    if (this.closed) return;
    let rows: Row[];
    try {
      rows = this.store()
        .prepare(
          `SELECT s.session_id, s.agent, s.transcript_path, s.transcript_offset, a.pid, a.start_ticks
             FROM sessions s JOIN session_agents a ON a.session_id = s.session_id
            WHERE s.workspace = ? AND s.state = 'mutable' AND s.transcript_path IS NOT NULL`,
        )
        .all(this.root) as Row[];
    } catch {
      return; // the store is busy or gone: the next turn looks again (a gone store stops the watcher)
    }
    const keep = new Set<string>();
    let pending = false;
    for (const r of rows) {
      if (!this.isLive(r.pid, r.start_ticks)) continue;
      keep.add(r.session_id);
      const cur = this.sessions.get(r.session_id);
      if (!cur || cur.path !== r.transcript_path || !cur.handle) {
        cur?.handle?.close();
        this.sessions.set(r.session_id, {
          path: r.transcript_path,
          agent: r.agent,
          handle: this.watchFile(r.transcript_path),
        });
      }
      pending ||= sizeOf(r.transcript_path) !== r.transcript_offset;
    }
    for (const [id, w] of this.sessions)
      if (!keep.has(id)) {
        w.handle?.close();
        this.sessions.delete(id);
      }
    if (this.sessions.size > 0 && !this.announced) this.announced = this.watchFile(announcedDir(this.home));
    if (this.sessions.size === 0 && this.announced) {
      this.announced.close();
      this.announced = null;
    }
    if (pending || this.announcementsWait()) this.kick();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.sessions.values()) w.handle?.close();
    this.sessions.clear();
    this.announced?.close();
    this.announced = null;
    try {
      this.db?.close();
    } catch {
      /* closed */
    }
    this.db = null;
  }

  private store(): Db {
    this.db ??= openStore(this.home, { create: false, busyTimeoutMs: 2000 });
    return this.db;
  }

  private watchFile(path: string): FSWatcher | null {
    if (!existsSync(path)) return null;
    try {
      const w = watch(path, { persistent: false }, () => this.kick());
      w.on('error', () => {
        w.close();
        for (const s of this.sessions.values()) if (s.handle === w) s.handle = null;
        if (this.announced === w) this.announced = null;
      });
      return w;
    } catch {
      return null;
    }
  }

  private announcementsWait(): boolean {
    let names: string[];
    try {
      names = readdirSync(announcedDir(this.home));
    } catch {
      return false;
    }
    for (const id of this.sessions.keys()) {
      const prefix = `${sessionKey(id)}.`;
      if (names.some((n) => n.startsWith(prefix))) return true;
    }
    return false;
  }

  /**
   * A look once the settle time has passed since the first change not looked at (a transcript that keeps
   * growing does not postpone it); one at a time, and one more after it when asked meanwhile.
   */
  kick(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.look();
    }, settleMs());
  }

  private async look(): Promise<void> {
    if (this.closed || this.running) return;
    this.running = true;
    this.again = false;
    try {
      const [{ probeSession }, { loadAgent }] = await Promise.all([
        import('../guard/guard.js'),
        import('../agents/index.js'),
      ]);
      for (const [id, w] of [...this.sessions]) {
        if (this.closed) break;
        // One session's failure (the store busy past its timeout) does not keep the others unseen; it
        // is looked at again at the next change or housekeeping turn (its transcript is still ahead of
        // the scan).
        try {
          const agent = await loadAgent(w.agent);
          if (!agent) continue;
          const db = this.store();
          const d = await probeSession(
            { home: this.home, openDb: () => db, closeDb: () => {}, now: isoTime, agent },
            id,
          );
          // Latched or paused: nothing more for the watcher to see in that session.
          if (d.state !== null && d.state !== 'mutable') {
            w.handle?.close();
            this.sessions.delete(id);
          }
        } catch {
          /* again later */
        }
      }
    } catch {
      /* the modules did not load: again later */
    } finally {
      this.running = false;
    }
    if (this.again && !this.closed) this.kick();
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return -1;
  }
}
