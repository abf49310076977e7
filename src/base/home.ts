// The state directory from the environment, apart from paths.ts so that the hook's first lines
// (src/resident/client.ts, in dist/latch.cjs) find it without loading anything else.
import { join, resolve } from 'node:path';

/**
 * LATCH_HOME, else ${XDG_STATE_HOME:-$HOME/.local/state}/latch; null when only the password database
 * could say (no HOME: latchHome in paths.ts then asks os.homedir()).
 */
export function latchHomeFromEnv(env: NodeJS.ProcessEnv): string | null {
  if (env.LATCH_HOME) return resolve(env.LATCH_HOME);
  const state = env.XDG_STATE_HOME || (env.HOME ? join(env.HOME, '.local', 'state') : null);
  return state === null ? null : resolve(state, 'latch');
}
