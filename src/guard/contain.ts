// Process containment at a trip (issue 10, "nothing started before the compaction acts after it").
//
// When a session latches, processes the agent left running (background jobs, nohup, setsid, double
// forks, live interactive shells the agent could still type into) must not act afterwards.
// Linux only (/proc); elsewhere every entry point answers `supported: false` and says so.
//
// Candidates (same real uid as this process only):
//   agent_descendant       every descendant of the agent process (the nearest ancestor of this hook
//                          whose executable is codex / claude / node running codex.js or claude's
//                          cli.js), except: this process, its ancestors and descendants; Codex's hook
//                          invocations (direct children of the agent whose argv is exactly Latch's
//                          hook command, see isHookInvocation) and their subtrees; and the agent's own
//                          helpers: direct children started outside every attempt window (MCP
//                          servers started with the session), whose descendants are still candidates
//                          when they started inside a window.
//   orphan_of_attempt <id> a process whose parent is PID 1 or a subreaper (systemd, tini, ...) and
//                          whose start time lies in [started_ns - 50 ms, end + 2 s] of attempt <id>
//                          (every attempt of the workspace; end = ended_ns, closing_ns or now), plus
//                          all its descendants. Latch's own watchers (table `watchers`) are excluded.
//   orphan_during_containment  an orphan that appeared while containment ran (a candidate forked and
//                          exited between two scans).
// Never signalled: PID 1, this process, its ancestors, processes of another uid, zombies, kernel
// threads, the agent itself.
//
// contain(): SIGSTOP every candidate (so none can fork), rescan until no new candidate appears (at
// most MAX_ROUNDS), then SIGKILL them all. Each signal re-reads the process's start time first (pid
// reuse); the remaining race between that read and kill(2) is microseconds (Node has no pidfd).
// Every function here returns errors as data and never throws.
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../store/store.js';
import { builtEntry } from '../base/paths.js';

export const WINDOW_BEFORE_NS = 50_000_000n;
export const WINDOW_AFTER_NS = 2_000_000_000n;
const MAX_ROUNDS = 8;
/** USER_HZ: /proc/PID/stat start times are in these ticks (100 on every mainstream Linux). */
const CLK_TCK = 100n;

/** Executable basenames that are a coding agent. */
const AGENT_EXES = [/^codex$/, /^codex-(x86_64|aarch64)-[\w-]+$/, /^claude$/, /^claude\.exe$/];
/** Scripts that make a node/bun process an agent (argv[1]). */
const AGENT_SCRIPTS = [
  /(^|\/)@openai\/codex\/bin\/codex\.js$/,
  /(^|\/)codex\.js$/,
  /(^|\/)@anthropic-ai\/claude-code\/cli\.js$/,
  /(^|\/)claude$/,
];
const NODE_EXES = /^(node|nodejs|bun)$/;
/** Sandboxes an agent runs its commands in. */
const SANDBOX_EXES = /^(bwrap|codex-linux-sandbox|codex-sandbox)$/;
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

export interface Proc {
  pid: number;
  ppid: number;
  uid: number;
  state: string;
  pgrp: number;
  sid: number;
  ttyNr: number;
  startTicks: string;
  startNs: bigint;
}

export interface AttemptWindow {
  id: string;
  session_id: string;
  from: bigint;
  to: bigint;
}

export type Why = 'agent_descendant' | 'orphan_of_attempt' | 'orphan_during_containment';

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

export interface AgentInfo {
  pid: number;
  start_ticks: string;
  exe: string | null;
  cmdline: string;
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

// ---------------------------------------------------------------------------
// /proc reading

export function procSupported(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    readFileSync('/proc/self/stat', 'utf8');
    return true;
  } catch {
    return false;
  }
}

function unsupported(t0: number): ContainResult {
  return {
    supported: false,
    notes: [
      `unsupported: process containment needs Linux /proc (platform ${process.platform}); processes started before the latch were not stopped`,
    ],
    agent: null,
    candidates: [],
    spared: [],
    rounds: 0,
    ms: performance.now() - t0,
    errors: [],
  };
}

/** Wall-clock ns of the boot (CLOCK_BOOTTIME origin), from /proc/uptime: ~10 ms precise (btime in /proc/stat is whole seconds). */
export function bootNs(): bigint {
  try {
    const up = readFileSync('/proc/uptime', 'utf8').split(' ')[0]!;
    const [s, frac = '0'] = up.split('.');
    const upNs = BigInt(s!) * 1_000_000_000n + BigInt(frac.padEnd(9, '0').slice(0, 9));
    const wall = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    return wall - upNs;
  } catch {
    try {
      const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
      return m ? BigInt(m[1]!) * 1_000_000_000n : 0n;
    } catch {
      return 0n;
    }
  }
}

export function readProc(pid: number, boot: bigint): Proc | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // f[0] = state (field 3), f[1] = ppid, f[2] = pgrp, f[3] = session, f[4] = tty_nr, f[19] = starttime
    if (f[19] === undefined) return null;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^Uid:\s+(\d+)/m.exec(status);
    const startTicks = f[19];
    return {
      pid,
      ppid: Number(f[1]),
      uid: m ? Number(m[1]) : -1,
      state: f[0] ?? '?',
      pgrp: Number(f[2]),
      sid: Number(f[3]),
      ttyNr: Number(f[4]),
      startTicks,
      startNs: boot + (BigInt(startTicks) * 1_000_000_000n) / CLK_TCK,
    };
  } catch {
    return null;
  }
}

export function exeOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, '');
  } catch {
    return null;
  }
}

export function argvOf(pid: number): string[] {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const parts = raw.split('\0');
    if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
    return parts;
  } catch {
    return [];
  }
}

export function environOf(pid: number): Map<string, string> | null {
  try {
    const m = new Map<string, string>();
    for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const i = kv.indexOf('=');
      if (i > 0) m.set(kv.slice(0, i), kv.slice(i + 1));
    }
    return m;
  } catch {
    return null;
  }
}

export function nsOf(pid: number | 'self', kind = 'pid'): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/${kind}`);
  } catch {
    return null;
  }
}

const base = (p: string | null): string => (p ? p.slice(p.lastIndexOf('/') + 1) : '');

export function cmdlineText(argv: string[], max = 300): string {
  const s = argv.join(' ').replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : '?'));
  return s.length > max ? s.slice(0, max) + '…' : s;
}

/** Is this process a coding agent (Codex, Claude Code)? */
export function isAgentProcess(exe: string | null, argv: string[]): boolean {
  const b = base(exe);
  if (AGENT_EXES.some((r) => r.test(b))) return true;
  if (exe && /\/claude\/versions\/[^/]+$/.test(exe)) return true; // Claude Code's native installer
  if (NODE_EXES.test(b)) {
    const script = argv.slice(1).find((a) => !a.startsWith('-'));
    if (script && AGENT_SCRIPTS.some((r) => r.test(script))) return true;
  }
  return false;
}

export function isSandboxProcess(exe: string | null): boolean {
  return SANDBOX_EXES.test(base(exe));
}

/** This process's pid as the mounted /proc numbers it (differs from process.pid inside a pid namespace whose /proc is the host's). */
export function procSelfPid(): number {
  try {
    return Number(readlinkSync('/proc/self'));
  } catch {
    return process.pid;
  }
}

function allPids(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c >= 48 && c <= 57) out.push(Number(name));
  }
  return out;
}

interface Snapshot {
  procs: Map<number, Proc>;
  children: Map<number, number[]>;
}

function snapshot(boot: bigint): Snapshot {
  const procs = new Map<number, Proc>();
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const p = readProc(pid, boot);
    if (!p) continue;
    procs.set(pid, p);
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  return { procs, children };
}

/** pid and its ancestors (nearest first), as far as /proc shows them. */
export function ancestry(pid: number, boot: bigint = bootNs()): Proc[] {
  const out: Proc[] = [];
  const seen = new Set<number>();
  let cur = pid;
  while (cur > 0 && !seen.has(cur) && out.length < 256) {
    seen.add(cur);
    const p = readProc(cur, boot);
    if (!p) break;
    out.push(p);
    cur = p.ppid;
  }
  return out;
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
// (src/commands/shared/hook-command.ts; test/unit/contain.test.ts checks the two agree), for any agent
// name Latch has (a plain word: the hook entry refuses any other).

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function hookCommandText(event: string, node: string, entry: string, agent = 'codex'): string {
  const run = `${shq(node)} ${shq(entry)} hook ${agent} --event ${event}`;
  if (event !== 'PreToolUse') return run;
  const script =
    `${run}; s=$?; if [ "$s" -ne 0 ] && [ "$s" -ne 2 ]; then ` +
    `echo "Latch could not check this call (hook exited $s); blocking it. Run: latch doctor" >&2; exit 2; fi; exit "$s"`;
  return `/bin/sh -c ${shq(script)}`;
}

const RUN_RE = /^'((?:[^']|'\\'')*)' '((?:[^']|'\\'')*)' hook ([a-z]+) --event ([A-Za-z]+)/;
const WORD_RE = /^'((?:[^']|'\\'')*)'$/;
const unq = (s: string): string => s.replace(/'\\''/g, "'");

/** The event, node and entry of a hook command text, when it is exactly what setup writes. */
export function parseHookText(text: string): { event: string; node: string; entry: string; agent: string } | null {
  let inner = text;
  if (text.startsWith('/bin/sh -c ')) {
    const w = WORD_RE.exec(text.slice('/bin/sh -c '.length));
    if (!w) return null;
    inner = unq(w[1]!);
  }
  const m = RUN_RE.exec(inner);
  if (!m) return null;
  const r = { event: m[4]!, node: unq(m[1]!), entry: unq(m[2]!), agent: m[3]! };
  return hookCommandText(r.event, r.node, r.entry, r.agent) === text ? r : null;
}

/**
 * argv is exactly a hook invocation of Latch: `SHELL -c|-lc TEXT` where TEXT is the command text
 * setup writes for some agent, event, node and entry (entry named latch / latch.cjs), or the node
 * process itself (`NODE ENTRY hook <agent> --event E`, when the shell exec'd it).
 */
export function isHookInvocation(exe: string | null, argv: string[]): boolean {
  if (
    argv.length === 3 &&
    HOOK_SHELLS.test(base(argv[0] ?? '')) &&
    HOOK_SHELLS.test(base(exe)) &&
    (argv[1] === '-c' || argv[1] === '-lc')
  ) {
    const h = parseHookText(argv[2]!);
    return h !== null && /^latch(\.cjs)?$/.test(base(h.entry));
  }
  if (
    argv.length === 6 &&
    NODE_EXES.test(base(exe)) &&
    /^latch(\.cjs)?$/.test(base(argv[1]!)) &&
    argv[2] === 'hook' &&
    /^[a-z]+$/.test(argv[3]!) &&
    argv[4] === '--event' &&
    /^[A-Za-z]+$/.test(argv[5]!)
  ) {
    return true;
  }
  return false;
}

/** A hook-shaped process whose environment differs from the agent's in a variable that changes what it runs is not spared. */
function sameDangerEnv(pid: number, agentPid: number): boolean {
  const a = environOf(agentPid);
  const h = environOf(pid);
  if (!a || !h) return false;
  return HOOK_ENV_DANGER.every((k) => a.get(k) === h.get(k));
}

/** Realpaths of the Latch entries a watcher may run: dist/latch.cjs beside this process's entry. */
function latchEntries(): Set<string> {
  const out = new Set<string>();
  // As src/watch/client.ts finds it: beside this bundle (dist/), or dist/ from the sources.
  try {
    const here = dirname(fileURLToPath(import.meta.url));
    for (const p of [join(here, 'latch.cjs'), builtEntry()].filter((x): x is string => x !== null)) {
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

/**
 * A Latch workspace watcher (src/watch/client.ts startWatcher): node --max-semi-space-size=1 ENTRY
 * __watch ROOT, ENTRY being this installation's latch.cjs, with the same code-changing environment
 * as this process. Spared even when its row is in another store (tests, a second LATCH_HOME).
 */
function isLatchWatcher(pid: number, entries: ReadonlySet<string>): boolean {
  const argv = argvOf(pid);
  if (
    argv.length !== 5 ||
    argv[1] !== '--max-semi-space-size=1' ||
    argv[3] !== '__watch' ||
    !NODE_EXES.test(base(exeOf(pid)))
  )
    return false;
  try {
    if (!entries.has(realpathSync(argv[2]!))) return false;
  } catch {
    return false;
  }
  const env = environOf(pid);
  return !!env && HOOK_ENV_DANGER.every((k) => env.get(k) === process.env[k]);
}

// ---------------------------------------------------------------------------
// Attempt windows and exclusions from the store

/**
 * Windows of every attempt (of `workspace`, or all) that may hold a live process's start. An untimed
 * attempt (started_ns 0: a PostToolUse without its Start) has no window, and no window opens before
 * its session was first seen or before the boot: a bogus start must never make every orphan since
 * then a candidate.
 */
export function attemptWindows(db: Db, opts: { workspace?: string | null; sinceNs?: bigint } = {}): AttemptWindow[] {
  const now = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
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

function watcherIds(db: Db): Set<string> {
  try {
    const rows = db.prepare('SELECT pid, pid_start FROM watchers').all() as { pid: number; pid_start: string }[];
    return new Set(rows.map((r) => `${r.pid}:${r.pid_start}`));
  } catch {
    return new Set();
  }
}

// ---------------------------------------------------------------------------
// The candidate scan

export interface ScanInput {
  /** Process to start from (default: this process). Its ancestors are never candidates. */
  self?: number;
  windows: readonly AttemptWindow[];
  /** `pid:start_ticks` of Latch's own watcher processes. */
  watchers?: ReadonlySet<string>;
  /** Override the agent (tests); default: findAgent(self). null = no agent. */
  agent?: AgentInfo | null;
  /** Tests only: which orphans may be candidates (concurrent tests' processes are not theirs to kill). */
  orphanFilter?: (p: Proc) => boolean;
}

interface Found {
  proc: Proc;
  why: Why;
  attempt: string | null;
}

function scanOnce(
  input: ScanInput,
  agent: AgentInfo | null,
  boot: bigint,
  containStartNs: bigint | null,
  spared: Map<number, { pid: number; cmdline: string; why: string }>,
): { found: Map<number, Found>; snap: Snapshot } {
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
  const isWatcher = (p: Proc) => input.watchers?.has(`${p.pid}:${p.startTicks}`) ?? false;
  const eligible = (p: Proc) =>
    p.uid === uid &&
    !protectedPids.has(p.pid) &&
    !own.has(p.pid) &&
    p.ppid !== 2 &&
    p.state !== 'Z' &&
    p.state !== 'X' &&
    !isWatcher(p);
  const found = new Map<number, Found>();
  let entries: Set<string> | null = null;
  const addTree = (root: Proc, why: Why, attempt: string | null) => {
    const stack = [root];
    while (stack.length) {
      const p = stack.pop()!;
      if (found.has(p.pid) || !eligible(p)) continue;
      if (isLatchWatcher(p.pid, (entries ??= latchEntries()))) {
        spared.set(p.pid, { pid: p.pid, cmdline: cmdlineText(argvOf(p.pid)), why: "Latch's workspace watcher" });
        continue;
      }
      found.set(p.pid, { proc: p, why, attempt });
      for (const c of snap.children.get(p.pid) ?? []) {
        const cp = snap.procs.get(c);
        if (cp) stack.push(cp);
      }
    }
  };

  // (b) the agent's descendants
  const agentProc = agent ? snap.procs.get(agent.pid) : undefined;
  if (agent && agentProc && agentProc.startTicks === agent.start_ticks) {
    for (const c of snap.children.get(agent.pid) ?? []) {
      const p = snap.procs.get(c);
      if (!p || !eligible(p)) continue;
      const exe = exeOf(c);
      const argv = argvOf(c);
      if (isHookInvocation(exe, argv) && sameDangerEnv(c, agent.pid)) {
        spared.set(c, { pid: c, cmdline: cmdlineText(argv), why: 'hook invocation (and its subtree)' });
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

  // (c) orphans started inside an attempt window (or during this containment), with their trees
  const reaper = new Map<number, boolean>();
  const isReaper = (pid: number): boolean => {
    if (pid === 1) return true;
    let r = reaper.get(pid);
    if (r === undefined) {
      r = REAPER_EXES.test(base(exeOf(pid)));
      reaper.set(pid, r);
    }
    return r;
  };
  for (const p of snap.procs.values()) {
    if (found.has(p.pid) || !eligible(p) || !isReaper(p.ppid)) continue;
    if (input.orphanFilter && !input.orphanFilter(p)) continue;
    const w = windowOf(input.windows, p.startNs);
    if (w) addTree(p, 'orphan_of_attempt', w.id);
    else if (containStartNs !== null && p.startNs >= containStartNs - 20_000_000n)
      addTree(p, 'orphan_during_containment', null);
  }
  return { found, snap };
}

function toCandidate(f: Found, action: string): Candidate {
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

function sameProcess(pid: number, startTicks: string): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return f[19] === startTicks && f[0] !== 'Z' && f[0] !== 'X';
  } catch {
    return false;
  }
}

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

/** The candidates, without signalling anything (for `latch status` and tests). */
export function listCandidates(input: ScanInput): ContainResult {
  const t0 = performance.now();
  if (!procSupported()) return unsupported(t0);
  try {
    const boot = bootNs();
    const agent = input.agent !== undefined ? input.agent : findAgent(input.self ?? procSelfPid(), boot);
    const spared = new Map<number, { pid: number; cmdline: string; why: string }>();
    const { found } = scanOnce(input, agent, boot, null, spared);
    return {
      supported: true,
      notes: agent ? [] : ['no agent process among the ancestors: only orphans of attempt windows are candidates'],
      agent,
      candidates: [...found.values()].map((f) => toCandidate(f, 'listed')),
      spared: [...spared.values()],
      rounds: 1,
      ms: performance.now() - t0,
      errors: [],
    };
  } catch (err) {
    return {
      supported: true,
      notes: [],
      agent: null,
      candidates: [],
      spared: [],
      rounds: 0,
      ms: performance.now() - t0,
      errors: [String((err as Error)?.message ?? err)],
    };
  }
}

/** Stops, then kills, every candidate. Never throws; never signals this process, its ancestors, PID 1 or another uid. */
export function contain(input: ScanInput): ContainResult {
  const t0 = performance.now();
  if (!procSupported()) return unsupported(t0);
  const errors: string[] = [];
  const notes: string[] = [];
  const stopped = new Map<number, Found & { action: string }>();
  let agent: AgentInfo | null = null;
  let rounds = 0;
  const spared = new Map<number, { pid: number; cmdline: string; why: string }>();
  try {
    const boot = bootNs();
    const containStart = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    agent = input.agent !== undefined ? input.agent : findAgent(input.self ?? procSelfPid(), boot);
    if (!agent) notes.push('no agent process among the ancestors: only orphans of attempt windows are candidates');
    for (rounds = 1; rounds <= MAX_ROUNDS; rounds++) {
      const { found } = scanOnce(input, agent, boot, containStart, spared);
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
    const candidates: Candidate[] = [];
    for (const f of stopped.values()) {
      const c = toCandidate(f, f.action);
      if (f.action !== 'gone') {
        const r = signal(f.proc.pid, f.proc.startTicks, 'SIGKILL');
        c.action = r === 'ok' ? 'killed' : r === 'gone' ? 'gone' : `kill_failed: ${r}`;
        if (r !== 'ok' && r !== 'gone') errors.push(`pid ${f.proc.pid}: SIGKILL failed (${r})`);
      }
      candidates.push(c);
    }
    return {
      supported: true,
      notes,
      agent,
      candidates,
      spared: [...spared.values()],
      rounds: Math.min(rounds, MAX_ROUNDS),
      ms: performance.now() - t0,
      errors,
    };
  } catch (err) {
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
    return {
      supported: true,
      notes,
      agent,
      candidates,
      spared: [...spared.values()],
      rounds,
      ms: performance.now() - t0,
      errors,
    };
  }
}

// ---------------------------------------------------------------------------
// The trip: contain, then record (each its own step; errors become data)

/**
 * Called by the guard after the trip's transaction committed: contains the processes of the
 * session's agent and the orphans of the workspace's attempts, and records them in
 * contained_processes / containments. Never throws.
 */
export function containAfterTrip(
  db: Db,
  sessionId: string,
  compactionSeq: number,
  opts: { workspace?: string | null; now?: string; orphanFilter?: (p: Proc) => boolean; mode?: string } = {},
): ContainResult {
  const t0 = performance.now();
  let result: ContainResult;
  try {
    if (!procSupported()) result = unsupported(t0);
    else {
      let workspace = opts.workspace ?? null;
      if (workspace === null) {
        const r = db.prepare('SELECT workspace FROM sessions WHERE session_id = ?').get(sessionId) as
          | { workspace: string }
          | undefined;
        workspace = r?.workspace ?? null;
      }
      const windows = attemptWindows(db, { workspace, sinceNs: bootNs() });
      const input: ScanInput = {
        windows,
        watchers: watcherIds(db),
        ...(opts.orphanFilter ? { orphanFilter: opts.orphanFilter } : {}),
      };
      // LATCH_CONTAIN=list (tests sharing a uid with other work, or a human who wants to see first):
      // record the candidates without signalling them. The hook's environment is Codex's, which the
      // agent's tool calls cannot change.
      const mode = opts.mode ?? process.env.LATCH_CONTAIN;
      // Without an agent among the hook's ancestors (a hook run by hand or in-process by a test, an
      // agent this file does not know) there is nobody to contain for sure: list, do not signal.
      const agent = findAgent();
      input.agent = agent;
      if (mode === 'list' || !agent) {
        result = listCandidates(input);
        result.notes.push(
          mode === 'list'
            ? 'LATCH_CONTAIN=list: candidates recorded, nothing signalled'
            : "no agent process among the hook's ancestors: candidates recorded, nothing signalled",
        );
      } else result = contain(input);
    }
  } catch (err) {
    result = {
      supported: true,
      notes: [],
      agent: null,
      candidates: [],
      spared: [],
      rounds: 0,
      ms: performance.now() - t0,
      errors: [String((err as Error)?.message ?? err)],
    };
  }
  const rec = recordContainment(db, sessionId, compactionSeq, result, opts.now ?? new Date().toISOString());
  if (rec) result.errors.push(rec);
  return result;
}

/**
 * What containment would stop now for a session, without signalling (for `latch status`): the
 * agent recorded at its latest trip (when still the same process), else this process's agent.
 */
export function listForSession(
  db: Db,
  sessionId: string,
  opts: { orphanFilter?: (p: Proc) => boolean } = {},
): ContainResult {
  const t0 = performance.now();
  if (!procSupported()) return unsupported(t0);
  try {
    const s = db.prepare('SELECT workspace FROM sessions WHERE session_id = ?').get(sessionId) as
      | { workspace: string }
      | undefined;
    const last = db
      .prepare(
        'SELECT agent_pid, agent_start, agent_cmdline FROM containments WHERE session_id = ? AND agent_pid IS NOT NULL ORDER BY id DESC LIMIT 1',
      )
      .get(sessionId) as { agent_pid: number; agent_start: string; agent_cmdline: string | null } | undefined;
    const boot = bootNs();
    const live = last ? readProc(last.agent_pid, boot) : null;
    const agent =
      last && live && live.startTicks === last.agent_start
        ? {
            pid: last.agent_pid,
            start_ticks: last.agent_start,
            exe: exeOf(last.agent_pid),
            cmdline: last.agent_cmdline ?? '',
          }
        : undefined;
    const windows = attemptWindows(db, { workspace: s?.workspace ?? null, sinceNs: boot });
    return listCandidates({
      windows,
      watchers: watcherIds(db),
      ...(agent ? { agent } : {}),
      ...(opts.orphanFilter ? { orphanFilter: opts.orphanFilter } : {}),
    });
  } catch (err) {
    return {
      supported: true,
      notes: [],
      agent: null,
      candidates: [],
      spared: [],
      rounds: 0,
      ms: performance.now() - t0,
      errors: [String((err as Error)?.message ?? err)],
    };
  }
}

/** Writes the record (own transaction). Returns an error message instead of throwing. */
export function recordContainment(
  db: Db,
  sessionId: string,
  compactionSeq: number,
  r: ContainResult,
  now: string,
): string | null {
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      const run = db
        .prepare(
          `INSERT INTO containments (session_id, compaction_seq, at, supported, agent_pid, agent_start, agent_cmdline, pid_ns, rounds, ms, notes_json, errors_json, spared_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          sessionId,
          compactionSeq,
          now,
          r.supported ? 1 : 0,
          r.agent?.pid ?? null,
          r.agent?.start_ticks ?? null,
          r.agent?.cmdline ?? null,
          nsOf('self'),
          r.rounds,
          Math.round(r.ms * 1000) / 1000,
          JSON.stringify(r.notes),
          JSON.stringify(r.errors),
          JSON.stringify(r.spared.slice(0, 100)),
        );
      const ins = db.prepare(
        `INSERT INTO contained_processes (containment_id, session_id, compaction_seq, pid, start_ticks, start_ns, exe, cmdline, why, attempt_id, action, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const c of r.candidates)
        ins.run(
          run.lastInsertRowid,
          sessionId,
          compactionSeq,
          c.pid,
          c.start_ticks,
          c.start_ns,
          c.exe,
          c.cmdline,
          c.why,
          c.attempt_id,
          c.action,
          now,
        );
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    return null;
  } catch (err) {
    return `recording the containment failed: ${String((err as Error)?.message ?? err)}`;
  }
}

// ---------------------------------------------------------------------------
// Who may confirm: the ancestry of a `latch verify` / `latch resume` process

export interface AncestorEvidence {
  pid: number;
  start_ticks: string;
  start_at: string;
  exe: string | null;
  cmdline: string;
  uid: number;
  tty: boolean;
  pid_ns: string | null;
}

export interface Refusal {
  pid: number;
  cmdline: string;
  reason: string;
}

export interface AncestryReport {
  supported: boolean;
  chain: AncestorEvidence[];
  pid1_ns: string | null;
  self_ns: string | null;
  refusals: Refusal[];
  /** Why `--yes` alone is not enough here (the interactive code still is). */
  yes_refusals: Refusal[];
  notes: string[];
}

const isoOf = (ns: bigint): string => {
  try {
    return new Date(Number(ns / 1_000_000n)).toISOString();
  } catch {
    return 'unknown';
  }
};

/**
 * Checks the process `pid` (default: this one) and its ancestors: refused when any of them is an
 * agent process or an agent's sandbox, runs in another pid namespace than PID 1 (or a nested one),
 * is recorded in contained_processes, or is an orphan (parent PID 1 / a subreaper) or a terminal
 * multiplexer's child that started inside an attempt window of any session. `episodeStartNs` (the
 * earliest start of the held episodes) adds the `--yes` rule: the chain must not come from a job
 * scheduler and its root (the topmost process below PID 1 / a subreaper) must predate the latch.
 * Never throws (an internal error is a refusal).
 */
export function checkAncestry(
  db: Db | null,
  opts: { pid?: number; episodeStartNs?: bigint | null; sessions?: readonly string[] } = {},
): AncestryReport {
  const report: AncestryReport = {
    supported: false,
    chain: [],
    pid1_ns: null,
    self_ns: null,
    refusals: [],
    yes_refusals: [],
    notes: [],
  };
  if (!procSupported()) {
    report.notes.push(
      `unsupported: no /proc on ${process.platform}; the ancestry of this process cannot be checked (only the typed confirmation code protects the interactive path)`,
    );
    return report;
  }
  report.supported = true;
  try {
    const boot = bootNs();
    const pid = opts.pid ?? procSelfPid();
    const chain = ancestry(pid, boot);
    const windows = db
      ? attemptWindows(db, {
          sinceNs: chain.reduce(
            (m, p) => (p.startNs < m ? p.startNs : m),
            BigInt(Number.MAX_SAFE_INTEGER) * 1_000_000n,
          ),
        })
      : [];
    let contained = new Set<string>();
    if (db) {
      try {
        contained = new Set(
          (
            db.prepare('SELECT pid, start_ticks FROM contained_processes').all() as {
              pid: number;
              start_ticks: string;
            }[]
          ).map((r) => `${r.pid}:${r.start_ticks}`),
        );
      } catch {
        /* an older store: no containment recorded */
      }
    }
    report.pid1_ns = nsOf(1);
    report.self_ns = nsOf(pid);
    if (report.pid1_ns === null)
      report.notes.push(
        'the pid namespace of PID 1 cannot be read here; nested namespaces are detected through NSpid, the namespace the agent ran in and the sandbox executables',
      );
    // The pid namespace the hook (the agent's own) ran in at each trip of these sessions: a process
    // in another one (the agent's sandbox, which mounts its own /proc) is not the human's.
    if (db && report.self_ns && opts.sessions && opts.sessions.length > 0) {
      try {
        const q = db.prepare('SELECT DISTINCT pid_ns FROM containments WHERE session_id = ? AND pid_ns IS NOT NULL');
        const agentNs = new Set<string>();
        for (const sid of opts.sessions) for (const r of q.all(sid) as { pid_ns: string }[]) agentNs.add(r.pid_ns);
        if (agentNs.size > 0 && !agentNs.has(report.self_ns)) {
          report.refusals.push({
            pid,
            cmdline: cmdlineText(argvOf(pid)),
            reason: `runs in pid namespace ${report.self_ns}, but the agent ran in ${[...agentNs].join(', ')} (a sandbox, or another container)`,
          });
        }
      } catch {
        /* an older store */
      }
    }
    try {
      const m = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/self/status`, 'utf8'));
      if (m && m[1]!.trim().split(/\s+/).length > 1)
        report.refusals.push({
          pid,
          cmdline: cmdlineText(argvOf(pid)),
          reason: `runs in a nested pid namespace (NSpid ${m[1]!.trim()}): a sandbox`,
        });
    } catch {
      /* no NSpid line (old kernel) */
    }
    const refuse = (p: Proc, argv: string[], reason: string) =>
      report.refusals.push({ pid: p.pid, cmdline: cmdlineText(argv), reason });
    let root: Proc | null = null;
    for (let i = 0; i < chain.length; i++) {
      const p = chain[i]!;
      const exe = exeOf(p.pid);
      const argv = argvOf(p.pid);
      const ns = nsOf(p.pid);
      report.chain.push({
        pid: p.pid,
        start_ticks: p.startTicks,
        start_at: isoOf(p.startNs),
        exe,
        cmdline: cmdlineText(argv, 200),
        uid: p.uid,
        tty: p.ttyNr !== 0,
        pid_ns: ns,
      });
      if (isAgentProcess(exe, argv)) refuse(p, argv, "is an agent process (its descendants are the agent's)");
      if (isSandboxProcess(exe)) refuse(p, argv, 'is an agent sandbox');
      if (ns && report.pid1_ns && ns !== report.pid1_ns)
        refuse(p, argv, `runs in pid namespace ${ns}, not PID 1's ${report.pid1_ns}`);
      if (contained.has(`${p.pid}:${p.startTicks}`))
        refuse(p, argv, 'was contained at a latch (recorded in contained_processes)');
      if (p.pid === 1) continue;
      const parent = chain[i + 1];
      const parentExe = parent ? exeOf(parent.pid) : null;
      const orphan = !parent || parent.pid === 1 || REAPER_EXES.test(base(parentExe));
      const multiplexed = !!parent && MULTIPLEXER_EXES.test(base(parentExe));
      if ((orphan || multiplexed) && p.uid === (process.getuid?.() ?? -1)) {
        const w = windowOf(windows, p.startNs);
        if (w)
          refuse(
            p,
            argv,
            `started at ${isoOf(p.startNs)}, inside the window of attempt ${w.id} (session ${w.session_id}), as ${orphan ? 'an orphan' : "a terminal multiplexer's child"}: a tool call started it`,
          );
      }
      if (SCHEDULER_EXES.test(base(exe)))
        report.yes_refusals.push({
          pid: p.pid,
          cmdline: cmdlineText(argv),
          reason: 'is a job scheduler: a job it runs may have been registered by the agent',
        });
      if (orphan && root === null) root = p;
    }
    if (root && opts.episodeStartNs != null && root.startNs >= opts.episodeStartNs) {
      report.yes_refusals.push({
        pid: root.pid,
        cmdline: cmdlineText(argvOf(root.pid)),
        reason: `the root of this process tree started at ${isoOf(root.startNs)}, after the latch (a job started by a service such as systemd-run, at or cron looks like this)`,
      });
    }
  } catch (err) {
    report.refusals.push({
      pid: process.pid,
      cmdline: '',
      reason: `the ancestry could not be checked: ${String((err as Error)?.message ?? err)}`,
    });
  }
  return report;
}
