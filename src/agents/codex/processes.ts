// Which processes are Codex and its sandbox (the port's AgentProcesses). Data only, and no import:
// containment, `latch verify` and the resident hook read it through the registry without loading Codex.
import type { AgentProcesses } from '../agent.js';

export const codexProcesses: AgentProcesses = {
  // The npm package's native binary is `codex-<arch>-<target>` (…/vendor/x86_64-unknown-linux-musl/bin/codex too).
  exes: [/^codex$/, /^codex-(x86_64|aarch64)-[\w-]+$/],
  exePaths: [],
  // `node …/@openai/codex/bin/codex.js`, or the launcher by any path.
  scripts: [/(^|\/)@openai\/codex\/bin\/codex\.js$/, /(^|\/)codex\.js$/],
  // Its Linux sandbox helper and the `codex sandbox` runner; bubblewrap, which the sealed read sandbox
  // Latch runs for a held read is (src/agents/shared/bwrap.ts).
  sandboxes: [/^bwrap$/, /^codex-linux-sandbox$/, /^codex-sandbox$/],
};
