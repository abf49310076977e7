// Temp directories and a git runner with a fixed identity, shared by the tree/git/observe tests.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

export const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Latch Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Latch Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  GIT_CONFIG_NOSYSTEM: '1',
};

const temps: string[] = [];
after(() => {
  // maxRetries: a workspace watcher a hook started may still be leaving (it removes its cookie directory).
  for (const d of temps) rmSync(d, { recursive: true, force: true, maxRetries: 10 });
});

/** A temp directory removed when the test file ends. */
export function tmpDir(prefix = 'latch-'): string {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
