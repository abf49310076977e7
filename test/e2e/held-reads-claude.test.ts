// Acceptance (issue 22) on the real pinned Claude Code with its own sandbox on (`sandbox.enabled`,
// bubblewrap and socat installed): shown active first (a write outside the workspace fails before the
// compaction, one inside it runs); after the compaction `cat`, `sed -n`, `ls -la`, `git status`,
// `git diff`, `grep -rn X .` and `latch brief --page 1` run and their output reaches the model, while
// a write is denied. Before Latch ran held reads in the hook, each failed inside Claude Code's sandbox
// ("bwrap: No permissions to create new namespace").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPACTING_INPUT_TOKENS } from '../../src/agents/claude/fake-model.js';
import { setupClaudeEnv, type ClaudeTurn } from '../helpers/claude.js';

const T = { timeout: 240_000 };
const use = (id: string, command: string, inputTokens?: number): ClaudeTurn => ({
  content: [{ type: 'tool_use', id, name: 'Bash', input: { command, description: 'step' } }],
  ...(inputTokens !== undefined ? { inputTokens } : {}),
});

const READS: [string, string, string | RegExp][] = [
  ['r_cat', 'cat a.txt', 'original\nchanged'],
  ['r_sed', "sed -n '1p' README.md", '# e2e'],
  ['r_ls', 'ls -la', /total \d+[\s\S]*README\.md/],
  ['r_status', 'git status', 'On branch main'],
  ['r_diff', 'git diff', '+changed'],
  ['r_grep', 'grep -rn changed .', 'a.txt:2:changed'],
  ['r_page', 'latch brief --page 1', 'LATCH-BRIEF session='],
];

const bwrap = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/socat');

test('held reads work inside Claude Code’s own sandbox; the write is denied', {
  ...T,
  skip: bwrap ? false : 'bubblewrap and socat are needed for Claude Code’s sandbox (.ci/run installs them)',
}, async (t) => {
  const env = await setupClaudeEnv();
  t.after(() => env.cleanup());
  // The human turns the sandbox on, then has Latch record the settings again (a change it did not
  // record is tamper evidence).
  env.writeSettings({ ...env.readSettings(), sandbox: { enabled: true } });
  const setup = env.latch(['setup', 'claude']);
  assert.equal(setup.code, 0, setup.stderr);
  writeFileSync(join(env.work, 'a.txt'), 'original\nchanged\n');
  const outside = join(env.base, 'outside.txt');
  const run = await env.claude('Look around, then write w2.txt.', {
    turns: [
      use('p_in', 'echo before > w.txt', 200),
      use('p_out', `echo x > ${outside}`),
      use('p_compact', 'echo compacting', COMPACTING_INPUT_TOKENS),
      ...READS.map(([id, cmd]) => use(id, cmd)),
      use('w_after', 'echo after > w2.txt'),
      { content: [{ type: 'text', text: 'done' }] },
    ],
  });
  assert.equal(run.code, 0, `${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`);
  assert.ok(
    run.requests.some((r) => r.kind === 'compact'),
    'Claude Code compacted',
  );
  // The sandbox was really on: the workspace write ran, the write outside it failed.
  assert.equal(env.file('w.txt'), 'before\n', `the workspace write: ${env.toolResult('p_in')?.text}`);
  assert.equal(existsSync(outside), false, 'a write outside the workspace went through: the sandbox is off');
  assert.match(env.toolResult('p_out')?.text ?? '', /Read-only file system|Operation not permitted|Permission denied/);
  assert.equal(env.statusJson().sessions[0]!.state, 'latched');
  for (const [id, cmd, needle] of READS) {
    const r = env.toolResult(id);
    assert.ok(r, `${cmd}: no result`);
    const text = r!.text;
    assert.equal(r!.isError, false, `${cmd} failed: ${text}`);
    assert.ok(typeof needle === 'string' ? text.includes(needle) : needle.test(text), `${cmd}: ${text}`);
  }
  const denied = env.toolResult('w_after');
  assert.equal(denied?.isError, true, denied?.text);
  assert.match(denied!.text, /Latch/);
  assert.equal(env.file('w2.txt'), null);
});
