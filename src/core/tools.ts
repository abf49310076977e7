// Which tool calls Latch tracks (may mutate) and what they are.

export type ToolKind = 'shell' | 'patch' | 'mcp' | 'agent';

export interface ToolCall {
  name: string;
  kind: ToolKind | null; // null: untracked, never blocked
  /** Shell command text (Bash) or patch text (apply_patch). */
  command: string | null;
  mcpServer: string | null;
  toolUseId: string | null;
  /** The tool's input as the agent sent it (a rewrite keeps every field but the one it changes). */
  input?: unknown;
}

const PATCH_TOOLS = new Set(['apply_patch', 'Write', 'Edit']);
// Codex 0.169 (features.multi_agent_v2) offers spawn_agent in the `collaboration` namespace; hooks see
// the namespace and name concatenated: `collaborationspawn_agent`.
const AGENT_TOOLS = new Set(['Agent', 'spawn_agent', 'collaborationspawn_agent']);

export function classifyTool(name: string, input: unknown, toolUseId: string | null = null): ToolCall {
  const command = commandText(input);
  if (name === 'Bash') return { name, kind: 'shell', command, mcpServer: null, toolUseId, input };
  if (PATCH_TOOLS.has(name)) return { name, kind: 'patch', command, mcpServer: null, toolUseId };
  if (AGENT_TOOLS.has(name)) return { name, kind: 'agent', command, mcpServer: null, toolUseId };
  if (name.startsWith('mcp__')) {
    const server = name.slice('mcp__'.length).split('__')[0] || null;
    return { name, kind: 'mcp', command, mcpServer: server, toolUseId };
  }
  return { name, kind: null, command, mcpServer: null, toolUseId };
}

function commandText(input: unknown): string | null {
  if (input && typeof input === 'object') {
    const c = (input as Record<string, unknown>).command;
    if (typeof c === 'string') return c;
    if (Array.isArray(c) && c.every((x) => typeof x === 'string')) return c.join(' ');
  }
  return typeof input === 'string' ? input : null;
}

/** The matcher `latch setup codex` installs for PreToolUse: every tracked tool name. */
export const TRACKED_TOOL_MATCHER = '^(Bash|apply_patch|Write|Edit|Agent|spawn_agent|collaborationspawn_agent|mcp__.*)$';

/** A one-line summary of a call for records and messages. */
export function summarizeCall(call: ToolCall, max = 120): string {
  const text = call.command ?? '';
  const first = call.kind === 'patch' ? patchSummary(text) : text.replace(/\s+/g, ' ').trim();
  const s = first ? `${call.name}: ${first}` : call.name;
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

function patchSummary(patch: string): string {
  const files: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+)$/gm)) files.push(`${m[1]!.toLowerCase()} ${m[2]}`);
  return files.join(', ');
}
