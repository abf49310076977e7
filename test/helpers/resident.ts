// The resident hook's trace (LATCH_RESIDENT_TRACE=1: src/resident/server.ts), for tests that check
// which calls it answered on the real agents; and a wait for one to be up.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { residentHooks } from '../../src/resident/list.js';

export interface ResidentTraceLine {
  at: string;
  pid: number;
  session: string | null;
  call: string | null;
  served: boolean;
  why?: string;
  exitCode?: number;
}

export function residentTrace(latchHome: string): ResidentTraceLine[] {
  const f = join(latchHome, 'resident', 'trace.log');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ResidentTraceLine);
}

/**
 * Waits, blocking (a fake model's scripted turn calls it: the agent is waiting for that answer), until
 * a resident hook of `latchHome` answers, up to `ms`. What it found, for an assertion's message.
 */
export function awaitResident(latchHome: string, ms = 20_000): string {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const end = Date.now() + ms;
  for (;;) {
    const hooks = residentHooks(latchHome);
    if (hooks.some((h) => h.alive) || Date.now() > end) return JSON.stringify(hooks);
    Atomics.wait(sleeper, 0, 0, 25);
  }
}
