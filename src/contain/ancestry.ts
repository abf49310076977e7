// Who may confirm: the ancestry of a `latch verify` / `latch resume` process (no agent, sandbox,
// contained process, or orphan of an attempt among its ancestors).
import { readFileSync } from 'node:fs';
import type { Db } from '../store/store.js';
import { isAgentProcess, isMultiplexerExe, isReaperExe, isSandboxProcess, isSchedulerExe } from './match.js';
import { ancestry, argvOf, bootNs, cmdlineText, exeOf, nsOf, type Proc, procSelfPid, procSupported } from './proc.js';
import { attemptWindows, windowOf } from './windows.js';

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
      const orphan = !parent || parent.pid === 1 || isReaperExe(parentExe);
      const multiplexed = !!parent && isMultiplexerExe(parentExe);
      if ((orphan || multiplexed) && p.uid === (process.getuid?.() ?? -1)) {
        const w = windowOf(windows, p.startNs);
        if (w)
          refuse(
            p,
            argv,
            `started at ${isoOf(p.startNs)}, inside the window of attempt ${w.id} (session ${w.session_id}), as ${orphan ? 'an orphan' : "a terminal multiplexer's child"}: a tool call started it`,
          );
      }
      if (isSchedulerExe(exe))
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
