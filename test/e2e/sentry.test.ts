// A compaction is seen even when every hook is killed (issue 29.2), on the real pinned Codex. While its
// session may still write, the agent leaves a job running that SIGKILLs every hook of this Latch home as
// it appears: PreToolUse (Codex 0.171.0 then runs the call: docs/hook-failures.md), PostToolUse and the
// compaction hooks alike, so no hook ever completes again. Then the context is compacted and, eight
// seconds later (the model "thinks"), the agent writes. The workspace watcher's sentry sees the
// compaction in the rollout, trips the session and contains the job from the agent process its hooks
// recorded; the write's hook then runs and denies it. With LATCH_SENTRY=off (the control) nothing
// counts the compaction: the session stays mutable and the write runs.
//
// Codex and everything it starts run in a pid namespace of the test's own (test/helpers/pidbox.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIG, codexInBox, setupEnv } from '../helpers/e2e.js';
import { hookKiller } from '../helpers/hook-killer.js';
import { Box } from '../helpers/pidbox.js';

const linux = process.platform === 'linux';

interface Outcome {
  state: string;
  reason: string | null;
  contained: { why: string; action: string; cmdline: string }[];
  kills: number;
  after: string | null;
  killerLeft: boolean;
}

async function run(sentry: 'on' | 'off'): Promise<Outcome> {
  const box = await Box.open();
  let env: Awaited<ReturnType<typeof setupEnv>> | undefined;
  try {
    env = await setupEnv([
      {
        // While mutable: the killer, left running (its command names no Latch file).
        items: [{ type: 'bash', cmd: 'setsid -f python3 killer.py; until [ -e ready ]; do sleep 0.05; done' }],
        inputTokens: 200,
      },
      // Every hook is killed from here on. This answer's usage triggers the compaction.
      { items: [{ type: 'bash', cmd: 'echo before > a.txt' }], inputTokens: BIG },
      // After the compaction the model takes its time, as models do, then writes.
      { items: [{ type: 'bash', cmd: 'echo after > b.txt' }], delayMs: 8000 },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    writeFileSync(join(env.work, 'killer.py'), hookKiller(env.latchHome, env.work, '--event'));
    const r = await codexInBox(box, env, 'start a helper, then carry on', { LATCH_SENTRY: sentry });
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.ok(
      env.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    const kills = existsSync(join(env.work, 'kills')) ? Number(readFileSync(join(env.work, 'kills'), 'utf8')) : 0;
    let killerLeft = false;
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('killer.py') && box.holds(Number(name)))
          killerLeft = true;
      } catch {
        /* gone */
      }
    }
    const s = env.statusJson().sessions[0] as unknown as Outcome;
    return { state: s.state, reason: s.reason, contained: s.contained, kills, after: env.file('b.txt'), killerLeft };
  } finally {
    await box.close();
    await env?.cleanup();
  }
}

describe('a compaction while a job kills every hook, on the real Codex', {
  skip: !linux ? 'Linux with unshare and nsenter only' : false,
  timeout: 400_000,
}, () => {
  it('the watcher trips the session and contains the job; the write after the compaction is denied', async (t) => {
    const o = await run('on');
    t.diagnostic(JSON.stringify({ ...o, contained: o.contained.map((p) => `${p.why} ${p.action} ${p.cmdline}`) }));
    assert.ok(o.kills > 0, 'the killer killed no hook');
    assert.equal(o.state, 'latched', JSON.stringify(o));
    assert.match(o.reason ?? '', /compact/i);
    assert.ok(
      o.contained.some((p) => /killer\.py/.test(p.cmdline) && /^(killed|terminated)$/.test(p.action)),
      JSON.stringify(o.contained),
    );
    assert.equal(o.killerLeft, false, 'the killer survived the trip');
    assert.equal(o.after, null, 'the write after the compaction ran');
  });

  it('control: without the sentry, nothing counts the compaction and the write runs', async () => {
    const o = await run('off');
    assert.ok(o.kills > 0, 'the killer killed no hook');
    assert.equal(o.state, 'mutable', JSON.stringify(o));
    assert.equal(o.after, 'after\n');
  });
});
