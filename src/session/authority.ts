// The authority state machine: one table, state x event -> next state (or a refusal).
// Nothing else in Latch changes a session's state; every change goes through `step`.

export type AuthState = 'mutable' | 'latched' | 'paused';
export type Policy = 'continue' | 'pause' | 'fail_closed';

export type AuthEvent =
  | 'compaction:continue' // a compaction observed under policy `continue`: record only
  | 'compaction:pause' // ... under `pause`
  | 'compaction:fail_closed' // ... under `fail_closed`
  | 'verify' // `latch verify` passed (evidence held, human confirmed)
  | 'resume' // `latch resume` (a human lifting a pause)
  | 'inherit:latched' // a fork of a latched session, or a workspace-scoped latch
  | 'inherit:paused';

export type Row = { to: AuthState } | { refuse: string };

const stay = (s: AuthState): Row => ({ to: s });

export const TABLE: Readonly<Record<AuthState, Readonly<Record<AuthEvent, Row>>>> = {
  mutable: {
    'compaction:continue': stay('mutable'),
    'compaction:pause': { to: 'paused' },
    'compaction:fail_closed': { to: 'latched' },
    verify: stay('mutable'),
    resume: stay('mutable'),
    'inherit:latched': { to: 'latched' },
    'inherit:paused': { to: 'paused' },
  },
  latched: {
    'compaction:continue': stay('latched'),
    'compaction:pause': stay('latched'),
    'compaction:fail_closed': stay('latched'),
    verify: { to: 'mutable' },
    resume: { refuse: 'the session is latched under fail_closed: only `latch verify` restores authority' },
    'inherit:latched': stay('latched'),
    'inherit:paused': stay('latched'),
  },
  paused: {
    'compaction:continue': stay('paused'),
    'compaction:pause': stay('paused'),
    'compaction:fail_closed': { to: 'latched' },
    verify: { to: 'mutable' },
    resume: { to: 'mutable' },
    'inherit:latched': { to: 'latched' },
    'inherit:paused': stay('paused'),
  },
};

export function step(state: AuthState, event: AuthEvent): Row {
  return TABLE[state][event];
}

export function compactionEvent(policy: Policy): AuthEvent {
  return `compaction:${policy}`;
}

export function mayMutate(state: AuthState): boolean {
  return state === 'mutable';
}

export const STATES: readonly AuthState[] = ['mutable', 'latched', 'paused'];
export const EVENTS: readonly AuthEvent[] = Object.keys(TABLE.mutable) as AuthEvent[];
export const POLICIES: readonly Policy[] = ['continue', 'pause', 'fail_closed'];
