// The resident hook's trace (LATCH_RESIDENT_TRACE=1: src/resident/server.ts), for tests that check
// which calls it answered on the real agents.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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
