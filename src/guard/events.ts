// What the guard is told and what it answers, in no agent's vocabulary: an agent (src/agents/<name>)
// turns its hook payloads into an Observation + LatchEvent and the Decision back into its reply.
import type { AuthState } from '../session/authority.js';

/**
 * What a tool call is to Latch. `unknown`: a tool name the agent's adapter has never seen (a newer
 * release); it is tracked as if it could change files: while held it is denied with a reason naming
 * it, while mutable it gets a ledger attempt. `network`: a tool that changes no local file but reaches
 * the network (a web fetch or search: a request can trigger remote effects or carry data out); while
 * held it is denied with a reason naming it, while mutable it runs (the guard still gives it a ledger
 * attempt, as to every tracked kind).
 */
export type ToolKind = 'shell' | 'patch' | 'mcp' | 'agent' | 'network' | 'unknown';

export interface ToolCall {
  name: string;
  /** null: a tool the agent's adapter knows to be read-only, never blocked. */
  kind: ToolKind | null;
  /** Shell command text (shell), or the change as the agent states it (patch text, or the path). */
  command: string | null;
  mcpServer: string | null;
  toolUseId: string | null;
  /** The tool's input as the agent sent it (a rewrite keeps every field but the one it changes). */
  input?: unknown;
  /** For a patch: the paths it names, exactly as written (the adapter parses its own format). */
  paths?: string[];
  /** For a patch: a short description of the change (`add a.txt, update b.txt`). */
  summary?: string;
  /**
   * A Latch read typed in another spelling (`latch brief --page 1`): what the agent typed, while
   * `command` holds the one spelling the classifier reads (`node <entry> brief --page 1`).
   */
  typed?: string;
}

export interface Observation {
  sessionId: string;
  turnId: string | null;
  cwd: string;
  transcriptPath: string | null;
  model: string | null;
  permissionMode: string | null;
  agentId: string | null;
}

export type StartSource = 'startup' | 'resume' | 'clear' | 'compact' | 'fork' | 'unknown';

export type TurnEnd = 'stop' | 'subagent_stop' | 'interrupt' | 'session_end';

export type LatchEvent =
  | {
      type: 'session_start';
      source: StartSource /** The source as the agent sent it, when Latch does not know it ('unknown'). */;
      raw?: string;
    }
  | { type: 'pre_compact'; trigger: string | null }
  | { type: 'post_compact'; trigger: string | null }
  | { type: 'pre_tool'; call: ToolCall }
  | { type: 'post_tool'; call: ToolCall }
  | { type: 'turn_end'; kind: TurnEnd }
  /**
   * Not a hook: a Latch process beside the agent (the workspace watcher, src/watch/sentry.ts) looks at a
   * known session's transcript and announcements out of band, so that a compaction is counted, tripped
   * and contained even when every hook of the agent is killed (issue 29.2). No agent sends it.
   */
  | { type: 'probe' };

export interface Reason {
  code: string;
  message: string;
}

export interface Decision {
  verdict: 'allow' | 'deny' | 'observe';
  reasons: Reason[];
  /** For deny: the text the agent sees. For session_start: context to hand the agent. */
  message: string | null;
  state: AuthState | null;
  /** For an allowed PreToolUse: the tool input to run instead (a read wrapped in the read-only sandbox). */
  updatedInput?: Record<string, unknown>;
  /** For the human, not the model (Codex's `systemMessage`): what happened and the command to run. */
  notice?: string;
}

/** A one-line summary of a call for records and messages. */
export function summarizeCall(call: ToolCall, max = 120): string {
  const text = call.kind === 'patch' ? (call.summary ?? '') : (call.command ?? '').replace(/\s+/g, ' ').trim();
  const s = text ? `${call.name}: ${text}` : call.name;
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}
