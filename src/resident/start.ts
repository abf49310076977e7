// Starting a resident hook (server.ts), from an ordinary hook once it has replied: small, since it is
// part of every hook's bundle.
import { existsSync, lstatSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { childProcess } from '../base/lazy.js';
import { moduleDir } from '../base/paths.js';
import { procParent, procStat } from '../base/proc.js';
import { readOrNull, residentSpool, SPOOL } from './identity.js';

/** A hook starts a resident hook for an identity at most this often. */
const RESTART_MS = 10_000;

/** This installation's entry, as dist/latch.cjs's client names itself (its real path). */
export function entryPath(): string {
  return join(moduleDir, 'latch.cjs');
}

/**
 * Starts a resident hook for this process's identity, detached, once the ordinary hook replied
 * (src/hook.ts). At most one start per identity every RESTART_MS; never throws.
 */
export function startResident(agent: string, env: NodeJS.ProcessEnv = process.env): void {
  try {
    const dir = residentSpool(entryPath(), agent, env, process.cwd())?.dir;
    // Only beside a store: a hook without one (a probe, a broken install) leaves the home as it found it.
    if (!dir || !existsSync(join(dirname(dirname(dir)), 'latch.db')) || !ownDirectory(dir, true)) return;
    const stamp = join(dir, SPOOL.started);
    const last = Number(readOrNull(stamp));
    if (Number.isFinite(last) && Date.now() - last < RESTART_MS && Date.now() >= last) return;
    writeFileSync(stamp, String(Date.now()), { mode: 0o600 });
    writeFileSync(join(dir, SPOOL.agents), ancestors(), { mode: 0o600 });
    const child = childProcess().spawn(process.execPath, [...process.execArgv, entryPath(), '__serve', agent], {
      detached: true,
      stdio: 'ignore',
      env,
      cwd: process.cwd(),
    });
    child.on('error', () => undefined);
    child.unref();
    if (child.pid !== undefined) recordSpawned(dir, child.pid);
  } catch {
    /* no resident hook: every hook runs in a process of its own, as before */
  }
}

/**
 * Records the resident hook this hook just spawned, `<pid> <start>`, in the spool's `spawned` file
 * (tmp + rename: a reader sees the old list or the new one), keeping the lines of those recorded
 * earlier that still run as recorded. Its start time is fixed at fork (an exec does not change it),
 * and the child is still this hook's (its parent this process: nothing has reaped it, so its pid was
 * not reused): the identity containment spares is one this hook wrote of the process it created, never
 * one a process (or anything read at the trip: its argv, a path) says of itself. A child already
 * exited is not recorded. A lost race between two hooks loses a record: that resident hook is then
 * contained like any process of the agent (the client falls back to the ordinary hook).
 */
function recordSpawned(dir: string, pid: number): void {
  const st = procStat(pid);
  if (!st || st.ppid !== process.pid || st.state === 'Z') return;
  const file = join(dir, SPOOL.spawned);
  const kept = (readOrNull(file) ?? '').split('\n').filter((l) => {
    const m = /^(\d+) (\d+)$/.exec(l);
    return m !== null && l !== `${pid} ${st.start}` && procStat(Number(m[1]))?.start === m[2];
  });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, [...kept, `${pid} ${st.start}`].map((l) => `${l}\n`).join(''), { mode: 0o600 });
  renameSync(tmp, file);
}

/** This hook's ancestors as `<pid> <start>` lines, nearest first (at most 32; cheap /proc reads). */
function ancestors(): string {
  const lines: string[] = [];
  let pid = procParent(process.pid);
  while (pid !== null && pid > 1 && lines.length < 32) {
    const st = procStat(pid);
    if (!st) break;
    lines.push(`${pid} ${st.start}`);
    pid = st.ppid;
  }
  return lines.map((l) => `${l}\n`).join('');
}

/**
 * The spool directory exists (made when `create`, inside an existing Latch home), is a real
 * directory, is this user's, and no one else may enter it.
 */
export function ownDirectory(dir: string, create: boolean): boolean {
  try {
    if (create) {
      makeDir(dirname(dir));
      makeDir(dir);
    }
    const s = lstatSync(dir);
    return s.isDirectory() && s.uid === process.getuid?.() && (s.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
