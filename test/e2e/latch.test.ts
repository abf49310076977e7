// Acceptance: the real pinned Codex (0.171.0) over the loopback fake model, hooks installed by `latch setup codex`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { snapshotTree } from '../../src/tree/snapshot.js';
import { BIG, LATCH, PATCH, outputsContaining, setupEnv } from '../helpers/e2e.js';
import { awaitResident, residentTrace } from '../helpers/resident.js';
import { residentHooks } from '../../src/resident/list.js';
import { runs } from '../../src/base/proc.js';
import type { FakeStep } from '../../src/agents/codex/fake-model.js';

const T = { timeout: 300_000 };

test('A: no compaction: Bash and apply_patch run; nothing latched', T, async (t) => {
  const env = await setupEnv([
    { items: [{ type: 'bash', cmd: 'echo one > one.txt' }] },
    { items: [{ type: 'patch', patch: PATCH('two.txt', 'two') }] },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const r = await env.codex('write two files');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(env.file('one.txt'), 'one\n');
  assert.equal(env.file('two.txt'), 'two\n');
  const st = env.statusJson();
  assert.equal(st.sessions.length, 1);
  assert.equal(st.sessions[0]!.state, 'mutable');
  assert.equal(st.sessions[0]!.checkpoints.length, 0);
  assert.equal(outputsContaining(env, 'Latch blocked').length, 0);
});

test('B-E: auto-compaction latches; resume stays latched; read-only allowed; verify restores', T, async (t) => {
  const env = await setupEnv([
    /* 0 */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: 200 },
    /* 1 */ { items: [{ type: 'bash', cmd: 'echo step2 >> a.txt' }], inputTokens: BIG },
    /* 2 */ {
      items: [
        { type: 'bash', cmd: 'echo again > a.txt' },
        { type: 'bash', cmd: 'touch b.txt' },
        { type: 'patch', patch: PATCH('c.txt') },
      ],
    },
    /* 3 */ { items: [{ type: 'message', text: 'blocked' }] },
    /* 4 */ { items: [{ type: 'bash', cmd: 'echo resumed > d.txt' }] },
    /* 5 */ { items: [{ type: 'message', text: 'still blocked' }] },
    /* 6 */ {
      items: [
        { type: 'bash', cmd: 'ls -a' },
        { type: 'bash', cmd: 'cat a.txt' },
        { type: 'bash', cmd: 'git status --short' },
        { type: 'bash', cmd: `node ${LATCH} verify --yes` },
        { type: 'bash', cmd: 'latch resume' },
        { type: 'bash', cmd: 'touch "$LATCH_HOME/owned"' },
      ],
    },
    /* 7 */ { items: [{ type: 'message', text: 'inspected' }] },
    /* 8 */ { items: [{ type: 'bash', cmd: 'echo verified > e.txt' }] },
    /* 9 */ { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const first = await env.codex('do the task');
  assert.equal(first.code, 0, first.stderr);
  const thread = first.threadId!;

  await t.test(
    'B: every post-compaction Bash and apply_patch is denied; workspace unchanged from the checkpoint',
    () => {
      assert.ok(
        env.fake.requests.some((r) => r.isCompaction),
        'Codex compacted',
      );
      assert.equal(env.file('a.txt'), 'step1\nstep2\n');
      assert.equal(env.file('b.txt'), null);
      assert.equal(env.file('c.txt'), null);
      const s = env.statusJson().sessions[0]!;
      assert.equal(s.session_id, thread);
      assert.equal(s.state, 'latched');
      assert.equal(s.may_mutate, false);
      assert.equal(s.checkpoints.length, 1);
      const cp = s.checkpoints[0]!;
      assert.equal(cp.trigger, 'auto');
      for (const via of ['pre_compact', 'post_compact', 'session_start']) assert.ok(cp.observed_via.includes(via), via);
      const now = snapshotTree(env.work);
      assert.equal(now.sha256, cp.tree.sha256, 'tree digest equal to the checkpoint');
      assert.equal(now.files, cp.tree.files);
      const denials = new Set(outputsContaining(env, 'Latch blocked'));
      assert.ok(denials.size >= 3, `the model received the denial for each call (${denials.size})`);
      assert.ok([...denials].every((d) => d.includes(cp.id) && d.includes('latch verify')));
    },
  );

  await t.test('C: a new process resuming the session is still latched', async () => {
    const r = await env.codex('continue', { resume: thread });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('d.txt'), null);
    assert.equal(env.statusJson().sessions[0]!.state, 'latched');
  });

  await t.test(
    'D: read-only commands run; latch verify/resume and $LATCH_HOME writes via the agent are denied',
    async () => {
      const r = await env.codex('inspect', { resume: thread });
      assert.equal(r.code, 0, r.stderr);
      const saw = env.modelSaw();
      assert.ok(
        saw.some((x) => x.includes('README.md') && !x.includes('Latch blocked')),
        'ls output reached the model',
      );
      assert.ok(
        saw.some((x) => x.includes('step1\nstep2') && !x.includes('Latch blocked')),
        'cat output reached the model',
      );
      const blocked = outputsContaining(env, 'Latch blocked');
      assert.ok(
        blocked.some((x) => x.includes('verify --yes')),
        'latch verify denied',
      );
      assert.ok(
        blocked.some((x) => x.includes('latch resume')),
        'latch resume denied',
      );
      assert.ok(
        blocked.some((x) => x.includes('owned')),
        '$LATCH_HOME write denied',
      );
      assert.equal(existsSync(join(env.latchHome, 'owned')), false);
      assert.equal(env.statusJson().sessions[0]!.state, 'latched');
    },
  );

  await t.test(
    'E: after `latch verify --yes` the resumed session may mutate; the record shows the evidence',
    async () => {
      const noConfirm = env.latch(['verify']);
      assert.equal(noConfirm.code, 2, 'no TTY and no --yes: no confirmation');
      const v = env.latch(['verify', '--yes', '--json']);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const out = JSON.parse(v.stdout);
      assert.equal(out.restored, true);
      assert.deepEqual(
        out.sessions[0].evidence.checks.map((c: { ok: boolean }) => c.ok),
        [true, true, true, true, true],
      );
      const r = await env.codex('go on', { resume: thread });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(env.file('e.txt'), 'verified\n');
      const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
      const row = db.prepare("SELECT * FROM transitions WHERE event = 'verify'").get() as {
        from_state: string;
        to_state: string;
        evidence_json: string;
      };
      db.close();
      assert.equal(row.from_state, 'latched');
      assert.equal(row.to_state, 'mutable');
      const ev = JSON.parse(row.evidence_json);
      assert.equal(ev.confirmed_by, '--yes');
      assert.ok(ev.checks.some((c: { name: string }) => c.name === 'tree'));
    },
  );
});

test('F: policy continue records but denies nothing', T, async (t) => {
  const env = await setupEnv(
    [
      { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo after > after.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ],
    { latchConfig: 'policy = "continue"\n' },
  );
  t.after(() => env.cleanup());
  const r = await env.codex('task');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(env.file('after.txt'), 'after\n');
  const s = env.statusJson().sessions[0]!;
  assert.equal(s.policy, 'continue');
  assert.equal(s.state, 'mutable');
  assert.equal(s.checkpoints.length, 1);
});

test('F: policy pause holds until `latch resume`', T, async (t) => {
  const env = await setupEnv(
    [
      { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo after > after.txt' }] },
      { items: [{ type: 'message', text: 'paused' }] },
      { items: [{ type: 'bash', cmd: 'echo resumed > resumed.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ],
    { latchConfig: 'policy = "pause"\n' },
  );
  t.after(() => env.cleanup());
  const r = await env.codex('task');
  assert.equal(env.file('after.txt'), null);
  assert.ok(outputsContaining(env, 'latch resume').length > 0);
  assert.equal(env.statusJson().sessions[0]!.state, 'paused');
  const res = env.latch(['resume', '--yes']);
  assert.equal(res.code, 0, res.stderr);
  const r2 = await env.codex('continue', { resume: r.threadId! });
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(env.file('resumed.txt'), 'resumed\n');
});

test(
  'G: with only the PreToolUse handler, the transcript scan trips before the first post-compaction mutation',
  T,
  async (t) => {
    const env = await setupEnv([
      { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo after > after.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    t.after(() => env.cleanup());
    const hooksFile = join(env.codexHome, 'hooks.json');
    const hooks = JSON.parse(readFileSync(hooksFile, 'utf8'));
    hooks.hooks = { PreToolUse: hooks.hooks.PreToolUse };
    writeFileSync(hooksFile, JSON.stringify(hooks, null, 2));
    // As installed by a Latch without a registration fingerprint (with one, the edit is a tamper: G2).
    const store = new Database(join(env.latchHome, 'latch.db'));
    store.exec('DELETE FROM registration_files; DELETE FROM registrations; DELETE FROM registration_alarm');
    store.close();
    const r = await env.codex('task');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('after.txt'), null);
    const s = env.statusJson().sessions[0]!;
    assert.equal(s.state, 'latched');
    assert.deepEqual(s.checkpoints[0]!.observed_via, ['transcript']);
    assert.equal(snapshotTree(env.work).sha256, s.checkpoints[0]!.tree.sha256);
  },
);

test(
  'G2: a Latch handler removed from hooks.json outside any tool call (a human edit): tracked calls are denied, nothing latches',
  T,
  async (t) => {
    const env = await setupEnv([
      { items: [{ type: 'bash', cmd: 'echo one > one.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    t.after(() => env.cleanup());
    const hooksFile = join(env.codexHome, 'hooks.json');
    const hooks = JSON.parse(readFileSync(hooksFile, 'utf8'));
    delete hooks.hooks.PostCompact;
    writeFileSync(hooksFile, JSON.stringify(hooks, null, 2));
    const r = await env.codex('task');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('one.txt'), null, 'the write was denied');
    const s = env.statusJson().sessions[0]!;
    assert.equal(s.state, 'mutable', 'no tool call ran when it changed: not latched');
    const denial = outputsContaining(env, 'Latch blocked').find((x) => /hooks\.json/.test(x));
    assert.ok(denial, 'the denial names the changed file');
    assert.match(denial, /a human's edit/);
  },
);

test(
  "G3: a Latch handler removed while a tool call runs is the agent's possible doing: the session latches, its next write is denied",
  T,
  async (t) => {
    const env = await setupEnv([
      { items: [{ type: 'bash', cmd: 'sleep 4; echo one > one.txt' }] },
      { items: [{ type: 'bash', cmd: 'echo two > two.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    t.after(() => env.cleanup());
    const hooksFile = join(env.codexHome, 'hooks.json');
    const run = env.codex('task');
    // Once the first call's attempt is open (its PreToolUse has run), the handler goes.
    const deadline = Date.now() + 60_000;
    for (;;) {
      let open = 0;
      if (existsSync(join(env.latchHome, 'latch.db'))) {
        const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true, fileMustExist: true });
        try {
          open = db.prepare(`SELECT COUNT(*) FROM attempts WHERE state = 'started'`).pluck().get() as number;
        } catch {
          open = 0;
        } finally {
          db.close();
        }
      }
      if (open > 0) break;
      assert.ok(Date.now() < deadline, 'the first call started');
      await new Promise((r) => setTimeout(r, 50));
    }
    const hooks = JSON.parse(readFileSync(hooksFile, 'utf8'));
    delete hooks.hooks.PostCompact;
    writeFileSync(hooksFile, JSON.stringify(hooks, null, 2));
    const r = await run;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('two.txt'), null, 'the next write was denied');
    const s = env.statusJson().sessions[0]!;
    assert.equal(s.state, 'latched');
    assert.match(s.reason ?? '', /registration_changed/);
    assert.ok(outputsContaining(env, 'Latch blocked').some((x) => /hooks\.json/.test(x) && !/a human's edit/.test(x)));
  },
);

test('H: a corrupt or missing store denies tracked tools; untracked tools are unaffected', T, async (t) => {
  const env = await setupEnv([
    {
      items: [
        { type: 'bash', cmd: 'echo x > corrupt.txt' },
        {
          type: 'raw',
          item: {
            type: 'function_call',
            name: 'view_image',
            call_id: 'vi_1',
            arguments: JSON.stringify({ path: 'README.md' }),
          },
        },
      ],
    },
    { items: [{ type: 'message', text: 'done' }] },
    { items: [{ type: 'bash', cmd: 'echo x > missing.txt' }] },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const db = join(env.latchHome, 'latch.db');
  writeFileSync(db, 'garbage '.repeat(1000));
  for (const f of ['-wal', '-shm']) rmSync(db + f, { force: true });
  const r = await env.codex('task');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(env.file('corrupt.txt'), null);
  const blocked = outputsContaining(env, 'Latch blocked');
  assert.ok(
    blocked.some((x) => /fail closed/.test(x)),
    'denied with a fail-closed reason',
  );
  const viewImage = env.fake.requests
    .flatMap((q) => q.body?.input ?? [])
    .filter((i: { call_id?: string; type?: string }) => i.call_id === 'vi_1' && i.type === 'function_call_output');
  assert.ok(viewImage.length > 0, 'view_image ran and answered');
  assert.ok(
    viewImage.every((i: { output?: unknown }) => !JSON.stringify(i.output).includes('PreToolUse hook')),
    'untracked tool not blocked',
  );

  rmSync(env.latchHome, { recursive: true, force: true, maxRetries: 5 });
  const r2 = await env.codex('again', { resume: r.threadId! });
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(env.file('missing.txt'), null);
});

test('I: two compactions give two checkpoints; one verify covers both; changes block verify (65)', T, async (t) => {
  const env = await setupEnv([
    { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
    { items: [{ type: 'bash', cmd: 'ls' }], inputTokens: BIG },
    { items: [{ type: 'bash', cmd: 'echo late > late.txt' }] },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const r = await env.codex('task');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(env.fake.requests.filter((q) => q.isCompaction).length, 2);
  const s = env.statusJson().sessions[0]!;
  assert.equal(s.checkpoints.length, 2);
  assert.equal(s.state, 'latched');
  assert.equal(env.file('late.txt'), null);

  writeFileSync(join(env.work, 'hand-edit.txt'), 'a human wrote this while latched\n');
  const bad = env.latch(['verify', '--yes', '--json']);
  assert.equal(bad.code, 65, bad.stdout + bad.stderr);
  const out = JSON.parse(bad.stdout);
  assert.deepEqual(
    out.sessions[0].evidence.changes.map((c: { path: string; change: string }) => `${c.change} ${c.path}`),
    ['added hand-edit.txt'],
  );
  rmSync(join(env.work, 'hand-edit.txt'));
  const ok = env.latch(['verify', '--yes']);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.equal(env.statusJson().sessions[0]!.state, 'mutable');
});

/**
 * A run whose model, before its second answer, waits until a resident hook is up (the first
 * PreToolUse runs in a process of its own and starts one). `seen()`: what it found then.
 */
async function withResident(steps: FakeStep[]) {
  let found = '(not looked)';
  const env = await setupEnv((_req, i) => {
    if (i === 1) found = awaitResident(env.latchHome);
    return steps[i] ?? { items: [{ type: 'message', text: 'done' }] };
  });
  return { env, seen: () => found };
}

test(
  'R: the resident hook answers the PreToolUse of the real Codex, writes each Start, and answers nothing after the compaction',
  T,
  async (t) => {
    const steps: FakeStep[] = [
      // The first PreToolUse runs in a process of its own and starts the resident hook; the model's
      // next answer waits until it is up (on a loaded machine a fixed pause was not always enough).
      /* 0 */ { items: [{ type: 'bash', cmd: 'true' }], inputTokens: 200 },
      /* 1 */ { items: [{ type: 'bash', cmd: 'echo r > r.txt' }], inputTokens: 200 },
      /* 2 */ { items: [{ type: 'patch', patch: PATCH('p.txt', 'p') }], inputTokens: 200 },
      /* 3 */ { items: [{ type: 'bash', cmd: 'echo s > s.txt' }], inputTokens: BIG },
      /* 4 */ { items: [{ type: 'bash', cmd: 'echo after >> a.txt' }] },
      /* 5 */ { items: [{ type: 'message', text: 'done' }] },
    ];
    const { env, seen } = await withResident(steps);
    t.after(() => env.cleanup());
    const r = await env.codex('write the files');
    const found = seen();
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('r.txt'), 'r\n');
    assert.equal(env.file('p.txt'), 'p\n');
    assert.equal(env.file('s.txt'), 's\n');
    assert.equal(env.file('a.txt'), 'original\n', 'the call after the compaction was denied');
    const s = env.statusJson().sessions[0]!;
    assert.equal(s.state, 'latched');

    const trace = residentTrace(env.latchHome).filter((l) => l.session === s.session_id);
    const served = trace.filter((l) => l.served);
    const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
    try {
      const contained = db
        .prepare("SELECT pid, why, action FROM contained_processes WHERE cmdline LIKE '%__serve%'")
        .all();
      assert.ok(
        served.length >= 1,
        `the resident hook answered a call: ${JSON.stringify(trace)}; resident hooks before call 1: ${found}; contained: ${JSON.stringify(contained)}`,
      );
      const compactedAt = (db.prepare('SELECT min(created_at) AS t FROM checkpoints').get() as { t: string }).t;
      assert.ok(
        served.every((l) => l.at < compactedAt),
        `only calls before the compaction were answered (checkpoint at ${compactedAt}): ${JSON.stringify(served)}`,
      );
      // After it, the call went to the ordinary hook: declined by the resident hook ("a latched
      // session"), or the resident hook was gone (containment kills it at the trip, docs/containment.md).
      assert.ok(
        trace.every((l) => l.at < compactedAt || !l.served),
        `nothing after the compaction was answered: ${JSON.stringify(trace)}`,
      );
      // Every call it answered has its write-ahead Start.
      const ids = db.prepare('SELECT id FROM attempts').pluck().all() as string[];
      for (const l of served)
        assert.ok(
          ids.some((id) => id.endsWith(l.call!)),
          `${l.call} has an attempt: ${ids.join(', ')}`,
        );
    } finally {
      db.close();
    }
  },
);

test('R: the resident hook leaves when the real Codex exits, not after its idle bound', T, async (t) => {
  const { env, seen } = await withResident([
    /* 0 */ { items: [{ type: 'bash', cmd: 'true' }], inputTokens: 200 },
    /* 1 */ { items: [{ type: 'bash', cmd: 'echo r > r.txt' }], inputTokens: 200 },
    /* 2 */ { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(() => env.cleanup());
  const r = await env.codex('write r.txt', { env: { LATCH_RESIDENT_IDLE_MS: '600000' } });
  const found = seen();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(env.file('r.txt'), 'r\n');
  const up = JSON.parse(found) as { pid: number; alive: boolean }[];
  assert.ok(
    up.some((h) => h.alive),
    `a resident hook served the run: ${found}`,
  );
  // Codex has exited: its resident hook leaves within seconds (its idle bound is 10 minutes here).
  const end = Date.now() + 8000;
  let left = residentHooks(env.latchHome).filter((h) => runs(h.pid, h.start));
  while (left.length > 0 && Date.now() < end) {
    await new Promise((res) => setTimeout(res, 100));
    left = residentHooks(env.latchHome).filter((h) => runs(h.pid, h.start));
  }
  assert.deepEqual(left, [], 'no resident hook outlives its agent');
});
