// One fact about a process from /proc, for the ledger (is an attempt's closer alive?) and for the
// resident hook's client (is the resident hook alive?). Dependency-free apart from node:fs.
import { readFileSync } from 'node:fs';

/**
 * State (field 3), parent (field 4) and start time in clock ticks (field 22) of /proc/<pid>/stat;
 * null without /proc or for a process gone.
 */
export function procStat(pid: number): { state: string; ppid: number; start: string } | null {
  try {
    // The comm field may hold spaces and parentheses: fields are counted after its last ')'.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return rest[19] === undefined ? null : { state: rest[0] ?? '', ppid: Number(rest[1]), start: rest[19] };
  } catch {
    return null;
  }
}

/** The parent of `pid`; null without /proc, for a process gone, or at the top. */
export function procParent(pid: number): number | null {
  const ppid = procStat(pid)?.ppid;
  return ppid !== undefined && Number.isInteger(ppid) && ppid > 0 ? ppid : null;
}

/**
 * The process `pid` runs: started at `start` (not another one under a reused pid), not exited (a
 * zombie has) and not stopped (SIGSTOP, or held by a tracer).
 */
export function runs(pid: number, start: string): boolean {
  const stat = procStat(pid);
  return stat !== null && stat.start === start && !['Z', 'X', 'T', 't'].includes(stat.state);
}
