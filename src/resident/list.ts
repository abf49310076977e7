// The resident hooks of a Latch home, for `latch doctor` (src/commands/doctor.ts).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { namedServer, serverAnswers } from './identity.js';

export interface ResidentHook {
  /** Its spool directory's name (the identity's hash). */
  name: string;
  pid: number;
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
    return s ? [{ name, pid: s.pid, alive: serverAnswers(s) }] : [];
  });
}
