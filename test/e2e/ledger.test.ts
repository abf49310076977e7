// Acceptance for the mutation-scope ledger on the real pinned Codex (0.171.0) over the loopback fake model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PATCH, setupEnv } from '../helpers/e2e.js';

const FAILING_PATCH = '*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n';

interface Entry {
  kind: string;
  attempt_id?: string;
  tool?: string;
  summary?: string;
  state?: string;
  end_reason?: string | null;
  files?: { path: string; change: string; attribution: string; candidates: string[] }[];
  change?: { path: string; attribution: string };
}

test('ledger: Bash, apply_patch, a failing apply_patch, parallel calls and a hand edit are recorded and attributed', {
  timeout: 300_000,
}, async (t) => {
  const env = await setupEnv([
    /* 0 */ { items: [{ type: 'bash', cmd: 'echo one > a1.txt' }] },
    /* 1 */ { items: [{ type: 'patch', patch: PATCH('p.txt', 'patched') }] },
    /* 2 */ { items: [{ type: 'patch', patch: FAILING_PATCH }] },
    /* 3 */ {
      items: [
        { type: 'bash', cmd: 'sleep 0.3; echo x > par1.txt' },
        { type: 'bash', cmd: 'sleep 0.3; echo y > par2.txt' },
      ],
    },
    /* 4 */ { items: [{ type: 'message', text: 'turn 1 done' }] },
    /* 5 */ { items: [{ type: 'bash', cmd: 'echo two >> a1.txt' }] },
    /* 6 */ { items: [{ type: 'message', text: 'turn 2 done' }] },
  ]);
  t.after(() => env.cleanup());
  const first = await env.codex('turn 1');
  assert.equal(first.code, 0, first.stderr);
  writeFileSync(join(env.work, 'hand.txt'), 'edited by a human between turns\n');
  const second = await env.codex('turn 2', { resume: first.threadId! });
  assert.equal(second.code, 0, second.stderr);

  const logRun = env.latch(['log', '--json']);
  assert.equal(logRun.code, 0, logRun.stderr);
  const entries = (JSON.parse(logRun.stdout) as { entries: Entry[] }).entries;
  const attempts = entries.filter((e) => e.kind === 'attempt');
  const find = (needle: string) => {
    const a = attempts.find((e) => (e.summary ?? '').includes(needle));
    assert.ok(a, `attempt for ${needle} in ${JSON.stringify(attempts.map((x) => x.summary))}`);
    return a!;
  };

  const bash1 = find('echo one > a1.txt');
  assert.equal(bash1.state, 'closed');
  assert.deepEqual(
    bash1.files!.map((f) => [f.change, f.path, f.attribution]),
    [['added', 'a1.txt', 'attempt']],
  );

  const patch = find('add p.txt');
  assert.equal(patch.tool, 'apply_patch');
  assert.equal(patch.state, 'closed');
  assert.deepEqual(
    patch.files!.map((f) => [f.change, f.path, f.attribution]),
    [['added', 'p.txt', 'attempt']],
  );

  const failing = find('update missing.txt');
  assert.equal(
    failing.state,
    'abandoned',
    'no PostToolUse for a failed apply_patch: abandoned at the first sure signal',
  );
  assert.equal(failing.files!.length, 0);

  const par1 = find('par1.txt');
  const par2 = find('par2.txt');
  for (const [a, path] of [
    [par1, 'par1.txt'],
    [par2, 'par2.txt'],
  ] as const) {
    assert.equal(a.state, 'closed');
    const change =
      entries.flatMap((e) => e.files ?? []).find((f) => f.path === path) ??
      entries.find((e) => e.change?.path === path)?.change;
    assert.ok(change, `${path} recorded`);
    // Both calls were live while both files were written: contended, naming both attempts.
    assert.equal(change!.attribution, 'contended');
    assert.ok(
      change &&
        'candidates' in change &&
        (change as { candidates: string[] }).candidates.includes(par1.attempt_id!) &&
        (change as { candidates: string[] }).candidates.includes(par2.attempt_id!),
    );
  }

  const bash2 = find('echo two >> a1.txt');
  assert.deepEqual(
    bash2.files!.map((f) => [f.change, f.path, f.attribution]),
    [['modified', 'a1.txt', 'attempt']],
  );

  // Every attempt is terminal once the sessions stopped.
  assert.deepEqual(
    attempts.filter((a) => a.state === 'started' || a.state === 'closing'),
    [],
  );

  const hand = env.latch(['blame', 'hand.txt', '--json']);
  assert.equal(hand.code, 0, hand.stderr);
  assert.deepEqual(
    (JSON.parse(hand.stdout) as { changes: { attribution: string }[] }).changes.map((c) => c.attribution),
    ['outside'],
  );

  const blame = env.latch(['blame', 'a1.txt', '--json']);
  const changes = (JSON.parse(blame.stdout) as { changes: { change: string; attempt_id: string; tool: string }[] })
    .changes;
  assert.deepEqual(
    changes.map((c) => [c.change, c.attempt_id]),
    [
      ['modified', bash2.attempt_id],
      ['added', bash1.attempt_id],
    ],
    'newest first, each with its attempt',
  );
  const text = env.latch(['blame', 'a1.txt']).stdout;
  assert.match(text, /modified +Bash/);
});
