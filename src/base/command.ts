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

/**
 * The read-only command that prints page N of the session's brief: one spelling everywhere (the
 * brief, the denial, the trip notice, the README). The hook runs it itself, for the session that
 * asks, whatever `latch` is on the agent's PATH (src/guard/decide.ts latchReplay).
 */
export function pageCommand(n: number | 'N'): string {
  return `latch brief --page ${n}`;
}
