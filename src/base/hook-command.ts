// What every agent's `latch setup <agent>` shares: the bundled entry a hook runs, the hook command
// line (absolute node and entry, quoted for sh), the fail-closed wrapper for the tool hook, and the
// atomic write of a user's configuration file (through a symlink, keeping its mode).
import { chmodSync, lstatSync, mkdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { installedEntry, moduleDir } from './paths.js';
import { shq, wrapFailClosed } from './hook-text.js';

/** The bundled hook entry: dist/latch.cjs beside the running bundle, else in the package root. */
export function defaultEntry(): string {
  return installedEntry() ?? join(moduleDir, 'latch.cjs');
}

export { shq } from './hook-text.js';

/** What a Claude Code handler's command starts with (latchHookRun). */
export const CLEAR_CA_PREFIX = 'NODE_EXTRA_CA_CERTS= ';

/**
 * `'<node>' '<entry>' hook <agent> --event <event>`: what a handler runs. For Claude Code it starts
 * with `NODE_EXTRA_CA_CERTS= ` (CLEAR_CA_PREFIX): with that variable set (Claude Code's advice behind
 * a corporate proxy) Node loads certificates at every start, 35–80 ms here, and the hook makes no TLS
 * connection. Claude Code runs every handler with /bin/sh -c; Codex runs them with `$SHELL -lc`,
 * where an assignment prefix is not portable (csh), so Codex's text has none.
 * src/contain/match.ts (hookCommandText) builds the same text.
 */
export function latchHookRun(agent: string, event: string, node: string, entry: string): string {
  return `${agent === 'claude' ? CLEAR_CA_PREFIX : ''}${shq(node)} ${shq(entry)} hook ${agent} --event ${event}`;
}

/**
 * `run` wrapped so that any exit other than 0 (allow, or a JSON reply) and 2 (deny) becomes exit 2
 * with a reason on stderr, and a missing entry says so (src/base/hook-text.ts owns the text).
 */
export function failClosed(run: string, agent: string, entry: string): string {
  return wrapFailClosed(run, agent, entry);
}

/**
 * Writes `file` atomically (a temporary file beside it, then a rename), through a symlink (to its
 * target, so the link stays), keeping the existing mode (`newMode` for a new file). Missing parent
 * directories are created with `dirMode` (default: the umask's).
 */
export function writeConfigAtomic(file: string, text: string, opts: { newMode?: number; dirMode?: number } = {}): void {
  let target = file;
  let mode = opts.newMode ?? 0o600;
  try {
    if (lstatSync(file).isSymbolicLink()) target = realpathSync(file);
    mode = statSync(target).mode & 0o7777;
  } catch {
    /* a new file */
  }
  mkdirSync(dirname(target), { recursive: true, ...(opts.dirMode !== undefined ? { mode: opts.dirMode } : {}) });
  const tmp = `${target}.latch-${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text, { mode });
    chmodSync(tmp, mode); // exactly the old mode, whatever the umask
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
