// Write-ahead compaction announcements. A compaction hook (PreCompact, SessionStart(compact),
// PostCompact) must never block, so when it cannot record its observation (the store's write lock
// held by a process the agent left running, the hook killed) the agents carry on (they fail open)
// and, on Claude Code, the transcript shows the compaction only by the turn's end. So the hook's
// first act, before it opens the store, is to create one small file here:
//
//   $LATCH_HOME/announced/<session key>.<source>.<ms>.<pid>.<random>
//
// (0700 directory, ours and not a link, present only while announcements wait; 0600 file,
// O_CREAT|O_EXCL: an atomic create, nothing overwritten, no symlink followed). Its name alone says what was observed, for which session and when; the content (the
// trigger, the turn) is only a detail. The hook that counts it (this one, or any later hook of the
// session: guard.ts ingests pending announcements in the transaction that records everything else)
// records the name in the store's `announcements` table, and removes the file only after that
// transaction committed; a file whose name is already recorded is only removed. This is a journal of
// observations, not a lock: nothing waits on it.
//
// What it does not cover (ARCHITECTURE.md, "The boundary", 8): a hook killed before the create, and
// a file deleted by a process the agent left running, between the create and the count.
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  rmdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { nodeCrypto } from '../base/lazy.js';
import { errorMessage } from '../base/errors.js';

export type AnnouncedSource = 'pre_compact' | 'post_compact' | 'session_start';

const SOURCES: ReadonlySet<string> = new Set<AnnouncedSource>(['pre_compact', 'post_compact', 'session_start']);

export interface Announcement {
  /** The file's name (the key in the store's `announcements` table). */
  id: string;
  source: AnnouncedSource;
  /** When the hook announced it (from the name), ISO; null when the name does not say (counted as now). */
  at: string | null;
  trigger: string | null;
  turnId: string | null;
}

export interface PendingAnnouncements {
  list: Announcement[];
  /** Why the directory could not be read: a tracked call is then denied (a compaction may be unseen). */
  problem: string | null;
}

export function announcedDir(home: string): string {
  return join(home, 'announced');
}

/** The session's prefix in file names: the id itself when it is a plain word, else a hash of it. */
export function sessionKey(sessionId: string): string {
  if (/^[A-Za-z0-9_-]{1,100}$/.test(sessionId)) return `s${sessionId}`;
  return `h${nodeCrypto().createHash('sha256').update(sessionId).digest('hex').slice(0, 40)}`;
}

function uid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * Null when `dir` is a directory of ours (not a link); 'absent' when there is none; else why it
 * cannot be trusted. (No exception for an absent directory: on the hot path a thrown ENOENT costs
 * more than the lstat.)
 */
function dirProblem(dir: string): string | null {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st) return 'absent';
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a directory`;
  const me = uid();
  if (me !== undefined && st.uid !== me) return `${dir} is owned by uid ${st.uid}, not by you (uid ${me})`;
  return null;
}

/**
 * Creates the announcement (the hook's first act, before the store). Returns its id, or why it could
 * not be created (the hook then records its observation directly, as before).
 */
export function announce(
  home: string,
  sessionId: string,
  source: AnnouncedSource,
  detail: { trigger: string | null; turnId: string | null },
  nowMs: number = Date.now(),
): { id: string } | { error: string } {
  const dir = announcedDir(home);
  try {
    const rand = Math.random().toString(36).slice(2, 10).padEnd(8, '0');
    const id = `${sessionKey(sessionId)}.${source}.${Math.trunc(nowMs)}.${process.pid}.${rand}`;
    let fd: number | null = null;
    // The directory exists only while announcements wait (the last hook to empty it removes it): a
    // second try when another hook removed it between the check and the create.
    for (let attempt = 0; fd === null; attempt++) {
      let bad = dirProblem(dir);
      if (bad === 'absent') {
        try {
          mkdirSync(dir, { mode: 0o700 });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
        bad = dirProblem(dir);
      }
      if (bad) return { error: bad === 'absent' ? `${dir} cannot be created` : bad };
      try {
        // O_EXCL: never an existing file, never through a symbolic link.
        fd = openSync(join(dir, id), 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 2) throw err;
      }
    }
    try {
      const body = JSON.stringify({
        v: 1,
        session_id: sessionId,
        source,
        trigger: detail.trigger,
        turn_id: detail.turnId,
      });
      writeSync(fd, `${body}\n`);
    } finally {
      closeSync(fd);
    }
    return { id };
  } catch (err) {
    return { error: `cannot announce the compaction in ${dir} (${errorMessage(err)})` };
  }
}

/** The session's announcements not yet removed, oldest first: one lstat (and a readdir when there are any). */
export function pendingAnnouncements(home: string, sessionId: string): PendingAnnouncements {
  const dir = announcedDir(home);
  let names: string[];
  try {
    const bad = dirProblem(dir);
    if (bad === 'absent') return { list: [], problem: null };
    if (bad) return { list: [], problem: `the compaction announcements cannot be trusted: ${bad}` };
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { list: [], problem: null };
    return {
      list: [],
      problem: `the compaction announcements in ${dir} cannot be read (${errorMessage(err)})`,
    };
  }
  if (names.length === 0) return { list: [], problem: null };
  const prefix = `${sessionKey(sessionId)}.`;
  const mine = names.filter((id) => id.startsWith(prefix));
  // Each one is counted as a compaction in the hook's transaction: more than a session can have made
  // would only run the hook into the agent's timeout (which lets a Codex call through).
  if (mine.length > MAX_PENDING)
    return { list: [], problem: `${mine.length} compaction announcements wait for this session in ${dir}` };
  const list = mine.map((id) => parse(dir, id, id.slice(prefix.length), sessionId));
  const ms = (a: Announcement) => (a.at === null ? Number.POSITIVE_INFINITY : Date.parse(a.at));
  return { list: list.sort((a, b) => ms(a) - ms(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), problem: null };
}

/** More announcements than this for one session are no compactions: tracked calls are denied. */
const MAX_PENDING = 64;

/**
 * An announcement's content, at most 4 KiB, from a regular file only: opened without following a
 * link and without blocking (a FIFO or a device put there by the agent must not stall the hook).
 */
function readSmall(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) return '';
    const buf = Buffer.alloc(4096);
    return buf.toString('utf8', 0, readSync(fd, buf, 0, buf.length, 0));
  } finally {
    closeSync(fd);
  }
}

/**
 * One file of the session. A name that does not parse is still the session's (it carries its key):
 * it is counted as a post-compaction announcement made now (fail closed: a forger latches itself).
 */
function parse(dir: string, id: string, rest: string, sessionId: string): Announcement {
  const [source = '', msText = ''] = rest.split('.');
  const ms = /^\d{1,15}$/.test(msText) && Number(msText) <= 8.64e15 ? Number(msText) : Number.NaN;
  const known = SOURCES.has(source);
  let trigger: string | null = null;
  let turnId: string | null = null;
  try {
    const body = JSON.parse(readSmall(join(dir, id))) as Record<string, unknown>;
    if (body.session_id === sessionId) {
      if (typeof body.trigger === 'string') trigger = body.trigger.slice(0, 64);
      if (typeof body.turn_id === 'string') turnId = body.turn_id.slice(0, 200);
    }
  } catch {
    // the name is what counts; the content is only a detail
  }
  return {
    id,
    source: known ? (source as AnnouncedSource) : 'post_compact',
    at: known && Number.isFinite(ms) ? new Date(ms).toISOString() : null,
    trigger,
    turnId,
  };
}

/**
 * Removes announcements once the store has them (after the transaction committed), then the directory
 * if that left it empty (rmdir fails on a directory that is not: an announcement made meanwhile
 * stays), so that the usual check on the hot path is one lstat of nothing. Never throws.
 */
export function removeAnnouncements(home: string, ids: Iterable<string>): void {
  const dir = announcedDir(home);
  for (const id of ids) {
    try {
      unlinkSync(join(dir, id));
    } catch {
      // already gone, or left for the next hook (it finds the id recorded and removes the file)
    }
  }
  try {
    if (dirProblem(dir) === null) rmdirSync(dir);
  } catch {
    // not empty (another announcement), or gone already
  }
}
