import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** The one env override for the state directory: LATCH_HOME, else ${XDG_STATE_HOME:-~/.local/state}/latch. */
export function latchHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LATCH_HOME) return resolve(env.LATCH_HOME);
  const state = env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return resolve(state, 'latch');
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
