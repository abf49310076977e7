// A call that ran without Latch's check latches (issue 29.2), on the real pinned Codex. While its
// session may still write, the agent leaves a job running that SIGKILLs every PreToolUse hook of this
// Latch home as it appears (Codex 0.171.0 then runs the call: docs/hook-failures.md). The next write's
// PreToolUse is killed and the write runs, but its PostToolUse finds no Start on record: the session
// is latched (`unchecked_call`) and containment kills the job; the write after that is checked again
// and denied. Without the check, the session stays mutable and the killer lets every write through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setupEnv } from '../helpers/e2e.js';
import { hookKiller } from '../helpers/hook-killer.js';
import { isAlive } from '../../src/ledger/ledger.js';

const alive = (pid: number) => isAlive({ pid, start: 'unknown' });

test('a write whose PreToolUse hook was killed latches the session; the killer is contained and the next write is denied', {
  timeout: 240_000,
  skip: process.platform !== 'linux' && 'Linux /proc only',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'latch-unchecked-'));
  const env = await setupEnv([
    {
      // While mutable: the agent leaves the killer running (its command names no Latch file).
      items: [
        {
          type: 'bash',
          cmd: `setsid -f python3 ${dir}/killer.py; until [ -e ${dir}/ready ]; do sleep 0.05; done`,
        },
      ],
    },
    { items: [{ type: 'bash', cmd: 'echo unchecked > w.txt' }] },
    { items: [{ type: 'bash', cmd: 'echo after > x.txt' }] },
    { items: [{ type: 'message', text: 'done' }] },
  ]);
  writeFileSync(join(dir, 'killer.py'), hookKiller(env.latchHome, dir, 'PreToolUse'));
  t.after(async () => {
    const pidFile = join(dir, 'killer.pid');
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8'));
      // Ours: its command line names this test's own script.
      if (alive(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${dir}/killer.py`))
        process.kill(pid, 'SIGKILL');
    }
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const r = await env.codex('start a helper, then write twice');
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  assert.ok(existsSync(join(dir, 'kills')), 'the killer killed no hook');
  // Codex ran the write whose PreToolUse was killed (it fails open) ...
  assert.equal(env.file('w.txt'), 'unchecked\n', 'the unchecked write did not run: Codex no longer fails open here?');
  // ... and its PostToolUse found no Start: latched, the killer contained, the next write denied.
  const s = env.statusJson().sessions[0]!;
  assert.equal(s.state, 'latched', JSON.stringify(s));
  assert.match(s.reason ?? '', /^unchecked_call: a call ran without Latch's check/);
  const killerPid = Number(readFileSync(join(dir, 'killer.pid'), 'utf8'));
  assert.equal(alive(killerPid), false, 'the killer survived the latch');
  assert.equal(env.file('x.txt'), null, 'the write after the latch ran');
  assert.ok(
    env.modelSaw().some((text) => /latched/i.test(text)),
    'the model was not told the session is latched',
  );
});
