// Claude Code adapter: hook payload (stdin JSON) -> Observation + LatchEvent; Decision -> Claude Code reply.
// Shapes are those of Claude Code 2.1.332 (captured from the real binary: test/fixtures/claude/*.json;
// the reply schema is the binary's own hook output schema, transcribed in test/unit/claude-agent.test.ts).
import * as v from 'valibot';
import type { Decision, LatchEvent, Observation } from '../../guard/events.js';
import type { HookReply } from '../agent.js';
import {
  denyReply,
  ModeFields,
  noticeReply,
  OptStr,
  type PayloadRefusal,
  parsePayload,
  PostCompactFields,
  PreCompactFields,
  rewriteReply,
  SessionFields,
  SessionStartFields,
  sessionStartEvent,
  sessionStartReply,
  silentReply,
  Str,
} from '../shared/hooks.js';
import { classifyTool } from './tools.js';

// Claude Code payloads carry no turn id: `prompt_id` (one per user prompt) stands in for it. Calls
// inside a sub-agent add `agent_id` / `agent_type` (and keep the root session's transcript_path).
const Common = { ...SessionFields, prompt_id: OptStr, model: OptStr, ...ModeFields };

const Tool = {
  tool_name: v.pipe(Str, v.minLength(1)),
  tool_input: v.unknown(),
  tool_use_id: OptStr,
};

/** Every other hook event 2.1.332 knows: no Latch event, or a turn end. */
const OTHER_EVENTS = [
  'PostToolBatch',
  'Notification',
  'UserPromptSubmit',
  'UserPromptExpansion',
  'SessionEnd',
  'Stop',
  'StopFailure',
  'SubagentStart',
  'SubagentStop',
  'PreModelSwitch',
  'PostModelSwitch',
  'PermissionRequest',
  'PermissionDenied',
  'Setup',
  'TeammateIdle',
  'TaskCreated',
  'TaskCompleted',
  'Elicitation',
  'ElicitationResult',
  'ConfigChange',
  'WorktreeCreate',
  'WorktreeRemove',
  'InstructionsLoaded',
  'CwdChanged',
  'FileChanged',
  'DirectoryAdded',
  'MessageDisplay',
  'PreSkillShellCommand',
] as const;

// Unknown keys are tolerated (newer Claude Code versions add fields); known keys must have the right types.
export const ClaudePayload = v.variant('hook_event_name', [
  v.looseObject({ ...Common, hook_event_name: v.literal('PreToolUse'), ...Tool }),
  // 2.1.332 sends a call that failed (a Bash command exiting non-zero, a timeout) to PostToolUseFailure
  // instead of PostToolUse: it ran all the same, and may have changed files.
  v.looseObject({ ...Common, hook_event_name: v.picklist(['PostToolUse', 'PostToolUseFailure']), ...Tool }),
  v.looseObject({ ...Common, ...SessionStartFields }),
  v.looseObject({ ...Common, ...PreCompactFields }),
  v.looseObject({ ...Common, ...PostCompactFields }),
  v.looseObject({ ...Common, hook_event_name: v.picklist(OTHER_EVENTS) }),
]);

export type ClaudePayload = v.InferOutput<typeof ClaudePayload>;

export type Parsed = { ok: true; payload: ClaudePayload; obs: Observation; event: LatchEvent | null } | PayloadRefusal;

/** Parses and validates one hook payload. Never throws. */
export function parseClaudePayload(text: string): Parsed {
  const r = parsePayload(ClaudePayload, text);
  if (!r.ok) return r;
  const p = r.payload;
  const obs: Observation = {
    sessionId: p.session_id,
    turnId: p.prompt_id || null,
    cwd: p.cwd,
    transcriptPath: p.transcript_path || null,
    model: p.model || null,
    permissionMode: p.permission_mode || null,
    agentId: p.agent_id || null,
  };
  return { ok: true, payload: p, obs, event: toEvent(p) };
}

function toEvent(p: ClaudePayload): LatchEvent | null {
  switch (p.hook_event_name) {
    case 'PreToolUse':
      return { type: 'pre_tool', call: classifyTool(p.tool_name, p.tool_input, p.tool_use_id ?? null) };
    case 'PostToolUse':
    case 'PostToolUseFailure':
      return { type: 'post_tool', call: classifyTool(p.tool_name, p.tool_input, p.tool_use_id ?? null) };
    case 'SessionStart':
      return sessionStartEvent(p.source);
    case 'PreCompact':
      return { type: 'pre_compact', trigger: p.trigger ?? null };
    case 'PostCompact':
      return { type: 'post_compact', trigger: p.trigger ?? null };
    case 'Stop':
      return { type: 'turn_end', kind: 'stop' };
    // The turn ended on an API error: like an interrupt, nothing of it runs on.
    case 'StopFailure':
      return { type: 'turn_end', kind: 'interrupt' };
    case 'SubagentStop':
      return { type: 'turn_end', kind: 'subagent_stop' };
    case 'SessionEnd':
      return { type: 'turn_end', kind: 'session_end' };
    default:
      return null;
  }
}

export type { HookReply };

/**
 * The deny reply for a tool call: exit 0 with a JSON `permissionDecision: "deny"` (the model sees
 * `PreToolUse:<tool> hook error: <reason>`); `systemMessage` is shown to the human, not the model.
 */
export function claudeDeny(reason: string, notice?: string): HookReply {
  return denyReply(reason, notice);
}

/** Formats a Decision as Claude Code's reply for the given event. */
export function claudeReply(eventName: string, d: Decision): HookReply {
  if (eventName === 'PreToolUse') {
    if (d.verdict === 'deny') return claudeDeny(d.message ?? 'Latch blocked this call.', d.notice);
    // 2.1.332 runs the rewritten input, which REPLACES tool_input: the guard sends the full original
    // input with only `command` changed.
    if (d.updatedInput) return rewriteReply(d.updatedInput, d.notice);
    return d.notice ? noticeReply(d.notice) : silentReply();
  }
  // The message reaches the model's next request as "SessionStart hook additional context: <text>".
  if (eventName === 'SessionStart' && (d.message || d.notice)) return sessionStartReply(d);
  // Every other event (PreCompact and PostCompact have no hookSpecificOutput in 2.1.332) takes only
  // the common fields: a notice for the human goes in systemMessage. Never `decision: "block"` or
  // `continue: false` (exit 2 on PreCompact makes the turn fail; on Stop it keeps the turn going).
  if (d.notice) return noticeReply(d.notice);
  return silentReply();
}
