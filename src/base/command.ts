// How the agent (or a human) invokes this very Latch: `node <dist>/latch.cjs`, absolute, so that
// the agent's PATH does not matter; `latch` when not running from a bundle (tests under tsx).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { moduleDir } from './paths.js';

let cached: string | undefined;

export function latchCommand(): string {
  if (cached) return cached;
  let prog = 'latch';
  try {
    const entry = join(moduleDir, 'latch.cjs');
    if (existsSync(entry)) prog = `node ${entry}`;
  } catch {
    prog = 'latch';
  }
  return (cached = prog);
}

/** The absolute path of this Latch's `latch.cjs` (null when not running from a bundle). */
export function latchEntry(): string | null {
  const c = latchCommand();
  return c.startsWith('node ') ? c.slice('node '.length) : null;
}

/** The read-only command that prints page N of a session's brief. */
export function pageCommand(sessionId: string, n: number | 'N'): string {
  return `${latchCommand()} brief --page ${n} --session ${sessionId}`;
}
