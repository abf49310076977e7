// The candidate scan: which processes containment would stop (the agent's descendants but its hooks
// and helpers; orphans started inside an attempt window that carry the session's mark, with their
// trees), which it only lists (orphans of a window without the mark: maybe the user's), and the result
// types. listCandidates() lists them without signalling anything.
import {
  type AgentInfo,
  findAgent,
  isHookProcess,
  isHookStage,
  isReaperExe,
  latchEntries,
  sameDangerEnv,
} from './match.js';
import {
  environOf,
  ancestry,
  isLive,
  argvOf,
  bootNs,
  cmdlineText,
  exeOf,
  procSelfPid,
  procSupported,
  type Proc,
  type Snapshot,
  snapshot,
} from './proc.js';
import { type AttemptWindow, windowOf } from './windows.js';
import { members } from './cgroup.js';
import { join } from 'node:path';
import { monoMs } from '../base/clock.js';

export type Why =
  | 'agent_descendant'
  | 'agent_cgroup'
  | 'orphan_of_attempt'
  | 'orphan_during_containment'
  | 'orphan_unmarked';

export interface Candidate {
  pid: number;
  start_ticks: string;
  start_ns: string;
  cmdline: string;
  exe: string | null;
  why: Why;
  attempt_id: string | null;
  /** stopped | killed | gone (exited before a signal) | stop_failed | kill_failed | listed */
  action: string;
}

export interface ContainResult {
  supported: boolean;
  /** 'unsupported: …' on other platforms; the agent's absence; errors. */
  notes: string[];
  agent: AgentInfo | null;
  candidates: Candidate[];
  /** Processes deliberately not signalled and why (hooks, helpers, watchers), for the record. */
  spared: { pid: number; cmdline: string; why: string }[];
  rounds: number;
  ms: number;
  errors: string[];
}

/** The note when no agent process is among the ancestors. */
export const NO_AGENT = 'no agent process among the ancestors: only orphans of attempt windows are candidates';

/** The result on a platform without /proc. */
export function unsupported(t0: number): ContainResult {
  return {
    supported: false,
    notes: [
      `unsupported: process containment needs Linux /proc (platform ${process.platform}); processes started before the latch were not stopped`,
    ],
    agent: null,
    candidates: [],
    spared: [],
    rounds: 0,
    ms: monoMs() - t0,
    errors: [],
  };
}

/** The result when the scan itself failed: nothing listed or signalled, the error as data. */
export function failed(t0: number, err: unknown): ContainResult {
  return {
    supported: true,
    notes: [],
    agent: null,
    candidates: [],
    spared: [],
    rounds: 0,
    ms: monoMs() - t0,
    errors: [String((err as Error)?.message ?? err)],
  };
}

export interface ScanInput {
  /** Process to start from (default: this process). Its ancestors are never candidates. */
  self?: number;
  windows: readonly AttemptWindow[];
  /** `pid:start_ticks` of Latch's own watcher processes (the store's `watchers` rows). */
  watchers?: ReadonlySet<string>;
  /**
   * `pid:start_ticks` of Latch's resident hooks, as the hooks that spawned them recorded them in their
   * spools (src/resident/list.ts recordedResidents). A resident hook is spared only by this.
   */
  residents?: ReadonlySet<string>;
  /** Override the agent (tests); default: findAgent(self). null = no agent. */
  agent?: AgentInfo | null;
  /** Tests only: which orphans may be candidates (concurrent tests' processes are not theirs to kill). */
  orphanFilter?: (p: Proc) => boolean;
  /**
   * The environment variables an agent sets to the session's id in its tool calls' processes
   * (Agent.sessionMarks). An orphan is the agent's only when it carries one with the id of the session
   * of a window its start lies in; any other orphan of a window is listed, never signalled. None: no
   * orphan is signalled.
   */
  marks?: readonly string[];
  /**
   * The agent's cgroup of Latch's own (src/contain/cgroup.ts), where the agent is in one: every
   * process in its `agent` part was born under the agent, so an orphan there is the agent's whatever
   * its mark says (`agent_cgroup`). Read while the group is frozen, the list is complete.
   */
  group?: string | null;
}

export interface Found {
  proc: Proc;
  why: Why;
  attempt: string | null;
}

export function scanOnce(
  input: ScanInput,
  agent: AgentInfo | null,
  boot: bigint,
  containStartNs: bigint | null,
  spared: Map<number, { pid: number; cmdline: string; why: string }>,
  listed: Map<number, Found> = new Map(),
): { found: Map<number, Found>; listed: Map<number, Found>; snap: Snapshot } {
  const self = input.self ?? procSelfPid();
  const snap = snapshot(boot);
  const uid = process.getuid?.() ?? -1;
  const protectedPids = new Set<number>([1, 0, 2]);
  for (const p of ancestry(self, boot)) protectedPids.add(p.pid);
  if (agent) protectedPids.add(agent.pid);
  // this process's own descendants (it may have started a watcher or git); an agent among them
  // (tests start one) keeps its own subtree
  const own = new Set<number>();
  const stackOwn = [self];
  while (stackOwn.length) {
    const x = stackOwn.pop()!;
    for (const c of snap.children.get(x) ?? []) if (!own.has(c) && c !== agent?.pid) own.add(c), stackOwn.push(c);
  }
  // Spared by an identity Latch recorded when it started the process (pid and start time, which no
  // process can change), never by its argv or a path read now; what it started is scanned like the
  // rest (a spared process's subtree is never spared with it).
  const recorded = (p: Proc): string | null => {
    const id = `${p.pid}:${p.startTicks}`;
    if (input.watchers?.has(id)) return "Latch's workspace watcher (its row in the store)";
    if (input.residents?.has(id)) return "Latch's resident hook (recorded by the hook that spawned it)";
    return null;
  };
  const eligible = (p: Proc) =>
    p.uid === uid && !protectedPids.has(p.pid) && !own.has(p.pid) && p.ppid !== 2 && isLive(p);
  const found = new Map<number, Found>();
  let entries: Set<string> | null = null;
  const addTree = (root: Proc, why: Why, attempt: string | null) => {
    const stack = [root];
    while (stack.length) {
      const p = stack.pop()!;
      if (found.has(p.pid) || !eligible(p)) continue;
      const keep = recorded(p);
      if (keep) spared.set(p.pid, { pid: p.pid, cmdline: cmdlineText(argvOf(p.pid)), why: keep });
      else found.set(p.pid, { proc: p, why, attempt });
      for (const c of snap.children.get(p.pid) ?? []) {
        const cp = snap.procs.get(c);
        if (cp) stack.push(cp);
      }
    }
  };

  // (b) the agent's descendants
  const agentProc = agent ? snap.procs.get(agent.pid) : undefined;
  if (agent && agentProc && agentProc.startTicks === agent.start_ticks) {
    const agentShell = environOf(agent.pid)?.get('SHELL');
    for (const c of snap.children.get(agent.pid) ?? []) {
      const p = snap.procs.get(c);
      if (!p || !eligible(p)) continue;
      const argv = argvOf(c);
      if (isHookProcess(c, (entries ??= latchEntries()), agentShell) && sameDangerEnv(c, agent.pid)) {
        // The hook itself answers the agent (a killed PreToolUse may fail open: docs/hook-failures.md): it is spared, with
        // its own stages (the fail-closed wrapper's inner shell, the hook's node: isHookStage). Nothing
        // else under it is: what a hook started is a candidate like any process of the agent. The hook
        // running this containment is never here: it and its ancestors are protected, its descendants
        // are this process's own.
        const hookTree = (pid: number, hargv: string[]) => {
          spared.set(pid, { pid, cmdline: cmdlineText(hargv), why: 'hook invocation (not its descendants)' });
          for (const g of snap.children.get(pid) ?? []) {
            const gp = snap.procs.get(g);
            if (!gp || !eligible(gp)) continue;
            if (isHookStage(hargv, g, entries!) && sameDangerEnv(g, agent.pid)) hookTree(g, argvOf(g));
            else addTree(gp, 'agent_descendant', null);
          }
        };
        hookTree(c, argv);
        continue;
      }
      if (!windowOf(input.windows, p.startNs)) {
        // Started outside every attempt window: the agent's own helper (an MCP server, …). What it
        // started inside a window is still a candidate.
        spared.set(c, {
          pid: c,
          cmdline: cmdlineText(argv),
          why: 'agent helper: a direct child started outside every attempt window',
        });
        const stack = [...(snap.children.get(c) ?? [])];
        while (stack.length) {
          const g = snap.procs.get(stack.pop()!);
          if (!g) continue;
          if (windowOf(input.windows, g.startNs))
            addTree(g, 'agent_descendant', windowOf(input.windows, g.startNs)!.id);
          else stack.push(...(snap.children.get(g.pid) ?? []));
        }
        continue;
      }
      addTree(p, 'agent_descendant', null);
    }
  }

  // (c) orphans in the agent's cgroup: born under the agent (membership is inherited at fork and kept
  // through reparenting, setsid and a removed mark), with their trees. The agent's live descendants
  // were placed by (b): its hooks and helpers stay spared.
  if (input.group && agent) {
    const underAgent = (p: Proc): boolean => {
      for (let q: Proc | undefined = p, n = 0; q && n < 256; q = snap.procs.get(q.ppid), n++)
        if (q.pid === agent.pid) return true;
      return false;
    };
    for (const pid of members(join(input.group, 'agent'))) {
      const p = snap.procs.get(pid);
      if (!p || found.has(pid) || spared.has(pid) || !eligible(p) || underAgent(p)) continue;
      addTree(p, 'agent_cgroup', null);
    }
  }

  // (d) orphans started inside an attempt window (or during this containment), with their trees
  const reaper = new Map<number, boolean>();
  const isReaper = (pid: number): boolean => {
    if (pid === 1) return true;
    let r = reaper.get(pid);
    if (r === undefined) {
      r = isReaperExe(exeOf(pid));
      reaper.set(pid, r);
    }
    return r;
  };
  // The session a process's mark names, where it names one (read once per process).
  const marks = input.marks ?? [];
  const markOf = (pid: number): Set<string> => {
    const env = marks.length > 0 ? environOf(pid) : null;
    const ids = new Set<string>();
    for (const m of marks) {
      const v = env?.get(m);
      if (v) ids.add(v);
    }
    return ids;
  };
  for (const p of snap.procs.values()) {
    if (found.has(p.pid) || !eligible(p) || !isReaper(p.ppid)) continue;
    if (input.orphanFilter && !input.orphanFilter(p)) continue;
    const inWindows = input.windows.filter((w) => p.startNs >= w.from && p.startNs <= w.to);
    const during = containStartNs !== null && p.startNs >= containStartNs - 20_000_000n;
    if (inWindows.length === 0 && !during) continue;
    // Provably the agent's: it carries the mark of a session whose call was running when it started
    // (or, appearing while containment runs, of any session with a window: a candidate's fork).
    const ids = markOf(p.pid);
    const mine = inWindows.find((w) => ids.has(w.session_id));
    if (mine) addTree(p, 'orphan_of_attempt', mine.id);
    else if (during && input.windows.some((w) => ids.has(w.session_id))) addTree(p, 'orphan_during_containment', null);
    // Latch's own (recorded) process without the mark is nobody's job to list: not the user's, and the
    // tree of an orphan is the agent's only by its mark.
    else if (inWindows.length > 0 && !listed.has(p.pid) && recorded(p) === null)
      listed.set(p.pid, { proc: p, why: 'orphan_unmarked', attempt: inWindows[0]!.id });
  }
  return { found, listed, snap };
}

export function toCandidate(f: Found, action: string): Candidate {
  const argv = argvOf(f.proc.pid);
  return {
    pid: f.proc.pid,
    start_ticks: f.proc.startTicks,
    start_ns: f.proc.startNs.toString(),
    cmdline: cmdlineText(argv),
    exe: exeOf(f.proc.pid),
    why: f.why,
    attempt_id: f.attempt,
    action,
  };
}

/** The candidates, without signalling anything (for `latch status` and tests). */
export function listCandidates(input: ScanInput): ContainResult {
  const t0 = monoMs();
  if (!procSupported()) return unsupported(t0);
  try {
    const boot = bootNs();
    const agent = input.agent !== undefined ? input.agent : findAgent(input.self ?? procSelfPid(), boot);
    const spared = new Map<number, { pid: number; cmdline: string; why: string }>();
    const { found, listed } = scanOnce(input, agent, boot, null, spared);
    return {
      supported: true,
      notes: agent ? [] : [NO_AGENT],
      agent,
      candidates: [...found.values(), ...listed.values()].map((f) => toCandidate(f, 'listed')),
      spared: [...spared.values()],
      rounds: 1,
      ms: monoMs() - t0,
      errors: [],
    };
  } catch (err) {
    return failed(t0, err);
  }
}
