// src/base/clock.ts: the ledger's wall clock in ns, without Node's perf_hooks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { isoTime, wallNs } from '../../src/base/clock.js';

/** The anchor's error bound (half its widest interval) plus a margin for the readings around it. */
const TOLERANCE_NS = 10_000n + 5_000n;

test('wallNs reads the wall clock: between the Date.now() readings around it, and never backwards', () => {
  let last = 0n;
  for (let i = 0; i < 2000; i++) {
    const before = BigInt(Date.now()) * 1_000_000n;
    const ns = wallNs();
    const after = BigInt(Date.now() + 1) * 1_000_000n;
    assert.ok(ns >= before - TOLERANCE_NS && ns <= after + TOLERANCE_NS, `${ns} not in [${before}, ${after}]`);
    assert.ok(ns >= last, 'monotonic within a process');
    last = ns;
  }
});

test('wallNs lies between the performance.timeOrigin + performance.now() readings around it', () => {
  const perf = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
  for (let i = 0; i < 50; i++) {
    const p1 = perf();
    const ns = wallNs();
    const p2 = perf();
    // performance's own origin is taken once at start (µs, from gettimeofday): tens of µs apart.
    const slack = TOLERANCE_NS + 100_000n;
    assert.ok(ns >= p1 - slack && ns <= p2 + slack, `${ns} not in [${p1}, ${p2}] ± ${slack}`);
  }
});

test('anchored in fresh processes under load, the clock stays within its bound of Date.now()', async () => {
  // Six processes at once on a small machine: preemption around the edge must not widen the error.
  const script = `
    const { wallNs, wallErrorNs } = await import(${JSON.stringify(new URL('../../src/base/clock.ts', import.meta.url).href)});
    const out = [];
    for (let i = 0; i < 200; i++) {
      const before = BigInt(Date.now()) * 1000000n; const ns = wallNs(); const after = BigInt(Date.now() + 1) * 1000000n;
      out.push(before - ns > ns - after ? before - ns : ns - after);
    }
    process.stdout.write(JSON.stringify({ off: String(out.reduce((a, b) => (a > b ? a : b))), bound: String(wallErrorNs()) }));`;
  const one = () =>
    new Promise<{ code: number | null; out: string; err: string }>((done) => {
      const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
      let out = '';
      let err = '';
      c.stdout.on('data', (d: Buffer) => (out += d));
      c.stderr.on('data', (d: Buffer) => (err += d));
      c.on('close', (code) => done({ code, out, err }));
    });
  for (const r of await Promise.all(Array.from({ length: 6 }, one))) {
    assert.equal(r.code, 0, r.err);
    // Within the error the anchor states (half the interval it came from: at most 10 µs unless the
    // process was descheduled at every edge it tried, as on a loaded machine), never the fallback's.
    const { off, bound } = JSON.parse(r.out) as { off: string; bound: string };
    assert.notEqual(bound, 'null', 'an edge was seen: no fallback to performance');
    assert.ok(
      BigInt(off) <= TOLERANCE_NS + BigInt(bound),
      `outside the readings around it by ${off} ns (bound ${bound})`,
    );
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

test('a Date.now() that never moves does not hold the clock in its loop (it falls back to performance)', () => {
  const script = `
    Date.now = () => 1700000000000;
    const { wallNs } = await import(${JSON.stringify(new URL('../../src/base/clock.ts', import.meta.url).href)});
    const ns = wallNs();
    const perf = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    process.stdout.write(String(perf - ns));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr || 'timed out');
  assert.ok(BigInt(r.stdout) >= 0n && BigInt(r.stdout) < 50_000_000n, `off by ${r.stdout} ns`);
});

test('isoTime is Date#toISOString for every time a Date holds (and throws the same on an invalid one)', () => {
  const limit = 8.64e15; // the range of a Date, in ms either side of 1970
  fc.assert(
    fc.property(fc.integer({ min: -limit, max: limit }), (ms) => {
      assert.equal(isoTime(ms), new Date(ms).toISOString());
    }),
    { numRuns: 20_000 },
  );
  // The four-digit years, where the string is built without toISOString, and their edges.
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(0, 0, 1) - 1000, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) + 1000 }),
      (ms) => {
        assert.equal(isoTime(ms), new Date(ms).toISOString());
      },
    ),
    { numRuns: 20_000 },
  );
  for (const ms of [0, -1, 1, Date.UTC(-1, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), limit, -limit])
    assert.equal(isoTime(ms), new Date(ms).toISOString());
  assert.throws(() => isoTime(Number.NaN), RangeError);
  assert.throws(() => isoTime(limit + 1), RangeError);
  const now = Date.now();
  assert.equal(isoTime(now), new Date(now).toISOString());
});

test('isoTime does not load the time zone (what it exists to avoid)', (t) => {
  const probe = spawnSync('strace', ['-f', '-e', 'trace=openat', process.execPath, '-e', 'new Date(0).toISOString()'], {
    encoding: 'utf8',
  });
  if (probe.error) {
    t.skip('strace is not installed: the time zone load cannot be observed');
    return;
  }
  assert.match(probe.stderr, /localtime/, 'premise: toISOString() opens the time zone file');
  const r = spawnSync(
    'strace',
    [
      '-f',
      '-e',
      'trace=openat',
      process.execPath,
      '--import',
      'tsx',
      '-e',
      `import('${new URL('../../src/base/clock.ts', import.meta.url).pathname}').then((m) => m.isoTime())`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /localtime/);
});
