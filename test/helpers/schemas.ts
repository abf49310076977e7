// Validates hook replies against Codex's own output schemas (extracted from the pinned binary).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';

const DIR = join('test', 'fixtures', 'codex-hook-schemas');
const ajv = new Ajv.default({ strict: false, allErrors: true });
const cache = new Map<string, ReturnType<typeof ajv.compile>>();

const FILE: Record<string, string> = {
  PreToolUse: 'pre-tool-use',
  PostToolUse: 'post-tool-use',
  SessionStart: 'session-start',
  PreCompact: 'pre-compact',
  PostCompact: 'post-compact',
  Stop: 'stop',
  UserPromptSubmit: 'user-prompt-submit',
  SubagentStart: 'subagent-start',
  SubagentStop: 'subagent-stop',
  PermissionRequest: 'permission-request',
  Interrupt: 'interrupt',
};

function validator(event: string, dir: 'input' | 'output') {
  const key = `${event}.${dir}`;
  let v = cache.get(key);
  if (!v) {
    const schema = JSON.parse(readFileSync(join(DIR, `${FILE[event] ?? event}.command.${dir}.json`), 'utf8'));
    delete schema.$schema;
    v = ajv.compile(schema);
    cache.set(key, v);
  }
  return v;
}

/** Asserts that `stdout` (a hook's reply) is empty or valid for Codex; returns the parsed JSON. */
export function assertValidReply(event: string, stdout: string | null): unknown {
  if (stdout === null || stdout.trim() === '') return null;
  const data = JSON.parse(stdout);
  if (event === 'SessionEnd') throw new Error('SessionEnd takes no JSON output');
  const v = validator(event, 'output');
  if (!v(data)) throw new Error(`${event} reply violates Codex's schema: ${ajv.errorsText(v.errors)}\n${stdout}`);
  return data;
}

export function assertValidInput(event: string, payload: unknown): void {
  const v = validator(event, 'input');
  if (!v(payload)) throw new Error(`${event} payload violates Codex's schema: ${ajv.errorsText(v.errors)}`);
}
