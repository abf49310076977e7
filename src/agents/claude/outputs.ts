// A Claude Code tool result as the transcript records it, and the agent's half of the page-read rule.
//
// What 2.1.332 writes for a Bash call (measured on the real binary, test/fixtures/claude/):
// - one `user` line per result: `message.content = [{type:"tool_result", tool_use_id, content, is_error}]`
//   (`content` is the text the model was sent: stdout with stderr appended, the trailing newline
//   dropped, "(Bash completed with no output)" when empty) and `toolUseResult` =
//   `{stdout, stderr, interrupted, isImage, noOutputExpected}` (+ `backgroundTaskId` for
//   `run_in_background`, `persistedOutputPath`/`persistedOutputSize` when the output was too large);
// - a failed command (non-zero exit, timeout): `is_error: true`, content "Exit code N\n<output>" (a
//   timeout adds "Command timed out after Ns"), `toolUseResult` the string "Error: Exit code N ...";
// - a call a PreToolUse hook denied: `is_error: true`, content "PreToolUse:Bash hook error: <reason>";
// - an output over ~30,000 characters is saved to a file and the model gets only a preview:
//   "<persisted-output>\nOutput too large (38KB). Full output saved to: <path>\n\nPreview (first 2KB):
//   ...\n</persisted-output>"; a failed command's long output is cut in the middle with
//   "\n\n... [N characters truncated] ...\n\n".
//
// The port hands toolOutput only a string, so the transcript scan records each result as a JSON
// envelope (`encodeToolResult`): the tool_result block's is_error and content exactly as recorded,
// and the flags of its toolUseResult. `claudeToolOutput` accepts nothing else.
import type { ToolOutput } from '../agent.js';

export const ENVELOPE_FORMAT = 'latch/claude-tool-result@1';

/** What the scan keeps of one tool result (the envelope's JSON). */
export interface ToolResultEnvelope {
  format: typeof ENVELOPE_FORMAT;
  toolUseId: string | null;
  /** tool_result.is_error as recorded (null: absent). */
  isError: boolean | null;
  /** tool_result.content as recorded: what the model was sent. */
  content: unknown;
  /** The line's toolUseResult: its flags (an object), the error text (a string), or null when absent. */
  result: ResultFlags | string | null;
}

export interface ResultFlags {
  /** The record has Bash's shape (stdout and interrupted). */
  bash: boolean;
  interrupted: boolean | null;
  isImage: boolean | null;
  backgroundTaskId: string | null;
  persistedOutputPath: string | null;
}

/** The envelope for one tool_result block and its line's toolUseResult (undefined: none attributable). */
export function encodeToolResult(block: Record<string, unknown>, record: unknown): string {
  let result: ToolResultEnvelope['result'] = null;
  if (typeof record === 'string') result = record;
  else if (record && typeof record === 'object' && !Array.isArray(record)) {
    const r = record as Record<string, unknown>;
    result = {
      bash: typeof r.stdout === 'string' && typeof r.interrupted === 'boolean',
      interrupted: typeof r.interrupted === 'boolean' ? r.interrupted : null,
      isImage: typeof r.isImage === 'boolean' ? r.isImage : null,
      backgroundTaskId: typeof r.backgroundTaskId === 'string' ? r.backgroundTaskId : null,
      persistedOutputPath: typeof r.persistedOutputPath === 'string' ? r.persistedOutputPath : null,
    };
  }
  const env: ToolResultEnvelope = {
    format: ENVELOPE_FORMAT,
    toolUseId: typeof block.tool_use_id === 'string' ? block.tool_use_id : null,
    isError: typeof block.is_error === 'boolean' ? block.is_error : null,
    content: block.content ?? null,
    result,
  };
  return JSON.stringify(env);
}

function decode(output: string): ToolResultEnvelope | null {
  if (!output.startsWith('{')) return null;
  try {
    const o = JSON.parse(output) as Record<string, unknown>;
    return o && o.format === ENVELOPE_FORMAT ? (o as unknown as ToolResultEnvelope) : null;
  } catch {
    return null;
  }
}

const PERSISTED = /<persisted-output>|<truncated-output>/;
const MIDDLE_CUT = /^\.\.\. \[\d+ characters truncated\] \.\.\.$/m;

/** Why a result text was not shown whole, or null. */
export function claudeTruncation(text: string): string | null {
  if (PERSISTED.test(text))
    return 'Claude Code saved the output to a file and showed only a preview (<persisted-output>)';
  const cut = MIDDLE_CUT.exec(text);
  if (cut) return `Claude Code cut the output in the middle (${JSON.stringify(cut[0])})`;
  return null;
}

/**
 * A Claude Code tool result unwrapped: the text the model was sent, when it is a Bash command's whole
 * output after a successful run. Complete and successful = `is_error` not true, a Bash record
 * (toolUseResult with stdout) that was not interrupted, not sent to the background, not an image, and
 * no truncation (no persisted-output preview, no middle cut). Anything that is not an envelope of the
 * transcript scan is refused.
 */
export function claudeToolOutput(output: string): ToolOutput {
  const env = decode(output);
  if (!env) {
    return {
      ok: false,
      body: null,
      problems: ['not a Claude Code tool result as Latch’s transcript scan records it'],
    };
  }
  const problems: string[] = [];
  let body: string;
  if (typeof env.content === 'string') body = env.content;
  else if (Array.isArray(env.content)) {
    const blocks = env.content as unknown[];
    const texts = blocks.filter(
      (b): b is { type: 'text'; text: string } =>
        !!b &&
        typeof b === 'object' &&
        (b as { type?: unknown }).type === 'text' &&
        typeof (b as { text?: unknown }).text === 'string',
    );
    if (texts.length !== blocks.length) problems.push('the result holds content other than text');
    body = texts.map((b) => b.text).join('\n');
  } else {
    return { ok: false, body: null, problems: ['the result has no content'] };
  }
  if (env.isError === true) {
    problems.push(
      body.startsWith('PreToolUse:')
        ? 'the call was denied by a PreToolUse hook (no command ran)'
        : `Claude Code recorded the call as failed (is_error: true${firstLine(body)})`,
    );
  }
  const r = env.result;
  if (r === null) problems.push('no tool result record (toolUseResult) for this call');
  else if (typeof r === 'string') {
    if (env.isError !== true) problems.push(`the call failed (${clip(r.split('\n')[0] ?? '', 80)})`);
  } else {
    if (!r.bash) problems.push('not a Bash command output');
    if (r.interrupted === true) problems.push('the command was interrupted');
    if (r.backgroundTaskId !== null)
      problems.push(`the command ran in the background (${r.backgroundTaskId}); its output is not in the result`);
    if (r.isImage === true) problems.push('the output is an image');
    if (r.persistedOutputPath !== null)
      problems.push('Claude Code saved the output to a file and showed only a preview (persistedOutputPath)');
  }
  const t = claudeTruncation(body);
  // A persisted preview is already reported through persistedOutputPath.
  if (t && !(t.includes('preview') && problems.some((p) => p.includes('preview')))) problems.push(t);
  return problems.length === 0 ? { ok: true, body } : { ok: false, body, problems };
}

function firstLine(text: string): string {
  const l = text.split('\n')[0] ?? '';
  return l ? `: ${clip(l, 80)}` : '';
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
