// The out-of-band look (issue 29.2): probeSession counts what a session's transcript shows without any
// hook, and the workspace watcher's sentry runs it when a watched transcript grows. The acceptance test
// with the real Codex and a job that kills every hook is test/e2e/sentry.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runCodexHook } from '../../src/hook.js';
import { handleAnnounced, probeSession } from '../../src/guard/guard.js';
import { announce } from '../../src/session/announce.js';
import { codex } from '../../src/agents/codex/index.js';
import { recordedSessionAgent, recordSessionAgent } from '../../src/contain/index.js';
import { procStat } from '../../src/base/proc.js';
import { isoTime } from '../../src/base/clock.js';
import { openStore, type Db } from '../../src/store/store.js';
import {
  appendCompaction,
  appendModelTurn,
  payload,
  sandbox,
  stopLatchProcesses,
  type Sandbox,
} from '../helpers/workspace.js';

const linux = process.platform === 'linux';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A live process of the test's own standing in for the agent: its identity is what a hook records. */
function stand_in(): { child: ChildProcess; agent: { pid: number; start_ticks: string; exe: null; cmdline: string } } {
  const child = spawn('sleep', ['120'], { stdio: 'ignore' });
  const start = procStat(child.pid!)?.start;
  assert.ok(start, 'no start time for the stand-in');
  return { child, agent: { pid: child.pid!, start_ticks: start, exe: null, cmdline: 'sleep 120' } };
}

async function started(sb: Sandbox): Promise<void> {
  const r = await runCodexHook(JSON.stringify(payload('session-start-startup', sb)), 'SessionStart', sb.env);
  assert.equal(r.exitCode, 0, r.stderr);
}

function state(sb: Sandbox, id = 'S'): { state: string; reason: string | null } | undefined {
  const db = openStore(sb.home, { create: false, readonly: true });
  try {
    return db.prepare('SELECT state, state_reason AS reason FROM sessions WHERE session_id = ?').get(id) as
      | { state: string; reason: string | null }
      | undefined;
  } finally {
    db.close();
  }
}

function withDb<T>(sb: Sandbox, fn: (db: Db) => T): T {
  const db = openStore(sb.home, { create: false });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const ctxOf = (sb: Sandbox) => ({
  home: sb.home,
  openDb: () => openStore(sb.home, { create: false }),
  now: isoTime,
  env: sb.env,
  agent: codex,
});

describe('probeSession: the out-of-band look', { skip: !linux && 'Linux /proc only' }, () => {
  const saved = process.env.LATCH_CONTAIN;
  // Nothing the containment finds is signalled here: it is recorded, and the record is what is checked.
  before(() => void (process.env.LATCH_CONTAIN = 'list'));
  after(() => (saved === undefined ? delete process.env.LATCH_CONTAIN : (process.env.LATCH_CONTAIN = saved)));

  test('counts a compaction no hook saw: latched, checkpointed, contained around the recorded agent', async (t) => {
    const sb = sandbox();
    const { child, agent } = stand_in();
    t.after(() => {
      child.kill('SIGKILL');
      sb.cleanup();
    });
    await started(sb);
    withDb(sb, (db) => assert.equal(recordSessionAgent(db, 'S', agent, isoTime()), null));
    // Nothing new: the look changes nothing.
    appendModelTurn(sb.transcript);
    assert.equal((await probeSession(ctxOf(sb), 'S')).state, 'mutable');
    assert.equal(state(sb)?.state, 'mutable');
    appendCompaction(sb.transcript);
    const d = await probeSession(ctxOf(sb), 'S');
    assert.equal(d.state, 'latched');
    assert.equal(state(sb)?.state, 'latched');
    withDb(sb, (db) => {
      const c = db.prepare('SELECT observed_via, checkpoint_id FROM compactions WHERE session_id = ?').all('S') as {
        observed_via: string;
        checkpoint_id: string | null;
      }[];
      assert.equal(c.length, 1);
      assert.match(c[0]!.observed_via, /transcript/);
      assert.ok(c[0]!.checkpoint_id, 'no checkpoint');
      const k = db
        .prepare('SELECT agent_pid, agent_start, notes_json FROM containments WHERE session_id = ?')
        .get('S') as {
        agent_pid: number | null;
        agent_start: string | null;
        notes_json: string;
      };
      assert.equal(k.agent_pid, agent.pid, k.notes_json);
      assert.equal(k.agent_start, agent.start_ticks);
    });
    // Counted once: a second look, and the session's next hook, count nothing more.
    await probeSession(ctxOf(sb), 'S');
    withDb(sb, (db) => assert.equal((db.prepare('SELECT COUNT(*) AS n FROM compactions').get() as { n: number }).n, 1));
  });

  test('the recorded agent is gone: the session still latches, nothing is signalled, the record says why', async (t) => {
    const sb = sandbox();
    const { child, agent } = stand_in();
    t.after(() => sb.cleanup());
    await started(sb);
    withDb(sb, (db) => recordSessionAgent(db, 'S', agent, isoTime()));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    appendCompaction(sb.transcript);
    assert.equal((await probeSession(ctxOf(sb), 'S')).state, 'latched');
    withDb(sb, (db) => {
      const k = db.prepare('SELECT agent_pid, notes_json FROM containments').get() as {
        agent_pid: number | null;
        notes_json: string;
      };
      assert.equal(k.agent_pid, null);
    });
  });

  test('a compaction hook whose announcement a look counted meanwhile does not count it again', async (t) => {
    const sb = sandbox();
    t.after(() => sb.cleanup());
    await started(sb);
    // A PreCompact hook announces (its first act) ...
    const own = announce(sb.home, 'S', 'pre_compact', { trigger: 'auto', turnId: null }, Date.now());
    assert.ok('id' in own, JSON.stringify(own));
    // ... the watcher's look counts the announcement and removes its file while the hook takes its
    // evidence ...
    await probeSession(ctxOf(sb), 'S');
    // ... and the hook goes on: its compaction is the one already counted.
    const parsed = codex.parse(JSON.stringify(payload('pre-compact-auto', sb)));
    assert.ok(parsed.ok && parsed.event);
    await handleAnnounced(ctxOf(sb), parsed.obs, parsed.event, own.id);
    withDb(sb, (db) => {
      const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
      assert.equal(n("SELECT COUNT(*) AS n FROM compactions WHERE session_id = 'S'"), 1, 'counted twice');
      assert.equal(n("SELECT COUNT(*) AS n FROM checkpoints WHERE session_id = 'S'"), 1);
    });
  });

  test('a SessionStart run under a stand-in agent of the agent’s own does not take over a running agent’s record', async (t) => {
    // A job of the agent (while its session may write) runs Latch's hook itself, with the session's
    // payload, under an executable it named `codex`, which then exits: were that recorded, the watcher
    // would watch an agent that no longer runs, and stop looking at the session.
    const sb = sandbox();
    const { child, agent } = stand_in();
    t.after(() => {
      child.kill('SIGKILL');
      sb.cleanup();
    });
    await started(sb);
    withDb(sb, (db) => recordSessionAgent(db, 'S', agent, isoTime()));
    const fake = join(sb.base, 'codex');
    copyFileSync('/bin/sh', fake);
    chmodSync(fake, 0o755);
    const input = join(sb.base, 'start.json');
    writeFileSync(input, JSON.stringify(payload('session-start-resume', sb)));
    const r = spawnSync(
      fake,
      ['-c', `"$0" "$1" hook codex --event SessionStart < "$2"`, process.execPath, resolve('dist', 'latch.cjs'), input],
      {
        env: sb.env,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    withDb(sb, (db) => assert.equal(recordedSessionAgent(db, 'S')?.pid, agent.pid, 'the stand-in took the record'));
  });

  test('a session the store never saw is not created by a look', async (t) => {
    const sb = sandbox();
    t.after(() => sb.cleanup());
    const d = await probeSession(ctxOf(sb), 'never-seen');
    assert.equal(d.state, null);
    assert.equal(state(sb, 'never-seen'), undefined);
  });

  test('the session agent record: one row a session, replaced when another agent process resumes it; its group made once', (t) => {
    const sb = sandbox();
    t.after(() => sb.cleanup());
    withDb(sb, (db) => {
      const a = { pid: 100, start_ticks: '5', exe: '/usr/bin/node', cmdline: 'node codex' };
      assert.equal(recordSessionAgent(db, 'S', a, isoTime()), null);
      assert.deepEqual(recordedSessionAgent(db, 'S'), { ...a, cgroup: null });
      // A group a later hook could make is filled in.
      recordSessionAgent(db, 'S', a, isoTime(), '/sys/fs/cgroup/x/latch-100-5');
      assert.equal(recordedSessionAgent(db, 'S')?.cgroup, '/sys/fs/cgroup/x/latch-100-5');
      const b = { ...a, pid: 200, start_ticks: '9' };
      recordSessionAgent(db, 'S', b, isoTime(), '/sys/fs/cgroup/x/latch-200-9');
      assert.deepEqual(recordedSessionAgent(db, 'S'), { ...b, cgroup: '/sys/fs/cgroup/x/latch-200-9' });
      // The same agent process's group is never replaced, by another group (a decoy) or by none.
      recordSessionAgent(db, 'S', b, isoTime(), '/sys/fs/cgroup/x/decoy/latch-200-9');
      recordSessionAgent(db, 'S', b, isoTime(), null);
      assert.equal(recordedSessionAgent(db, 'S')?.cgroup, '/sys/fs/cgroup/x/latch-200-9');
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM session_agents').get() as { n: number }).n, 1);
    });
  });
});

describe('the watcher sentry (a real `latch __watch` process)', { skip: !linux && 'Linux /proc only' }, () => {
  const CLI = resolve('dist', 'latch.cjs');

  async function watcher(sb: Sandbox, extra: NodeJS.ProcessEnv): Promise<ChildProcess> {
    // The one the SessionStart hook started (its baseline) goes: this test runs its own.
    stopLatchProcesses(sb.home, sb.base);
    const w = spawn(process.execPath, [CLI, '__watch', sb.work], {
      env: { ...sb.env, LATCH_CONTAIN: 'list', LATCH_WATCH_IDLE_MS: '2000', ...extra },
      stdio: 'ignore',
    });
    // Ready: its row says so.
    for (let i = 0; i < 200; i++) {
      const ready = withDb(sb, (db) => db.prepare("SELECT 1 FROM watchers WHERE state = 'ready'").get());
      if (ready) return w;
      await sleep(25);
    }
    w.kill('SIGKILL');
    throw new Error('the watcher never got ready');
  }

  async function until(sb: Sandbox, want: string, ms: number): Promise<string | undefined> {
    const end = Date.now() + ms;
    for (;;) {
      const s = state(sb)?.state;
      if (s === want || Date.now() > end) return s;
      await sleep(25);
    }
  }

  test('a compaction appended to a watched transcript latches the session with no hook at all', async (t) => {
    const sb = sandbox();
    const { child, agent } = stand_in();
    await started(sb);
    withDb(sb, (db) => recordSessionAgent(db, 'S', agent, isoTime()));
    const w = await watcher(sb, {});
    t.after(() => {
      w.kill('SIGKILL');
      child.kill('SIGKILL');
      sb.cleanup();
    });
    // Past its idle time (2 s without a sync) it stays: the session's agent runs.
    await sleep(3000);
    assert.equal(w.exitCode, null, 'the watcher left while the agent ran');
    appendCompaction(sb.transcript);
    assert.equal(await until(sb, 'latched', 15_000), 'latched');
  });

  test('control: LATCH_SENTRY=off, or an agent that no longer runs: nothing latches', async (t) => {
    for (const c of ['off', 'gone'] as const) {
      const sb = sandbox();
      const { child, agent } = stand_in();
      await started(sb);
      withDb(sb, (db) => recordSessionAgent(db, 'S', agent, isoTime()));
      if (c === 'gone') {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
      const w = await watcher(sb, c === 'off' ? { LATCH_SENTRY: 'off' } : {});
      t.after(() => {
        w.kill('SIGKILL');
        child.kill('SIGKILL');
        sb.cleanup();
      });
      appendCompaction(sb.transcript);
      // Past the settle time (2 s), several housekeeping turns (every 500 ms with this idle time) and
      // change events: a working sentry latches within that (the test above).
      assert.equal(await until(sb, 'latched', 5000), 'mutable', c);
    }
  });
});
