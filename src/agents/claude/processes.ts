// Which processes are Claude Code and its sandbox (the port's AgentProcesses). Data only, and no
// import: containment, `latch verify` and the resident hook read it through the registry without
// loading Claude Code's agent.
import type { AgentProcesses } from '../agent.js';

export const claudeProcesses: AgentProcesses = {
  exes: [/^claude$/, /^claude\.exe$/],
  // The native installer's builds: ~/.local/share/claude/versions/<version>.
  exePaths: [/\/claude\/versions\/[^/]+$/],
  // `node …/@anthropic-ai/claude-code/cli.js`, or the npm bin link `claude` run by node or bun.
  scripts: [/(^|\/)@anthropic-ai\/claude-code\/cli\.js$/, /(^|\/)claude$/],
  // Bubblewrap: Claude Code's own Bash sandbox on Linux, and the sealed read sandbox Latch runs for a
  // held read (src/agents/shared/bwrap.ts).
  sandboxes: [/^bwrap$/],
};
