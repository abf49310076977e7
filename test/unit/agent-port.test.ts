// The agent port holds: Codex's vocabulary lives in src/agents/codex/ only, and the core (everything
// but the entries, the commands and src/agents/) imports no agent, only the port's types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AGENT_NAMES, isAgentName, loadAgent } from '../../src/agents/index.js';
import { codeCacheNames, HOOK_CACHE_AGENTS, mainCacheName } from '../../src/base/code-cache.js';

/** Names only Codex's formats use (issue 12): its tools, rollout record types and fields. */
const CODEX_ONLY = [
  'apply_patch',
  'exec_command',
  'session_meta',
  'turn_context',
  'response_item',
  'event_msg',
  'function_call_output',
  'custom_tool_call',
  'history_base',
  'ContextCompaction',
  'collaborationspawn_agent',
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const SRC = sources('src').map((p) => relative('.', p));
/** Files that may know agents by name: the entries, the commands, the agents themselves. */
const MAY_IMPORT_AGENTS = (p: string) =>
  /^src\/(main|cli|hook|slow|loader)\.ts$/.test(p) || p.startsWith('src/commands/') || p.startsWith('src/agents/');

test('no Codex-only name outside src/agents/codex/', () => {
  const found: string[] = [];
  for (const p of SRC.filter((f) => !f.startsWith('src/agents/codex/'))) {
    const text = readFileSync(p, 'utf8');
    for (const name of CODEX_ONLY) if (text.includes(name)) found.push(`${p}: ${name}`);
  }
  assert.deepEqual(found, []);
});

test('the grep would find a Codex-only name (the list is live)', () => {
  const inCodex = SRC.filter((f) => f.startsWith('src/agents/codex/'))
    .map((p) => readFileSync(p, 'utf8'))
    .join('\n');
  for (const name of CODEX_ONLY) assert.ok(inCodex.includes(name), `${name} is used by the Codex agent`);
});

test('the core imports no agent: only the port (src/agents/agent.ts), as types', () => {
  const bad: string[] = [];
  for (const p of SRC.filter((f) => !MAY_IMPORT_AGENTS(f))) {
    for (const m of readFileSync(p, 'utf8').matchAll(/^(import|export)(\s+type)?\b[^;]*?from '([^']+)'/gms)) {
      const spec = m[3]!;
      if (!/\/agents\//.test(spec)) continue;
      if (spec.endsWith('/agents/agent.js') && (m[2] || /^import\s+type|^export\s+type/.test(m[0]))) continue;
      bad.push(`${p}: ${m[0].split('\n')[0]}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('the registry names each agent once, by its own name', async () => {
  assert.deepEqual(AGENT_NAMES, ['codex', 'claude']);
  for (const name of AGENT_NAMES) {
    const agent = await loadAgent(name);
    assert.equal(agent?.name, name);
    assert.equal(await loadAgent(name), agent, 'loaded once');
  }
  assert.equal(isAgentName('toString'), false, 'no prototype key is an agent');
  assert.equal(await loadAgent('claude-next'), null);
});

test("each agent's hook runs main.cjs from a code cache of its own (a new agent gets one too)", () => {
  assert.deepEqual(HOOK_CACHE_AGENTS, AGENT_NAMES, 'src/base/code-cache.ts lists the registry');
  for (const name of AGENT_NAMES) {
    assert.equal(mainCacheName(['hook', name, '--event', 'PreToolUse']), `main.cjs.${name}.v8cache`);
    assert.ok(codeCacheNames().includes(`main.cjs.${name}.v8cache`), 'fingerprinted and packed');
  }
  assert.equal(mainCacheName(['doctor']), 'main.cjs.v8cache', 'the commands share one');
  assert.equal(mainCacheName(['hook', 'toString']), 'main.cjs.v8cache', 'an unknown agent names no file');
  assert.equal(mainCacheName(['hook', '../x']), 'main.cjs.v8cache');
  assert.equal(mainCacheName([]), 'main.cjs.v8cache');
});

test('every agent provides its commands through the port: setup, uninstall, doctor, the flags it takes', async () => {
  for (const name of AGENT_NAMES) {
    const agent = (await loadAgent(name))!;
    const commands = await agent.commands();
    for (const m of ['setup', 'uninstall', 'doctor'] as const)
      assert.equal(typeof commands[m], 'function', `${name}: commands().${m}`);
    assert.ok(commands.setupFlags.includes('project') && commands.setupFlags.includes('dry-run'), name);
    assert.equal(await agent.commands(), commands, `${name}: loaded once`);
  }
});

/** The static imports of a file (`import ... from`, `export ... from`; not `import()`). */
const staticImports = (p: string) =>
  [...readFileSync(p, 'utf8').matchAll(/^(?:import|export)\b[^;]*?from '([^']+)'/gms)].map((m) => m[1]!);

test("an agent's index (the hook path) imports its commands' modules only lazily, through commands()", () => {
  const bad: string[] = [];
  for (const p of SRC.filter((f) => /^src\/agents\/[^/]+\/index\.ts$/.test(f)))
    for (const spec of staticImports(p))
      if (/\/(setup|doctor|commands|doctor-file)\.js$/.test(spec)) bad.push(`${p}: ${spec}`);
  assert.deepEqual(bad, []);
});

test("Codex's setup and doctor modules are reached through the port outside src/agents/codex/", () => {
  // The demo (a command, which may import an agent's modules) installs Latch into its own CODEX_HOME.
  const allowed = new Set(['src/commands/demo/index.ts']);
  const bad: string[] = [];
  for (const p of SRC.filter((f) => !f.startsWith('src/agents/codex/') && !allowed.has(f)))
    for (const spec of staticImports(p)) if (/agents\/codex\/(setup|doctor)\.js$/.test(spec)) bad.push(`${p}: ${spec}`);
  assert.deepEqual(bad, []);
});
