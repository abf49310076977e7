// What a Close, a turn's end or the recovery barrier needs: the workspace observation and the watcher
// client. The hook bundle loads this module lazily as its own file (dist/observer.cjs), a quarter of
// the size of dist/slow.cjs, so that a PostToolUse does not pay for checkpoints, continuity or TOML.
export { observeWorkspace } from './observe.js';
export { ensureWatcher, syncWatcher } from '../watch/client.js';
