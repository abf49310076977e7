// Claude Code's tools as Latch sees them: which calls may mutate, and what a file tool names.
// 2.1.332 offers Agent, Bash, Edit, ListAgents, Read, ReportFindings, ScheduleWakeup, Skill,
// ToolSearch, Workflow, Write, and deferred ones (CronCreate, EnterWorktree, Monitor, NotebookEdit,
// SendMessage, TaskStop, WebFetch, WebSearch, MCP tools, ...) that run even when called directly.
// Only the names below are known read-only; the web tools are `network` (denied while held); every
// other name is `unknown` (tracked: denied while held).
import type { ToolCall } from '../../guard/events.js';

/** File tools: the path they write is named exactly in their input. */
const PATCH_TOOLS: Readonly<Record<string, { field: string; verb: string }>> = {
  Write: { field: 'file_path', verb: 'write' },
  Edit: { field: 'file_path', verb: 'edit' },
  MultiEdit: { field: 'file_path', verb: 'edit' },
  NotebookEdit: { field: 'notebook_path', verb: 'edit notebook' },
};

const AGENT_TOOLS: ReadonlySet<string> = new Set(['Agent', 'Task']);

/**
 * Claude Code's own tools that change nothing on disk and reach nothing outside the machine, so never
 * blocked: they read files, search, list, or only talk to the model (TodoWrite keeps a list in the
 * session, not on disk).
 */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'Read',
  'Glob',
  'Grep',
  'LS',
  'ListAgents',
  'ToolSearch',
  'TodoWrite',
]);

/**
 * Tools that change no local file but reach the network: a fetch is a GET that can still trigger a
 * webhook or a deploy, and any request can carry data out. Denied while the session is held (fail
 * closed: a latched session reaches the network through no tool); their input names the target.
 */
export const NETWORK_TOOLS: Readonly<Record<string, string>> = { WebFetch: 'url', WebSearch: 'query' };

/**
 * The matcher `latch setup claude` installs for the tool events: none, so that every tool reaches
 * Latch, a tool a newer Claude Code adds included (classified `unknown`, never let through while held).
 */
export const TRACKED_TOOL_MATCHER = null;

export function classifyTool(name: string, input: unknown, toolUseId: string | null = null): ToolCall {
  if (name === 'Bash')
    return { name, kind: 'shell', command: field(input, 'command'), mcpServer: null, toolUseId, input };
  const patch = Object.hasOwn(PATCH_TOOLS, name) ? PATCH_TOOLS[name] : undefined;
  if (patch) {
    const path = field(input, patch.field);
    return {
      name,
      kind: 'patch',
      command: path,
      mcpServer: null,
      toolUseId,
      input,
      // Exactly as given (Claude Code asks for absolute paths; the guard resolves against the cwd).
      paths: path === null ? [] : [path],
      summary: `${patch.verb} ${path ?? '(no path)'}`,
    };
  }
  if (AGENT_TOOLS.has(name)) return { name, kind: 'agent', command: agentText(input), mcpServer: null, toolUseId };
  if (name.startsWith('mcp__')) {
    // mcp__<server>__<tool>: only an unambiguous name (one "__" after the prefix) names its server; with
    // more (`mcp__ro__x__write`) the split is the agent's guess, and no read-only server is matched.
    const parts = name.slice('mcp__'.length).split('__');
    const server = parts.length === 2 && parts[0] ? parts[0] : null;
    return { name, kind: 'mcp', command: null, mcpServer: server, toolUseId };
  }
  if (READ_ONLY_TOOLS.has(name)) return { name, kind: null, command: null, mcpServer: null, toolUseId };
  const target = Object.hasOwn(NETWORK_TOOLS, name) ? NETWORK_TOOLS[name] : undefined;
  if (target) return { name, kind: 'network', command: field(input, target), mcpServer: null, toolUseId };
  return { name, kind: 'unknown', command: field(input, 'command'), mcpServer: null, toolUseId };
}

function field(input: unknown, key: string): string | null {
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const x = (input as Record<string, unknown>)[key];
    if (typeof x === 'string') return x;
  }
  return null;
}

/** An Agent/Task call's description (what the sub-agent is asked to do), for records and messages. */
function agentText(input: unknown): string | null {
  return field(input, 'description') ?? field(input, 'prompt');
}
