// What a tool call's own text tells, without the analyser's state: the command it ran (a shell
// call's script, the files of a patch, an app-server item's command), the call id in a PreToolUse
// run's id, and the outcome its output text reports.
import type { Outcome } from './types.js';
import { oneLine, str, unescapeJson } from './util.js';

export const BLOCKED = 'Command blocked by PreToolUse hook: ';

/**
 * The shell text of an app-server commandExecution item: its one command action's text (Codex's
 * `bash -lc` wrapper removed), else the item's command. A held read Latch rewrote (its clean shell,
 * inside `codex sandbox` or not: src/agents/codex/sandbox.ts) is reported as the command the model gave.
 */
export function commandOfItem(item: Record<string, unknown>): string {
  const actions = Array.isArray(item.commandActions) ? (item.commandActions as unknown[]) : [];
  const one =
    actions.length === 1 && actions[0] !== null && typeof actions[0] === 'object'
      ? str((actions[0] as Record<string, unknown>).command)
      : null;
  const cmd = one ?? str(item.command) ?? '';
  const held =
    /^(?:(?:PATH='[^']*':"\$PATH" )?CODEX_HOME='[^']*' exec '[^']*' sandbox -- |exec )?\/usr\/bin\/env -u BASH_ENV .* \/bin\/bash --noprofile --norc -c '((?:[^']|'\\'')*)'$/s.exec(
      cmd,
    );
  return held ? held[1]!.split("'\\''").join("'") : cmd;
}

/** The call id a PreToolUse run's id ends with (`pre-tool-use:<n>:<hooks file>:<call id>`), or null. */
export function callIdOfRun(runId: string | null, sourcePath: string | null): string | null {
  if (!runId) return null;
  if (sourcePath) {
    const i = runId.indexOf(`:${sourcePath}:`);
    if (i >= 0) return runId.slice(i + sourcePath.length + 2) || null;
  }
  const j = runId.lastIndexOf(':');
  return j >= 0 && j < runId.length - 1 ? runId.slice(j + 1) : null;
}

export function shellCommand(p: Record<string, unknown>): string {
  let args: unknown = p.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return args as string;
    }
  }
  const a = (args ?? (p.action as Record<string, unknown> | undefined) ?? {}) as Record<string, unknown>;
  const c = a.cmd ?? a.command;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    // ["bash","-lc","<script>"] → the script
    if (c.length === 3 && /(^|\/)(ba|z)?sh$/.test(String(c[0])) && /^-l?c$/.test(String(c[1]))) return String(c[2]);
    return c.map(String).join(' ');
  }
  return '';
}

export function exited(exit: number): Classified {
  return { outcome: exit === 0 ? 'ran' : 'failed', exit, detail: exit === 0 ? null : `exit code ${exit}` };
}

/** apply_patch as a function call: arguments = '{"input":"<patch>"}'. */
export function patchArgument(args: string | null): string {
  if (!args) return '';
  try {
    const v = JSON.parse(args) as Record<string, unknown>;
    return str(v.input) ?? str(v.patch) ?? '';
  } catch {
    return args;
  }
}

export function patchFiles(patch: string): string {
  const files: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+)$/gim))
    files.push(`${m[1]!.toLowerCase()} ${m[2]}`);
  return files.join(', ');
}

export type Classified = { outcome: Exclude<Outcome, 'no_output'>; exit: number | null; detail: string | null };

/** The outcome of a call from the start of its output text (still JSON-escaped). */
export function classifyOutput(raw: string): Classified {
  if (raw.startsWith(BLOCKED)) {
    const text = unescapeJson(raw.slice(BLOCKED.length, BLOCKED.length + 400));
    const reason = text.split('. Command: ')[0]!;
    return { outcome: 'blocked', exit: null, detail: oneLine(reason) };
  }
  if (raw.startsWith('apply_patch verification failed'))
    return { outcome: 'failed', exit: null, detail: oneLine(unescapeJson(raw.slice(0, 300))) };
  // (exitCodeAt in fsck-bytes.ts reads these two from the bytes.)
  const code = /Process exited with code (-?\d+)/.exec(raw.slice(0, 400)) ?? /^Exit code: (-?\d+)/.exec(raw);
  if (code) return exited(Number(code[1]));
  if (raw.startsWith('{')) {
    // older writers: {"output":"...","metadata":{"exit_code":N}}
    const m = /\\"exit_code\\":(-?\d+)/.exec(raw);
    if (m) return { outcome: Number(m[1]) === 0 ? 'ran' : 'failed', exit: Number(m[1]), detail: null };
  }
  return { outcome: 'unknown', exit: null, detail: raw ? oneLine(unescapeJson(raw.slice(0, 200))) : null };
}
