// The resident hooks of a Latch home: listed for `latch doctor` (src/commands/doctor.ts), dismissed by
// `latch uninstall`.
import { readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { argvOf } from '../contain/proc.js';
import { namedServer, readOrNull, SPOOL, serverAnswers } from './identity.js';

export interface ResidentHook {
  /** Its spool directory's name (the identity's hash). */
  name: string;
  pid: number;
  /** Its start time (/proc/<pid>/stat field 22), as its `server` file names it. */
  start: string;
  /** It runs and its heartbeat is recent. */
  alive: boolean;
}

/** Every spool directory of `home` that names a resident hook, with whether that one still answers. */
export function residentHooks(home: string): ResidentHook[] {
  let names: string[];
  try {
    names = readdirSync(join(home, 'resident'));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const s = namedServer(join(home, 'resident', name));
    return s ? [{ name, pid: s.pid, start: s.start, alive: serverAnswers(s) }] : [];
  });
}

/**
 * `pid:start` of the resident hooks the hooks of `home` recorded when they spawned them (each spool's
 * `spawned` file, written by the spawning hook: src/resident/start.ts). What containment spares as a
 * resident hook and src/contain/jobs.ts does not count as a job; never the `server` file, which
 * the serving process writes about itself. A malformed line is no identity.
 */
export function recordedResidents(home: string): Set<string> {
  const out = new Set<string>();
  let names: string[];
  try {
    names = readdirSync(join(home, 'resident'));
  } catch {
    return out;
  }
  for (const name of names) {
    const text = readOrNull(join(home, 'resident', name, SPOOL.spawned));
    for (const l of text?.split('\n') ?? []) {
      const m = /^(\d+) (\d+)$/.exec(l);
      if (m) out.add(`${m[1]}:${m[2]}`);
    }
  }
  return out;
}

/**
 * Tells this home's resident hooks of `agent` to leave (`latch uninstall AGENT`): a marker naming each
 * is written beside its `server` file, and it leaves at its next look (within a second), between two
 * requests, so that no call it has claimed goes unanswered; a request it had not claimed goes to the
 * ordinary hook. Those of another agent stay; `null`: every agent's (`latch doctor --repair`, which
 * moves the store they keep open). The number told to leave.
 */
export function dismissResidentHooks(home: string, agent: string | null): number {
  let told = 0;
  for (const r of residentHooks(home)) {
    if (!r.alive || (agent !== null && servedAgent(r.pid) !== agent)) continue;
    const dir = join(home, 'resident', r.name);
    const tmp = join(dir, `${SPOOL.dismissed}.${process.pid}.tmp`);
    try {
      writeFileSync(tmp, `${r.pid} ${r.start}\n`, { mode: 0o600 });
      renameSync(tmp, join(dir, SPOOL.dismissed));
      told++;
    } catch {
      // its directory went meanwhile: it leaves anyway
    }
  }
  return told;
}

/** The agent a running `latch __serve AGENT` serves (its last argument), else null. */
function servedAgent(pid: number): string | null {
  const args = argvOf(pid);
  return args.at(-2) === '__serve' ? (args.at(-1) ?? null) : null;
}

/** The line `latch uninstall` prints for `stopped` resident hooks told to leave (none: no line). */
export function residentLine(stopped: number): string {
  if (stopped === 0) return '';
  return `Stopped ${stopped} resident Latch hook${stopped === 1 ? '' : 's'} of this agent (each leaves after the call in hand).\n`;
}
