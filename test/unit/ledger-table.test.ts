// Model-based test of the attempt state table (ATTEMPT_TABLE in src/ledger/ledger.ts) against the
// ledger's own writers: random sequences of ledger operations (startAttempt, markUntimed, beginClose,
// endClose, abandonAttempts by ids / session / lane / agent / all, abandonAtTurnEnd, claimRecovery) run
// on a real temp store.
// After every operation:
//   - every row the store shows changed moved along a pair of the table (place x event -> next), and
//     carries exactly that event's columns; every other row is byte-for-byte as before;
//   - an operation whose (place, event) is not in the table is refused: nothing is written, and the
//     function says so in its own contract (false, 0, the unchanged row, `duplicate`, or a throw);
// and at the end every pair of the table was taken, and every pair outside it was refused, by the
// generated runs. The targets of an operation are chosen here without the table (the ids given, the
// session's or the lane's rows, all rows): a writer that decided with its own notion of which states
// it applies to would show a move the table does not list, or refuse one it does.
//
// The last test removes each pair from the table in turn (at run time) and checks that its writer
// then refuses it, and takes it again once restored: a writer that does not consult the table fails it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { openStore, type Db } from '../../src/store/store.js';
import {
  abandonAtTurnEnd,
  abandonAttempts,
  ATTEMPT_EVENTS,
  ATTEMPT_TABLE,
  attemptId,
  beginClose,
  claimRecovery,
  CLOSE_REASON,
  endClose,
  getAttempt,
  laneOf,
  markUntimed,
  startAttempt,
  type AttemptEvent,
  type AttemptPlace,
  type AttemptRow,
  type AttemptState,
  type ProcessId,
  type TurnEndKind,
} from '../../src/ledger/ledger.js';

const WORKSPACE = '/ws';
/** The calls the operations pick from: two sessions, one of them with a sub-agent lane. */
const SLOTS = [
  { session: 'S', call: 'c0', agent: null },
  { session: 'S', call: 'c1', agent: 'A' },
  { session: 'T', call: 'c2', agent: null },
] as const;
const SESSIONS = ['S', 'T'];
const LANES = [laneOf('S', null), laneOf('S', 'A'), laneOf('T', null)];
const AGENTS = [null, 'A'] as const;
const TURN_ENDS: TurnEndKind[] = ['stop', 'subagent_stop', 'interrupt', 'session_end'];
const idOf = (slot: number) => attemptId(SLOTS[slot]!.session, SLOTS[slot]!.call);
const OWNERS: ProcessId[] = [
  { pid: 2_000_001, start: 'owner-a' },
  { pid: 2_000_002, start: 'owner-b' },
];
const CLOSE_REASONS = [CLOSE_REASON.hook, CLOSE_REASON.readOnly, CLOSE_REASON.watcher] as const;

type Op =
  | { kind: 'start'; slot: number }
  | { kind: 'mark_untimed'; slot: number }
  | { kind: 'close_begin'; slot: number; owner: number }
  | { kind: 'close_end'; slot: number; reason: number }
  | { kind: 'recover'; slot: number }
  | { kind: 'claim'; slot: number; owner: number; stale: boolean }
  | { kind: 'abandon_ids'; slots: number[] }
  | { kind: 'abandon_session'; session: string }
  | { kind: 'abandon_lane'; lane: string }
  | { kind: 'abandon_agent'; session: string; agent: string | null }
  | { kind: 'abandon_turn_end'; end: TurnEndKind; session: string; agent: string | null }
  | { kind: 'abandon_all' };

/** Which event each operation applies (a Record: an event without an operation does not compile). */
const EVENT_OF: Record<AttemptEvent, Op['kind'][]> = {
  start: ['start'],
  mark_untimed: ['mark_untimed'],
  close_begin: ['close_begin'],
  close_end: ['close_end'],
  recover: ['recover'],
  claim: ['claim'],
  abandon: ['abandon_ids', 'abandon_session', 'abandon_lane', 'abandon_agent', 'abandon_turn_end', 'abandon_all'],
};
const eventOf = (k: Op['kind']): AttemptEvent =>
  (Object.keys(EVENT_OF) as AttemptEvent[]).find((e) => EVENT_OF[e].includes(k))!;

const slot = fc.nat({ max: SLOTS.length - 1 });
const owner = fc.nat({ max: OWNERS.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: slot.map((s) => ({ kind: 'start' as const, slot: s })), weight: 3 },
  { arbitrary: slot.map((s) => ({ kind: 'mark_untimed' as const, slot: s })), weight: 2 },
  {
    arbitrary: fc.tuple(slot, owner).map(([s, o]) => ({ kind: 'close_begin' as const, slot: s, owner: o })),
    weight: 3,
  },
  {
    arbitrary: fc
      .tuple(slot, fc.nat({ max: CLOSE_REASONS.length - 1 }))
      .map(([s, r]) => ({ kind: 'close_end' as const, slot: s, reason: r })),
    weight: 2,
  },
  { arbitrary: slot.map((s) => ({ kind: 'recover' as const, slot: s })), weight: 2 },
  // One claim in four is made with a generation another recoverer already moved (refused).
  {
    arbitrary: fc
      .tuple(slot, owner, fc.nat({ max: 3 }))
      .map(([s, o, n]) => ({ kind: 'claim' as const, slot: s, owner: o, stale: n === 0 })),
    weight: 3,
  },
  {
    arbitrary: fc
      .uniqueArray(slot, { minLength: 1, maxLength: 3 })
      .map((slots) => ({ kind: 'abandon_ids' as const, slots })),
    weight: 1,
  },
  { arbitrary: fc.constantFrom(...SESSIONS).map((s) => ({ kind: 'abandon_session' as const, session: s })), weight: 1 },
  { arbitrary: fc.constantFrom(...LANES).map((l) => ({ kind: 'abandon_lane' as const, lane: l })), weight: 1 },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(...SESSIONS), fc.constantFrom(...AGENTS))
      .map(([session, agent]) => ({ kind: 'abandon_agent' as const, session, agent })),
    weight: 1,
  },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(...TURN_ENDS), fc.constantFrom(...SESSIONS), fc.constantFrom(...AGENTS))
      .map(([end, session, agent]) => ({ kind: 'abandon_turn_end' as const, end, session, agent })),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: 'abandon_all' as const }), weight: 1 },
);

const placeOf = (a: AttemptRow | undefined): AttemptPlace => a?.state ?? 'absent';
const pair = (p: AttemptPlace, e: AttemptEvent) => `${p} --${e}-->`;
const allPlaces = Object.keys(ATTEMPT_TABLE) as AttemptPlace[];

function snapshot(db: Db): Map<string, AttemptRow> {
  return new Map((db.prepare('SELECT * FROM attempts ORDER BY id').all() as AttemptRow[]).map((a) => [a.id, a]));
}

interface Store {
  db: Db;
  close(): void;
}

// One store is created (migrated) once; each run opens a fresh copy of it (a creation costs ~100 ms).
const base = mkdtempSync(join(tmpdir(), 'latch-ledger-table-'));
after(() => rmSync(base, { recursive: true, force: true }));
let template: string | null = null;
let stores = 0;

function tempStore(): Store {
  if (!template) {
    template = join(base, 'template');
    openStore(template, { create: true }).close();
  }
  const home = join(base, `store-${stores++}`);
  mkdirSync(home, { mode: 0o700 });
  copyFileSync(join(template, 'latch.db'), join(home, 'latch.db'));
  const db = openStore(home, { create: false });
  db.pragma('synchronous = OFF'); // a throwaway store: no fsync at each commit and checkpoint
  return {
    db,
    close: () => {
      db.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** What the table says happened to pairs (over all runs): taken, or refused. */
interface Coverage {
  taken: Map<string, number>;
  refused: Map<string, number>;
}

const newCoverage = (): Coverage => ({ taken: new Map(), refused: new Map() });
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

interface Outcome {
  /** The rows the operation addressed (chosen without the table), all with the operation's event. */
  targets: string[];
  /** What the function returned. */
  result: unknown;
  threw: Error | null;
  /** The claim was made with a stale generation (refused whatever the table says). */
  stale: boolean;
  /** The end_reason an abandon writes. */
  reason: string | null;
}

let clock = 0;

function run(db: Db, op: Op, before: Map<string, AttemptRow>, now: string): Outcome {
  const out: Outcome = { targets: [], result: undefined, threw: null, stale: false, reason: null };
  const call = (f: () => unknown) => {
    try {
      out.result = f();
    } catch (err) {
      out.threw = err as Error;
    }
  };
  switch (op.kind) {
    case 'start': {
      const s = SLOTS[op.slot]!;
      out.targets = [idOf(op.slot)];
      call(() =>
        startAttempt(
          db,
          {
            sessionId: s.session,
            workspace: WORKSPACE,
            turnId: 'turn-1',
            agentId: s.agent,
            toolName: 'Bash',
            toolUseId: s.call,
            summary: `call ${s.call}`,
            kind: 'shell',
          },
          now,
        ),
      );
      break;
    }
    case 'mark_untimed':
      out.targets = [idOf(op.slot)];
      call(() => markUntimed(db, idOf(op.slot)));
      break;
    case 'close_begin':
      out.targets = [idOf(op.slot)];
      call(() => beginClose(db, idOf(op.slot), OWNERS[op.owner]!));
      break;
    case 'close_end':
      out.targets = [idOf(op.slot)];
      call(() => endClose(db, idOf(op.slot), now, CLOSE_REASONS[op.reason]!));
      break;
    case 'recover':
      out.targets = [idOf(op.slot)];
      call(() => endClose(db, idOf(op.slot), now, CLOSE_REASON.recovered));
      break;
    case 'claim': {
      const id = idOf(op.slot);
      // The row as the recoverer read it (none: a row it never read, generation 0).
      const read = before.get(id) ?? ({ id, recovery_gen: 0 } as AttemptRow);
      out.stale = op.stale;
      out.targets = [id];
      call(() =>
        claimRecovery(db, op.stale ? { ...read, recovery_gen: read.recovery_gen + 1 } : read, OWNERS[op.owner]!),
      );
      break;
    }
    case 'abandon_ids':
      out.targets = op.slots.map(idOf);
      out.reason = 'a later turn started in the same lane';
      call(() => abandonAttempts(db, { ids: out.targets }, out.reason!, now));
      break;
    case 'abandon_session':
      out.targets = [...before.values()].filter((a) => a.session_id === op.session).map((a) => a.id);
      out.reason = 'stop before PostToolUse';
      call(() => abandonAttempts(db, { session: op.session }, out.reason!, now));
      break;
    case 'abandon_lane':
      out.targets = [...before.values()].filter((a) => a.lane === op.lane).map((a) => a.id);
      out.reason = 'subagent_stop before PostToolUse';
      call(() => abandonAttempts(db, { lane: op.lane }, out.reason!, now));
      break;
    case 'abandon_agent':
      out.targets = [...before.values()]
        .filter((a) => a.session_id === op.session && a.agent_id === op.agent)
        .map((a) => a.id);
      out.reason = 'stop before PostToolUse';
      call(() => abandonAttempts(db, { session: op.session, agent: op.agent }, out.reason!, now));
      break;
    case 'abandon_turn_end': {
      // Whose calls each turn end addresses: SessionEnd the whole session's; Stop and Interrupt the
      // ending agent's (none: the main agent's); SubagentStop the sub-agent's (no agent id: none).
      const mine = (a: AttemptRow) =>
        a.session_id === op.session &&
        (op.end === 'session_end' || (a.agent_id === op.agent && (op.end !== 'subagent_stop' || op.agent !== null)));
      out.targets = [...before.values()].filter(mine).map((a) => a.id);
      out.reason = `${op.end} before PostToolUse`;
      call(() => abandonAtTurnEnd(db, { kind: op.end, sessionId: op.session, agentId: op.agent }, now));
      break;
    }
    case 'abandon_all':
      out.targets = [...before.values()].map((a) => a.id);
      out.reason = 'interrupt before PostToolUse';
      call(() => abandonAttempts(db, {}, out.reason!, now));
      break;
  }
  return out;
}

/** The columns an event writes besides `state` (every other column must be unchanged). */
function expectedRow(
  op: Op,
  out: Outcome,
  event: AttemptEvent,
  was: AttemptRow,
  next: AttemptState,
  now: string,
  got: AttemptRow,
): AttemptRow {
  const row = { ...was, state: next };
  switch (event) {
    case 'mark_untimed':
      return { ...row, started_ns: '0' };
    case 'close_begin': {
      const o = OWNERS[(op as { owner: number }).owner]!;
      assert.ok(got.closing_ns !== null && BigInt(got.closing_ns) > 0n, 'close_begin records closing_ns');
      return { ...row, closing_ns: got.closing_ns, closer_pid: o.pid, closer_start: o.start };
    }
    case 'close_end':
    case 'recover': {
      const reason = event === 'recover' ? CLOSE_REASON.recovered : CLOSE_REASONS[(op as { reason: number }).reason]!;
      const endedNs = was.closing_ns ?? got.ended_ns;
      assert.ok(endedNs !== null, `${event} records ended_ns`);
      return { ...row, ended_at: now, ended_ns: endedNs, end_reason: reason };
    }
    case 'abandon':
      assert.ok(got.ended_ns !== null && BigInt(got.ended_ns) > 0n, 'abandon records ended_ns');
      return { ...row, ended_at: now, ended_ns: got.ended_ns, end_reason: out.reason };
    case 'claim': {
      const o = OWNERS[(op as { owner: number }).owner]!;
      return { ...row, recovery_gen: was.recovery_gen + 1, closer_pid: o.pid, closer_start: o.start };
    }
    case 'start':
      throw new Error('start has no row before it');
  }
}

/** Runs one operation and checks the store against the table; records the pairs taken and refused in `cov`. */
function step(db: Db, op: Op, cov: Coverage, ctx: () => string): void {
  const before = snapshot(db);
  const now = new Date(Date.UTC(2026, 0, 1) + clock++).toISOString();
  const event = eventOf(op.kind);
  const out = run(db, op, before, now);
  const after = snapshot(db);
  const where = (id: string) => `${describe(op)} on ${id} (${placeOf(before.get(id))})` + ctx();
  const targets = new Set(out.targets);
  let taken = 0;
  for (const id of new Set([...before.keys(), ...after.keys(), ...targets])) {
    const was = before.get(id);
    const now_ = after.get(id);
    const from = placeOf(was);
    const changed = JSON.stringify(was) !== JSON.stringify(now_);
    const next = targets.has(id) && !out.stale ? (ATTEMPT_TABLE[from][event] ?? null) : null;
    if (!targets.has(id)) {
      assert.ok(
        !changed,
        `an attempt the operation did not address changed: ${where(id)}\n  before ${JSON.stringify(was)}\n  after  ${JSON.stringify(now_)}`,
      );
      continue;
    }
    // Every change the store shows is a pair of the table, with that event's columns.
    if (changed) {
      assert.ok(now_, `attempt ${id} disappeared: ${where(id)}`);
      assert.equal(
        now_.state,
        next,
        `the store moved ${from} -> ${now_.state} by ${event}; the table says ${next ?? 'refused'}: ${where(id)}`,
      );
    }
    if (next === null) {
      // Refused: nothing written.
      assert.ok(!changed, `refused pair written: ${where(id)}`);
      if (!out.stale) bump(cov.refused, pair(from, event));
      continue;
    }
    assert.ok(now_, `${pair(from, event)} ${next} not written: ${where(id)}`);
    assert.equal(now_.state, next, `${pair(from, event)} must give ${next}: ${where(id)}`);
    if (was) {
      assert.deepEqual(
        now_,
        expectedRow(op, out, event, was, next, now, now_),
        `${pair(from, event)}: columns written: ${where(id)}`,
      );
    } else {
      const s = SLOTS.find((x) => attemptId(x.session, x.call) === id)!;
      assert.deepEqual(
        { ...now_, started_ns: '' },
        {
          id,
          session_id: s.session,
          workspace: WORKSPACE,
          turn_id: 'turn-1',
          agent_id: s.agent,
          lane: laneOf(s.session, s.agent),
          tool_name: 'Bash',
          tool_use_id: s.call,
          summary: `call ${s.call}`,
          state: next,
          started_at: now,
          started_ns: '',
          scan_gen: 0,
          closing_ns: null,
          closer_pid: null,
          closer_start: null,
          recovery_gen: 0,
          ended_at: null,
          ended_ns: null,
          end_reason: null,
          output_seen: 0,
          kind: 'shell',
        },
        `start writes a fresh row: ${where(id)}`,
      );
      assert.ok(BigInt(now_.started_ns) > 0n, 'start records started_ns');
    }
    bump(cov.taken, pair(from, event));
    taken++;
  }
  // Each function reports in its own contract what it did.
  const only = out.targets[0]!;
  const took = taken > 0;
  switch (op.kind) {
    case 'start': {
      const r = out.result as { attempt: AttemptRow; duplicate: boolean } | undefined;
      if (before.has(only)) {
        assert.equal(out.threw, null);
        assert.deepEqual(
          r,
          { attempt: before.get(only), duplicate: true },
          `a second Start reuses the attempt: ${where(only)}`,
        );
      } else if (took) {
        assert.equal(out.threw, null);
        assert.deepEqual(r, { attempt: after.get(only), duplicate: false });
      } else {
        assert.match(String(out.threw?.message), /state table has no Start/, `a refused Start throws: ${where(only)}`);
      }
      break;
    }
    case 'close_begin':
      assert.equal(out.threw, null);
      assert.deepEqual(out.result, after.get(only), `beginClose returns the row as it is now: ${where(only)}`);
      break;
    case 'mark_untimed':
    case 'close_end':
    case 'recover':
    case 'claim':
      assert.equal(out.threw, null);
      assert.equal(out.result, took, `${op.kind} returns whether it wrote: ${where(only)}`);
      break;
    default:
      assert.equal(out.threw, null);
      assert.equal(out.result, taken, `abandonAttempts returns how many it abandoned` + ctx());
  }
}

function describe(op: Op): string {
  const { kind, ...rest } = op;
  return `${kind}(${Object.values(rest).join(',')})`;
}

test('attempt state table: random ledger operations on a real store move only along the table, and cover all of it', () => {
  const cov = newCoverage();
  let runs = 0;
  let ops = 0;
  const t0 = performance.now();
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }), (seq) => {
      const store = tempStore();
      runs++;
      const log: string[] = [];
      try {
        for (const op of seq) {
          log.push(describe(op));
          step(store.db, op, cov, () => `\n  operations: ${log.join('; ')}`);
        }
        ops += seq.length;
      } finally {
        store.close();
      }
    }),
    {
      numRuns: Number(process.env.LATCH_TABLE_RUNS ?? 150),
      ...(process.env.LATCH_TEST_SEED ? { seed: Number(process.env.LATCH_TEST_SEED) } : {}),
    },
  );
  // Coverage: every pair of the table was taken, every other (place, event) pair refused.
  const inTable = allPlaces.flatMap((p) => ATTEMPT_EVENTS.filter((e) => ATTEMPT_TABLE[p][e]).map((e) => pair(p, e)));
  const outside = allPlaces.flatMap((p) => ATTEMPT_EVENTS.filter((e) => !ATTEMPT_TABLE[p][e]).map((e) => pair(p, e)));
  assert.deepEqual(
    inTable.filter((p) => !cov.taken.has(p)),
    [],
    'pairs of the table never taken by the generated runs',
  );
  assert.deepEqual(
    outside.filter((p) => !cov.refused.has(p)),
    [],
    'pairs outside the table never tried by the generated runs',
  );
  assert.deepEqual(
    [...cov.taken.keys()].filter((p) => !inTable.includes(p)),
    [],
    'pairs taken that the table does not list',
  );
  assert.deepEqual(
    [...cov.refused.keys()].filter((p) => !outside.includes(p)),
    [],
    'pairs refused that the table lists',
  );
  const least = (m: Map<string, number>, ps: string[]) =>
    ps.map((p) => `${m.get(p) ?? 0} ${p}`).sort((a, b) => parseInt(a, 10) - parseInt(b, 10))[0];
  console.log(
    `# attempt table: ${runs} runs, ${ops} operations; ${inTable.length} pairs taken (least: ${least(cov.taken, inTable)}), ` +
      `${outside.length} refused (least: ${least(cov.refused, outside)}); ${Math.round(performance.now() - t0)} ms`,
  );
});

test('attempt state table: names only known events, and leads only to row states', () => {
  for (const p of allPlaces)
    for (const e of Object.keys(ATTEMPT_TABLE[p]) as AttemptEvent[])
      assert.ok(ATTEMPT_EVENTS.includes(e), `unknown event ${e}`);
  for (const p of allPlaces)
    for (const next of Object.values(ATTEMPT_TABLE[p]))
      assert.ok(next !== undefined && next in ATTEMPT_TABLE && next !== ('absent' as string), `${p}: next ${next}`);
});

/** One operation of the given kind on slot `slotIdx` (abandon by session / lane: the slot's). */
function opOf(kind: Op['kind'], slotIdx: number): Op {
  const s = SLOTS[slotIdx]!;
  switch (kind) {
    case 'start':
    case 'mark_untimed':
    case 'recover':
      return { kind, slot: slotIdx };
    case 'close_begin':
      return { kind, slot: slotIdx, owner: 0 };
    case 'close_end':
      return { kind, slot: slotIdx, reason: 0 };
    case 'claim':
      return { kind, slot: slotIdx, owner: 1, stale: false };
    case 'abandon_ids':
      return { kind, slots: [slotIdx] };
    case 'abandon_session':
      return { kind, session: s.session };
    case 'abandon_lane':
      return { kind, lane: laneOf(s.session, s.agent) };
    case 'abandon_agent':
      return { kind, session: s.session, agent: s.agent };
    case 'abandon_turn_end':
      return { kind, end: s.agent ? 'subagent_stop' : 'stop', session: s.session, agent: s.agent };
    case 'abandon_all':
      return { kind };
  }
}

/** Operations that take an attempt to `place` along the table's own pairs (breadth-first from absent). */
function pathTo(place: AttemptPlace, slotIdx: number): Op[] {
  const seen = new Map<AttemptPlace, Op[]>([['absent', []]]);
  const todo: AttemptPlace[] = ['absent'];
  while (todo.length > 0) {
    const p = todo.shift()!;
    for (const e of ATTEMPT_EVENTS) {
      const next = ATTEMPT_TABLE[p][e];
      if (next && !seen.has(next)) {
        seen.set(next, [...seen.get(p)!, opOf(EVENT_OF[e][0]!, slotIdx)]);
        todo.push(next);
      }
    }
  }
  const path = seen.get(place);
  assert.ok(path, `${place} is not reachable along the table`);
  return path;
}

/**
 * Takes an attempt (slot 1: session S, lane S/A) to `place` on a fresh store, changes the table's
 * entry for (place, event) to `to` (undefined: removes it) for one operation of `kind`, restores it,
 * and returns the pairs that operation took and refused.
 */
function withEntry(
  place: AttemptPlace,
  event: AttemptEvent,
  to: AttemptState | undefined,
  kind: Op['kind'],
): { cov: Coverage; store: Store } {
  const table = ATTEMPT_TABLE as Record<AttemptPlace, Partial<Record<AttemptEvent, AttemptState>>>;
  const store = tempStore();
  const ctx = (): string => `\n  table entry ${pair(place, event)} set to ${to ?? 'nothing'}, operation ${kind}`;
  for (const op of pathTo(place, 1)) step(store.db, op, newCoverage(), ctx);
  assert.equal(placeOf(getAttempt(store.db, idOf(1))), place, ctx());
  const had = table[place][event];
  const cov = newCoverage();
  if (to === undefined) delete table[place][event];
  else table[place][event] = to;
  try {
    step(store.db, opOf(kind, 1), cov, ctx);
  } finally {
    if (had === undefined) delete table[place][event];
    else table[place][event] = had;
  }
  return { cov, store };
}

const ROW_STATES = allPlaces.filter((p): p is AttemptState => p !== 'absent');

test('attempt state table: each writer decides by the table alone (a pair removed at run time is refused, one added is taken)', () => {
  for (const p of allPlaces) {
    for (const e of ATTEMPT_EVENTS) {
      const next = ATTEMPT_TABLE[p][e];
      if (!next) continue;
      // Each way an operation applies the event (abandon: by ids, session, lane, agent, turn end, all).
      for (const kind of EVENT_OF[e]) {
        const { cov, store } = withEntry(p, e, undefined, kind);
        try {
          assert.deepEqual(
            [...cov.refused.keys()],
            [pair(p, e)],
            `with ${pair(p, e)} removed from the table, ${kind} must refuse it`,
          );
          assert.equal(placeOf(getAttempt(store.db, idOf(1))), p);
          // Restored, the same operation takes it.
          const again = newCoverage();
          step(store.db, opOf(kind, 1), again, () => `\n  ${pair(p, e)} restored, operation ${kind}`);
          assert.deepEqual([...again.taken.keys()], [pair(p, e)], `restored, ${kind} takes ${pair(p, e)}`);
        } finally {
          store.close();
        }
      }
    }
  }
  // The other way: an entry the table does not have, added, is taken by the writer of that event
  // (to the state the event leads to elsewhere). Not for `start` (a row already there is a duplicate
  // delivery by contract) nor from `absent` (only a Start creates a row).
  for (const e of ATTEMPT_EVENTS) {
    if (e === 'start') continue;
    const to = allPlaces.map((p) => ATTEMPT_TABLE[p][e]).find((x) => x !== undefined)!;
    for (const p of ROW_STATES) {
      if (ATTEMPT_TABLE[p][e]) continue;
      for (const kind of EVENT_OF[e]) {
        const { cov, store } = withEntry(p, e, to, kind);
        try {
          assert.deepEqual(
            [...cov.taken.keys()],
            [pair(p, e)],
            `with ${pair(p, e)} ${to} added to the table, ${kind} must take it`,
          );
          assert.equal(placeOf(getAttempt(store.db, idOf(1))), to);
        } finally {
          store.close();
        }
      }
    }
  }
});
