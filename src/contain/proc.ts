// Process listing and identity from Linux /proc: one process's stat, exe, argv, environment and pid
// namespace; a snapshot of every process with its children; a pid's ancestry; whether a pid still
// names the process it named (pid reuse). Every reader returns null / [] instead of throwing.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { wallNs } from '../base/clock.js';

/** USER_HZ: /proc/PID/stat start times are in these ticks (100 on every mainstream Linux). */
const CLK_TCK = 100n;

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
  /** Threads in its thread group (/proc/PID/status): a zombie leader with more than one still runs. */
  threads: number;
}

/**
 * Does the process still run? A zombie (`Z`) whose thread group holds more threads does: its leader
 * called the exit syscall while another thread goes on, and a signal to its pid still reaches the group.
 */
export function isLive(p: Pick<Proc, 'state' | 'threads'>): boolean {
  return p.state !== 'X' && (p.state !== 'Z' || p.threads > 1);
}

/** The Threads: count of /proc/PID/status text (1 when absent). */
function threadsOf(status: string): number {
  const m = /^Threads:\s+(\d+)/m.exec(status);
  return m ? Number(m[1]) : 1;
}

export function procSupported(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    readFileSync('/proc/self/stat', 'utf8');
    return true;
  } catch {
    return false;
  }
}

export { wallNs };

/** Wall-clock ns of the boot (CLOCK_BOOTTIME origin), from /proc/uptime: ~10 ms precise (btime in /proc/stat is whole seconds). */
export function bootNs(): bigint {
  try {
    const up = readFileSync('/proc/uptime', 'utf8').split(' ')[0]!;
    const [s, frac = '0'] = up.split('.');
    const upNs = BigInt(s!) * 1_000_000_000n + BigInt(frac.padEnd(9, '0').slice(0, 9));
    return wallNs() - upNs;
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
      threads: threadsOf(status),
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
  const parse = (text: string) => {
    const m = new Map<string, string>();
    for (const kv of text.split('\0')) {
      const i = kv.indexOf('=');
      if (i > 0) m.set(kv.slice(0, i), kv.slice(i + 1));
    }
    return m;
  };
  try {
    return parse(readFileSync(`/proc/${pid}/environ`, 'utf8'));
  } catch {
    // A zombie leader's own entry has no memory left to read; a live thread of its group has.
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          return parse(readFileSync(`/proc/${pid}/task/${tid}/environ`, 'utf8'));
        } catch {
          // that thread is gone too
        }
      }
    } catch {
      // no such process
    }
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

/** The last component of a path ('' for null). */
export const baseName = (p: string | null): string => (p ? p.slice(p.lastIndexOf('/') + 1) : '');

export function cmdlineText(argv: string[], max = 300): string {
  const s = argv.join(' ').replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : '?'));
  return s.length > max ? s.slice(0, max) + '…' : s;
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

export interface Snapshot {
  procs: Map<number, Proc>;
  children: Map<number, number[]>;
}

export function snapshot(boot: bigint): Snapshot {
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

/**
 * Does pid still name the live process that started at startTicks (not a reused pid, not a zombie
 * whose whole thread group has exited)?
 */
export function sameProcess(pid: number, startTicks: string): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (f[19] !== startTicks) return false;
    const state = f[0] ?? '?';
    return isLive({ state, threads: state === 'Z' ? threadsOf(readFileSync(`/proc/${pid}/status`, 'utf8')) : 1 });
  } catch {
    return false;
  }
}
