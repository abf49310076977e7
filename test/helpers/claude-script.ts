// Scripting and checking helpers for the real-binary Claude Code e2e tests (test/e2e/claude*.test.ts):
// model turns, run and tool-result assertions, `latch status` / `latch log` readers.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { contentText } from '../../src/agents/claude/fake-model.js';
import type { ClaudeEnv, ClaudeRequest, ClaudeRun, ClaudeTurn } from './claude.js';

/** A model turn calling one tool (`inputTokens` ~990000 makes Claude Code auto-compact after it). */
export const use = (id: string, name: string, input: unknown, inputTokens?: number): ClaudeTurn => ({
  content: [{ type: 'tool_use', id, name, input }],
  ...(inputTokens !== undefined ? { inputTokens } : {}),
});
export const say = (text: string): ClaudeTurn => ({ content: [{ type: 'text', text }] });

/** The run exited 0 with a JSON result and used every scripted turn. */
export function ok(run: ClaudeRun, what: string): void {
  assert.equal(
    run.code,
    0,
    `${what}: claude exited ${run.code}\n${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`,
  );
  assert.ok(run.result, `${what}: no JSON result: ${run.stdout.slice(-2000)}`);
  assert.equal(run.unused, 0, `${what}: the run stopped before the model's script ended`);
}

/**
 * The tool result the model got for `id` is a Latch denial: is_error, from the PreToolUse hook, naming
 * Latch and the human's command (`latch verify` for a latch, `latch resume` for a pause).
 */
export function assertDenied(env: ClaudeEnv, id: string, opts: { checkpoint?: string; release?: RegExp } = {}): string {
  const r = env.toolResult(id);
  assert.ok(r, `the model got a result for ${id}`);
  assert.equal(r!.isError, true, `${id} was denied: ${r!.text}`);
  assert.match(r!.text, /PreToolUse:\S+ hook error/, r!.text);
  assert.match(r!.text, /Latch blocked this call/, r!.text);
  assert.match(r!.text, opts.release ?? /latch verify/, r!.text);
  if (opts.checkpoint)
    assert.ok(r!.text.includes(opts.checkpoint), `${id}: the denial names checkpoint ${opts.checkpoint}: ${r!.text}`);
  return r!.text;
}

/** The tool ran: the model got a result that is not an error. */
export function assertRan(env: ClaudeEnv, id: string): string {
  const r = env.toolResult(id);
  assert.ok(r, `the model got a result for ${id}`);
  assert.equal(r!.isError, false, `${id} ran: ${r!.text}`);
  return r!.text;
}

export interface SessionStatus {
  session_id: string;
  state: string;
  policy: string;
  reason: string | null;
  may_mutate: boolean;
  checkpoints: {
    id: string;
    trigger: string | null;
    observed_via: string[];
    tree: { sha256: string; files: number };
  }[];
}

/** One session of `latch status --json`. */
export function sessionOf(env: ClaudeEnv, id: string): SessionStatus {
  const s = env.statusJson().sessions.find((x) => x.session_id === id);
  assert.ok(s, `latch status lists session ${id}`);
  return s as unknown as SessionStatus;
}

export interface LogFile {
  path: string;
  change: string;
  attribution: string;
  session_id: string | null;
}

export type LogEntry =
  | {
      kind: 'attempt';
      session_id: string;
      agent_id: string | null;
      attempt_id: string;
      tool: string;
      summary: string | null;
      state: string;
      files: LogFile[];
    }
  | { kind: 'denial'; session_id: string; tool: string; summary: string | null; reasons: { code: string }[] }
  | { kind: 'compaction' | 'transition' | 'change'; session_id: string | null; [k: string]: unknown };

/** `latch log --json`'s entries. */
export function logEntries(env: ClaudeEnv): LogEntry[] {
  const r = env.latch(['log', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { entries: LogEntry[] }).entries;
}

export type Attempt = Extract<LogEntry, { kind: 'attempt' }>;
export type Denial = Extract<LogEntry, { kind: 'denial' }>;

export const attemptsIn = (entries: LogEntry[]): Attempt[] => entries.filter((e): e is Attempt => e.kind === 'attempt');
export const denialsIn = (entries: LogEntry[]): Denial[] => entries.filter((e): e is Denial => e.kind === 'denial');

/** The files of an attempt as [change, path, attribution]. */
export const filesOf = (a: Attempt): string[][] => a.files.map((f) => [f.change, f.path, f.attribution]);

/** The agent ids of a session's sub-agent transcripts (`<session>/subagents/agent-<id>.jsonl`). */
export function subagentIds(env: ClaudeEnv, sessionId: string): string[] {
  const root = join(env.configDir, 'projects');
  if (!existsSync(root)) return [];
  const ids: string[] = [];
  for (const d of readdirSync(root)) {
    const dir = join(root, d, sessionId, 'subagents');
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) {
      const m = /^agent-(.+)\.jsonl$/.exec(f);
      if (m) ids.push(m[1]!);
    }
  }
  return ids.sort();
}

/** The text of a request's first message (a sub-agent's is the prompt its Agent call gave it). */
export function firstMessageText(req: ClaudeRequest): string {
  const m = Array.isArray(req.body?.messages) ? req.body.messages[0] : undefined;
  return contentText(m?.content);
}

/** How many answers the model already gave in the conversation this request carries. */
export function assistantTurns(req: ClaudeRequest): number {
  const msgs: unknown[] = Array.isArray(req.body?.messages) ? req.body.messages : [];
  return msgs.filter((m) => (m as { role?: unknown })?.role === 'assistant').length;
}
