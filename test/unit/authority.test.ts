import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  EVENTS,
  mayMutate,
  POLICIES,
  STATES,
  step,
  TABLE,
  compactionEvent,
  type AuthEvent,
  type AuthState,
} from '../../src/session/authority.js';

const event = fc.constantFrom(...EVENTS);
const state = fc.constantFrom(...STATES);

function run(from: AuthState, events: AuthEvent[]): AuthState {
  let s = from;
  for (const e of events) {
    const r = step(s, e);
    if ('to' in r) s = r.to;
  }
  return s;
}

test('the table is total: every state x event has a row', () => {
  for (const s of STATES) for (const e of EVENTS) assert.ok(TABLE[s][e], `${s} x ${e}`);
});

test('a compaction under fail_closed always ends latched, from any state', () => {
  for (const s of STATES) assert.deepEqual(step(s, compactionEvent('fail_closed')), { to: 'latched' });
});

test('policy continue never changes the state', () => {
  for (const s of STATES) assert.deepEqual(step(s, compactionEvent('continue')), { to: s });
});

test('resume never releases a fail_closed latch', () => {
  assert.ok('refuse' in step('latched', 'resume'));
});

test('property: once latched, only `verify` restores authority', () => {
  fc.assert(
    fc.property(fc.array(event, { maxLength: 40 }), (events) => {
      let s: AuthState = 'latched';
      for (const e of events) {
        const r = step(s, e);
        const next: AuthState = 'to' in r ? r.to : s;
        if (s === 'latched' && mayMutate(next)) assert.equal(e, 'verify');
        s = next;
      }
    }),
  );
});

test('property: a paused session becomes mutable only through resume or verify', () => {
  fc.assert(
    fc.property(fc.array(event, { maxLength: 40 }), (events) => {
      let s: AuthState = 'paused';
      for (const e of events) {
        const r = step(s, e);
        const next: AuthState = 'to' in r ? r.to : s;
        if (!mayMutate(s) && mayMutate(next)) assert.ok(e === 'verify' || e === 'resume', `${s} --${e}--> ${next}`);
        s = next;
      }
    }),
  );
});

test('property: without verify/resume, a sequence containing a blocking compaction never ends mutable', () => {
  const noRelease = fc.constantFrom(...EVENTS.filter((e) => e !== 'verify' && e !== 'resume'));
  fc.assert(
    fc.property(
      state,
      fc.array(noRelease, { maxLength: 30 }),
      fc.constantFrom<'pause' | 'fail_closed'>('pause', 'fail_closed'),
      fc.array(noRelease, { maxLength: 30 }),
      (s0, before, policy, after) => {
        const end = run(s0, [...before, compactionEvent(policy), ...after]);
        assert.notEqual(end, 'mutable');
      },
    ),
  );
});

test('property: latching is monotone in strictness (fail_closed after pause is latched, never paused)', () => {
  fc.assert(
    fc.property(state, fc.array(event, { maxLength: 20 }), (s0, events) => {
      const end = run(s0, [...events, compactionEvent('pause'), compactionEvent('fail_closed')]);
      assert.equal(end, 'latched');
    }),
  );
});

test('every policy maps to an event in the table', () => {
  for (const p of POLICIES) assert.ok(EVENTS.includes(compactionEvent(p)));
});
