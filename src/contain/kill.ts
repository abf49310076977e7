// Stopping and ending: contain() SIGSTOPs every candidate (so none can fork), rescans until no new
// candidate appears (at most MAX_ROUNDS), then ends them: SIGTERM and SIGCONT, so each may run its
// exit handlers (a tool's lock file: a `pyenv rehash` killed outright leaves its shim lock behind and
// every login shell on the machine then hangs a minute), and after GRACE_MS a SIGKILL for whatever
// still runs, and for anything forked meanwhile (one more scan). Each signal re-reads the process's
// start time first (pid reuse); the remaining race between that read and kill(2) is microseconds
// (Node has no pidfd).
//
// Where the agent is in a cgroup of Latch's own (src/contain/cgroup.ts), the stopping and the
// last kill happen while that group is frozen: first this process leaves it, then the group is frozen,
// so no member can fork or exit while the candidates are read and stopped; it is thawed for the grace
// (the stopped candidates stay stopped until SIGTERM and SIGCONT), frozen again for the last scan and
// the SIGKILLs, and thawed. Whatever a candidate forked, at any speed, was born in the group and is in
// its member list: a job that forks its successor and exits cannot outrun that.
import { join } from 'node:path';
import { leave, setFrozen } from './cgroup.js';
import { type AgentInfo, findAgent } from './match.js';
import { bootNs, procSelfPid, procSupported, sameProcess, wallNs } from './proc.js';
import {
  type Candidate,
  type ContainResult,
  type Found,
  NO_AGENT,
  type ScanInput,
  scanOnce,
  toCandidate,
  unsupported,
} from './scan.js';
import { monoMs, sleepSync } from '../base/clock.js';

const MAX_ROUNDS = 8;
/** How long a stopped candidate may run its exit handlers after SIGTERM before SIGKILL. */
const GRACE_MS = 500;

function signal(pid: number, startTicks: string, sig: NodeJS.Signals): 'ok' | 'gone' | string {
  if (pid <= 1 || pid === process.pid || pid === procSelfPid()) return 'refused';
  if (!sameProcess(pid, startTicks)) return 'gone';
  try {
    process.kill(pid, sig);
    return 'ok';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return code === 'ESRCH' ? 'gone' : code;
  }
}

/** Stops, then kills, every candidate. Never throws; never signals this process, its ancestors, PID 1 or another uid. */
export function contain(input: ScanInput): ContainResult {
  const t0 = monoMs();
  if (!procSupported()) return unsupported(t0);
  const errors: string[] = [];
  const notes: string[] = [];
  const stopped = new Map<number, Found & { action: string }>();
  let agent: AgentInfo | null = null;
  let rounds = 0;
  let frozen: string | null = null;
  const spared = new Map<number, { pid: number; cmdline: string; why: string }>();
  const result = (candidates: Candidate[], n: number): ContainResult => ({
    supported: true,
    notes,
    agent,
    candidates,
    spared: [...spared.values()],
    rounds: n,
    ms: monoMs() - t0,
    errors,
  });
  try {
    const boot = bootNs();
    const containStart = wallNs();
    agent = input.agent !== undefined ? input.agent : findAgent(input.self ?? procSelfPid(), boot);
    if (!agent) notes.push(NO_AGENT);
    // The agent's cgroup, frozen while its members are read and stopped (null: scan /proc alone).
    frozen = agent && input.group ? freezeGroup(input.group, notes) : null;
    if (!frozen) input = { ...input, group: null };
    const listed = new Map<number, Found>();
    for (rounds = 1; rounds <= MAX_ROUNDS; rounds++) {
      const { found } = scanOnce(input, agent, boot, containStart, spared, listed);
      let fresh = 0;
      for (const f of found.values()) {
        if (stopped.has(f.proc.pid)) continue;
        fresh++;
        // cmdline/exe are read before the stop (a stopped process's /proc entries stay readable anyway)
        const r = signal(f.proc.pid, f.proc.startTicks, 'SIGSTOP');
        stopped.set(f.proc.pid, { ...f, action: r === 'ok' ? 'stopped' : r === 'gone' ? 'gone' : `stop_failed: ${r}` });
      }
      if (fresh === 0) break;
    }
    if (rounds > MAX_ROUNDS) notes.push(`new candidates still appeared after ${MAX_ROUNDS} rounds`);
    // Thawed for the grace: the candidates are stopped, the agent and its hooks go on.
    if (frozen) thaw(frozen, notes);
    // The stopped candidates as they are now (cmdline and exe read while they still exist).
    const ended = new Map<number, Candidate>();
    for (const f of stopped.values()) ended.set(f.proc.pid, toCandidate(f, f.action));
    // A chance to clean up: SIGTERM, then SIGCONT (a stopped process handles TERM once continued).
    const terminated: Found[] = [];
    for (const f of stopped.values()) {
      if (f.action !== 'stopped') continue;
      if (signal(f.proc.pid, f.proc.startTicks, 'SIGTERM') === 'ok') terminated.push(f);
      signal(f.proc.pid, f.proc.startTicks, 'SIGCONT');
    }
    const end = monoMs() + GRACE_MS;
    while (terminated.some((f) => sameProcess(f.proc.pid, f.proc.startTicks)) && monoMs() < end) sleepSync(10);
    // What a handler forked meanwhile: found by one more scan (the group frozen again: complete), killed
    // with the rest.
    if (frozen && setFrozen(frozen, true) !== null) notes.push('the cgroup did not freeze again for the last scan');
    const { found: late } = scanOnce(input, agent, boot, containStart, spared, listed);
    for (const f of late.values()) {
      if (stopped.has(f.proc.pid)) continue;
      stopped.set(f.proc.pid, { ...f, action: 'stopped' });
      ended.set(f.proc.pid, toCandidate(f, 'stopped'));
    }
    const candidates: Candidate[] = [];
    for (const f of stopped.values()) {
      const c = ended.get(f.proc.pid)!;
      if (f.action !== 'gone') {
        const r = signal(f.proc.pid, f.proc.startTicks, 'SIGKILL');
        c.action =
          r === 'ok' ? 'killed' : r === 'gone' ? (terminated.includes(f) ? 'terminated' : 'gone') : `kill_failed: ${r}`;
        if (r !== 'ok' && r !== 'gone') errors.push(`pid ${f.proc.pid}: SIGKILL failed (${r})`);
      }
      candidates.push(c);
    }
    if (frozen) thaw(frozen, notes);
    frozen = null;
    // Orphans of a window without the session's mark: maybe the user's (a job started from another
    // shell while the agent's call ran). Listed for the human, never signalled.
    for (const f of listed.values()) if (!stopped.has(f.proc.pid)) candidates.push(toCandidate(f, 'listed'));
    return result(candidates, Math.min(rounds, MAX_ROUNDS));
  } catch (err) {
    if (frozen) thaw(frozen, notes);
    // Whatever was stopped must not stay stopped half-way: kill it.
    const candidates: Candidate[] = [];
    for (const f of stopped.values()) {
      const r = signal(f.proc.pid, f.proc.startTicks, 'SIGKILL');
      candidates.push({
        pid: f.proc.pid,
        start_ticks: f.proc.startTicks,
        start_ns: f.proc.startNs.toString(),
        cmdline: '',
        exe: null,
        why: f.why,
        attempt_id: f.attempt,
        action: r === 'ok' ? 'killed' : r,
      });
    }
    errors.push(String((err as Error)?.message ?? err));
    return result(candidates, rounds);
  }
}

/**
 * Leaves the agent's group and freezes its `agent` part. Returns that part's directory, or null (with a
 * note) when either fails: then containment scans /proc alone, as where no group exists.
 */
function freezeGroup(group: string, notes: string[]): string | null {
  const left = leave(group, process.pid);
  if (left) {
    notes.push(`${left}: scanned without freezing`);
    return null;
  }
  const part = join(group, 'agent');
  const why = setFrozen(part, true);
  if (why === null) return part;
  if (why.startsWith('not frozen')) {
    // A member in uninterruptible sleep holds the group back; the rest is frozen and stays so.
    notes.push(`the agent's cgroup ${why}; contained with the rest frozen`);
    return part;
  }
  notes.push(`${why}: scanned without freezing`);
  return null;
}

function thaw(part: string, notes: string[]): void {
  const why = setFrozen(part, false);
  if (why)
    notes.push(
      `could not thaw the agent's cgroup (${why}): its processes stay frozen until \`echo 0 > ${part}/cgroup.freeze\``,
    );
}
