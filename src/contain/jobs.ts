// Who could have changed a file: an agent, or only the human (issue 23, "a human's edit is not an
// attack"). Asked once per registration change (src/tamper/check.ts), never on the hot path.
//
// A change is the agent's possible doing when
//   - the file's ctime (which no process can set back) lies inside an attempt window of any session
//     of any workspace (a tool call was running: src/contain/windows.ts), or
//   - a process started inside such a window, before the change, that carries a session's mark (an
//     environment value that is the id of a session the store knows, in any variable an agent names
//     as its mark: Agent.sessionMarks), still runs: a job a tool call left behind,
//     which could have made the change later, outside every window. Latch's own watchers (their
//     store rows) and resident hooks (`spare`: the identities their spawning hooks recorded), and
//     this process's ancestors and descendants, are not jobs. An unmarked process started in a
//     window is the user's as far as Latch can tell (as containment treats it).
// Otherwise no tool call ran and no job of one was alive when the file changed: the human made it.
// What the agent can still do: a job that changes the file outside every window and exits at once, or
// one that removed its mark, reads as the human's change. That buys it nothing: the change is still refused (every tracked call
// denied) until the human re-records it with `latch setup`, which shows what changed.
import { lstatSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Db } from '../store/store.js';
import {
  ancestry,
  bootNs,
  cmdlineText,
  argvOf,
  environOf,
  isLive,
  procSelfPid,
  procSupported,
  snapshot,
} from './proc.js';
import { attemptWindows, watcherIds, windowOf } from './windows.js';

/** /proc start times are in ticks of 10 ms: a process that started this close after a change may predate it. */
const START_SLACK_NS = 20_000_000n;

export type ChangeOrigin = { origin: 'human' } | { origin: 'agent'; why: string };

/** The ctime of `path`, or of its directory when it is gone (a removal moves the directory's). */
function changedAt(path: string): bigint | null {
  for (const p of [path, dirname(path)]) {
    try {
      return lstatSync(p, { bigint: true }).ctimeNs;
    } catch {
      /* try the directory */
    }
  }
  return null;
}

/**
 * Could an agent have made the change to `paths`? Reads the store's attempt windows (every workspace)
 * and /proc. Never throws: where it cannot tell (no /proc, a file with no time), the answer is `agent`.
 */
export function changeOrigin(
  db: Db,
  paths: readonly string[],
  opts: { self?: number; spare?: ReadonlySet<string> } = {},
): ChangeOrigin {
  const self = opts.self ?? procSelfPid();
  try {
    if (paths.length === 0) return { origin: 'agent', why: 'no changed file to time' };
    if (!procSupported()) return { origin: 'agent', why: 'no /proc to look for jobs of tool calls' };
    const boot = bootNs();
    const windows = attemptWindows(db, { sinceNs: boot });
    const times: bigint[] = [];
    for (const p of paths) {
      const t = changedAt(p);
      if (t === null) return { origin: 'agent', why: `${p} has no change time` };
      const w = windowOf(windows, t);
      if (w) return { origin: 'agent', why: `${p} changed during attempt ${w.id} of session ${w.session_id}` };
      times.push(t);
    }
    const last = times.reduce((a, b) => (b > a ? b : a));
    const snap = snapshot(boot);
    const uid = process.getuid?.() ?? -1;
    const mine = new Set<number>(ancestry(self, boot).map((p) => p.pid));
    const stack = [self];
    while (stack.length) {
      for (const c of snap.children.get(stack.pop()!) ?? []) if (!mine.has(c)) mine.add(c), stack.push(c);
    }
    const watchers = watcherIds(db);
    const sessions = new Set(db.prepare('SELECT session_id FROM sessions').pluck().all() as string[]);
    const marked = (pid: number): boolean => {
      for (const v of environOf(pid)?.values() ?? []) if (sessions.has(v)) return true;
      return false;
    };
    for (const p of snap.procs.values()) {
      if (p.uid !== uid || mine.has(p.pid) || p.ppid === 2 || p.pid <= 2 || !isLive(p)) continue;
      const id = `${p.pid}:${p.startTicks}`;
      if (watchers.has(id) || opts.spare?.has(id)) continue;
      if (p.startNs > last + START_SLACK_NS) continue;
      const w = windowOf(windows, p.startNs);
      if (w && marked(p.pid))
        return {
          origin: 'agent',
          why: `pid ${p.pid} (${cmdlineText(argvOf(p.pid), 80)}), started during attempt ${w.id} of session ${w.session_id}, still runs`,
        };
    }
    return { origin: 'human' };
  } catch (err) {
    return { origin: 'agent', why: `could not tell (${(err as Error)?.message ?? String(err)})` };
  }
}
