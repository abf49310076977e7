// The ledger under real processes: many hook processes at once on one workspace, and hooks killed
// with SIGKILL at random points of Start, Close and recovery. Runs dist/latch.cjs (`npm run build`).
//
// LATCH_TEST_SEED replays the random kill delays of a failing run (the seed is printed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore, type Db } from '../../src/store/store.js';
import { CLOSE_REASON } from '../../src/ledger/ledger.js';
import { payload, rolloutLine, sandbox, type Sandbox } from '../helpers/workspace.js';
import {
  assertFreshBuild,
  crashClose,
  deadPid,
  hookInProcess,
  hookProcess,
  ledgerProblems,
  orphans,
  prng,
  readLedger,
  sleep,
  type ProcRun,
} from '../helpers/ledger.js';

const BUSY = { LATCH_BUSY_TIMEOUT_MS: '30000' };

function envOf(sb: Sandbox): NodeJS.ProcessEnv {
  return { ...sb.env, ...BUSY };
}

const pre = (sb: Sandbox, s: string, transcript: string, callId: string, command: string) =>
  payload('pre-tool-use-bash', sb, {
    session_id: s,
    transcript_path: transcript,
    tool_input: { command },
    tool_use_id: callId,
  });
const post = (sb: Sandbox, s: string, transcript: string, callId: string, command: string) =>
  payload('post-tool-use-bash', sb, {
    session_id: s,
    transcript_path: transcript,
    tool_input: { command },
    tool_use_id: callId,
  });
const stop = (sb: Sandbox, s: string, transcript: string) =>
  payload('stop', sb, { session_id: s, transcript_path: transcript });

function shuffle<T>(xs: T[], rand: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

const seed = Number(process.env.LATCH_TEST_SEED ?? Date.now() % 1_000_000_007);

test('64 concurrent hook processes, two sessions: no lost or duplicate attempt, every write recorded once', async (t) => {
  assertFreshBuild();
  const rand = prng(seed);
  const sb = sandbox();
  t.after(sb.cleanup);
  const env = envOf(sb);
  const tT = join(sb.base, 'rollout-T.jsonl');
  writeFileSync(tT, rolloutLine('session_meta', { id: 'T', session_id: 'T', cwd: sb.work, cli_version: '0.169.0' }));
  const tr = { S: sb.transcript, T: tT } as const;
  const calls = Array.from({ length: 64 }, (_, i) => {
    const s = i % 2 === 0 ? 'S' : 'T';
    const file = i % 3 === 0 ? null : `out/w${i}.txt`;
    return { i, s, callId: `c${i}`, file, command: file ? `echo ${i} > ${file}` : 'ls -la' } as const;
  });
  mkdirSync(join(sb.work, 'out'));
  const a = calls.slice(0, 32);
  const b = calls.slice(32);
  const runs: { what: string; r: ProcRun }[] = [];
  const wave = async (name: string, jobs: { what: string; p: Record<string, unknown> }[]) => {
    const t0 = performance.now();
    const out = await Promise.all(
      shuffle(jobs, rand).map(async (j) => ({ what: j.what, r: await hookProcess(env, j.p) })),
    );
    runs.push(...out);
    return {
      name,
      n: jobs.length,
      ms: Math.round(performance.now() - t0),
      max: Math.round(Math.max(...out.map((o) => o.r.ms))),
    };
  };
  const writeFiles = (cs: typeof calls) => {
    for (const c of cs) if (c.file) writeFileSync(join(sb.work, c.file), `written by ${c.callId}\n`);
  };
  const preJob = (c: (typeof calls)[number]) => ({
    what: `Pre ${c.s}/${c.callId}`,
    p: pre(sb, c.s, tr[c.s], c.callId, c.command),
  });
  const postJob = (c: (typeof calls)[number]) => ({
    what: `Post ${c.s}/${c.callId}`,
    p: post(sb, c.s, tr[c.s], c.callId, c.command),
  });

  const t0 = performance.now();
  const w1 = await wave('Pre x32 (first sight of both sessions)', a.map(preJob));
  writeFiles(a);
  const w2 = await wave('Post x32 + Pre x32, interleaved', [...a.map(postJob), ...b.map(preJob)]);
  writeFiles(b);
  const w3 = await wave('Post x32', b.map(postJob));
  const w4 = await wave('Stop x2', [
    { what: 'Stop S', p: stop(sb, 'S', tr.S) },
    { what: 'Stop T', p: stop(sb, 'T', tr.T) },
  ]);
  const wall = Math.round(performance.now() - t0);
  console.log(
    `# concurrency: ${[w1, w2, w3, w4].map((w) => `${w.name}: ${w.ms} ms (slowest hook ${w.max} ms)`).join('; ')}; total ${wall} ms, seed ${seed}`,
  );

  for (const { what, r } of runs) {
    assert.equal(r.exitCode, 0, `${what} exited ${r.exitCode}: ${r.stderr}`);
    assert.equal(r.denied, false, `${what} denied: ${r.reason}`);
    assert.equal(r.stdout, null, `${what} replied ${r.stdout}`);
  }
  const l = readLedger(sb.home);
  assert.deepEqual(ledgerProblems(l), []);
  assert.equal(l.attempts.length, calls.length, 'one attempt per call: none lost, none duplicated');
  for (const c of calls) {
    const at = l.attempt(`${c.s}/${c.callId}`);
    assert.ok(at, `lost Start of ${c.s}/${c.callId}`);
    assert.equal(at.state, 'closed', `${at.id} is ${at.state} (${at.end_reason})`);
    // A writing call's Close observes (the hook itself, or the workspace watcher once it is ready).
    if (c.file)
      assert.ok(
        at.end_reason === CLOSE_REASON.hook || at.end_reason === CLOSE_REASON.watcher,
        `${at.id}: ${at.end_reason}`,
      );
    else assert.equal(at.end_reason, CLOSE_REASON.readOnly);
    if (c.file) assert.equal(l.recorded(c.file), 1, `${c.file} has ${l.recorded(c.file)} change records`);
  }
  assert.equal(l.changes.length, calls.filter((c) => c.file).length, 'no change recorded twice');
});

// ---------------------------------------------------------------------------------------------
// SIGKILL at random points.

type Kind = 'start' | 'close' | 'recover';

interface Trial {
  kind: Kind;
  outcome: string;
}

const SESSION = 'S';

/** A tiny workspace that has been seen (SessionStart took the baseline), as Codex always does first. */
async function tinyWorkspace(): Promise<{ sb: Sandbox; env: NodeJS.ProcessEnv }> {
  const sb = sandbox({ git: false });
  writeFileSync(join(sb.work, 'base.txt'), 'base\n');
  const env = envOf(sb);
  const r = await hookInProcess(env, payload('session-start-startup', sb));
  assert.equal(r.exitCode, 0);
  return { sb, env };
}

/** After recovery (a tracked PreToolUse) and Stop: nothing live, nothing orphaned, rows consistent. */
async function recoverAndStop(sb: Sandbox, env: NodeJS.ProcessEnv, callId: string): Promise<void> {
  const r = await hookInProcess(env, pre(sb, SESSION, sb.transcript, callId, 'ls'));
  assert.equal(r.denied, false, `recovery PreToolUse denied: ${r.reason}`);
  assert.equal(orphans(readLedger(sb.home)).length, 0, 'an orphaned closing survived the recovery barrier');
  await hookInProcess(env, stop(sb, SESSION, sb.transcript));
}

function assertSettled(sb: Sandbox, ctx: string): ReturnType<typeof readLedger> {
  const l = readLedger(sb.home);
  assert.deepEqual(ledgerProblems(l), [], ctx);
  assert.deepEqual(
    orphans(l).map((a) => a.id),
    [],
    `orphaned closing ${ctx}`,
  );
  assert.deepEqual(
    l.attempts.filter((a) => a.state === 'started' || a.state === 'closing').map((a) => `${a.id}:${a.state}`),
    [],
    `live after Stop ${ctx}`,
  );
  return l;
}

/**
 * Kills `run` at a delay, or (poll) as soon as the store shows `when` true. Returns the run and
 * whether the kill was triggered by the poll.
 */
async function killed(
  env: NodeJS.ProcessEnv,
  p: Record<string, unknown>,
  home: string,
  how: { delay: number } | { poll: (db: Db) => boolean },
): Promise<ProcRun> {
  if ('delay' in how) return hookProcess(env, p, { killAfterMs: how.delay });
  const db = openStore(home, { create: false, busyTimeoutMs: 30_000 });
  try {
    let pid = 0;
    let done = false;
    const run = hookProcess(env, p, { onSpawn: (x) => (pid = x) }).finally(() => (done = true));
    const deadline = Date.now() + 5000;
    while (!done && Date.now() < deadline) {
      if (how.poll(db)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
        break;
      }
      await sleep(1);
    }
    return await run;
  } finally {
    db.close();
  }
}

const gen = (db: Db, id: string) =>
  db.prepare('SELECT state, recovery_gen FROM attempts WHERE id = ?').get(id) as
    | { state: string; recovery_gen: number }
    | undefined;

/** Kill a PreToolUse; the tool runs anyway (Codex fails open); its PostToolUse closes it. */
async function startTrial(how: { delay: number } | { poll: (db: Db) => boolean }): Promise<string> {
  const { sb, env } = await tinyWorkspace();
  try {
    const r = await killed(env, pre(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'), sb.home, how);
    const at = readLedger(sb.home).attempt('S/c1');
    const ctx = `(start trial, ${JSON.stringify(how)}, killed=${r.killed}, attempt=${at?.state})`;
    if (!r.killed) {
      assert.equal(r.exitCode, 0, ctx + r.stderr);
      assert.equal(r.denied, false, ctx + r.reason);
      assert.equal(at?.state, 'started', `a PreToolUse replied allow without its Start ${ctx}`);
    } else if (at) assert.equal(at.state, 'started', ctx);
    writeFileSync(join(sb.work, 'a.txt'), 'a\n');
    await hookInProcess(env, post(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'));
    await recoverAndStop(sb, env, 'c2');
    const l = assertSettled(sb, ctx);
    assert.equal(l.attempt('S/c1')?.state, 'closed', ctx);
    assert.equal(l.recorded('a.txt'), 1, `a.txt recorded ${l.recorded('a.txt')} times ${ctx}`);
    return !r.killed ? 'replied' : at ? 'killed after Start' : 'killed before Start';
  } finally {
    sb.cleanup();
  }
}

/** Kill a PostToolUse: recovered if it wrote `closing`, abandoned by Stop if not; the write recorded. */
async function closeTrial(how: { delay: number } | { poll: (db: Db) => boolean }): Promise<string> {
  const { sb, env } = await tinyWorkspace();
  try {
    assert.equal((await hookInProcess(env, pre(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'))).denied, false);
    writeFileSync(join(sb.work, 'a.txt'), 'a\n');
    const r = await killed(env, post(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'), sb.home, how);
    const at = readLedger(sb.home).attempt('S/c1')!;
    const ctx = `(close trial, ${JSON.stringify(how)}, killed=${r.killed}, attempt=${at.state})`;
    if (!r.killed) {
      assert.equal(r.exitCode, 0, `${ctx} ${r.stderr}`);
      assert.equal(at.state, 'closed', ctx);
    }
    if (at.state === 'closing') assert.equal(at.closer_pid, r.pid, ctx);
    // The barrier: a tracked PreToolUse finishes a dead closer's close, and records its write.
    assert.equal((await hookInProcess(env, pre(sb, SESSION, sb.transcript, 'c2', 'ls'))).denied, false, ctx);
    const mid = readLedger(sb.home);
    if (at.state !== 'started') {
      assert.equal(mid.attempt('S/c1')!.state, 'closed', ctx);
      assert.equal(mid.recorded('a.txt'), 1, `a.txt not recorded after recovery ${ctx}`);
    }
    if (at.state === 'closing') {
      assert.equal(mid.attempt('S/c1')!.recovery_gen, 1, ctx);
      assert.equal(mid.attempt('S/c1')!.end_reason, CLOSE_REASON.recovered, ctx);
    }
    await hookInProcess(env, stop(sb, SESSION, sb.transcript));
    const l = assertSettled(sb, ctx);
    assert.equal(l.attempt('S/c1')!.state, at.state === 'started' ? 'abandoned' : 'closed', ctx);
    assert.equal(l.recorded('a.txt'), 1, `a.txt recorded ${l.recorded('a.txt')} times ${ctx}`);
    return !r.killed ? 'replied' : `killed while ${at.state}`;
  } finally {
    sb.cleanup();
  }
}

/** Kill a recoverer (a PreToolUse running the barrier): the next one reclaims, one close, one record. */
async function recoverTrial(
  how: { delay: number } | { poll: (db: Db) => boolean },
  dead: number,
  files = 1,
): Promise<string> {
  const { sb, env } = await tinyWorkspace();
  try {
    assert.equal((await hookInProcess(env, pre(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'))).denied, false);
    if (files > 1) mkdirSync(join(sb.work, 'many'));
    for (let i = 1; i < files; i++) writeFileSync(join(sb.work, 'many', `m${i}.txt`), `many ${i} `.repeat(200));
    writeFileSync(join(sb.work, 'a.txt'), 'a\n');
    crashClose(sb.home, 'S/c1', dead);
    const r = await killed(env, pre(sb, SESSION, sb.transcript, 'c2', 'echo b > b.txt'), sb.home, how);
    const l1 = readLedger(sb.home);
    const a1 = l1.attempt('S/c1')!;
    const c2 = l1.attempt('S/c2');
    const ctx = `(recover trial, ${JSON.stringify(how)}, killed=${r.killed}, c1=${a1.state}/gen ${a1.recovery_gen}, c2=${c2?.state})`;
    if (!r.killed) {
      assert.equal(r.exitCode, 0, `${ctx} ${r.stderr}`);
      assert.equal(r.denied, false, ctx + r.reason);
      assert.equal(a1.state, 'closed', ctx);
      assert.equal(c2?.state, 'started', `allowed without its Start ${ctx}`);
    }
    if (c2) assert.equal(a1.state, 'closed', `a Start was admitted before the recovery finished ${ctx}`);
    if (a1.state === 'closing') {
      assert.ok(a1.recovery_gen === 0 || (a1.recovery_gen === 1 && a1.closer_pid === r.pid), ctx);
    } else assert.equal(a1.recovery_gen, 1, ctx);
    writeFileSync(join(sb.work, 'b.txt'), 'b\n'); // Codex fails open: the call ran
    await recoverAndStop(sb, env, 'c3');
    const l = assertSettled(sb, ctx);
    const a = l.attempt('S/c1')!;
    assert.equal(a.state, 'closed', ctx);
    assert.equal(a.end_reason, CLOSE_REASON.recovered, ctx);
    assert.equal(a.recovery_gen, a1.state === 'closing' ? a1.recovery_gen + 1 : a1.recovery_gen, `generation ${ctx}`);
    if (a1.state === 'closing') assert.equal(a.closer_pid, process.pid, `the next recoverer closed it ${ctx}`);
    for (const f of ['a.txt', 'b.txt']) assert.equal(l.recorded(f), 1, `${f} recorded ${l.recorded(f)} times ${ctx}`);
    assert.equal(l.changes.length, files + 1, `every write recorded exactly once ${ctx}`);
    if (c2)
      assert.equal(
        a.ended_ns !== null && BigInt(a.ended_ns) <= BigInt(c2.started_ns),
        true,
        `c2 started before c1 ended ${ctx}`,
      );
    return !r.killed
      ? 'replied'
      : a1.state === 'closing'
        ? a1.recovery_gen === 1
          ? 'killed mid-recovery (claimed)'
          : 'killed before claim'
        : 'killed after recovery';
  } finally {
    sb.cleanup();
  }
}

test('SIGKILL at random points of Start, Close and recovery: the ledger recovers, nothing that ran is lost', async () => {
  assertFreshBuild();
  const rand = prng(seed + 1);
  const dead = await deadPid();
  const perKind = Number(process.env.LATCH_KILL_TRIALS ?? 72);
  const plan: { kind: Kind; how: { delay: number } | { poll: (db: Db) => boolean }; label: string }[] = [];
  for (let i = 0; i < perKind; i++) {
    for (const kind of ['start', 'close', 'recover'] as const) {
      // Two in three: a random delay (0-80 ms: before, inside or after the store writes);
      // one in three: killed as soon as the store shows the interesting intermediate state.
      if (i % 3 !== 2) {
        const delay = Math.floor(rand() * 81);
        plan.push({ kind, how: { delay }, label: `${kind} @${delay}ms` });
      } else if (kind === 'start') {
        plan.push({ kind, how: { poll: (db) => gen(db, 'S/c1') !== undefined }, label: 'start @started' });
      } else if (kind === 'close') {
        plan.push({ kind, how: { poll: (db) => gen(db, 'S/c1')?.state === 'closing' }, label: 'close @closing' });
      } else {
        plan.push({
          kind,
          how: { poll: (db) => (gen(db, 'S/c1')?.recovery_gen ?? 0) >= 1 },
          label: 'recover @claimed',
        });
      }
    }
  }
  const t0 = performance.now();
  const results: Trial[] = [];
  for (let i = 0; i < plan.length; i += 2) {
    const batch = plan.slice(i, i + 2);
    const out = await Promise.all(
      batch.map(async (p) => {
        try {
          const outcome =
            p.kind === 'start'
              ? await startTrial(p.how)
              : p.kind === 'close'
                ? await closeTrial(p.how)
                : await recoverTrial(p.how, dead);
          return { kind: p.kind, outcome };
        } catch (err) {
          throw new Error(`trial ${p.label} failed (seed ${seed}): ${(err as Error).message}`, { cause: err });
        }
      }),
    );
    results.push(...out);
  }
  const counts = new Map<string, number>();
  for (const r of results) counts.set(`${r.kind}: ${r.outcome}`, (counts.get(`${r.kind}: ${r.outcome}`) ?? 0) + 1);
  console.log(
    `# kill trials: ${results.length} in ${Math.round(performance.now() - t0)} ms, seed ${seed}; ${[...counts]
      .sort()
      .map(([k, n]) => `${k} x${n}`)
      .join(', ')}`,
  );
  assert.ok(results.length >= 200);
  // The kills reached the intermediate states (else the trials proved little).
  assert.ok((counts.get('close: killed while closing') ?? 0) > 0, 'no Close was killed while closing');
  assert.ok((counts.get('recover: killed mid-recovery (claimed)') ?? 0) > 0, 'no recoverer was killed after its claim');
});

test('a recoverer killed after its claim is reclaimed by the next one: generation 2, one close, each write recorded once', async () => {
  assertFreshBuild();
  const dead = await deadPid();
  // Enough changed files that the recovery's observation takes a while after the claim.
  for (let attempt = 1; ; attempt++) {
    const { sb, env } = await tinyWorkspace();
    try {
      assert.equal((await hookInProcess(env, pre(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'))).denied, false);
      mkdirSync(join(sb.work, 'many'));
      for (let i = 0; i < 400 * attempt; i++)
        writeFileSync(join(sb.work, 'many', `m${i}.txt`), `many ${i} `.repeat(400));
      crashClose(sb.home, 'S/c1', dead);
      const first = await killed(env, pre(sb, SESSION, sb.transcript, 'c2', 'ls'), sb.home, {
        poll: (db) => (gen(db, 'S/c1')?.recovery_gen ?? 0) >= 1,
      });
      const l1 = readLedger(sb.home);
      const a1 = l1.attempt('S/c1')!;
      if (!(first.killed && a1.state === 'closing')) {
        assert.ok(attempt < 5, `could not kill a recoverer between its claim and its close in ${attempt} tries`);
        continue;
      }
      assert.equal(a1.recovery_gen, 1);
      assert.equal(a1.closer_pid, first.pid, 'the killed recoverer held the claim');
      assert.equal(l1.changes.length, 0, 'its observation was rolled back');
      assert.equal(l1.attempt('S/c2'), undefined, 'no Start while the recovery is pending');
      // The next tracked hook (a real process) reclaims.
      const second = await hookProcess(env, pre(sb, SESSION, sb.transcript, 'c3', 'ls'));
      assert.equal(second.exitCode, 0);
      assert.equal(second.denied, false, second.reason);
      const l2 = readLedger(sb.home);
      const a2 = l2.attempt('S/c1')!;
      assert.equal(a2.state, 'closed');
      assert.equal(a2.recovery_gen, 2);
      assert.equal(a2.closer_pid, second.pid, 'the second recoverer closed it');
      assert.equal(a2.end_reason, CLOSE_REASON.recovered);
      assert.equal(l2.changes.length, 400 * attempt, 'each write recorded exactly once');
      assert.equal(new Set(l2.changes.map((c) => c.path)).size, l2.changes.length);
      assert.equal(l2.attempt('S/c3')?.state, 'started');
      return;
    } finally {
      sb.cleanup();
    }
  }
});

test('two recoverer processes racing for one orphan: exactly one claim and one close', async () => {
  assertFreshBuild();
  const dead = await deadPid();
  const gens: number[] = [];
  for (let round = 0; round < 6; round++) {
    const { sb, env } = await tinyWorkspace();
    try {
      assert.equal((await hookInProcess(env, pre(sb, SESSION, sb.transcript, 'c1', 'echo a > a.txt'))).denied, false);
      mkdirSync(join(sb.work, 'many'));
      for (let i = 0; i < 200; i++) writeFileSync(join(sb.work, 'many', `m${i}.txt`), `many ${i}\n`);
      crashClose(sb.home, 'S/c1', dead);
      const [x, y] = await Promise.all([
        hookProcess(env, pre(sb, SESSION, sb.transcript, 'c2', 'ls')),
        hookProcess(env, pre(sb, SESSION, sb.transcript, 'c3', 'ls')),
      ]);
      for (const r of [x, y]) {
        assert.equal(r.exitCode, 0, r.stderr);
        // A recoverer that lost the claim to a live one may deny (recovery pending) — never wrongly allow.
        if (r.denied) assert.match(r.reason, /recovering an attempt/);
      }
      const l = readLedger(sb.home);
      const a = l.attempt('S/c1')!;
      assert.equal(a.state, 'closed');
      assert.equal(a.recovery_gen, 1, 'exactly one recoverer claimed it');
      assert.ok([x.pid, y.pid].includes(a.closer_pid!));
      assert.equal(l.changes.length, 200, 'each write recorded exactly once');
      for (const [r, id] of [
        [x, 'S/c2'],
        [y, 'S/c3'],
      ] as const) {
        if (!r.denied) assert.equal(l.attempt(id)?.state, 'started', `${id} allowed without its Start`);
        else assert.equal(l.attempt(id), undefined, `${id} denied but has an attempt`);
      }
      gens.push(a.recovery_gen);
    } finally {
      sb.cleanup();
    }
  }
  assert.deepEqual(gens, [1, 1, 1, 1, 1, 1]);
});
