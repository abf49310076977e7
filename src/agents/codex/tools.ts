// Codex's tools as Latch sees them: which calls may mutate, and what a patch names.
import type { ToolCall } from '../../guard/events.js';

const PATCH_TOOLS = new Set(['apply_patch', 'Write', 'Edit']);
// Codex 0.169 (features.multi_agent_v2) offers spawn_agent in the `collaboration` namespace; hooks see
// the namespace and name concatenated: `collaborationspawn_agent`.
const AGENT_TOOLS = new Set(['Agent', 'spawn_agent', 'collaborationspawn_agent']);

export function classifyTool(name: string, input: unknown, toolUseId: string | null = null): ToolCall {
  const command = commandText(input);
  if (name === 'Bash') return { name, kind: 'shell', command, mcpServer: null, toolUseId, input };
  if (PATCH_TOOLS.has(name)) {
    const text = command ?? '';
    return {
      name,
      kind: 'patch',
      command,
      mcpServer: null,
      toolUseId,
      paths: patchPaths(text),
      summary: patchSummary(text),
    };
  }
  if (AGENT_TOOLS.has(name)) return { name, kind: 'agent', command, mcpServer: null, toolUseId };
  if (name.startsWith('mcp__')) {
    // mcp__<server>__<tool>: only an unambiguous name (one "__" after the prefix) names its server; with
    // more (`mcp__ro__x__write`) the split is the agent's guess, and no read-only server is matched.
    const parts = name.slice('mcp__'.length).split('__');
    const server = parts.length === 2 && parts[0] ? parts[0] : null;
    return { name, kind: 'mcp', command, mcpServer: server, toolUseId };
  }
  if (READ_ONLY_TOOLS.has(name)) return { name, kind: null, command, mcpServer: null, toolUseId };
  return { name, kind: 'unknown', command, mcpServer: null, toolUseId };
}

/**
 * Codex's own tools that change nothing, so never blocked: `view_image` reads one file for the model
 * (0.171 sends it through PreToolUse), `update_plan` and `request_user_input` only talk to the user,
 * and the collaboration tools that only wait for or list sub-agents (0.171 sends
 * `collaborationwait_agent` through PreToolUse; a sub-agent's own calls are guarded as the session's).
 * Every other name that is not tracked above is `unknown`.
 */
const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'view_image',
  'update_plan',
  'request_user_input',
  'wait_agent',
  'collaborationwait_agent',
  'list_agents',
  'collaborationlist_agents',
]);

function commandText(input: unknown): string | null {
  if (input && typeof input === 'object') {
    const c = (input as Record<string, unknown>).command;
    if (typeof c === 'string') return c;
    if (Array.isArray(c) && c.every((x) => typeof x === 'string')) return c.join(' ');
  }
  return typeof input === 'string' ? input : null;
}

/**
 * The matcher `latch setup codex` installs for PreToolUse and PostToolUse: none, so that every tool
 * reaches Latch, a tool a newer Codex adds included (it is classified `unknown`, never let through
 * silently while held).
 */
export const TRACKED_TOOL_MATCHER = null;

/** The paths an apply_patch names (`*** Add|Update|Delete File:` and `*** Move to:`), as written. */
export function patchPaths(patch: string): string[] {
  const out: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.*)$/gm))
    out.push(m[1]!.trim());
  return out;
}

/** `add a.txt, update b.txt`: what an apply_patch does, for records and messages. */
function patchSummary(patch: string): string {
  const files: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+)$/gm))
    files.push(`${m[1]!.toLowerCase()} ${m[2]}`);
  return files.join(', ');
}
