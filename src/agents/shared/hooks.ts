// What the agents' hook adapters (src/agents/<name>/hooks.ts) have in common: the payload fields
// every hook event carries, SessionStart's and the compaction events' fields, the JSON and schema
// parse with its refusal, SessionStart's source, and the replies both agents word alike.
//
// Loaded on every hook: it imports valibot (which every adapter loads anyway) and types, nothing else.
import * as v from 'valibot';
import type { Decision, LatchEvent, StartSource } from '../../guard/events.js';
import type { HookReply } from '../agent.js';

export const Str = v.string();
export const OptStr = v.optional(v.string());
export const NullableStr = v.nullable(v.string());

/** The session, its directory and its transcript: the first fields of every payload. */
export const SessionFields = {
  session_id: v.pipe(Str, v.minLength(1)),
  cwd: v.pipe(Str, v.minLength(1)),
  transcript_path: v.optional(NullableStr, null),
};

/** The permission mode and the sub-agent a call runs in: the last common fields of every payload. */
export const ModeFields = {
  permission_mode: OptStr,
  agent_id: OptStr,
  agent_type: OptStr,
};

// Any source is accepted: one Latch does not know is handled as 'unknown' (full brief), never dropped.
export const SessionStartFields = { hook_event_name: v.literal('SessionStart'), source: v.pipe(Str, v.minLength(1)) };
export const PreCompactFields = { hook_event_name: v.literal('PreCompact'), trigger: v.optional(NullableStr, null) };
export const PostCompactFields = { hook_event_name: v.literal('PostCompact'), trigger: v.optional(NullableStr, null) };

/** A refused payload: why, with the event and tool named when the JSON names them. */
export type PayloadRefusal = { ok: false; error: string; eventName: string | null; toolName: string | null };

/** Parses `text` as JSON and validates it against `schema`. Never throws. */
export function parsePayload<S extends v.GenericSchema>(
  schema: S,
  text: string,
): { ok: true; payload: v.InferOutput<S> } | PayloadRefusal {
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
  const r = v.safeParse(schema, raw);
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
  return { ok: true, payload: r.output };
}

const KNOWN_SOURCES: ReadonlySet<string> = new Set(['startup', 'resume', 'clear', 'compact', 'fork']);

/** The session_start event for a SessionStart `source` (one Latch does not know is 'unknown', with it). */
export function sessionStartEvent(source: string): LatchEvent {
  return KNOWN_SOURCES.has(source)
    ? { type: 'session_start', source: source as StartSource }
    : { type: 'session_start', source: 'unknown', raw: source };
}

/**
 * The deny reply for a tool call: exit 0 with a JSON `permissionDecision: "deny"` and the reason;
 * `systemMessage` (the notice) is shown to the human, not to the model.
 */
export function denyReply(reason: string, notice?: string): HookReply {
  const out: Record<string, unknown> = {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
  };
  if (notice) out.systemMessage = notice;
  return { stdout: JSON.stringify(out), exitCode: 0 };
}

/**
 * The allow reply that runs `updatedInput` instead of the call's input (a held read, rewritten), with
 * a notice for the human when there is one.
 */
export function rewriteReply(updatedInput: Record<string, unknown>, notice?: string): HookReply {
  const out: Record<string, unknown> = {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow', updatedInput },
  };
  if (notice) out.systemMessage = notice;
  return { stdout: JSON.stringify(out), exitCode: 0 };
}

/** SessionStart's reply: the message as additionalContext for the model, the notice for the human. */
export function sessionStartReply(d: Decision): HookReply {
  const out: Record<string, unknown> = {};
  if (d.message) out.hookSpecificOutput = { hookEventName: 'SessionStart', additionalContext: d.message };
  if (d.notice) out.systemMessage = d.notice;
  return { stdout: JSON.stringify(out), exitCode: 0 };
}

/** Only a notice for the human (the common `systemMessage` field). */
export function noticeReply(notice: string): HookReply {
  return { stdout: JSON.stringify({ systemMessage: notice }), exitCode: 0 };
}

/** No output, exit 0. */
export function silentReply(): HookReply {
  return { stdout: null, exitCode: 0 };
}
