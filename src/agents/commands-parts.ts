// Every agent's commands part (setup, uninstall, doctor checks), for the commands' bundle (src/cli.ts):
// where the hook bundle does not carry an agent's `commands()` (scripts/build.mjs), it loads them from
// dist/cli.cjs. The one list outside the registry that the bundles force, kept beside it.
export { codexCommands } from './codex/commands.js';
export { claudeCommands } from './claude/commands.js';
