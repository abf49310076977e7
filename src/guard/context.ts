// What one hook's run of the guard is given: the state directory, the store, the clock, the
// environment and the agent whose hook it is.
import type { Agent } from '../agents/agent.js';
import type { Db } from '../store/store.js';

export interface GuardContext {
  home: string;
  openDb(): Db;
  /** Done with the store openDb gave (default: close it; the resident hook keeps its own open). */
  closeDb?(db: Db): void;
  now(): string;
  /** The hook's environment (LATCH_SANDBOX, LATCH_CODEX_BIN); process.env when absent. */
  env?: NodeJS.ProcessEnv;
  /** The agent whose hook this is: its transcript, lineage, sandbox and tool outputs. */
  agent: Agent;
  /**
   * Run by the resident hook (src/resident/server.ts) for another process: only a PreToolUse on a known,
   * mutable session with nothing to count, recover or prepare is answered; anything else throws
   * NotServedError before the first write, and the client runs the ordinary hook.
   */
  resident?: boolean;
}
