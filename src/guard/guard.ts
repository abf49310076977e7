// The guard: one agent-neutral core that turns hook observations into records and decisions.
// An agent (src/agents/<name>, the port in src/agents/agent.ts) translates its payloads into an
// Observation + LatchEvent and the Decision back into its reply; the guard asks it, through
// GuardContext.agent, for everything format-specific (transcript, lineage, sandbox, tool outputs).
import { resolve } from 'node:path';
import { compactionEvent, mayMutate } from '../session/authority.js';
import type { WorkspaceEvidence } from '../checkpoint/checkpoint.js';
import type { ResolvedPolicy } from '../session/policy.js';
import { errorMessage } from '../base/errors.js';
import { patchTouchesLatch } from './held.js';
import { guardRegistration, TAMPER_CODE } from './tamper.js';
import { containAfterTrip } from './contain.js';
import {
  getCompaction,
  getSession,
  insertSession,
  hookSeqOf,
  observeCompaction,
  observedAfterRestore,
  recordAnnouncement,
  recordDenial,
  recordedAnnouncements,
  saveScanState,
  scanStateOf,
  SEEN_COLUMN,
  settledByRestore,
  transition,
  type CompactionSource,
  type SessionRow,
} from '../session/records.js';
import { announce, pendingAnnouncements, removeAnnouncements, type AnnouncedSource } from '../session/announce.js';
import { immediate, type Db } from '../store/store.js';
import {
  summarizeCall,
  type Decision,
  type LatchEvent,
  type Observation,
  type Reason,
  type ToolCall,
} from './events.js';
import type { Agent } from '../agents/agent.js';
import {
  abandonAtTurnEnd,
  abandonAttempts,
  attemptId,
  awaitFileClock,
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
  startAttempt,
} from '../ledger/ledger.js';
import { EMPTY_SCAN, type ScanResult, type ScanState } from '../session/transcript.js';
import { observeByWatcher } from '../watch/client.js';

export type { Decision, LatchEvent, Observation, Reason, StartSource, TurnEnd } from './events.js';

type Slow = typeof import('./slow.js');
type Observer = typeof import('../ledger/observer.js');
let slowModule: Promise<Slow> | undefined;
let observerModule: Promise<Observer> | undefined;
/** Loads the slow path once (a separate file in the bundle; see scripts/build.mjs). */
export function loadSlow(): Promise<Slow> {
  return (slowModule ??= import('./slow.js'));
}
/** Loads the observation path once (its own file in the bundle, smaller than the slow path). */
export function loadObserver(): Promise<Observer> {
  return (observerModule ??= import('../ledger/observer.js'));
}

import type { GuardContext } from './context.js';
import {
  allow,
  blockers,
  classifyContextOf,
  decideTool,
  denyDecision,
  heldReadOf,
  policyOf,
  readSandbox,
  sessionContext,
  tripNotice,
  unpreparedRead,
  verdictOf,
  type TranscriptRead,
} from './decide.js';

export type { GuardContext } from './context.js';
export { blockers, denialText, denyDecision } from './decide.js';

/** Handles one event. Throws on internal errors; the adapter turns a throw on a tracked tool into a deny. */
export async function handle(ctx: GuardContext, obs: Observation, ev: LatchEvent): Promise<Decision> {
  if (ev.type === 'pre_tool') {
    const early = preToolShortcut(ctx, obs, ev.call);
    if (early) return early;
  }
  // A compaction hook's first act, before it opens the store: the write-ahead announcement
  // (src/session/announce.ts). Should the store stay locked or this process be killed, the next hook
  // of the session counts it.
  const source = hookSourceOf(ev);
  const own = source
    ? announce(ctx.home, obs.sessionId, source, { trigger: triggerOf(ev), turnId: obs.turnId }, Date.parse(ctx.now()))
    : null;
  const db = ctx.openDb();
  try {
    return await handleWithDb(ctx, db, obs, ev, own && 'id' in own ? own.id : null);
  } finally {
    db.close();
  }
}

function triggerOf(ev: LatchEvent): string | null {
  return ev.type === 'pre_compact' || ev.type === 'post_compact' ? ev.trigger : null;
}

/** Decisions that need no store: untracked tools run; commands that touch Latch itself never do. */
function preToolShortcut(ctx: GuardContext, obs: Observation, call: ToolCall): Decision | null {
  if (call.kind === null) return allow([{ code: 'untracked', message: `${call.name} is a read-only tool.` }]);
  if (call.kind === 'patch') {
    const why = patchTouchesLatch(call.name, call.paths ?? [], classifyContextOf(ctx, obs));
    if (why.length > 0) {
      return denyDecision([
        {
          code: 'touches_latch',
          message: `This patch would change Latch’s own state or registration (${why.slice(0, 2).join('; ')}); only a human may do that, outside the agent.`,
        },
      ]);
    }
  }
  if (call.kind === 'shell') {
    const v = verdictOf(ctx, obs, call);
    if (v.touchesLatch) {
      return denyDecision([
        {
          code: 'touches_latch',
          message: `This command would change or read Latch’s own state or registration (${v.touchReasons.slice(0, 2).join('; ') || 'latch verify/resume/setup, or the Latch state directory'}); only a human may do that, outside the agent.`,
        },
      ]);
    }
  }
  return null;
}

async function handleWithDb(
  ctx: GuardContext,
  db: Db,
  obs: Observation,
  ev: LatchEvent,
  ownAnnouncement: string | null,
): Promise<Decision> {
  let row = getSession(db, obs.sessionId) ?? (await createSession(ctx, db, obs, ev));
  // Tamper evidence: Latch's registration (handlers, trust, feature flags), installed files and the
  // shell startup files against the fingerprint `latch setup` recorded (one lstat each; hashes only
  // when a stat changed). A change latches the workspace's sessions; a tracked call is denied.
  const reg = guardRegistration(db, row.workspace, ctx.now());
  if (reg.latched.length > 0) row = getSession(db, obs.sessionId)!;
  if (ev.type === 'pre_tool' && ev.call.kind !== null && (reg.status === 'tampered' || reg.status === 'error')) {
    const call = ev.call;
    immediate(db, () =>
      recordDenial(
        db,
        {
          session_id: row.session_id,
          turn_id: obs.turnId,
          tool_name: call.name,
          tool_use_id: call.toolUseId,
          summary: summarizeCall(call),
          reasons: reg.reasons,
        },
        ctx.now(),
      ),
    );
    return denyDecision(reg.reasons, row.state);
  }

  // Phase 1, outside any transaction: read the new transcript bytes, and take the workspace
  // evidence if a checkpoint will be needed (the slow part: hashing).
  const scan = readTranscript(ctx, obs, row, ev);
  const hookSource = hookSourceOf(ev);
  // Compactions announced by hooks that did not count them (src/session/announce.ts): this hook
  // counts them, through the same steps as the hook would have, with everything else it records.
  const pending = pendingAnnouncements(ctx.home, row.session_id);
  const counted = recordedAnnouncements(
    db,
    pending.list.map((a) => a.id),
  );
  const toCount = pending.list.filter((a) => !counted.has(a.id));
  const hookObservations: { source: AnnouncedSource; at: string | null }[] = [...toCount];
  if (hookSource && !toCount.some((a) => a.id === ownAnnouncement))
    hookObservations.push({ source: hookSource, at: null });
  const newTranscript = scan.result?.compactions.filter((c) => c.index > row.transcript_compactions) ?? [];
  const needEvidence =
    newTranscript.some((c) => !getCompaction(db, row.session_id, c.index)?.checkpoint_id) ||
    hooksNeedCheckpoint(db, row, hookObservations);
  const tracked = ev.type === 'pre_tool' && ev.call.kind !== null;
  // The recovery barrier: before a tracked call's Start, and at a turn's end (so a stopped session
  // leaves no attempt stuck in `closing` behind a dead closer).
  if ((tracked || ev.type === 'turn_end') && orphanedClosings(db, row.workspace).length > 0)
    await recoverOrphans(ctx, db, row.workspace);
  // The first attempt in a workspace needs a baseline observation: its pre-state.
  if (
    (tracked || ev.type === 'session_start') &&
    !db.prepare('SELECT 1 FROM workspaces WHERE workspace = ?').get(row.workspace)
  ) {
    await observe(ctx, db, row.workspace, 'baseline');
    // From now on a watcher journals what may change, so that a Close need not stat every file.
    (await loadObserver()).ensureWatcher(db, ctx.home, row.workspace);
  }
  const briefOutputs = scan.result?.briefOutputs ?? [];
  const continuity =
    ev.type === 'pre_compact' ||
    toCount.some((a) => a.source !== 'post_compact') ||
    (ev.type === 'session_start' && (ev.source === 'compact' || ev.source === 'resume' || ev.source === 'unknown')) ||
    (ev.type === 'turn_end' && ev.kind === 'stop');
  const slow = needEvidence || continuity || briefOutputs.length > 0 ? await loadSlow() : null;
  const parts = slow ? await ctx.agent.slow() : null;
  const evidence = needEvidence && slow ? slow.collectEvidence(db, row.workspace, null) : null;
  // Read receipts: brief pages the transcript shows the agent read (exit 0, complete, digest ok).
  if (slow && parts && briefOutputs.length > 0)
    immediate(db, () => slow.recordReads(db, row, briefOutputs, ctx.now(), parts));
  // reverify = "evidence": a complete read + a clean workspace + no live attempt give authority back;
  // not while this call has compactions to count (they are counted first; the next call may release).
  if (
    tracked &&
    newTranscript.length === 0 &&
    toCount.length === 0 &&
    !mayMutate(row.state) &&
    policyOf(row).reverify === 'evidence' &&
    !row.state_reason?.startsWith(TAMPER_CODE)
  ) {
    const s = slow ?? (await loadSlow());
    const release = s.evidenceRelease(db, row);
    if (release) {
      immediate(db, () => {
        const current = getSession(db, row.session_id)!;
        if (current.state !== row.state || current.episode_started_at !== row.episode_started_at) return;
        transition(
          db,
          current,
          'verify',
          {
            reverify: 'evidence',
            reads: release.reads,
            checks: release.evidence.checks,
            changes: release.evidence.changes.slice(0, 500),
            baseline: release.evidence.baseline,
            current: release.evidence.current,
          },
          'evidence: brief read completely, workspace checks hold',
          ctx.now(),
        );
      });
      row = getSession(db, obs.sessionId)!;
    }
  }

  // A read allowed while held runs in the agent's read-only sandbox (or is a Latch read the hook runs
  // itself): look those up before the write lock (the first use on a machine probes the sandbox,
  // ~0.2 s). Held also when this very call's check may latch the session (a new boundary in the
  // transcript, a pending announcement): the read is then rewritten like any held read.
  const mayTrip = newTranscript.length > 0 || toCount.some((a) => a.source !== 'pre_compact');
  const heldRead =
    tracked &&
    ev.call.kind === 'shell' &&
    (scan.problem !== null || pending.problem !== null || mayTrip || blockers(db, row).length > 0);
  const held = !tracked ? null : heldRead ? heldReadOf(ctx, obs, ev.call) : unpreparedRead(ctx, obs);
  /** Announcements counted (or found counted) by this hook: removed once its transaction committed. */
  const settled: string[] = [];

  /** The Start written for this PreToolUse's call (nanoseconds), if any. */
  let startedNs: string | null = null;
  /** Compactions this event tripped into a held state: their leftover processes are contained. */
  const contained: number[] = [];
  // Phase 2: apply everything under one write lock. Every step is idempotent against a concurrent hook
  // (compactions are keyed by per-source counters that only grow).
  const decision = immediate<Decision>(db, () => {
    const now = ctx.now();
    row = getSession(db, obs.sessionId)!;
    // Apply this scan unless a concurrent hook already consumed further (a replaced or shrunk file
    // is rescanned from 0: its offset may be smaller, and it must still be applied).
    if (scan.result && (scan.result.reset !== null || scan.result.state.offset >= row.transcript_offset)) {
      for (const c of scan.result.compactions) {
        if (c.index <= row.transcript_compactions) continue;
        const comp = observeCompaction(
          db,
          row.session_id,
          c.index,
          'transcript',
          { transcript_offset: c.endOffset, summary_kind: c.summaryKind, turn_id: obs.turnId },
          now,
        );
        ensureCheckpoint(
          slow,
          db,
          row,
          comp.seq,
          comp.checkpoint_id,
          evidence,
          { path: obs.transcriptPath!, size: c.endOffset },
          obs,
          comp.trigger,
          now,
        );
        // A boundary written after a restore that lands on a compaction the restore settled is not
        // that compaction's late line: it trips again (see hookSeqOf in records.ts); while the
        // session is held anyway, the next restore covers it.
        const again = mayMutate(row.state) && settledByRestore(row, comp) && observedAfterRestore(row, c.at ?? null);
        if (trip(db, row, comp.seq, 'transcript', now, again)) contained.push(comp.seq);
      }
      saveScanState(db, row.session_id, mergeScan(row, scan.result.state), now);
      // The identity a later resume must match: the newest turn identity (main lane only).
      if (scan.result.turnContext && !obs.agentId)
        db.prepare('UPDATE sessions SET identity_json = ? WHERE session_id = ?').run(
          JSON.stringify(scan.result.turnContext),
          row.session_id,
        );
      // A tool output in the transcript while its attempt is still `started`: Codex wrote the result
      // without a PostToolUse (a failed patch, an MCP error, a call another hook denied): a sure signal.
      const ids = scan.result.outputs.map((callId) => attemptId(row.session_id, callId));
      if (ids.length > 0) abandonAttempts(db, { ids }, 'tool output recorded without PostToolUse', now);
      row = getSession(db, obs.sessionId)!;
    }

    /** One hook's observation of a compaction: counted, checkpointed, tripped (PreCompact: no trip). */
    const countHook = (source: AnnouncedSource, at: string | null, trigger: string | null, turnId: string | null) => {
      const { seq, reopen } = hookSeqOf(db, row, source, at);
      const comp = observeCompaction(db, row.session_id, seq, source, { trigger, turn_id: turnId }, now);
      db.prepare(
        `UPDATE sessions SET ${SEEN_COLUMN[source]} = MAX(${SEEN_COLUMN[source]}, ?) WHERE session_id = ?`,
      ).run(seq, row.session_id);
      const path = obs.transcriptPath ?? row.transcript_path;
      const transcript = path && source === 'pre_compact' ? { path, size: null } : null;
      // A PreCompact that takes an abandoned PreCompact's number again takes the checkpoint anew.
      ensureCheckpoint(slow, db, row, seq, reopen ? null : comp.checkpoint_id, evidence, transcript, obs, trigger, now);
      if (source !== 'pre_compact' && trip(db, row, seq, source, now)) contained.push(seq);
      row = getSession(db, obs.sessionId)!;
      // The brief is captured when the compaction is first announced (PreCompact, else SessionStart).
      if (
        slow &&
        parts &&
        (source === 'pre_compact' ||
          (source === 'session_start' && !briefSince(db, row.session_id, comp.first_seen_at)))
      ) {
        slow.captureBrief(db, row, path, now, parts);
      }
      return seq;
    };
    // Announcements first (oldest first; listed again under the write lock, so each is counted once,
    // by a hook that records; when there was none, only by a compaction hook or a tracked call, whose
    // decision must see one that came meanwhile), the hook's own among them; then the hook's own
    // observation if its announcement was not there.
    let ownCounted = false;
    const relist = pending.list.length > 0 || hookSource !== null || tracked;
    const listed = relist ? pendingAnnouncements(ctx.home, row.session_id).list : [];
    const already = recordedAnnouncements(
      db,
      listed.map((a) => a.id),
    );
    for (const a of listed) {
      if (a.id === ownAnnouncement) ownCounted = true;
      settled.push(a.id);
      if (already.has(a.id)) continue;
      const mine = a.id === ownAnnouncement;
      const seq = mine
        ? countHook(a.source, a.at, triggerOf(ev), obs.turnId)
        : countHook(a.source, a.at, a.trigger, a.turnId);
      recordAnnouncement(
        db,
        {
          id: a.id,
          session_id: row.session_id,
          source: a.source,
          announced_at: a.at,
          seq,
          by_own_hook: mine,
        },
        now,
      );
    }
    if (hookSource && !ownCounted) countHook(hookSource, null, triggerOf(ev), obs.turnId);

    switch (ev.type) {
      case 'pre_tool': {
        const d = decideTool(ctx, db, row, obs, ev.call, scan, held!, now, pending.problem);
        // A network tool changes no local file: no attempt (it is only denied while held).
        if (d.verdict !== 'allow' || ev.call.kind === null || ev.call.kind === 'network') return d;
        const admitted = admitStart(db, row, obs, ev.call, now);
        if (typeof admitted !== 'string') return admitted;
        startedNs = admitted;
        return d;
      }
      case 'turn_end': {
        // The calls of the agent whose turn ended (a sub-agent's go at its SubagentStop), all at SessionEnd.
        abandonAtTurnEnd(db, { kind: ev.kind, sessionId: row.session_id, agentId: obs.agentId }, now);
        if (slow && ev.kind === 'stop')
          slow.recordTranscript(db, row, obs.transcriptPath ?? row.transcript_path, scan.result?.turnContext ?? null);
        return { verdict: 'observe', reasons: [], message: null, state: row.state };
      }
      case 'session_start': {
        const status = sessionContext(db, row);
        if (slow && ev.source === 'compact')
          return {
            verdict: 'observe',
            reasons: [],
            message: slow.deliveryText(db, row, status, 'compact', now, 'full'),
            state: row.state,
          };
        if (slow && ev.source === 'unknown') {
          // A source Latch does not know (a newer Codex): it may follow a compaction or a resume, so
          // the full brief is delivered, and the agent and the human are told why.
          const why = `Latch: SessionStart source "${ev.raw ?? '?'}" is not one Latch knows; the full task brief is delivered.`;
          const text = slow.deliveryText(db, row, [why, status].filter(Boolean).join('\n'), 'resume', now, 'full');
          return {
            verdict: 'observe',
            reasons: [{ code: 'unknown_source', message: why }],
            message: text,
            state: row.state,
            notice: why,
          };
        }
        if (slow && parts && ev.source === 'resume') {
          const q = slow.qualify(
            db,
            row,
            {
              session_id: obs.sessionId,
              cwd: obs.cwd,
              model: obs.model,
              permission_mode: obs.permissionMode,
              transcriptPath: obs.transcriptPath,
            },
            now,
            parts,
          );
          return {
            verdict: 'observe',
            reasons: [],
            message: slow.deliveryText(db, row, status, 'resume', now, q.decision),
            state: row.state,
          };
        }
        return { verdict: 'observe', reasons: [], message: status, state: row.state };
      }
      default:
        return { verdict: 'observe', reasons: [], message: null, state: row.state };
    }
  });

  // The announcements this hook counted are in the store now: their files go (src/session/announce.ts).
  if (settled.length > 0) removeAnnouncements(ctx.home, settled);

  // Nothing the agent started before the trip acts after it: its leftover processes (live exec
  // sessions, background jobs, double forks started by its calls) are stopped, then killed, and
  // recorded (src/guard/contain.ts; never throws; its own transaction, after the latch committed).
  for (const seq of contained) containAfterTrip(db, row.session_id, seq, { workspace: row.workspace, now: ctx.now() });
  if (contained.length > 0) decision.notice ??= tripNotice(db, row, contained[contained.length - 1]!);
  // At a compaction, while nothing is waiting on this hook: make sure the read-only sandbox is probed
  // (once per Codex binary) so that the first latched read does not pay for it.
  if (hookSource && !mayMutate(row.state)) readSandbox(ctx);
  // The tool runs once this returns: its writes must be stamped after its Start (see awaitFileClock).
  if (startedNs !== null) awaitFileClock(ctx.home, BigInt(startedNs));
  // Phase 3, after the decision is durable: the ledger's observations (a tree scan each).
  if (ev.type === 'post_tool' && ev.call.kind !== null && ev.call.kind !== 'network' && ev.call.toolUseId)
    await closeAttempt(ctx, db, row, obs, ev.call);
  if (ev.type === 'turn_end' && ev.kind !== 'session_end') await observe(ctx, db, row.workspace, ev.kind);
  return decision;
}

/**
 * The Start of a tracked call Latch allows, written before the allow is returned. Turn lanes: a
 * Start from a new turn proves the lane's older attempts are over. No Start while a recovery is
 * pending. Returns the Start's time (started_ns), or a deny decision when it cannot be admitted.
 */
function admitStart(db: Db, row: SessionRow, obs: Observation, call: ToolCall, now: string): Decision | string {
  const refuse = (reason: Reason): Decision => {
    recordDenial(
      db,
      {
        session_id: row.session_id,
        turn_id: obs.turnId,
        tool_name: call.name,
        tool_use_id: call.toolUseId,
        summary: summarizeCall(call),
        reasons: [reason],
      },
      now,
    );
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
  const lane = laneOf(row.session_id, obs.agentId);
  const stale = (
    db
      .prepare("SELECT id FROM attempts WHERE lane = ? AND state = 'started' AND turn_id IS NOT ? ")
      .all(lane, obs.turnId) as { id: string }[]
  ).map((r) => r.id);
  if (stale.length > 0) abandonAttempts(db, { ids: stale }, 'a later turn started in the same lane', now);
  return startAttempt(
    db,
    {
      sessionId: row.session_id,
      workspace: row.workspace,
      turnId: obs.turnId,
      agentId: obs.agentId,
      toolName: call.name,
      toolUseId: call.toolUseId,
      summary: summarizeCall(call),
      kind: call.kind,
    },
    now,
  ).attempt.started_ns;
}

/** PostToolUse: started -> closing (durable), then one observation attributes the changes, -> closed. */
async function closeAttempt(
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
        {
          sessionId: row.session_id,
          workspace: row.workspace,
          turnId: obs.turnId,
          agentId: obs.agentId,
          toolName: call.name,
          toolUseId: call.toolUseId!,
          summary: summarizeCall(call) + ' (no Start recorded)',
          kind: call.kind,
        },
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
async function observe(ctx: GuardContext, db: Db, workspace: string, by: string): Promise<void> {
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

/** Was a brief version created at or after `since`? */
function briefSince(db: Db, sessionId: string, since: string): boolean {
  return !!db.prepare('SELECT 1 FROM briefs WHERE session_id = ? AND created_at >= ?').get(sessionId, since);
}

function hookSourceOf(ev: LatchEvent): Exclude<CompactionSource, 'transcript'> | null {
  if (ev.type === 'pre_compact') return 'pre_compact';
  if (ev.type === 'post_compact') return 'post_compact';
  if (ev.type === 'session_start' && ev.source === 'compact') return 'session_start';
  return null;
}

function readTranscript(ctx: GuardContext, obs: Observation, row: SessionRow, ev: LatchEvent): TranscriptRead {
  // A sub-agent's hooks carry the root session_id and agent_id, with transcript_path = the sub-agent's
  // own rollout. The session's scan state belongs to the root rollout: scan that one (a sub-agent's
  // compaction arrives through its PreCompact/PostCompact hooks). Scanning the sub-agent's file here
  // would restart it from byte 0 each time and count its compactions again.
  const path = (obs.agentId ? row.transcript_path : null) ?? obs.transcriptPath ?? row.transcript_path;
  if (!path)
    return {
      result: null,
      problem: 'the session has no transcript (transcript_path is null), so compaction cannot be ruled out',
    };
  if (row.transcript_path && resolve(path) !== resolve(row.transcript_path)) {
    // A resumed session may get a new rollout file; the scan then starts over for that file.
    return safeScan(ctx, path, { ...EMPTY_SCAN, compactions: row.transcript_compactions }, row, ev);
  }
  return safeScan(ctx, path, scanStateOf(row), row, ev);
}

function safeScan(ctx: GuardContext, path: string, prev: ScanState, row: SessionRow, ev: LatchEvent): TranscriptRead {
  try {
    return { result: ctx.agent.transcript.scan(path, prev), problem: null };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Codex writes the rollout lazily: a file that never existed holds no compaction yet.
    if (code === 'ENOENT' && prev.dev === null && row.transcript_compactions === 0)
      return { result: null, problem: null };
    void ev;
    return { result: null, problem: `the transcript ${path} cannot be read (${errorMessage(err)})` };
  }
}

function mergeScan(row: SessionRow, st: ScanState): ScanState {
  return { ...st, compactions: Math.max(st.compactions, row.transcript_compactions) };
}

function ensureCheckpoint(
  slow: Slow | null,
  db: Db,
  row: SessionRow,
  seq: number,
  existing: string | null,
  evidence: WorkspaceEvidence | null,
  transcript: { path: string; size: number | null } | null,
  obs: Observation,
  trigger: string | null,
  now: string,
): void {
  if (existing || !evidence || !slow) return;
  let prefix = null;
  if (transcript) {
    try {
      prefix = slow.hashPrefix(transcript.path, transcript.size);
    } catch {
      prefix = null; // recorded as unknown; verify then cannot prove the transcript and says so
    }
  }
  const comp = getCompaction(db, row.session_id, seq)!;
  const cp = slow.checkpointRow(
    { ...evidence, transcript: prefix },
    {
      session_id: row.session_id,
      compaction_seq: seq,
      created_at: now,
      turn_id: obs.turnId,
      trigger: trigger ?? comp.trigger,
      observed_via: comp.observed_via,
      workspace: row.workspace,
      cli_version: row.cli_version,
      model: obs.model ?? row.model,
      permission_mode: obs.permissionMode ?? row.permission_mode,
    },
  );
  slow.insertCheckpoint(db, cp);
  db.prepare('UPDATE compactions SET checkpoint_id = ? WHERE session_id = ? AND seq = ?').run(
    cp.id,
    row.session_id,
    seq,
  );
}

/**
 * The first tripping source of a compaction applies the policy's event; later sources only add to
 * observed_via. True when this trip left the session held (its leftover processes are then contained).
 */
function trip(db: Db, row: SessionRow, seq: number, source: CompactionSource, now: string, again = false): boolean {
  const comp = getCompaction(db, row.session_id, seq)!;
  if (comp.tripped_at && !again) return false;
  db.prepare('UPDATE compactions SET tripped_at = ? WHERE session_id = ? AND seq = ?').run(now, row.session_id, seq);
  const reason = again
    ? `context compaction #${seq} observed again via ${source}, written after authority was restored (checkpoint ${comp.checkpoint_id ?? 'none'})`
    : `context compaction #${seq} observed via ${source} (checkpoint ${comp.checkpoint_id ?? 'none'})`;
  transition(
    db,
    row,
    compactionEvent(row.policy),
    {
      compaction_seq: seq,
      observed_via: source,
      checkpoint_id: comp.checkpoint_id,
      policy: row.policy,
      ...(again ? { again: true } : {}),
    },
    reason,
    now,
  );
  return !mayMutate(getSession(db, row.session_id)!.state);
}

async function createSession(ctx: GuardContext, db: Db, obs: Observation, ev: LatchEvent): Promise<SessionRow> {
  const slow = await loadSlow();
  const workspace = safeWorkspaceRoot(slow, obs.cwd);
  let initial: ScanResult | null = null;
  if (obs.transcriptPath) {
    try {
      initial = ctx.agent.transcript.scan(obs.transcriptPath, EMPTY_SCAN);
    } catch {
      initial = null;
    }
  }
  const meta = initial?.meta ?? null;
  const parentId = meta?.forkedFrom && meta.forkedFrom !== obs.sessionId ? meta.forkedFrom : null;
  const parent = parentId ? getSession(db, parentId) : undefined;
  const policy: ResolvedPolicy = parent
    ? (JSON.parse(parent.policy_json) as ResolvedPolicy)
    : slow.resolvePolicy(ctx.home, workspace);
  // A fork of a session Latch never saw: its inherited history may hold compactions nobody verified.
  const unseen =
    parentId && !parent && obs.transcriptPath
      ? unseenInheritedCompaction(ctx.agent, db, obs.transcriptPath, parentId)
      : null;

  // Compactions already in the transcript when Latch first sees the session. A fork inherits its
  // parent's decisions about them; otherwise the transcript scan will trip on them (fail closed).
  // Hook sources start from the same count so they do not claim those again; a post-compaction hook
  // that creates the session reports the newest of them.
  const c0 = initial?.state.compactions ?? 0;
  const reportsLatest = ev.type === 'post_compact' || (ev.type === 'session_start' && ev.source === 'compact');
  const hookBase = reportsLatest ? Math.max(0, c0 - 1) : c0;
  return immediate(db, () => {
    const now = ctx.now();
    const created = insertSession(
      db,
      {
        session_id: obs.sessionId,
        agent: ctx.agent.name,
        workspace,
        cwd: obs.cwd,
        policy,
        parent_session_id: parentId,
        agent_id: obs.agentId,
        transcript_path: obs.transcriptPath,
        cli_version: meta?.cliVersion ?? null,
        model: obs.model,
        permission_mode: obs.permissionMode,
        hookBaseline: { pre: hookBase, post: hookBase, start: hookBase },
      },
      now,
    );
    const row = getSession(db, obs.sessionId)!;
    if (created && parent && initial) {
      // The parent's compactions were the parent's to verify: count them as seen, inherit its state.
      saveScanState(db, row.session_id, initial.state, now);
      if (!mayMutate(parent.state)) {
        transition(
          db,
          row,
          parent.state === 'paused' ? 'inherit:paused' : 'inherit:latched',
          { parent_session_id: parent.session_id },
          `forked from ${parent.state} session ${parent.session_id}`,
          now,
        );
      }
    }
    if (created && unseen && policy.policy !== 'continue') {
      transition(
        db,
        row,
        policy.policy === 'pause' ? 'inherit:paused' : 'inherit:latched',
        { parent_session_id: parentId, ancestor_session_id: unseen.ancestor },
        `forked from session ${parentId}: ${unseen.detail}`,
        now,
      );
    }
    return getSession(db, obs.sessionId)!;
  });
}

/**
 * Why a fork of a session Latch never saw must start latched, or null. A fork's history may live in
 * its parent's transcript (the agent's reader says up to where: TranscriptReader.inheritedEnd).
 * Walks up through unseen ancestors and counts the compactions in each inherited prefix; an
 * ancestor Latch knows decides by its own state. Unreadable or missing history counts (fail closed).
 */
function unseenInheritedCompaction(
  agent: Agent,
  db: Db,
  forkTranscript: string,
  parentId: string,
): { ancestor: string; detail: string } | null {
  let child = forkTranscript;
  let id: string | null = parentId;
  for (let depth = 0; id !== null && depth < 32; depth++) {
    const cur: string = id;
    const known = getSession(db, cur);
    if (known)
      return mayMutate(known.state)
        ? null
        : { ancestor: cur, detail: `its history comes from session ${cur}, which is ${known.state}` };
    const what = `the history it inherits from session ${cur}, which Latch never saw,`;
    try {
      const end = agent.transcript.inheritedEnd(child);
      const path = agent.transcript.find(child, cur);
      if (!path)
        return { ancestor: cur, detail: `${what} cannot be checked for compaction (its transcript was not found)` };
      const scan = agent.transcript.scan(path, EMPTY_SCAN);
      const n = scan.compactions.filter((c) => end === null || c.endOffset <= end).length;
      if (n > 0) return { ancestor: cur, detail: `${what} contains ${n} context compaction(s) that no one verified` };
      child = path;
      id = scan.meta?.forkedFrom && scan.meta.forkedFrom !== cur ? scan.meta.forkedFrom : null;
    } catch (err) {
      return { ancestor: cur, detail: `${what} cannot be checked for compaction (${errorMessage(err)})` };
    }
  }
  return null;
}

function safeWorkspaceRoot(slow: Slow, cwd: string): string {
  try {
    return slow.workspaceRoot(cwd);
  } catch {
    return resolve(cwd);
  }
}

/** Would the hook observations need a checkpoint (phase 1: the evidence is taken before the lock)? */
function hooksNeedCheckpoint(
  db: Db,
  row: SessionRow,
  items: readonly { source: AnnouncedSource; at: string | null }[],
): boolean {
  const sim = { ...row };
  return items.some((it) => {
    const { seq, reopen } = hookSeqOf(db, sim, it.source, it.at);
    sim[SEEN_COLUMN[it.source]] = Math.max(sim[SEEN_COLUMN[it.source]], seq);
    return reopen || !getCompaction(db, row.session_id, seq)?.checkpoint_id;
  });
}
