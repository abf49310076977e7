// `latch watch`: the workspace watchers (src/watch/daemon.ts) — list them, or stop them.
import { EXIT } from '../base/errors.js';
import { json, withStore, type Io } from '../kit/io.js';
import { resolveWorkspace } from './shared/target.js';
import { listWatchers, stopWatchers, type WatcherJson } from './shared/watchers.js';

export async function watch(
  io: Io,
  opts: { action: string; cwd?: string; all?: boolean; json: boolean },
): Promise<number> {
  if (opts.action !== 'status' && opts.action !== 'stop') {
    io.err('usage: latch watch [status|stop] [--cwd DIR | --all] [--json]\n');
    return EXIT.usage;
  }
  const workspace = opts.all
    ? null
    : opts.cwd !== undefined || opts.action === 'stop'
      ? resolveWorkspace(io, opts.cwd)
      : null;
  const list = withStore(io, (db) => listWatchers(db, workspace), { ifMissing: () => [] as WatcherJson[] });
  if (opts.action === 'stop') {
    const stopped = stopWatchers(list);
    if (opts.json) json(io, { stopped });
    else
      io.out(
        stopped.length === 0
          ? 'No running watcher to stop.\n'
          : stopped.map((w) => `Stopped the watcher of ${w}\n`).join(''),
      );
    return 0;
  }
  if (opts.json) {
    json(io, { watchers: list });
    return 0;
  }
  if (list.length === 0) {
    io.out(
      workspace
        ? `No watcher for ${workspace}: each Close stats every file (a hook starts one at the next baseline or Close).\n`
        : 'No workspace watchers.\n',
    );
    return 0;
  }
  for (const w of list) {
    const what =
      !w.alive && w.state !== 'unavailable'
        ? 'not running'
        : w.state === 'unavailable'
          ? `unavailable (${w.reason ?? 'no reason recorded'})`
          : w.state;
    io.out(
      `${w.workspace}\n  ${what}; pid ${w.pid}; ${w.directories} directories watched; journal at ${w.journal_seq}; since ${w.started_at}\n`,
    );
  }
  return 0;
}
