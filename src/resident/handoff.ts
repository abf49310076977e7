// What dist/latch.cjs hands main.cjs when the resident hook did not answer: the payload it already
// read from stdin, and whether a resident hook should be started once this hook has replied. Kept on
// globalThis: the two are separate bundles.

const KEY = Symbol.for('agent-latch.resident-handoff');

export interface Handoff {
  /** The hook's stdin, read by the client. */
  input: string;
  /** No resident hook serves this hook's identity: start one after the reply. */
  startResident: boolean;
}

type Holder = { [KEY]?: Handoff };

export function handOver(h: Handoff): void {
  (globalThis as Holder)[KEY] = h;
}

/** The handoff, once; undefined when the client did not run (another event, or LATCH_RESIDENT=off). */
export function takeHandoff(): Handoff | undefined {
  const h = (globalThis as Holder)[KEY];
  delete (globalThis as Holder)[KEY];
  return h;
}
