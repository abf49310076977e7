// Codex adapter: Codex hook payload (stdin JSON) -> Observation + LatchEvent; Decision -> Codex reply.
// Reply formats are the ones Codex 0.169.0 accepts (see docs/codex-notes.md); tests check every reply
// against the hook output schemas extracted from the binary.
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

const Common = { ...SessionFields, model: OptStr, turn_id: OptStr, ...ModeFields };

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
  v.looseObject({ ...Common, ...SessionStartFields }),
  v.looseObject({ ...Common, ...PreCompactFields }),
  v.looseObject({ ...Common, ...PostCompactFields }),
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

export type Parsed = { ok: true; payload: CodexPayload; obs: Observation; event: LatchEvent | null } | PayloadRefusal;

/** Parses and validates one hook payload. Never throws. */
export function parseCodexPayload(text: string): Parsed {
  const r = parsePayload(CodexPayload, text);
  if (!r.ok) return r;
  const p = r.payload;
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
      return sessionStartEvent(p.source);
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

/** The deny reply (systemMessage, the notice, is shown to the user, not to the model). */
export function codexDeny(reason: string, notice?: string): HookReply {
  return denyReply(reason, notice);
}

/** Formats a Decision as Codex's reply for the given event. */
export function codexReply(eventName: string, d: Decision): HookReply {
  if (eventName === 'PreToolUse') {
    if (d.verdict === 'deny') return codexDeny(d.message ?? 'Latch blocked this call.', d.notice);
    // Codex runs the rewritten input (verified on 0.169.0: its exec item shows the new command).
    if (d.updatedInput) return rewriteReply(d.updatedInput);
    return silentReply();
  }
  if (eventName === 'SessionStart' && (d.message || d.notice)) return sessionStartReply(d);
  // These events take systemMessage (PreCompact / PostCompact take only it and continue, stopReason,
  // suppressOutput): a notice for the human, e.g. Latch switched off. SessionEnd has no output schema.
  if (d.notice && NOTICE_EVENTS.has(eventName)) return noticeReply(d.notice);
  return silentReply();
}

/** Codex events whose output schema has `systemMessage` (0.169.0's schemas, test/fixtures/codex-hook-schemas). */
const NOTICE_EVENTS: ReadonlySet<string> = new Set([
  'PreCompact',
  'PostCompact',
  'PostToolUse',
  'UserPromptSubmit',
  'Stop',
  'SubagentStop',
  'Interrupt',
]);
