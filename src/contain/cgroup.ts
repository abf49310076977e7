// A cgroup the agent's processes cannot fork their way out of (issue 29.3): where the machine lets this
// user write the agent's cgroup (cgroup v2, the directory owned by this uid: a systemd user session's
// delegated scopes, a container's own cgroup, root), the agent's first hook moves the agent process
// into a cgroup of Latch's own,
//
//   <the agent's cgroup>/latch-<agent pid>-<agent start ticks>/agent     the agent; every process it
//                                                                          starts later is born here
//   <the agent's cgroup>/latch-<agent pid>-<agent start ticks>/hook      where the containing hook moves
//                                                                          itself before it freezes `agent`
//
// and the trip's containment freezes that group, so no member can fork or exit while the members are
// read (src/contain/kill.ts). Membership is inherited at fork and survives reparenting, a removed
// session mark, a new session (setsid) and any number of fork-and-exit hops: what a /proc scan cannot
// follow. A process leaves only by writing its pid into another cgroup's cgroup.procs, which the same
// delegation allows (docs/containment.md says so); the scan by ancestry and marks still runs beside it.
//
// Everything here returns null or a reason instead of throwing. LATCH_CGROUP=off turns it off.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { AgentInfo } from './match.js';
import { sameProcess } from './proc.js';
import { sleepSync } from '../base/clock.js';

/** The agent's group directory (absolute, under the cgroup2 mount), or why there is none. */
export type Group = { dir: string } | { none: string };

/** Where the cgroup2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid system). */
export function cgroup2Mount(): string | null {
  try {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      // "36 25 0:31 / /sys/fs/cgroup rw,… shared:9 - cgroup2 cgroup2 rw,…": the type follows " - "
      const dash = line.indexOf(' - ');
      if (dash < 0 || !line.startsWith('cgroup2 ', dash + 3)) continue;
      const fields = line.slice(0, dash).split(' ');
      if (fields[3] !== '/') continue; // a bind mount of a sub-tree: not the hierarchy's root
      return fields[4]!.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    }
  } catch {
    /* no /proc: no cgroup */
  }
  return null;
}

/** A process's cgroup v2 path (`0::/user.slice/…`), or null. */
export function cgroupOf(pid: number | 'self'): string | null {
  try {
    for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n'))
      if (line.startsWith('0::')) return line.slice(3);
  } catch {
    /* gone */
  }
  return null;
}

export const groupName = (agent: Pick<AgentInfo, 'pid' | 'start_ticks'>): string =>
  `latch-${agent.pid}-${agent.start_ticks}`;

const NAME = /^latch-(\d+)-(\d+)$/;

function writePid(dir: string, pid: number): void {
  writeFileSync(join(dir, 'cgroup.procs'), `${pid}\n`);
}

/**
 * Moves the agent into its group, once (its first hook): <its cgroup>/latch-<pid>-<start>/agent. Returns
 * the group directory, or why not (no cgroup2, a cgroup this user does not own, turned off, an error).
 * Also removes the empty groups of agents that have exited, beside it.
 */
export function enroll(agent: AgentInfo, env: NodeJS.ProcessEnv = process.env): Group {
  if (env.LATCH_CGROUP === 'off') return { none: 'LATCH_CGROUP=off' };
  const mount = cgroup2Mount();
  if (!mount) return { none: 'no cgroup v2 hierarchy is mounted' };
  const cur = cgroupOf(agent.pid);
  if (cur === null) return { none: "the agent's cgroup is unreadable" };
  const name = groupName(agent);
  const inGroup = `/${name}/agent`;
  if (cur.endsWith(inGroup)) return { dir: join(mount, cur.slice(0, -'/agent'.length)) };
  const parent = join(mount, cur);
  const refused = mayMakeRoom(mount, cur);
  if (refused) return { none: refused };
  try {
    removeDeadGroups(parent, name);
    const dir = join(parent, name);
    mkdirSync(join(dir, 'agent'), { recursive: true });
    writePid(join(dir, 'agent'), agent.pid);
    // The agent may have exited, or been replaced under its pid, meanwhile: then the group is not its.
    if (!sameProcess(agent.pid, agent.start_ticks)) return { none: 'the agent exited' };
    return { dir };
  } catch (err) {
    return { none: `cannot make the agent's cgroup: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
}

/**
 * Why Latch may not make a group inside the cgroup `path` (under `mount`), or null. It may where the
 * cgroup is delegated to this user: its directory is this uid's (systemd's user scopes, a container's
 * own cgroup, root's) and it is not a unit of systemd's system manager. Anywhere else it belongs to
 * the system's manager: left alone.
 */
export function mayMakeRoom(mount: string, path: string): string | null {
  const managed = systemdManaged(path);
  if (managed) return managed;
  try {
    if (statSync(join(mount, path)).uid !== (process.getuid?.() ?? -1)) return "the agent's cgroup is not this user's";
  } catch (err) {
    return `the agent's cgroup is unreadable: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
  return null;
}

/**
 * Why a cgroup belongs to systemd's system manager (which makes no room for sub-groups there), or null.
 * A unit's cgroup (`….slice`, `….scope`, `….service`) is left alone unless it lies in a user manager's
 * subtree (`user@UID.service`), which systemd delegates to the user whole.
 */
export function systemdManaged(path: string): string | null {
  const parts = path.split('/').filter(Boolean);
  if (parts.some((p) => /^user@\d+\.service$/.test(p))) return null;
  const unit = [...parts].reverse().find((p) => /\.(slice|scope|service)$/.test(p));
  return unit ? `the agent's cgroup is systemd's (${unit}), not delegated` : null;
}

/**
 * The agent's group, else why not. `recorded`: the group the enrolling hook made or found for this agent
 * (session_agents.cgroup), which is taken as it is while it exists: a job of the same user can move the
 * agent and plant a directory of the right name above its new cgroup (a decoy, empty), which the search
 * below would find first. Without one: the cgroup the agent is in, else its group beside one of the
 * cgroups above it.
 */
export function groupOf(agent: AgentInfo, env: NodeJS.ProcessEnv = process.env, recorded: string | null = null): Group {
  if (env.LATCH_CGROUP === 'off') return { none: 'LATCH_CGROUP=off' };
  const name = groupName(agent);
  if (recorded && basename(recorded) === name && existsSync(join(recorded, 'agent'))) return { dir: recorded };
  const mount = cgroup2Mount();
  const cur = cgroupOf(agent.pid);
  if (!mount || cur === null) return { none: 'no cgroup v2 hierarchy' };
  const tail = `/${name}/agent`;
  if (cur.endsWith(tail)) return { dir: join(mount, cur.slice(0, -'/agent'.length)) };
  // Moved out of it (a job of the same user can write the agent's pid elsewhere): its group, which
  // still holds what it started, is found beside one of the cgroups above it.
  for (let up = cur; ; up = up.slice(0, up.lastIndexOf('/')) || '/') {
    const dir = join(mount, up, name);
    if (existsSync(join(dir, 'agent'))) return { dir };
    if (up === '/' || up === '') break;
  }
  return { none: 'the agent is not in a cgroup of Latch' };
}

/**
 * Removes the groups in `parent` (but `keep`) whose agent no longer runs and which hold no process: an
 * agent's group stays, empty, after it exits, until the next agent's first hook in that cgroup (or
 * `latch uninstall`) removes it.
 */
export function removeDeadGroups(parent: string, keep = ''): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const n of names) {
    const m = NAME.exec(n);
    if (!m || n === keep || sameProcess(Number(m[1]), m[2]!)) continue;
    removeGroup(join(parent, n));
  }
}

/** rmdir of a group's sub-groups and the group (each fails, harmlessly, while it holds a process). */
export function removeGroup(dir: string): void {
  for (const sub of ['hook', 'agent']) {
    try {
      rmdirSync(join(dir, sub));
    } catch {
      /* absent, or still populated */
    }
  }
  try {
    rmdirSync(dir);
  } catch {
    /* still populated */
  }
}

/** Every pid in the cgroup and its descendants (as this process's pid namespace numbers them). */
export function members(dir: string): number[] {
  const out: number[] = [];
  const walk = (d: string) => {
    try {
      for (const line of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) {
        const pid = Number(line);
        if (pid > 0) out.push(pid);
      }
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    } catch {
      /* removed meanwhile */
    }
  };
  walk(dir);
  return out;
}

/**
 * Freezes (or thaws) a cgroup and waits, up to `waitMs`, until the kernel says it is (cgroup.events
 * `frozen 1`). A frozen member cannot run, fork or exit; SIGKILL still ends it. Returns null, or why it
 * did not (the write failed, or the group did not settle in time: a member in uninterruptible sleep).
 */
export function setFrozen(dir: string, frozen: boolean, waitMs = 1000): string | null {
  try {
    writeFileSync(join(dir, 'cgroup.freeze'), frozen ? '1' : '0');
  } catch (err) {
    return `cgroup.freeze: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
  if (!frozen) return null;
  const end = Date.now() + waitMs;
  for (;;) {
    try {
      if (/^frozen 1$/m.test(readFileSync(join(dir, 'cgroup.events'), 'utf8'))) return null;
    } catch (err) {
      return `cgroup.events: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
    }
    if (Date.now() >= end) return `not frozen after ${waitMs} ms`;
    sleepSync(1);
  }
}

/**
 * Moves this process out of the group's `agent` part (into its `hook` part), so that freezing the
 * agent's processes does not freeze the process doing it. Null, or why not.
 */
export function leave(dir: string, self: number): string | null {
  try {
    mkdirSync(join(dir, 'hook'), { recursive: true });
    writePid(join(dir, 'hook'), self);
    return null;
  } catch (err) {
    return `cannot leave the agent's cgroup: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
}

/** Does the group (with its sub-groups) hold no process any more? */
export function empty(dir: string): boolean {
  try {
    return /^populated 0$/m.test(readFileSync(join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return true;
  }
}

/** The `agent` parts of Latch's groups in `parent` that are frozen now (a containment running, or one that died). */
export function frozenGroups(parent: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return out;
  }
  for (const n of names) {
    if (!NAME.test(n)) continue;
    try {
      if (readFileSync(join(parent, n, 'agent', 'cgroup.freeze'), 'utf8').trim() === '1')
        out.push(join(parent, n, 'agent'));
    } catch {
      /* removed meanwhile */
    }
  }
  return out;
}

/** removeDeadGroups in this process's own cgroup (`latch uninstall`: where the agents it ran were). */
export function removeDeadGroupsHere(): void {
  const mount = cgroup2Mount();
  const own = cgroupOf('self');
  if (mount && own !== null) removeDeadGroups(join(mount, own));
}
