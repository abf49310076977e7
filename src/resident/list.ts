// The resident hooks of a Latch home, for `latch doctor` (src/commands/doctor.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runs } from '../base/proc.js';
import { SPOOL } from './identity.js';

export interface ResidentHook {
  /** Its spool directory's name (the identity's hash). */
  name: string;
  pid: number;
  alive: boolean;
}

/** Every spool directory of `home` that names a resident hook, with whether that process still runs. */
export function residentHooks(home: string): ResidentHook[] {
  let names: string[];
  try {
    names = readdirSync(join(home, 'resident'));
  } catch {
    return [];
  }
  const out: ResidentHook[] = [];
  for (const name of names) {
    let text: string;
    try {
      text = readFileSync(join(home, 'resident', name, SPOOL.server), 'utf8');
    } catch {
      continue;
    }
    const m = /^(\d+) (\d+)\n$/.exec(text);
    if (m) out.push({ name, pid: Number(m[1]), alive: runs(Number(m[1]), m[2]!) });
  }
  return out;
}
