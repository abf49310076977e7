// A forged resident hook is not spared (issue 29.1, "trust no shape"), on the real pinned Codex, in a pid
// namespace of the test's own (test/helpers/pidbox.ts). While its session may still write, the agent
// starts its own script through a symbolic link, `node link.cjs __serve codex`: the command names no
// Latch file, so the classifier has nothing to refuse. The script re-points the link at Latch's own
// dist/latch.cjs, so that at the trip the process has exactly the shape of a resident hook of this
// Latch (its argv, its link resolving to the entry), and writes a tick every 20 ms. Containment spares a
// resident hook only by the identity the hook that spawned it recorded, so the forgery is killed at the
// trip: its ticks stop, and the write after the compaction is denied.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIG, codexInBox, LATCH, setupEnv } from '../helpers/e2e.js';
import { Box } from '../helpers/pidbox.js';

const linux = process.platform === 'linux';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The agent's own script: re-points the link it was started through at Latch's entry, then ticks.
const FORGERY = (link: string, ticks: string) => `const fs = require('node:fs');
fs.unlinkSync(${JSON.stringify(link)});
fs.symlinkSync(${JSON.stringify(LATCH)}, ${JSON.stringify(link)});
setInterval(() => fs.appendFileSync(${JSON.stringify(ticks)}, 'x'), 20);
`;

describe('a process in the exact shape of a resident hook, started by the real Codex', {
  skip: !linux ? 'Linux with unshare and nsenter only' : false,
  timeout: 300_000,
}, () => {
  it('is not spared at the trip: killed, and the write after the compaction is denied', async (t) => {
    const box = await Box.open();
    let env: Awaited<ReturnType<typeof setupEnv>> | undefined;
    t.after(async () => {
      await box.close();
      await env?.cleanup();
    });
    env = await setupEnv([
      {
        // While mutable: the agent's script through the link; its argv is the resident hook's.
        items: [
          { type: 'bash', cmd: 'setsid -f node link.cjs __serve codex; until [ -s ticks ]; do sleep 0.05; done' },
        ],
        inputTokens: 200,
      },
      { items: [{ type: 'bash', cmd: 'echo step > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo after > b.txt' }] },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    const link = join(env.work, 'link.cjs');
    const ticks = join(env.work, 'ticks');
    writeFileSync(join(env.base, 'forgery.cjs'), FORGERY(link, ticks));
    symlinkSync(join(env.base, 'forgery.cjs'), link);
    const r = await codexInBox(box, env, 'start a helper, then carry on');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.ok(
      env.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    // The forgery ran, and had Latch's shape at the trip.
    assert.ok(existsSync(ticks), 'the forgery never ticked');
    assert.equal(readlinkSync(link), LATCH, 'the link was not re-pointed at Latch’s entry');
    const s = env.statusJson().sessions[0] as unknown as {
      state: string;
      contained: { why: string; action: string; cmdline: string }[];
    };
    assert.equal(s.state, 'latched');
    assert.ok(
      s.contained.some((p) => /link\.cjs __serve codex/.test(p.cmdline) && /^(killed|terminated)$/.test(p.action)),
      JSON.stringify(s.contained),
    );
    const before = statSync(ticks).size;
    await sleep(300);
    assert.equal(statSync(ticks).size - before, 0, 'the forgery still ticks after the trip');
    let left = 0;
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('link.cjs') && box.holds(Number(name))) left++;
      } catch {
        /* gone */
      }
    }
    assert.equal(left, 0, 'the forgery still runs in the box');
    assert.equal(env.file('b.txt'), null, 'the write after the compaction ran');
  });
});
