// The resident hook's client: the first thing dist/latch.cjs does for a PreToolUse. Starting Latch's
// bundle costs a hook ~20 ms before it does any work (docs/benchmarks.md); a resident hook
// (server.ts) has it loaded already. The client reads the payload, hands it to the resident hook
// serving this process's identity (identity.ts) through a spool directory, and writes its answer.
// Whenever the resident hook cannot or will not answer, the ordinary hook runs instead, in this
// process, with the payload already read: the resident hook is an optimisation, never a condition.
//
// The exchange, in files (node:fs only: loading node:net alone would cost more than the goal allows):
//   1. the client writes <id>.req (write to a temporary name, then rename);
//   2. the resident hook claims it by renaming it to <id>.work, answers in <id>.res, removes <id>.work;
//   3. the client reads and removes <id>.res.
// Renames decide who owns a request: a client that withdraws its .req before the claim (no live
// resident hook, or none claimed it in time) runs the ordinary hook, and nothing was decided twice.
// Once claimed, only the answer counts: a resident hook that dies before answering means a deny
// (exit 2), never a second decision, since the first one may have been written.
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { hookDeadlineMs } from '../base/deadline.js';
import { type NamedServer, namedServer, readOrNull, residentSpool, serverAnswers, SPOOL } from './identity.js';

export type Asked =
  | { answered: true }
  | {
      answered: false;
      /** The payload, read from stdin: the ordinary hook's input now. */
      input: string;
      /** Why the resident hook did not answer (for tests and LATCH_RESIDENT_TRACE). */
      why: string;
      /** No resident hook is alive for this identity: the ordinary hook starts one after its reply. */
      start: boolean;
    };

/** How long a request may wait for its claim before the client runs the ordinary hook. */
const CLAIM_MS = 1_000;
/** Between two looks at the answer (Atomics.wait, ms). */
const POLL_MS = 0.1;
/** Every this many looks, is the resident hook still alive? (~5 ms) */
const LIVENESS_EVERY = 40;

/** The agent of a hook the resident hook may answer (`latch hook <agent> --event PreToolUse`), else null. */
export function residentAgent(argv: readonly string[], env: NodeJS.ProcessEnv): string | null {
  if (process.platform !== 'linux' || env.LATCH_RESIDENT === 'off') return null;
  if (argv.length !== 4 || argv[0] !== 'hook' || argv[2] !== '--event' || argv[3] !== 'PreToolUse') return null;
  return argv[1] ?? null;
}

/** Asks the resident hook; on an answer its reply is written and process.exitCode set. Never throws. */
export function askResident(agent: string, entry: string, env: NodeJS.ProcessEnv = process.env): Asked {
  let input = '';
  try {
    input = readFileSync(0, 'utf8');
  } catch {
    input = '';
  }
  try {
    return ask(agent, entry, env, input);
  } catch (err) {
    return { answered: false, input, why: `client error: ${(err as Error)?.message ?? String(err)}`, start: false };
  }
}

function ask(agent: string, entry: string, env: NodeJS.ProcessEnv, input: string): Asked {
  const notAnswered = (why: string, start = false): Asked => ({ answered: false, input, why, start });
  const spool = residentSpool(entry, agent, env, process.cwd());
  if (!spool) return notAnswered('no HOME or LATCH_HOME in the environment');
  const { identity, dir } = spool;
  const server = namedServer(dir);
  if (!server) return notAnswered('no resident hook', true);

  const id = `${process.pid}-${process.hrtime.bigint()}`;
  const request = join(dir, id + SPOOL.request);
  const claimed = join(dir, id + SPOOL.claimed);
  const answer = join(dir, id + SPOOL.answer);
  const tmp = join(dir, `${id}.tmp`);
  try {
    // open/write/close: writeFileSync's first call costs ~0.4 ms more (measured).
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify({ v: 1, identity, input }));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, request);
  } catch {
    removeQuietly(tmp);
    return notAnswered('the spool directory is not writable');
  }

  try {
    return awaitAnswer(server, { request, claimed, answer }, input, hookDeadlineMs('PreToolUse', env));
  } catch (err) {
    // The request is out and may be being decided: whatever failed here, never a second decision.
    return deny(
      `the Latch hook failed while waiting for the resident hook (${(err as Error)?.message ?? String(err)})`,
    );
  }
}

/** Waits for the answer to a request that is out; withdraws it, if it still can, when no answer will come. */
function awaitAnswer(
  server: NamedServer,
  files: { request: string; claimed: string; answer: string },
  input: string,
  deadlineMs: number,
): Asked {
  const { request, claimed, answer } = files;
  const notAnswered = (why: string, start: boolean): Asked => ({ answered: false, input, why, start });
  const t0 = Date.now();
  const deadline = t0 + deadlineMs;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (let look = 1; ; look++) {
    const text = readOrNull(answer);
    if (text !== null) {
      removeQuietly(answer);
      return reply(text, input);
    }
    // Is the resident hook alive? First while it is working on the request (the look costs it
    // nothing then), then every few milliseconds.
    if (look === 1 || look % LIVENESS_EVERY === 0) {
      const now = Date.now();
      const alive = serverAnswers(server);
      if (!alive || now - t0 > CLAIM_MS || now > deadline) {
        // Not claimed yet: withdrawn, and the ordinary hook decides.
        if (removed(request)) return notAnswered(alive ? 'not claimed in time' : 'the resident hook went away', !alive);
        const late = readOrNull(answer);
        if (late !== null) {
          removeQuietly(answer);
          return reply(late, input);
        }
        if (!alive) {
          removeQuietly(claimed);
          return deny('the resident Latch hook stopped while checking this call; retry it');
        }
        if (now > deadline) return deny('the resident Latch hook did not answer in time; retry the call');
      }
    }
    Atomics.wait(sleeper, 0, 0, POLL_MS);
  }
}

/** Writes the resident hook's answer as this hook's reply; a malformed answer is a deny. */
function reply(text: string, input: string): Asked {
  let a: unknown;
  try {
    a = JSON.parse(text);
  } catch {
    return deny('the resident Latch hook gave an unreadable answer');
  }
  const o = a as { stdout?: unknown; stderr?: unknown; exitCode?: unknown; notServed?: unknown };
  if (typeof o !== 'object' || o === null) return deny('the resident Latch hook gave an unreadable answer');
  if (typeof o.notServed === 'string') return { answered: false, input, why: o.notServed, start: false };
  const exitCode = o.exitCode;
  if (
    (o.stdout !== null && typeof o.stdout !== 'string') ||
    (o.stderr !== null && o.stderr !== undefined && typeof o.stderr !== 'string') ||
    (exitCode !== 0 && exitCode !== 2)
  )
    return deny('the resident Latch hook gave an unreadable answer');
  if (typeof o.stderr === 'string' && o.stderr) writeSync(2, o.stderr);
  if (typeof o.stdout === 'string') writeSync(1, `${o.stdout}\n`);
  process.exitCode = exitCode;
  return { answered: true };
}

/** Exit 2 blocks a PreToolUse on every agent Latch supports; the reason goes to the agent on stderr. */
function deny(why: string): Asked {
  process.exitCode = 2;
  try {
    writeSync(2, `Latch blocked this call: ${why}.\n`);
  } catch {
    /* exit 2 blocks without it */
  }
  return { answered: true };
}

function removed(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}

function removeQuietly(path: string): void {
  removed(path);
}
