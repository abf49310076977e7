// The small error vocabulary. Only the entry points turn these into exit codes.

/** A user-facing failure with a specific exit code (usage = 2, evidence = 65, latched = 73, notHuman = 77). */
export class ExitError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ExitError';
  }
}

/** The state store cannot be used safely (missing, corrupt, wrong owner, symlink, locked). */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  evidence: 65,
  latched: 73,
  /** `latch verify` / `latch resume` run by a process that may be the agent's (EX_NOPERM). */
  notHuman: 77,
} as const;

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
