// A process-wide deadline for a hook's slow work (tree observations, git). Codex fails OPEN when a
// hook exceeds its timeout, so the hook must stop first and deny. Kept on globalThis because the
// hook bundle and the lazily loaded slow bundle each carry their own copy of this module (so a
// DeadlineError is recognised by its code: isLatchError(err, 'E_DEADLINE')).
import { LatchError } from './errors.js';

const KEY = Symbol.for('agent-latch.deadline');

type Holder = { [KEY]?: number };

export class DeadlineError extends LatchError {
  constructor(message: string) {
    super('E_DEADLINE', message);
    this.name = 'DeadlineError';
  }
}

/**
 * A hook's deadline: it answers before the agent's timeout (setup writes 120 s for a tool hook;
 * SessionEnd is capped at 3 s by Codex), so slow work past this throws and the call is denied instead
 * of failing open. LATCH_HOOK_DEADLINE_MS overrides it.
 */
export function hookDeadlineMs(eventName: string | null, env: NodeJS.ProcessEnv): number {
  const n = Number(env.LATCH_HOOK_DEADLINE_MS);
  if (Number.isFinite(n) && n > 0) return n;
  return eventName === 'SessionEnd' ? 2_500 : 90_000;
}

/** From now on, work checked with checkDeadline() must finish within `ms` (null: no deadline). */
export function setDeadline(ms: number | null): void {
  (globalThis as Holder)[KEY] = ms === null ? undefined : Date.now() + ms;
}

/** Milliseconds left, or undefined without a deadline. */
export function remainingMs(): number | undefined {
  const at = (globalThis as Holder)[KEY];
  return at === undefined ? undefined : Math.max(1, at - Date.now());
}

/** Throws DeadlineError once the deadline has passed. Cheap: call it every few hundred items. */
export function checkDeadline(what: string): void {
  const at = (globalThis as Holder)[KEY];
  if (at !== undefined && Date.now() > at)
    throw new DeadlineError(`ran out of time while ${what} (the hook must answer before Codex's timeout)`);
}
