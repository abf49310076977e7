// The hook hot path: `latch hook <agent> [--event NAME]`. Reads one payload on stdin, replies on stdout.
// Fails closed: any internal error on a tracked tool's PreToolUse becomes a deny (the agents fail OPEN
// on crashes, timeouts and invalid output, so this function must always produce a valid reply).
import { readFileSync, writeSync } from 'node:fs';
import type { Agent, HookReply } from './agents/agent.js';
import { AGENT_NAMES, loadAgent } from './agents/index.js';
import { handle } from './guard/guard.js';
import { errorMessage, isLatchError } from './base/errors.js';
import { latchHome } from './base/paths.js';
import { hookDeadlineMs, setDeadline } from './base/deadline.js';
import { isAddonProblem, thisNode } from './store/addon.js';
import { isoTime } from './base/clock.js';
import { type Db, openStore } from './store/store.js';
import { takeHandoff } from './resident/handoff.js';
import { startResident } from './resident/start.js';

/** One hook of `agent`: its payload (stdin) in, its reply out. Never throws. */
export async function runHook(
  agent: Agent,
  stdin: string,
  expectedEvent: string | null,
  env: NodeJS.ProcessEnv = process.env,
  opts: { resident?: boolean; store?: { open(home: string): Db; close(db: Db): void } } = {},
): Promise<HookReply> {
  const parsed = agent.parse(stdin);
  const eventName = parsed.ok ? parsed.eventName : (parsed.eventName ?? expectedEvent);
  const isPreTool = eventName === 'PreToolUse' || expectedEvent === 'PreToolUse';
  const failure = (why: string): HookReply => {
    if (!isPreTool) return { stdout: null, exitCode: 0, stderr: `latch: ${why}\n` };
    const toolName = parsed.ok ? (parsed.event?.type === 'pre_tool' ? parsed.event.call.name : null) : parsed.toolName;
    // Tools the agent knows to be read-only keep working whatever is wrong with Latch.
    if (toolName && agent.classifyTool(toolName, null, null).kind === null)
      return { stdout: null, exitCode: 0, stderr: `latch: ${why}\n` };
    return agent.deny(
      `Latch blocked this call because it could not check it (fail closed): ${why}. A human should run \`latch doctor\`.`,
    );
  };
  if (!parsed.ok) return failure(parsed.error);
  if (!parsed.event) return { stdout: null, exitCode: 0 };
  try {
    setDeadline(hookDeadlineMs(eventName, env));
    const home = latchHome(env);
    const decision = await handle(
      {
        home,
        openDb: () =>
          opts.store ? opts.store.open(home) : openStore(home, { create: false, busyTimeoutMs: busyTimeout(env) }),
        closeDb: opts.store?.close,
        now: () => isoTime(),
        env,
        agent,
        resident: opts.resident,
      },
      parsed.obs,
      parsed.event,
    );
    return agent.reply(parsed.eventName, decision);
  } catch (err) {
    // The resident hook's "not mine": its client runs this hook in a process of its own instead.
    if (isLatchError(err, 'E_NOT_SERVED')) throw err;
    return failure(describeFailure(err));
  } finally {
    // The deadline is this hook's: a process that goes on (the resident hook, a test running hooks in
    // process) must not find it stale later, when git or a tree walk would fail at once.
    setDeadline(null);
  }
}

function describeFailure(err: unknown): string {
  if (isLatchError(err, 'E_DEADLINE')) return `Latch ${err.message}`;
  if (isLatchError(err, 'E_STORE'))
    return isAddonProblem(err.message)
      ? `the Latch state store cannot open: its SQLite addon was not built for this Node (${thisNode()}; a Node upgrade?)`
      : `the Latch state store is unusable: ${err.message}`;
  if (isLatchError(err, 'E_CONFIG')) return `the Latch configuration is invalid: ${err.message}`;
  const code = (err as { code?: unknown }).code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED')
    return `the Latch state store is locked by another process (waited too long): ${errorMessage(err)}`;
  if (typeof code === 'string' && code.startsWith('SQLITE_'))
    return `the Latch state store failed (${code}): ${errorMessage(err)}`;
  return `internal error: ${errorMessage(err)}`;
}

/** LATCH_BUSY_TIMEOUT_MS: how long a hook waits for the store's write lock before denying (default 5000). */
export function busyTimeout(env: NodeJS.ProcessEnv): number {
  const n = Number(env.LATCH_BUSY_TIMEOUT_MS);
  return Number.isInteger(n) && n >= 0 && n <= 60_000 ? n : 5000;
}

/** Process entry for the hook. Exit 2 with a reason on stderr if even writing the reply fails. */
export async function hookMain(argv: string[]): Promise<void> {
  const name = argv[0];
  const evIdx = argv.indexOf('--event');
  const expected = evIdx >= 0 ? (argv[evIdx + 1] ?? null) : null;
  try {
    const agent = await loadAgent(name);
    if (!agent) {
      process.stderr.write(
        `latch hook: unknown agent ${name ?? '(none)'}; expected one of: ${AGENT_NAMES.map(
          (a) => `\`latch hook ${a}\``,
        ).join(', ')}\n`,
      );
      process.exitCode = blocksOnFailure(expected);
      return;
    }
    // dist/latch.cjs may have read stdin already, for the resident hook that did not answer.
    const handed = takeHandoff();
    let input = handed?.input ?? '';
    if (!handed) {
      try {
        input = readFileSync(0, 'utf8');
      } catch {
        input = '';
      }
    }
    const reply = await runHook(agent, input, expected);
    if (reply.stderr) process.stderr.write(reply.stderr);
    if (reply.stdout !== null) writeSync(1, reply.stdout + '\n');
    process.exitCode = reply.exitCode;
    // None serves this hook's identity: one starts now, for the next PreToolUse (src/resident/).
    if (handed?.startResident && name) startResident(name);
  } catch (err) {
    process.stderr.write(`Latch blocked this call: internal error (${errorMessage(err)})\n`);
    process.exitCode = blocksOnFailure(expected);
  }
}

/** `runHook` for Codex (the tests' entry; `latch hook codex`). */
export function runCodexHook(
  stdin: string,
  expectedEvent: string | null,
  env: NodeJS.ProcessEnv = process.env,
): Promise<HookReply> {
  return loadAgent('codex').then((codex) => runHook(codex!, stdin, expectedEvent, env));
}

/**
 * The exit code for a failure before any payload was read: 2 (block) for a tool hook or when the event
 * is not known; 0 for the others, where exit 2 would mean something else (on Stop: keep the turn going).
 */
function blocksOnFailure(expectedEvent: string | null): 0 | 2 {
  return expectedEvent === null || expectedEvent === 'PreToolUse' ? 2 : 0;
}
