// A Codex tool output as the rollout records it (function_call_output of exec_command): its header
// (exit status, original token count), its body, and the ways it can be incomplete (truncation
// markers) or not a command's output at all (a hook denial, an error wrapper). The one rule for a
// complete brief-page read (src/continuity/page-read.ts) asks codexToolOutput for this part.
import type { ToolOutput } from '../agent.js';

export interface ExecOutput {
  /** The header lines before "Output:" (Chunk ID, Wall time, Process exited with code N, ...). */
  header: string[];
  /** Everything after "Output:\n": the command's (possibly truncated) output as the model saw it. */
  body: string;
}

/** Splits a Codex exec_command tool output ("<header lines>\nOutput:\n<output>"); null if not that shape. */
export function parseExecOutput(output: string): ExecOutput | null {
  let at: number;
  if (output.startsWith('Output:\n')) at = 0;
  else {
    const i = output.indexOf('\nOutput:\n');
    if (i < 0) return null;
    at = i + 1;
  }
  const head = output.slice(0, at === 0 ? 0 : at - 1);
  return { header: head === '' ? [] : head.split('\n'), body: output.slice(at + 'Output:\n'.length) };
}

/** Codex's token estimate: ceil(UTF-8 bytes / 4). */
export function approxTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

const TRUNCATED_LINE = /tokens? truncated/i;
const TRUNCATED_HEAD = 'Warning: truncated output';
const OMITTED_LINE = /^\.\.\. \d+ bytes omitted \.\.\.$/;

/**
 * Why a tool output is truncated, or null when it is complete. Codex 0.169 (docs/codex-notes.md):
 * the text after "Output:\n" starts with "Warning: truncated output (original token count: N)",
 * may hold "... N bytes omitted ..." and a mid-line "…N tokens truncated…". Truncated when any of
 * these is present (any line matching /tokens? truncated/i, in whatever wrapper), or when the
 * header's "Original token count: N" exceeds Codex's estimate (ceil(bytes/4)) of what was shown.
 */
export function outputTruncation(output: string): string | null {
  const exec = parseExecOutput(output);
  if (exec?.body.startsWith(TRUNCATED_HEAD)) return `truncated ("${TRUNCATED_HEAD}")`;
  for (const line of output.split('\n')) {
    if (TRUNCATED_LINE.test(line)) return `truncated (marker line ${JSON.stringify(clip(line, 60))})`;
    if (OMITTED_LINE.test(line)) return `truncated (${JSON.stringify(line)})`;
  }
  if (exec) {
    for (const line of exec.header) {
      const m = /^Original token count: (\d+)$/.exec(line);
      if (!m) continue;
      const original = Number(m[1]);
      const shown = approxTokens(exec.body);
      if (original > shown) return `truncated (original token count ${original} > ${shown} shown)`;
    }
  }
  return null;
}

export function isTruncatedOutput(output: string): boolean {
  return outputTruncation(output) !== null;
}

/** Why a tool output reports an error (isError wrapper, hook denial), or null. */
export function outputError(output: string): string | null {
  if (/"isError"\s*:\s*true/.test(output)) return 'wrapped in an error ({"isError": true})';
  if (output.includes('Command blocked by PreToolUse hook')) return 'Command blocked by PreToolUse hook';
  return null;
}

/**
 * A Codex tool output unwrapped: the command's own output when it ran to completion (exit 0) and was
 * recorded whole; otherwise every reason it was not, with the body when there is one.
 */
export function codexToolOutput(output: string): ToolOutput {
  const problems: string[] = [];
  if (output.includes('Command blocked by PreToolUse hook'))
    problems.push('the call was denied by a PreToolUse hook (no command ran)');
  const trimmed = output.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) {
      const isErr =
        typeof parsed === 'object' &&
        parsed !== null &&
        ((parsed as Record<string, unknown>).isError === true || (parsed as Record<string, unknown>).is_error === true);
      problems.push(
        isErr ? 'the output is an error result (isError: true)' : 'the output is a JSON wrapper, not a command output',
      );
    }
  }
  if (/"is_?error"\s*:\s*true/i.test(output) && !problems.some((r) => r.includes('isError')))
    problems.push('the output carries an error flag (isError: true)');
  const exec = parseExecOutput(output);
  if (!exec) {
    problems.push('not an exec_command output (no "Output:" section)');
    return { ok: false, body: null, problems };
  }
  const exit = exec.header.map((l) => /^Process exited with code (-?\d+)$/.exec(l)).find((m) => m !== null);
  if (!exit)
    problems.push(
      exec.header.some((l) => l.startsWith('Process running with session ID'))
        ? 'the command had not finished (still running)'
        : 'no exit status recorded',
    );
  else if (exit[1] !== '0') problems.push(`the command exited with code ${exit[1]}`);
  const t = outputTruncation(output);
  if (t) problems.push(`Codex ${t}`);
  return problems.length === 0 ? { ok: true, body: exec.body } : { ok: false, body: exec.body, problems };
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
