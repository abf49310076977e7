// Recognising processes by executable and argv: coding agents (and the nearest one among a pid's
// ancestors), their sandboxes, the reapers orphans are reparented to, terminal multiplexers, job
// schedulers; and the one process containment spares by what it is: a hook invocation (its exact
// command, run by the executable its name says). Watchers and resident hooks are spared by the
// identity Latch recorded when it started them (scan.ts), never by their shape here.
//
// Which processes are an agent or its sandbox is each agent's to say (Agent.processes, data in
// src/agents/<name>/processes.ts). The registry (src/agents/index.ts) hands every registered agent's
// facts to this module when it loads (useAgentProcesses): the core imports no agent. Before that,
// nothing here knows any agent, and asking is an error (never "not an agent"): `latch verify`'s
// ancestry check refuses, containment records the failure.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentProcesses } from '../agents/agent.js';
import { builtEntry, moduleDir } from '../base/paths.js';
import { shq, withoutEntryGuard, wrapFailClosed } from '../base/hook-text.js';
import { ancestry, argvOf, baseName as base, bootNs, cmdlineText, environOf, exeOf, procSelfPid } from './proc.js';

/** Runtimes that run an agent's script (argv[1]), and a hook's entry. */
const NODE_EXES = /^(node|nodejs|bun)$/;
/** Processes orphans are reparented to (besides PID 1). */
const REAPER_EXES = /^(systemd|init|tini|tini-static|dumb-init|catatonit|s6-svscan|runsvdir)$/;
/** Terminal multiplexer servers: a child started in an attempt window came from a tool call. */
const MULTIPLEXER_EXES = /^(tmux|tmux: server|screen|SCREEN|zellij|abduco|dtach)$/;
/** Job schedulers: a job they start was registered by someone earlier. */
const SCHEDULER_EXES = /^(cron|crond|atd|anacron|incrond|fcron)$/;
const HOOK_SHELLS = /^(sh|dash|bash|zsh|ksh|mksh|ash|busybox)$/;
/** Environment variables that change what a hook's shell or node runs. */
const HOOK_ENV_DANGER = [
  'NODE_OPTIONS',
  'NODE_PATH',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'IFS',
  'GCONV_PATH',
];

export interface AgentInfo {
  pid: number;
  start_ticks: string;
  exe: string | null;
  cmdline: string;
}

let registered: (() => readonly AgentProcesses[]) | null = null;

/**
 * Where the agents' process facts come from: the registry's list (src/agents/index.ts calls this when
 * it loads, with every registered agent's, tests' extra ones included).
 */
export function useAgentProcesses(source: () => readonly AgentProcesses[]): void {
  registered = source;
}

/** Every registered agent's process facts; throws when no registry gave any (no agent known). */
function registeredProcesses(): readonly AgentProcesses[] {
  const list = registered?.() ?? [];
  if (list.length === 0) throw new Error('no agent process facts: load the agent registry (src/agents/index.ts) first');
  return list;
}

/** Is this process a coding agent (any registered agent: Agent.processes)? */
export function isAgentProcess(exe: string | null, argv: string[]): boolean {
  const b = base(exe);
  const script = NODE_EXES.test(b) ? argv.slice(1).find((a) => !a.startsWith('-')) : undefined;
  return registeredProcesses().some(
    (p) =>
      p.exes.some((r) => r.test(b)) ||
      (exe !== null && p.exePaths.some((r) => r.test(exe))) ||
      (script !== undefined && p.scripts.some((r) => r.test(script))),
  );
}

/** Is this process an agent's sandbox (any registered agent's: Agent.processes)? */
export function isSandboxProcess(exe: string | null): boolean {
  const b = base(exe);
  return registeredProcesses().some((p) => p.sandboxes.some((r) => r.test(b)));
}

/** A process orphans are reparented to (besides PID 1: systemd, tini, ...). */
export function isReaperExe(exe: string | null): boolean {
  return REAPER_EXES.test(base(exe));
}

/** A terminal multiplexer's server (tmux, screen, ...). */
export function isMultiplexerExe(exe: string | null): boolean {
  return MULTIPLEXER_EXES.test(base(exe));
}

/** A job scheduler (cron, atd, ...). */
export function isSchedulerExe(exe: string | null): boolean {
  return SCHEDULER_EXES.test(base(exe));
}

/** The nearest agent process among pid's ancestors (pid itself excluded). */
export function findAgent(pid: number = procSelfPid(), boot: bigint = bootNs()): AgentInfo | null {
  for (const p of ancestry(pid, boot).slice(1)) {
    const exe = exeOf(p.pid);
    const argv = argvOf(p.pid);
    if (isAgentProcess(exe, argv)) return { pid: p.pid, start_ticks: p.startTicks, exe, cmdline: cmdlineText(argv) };
  }
  return null;
}

// ---------------------------------------------------------------------------
// Hook invocations (spared): the exact command text `latch setup <agent>` writes
// (src/base/hook-command.ts; test/unit/contain.test.ts checks the two agree), for any agent
// name Latch has (a plain word: the hook entry refuses any other).

export function hookCommandText(
  event: string,
  node: string,
  entry: string,
  agent = 'codex',
  clearCa = agent === 'claude',
  entryGuard = true,
): string {
  const run = `${clearCa ? 'NODE_EXTRA_CA_CERTS= ' : ''}${shq(node)} ${shq(entry)} hook ${agent} --event ${event}`;
  if (event !== 'PreToolUse') return run;
  return wrapFailClosed(run, agent, entry, entryGuard);
}

const RUN_RE = /^(?:NODE_EXTRA_CA_CERTS= )?'((?:[^']|'\\'')*)' '((?:[^']|'\\'')*)' hook ([a-z]+) --event ([A-Za-z]+)/;
const WORD_RE = /^'((?:[^']|'\\'')*)'$/;
const unq = (s: string): string => s.replace(/'\\''/g, "'");

/** The event, node and entry of a hook command text, when it is exactly what setup writes. */
export function parseHookText(text: string): { event: string; node: string; entry: string; agent: string } | null {
  let inner = text;
  if (text.startsWith('/bin/sh -c ')) {
    const w = WORD_RE.exec(text.slice('/bin/sh -c '.length));
    if (!w) return null;
    inner = withoutEntryGuard(unq(w[1]!));
  }
  const m = RUN_RE.exec(inner);
  if (!m) return null;
  const r = { event: m[4]!, node: unq(m[1]!), entry: unq(m[2]!), agent: m[3]! };
  // A handler written by an earlier setup is still Latch's: a Claude Code one before its text cleared
  // NODE_EXTRA_CA_CERTS, a PreToolUse wrapper before it checked that the entry is there.
  const clear = r.agent === 'claude' ? [true, false] : [false];
  for (const ca of clear)
    for (const guard of [true, false])
      if (hookCommandText(r.event, r.node, r.entry, r.agent, ca, guard) === text) return r;
  return null;
}

/**
 * argv is exactly a hook invocation of Latch: `SHELL -c|-lc TEXT` where TEXT is the command text
 * setup writes for some agent, event, node and entry, or the node process itself (`NODE ENTRY hook
 * <agent> --event E`, when the shell exec'd it, or the wrapper's child); the entry one of `entries`
 * (latchEntries: this Latch's own). The node form's ENTRY must be one of `entries` exactly as written:
 * never resolved through a symbolic link, which the agent could have pointed at its own script when
 * the process started and at Latch's latch.cjs by the trip (the file a process runs is the one its
 * path named at exec, not at the trip). The shell form's entry may be resolved: a spared shell runs
 * only setup's fixed text, and what it starts (the node) is checked again, by this rule, as a candidate.
 */
export function isHookInvocation(exe: string | null, argv: string[], entries: ReadonlySet<string>): boolean {
  if (
    argv.length === 3 &&
    HOOK_SHELLS.test(base(argv[0] ?? '')) &&
    HOOK_SHELLS.test(base(exe)) &&
    (argv[1] === '-c' || argv[1] === '-lc')
  ) {
    const h = parseHookText(argv[2]!);
    return h !== null && isEntry(h.entry, entries);
  }
  if (
    argv.length === 6 &&
    NODE_EXES.test(base(exe)) &&
    argv[1]!.startsWith('/') &&
    entries.has(argv[1]!) &&
    argv[2] === 'hook' &&
    /^[a-z]+$/.test(argv[3]!) &&
    argv[4] === '--event' &&
    /^[A-Za-z]+$/.test(argv[5]!)
  ) {
    return true;
  }
  return false;
}

/**
 * A process containment may spare as a hook invocation: its argv is one (isHookInvocation), and its
 * executable is the file that name says. A shell form's is a shell /etc/shells lists, or the agent's
 * own $SHELL (`agentShell`: an agent may run its hooks with it); the node form's is this process's own node
 * (setup writes one absolute node into every handler). A name alone is not enough: any binary copied
 * to a file named `node` or `sh` would pass.
 */
export function isHookProcess(pid: number, entries: ReadonlySet<string>, agentShell?: string): boolean {
  const argv = argvOf(pid);
  if (!isHookInvocation(exeOf(pid), argv, entries)) return false;
  if (argv.length !== 3) return exeIsOneOf(pid, [process.execPath]);
  return exeIsOneOf(pid, agentShell?.startsWith('/') ? [...systemShells(), agentShell] : systemShells());
}

/**
 * `pid` is the next stage of the hook invocation whose argv is `parent` (a process isHookProcess
 * spared, or a stage of one): the inner shell of the fail-closed wrapper (`/bin/sh -c SCRIPT`, exactly
 * the script the parent's text wraps, run by a shell /etc/shells lists), or the hook's node in its
 * exact node form (the entry as written: isHookInvocation). Anything else a hook runs is not the hook.
 */
export function isHookStage(parent: readonly string[], pid: number, entries: ReadonlySet<string>): boolean {
  if (parent.length !== 3) return false;
  const argv = argvOf(pid);
  if (argv.length === 6) return isHookProcess(pid, entries);
  const text = parent[2]!;
  return (
    argv.length === 3 &&
    argv[0] === '/bin/sh' &&
    argv[1] === '-c' &&
    text.startsWith('/bin/sh -c ') &&
    text === `/bin/sh -c ${shq(argv[2]!)}` &&
    exeIsOneOf(pid, systemShells())
  );
}

/** The executable of `pid` is one of `files`, by device and inode (it may have been replaced on disk since). */
function exeIsOneOf(pid: number, files: readonly string[]): boolean {
  try {
    const exe = statSync(`/proc/${pid}/exe`);
    return files.some((f) => {
      try {
        const s = statSync(f);
        return s.dev === exe.dev && s.ino === exe.ino;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** The shells /etc/shells lists (root's to change), and /bin/sh. */
function systemShells(): string[] {
  let listed: string[] = [];
  try {
    listed = readFileSync('/etc/shells', 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('/'));
  } catch {
    listed = [];
  }
  return ['/bin/sh', ...listed];
}

/** An absolute path that is one of `entries`, as written or resolved. */
function isEntry(path: string, entries: ReadonlySet<string>): boolean {
  if (!path.startsWith('/')) return false;
  if (entries.has(path)) return true;
  try {
    return entries.has(realpathSync(path));
  } catch {
    return false;
  }
}

/** A hook-shaped process whose environment differs from the agent's in a variable that changes what it runs is not spared. */
export function sameDangerEnv(pid: number, agentPid: number): boolean {
  const a = environOf(agentPid);
  const h = environOf(pid);
  if (!a || !h) return false;
  return HOOK_ENV_DANGER.every((k) => a.get(k) === h.get(k));
}

/**
 * This Latch's entries, as the paths Latch itself computes (dist/latch.cjs beside this bundle or from
 * the sources; the path setup writes into a handler) and their real paths: never derived from a
 * process under scan.
 */
export function latchEntries(): Set<string> {
  const out = new Set<string>();
  // As setup and src/watch/client.ts find it: beside this bundle (dist/), or dist/ from the sources.
  try {
    for (const p of [join(moduleDir, 'latch.cjs'), builtEntry()].filter((x): x is string => x !== null)) {
      if (p.startsWith('/')) out.add(p);
      try {
        out.add(realpathSync(p));
      } catch {
        /* not there */
      }
    }
  } catch {
    /* no module URL */
  }
  try {
    const main = process.argv[1];
    if (main) {
      const d = dirname(realpathSync(main));
      for (const p of [
        join(d, 'latch.cjs'),
        join(d, '..', '..', 'dist', 'latch.cjs'),
        join(d, '..', 'dist', 'latch.cjs'),
      ]) {
        try {
          out.add(realpathSync(p));
        } catch {
          /* not there */
        }
      }
    }
  } catch {
    /* no entry */
  }
  return out;
}
