// Claude Code's web tools (WebFetch, WebSearch) change no local file, but a request can have remote
// effects (a GET that fires a webhook or a deploy) and can carry data out: a session whose authority
// is revoked reaches the network through no tool. Driven in-process (runHook with the Claude agent, a
// temp LATCH_HOME, CLAUDE_CONFIG_DIR and HOME), as test/unit/claude-adversarial.test.ts does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claude } from '../../src/agents/claude/index.js';
import { classifyTool, NETWORK_TOOLS } from '../../src/agents/claude/tools.js';
import { summarizeCall } from '../../src/guard/events.js';
import { runHook } from '../../src/hook.js';
import { openStore } from '../../src/store/store.js';
import { claudeBox as box, claudeBoxPayload as payload, type ClaudeBox as Box } from '../helpers/claude-box.js';

let seq = 0;
const tool = (b: Box, name: string, input: unknown) =>
  payload(b, 'pre-tool-use-bash', { tool_name: name, tool_input: input, tool_use_id: `toolu_net_${++seq}` });

async function hook(b: Box, p: Record<string, unknown>, env: NodeJS.ProcessEnv = b.env) {
  const r = await runHook(claude, JSON.stringify(p), String(p.hook_event_name), env);
  const out = r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : null;
  const h = out?.hookSpecificOutput as { permissionDecision?: string; permissionDecisionReason?: string } | undefined;
  return { ...r, denied: h?.permissionDecision === 'deny', reason: h?.permissionDecisionReason ?? '' };
}

function query<T>(b: Box, sql: string, ...args: unknown[]): T[] {
  const db = openStore(b.home, { create: false });
  try {
    return db.prepare(sql).all(...args) as T[];
  } finally {
    db.close();
  }
}

async function latched(b: Box): Promise<void> {
  await hook(b, payload(b, 'session-start-startup'));
  await hook(b, tool(b, 'Bash', { command: 'true' }));
  for (const ev of ['pre-compact-auto', 'session-start-compact', 'post-compact-auto']) await hook(b, payload(b, ev));
  assert.equal(query<{ state: string }>(b, "SELECT state FROM sessions WHERE session_id = 'S'")[0]?.state, 'latched');
}

const FETCH = { url: 'https://deploy.example.invalid/hooks/release?ref=main', prompt: 'what does it say' };
const SEARCH = { query: 'latch verify' };

test('WebFetch and WebSearch are network tools: tracked, named by their target', () => {
  const fetch = classifyTool('WebFetch', FETCH, 'toolu_x');
  assert.equal(fetch.kind, 'network');
  assert.equal(fetch.command, FETCH.url);
  assert.equal(summarizeCall(fetch), `WebFetch: ${FETCH.url}`);
  const search = classifyTool('WebSearch', SEARCH, 'toolu_y');
  assert.equal(search.kind, 'network');
  assert.equal(search.command, SEARCH.query);
  assert.equal(classifyTool('WebFetch', null, null).kind, 'network', 'the fail-closed path asks with no input');
  assert.deepEqual(Object.keys(NETWORK_TOOLS).sort(), ['WebFetch', 'WebSearch']);
  // Nothing else changed: the file readers stay untracked, unknown names stay unknown.
  assert.equal(classifyTool('Read', { file_path: '/w/a' }).kind, null);
  assert.equal(classifyTool('WebBrowse', {}).kind, 'unknown');
});

test('mutable: WebFetch and WebSearch run (no reply)', async (t) => {
  const b = box();
  t.after(b.cleanup);
  await hook(b, payload(b, 'session-start-startup'));
  for (const [name, input] of [
    ['WebFetch', FETCH],
    ['WebSearch', SEARCH],
  ] as const) {
    const r = await hook(b, tool(b, name, input));
    assert.equal(r.stdout, null, `${name} allowed silently`);
    assert.equal(r.exitCode, 0);
  }
});

test('latched: WebFetch and WebSearch are denied with a reason naming the tool; Read still runs', async (t) => {
  const b = box();
  t.after(b.cleanup);
  writeFileSync(join(b.work, 'f'), 'x\n');
  await latched(b);
  for (const [name, input] of [
    ['WebFetch', FETCH],
    ['WebSearch', SEARCH],
  ] as const) {
    const r = await hook(b, tool(b, name, input));
    assert.ok(r.denied, `${name} denied while latched`);
    assert.equal(r.exitCode, 0);
    assert.match(r.reason, new RegExp(`\`${name}\` reaches the network`));
    assert.match(r.reason, /latched/);
  }
  const denials = query<{ tool_name: string; summary: string; reasons_json: string }>(
    b,
    "SELECT tool_name, summary, reasons_json FROM denials WHERE tool_name IN ('WebFetch', 'WebSearch') ORDER BY id",
  );
  assert.deepEqual(
    denials.map((d) => [d.tool_name, d.summary]),
    [
      ['WebFetch', `WebFetch: ${FETCH.url}`],
      ['WebSearch', `WebSearch: ${SEARCH.query}`],
    ],
  );
  for (const d of denials)
    assert.ok((JSON.parse(d.reasons_json) as { code: string }[]).some((x) => x.code === 'network_tool'));
  const read = await hook(b, tool(b, 'Read', { file_path: join(b.work, 'f') }));
  assert.equal(read.stdout, null, 'Read allowed');
});

test('fail closed: when Latch cannot check (no store), WebFetch is denied; Read still runs', async (t) => {
  const b = box();
  t.after(b.cleanup);
  const env = { ...b.env, LATCH_HOME: join(b.base, 'no-store-here') };
  const r = await hook(b, tool(b, 'WebFetch', FETCH), env);
  assert.ok(r.denied, 'denied');
  assert.match(r.reason, /could not check/);
  const read = await hook(b, tool(b, 'Read', { file_path: join(b.work, 'README.md') }), env);
  assert.equal(read.stdout, null, 'Read allowed');
});

test('mutable: a network call opens no ledger attempt (it changes no file)', async (t) => {
  const b = box();
  t.after(b.cleanup);
  await hook(b, payload(b, 'session-start-startup'));
  const p = tool(b, 'WebFetch', FETCH);
  assert.equal((await hook(b, p)).stdout, null);
  const attempts = query<{ id: string }>(b, 'SELECT id FROM attempts WHERE tool_use_id = ?', p.tool_use_id);
  assert.deepEqual(attempts, []);
});
