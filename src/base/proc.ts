// One fact about a process from /proc, for the ledger (is an attempt's closer alive?) and for the
// resident hook's client (is the resident hook alive?). Dependency-free apart from node:fs.
import { readFileSync } from 'node:fs';

/** State (field 3) and start time in clock ticks (field 22) of /proc/<pid>/stat; null without /proc. */
export function procStat(pid: number): { state: string; start: string } | null {
  try {
    // The comm field may hold spaces and parentheses: fields are counted after its last ')'.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return rest[19] === undefined ? null : { state: rest[0] ?? '', start: rest[19] };
  } catch {
    return null;
  }
}

/** The parent of `pid` (/proc/<pid>/stat field 4); null without /proc or for a process gone. */
export function procParent(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
  } catch {
    return null;
  }
}

/**
 * The process `pid` runs: started at `start` (not another one under a reused pid), not exited (a
 * zombie has) and not stopped (SIGSTOP, or held by a tracer).
 */
export function runs(pid: number, start: string): boolean {
  const stat = procStat(pid);
  return stat !== null && stat.start === start && !['Z', 'X', 'T', 't'].includes(stat.state);
}
