// Acceptance (issue 22) on the real pinned Codex: with Codex's own sandbox on (its defaults,
// `workspace-write`, and `read-only`), in a home outside /tmp as users have, a latched session still
// reads: `cat`, `sed -n`, `ls -la`, `git status`, `git diff`, `grep -rn X .` and the brief's own page
// command (`latch brief --page 1`, with no `latch` on the agent's PATH) run and their output reaches
// the model, while a write is denied. Before Latch ran held reads in the hook, every one of them
// failed inside Codex's sandbox ("error building bubblewrap command").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BIG, findRollout, outputsContaining, setupEnv } from '../helpers/e2e.js';

const T = { timeout: 300_000 };
const BASE = join(homedir(), '.cache', 'latch-e2e');

const READS = [
  'cat a.txt',
  "sed -n '1p' README.md",
  'ls -la',
  'git status',
  'git diff',
  'grep -rn changed .',
  'latch brief --page 1',
];

for (const mode of ['workspace-write', 'read-only'] as const) {
  test(`held reads work inside Codex's ${mode} sandbox; the write is denied`, T, async (t) => {
    const env = await setupEnv(
      [
        // Mutable: a workspace write runs where the sandbox lets it (workspace-write), not in read-only.
        { items: [{ type: 'bash', cmd: 'echo before > w.txt' }], inputTokens: 200 },
        { items: [{ type: 'bash', cmd: 'echo compacting' }], inputTokens: BIG },
        {
          items: [
            ...READS.map((cmd) => ({ type: 'bash' as const, cmd })),
            { type: 'bash', cmd: 'echo after > w2.txt' },
          ],
        },
        { items: [{ type: 'message', text: 'inspected' }] },
      ],
      { sandboxMode: mode, baseDir: BASE },
    );
    t.after(() => env.cleanup());
    // A change for `git diff` and `grep` to find, made by the human before the session.
    writeFileSync(join(env.work, 'a.txt'), 'original\nchanged\n');
    const r = await env.codex('do the task');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.ok(
      env.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    const status = env.statusJson();
    assert.equal(status.sessions[0]!.state, 'latched');
    // Codex's sandbox was really on: the mutable write landed only where it allows workspace writes.
    assert.equal(env.file('w.txt'), mode === 'workspace-write' ? 'before\n' : null);

    const saw = env.modelSaw();
    const ran = (what: string, needle: string | RegExp) =>
      assert.ok(
        saw.some(
          (x) => (typeof needle === 'string' ? x.includes(needle) : needle.test(x)) && !x.includes('Latch blocked'),
        ),
        `${what}: no output with ${needle} reached the model\n${saw
          .filter((x) => !x.startsWith('<'))
          .slice(-12)
          .join('\n---\n')
          .slice(0, 6000)}`,
      );
    ran('cat a.txt', 'original\nchanged');
    ran("sed -n '1p' README.md", '# e2e');
    ran('ls -la', /total \d+[\s\S]*README\.md/);
    ran('git status', 'On branch main');
    ran('git diff', '+changed');
    ran('grep -rn changed .', 'a.txt:2:changed');
    ran('latch brief --page 1', 'LATCH-BRIEF session=');
    assert.equal(
      saw.some((x) => /error building bubblewrap|No permissions to create new namespace/.test(x)),
      false,
      'a read failed inside the agent’s sandbox',
    );
    // The write after the compaction was denied, with the reason.
    assert.equal(env.file('w2.txt'), null);
    assert.ok(outputsContaining(env, 'Latch blocked').some((x) => x.includes('w2.txt')));
    // The doctor reads the rollout as the hook decided it (issue 23.4): the reads Latch allowed and
    // replayed, its own page read among them, are not `ran_while_held`; the session is healthy.
    const rollout = findRollout(env.codexHome, r.threadId!);
    assert.ok(rollout, 'the rollout');
    const d = env.latch(['doctor', rollout!, '--json']);
    const findings = (JSON.parse(d.stdout) as { findings: { code: string; detail?: string }[] }).findings;
    assert.deepEqual(
      findings.filter((f) => f.code === 'ran_while_held'),
      [],
    );
    assert.equal(d.code, 0, `latch doctor exited ${d.code}: ${JSON.stringify(findings).slice(0, 2000)}`);
  });
}
