// The read-only sandbox Latch wraps latched reads in: quoting is exact, the wrapped command really
// runs inside `codex sandbox` (the real 0.169.0 binary from node_modules), writes fail there, and the
// hook's reply carrying the rewrite is valid for Codex's own PreToolUse output schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { readOnlySandbox, wrapReadOnly } from '../../src/agents/codex/sandbox.js';
import { latchReadArgs, shellQuote } from '../../src/guard/read-shell.js';
import { codexReply } from '../../src/agents/codex/hooks.js';
import { assertValidReply } from '../helpers/schemas.js';
import { tmpDir } from '../helpers/git.js';

const CODEX = path.resolve('node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');
const spawn = (bin: string, args: string[], env: NodeJS.ProcessEnv) => {
  const r = spawnSync(bin, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return { status: r.status, stderr: r.stderr ?? '' };
};

test('shellQuote: bash reads back exactly the string (property)', () => {
  fc.assert(
    fc.property(
      fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\0')),
      (s) => {
        const r = spawnSync('/bin/bash', ['-c', `printf '%s' ${shellQuote(s)}`], { encoding: 'utf8' });
        assert.equal(r.stdout, s);
      },
    ),
    { numRuns: 60 },
  );
});

test('latchReadArgs: this Latch in any spelling (latch, its entry, its bin), plain words, a read subcommand', () => {
  const e = '/opt/latch/dist/latch.cjs';
  assert.deepEqual(latchReadArgs(`node ${e} status`, e), ['status']);
  assert.deepEqual(latchReadArgs('latch status', e), ['status']);
  assert.deepEqual(latchReadArgs('latch brief --page 1', e), ['brief', '--page', '1']);
  assert.deepEqual(latchReadArgs('node /opt/latch/bin/latch.cjs log', e), ['log']);
  assert.deepEqual(latchReadArgs(`node ${e} brief --page 2 --session abc-1`, e), [
    'brief',
    '--page',
    '2',
    '--session',
    'abc-1',
  ]);
  assert.deepEqual(latchReadArgs(`${e} status --json`, e), ['status', '--json']);
  for (const bad of [
    `node ${e} verify --yes`,
    `node ${e} status; touch x`,
    `node ${e} status $(id)`,
    `node ./latch.cjs status`,
    `./latch status`,
    `npx latch status`,
    `latch verify --yes`,
    `latch status | head`,
    `node ${e}`,
    `node ${e} status 'x'`,
    `node ${e} status > f`,
  ]) {
    assert.equal(latchReadArgs(bad, e), null, bad);
  }
});

test('a wrapped command runs inside codex sandbox: reads work, writes fail (real binary)', {
  skip: !existsSync(CODEX) && 'no codex binary',
}, () => {
  const home = tmpDir('latch-sbx-home-');
  const work = tmpDir('latch-sbx-work-');
  writeFileSync(path.join(work, 'f.txt'), 'hello\n');
  const st = readOnlySandbox(home, { LATCH_CODEX_BIN: CODEX }, spawn);
  assert.equal(st.ok, true, st.ok ? '' : st.why);
  if (!st.ok) return;
  const run = (cmd: string) =>
    spawnSync('/bin/bash', ['-lc', wrapReadOnly(cmd, st.sandbox)], { cwd: work, encoding: 'utf8' });
  const read = run('cat f.txt');
  assert.equal(read.status, 0, read.stderr);
  assert.match(read.stdout, /hello/);
  for (const w of [
    'echo x > g.txt',
    `echo x > ${path.join(home, 'owned')}`,
    'touch /tmp/latch-sbx-escape-$$',
    'rm f.txt',
    'git init -q .',
  ]) {
    run(w);
  }
  assert.deepEqual(spawnSync('ls', ['-A', work], { encoding: 'utf8' }).stdout.trim().split('\n'), ['f.txt']);
  assert.equal(readFileSync(path.join(work, 'f.txt'), 'utf8'), 'hello\n');
  assert.equal(existsSync(path.join(home, 'owned')), false);
  // The probe is remembered; a config the agent may have written into Latch's sandbox home is emptied.
  assert.ok(existsSync(path.join(home, 'sandbox', 'probe.json')));
  writeFileSync(
    path.join(home, 'sandbox', 'codex-home', 'config.toml'),
    'default_permissions = "full"\n[permissions.full]\nfile_system = "full"\n',
  );
  const again = readOnlySandbox(home, { LATCH_CODEX_BIN: CODEX }, spawn);
  assert.equal(again.ok, true);
  assert.equal(readFileSync(path.join(home, 'sandbox', 'codex-home', 'config.toml'), 'utf8'), '');
  run('echo x > g.txt');
  assert.equal(existsSync(path.join(work, 'g.txt')), false);
});

test('no sandbox: LATCH_SANDBOX=off, or no Codex among the ancestors, says why', () => {
  const home = tmpDir('latch-sbx-off-');
  const off = readOnlySandbox(home, { LATCH_SANDBOX: 'off' }, spawn);
  assert.deepEqual(off, { ok: false, why: 'LATCH_SANDBOX=off' });
  const none = readOnlySandbox(home, {}, spawn);
  assert.equal(none.ok, false);
  mkdirSync(path.join(home, 'x'));
});

test('the rewrite reply is valid for Codex’s PreToolUse output schema', () => {
  const reply = codexReply('PreToolUse', {
    verdict: 'allow',
    reasons: [],
    message: null,
    state: 'latched',
    updatedInput: { command: "CODEX_HOME='/h' exec '/c' sandbox -- cat f" },
  });
  assert.ok(reply.stdout);
  assertValidReply('PreToolUse', reply.stdout);
  assert.equal(JSON.parse(reply.stdout!).hookSpecificOutput.permissionDecision, 'allow');
});

test('a notice for the human is valid on every Codex event: systemMessage where the schema takes it, nothing on SessionEnd', () => {
  const d = { verdict: 'observe' as const, reasons: [], message: null, state: 'latched' as const, notice: 'Latch: x' };
  for (const event of [
    'PreCompact',
    'PostCompact',
    'PostToolUse',
    'UserPromptSubmit',
    'Stop',
    'SubagentStop',
    'Interrupt',
  ]) {
    const reply = codexReply(event, d);
    assert.equal(
      (assertValidReply(event, reply.stdout) as { systemMessage?: string }).systemMessage,
      'Latch: x',
      event,
    );
  }
  assert.equal(codexReply('SessionEnd', d).stdout, null, 'SessionEnd takes no JSON output');
});
