// What one hook's run of the guard is given: the state directory, the store, the clock, the
// environment and the agent whose hook it is.
import type { Agent } from '../agents/agent.js';
import type { Db } from '../store/store.js';

export interface GuardContext {
  home: string;
  openDb(): Db;
  now(): string;
  /** The hook's environment (LATCH_SANDBOX, LATCH_CODEX_BIN); process.env when absent. */
  env?: NodeJS.ProcessEnv;
  /** The agent whose hook this is: its transcript, lineage, sandbox and tool outputs. */
  agent: Agent;
}
