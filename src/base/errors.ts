// The error vocabulary. Every error Latch throws on purpose is a LatchError with a `code`, and code
// that recognises one asks isLatchError(err, code): never `instanceof` or `.name`. The bundles
// (dist/main.cjs, slow.cjs, observer.cjs, cli.cjs) each carry their own copy of these classes, so an
// error thrown in one is not an instance of the other's class, and a minifier may rename a class;
// the code is plain data and survives both. Only the entry points turn these into exit codes.
// Dependency-free: this module is on the hook's hot path.

/** What went wrong, one code per error class. */
export type LatchErrorCode =
  /** ExitError (here): a user-facing failure with a specific exit code. */
  | 'E_EXIT'
  /** StoreError (here): the state store cannot be used safely. */
  | 'E_STORE'
  /** ConfigError (session/policy.ts): a user or project config file is invalid. */
  | 'E_CONFIG'
  /** DeadlineError (base/deadline.ts): the hook ran out of time for its slow work. */
  | 'E_DEADLINE'
  /** AppServerError (agents/codex/app-server.ts): `codex app-server` failed or refused. */
  | 'E_APP_SERVER'
  /** UnreadableError (agents/codex/fsck/fsck.ts): a rollout file cannot be read or decoded. */
  | 'E_UNREADABLE'
  /** NotServedError (here): the resident hook leaves this call to an ordinary hook process (src/resident/). */
  | 'E_NOT_SERVED';

const CODES: ReadonlySet<string> = new Set<LatchErrorCode>([
  'E_EXIT',
  'E_STORE',
  'E_CONFIG',
  'E_DEADLINE',
  'E_APP_SERVER',
  'E_UNREADABLE',
  'E_NOT_SERVED',
]);

/** The base of every error Latch throws on purpose; recognise one with isLatchError. */
export class LatchError extends Error {
  constructor(
    readonly code: LatchErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LatchError';
  }
}

/**
 * Whether `err` is a Latch error (with `code`: one with that code), by its `code` alone, so that an
 * error from another bundle's copy of the class is recognised too.
 */
export function isLatchError(err: unknown, code: 'E_EXIT'): err is ExitError;
export function isLatchError(err: unknown, code?: LatchErrorCode): err is LatchError;
export function isLatchError(err: unknown, code?: LatchErrorCode): err is LatchError {
  if (typeof err !== 'object' || err === null || typeof (err as { message?: unknown }).message !== 'string')
    return false;
  const c = (err as { code?: unknown }).code;
  return code === undefined ? typeof c === 'string' && CODES.has(c) : c === code;
}

/** A user-facing failure with a specific exit code (usage = 2, evidence = 65, latched = 73, notHuman = 77). */
export class ExitError extends LatchError {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super('E_EXIT', message);
    this.name = 'ExitError';
  }
}

/** The state store cannot be used safely (missing, corrupt, wrong owner, symlink, locked). */
export class StoreError extends LatchError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_STORE', message, options);
    this.name = 'StoreError';
  }
}

/**
 * Thrown by the guard, before it writes anything, when a call is not one the resident hook may answer
 * (src/resident/server.ts): the client then runs the ordinary hook, which decides the call from scratch.
 */
export class NotServedError extends LatchError {
  constructor(why: string) {
    super('E_NOT_SERVED', why);
    this.name = 'NotServedError';
  }
}

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  evidence: 65,
  latched: 73,
  /** `latch qualify`: a step ran out of time; no verdict (EX_TEMPFAIL: try again later). */
  inconclusive: 75,
  /** `latch verify` / `latch resume` run by a process that may be the agent's (EX_NOPERM). */
  notHuman: 77,
} as const;

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
