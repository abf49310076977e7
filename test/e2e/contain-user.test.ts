// Containment kills only what is provably the agent's (issue 23.1), on the real pinned Codex: while
// one of the agent's calls runs, the user starts a job of their own from another shell (`setsid
// sleep`, an orphan inside the call's window). At the trip the agent's own orphan (which carries
// Codex's CODEX_THREAD_ID, the session's mark) is killed; the user's job survives, and `latch
// status` lists it as not provably the agent's. Before, every orphan of the same user started inside
// any tool-call window was killed ("a `setsid sleep 600` started from a separate shell was killed").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroup2Mount, cgroupOf, mayMakeRoom } from '../../src/contain/cgroup.js';
import { BIG, setupEnv } from '../helpers/e2e.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('at the trip the agent’s orphan is killed; the user’s job started during its call survives and is listed', {
  timeout: 240_000,
  skip: process.platform !== 'linux' && 'Linux /proc only',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'latch-contain-user-'));
  const pidOf = (name: string) => Number(readFileSync(join(dir, name), 'utf8').trim());
  const env = await setupEnv([
    {
      items: [
        {
          type: 'bash',
          // The agent's job leaves the call's process group (setsid), then the call waits while the
          // user starts theirs.
          cmd: `setsid -f sh -c 'echo $$ > ${dir}/agent-job; exec sleep 300'; until [ -e ${dir}/user-job ]; do sleep 0.1; done; sleep 1`,
        },
      ],
      inputTokens: 200,
    },
    { items: [{ type: 'bash', cmd: 'echo step > a.txt' }], inputTokens: BIG },
    { items: [{ type: 'bash', cmd: 'echo after > b.txt' }] },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  t.after(async () => {
    for (const name of ['agent-job', 'user-job'])
      if (existsSync(join(dir, name)) && alive(pidOf(name))) process.kill(pidOf(name), 'SIGKILL');
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const run = env.codex('start a job, then carry on');
  // The user, in another terminal, while the agent's call runs: an orphan of their own.
  for (let i = 0; i < 600 && !existsSync(join(dir, 'agent-job')); i++) await sleep(50);
  assert.ok(existsSync(join(dir, 'agent-job')), 'the agent’s call started its job');
  const u = spawnSync(
    'setsid',
    ['-f', 'sh', '-c', `echo $$ > ${dir}/user-job.tmp; mv ${dir}/user-job.tmp ${dir}/user-job; exec sleep 600`],
    {
      stdio: 'ignore',
    },
  );
  assert.equal(u.status, 0);
  const r = await run;
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  assert.ok(
    env.fake.requests.some((q) => q.isCompaction),
    'Codex compacted',
  );
  const s = env.statusJson().sessions[0] as unknown as {
    state: string;
    contained: { pid: number; why: string; action: string; cmdline: string }[];
  };
  assert.equal(s.state, 'latched');
  const agentJob = pidOf('agent-job');
  const userJob = pidOf('user-job');
  for (let i = 0; i < 40 && alive(agentJob); i++) await sleep(50);
  assert.equal(alive(agentJob), false, 'the agent’s orphan was killed');
  assert.ok(alive(userJob), 'the user’s job survived');
  const byPid = new Map(s.contained.map((p) => [p.pid, p]));
  assert.match(byPid.get(agentJob)?.action ?? '', /^(terminated|killed)$/, JSON.stringify(s.contained));
  // Where Latch could put Codex into a cgroup of its own (its first hook: the cgroup is this user's),
  // the orphan is known by its cgroup, which needs no mark; else by its mark.
  const mount = cgroup2Mount();
  const own = mount !== null && mayMakeRoom(mount, cgroupOf('self') ?? '/nonexistent') === null;
  assert.equal(byPid.get(agentJob)?.why, own ? 'agent_cgroup' : 'orphan_of_attempt');
  assert.equal(byPid.get(userJob)?.action, 'listed', JSON.stringify(s.contained));
  assert.equal(byPid.get(userJob)?.why, 'orphan_unmarked');
  // The human reads which is which.
  const text = env.latch(['status']).stdout;
  assert.match(text, /not provably the agent's, not signalled[\s\S]*sleep 600/);
  // And `latch verify` shows it before it asks (here without a terminal: it shows, then stops).
  const v = env.latch(['verify']);
  assert.match(
    v.stdout,
    new RegExp(
      `still running from the agent's calls[\\s\\S]*pid ${userJob}: listed, not signalled \\(orphan_unmarked\\): [^\\n]*sleep 600`,
    ),
  );
  assert.ok(alive(userJob), 'verify does not signal it either');
});
