// The ledger steps of the guard (src/ledger/ledger.ts holds the attempts and their table): a tracked
// call's Start, its Close at PostToolUse, the full observations, and the recovery barrier.
import { mayMutate } from '../session/authority.js';
import { type SessionRow, transition } from '../session/records.js';
import { immediate, type Db } from '../store/store.js';
import { summarizeCall, type Decision, type Observation, type Reason, type ToolCall } from './events.js';
import {
  abandonAttempts,
  attemptId,
  beginClose,
  claimRecovery,
  CLOSE_REASON,
  endClose,
  getAttempt,
  isAlive,
  laneOf,
  markUntimed,
  orphanedClosings,
  selfId,
  staleInLane,
  startAttempt,
  type StartInput,
} from '../ledger/ledger.js';
import { observeByWatcher } from '../watch/client.js';
import type { GuardContext } from './context.js';
import { denyDecision, recordToolDenial, verdictOf } from './decide.js';
import { loadObserver } from './load.js';

/** The ledger's Start of a call of the session. */
function startOf(row: SessionRow, obs: Observation, call: ToolCall, toolUseId: string, summary: string): StartInput {
  return {
    sessionId: row.session_id,
    workspace: row.workspace,
    turnId: obs.turnId,
    agentId: obs.agentId,
    toolName: call.name,
    toolUseId,
    summary,
    kind: call.kind,
  };
}

/**
 * The Start of a tracked call Latch allows, written before the allow is returned. Turn lanes: a
 * Start from a new turn proves the lane's older attempts are over. No Start while a recovery is
 * pending. Returns the Start's time (started_ns), or a deny decision when it cannot be admitted.
 */
export function admitStart(db: Db, row: SessionRow, obs: Observation, call: ToolCall, now: string): Decision | string {
  const refuse = (reason: Reason): Decision => {
    recordToolDenial(db, row, obs, call, [reason], now);
    return denyDecision([reason], row.state);
  };
  if (!call.toolUseId)
    return refuse({
      code: 'no_tool_use_id',
      message: 'The hook payload has no tool_use_id, so Latch cannot record this attempt.',
    });
  if (orphanedClosings(db, row.workspace).length > 0) {
    return refuse({
      code: 'recovery_pending',
      message: 'Latch is recovering an attempt whose hook process died; retry the call in a moment.',
    });
  }
  const stale = staleInLane(db, laneOf(row.session_id, obs.agentId), obs.turnId);
  if (stale.length > 0) abandonAttempts(db, { ids: stale }, 'a later turn started in the same lane', now);
  return startAttempt(db, startOf(row, obs, call, call.toolUseId, summarizeCall(call)), now).attempt.started_ns;
}

export const UNCHECKED_CODE = 'unchecked_call';

/**
 * A tracked call's PostToolUse with no Start on record, in a session the store knew before this hook:
 * the call ran, but its PreToolUse never completed (killed by a signal, past its timeout, or failed:
 * both agents then run the call, docs/hook-failures.md). Latch could not check it, so a session that
 * may mutate is latched until a human verifies (code `unchecked_call`), whatever the policy. Returns
 * the human's notice, or null. Runs inside the caller's transaction.
 */
export function latchUncheckedCall(db: Db, row: SessionRow, call: ToolCall, now: string): string | null {
  if (!call.toolUseId || getAttempt(db, attemptId(row.session_id, call.toolUseId))) return null;
  const what = summarizeCall(call);
  const reason = `${UNCHECKED_CODE}: a call ran without Latch's check (${what}): its PreToolUse hook did not complete (killed, past its timeout, or failed), and the agent runs the call then; a human runs \`latch verify\``;
  if (!mayMutate(row.state))
    return `Latch: a call of this held session ran without Latch's check (${what}): its PreToolUse hook did not complete. Run \`latch verify\` to see what changed.`;
  transition(
    db,
    row,
    'inherit:latched',
    { code: UNCHECKED_CODE, tool_use_id: call.toolUseId, call: what },
    reason,
    now,
  );
  return `Latch: this session is latched: a call ran without Latch's check (${what}); its PreToolUse hook did not complete. Run \`latch verify\`.`;
}

/** PostToolUse: started -> closing (durable), then one observation attributes the changes, -> closed. */
export async function closeAttempt(
  ctx: GuardContext,
  db: Db,
  row: SessionRow,
  obs: Observation,
  call: ToolCall,
): Promise<void> {
  const id = attemptId(row.session_id, call.toolUseId!);
  const owner = selfId();
  const a = immediate(db, () => {
    if (!getAttempt(db, id)) {
      // No Start on record (Latch installed mid-call): record the attempt; its changes cannot be timed.
      startAttempt(
        db,
        startOf(row, obs, call, call.toolUseId!, `${summarizeCall(call)} (no Start recorded)`),
        ctx.now(),
      );
      markUntimed(db, id);
    }
    return beginClose(db, id, owner);
  });
  if (!a || a.state !== 'closing' || a.closer_pid !== owner.pid || a.closer_start !== owner.start) return;
  // A command the read-only classifier accepts cannot change files: its Close skips the workspace
  // scan. Should it have changed something after all, the next observation times that change into
  // this attempt's window [started, closing] like any other (attribution is by time, not by observer).
  if (
    call.kind === 'shell' &&
    a.started_ns !== '0' &&
    (ctx.agent.isRewrittenRead(call.command ?? '') || verdictOf(ctx, obs, call).readOnly)
  ) {
    immediate(db, () => endClose(db, id, ctx.now(), CLOSE_REASON.readOnly));
    return;
  }
  // A ready workspace watcher observes for the Close itself (it holds the journal and compiled code).
  const byWatcher = observeByWatcher(db, ctx.home, row.workspace);
  if (byWatcher === 'done') {
    immediate(db, () => endClose(db, id, ctx.now(), CLOSE_REASON.watcher));
    return;
  }
  const observer = await loadObserver();
  // Synced with the workspace watcher (when one runs), the Close stats only what it journaled; a
  // watcher that just left a request unanswered is not waited for twice (full observation).
  const watch = byWatcher === 'unanswered' ? null : observer.syncWatcher(db, ctx.home, row.workspace);
  immediate(db, () => {
    observer.observeWorkspace(db, row.workspace, 'close', ctx.now(), undefined, { watch });
    endClose(db, id, ctx.now(), CLOSE_REASON.hook);
  });
}

/** A full observation (every file stat'ed: also the safety net for anything a watcher missed). */
export async function observe(ctx: GuardContext, db: Db, workspace: string, by: string): Promise<void> {
  const observer = await loadObserver();
  const sync = by === 'baseline' ? null : observer.syncWatcher(db, ctx.home, workspace);
  immediate(db, () =>
    observer.observeWorkspace(db, workspace, by, ctx.now(), undefined, { watch: sync && { ...sync, full: true } }),
  );
}

/** The recovery barrier: finish the closes whose hook process died, one claim (generation) each. */
export async function recoverOrphans(ctx: Pick<GuardContext, 'now'>, db: Db, workspace: string): Promise<number> {
  const observer = await loadObserver();
  const owner = selfId();
  let done = 0;
  for (const orphan of orphanedClosings(db, workspace)) {
    const won = immediate(db, () => {
      // Re-checked under the write lock: another recoverer may have claimed it since the list was
      // read, and is then the (live) closer; only a dead closer's attempt may be claimed.
      const current = getAttempt(db, orphan.id);
      return (
        !!current &&
        current.state === 'closing' &&
        !isAlive({ pid: current.closer_pid, start: current.closer_start }) &&
        claimRecovery(db, current, owner)
      );
    });
    if (!won) continue;
    immediate(db, () => {
      observer.observeWorkspace(db, workspace, 'recovery', ctx.now());
      endClose(db, orphan.id, ctx.now(), CLOSE_REASON.recovered);
    });
    done++;
  }
  return done;
}
