// The agents Latch supports: one line each. An agent is one folder under src/agents/ implementing
// the port in src/agents/agent.ts (ARCHITECTURE.md: "How to add an agent"). Each loads on first use,
// so a hook initialises only its own agent's modules (the hook bundle holds them all).
import type { Agent, AgentName } from './agent.js';

const LOADERS: Readonly<Record<AgentName, () => Promise<Agent>>> = {
  codex: () => import('./codex/index.js').then((m) => m.codex),
  claude: () => import('./claude/index.js').then((m) => m.claude),
};

/** Every agent name, in registry order. */
export const AGENT_NAMES = Object.keys(LOADERS) as AgentName[];

/** Is `name` an agent Latch has (an unknown name on the command line, a stored session of a newer Latch)? */
export function isAgentName(name: string | null | undefined): name is AgentName {
  return name !== null && name !== undefined && Object.hasOwn(LOADERS, name);
}

/** The agent named `name`, loaded; null when Latch has none by that name. */
export async function loadAgent(name: string | null | undefined): Promise<Agent | null> {
  return isAgentName(name) ? LOADERS[name]() : null;
}
