// The wall clock with sub-millisecond precision, for comparison with file ctimes (the ledger's
// windows, containment's process start times).
//
// `performance.timeOrigin + performance.now()` gives the same, but the first touch of the
// `performance` global loads Node's perf_hooks internals: ~2 ms of a hook that lives ~50 ms. Here the
// monotonic clock is anchored once per process to the edge of a Date.now() millisecond: the loop
// reads the monotonic clock, then the wall clock, until the wall clock's millisecond changes, so the
// anchor is off by at most one loop turn (well under a microsecond), in either direction. It waits
// for that edge (half a millisecond on average, at most one), and only when a caller first asks.

let offset: bigint | null = null;

/** Wall-clock time (CLOCK_REALTIME) in ns, precise to about a microsecond. */
export function wallNs(): bigint {
  if (offset === null) offset = anchor();
  return process.hrtime.bigint() + offset;
}

/** Monotonic milliseconds, for durations (no perf_hooks either). */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** wall ns − monotonic ns, taken at the edge of a wall-clock millisecond. */
function anchor(): bigint {
  const first = Date.now();
  let hr = process.hrtime.bigint();
  let ms = Date.now();
  // A wall clock set back by more than it advances cannot hold the loop: any change ends it.
  while (ms === first) {
    hr = process.hrtime.bigint();
    ms = Date.now();
  }
  return BigInt(ms) * 1_000_000n - hr;
}
