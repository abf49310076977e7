// What a command needs from the outside world, injected so tests can call commands directly.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dbPath, latchHome, moduleFile } from '../base/paths.js';
import { openStore, type Db } from '../store/store.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** True when a human can answer a prompt. */
  interactive: boolean;
  ask(question: string): Promise<string>;
  now(): string;
}

/** require() for the built-ins a terminal needs, made on first use (the hook never does). */
const nodeRequire = (id: string): unknown => createRequire(moduleFile)(id);

/** Set once stdout's reader went away (EPIPE); watched from the first processIo() on. */
let readerGone = false;
let watchingReader = false;

export function processIo(): Io {
  // A reader that went away (`latch doctor FILE | head`, `latch --help | true`): the rest of the
  // output has nowhere to go, and the command finishes with its own exit code, without a stack trace.
  if (!watchingReader) {
    watchingReader = true;
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      readerGone = true;
    });
  }
  return {
    out: (t) => {
      if (!readerGone) process.stdout.write(t);
    },
    err: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
    // Asked only by the commands that prompt: node:tty (or process.stdin, which opens the stdin
    // stream) and node:readline cost a command ~3 ms to load.
    get interactive() {
      const { isatty } = nodeRequire('node:tty') as typeof import('node:tty');
      return isatty(0) && isatty(1);
    },
    ask: (q) =>
      new Promise((resolve) => {
        const { createInterface } = nodeRequire('node:readline') as typeof import('node:readline');
        const rl = createInterface({ input: process.stdin, output: process.stdout });
        rl.question(q, (a) => {
          rl.close();
          resolve(a);
        });
      }),
    now: () => new Date().toISOString(),
  };
}

export function homeOf(io: Pick<Io, 'env'>): string {
  return latchHome(io.env);
}

/**
 * Opens the store for a command (creating it when missing, unless `ifMissing` is given: read-only
 * commands answer from it instead of creating an empty store) and closes it afterwards.
 */
export function withStore<T>(
  io: Pick<Io, 'env'>,
  fn: (db: Db, home: string) => T,
  opts: { create?: boolean; ifMissing?: (home: string) => T } = {},
): T {
  const home = homeOf(io);
  if (opts.ifMissing && !existsSync(dbPath(home))) return opts.ifMissing(home);
  const db = openStore(home, { create: opts.create ?? true });
  try {
    return fn(db, home);
  } finally {
    db.close();
  }
}

export function json(io: Pick<Io, 'out'>, value: unknown): void {
  io.out(JSON.stringify(value, null, 2) + '\n');
}
