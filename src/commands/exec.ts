// `latch exec -- CMD...`: run CMD only when no session in the workspace is latched or paused.
import { spawnSync } from 'node:child_process';
import { constants } from 'node:os';
import { ExitError, EXIT } from '../base/errors.js';
import { blockers } from '../guard/guard.js';
import { withStore, type Io } from '../kit/io.js';
import { targetSessions } from './shared/target.js';

export async function execGuarded(io: Io, opts: { cwd?: string; command: string[] }): Promise<number> {
  if (opts.command.length === 0) throw new ExitError(EXIT.usage, 'usage: latch exec [--cwd DIR] -- CMD [ARGS...]');
  const held = withStore(io, (db) => {
    const { sessions } = targetSessions(db, io, { cwd: opts.cwd });
    const ids = new Set<string>();
    for (const s of sessions) for (const b of blockers(db, s)) ids.add(`${b.session_id} (${b.state})`);
    return [...ids];
  });
  if (held.length > 0) {
    io.err(
      `latch exec: not running \`${opts.command.join(' ')}\`: the workspace has a latched session: ${held.join(', ')}. Run \`latch verify\` first.\n`,
    );
    return EXIT.latched;
  }
  const r = spawnSync(opts.command[0]!, opts.command.slice(1), {
    stdio: 'inherit',
    cwd: opts.cwd ?? io.cwd,
    env: io.env,
  });
  if (r.error) {
    io.err(`latch exec: cannot run ${opts.command[0]}: ${r.error.message}\n`);
    return 127;
  }
  if (r.signal) return 128 + (constants.signals[r.signal] ?? 0);
  return r.status ?? 1;
}
