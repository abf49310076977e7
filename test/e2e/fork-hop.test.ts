// A job that outruns a /proc scan, against the real pinned Codex (issue 29.3). While the session may
// still write, the agent starts a job that forks its successor and exits, for ever, with the
// session's mark removed (`env -u CODEX_THREAD_ID … setsid`), each hop appending a byte to a file. At
// the trip its processes are orphans without the mark, which the scan can only list. Codex was put
// into a cgroup of Latch's own at its first hook, and every hop was born there: the trip freezes the
// group and kills the job (`agent_cgroup`). With LATCH_CGROUP=off (the control) the job runs on.
// Codex and everything it starts run in a pid namespace of the test's own (test/helpers/pidbox.ts),
// so a job that survives ends with the test, never on the machine.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cgroup2Mount, cgroupOf, mayMakeRoom } from '../../src/contain/cgroup.js';
import { BIG, codexInBox, setupEnv } from '../helpers/e2e.js';
import { Box } from '../helpers/pidbox.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const linux = process.platform === 'linux' && existsSync('/usr/bin/unshare') && existsSync('/usr/bin/nsenter');
const mount = linux ? cgroup2Mount() : null;
const ownCgroup = mount !== null && mayMakeRoom(mount, cgroupOf('self') ?? '/nonexistent') === null;

const HOPPER = (file: string) =>
  `perl -e '$SIG{TERM}="IGNORE"; open(my $f, ">>", $ARGV[0]) or die; while (1) { my $p = fork(); exit 0 if $p; exit 1 unless defined $p; syswrite($f, "x"); }' ${file} fork-hop-job`;

interface Outcome {
  state: string;
  contained: { why: string; action: string; cmdline: string }[];
  /** Bytes the job wrote in the 600 ms after Codex exited. */
  grewAfter: number;
  /** Processes of the job still running in the box. */
  left: number;
}

async function run(cgroup: 'on' | 'off'): Promise<Outcome> {
  const box = await Box.open();
  let env: Awaited<ReturnType<typeof setupEnv>> | undefined;
  try {
    env = await setupEnv([
      {
        // While mutable: the job, without the session's mark. The call ends at once; the job hops on.
        items: [
          {
            type: 'bash',
            cmd: `env -u CODEX_THREAD_ID -u CODEX_SESSION_ID setsid ${HOPPER('hops')} > /dev/null 2>&1 < /dev/null & sleep 1`,
          },
        ],
        inputTokens: 200,
      },
      { items: [{ type: 'bash', cmd: 'echo step > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo after > b.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    // `codex exec` in the box: a launcher script, as runCodex runs a non-.js codexBin itself.
    const r = await codexInBox(box, env, 'start a job, then carry on', { LATCH_CGROUP: cgroup });
    assert.equal(r.code, 0, `${r.stderr.slice(-2000)}`);
    assert.ok(
      env.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    const hops = join(env.work, 'hops');
    assert.ok(existsSync(hops) && statSync(hops).size > 0, 'the job never hopped');
    const before = statSync(hops).size;
    await sleep(600);
    const grewAfter = statSync(hops).size - before;
    let left = 0;
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('fork-hop-job') && box.holds(Number(name))) left++;
      } catch {
        /* gone */
      }
    }
    const s = env.statusJson().sessions[0] as unknown as Outcome;
    assert.equal(env.file('b.txt'), null, 'the write after the compaction ran');
    return { state: s.state, contained: s.contained, grewAfter, left };
  } finally {
    await box.close();
    await env?.cleanup();
  }
}

describe('a job that forks its successor and exits, for ever, started by the real Codex', {
  skip: !linux
    ? 'Linux with unshare and nsenter only'
    : !ownCgroup
      ? 'this cgroup is not this user’s to divide'
      : false,
  timeout: 400_000,
}, () => {
  it('is contained at the trip: its hops were born in the agent’s cgroup', async () => {
    const o = await run('on');
    assert.equal(o.state, 'latched');
    assert.ok(
      o.contained.some((p) => p.why === 'agent_cgroup' && /^(killed|terminated)$/.test(p.action)),
      JSON.stringify(o.contained),
    );
    assert.equal(o.left, 0, `${o.left} of its processes still run`);
    assert.equal(o.grewAfter, 0, `it wrote ${o.grewAfter} bytes after the trip`);
  });

  it('without the cgroup (LATCH_CGROUP=off, the control) it runs on: its orphans carry no mark', async () => {
    const o = await run('off');
    assert.equal(o.state, 'latched');
    assert.ok(o.left > 0 || o.grewAfter > 0, 'the control contained the job: this test shows nothing');
  });
});
