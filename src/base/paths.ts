import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { latchHomeFromEnv } from './home.js';

/**
 * This module's directory and file: in a bundle its own (`__dirname`, `__filename`: no URL is built,
 * which the hook's start would pay for), from the sources this file's (import.meta.dirname and
 * .filename on Node >= 20.11, else from its URL).
 */
export const moduleDir: string = import.meta.dirname ?? dirname(fileURLToPath(import.meta.url));
export const moduleFile: string = import.meta.filename ?? fileURLToPath(import.meta.url);

/**
 * The package root (the directory holding package.json), found from this module's location
 * (moduleDir): `dist/` in a bundle, `src/base/` from the sources. Null when none is found within four
 * levels.
 */
export function packageRoot(start: string = moduleDir): string | null {
  let dir = start;
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  return null;
}

/** The entry (dist/latch.cjs) beside this bundle, else the package's built one (builtEntry). */
export function installedEntry(): string | null {
  const beside = join(moduleDir, 'latch.cjs');
  return existsSync(beside) ? beside : builtEntry();
}

/** dist/latch.cjs of this package (found from its root: packageRoot), if it exists. */
export function builtEntry(): string | null {
  const root = packageRoot();
  const p = root ? join(root, 'dist', 'latch.cjs') : null;
  return p && existsSync(p) ? p : null;
}

/** The one env override for the state directory: LATCH_HOME, else ${XDG_STATE_HOME:-~/.local/state}/latch. */
export function latchHome(env: NodeJS.ProcessEnv = process.env): string {
  return latchHomeFromEnv(env) ?? resolve(homedir(), '.local', 'state', 'latch');
}

export function dbPath(home: string): string {
  return join(home, 'latch.db');
}

export function userConfigPath(home: string): string {
  return join(home, 'config.toml');
}

export const PROJECT_CONFIG = '.latch.toml';

/** Where a workspace watcher (src/watch/daemon.ts) takes its sync cookies. */
export function cookieDir(home: string, instance: string): string {
  return join(home, 'watch', instance);
}
