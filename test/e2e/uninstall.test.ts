// Install and uninstall are independent per agent (issue 23.2), on the real pinned Codex: with Latch
// set up for Codex and for Claude Code in one home, `latch uninstall claude` leaves Codex working (the
// next Codex session writes, nothing is denied, no registration alarm), and the doctor then says
// Claude Code is not installed. Before, every Codex tool call in every workspace was denied
// ("registration changed … SessionStart handler removed") until Claude's hooks were added back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { outputsContaining, setupEnv } from '../helpers/e2e.js';

const LATCH = resolve('dist', 'latch.cjs');
const T = { timeout: 240_000 };

test('latch uninstall claude leaves Codex working; the doctor says Claude Code is not installed', T, async (t) => {
  const env = await setupEnv([
    { items: [{ type: 'bash', cmd: 'echo written > w.txt' }], inputTokens: 200 },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const claudeDir = join(env.base, 'claude-config');
  const latch = (...args: string[]) =>
    spawnSync(process.execPath, [LATCH, ...args], {
      cwd: env.work,
      env: { ...process.env, LATCH_HOME: env.latchHome, CODEX_HOME: env.codexHome, CLAUDE_CONFIG_DIR: claudeDir },
      encoding: 'utf8',
      timeout: 60_000,
    });
  const setup = latch('setup', 'claude');
  assert.equal(setup.status, 0, setup.stderr);
  assert.match(readFileSync(join(claudeDir, 'settings.json'), 'utf8'), /latch/);
  const un = latch('uninstall', 'claude');
  assert.equal(un.status, 0, un.stderr);
  assert.doesNotMatch(readFileSync(join(claudeDir, 'settings.json'), 'utf8'), /latch/);

  const r = await env.codex('write w.txt');
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  assert.deepEqual(outputsContaining(env, 'Latch blocked'), []);
  assert.equal(env.file('w.txt'), 'written\n');
  const status = env.statusJson();
  assert.equal(status.sessions[0]?.state, 'mutable');

  const doctor = latch('doctor', '--json');
  const checks = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks;
  const registration = checks.find((c) => c.name === 'registration');
  assert.equal(registration?.status, 'ok', JSON.stringify(registration));
  // Claude Code is no longer Latch's: the doctor checks Codex alone.
  assert.deepEqual(
    checks.filter((c) => /claude/i.test(`${c.name} ${c.detail}`)).map((c) => c.name),
    [],
  );
  assert.equal(doctor.status, 0, doctor.stdout);

  // Uninstalling the last agent too: the doctor says Latch is not installed, and nothing is denied.
  const unCodex = latch('uninstall', 'codex', '--codex-home', env.codexHome);
  assert.equal(unCodex.status, 0, unCodex.stderr);
  const none = latch('doctor');
  process.stderr.write(`doctor with nothing installed: exit ${none.status}\n${none.stdout}${none.stderr}\n`);
  assert.match(`${none.stdout}${none.stderr}`, /not installed/i);
});

test(
  'the package removed without `latch uninstall`: Codex’s calls are blocked with one sentence that names the command removing the handlers, no stack trace',
  T,
  async (t) => {
    const env = await setupEnv([
      { items: [{ type: 'bash', cmd: 'echo written > w.txt' }], inputTokens: 200 },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    // An installation of its own, inside the checkout (its node_modules resolve), set up, then deleted.
    mkdirSync(resolve('.latch-tmp'), { recursive: true });
    const prefix = mkdtempSync(join(resolve('.latch-tmp'), 'installed-'));
    t.after(async () => {
      rmSync(prefix, { recursive: true, force: true });
      await env.cleanup();
    });
    cpSync(resolve('dist'), join(prefix, 'dist'), { recursive: true });
    const entry = join(prefix, 'dist', 'latch.cjs');
    const setup = spawnSync(process.execPath, [entry, 'setup', 'codex', '--codex-home', env.codexHome], {
      cwd: env.work,
      env: { ...process.env, LATCH_HOME: env.latchHome, CODEX_HOME: env.codexHome },
      encoding: 'utf8',
    });
    assert.equal(setup.status, 0, setup.stderr);
    assert.match(
      readFileSync(join(env.codexHome, 'hooks.json'), 'utf8'),
      new RegExp(prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
    );
    rmSync(prefix, { recursive: true, force: true });

    const r = await env.codex('write w.txt');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.equal(env.file('w.txt'), null, 'the call ran without Latch');
    const blocked = outputsContaining(env, 'Latch is not installed any more');
    assert.equal(blocked.length, 1, JSON.stringify(env.modelSaw().slice(-3)));
    assert.match(blocked[0]!, /Remove them with: npx agent-latch uninstall codex/);
    assert.doesNotMatch(blocked[0]!, /at Module|Cannot find module|node:internal/);
  },
);
