// src/base/clock.ts: the ledger's wall clock in ns, without Node's perf_hooks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { wallNs } from '../../src/base/clock.js';

test('wallNs reads the wall clock: between two Date.now() readings, to within a millisecond, and never backwards', () => {
  let last = 0n;
  for (let i = 0; i < 2000; i++) {
    const before = BigInt(Date.now()) * 1_000_000n;
    const ns = wallNs();
    const after = BigInt(Date.now() + 1) * 1_000_000n;
    // The anchor is off by at most one loop turn of its calibration (well under a microsecond).
    assert.ok(ns >= before - 10_000n && ns <= after + 10_000n, `${ns} not in [${before}, ${after}]`);
    assert.ok(ns >= last, 'monotonic within a process');
    last = ns;
  }
});

test('wallNs agrees with performance.timeOrigin + performance.now() to within 100 µs', () => {
  for (let i = 0; i < 50; i++) {
    const perf = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    const ns = wallNs();
    const d = ns > perf ? ns - perf : perf - ns;
    assert.ok(d < 100_000n, `off by ${d} ns`);
  }
});

test('reading the clock does not load perf_hooks (what it exists to avoid)', () => {
  const script = `
    const { wallNs } = await import(${JSON.stringify(new URL('../../src/base/clock.ts', import.meta.url).href)});
    wallNs(); wallNs();
    process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m === 'NativeModule internal/perf/performance')));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), []);
});
