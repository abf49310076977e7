import { mayMutate, type AuthState } from '../session/authority.js';
import type { ResolvedPolicy } from '../session/policy.js';
import { errorMessage } from '../base/errors.js';
import { classifyCommand, type ClassifyContext, type CommandVerdict } from '../shell/readonly.js';
import { classifierContext, heldShell } from './held.js';
import { recordDenial, REPAIR_CODE, sessionsIn, type SessionRow } from '../session/records.js';
import { type Db } from '../store/store.js';
import { TAMPER_CODE } from '../tamper/types.js';
import { summarizeCall, type Decision, type Observation, type Reason, type ToolCall } from './events.js';
import type { ReadSandbox } from '../agents/agent.js';
import { latchEntry, pageCommand } from '../base/command.js';
import { type ScanResult } from '../session/transcript.js';
import { childProcess } from '../base/lazy.js';
import { latchReadArgs } from './read-shell.js';
import { type Captured, REPLAY_CAP, replayOf } from './replay.js';
import { resolve } from 'node:path';
import { remainingMs } from '../base/deadline.js';
import type { SpawnSyncReturns } from 'node:child_process';

import type { GuardContext } from './context.js';

export const allow = (reasons: Reason[] = [], state: AuthState | null = null): Decision => ({
  verdict: 'allow',
  reasons,
  message: null,
  state,
});

export function denyDecision(reasons: Reason[], state: AuthState | null = null): Decision {
  return { verdict: 'deny', reasons, message: denialText(reasons), state };
}

export function denialText(reasons: Reason[]): string {
  return `Latch blocked this call. ${reasons.map((r) => r.message).join(' ')}`;
}

/** Sessions whose latch covers `row`: itself, and workspace-scoped latches of other sessions. */
export function blockers(db: Db, row: SessionRow): SessionRow[] {
  const out: SessionRow[] = [];
  if (!mayMutate(row.state)) out.push(row);
  for (const other of sessionsIn(db, row.workspace)) {
    if (other.session_id !== row.session_id && other.scope === 'workspace' && !mayMutate(other.state)) out.push(other);
  }
  return out;
}

export function decideTool(
  ctx: GuardContext,
  db: Db,
  row: SessionRow,
  obs: Observation,
  call: ToolCall,
  scan: TranscriptRead,
  held: HeldRead,
  now: string,
  announcements: string | null = null,
): Decision {
  const policy = JSON.parse(row.policy_json) as ResolvedPolicy;
  const reasons: Reason[] = [];
  const transcriptOptional = policy.transcript === 'optional' && !obs.transcriptPath;
  if (scan.problem && !transcriptOptional) {
    reasons.push({
      code: 'transcript_unchecked',
      message: `Latch cannot tell whether the context was compacted: ${scan.problem}.`,
    });
  }
  // A compaction hook's write-ahead announcement that cannot be read may be a compaction not counted.
  if (announcements) {
    reasons.push({
      code: 'compaction_unchecked',
      message: `Latch cannot tell whether the context was compacted: ${announcements}.`,
    });
  }
  for (const s of blockers(db, row)) reasons.push(latchReason(db, s, row));
  if (reasons.length === 0) return allow([], row.state);
  const readOnly =
    readOnlyCall(ctx, obs, call, policy) ??
    (call.kind === 'shell' && held.replayKind === 'sandbox'
      ? { code: 'read_in_sandbox', message: 'It states no write; it ran in Latch’s read-only sandbox.' }
      : null);
  if (readOnly && call.kind === 'shell') {
    const d = sandboxedRead(call, readOnly, held, row.state);
    if (d.verdict !== 'deny') return d;
    // The classifier's read that the held-read rules still refuse (a Latch read not in its exact form).
    reasons.push(...d.reasons);
    recordToolDenial(db, row, obs, call, reasons, now);
    return { ...denyDecision(reasons, row.state), notice: denialNotice(db, row, call, reasons) };
  }
  if (readOnly) return allow([readOnly], row.state);
  if (call.kind === 'network') {
    reasons.push({
      code: 'network_tool',
      message: `\`${call.name}\` reaches the network (a request can trigger remote effects or carry data out), so it does not run while authority is revoked.`,
    });
  }
  if (call.kind === 'unknown') {
    reasons.push({
      code: 'unknown_tool',
      message: `Latch does not know the tool \`${call.name}\` (a newer agent release?); it is treated as able to change files.`,
    });
  }
  if (call.kind === 'shell') {
    // Tell the agent why this command is not one of the reads that stay allowed, so it can re-spell it.
    const why = (held.refused ?? verdictOf(ctx, obs, call, true).reasons[0])?.replace(/\.$/, '');
    if (why)
      reasons.push({ code: 'not_read_only', message: `This command is not a read Latch allows while held: ${why}.` });
  }
  recordToolDenial(db, row, obs, call, reasons, now);
  return { ...denyDecision(reasons, row.state), notice: denialNotice(db, row, call, reasons) };
}

/** Records a denied tool call of the session (the `denials` table: `latch log`, the report). */
export function recordToolDenial(
  db: Db,
  row: SessionRow,
  obs: Observation,
  call: ToolCall,
  reasons: Reason[],
  now: string,
): void {
  recordDenial(
    db,
    {
      session_id: row.session_id,
      turn_id: obs.turnId,
      tool_name: call.name,
      tool_use_id: call.toolUseId,
      summary: summarizeCall(call),
      reasons,
    },
    now,
  );
}

/** What the human is told at a trip (Codex shows `systemMessage` to the user, not the model). */
export function tripNotice(db: Db, row: SessionRow, seq: number): string {
  const cp = latestCheckpoint(db, row.session_id);
  const how =
    row.state === 'paused'
      ? `run \`latch resume\` in ${row.workspace}`
      : `review, then run \`latch verify\` in ${row.workspace}`;
  return `Latch: context compaction #${seq} observed; session ${row.session_id} is ${row.state}${cp ? ` (checkpoint ${cp.id})` : ''}. Its writes are blocked until you ${how}.`;
}

/** What the human is told when a call is denied. */
function denialNotice(db: Db, row: SessionRow, call: ToolCall, reasons: Reason[]): string {
  const held = blockers(db, row);
  const next = held.some((h) => h.state === 'latched')
    ? `review, then run \`latch verify\` in ${row.workspace}`
    : held.length > 0
      ? `run \`latch resume\` in ${row.workspace}`
      : 'run `latch doctor`';
  return `Latch denied ${summarizeCall(call, 80)} (${reasons.map((r) => r.code).join(', ')}). To restore the session's authority: ${next}.`;
}

/** The sandbox for reads while held, or why there is none (then the classifier alone guards them). */
export function readSandbox(ctx: GuardContext): ReadSandbox {
  try {
    return ctx.agent.readSandbox(ctx.home, ctx.env ?? process.env, (bin, args, env) => {
      const r = childProcess().spawnSync(bin, args, {
        env,
        encoding: 'utf8',
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 20_000,
      });
      return { status: r.status, stderr: r.stderr ?? String(r.error ?? '') };
    });
  } catch (err) {
    return { ok: false, why: `the sandbox check failed (${errorMessage(err)})` };
  }
}

/**
 * Latch's own reads (`latch status`, `latch brief --page N`, in any spelling latchReadArgs accepts)
 * need the store, which no read-only sandbox lets SQLite open (its WAL wants the shared-memory file),
 * and `latch` may not be on the agent's PATH at all: the hook runs them itself, with its own node and
 * no shell, and the agent's command becomes a replay of their output (src/guard/replay.ts). Only
 * arguments the classifier accepts as a read of the installed Latch. A brief read without
 * `--session` reads this session's brief.
 */
export function latchReplay(ctx: GuardContext, obs: Observation, call: ToolCall): string | null {
  const entry = latchEntry();
  const args = entry ? latchReadArgs(call.command ?? '', entry) : null;
  if (!entry || !args) return null;
  const canonical = ['node', entry, ...args].join(' ');
  if (!classifyCommand(canonical, { ...classifyContextOf(ctx, obs), gitEnvHardened: true }).readOnly) return null;
  const session = args.some((a) => a === '--session' || a.startsWith('--session='));
  const full = args[0] === 'brief' && !session ? [...args, '--session', obs.sessionId] : args;
  const r = childProcess().spawnSync(process.execPath, [entry, ...full], {
    cwd: obs.cwd,
    env: ctx.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
    maxBuffer: REPLAY_CAP,
  });
  return replayOf(ctx.home, call.typed ?? call.command ?? '', captured(r, 30_000));
}

/**
 * A shell call that is one of Latch's reads in any spelling latchReadArgs accepts, with its command in
 * the spelling the classifier reads (`node <entry> <args>`) and what the agent typed kept in `typed`;
 * any other call as it is.
 */
export function canonicalLatchRead(call: ToolCall): ToolCall {
  if (call.kind !== 'shell' || call.command === null) return call;
  const entry = latchEntry();
  const args = entry ? latchReadArgs(call.command, entry) : null;
  if (!entry || !args) return call;
  const command = ['node', entry, ...args].join(' ');
  return command === call.command ? call : { ...call, command, typed: call.command };
}

/** Is `call` one of Latch's reads (in any spelling latchReadArgs accepts)? */
export function isLatchRead(call: ToolCall): boolean {
  const entry = latchEntry();
  return call.kind === 'shell' && entry !== null && latchReadArgs(call.command ?? '', entry) !== null;
}

/** The longest a held read may run in the hook (it must answer well before the agent's timeout). */
const READ_LIMIT_MS = 60_000;

/**
 * A held read, run by the hook inside the read-only sandbox (Latch's sealed one, bubblewrap + seccomp
 * with `hide` hidden; else Codex's own), outside whatever sandbox the agent runs its commands in,
 * where a nested sandbox could not start. Returns the replay of its output.
 * The caller has had the held-read rules admit the command (heldShell).
 */
export function sandboxedReplay(
  ctx: GuardContext,
  obs: Observation,
  call: ToolCall,
  sb: Extract<ReadSandbox, { ok: true }>,
  hide: readonly string[],
): string {
  const command = call.command ?? '';
  const p = sb.argv(command, ctx.env ?? process.env, hide);
  const limit = Math.max(1_000, Math.min(READ_LIMIT_MS, (remainingMs() ?? READ_LIMIT_MS + 15_000) - 15_000));
  const r = childProcess().spawnSync(p.file, p.args, {
    cwd: obs.cwd,
    env: p.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: limit,
    killSignal: 'SIGKILL',
    maxBuffer: REPLAY_CAP,
  });
  const c = captured(r, limit);
  // A write the classifier could not see failed in the sandbox: say why, once.
  if (c.code !== 0 && !c.note && /Read-only file system/.test(c.stderr.toString('latin1')))
    c.note =
      'this session is held: Latch ran the command in a read-only sandbox, so its writes failed; authority returns after a human runs `latch verify`';
  return replayOf(ctx.home, command, c);
}

/** What a sealed sandbox hides: Latch's home and every protected path (the classifier's list). */
function hiddenPaths(c: ClassifyContext): string[] {
  return [c.latchHome, ...(c.protectedPaths ?? []).map((p) => p.path)];
}

function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** A finished spawnSync as a replay's capture: its streams, its status, and why it is not whole. */
function captured(r: SpawnSyncReturns<Buffer>, limitMs: number): Captured {
  const err = r.error as NodeJS.ErrnoException | undefined;
  const stdout = r.stdout ?? Buffer.alloc(0);
  const stderr = r.stderr ?? Buffer.alloc(0);
  if (err?.code === 'ETIMEDOUT')
    return {
      stdout,
      stderr,
      code: 124,
      note: `the read was stopped after ${Math.round(limitMs / 1000)} s, Latch's limit for a read while held; narrow it`,
    };
  if (err?.code === 'ENOBUFS')
    return { stdout, stderr, code: r.status ?? 1, note: `the output was cut at ${REPLAY_CAP} bytes` };
  if (err) return { stdout, stderr, code: 1, note: `the read could not run (${err.message})` };
  if (r.status === null) return { stdout, stderr, code: 128 + 9, note: `the read ended on ${r.signal ?? 'a signal'}` };
  return { stdout, stderr, code: r.status };
}

/** What a held read needs: the slow parts found before the write lock, the agent's preparation. */
export interface HeldRead {
  /**
   * False when the call was not expected to be held when the slow parts were looked up (the session
   * was latched by this very call's check, or concurrently): the read is denied, to be sent again.
   */
  prepared: boolean;
  sandbox: ReadSandbox | null;
  /** A read the hook already ran: the command that replays its output (src/guard/replay.ts). */
  replay: string | null;
  /** Who ran it: Latch's own read (the hook's node), or the read in the read-only sandbox. */
  replayKind: 'latch' | 'sandbox' | null;
  /** Why the held-read rules refused the call inside the sandbox (null: admitted, or no sandbox). */
  refused: string | null;
  /**
   * Makes what the agent runs around the call safe (Agent.prepareHeldRead: Claude Code's shell
   * snapshots), run for every held read that is about to be allowed, the replayed Latch read
   * included (it runs in the agent's shell too), as the last step before the allow. Null when done;
   * else why not (the read is denied).
   */
  prepare: () => string | null;
  classify: ClassifyContext;
}

/**
 * The slow parts of a held read, looked up before the write lock: a Latch read runs Latch, any other
 * read runs in the read-only sandbox (probed once per binary, ~0.2 s). Both become replays.
 * `runReplay` is the test's seam.
 */
export function heldReadOf(
  ctx: GuardContext,
  obs: Observation,
  call: ToolCall,
  runReplay: (ctx: GuardContext, obs: Observation, call: ToolCall) => string | null = latchReplay,
): HeldRead {
  const classify = classifyContextOf(ctx, obs);
  const latch = runReplay(ctx, obs, call);
  const sandbox = latch === null ? readSandbox(ctx) : null;
  // Inside the sandbox the held-read rules admit more than the strict allowlist (src/guard/held.ts).
  const hide = hiddenPaths(classify);
  // A sandbox hides Latch's files only where none of them holds the working directory.
  const sealed = sandbox?.ok === true && sandbox.sealed && hide.every((p) => !inside(resolve(obs.cwd), p));
  const run = sandbox?.ok ? heldShell(call.command ?? '', classify, { wrap: sandbox.wrap, sealed }) : null;
  const ran = sandbox?.ok && run?.allow ? sandboxedReplay(ctx, obs, call, sandbox, sealed ? hide : []) : null;
  return {
    prepared: true,
    replay: latch ?? ran,
    replayKind: latch !== null ? 'latch' : ran !== null ? 'sandbox' : null,
    refused: run && !run.allow ? (run.reasons[0] ?? null) : null,
    sandbox,
    prepare: () => ctx.agent.prepareHeldRead?.(ctx.env ?? process.env) ?? null,
    classify,
  };
}

/** A shell call not expected to be held: nothing looked up (a held read is then denied, see `prepared`). */
export function unpreparedRead(ctx: GuardContext, obs: Observation): HeldRead {
  return {
    prepared: false,
    replay: null,
    replayKind: null,
    refused: null,
    sandbox: null,
    prepare: () => ctx.agent.prepareHeldRead?.(ctx.env ?? process.env) ?? null,
    classify: classifyContextOf(ctx, obs),
  };
}

/**
 * A read the classifier admits while the session is held, rewritten: inside the agent's read-only
 * sandbox, in a clean shell (no startup file, no pager, no program from git's config). Without a
 * sandbox (none found, or LATCH_SANDBOX=off) the same clean shell runs outside it, guarded by the
 * classifier alone, and the reason says so.
 */
function sandboxedRead(call: ToolCall, readOnly: Reason, held: HeldRead, state: AuthState): Decision {
  const input =
    call.input && typeof call.input === 'object' && !Array.isArray(call.input)
      ? (call.input as Record<string, unknown>)
      : {};
  if (!held.prepared)
    return denyDecision(
      [
        {
          code: 'retry',
          message:
            'The session was latched while this call was being checked; send the read again and it runs in the read-only wrap.',
        },
      ],
      state,
    );
  let d: Decision;
  if (held.replay !== null) {
    const how =
      held.replayKind === 'latch'
        ? { code: 'latch_read', message: 'Latch ran this read itself.' }
        : {
            code: 'sandboxed',
            message: 'Latch ran it in its read-only sandbox; the agent’s command replays the output.',
          };
    d = { ...allow([readOnly, how], state), updatedInput: { ...input, command: held.replay } };
  } else {
    const sb = held.sandbox;
    if (held.refused !== null) return denyDecision([{ code: 'not_read_only', message: held.refused }], state);
    // The same decision the adversarial corpus checks (src/guard/held.ts), on the verdict already made.
    const run = heldShell(call.command ?? '', held.classify, sb?.ok ? { wrap: sb.wrap, sealed: false } : null);
    if (!run.allow) return denyDecision([{ code: 'not_read_only', message: run.reasons[0] ?? 'not a read' }], state);
    const how = run.sandboxed
      ? { code: 'sandboxed', message: 'It runs inside the agent’s read-only sandbox.' }
      : {
          code: 'classifier_only',
          message: `No read-only sandbox (${sb && !sb.ok ? sb.why : 'not checked'}): the classifier alone guards this read.`,
        };
    d = { ...allow([readOnly, how], state), updatedInput: { ...input, command: run.command } };
  }
  // Every held read about to be allowed, whichever way it runs: what the agent runs around it is made
  // safe first (the last step before the allow), or the read is denied.
  const unsafe = held.prepare();
  if (unsafe !== null) return denyDecision([{ code: 'read_unsafe', message: unsafe }], state);
  return d;
}

export function classifyContextOf(ctx: GuardContext, obs: Observation): ClassifyContext {
  // Once per hook (it lists the agent's registration paths): the shortcut, the decision and the held
  // read each ask for it.
  const hit = contexts.get(obs);
  if (hit && hit.ctx === ctx) return hit.value;
  const env = ctx.env ?? process.env;
  const value = classifierContext({
    latchHome: ctx.home,
    cwd: obs.cwd,
    latchEntry: latchEntry(),
    env,
    registration: ctx.agent.registrationPaths(env, obs.cwd),
  });
  contexts.set(obs, { ctx, value });
  return value;
}

const contexts = new WeakMap<Observation, { ctx: GuardContext; value: ClassifyContext }>();

const verdicts = new WeakMap<ToolCall, CommandVerdict>();
const heldVerdicts = new WeakMap<ToolCall, CommandVerdict>();
/**
 * The classifier's verdict on a Bash call, computed once per call, with every path resolved against
 * the payload's cwd and Latch's store, registration and installed files protected. `held`: the call
 * would run with the held-read environment (src/guard/held.ts), which git's verdict relies on, and may
 * run outside any sandbox (the strict verdict). Otherwise (the verdict in every state, and the
 * shortcut's) a recursive reader that passes over a protected path does not touch Latch: it can only
 * read it, which a mutable agent can in any case; naming a protected path still does.
 */
export function verdictOf(ctx: GuardContext, obs: Observation, call: ToolCall, held = false): CommandVerdict {
  const cache = held ? heldVerdicts : verdicts;
  let v = cache.get(call);
  if (!v) {
    v = classifyCommand(call.command ?? '', { ...classifyContextOf(ctx, obs), gitEnvHardened: held, sandboxed: !held });
    cache.set(call, v);
  }
  return v;
}

/** Calls that stay allowed while latched: read-only shell inspection and read-only MCP servers. */
function readOnlyCall(ctx: GuardContext, obs: Observation, call: ToolCall, policy: ResolvedPolicy): Reason | null {
  if (call.kind === 'shell' && verdictOf(ctx, obs, call, true).readOnly) {
    return { code: 'read_only', message: 'Read-only inspection is allowed while latched.' };
  }
  if (call.kind === 'mcp' && call.mcpServer && policy.readOnlyMcpServers.includes(call.mcpServer)) {
    return { code: 'read_only_mcp', message: `MCP server ${call.mcpServer} is configured read-only.` };
  }
  return null;
}

function latestCheckpoint(
  db: Db,
  sessionId: string,
): { id: string; created_at: string; compaction_seq: number } | undefined {
  return db
    .prepare(
      'SELECT id, created_at, compaction_seq FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq DESC, created_at DESC LIMIT 1',
    )
    .get(sessionId) as { id: string; created_at: string; compaction_seq: number } | undefined;
}

/** The reads that stay allowed while held, spelled as the classifier accepts them. */
const READS_STILL_WORK = `reads still work (Latch runs them in its read-only sandbox and replays their output): cat, ls, grep -rn, find, sed -n, \`git status\`, \`git diff\`, \`git log\`, \`latch status\`.`;

function latchReason(db: Db, holder: SessionRow, self: SessionRow): Reason {
  const cp = latestCheckpoint(db, holder.session_id);
  const cpText = cp ? `checkpoint ${cp.id} (compaction #${cp.compaction_seq}, ${cp.created_at})` : 'no checkpoint';
  const whose =
    holder.session_id === self.session_id ? 'This session' : `Session ${holder.session_id} (workspace-scoped latch)`;
  if (holder.state === 'paused') {
    return {
      code: 'paused',
      message: `${whose} is paused since its context was compacted (${cpText}). Writes stay blocked until a human runs \`latch resume\` in ${holder.workspace}. Until then, ${READS_STILL_WORK}`,
    };
  }
  if (holder.state_reason?.startsWith(REPAIR_CODE)) {
    return {
      code: REPAIR_CODE,
      message: `${whose} is latched: Latch's store was repaired after corruption, and the fresh store cannot tell whether this session was latched before, so its authority to change files is revoked. Do not retry; ${READS_STILL_WORK} A human runs \`latch verify\` in ${holder.workspace} to restore it.`,
    };
  }
  const release =
    policyOf(holder).reverify === 'evidence'
      ? `Read every page of the task brief (\`${pageCommand('N')}\`); once all pages are read and the workspace still matches the checkpoint, authority returns by itself (or a human runs \`latch verify\` in ${holder.workspace}).`
      : `Re-read the task brief (\`${pageCommand('N')}\`). A human must run \`latch verify\` in ${holder.workspace} to check the workspace against the checkpoint and restore authority.`;
  // A latch for a registration change made while a call (or its job) ran: no compaction to speak of.
  if (holder.state_reason?.startsWith(TAMPER_CODE))
    return {
      code: 'latched',
      message: `${whose} is latched: Latch's registration changed while an agent's tool call or a job it started ran (${holder.state_reason.slice(0, 300)}). Do not retry; ${READS_STILL_WORK} A human checks the change, re-runs \`latch setup\` if it is theirs, then runs \`latch verify\` in ${holder.workspace}.`,
    };
  return {
    code: 'latched',
    message: `${whose} is latched: its context was compacted (${cpText}), so its picture of the task may be incomplete and its authority to change files is revoked. Do not retry; ${READS_STILL_WORK} ${release}`,
  };
}

/** What SessionStart tells the agent about its authority. */
export function sessionContext(db: Db, row: SessionRow): string | null {
  const held = blockers(db, row);
  if (held.length === 0) return null;
  const lines = [
    'Latch: mutation authority for this session is revoked.',
    ...held.map((s) => latchReason(db, s, row).message),
  ];
  lines.push('Until a human restores authority, only inspect (read-only commands) and report what you would do next.');
  return lines.join('\n');
}

/** What reading the transcript gave this hook: the scan, or why it could not be checked. */
export interface TranscriptRead {
  result: ScanResult | null;
  /** Why the transcript could not be checked (a tracked tool is then denied, unless policy allows). */
  problem: string | null;
  /**
   * The scan continued the session's recorded transcript (`sessions.transcript_path`) from its own
   * scan state, rather than a file the hook named instead, read from its start. Absent: unknown (no).
   */
  ownFile?: boolean;
}

export function policyOf(row: SessionRow): ResolvedPolicy {
  const p = JSON.parse(row.policy_json) as Partial<ResolvedPolicy>;
  return { ...(p as ResolvedPolicy), reverify: p.reverify ?? 'human' };
}
