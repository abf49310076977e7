// The agents Latch supports: one line each. An agent is one folder under src/agents/ implementing
// the port in src/agents/agent.ts (ARCHITECTURE.md: "How to add an agent").
import type { Agent, AgentName } from './agent.js';
import { codex } from './codex/index.js';

export const AGENTS: Readonly<Record<AgentName, Agent>> = { codex };

/** The agent named `name`, or null (an unknown name on the command line, a stored session of a newer Latch). */
export function agentByName(name: string | null | undefined): Agent | null {
  return name !== null && name !== undefined && Object.hasOwn(AGENTS, name) ? AGENTS[name as AgentName] : null;
}
