// Codex adapter: Codex hook payload (stdin JSON) -> Observation + LatchEvent; Decision -> Codex reply.
// Reply formats are the ones Codex 0.169.0 accepts (see docs/codex-notes.md); tests check every reply
// against the hook output schemas extracted from the binary.
import * as v from 'valibot';
import type { Decision, LatchEvent, Observation, StartSource } from '../../guard/events.js';
import type { HookReply } from '../agent.js';

const KNOWN_SOURCES: ReadonlySet<string> = new Set(['startup', 'resume', 'clear', 'compact', 'fork']);
import { classifyTool } from './tools.js';

const Str = v.string();
const OptStr = v.optional(v.string());
const NullableStr = v.nullable(v.string());

const Common = {
  session_id: v.pipe(Str, v.minLength(1)),
  cwd: v.pipe(Str, v.minLength(1)),
  transcript_path: v.optional(NullableStr, null),
  model: OptStr,
  turn_id: OptStr,
  permission_mode: OptStr,
  agent_id: OptStr,
  agent_type: OptStr,
};

// Unknown keys are tolerated (newer Codex versions add fields); known keys must have the right types.
export const CodexPayload = v.variant('hook_event_name', [
  v.looseObject({
    ...Common,
    hook_event_name: v.literal('PreToolUse'),
    tool_name: v.pipe(Str, v.minLength(1)),
    tool_input: v.unknown(),
    tool_use_id: OptStr,
  }),
  v.looseObject({
    ...Common,
    hook_event_name: v.literal('PostToolUse'),
    tool_name: Str,
    tool_input: v.unknown(),
    tool_response: v.unknown(),
    tool_use_id: OptStr,
  }),
  // Any source is accepted: one Latch does not know is handled as 'unknown' (full brief), never dropped.
  v.looseObject({ ...Common, hook_event_name: v.literal('SessionStart'), source: v.pipe(Str, v.minLength(1)) }),
  v.looseObject({ ...Common, hook_event_name: v.literal('PreCompact'), trigger: v.optional(NullableStr, null) }),
  v.looseObject({ ...Common, hook_event_name: v.literal('PostCompact'), trigger: v.optional(NullableStr, null) }),
  v.looseObject({
    ...Common,
    hook_event_name: v.picklist([
      'UserPromptSubmit',
      'Stop',
      'SubagentStart',
      'SubagentStop',
      'SessionEnd',
      'Interrupt',
      'PermissionRequest',
    ]),
  }),
]);

export type CodexPayload = v.InferOutput<typeof CodexPayload>;

export type Parsed =
  | { ok: true; payload: CodexPayload; obs: Observation; event: LatchEvent | null }
  | { ok: false; error: string; eventName: string | null; toolName: string | null };

/** Parses and validates one hook payload. Never throws. */
export function parseCodexPayload(text: string): Parsed {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      error: `hook payload is not JSON (${(err as Error).message})`,
      eventName: null,
      toolName: null,
    };
  }
  const hint = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const eventName = typeof hint.hook_event_name === 'string' ? hint.hook_event_name : null;
  const toolName = typeof hint.tool_name === 'string' ? hint.tool_name : null;
  const r = v.safeParse(CodexPayload, raw);
  if (!r.success) {
    const issue = r.issues[0];
    const where = issue.path?.map((p: { key: unknown }) => String(p.key)).join('.') ?? '';
    return {
      ok: false,
      error: `invalid hook payload: ${where ? where + ': ' : ''}${issue.message}`,
      eventName,
      toolName,
    };
  }
  const p = r.output;
  const obs: Observation = {
    sessionId: p.session_id,
    turnId: p.turn_id ?? null,
    cwd: p.cwd,
    transcriptPath: p.transcript_path ?? null,
    model: p.model ?? null,
    permissionMode: p.permission_mode ?? null,
    agentId: p.agent_id ?? null,
  };
  return { ok: true, payload: p, obs, event: toEvent(p) };
}

function toEvent(p: CodexPayload): LatchEvent | null {
  switch (p.hook_event_name) {
    case 'PreToolUse':
      return { type: 'pre_tool', call: classifyTool(p.tool_name, p.tool_input, p.tool_use_id ?? null) };
    case 'SessionStart':
      return KNOWN_SOURCES.has(p.source)
        ? { type: 'session_start', source: p.source as StartSource }
        : { type: 'session_start', source: 'unknown', raw: p.source };
    case 'PreCompact':
      return { type: 'pre_compact', trigger: p.trigger ?? null };
    case 'PostCompact':
      return { type: 'post_compact', trigger: p.trigger ?? null };
    case 'PostToolUse':
      return { type: 'post_tool', call: classifyTool(p.tool_name, p.tool_input, p.tool_use_id ?? null) };
    case 'Stop':
      return { type: 'turn_end', kind: 'stop' };
    case 'SubagentStop':
      return { type: 'turn_end', kind: 'subagent_stop' };
    case 'Interrupt':
      return { type: 'turn_end', kind: 'interrupt' };
    case 'SessionEnd':
      return { type: 'turn_end', kind: 'session_end' };
    default:
      return null;
  }
}

export type { HookReply };

export function codexDeny(reason: string, notice?: string): HookReply {
  const out: Record<string, unknown> = {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
  };
  // systemMessage is shown to the user, not to the model.
  if (notice) out.systemMessage = notice;
  return { stdout: JSON.stringify(out), exitCode: 0 };
}

/** Formats a Decision as Codex's reply for the given event. */
export function codexReply(eventName: string, d: Decision): HookReply {
  if (eventName === 'PreToolUse') {
    if (d.verdict === 'deny') return codexDeny(d.message ?? 'Latch blocked this call.', d.notice);
    if (d.updatedInput) {
      // Codex runs the rewritten input (verified on 0.169.0: its exec item shows the new command).
      return {
        stdout: JSON.stringify({
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'allow',
            updatedInput: d.updatedInput,
          },
        }),
        exitCode: 0,
      };
    }
    return { stdout: null, exitCode: 0 };
  }
  if (eventName === 'SessionStart' && (d.message || d.notice)) {
    const out: Record<string, unknown> = {};
    if (d.message) out.hookSpecificOutput = { hookEventName: 'SessionStart', additionalContext: d.message };
    if (d.notice) out.systemMessage = d.notice;
    return { stdout: JSON.stringify(out), exitCode: 0 };
  }
  // PreCompact / PostCompact accept only continue, stopReason, suppressOutput and systemMessage.
  if ((eventName === 'PostCompact' || eventName === 'PreCompact') && d.notice)
    return { stdout: JSON.stringify({ systemMessage: d.notice }), exitCode: 0 };
  return { stdout: null, exitCode: 0 };
}
