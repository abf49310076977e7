// The wall clock with sub-millisecond precision, for comparison with file ctimes (the ledger's
// windows, containment's process start times).
//
// `performance.timeOrigin + performance.now()` gives the same, but the first touch of the
// `performance` global loads Node's perf_hooks internals: ~2 ms of a hook that lives ~50 ms. Here the
// monotonic clock is anchored once per process to the edge of a Date.now() millisecond: the edge lies
// after the monotonic reading taken before the last Date.now() that returned the old millisecond and
// before the one taken after the first that returned the new one. That interval is a few hundred ns
// unless the process was preempted there; an anchor is kept once it is under ANCHOR_WIDTH_NS
// (its midpoint is then within half of that), else the next edge is tried; after a few edges (or
// 20 ms) the narrowest one seen is kept, and only when no edge was seen at all (a Date.now() that
// never moves) does the clock fall back to `performance`. It waits for an edge (half a millisecond
// on average), and only when a caller first asks.

/** The widest interval an anchor may come from (its error is at most half of it). */
const ANCHOR_WIDTH_NS = 20_000n;
/** Edges tried before falling back to `performance`. */
const ANCHOR_EDGES = 5;
/** How long the edges are waited for before falling back to `performance` (five edges take 5 ms). */
const ANCHOR_GIVE_UP_NS = 20_000_000n;

let offset: bigint | null = null;

/** Wall-clock time (CLOCK_REALTIME) in ns, within 10 µs (ANCHOR_WIDTH_NS / 2). */
export function wallNs(): bigint {
  if (offset === null) offset = anchor();
  return process.hrtime.bigint() + offset;
}

/**
 * Takes the anchor again. A hook process lives for a moment; a long-lived one (the resident hook)
 * renews it between requests, so that a clock step or NTP's slewing does not age its timestamps.
 */
export function reanchorWallClock(): void {
  offset = anchor();
}

/**
 * Takes the anchor again when wallNs() has moved away from Date.now() by more than `maxMs` (the
 * machine was suspended: the monotonic clock stood still; or the wall clock was set): a long-lived
 * process checks this before each timestamp that matters. One comparison when nothing moved.
 */
export function reanchorIfDrifted(maxMs = 2): void {
  if (offset === null) return;
  const drift = Number(process.hrtime.bigint() + offset) / 1e6 - Date.now();
  if (Math.abs(drift) > maxMs) offset = anchor();
}

/** Monotonic milliseconds, for durations (no perf_hooks either). */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** wall ns − monotonic ns, taken at the edge of a wall-clock millisecond. */
function anchor(): bigint {
  const start = process.hrtime.bigint();
  let before = start;
  let prev = Date.now();
  // The narrowest edge seen, in case none is narrow enough before the time is up (a loaded machine
  // deschedules the process for longer than the give-up time): half its width is still the error,
  // far below what performance.timeOrigin can be off by after a slow start (31 ms seen here).
  let best: { offset: bigint; width: bigint } | null = null;
  // Bounded by monotonic time too: a Date.now() that never moves (a frozen or mocked clock) must not
  // hold the hook in a loop its deadline cannot interrupt.
  for (let edges = 0; edges < ANCHOR_EDGES && before - start < ANCHOR_GIVE_UP_NS; ) {
    const a = process.hrtime.bigint();
    const ms = Date.now();
    const b = process.hrtime.bigint();
    if (ms !== prev) {
      // A wall clock set back is an edge too: only the interval's width decides.
      const width = b - before;
      const offset = BigInt(ms) * 1_000_000n - (before + b) / 2n;
      if (width <= ANCHOR_WIDTH_NS) return ((anchorWidthNs = width), offset);
      if (!best || width < best.width) best = { offset, width };
      edges++;
    }
    before = a;
    prev = ms;
  }
  if (best) return ((anchorWidthNs = best.width), best.offset);
  anchorWidthNs = null;
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)) - process.hrtime.bigint();
}

/** The width of the interval the anchor came from (its error is at most half of it); null: no edge was seen. */
let anchorWidthNs: bigint | null = null;

/** How far wallNs() may be from the wall clock, as the anchor knows it (null: it fell back to `performance`). */
export function wallErrorNs(): bigint | null {
  if (offset === null) offset = anchor();
  return anchorWidthNs === null ? null : anchorWidthNs / 2n;
}

/**
 * `new Date(ms).toISOString()`, without it: the first toISOString() in a process loads the time zone
 * (V8 opens /etc/localtime: ~0.3 ms of a hook), the UTC getters do not. The same string for every
 * time a Date holds; an invalid one throws the same RangeError.
 */
export function isoTime(ms: number = Date.now()): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  if (!(y >= 0 && y <= 9999)) return d.toISOString();
  return `${pad(y, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}

function pad(n: number, width: number): string {
  const s = String(n);
  return s.length >= width ? s : '0'.repeat(width - s.length) + s;
}

let sleeper: Int32Array | undefined;

/** Blocks this thread for `ms` (a synchronous poll's wait: containment, the doctor). */
export function sleepSync(ms: number): void {
  Atomics.wait((sleeper ??= new Int32Array(new SharedArrayBuffer(4))), 0, 0, ms);
}
