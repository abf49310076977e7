// The agents Latch supports: one line each in LOADERS, and one in PROCESSES. An agent is one folder
// under src/agents/ implementing the port in src/agents/agent.ts (ARCHITECTURE.md: "How to add an
// agent"). Each loads on first use, so a hook initialises only its own agent's modules (the hook
// bundle holds them all). Its process facts (./<name>/processes.ts, data only) load with the registry:
// containment, `latch verify` and the resident hook need every agent's, and load no agent for them.
import type { Agent, AgentName, AgentProcesses } from './agent.js';
import { useAgentProcesses } from '../contain/match.js';
import { claudeProcesses } from './claude/processes.js';
import { codexProcesses } from './codex/processes.js';

const LOADERS: Readonly<Record<AgentName, () => Promise<Agent>>> = {
  codex: () => import('./codex/index.js').then((m) => m.codex),
  claude: () => import('./claude/index.js').then((m) => m.claude),
};

/** Which processes are each agent and its sandbox (the same objects as each Agent's `processes`). */
const PROCESSES: Readonly<Record<AgentName, AgentProcesses>> = {
  codex: codexProcesses,
  claude: claudeProcesses,
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

const extraProcesses: AgentProcesses[] = [];

/** Every registered agent's process facts, in registry order (then tests' extra ones). */
export function agentProcesses(): readonly AgentProcesses[] {
  return [...AGENT_NAMES.map((n) => PROCESSES[n]), ...extraProcesses];
}

/**
 * Tests only: recognise the processes of an agent Latch does not ship (a scripted fake agent,
 * test/fixtures/fake-agent/) as an agent's, in this process, until the returned function is called.
 * Nothing in src/ calls it, and no environment variable reaches it.
 */
export function registerTestAgentProcesses(facts: AgentProcesses): () => void {
  extraProcesses.push(facts);
  return () => {
    const i = extraProcesses.indexOf(facts);
    if (i >= 0) extraProcesses.splice(i, 1);
  };
}

// The core (src/contain/match.ts) imports no agent: the registry hands it the facts.
useAgentProcesses(agentProcesses);
