// The guard: one agent-neutral core that turns hook observations into records and decisions.
// An agent (src/agents/<name>, the port in src/agents/agent.ts) translates its payloads into an
// Observation + LatchEvent and the Decision back into its reply; the guard asks it, through
// GuardContext.agent, for everything format-specific (transcript, lineage, sandbox, tool outputs).
// This file keeps the flow: the compaction counting is in compaction.ts, the ledger steps in attempts.ts.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { mayMutate } from '../session/authority.js';
import type { ResolvedPolicy } from '../session/policy.js';
import { errorMessage, NotServedError } from '../base/errors.js';
import { patchTouchesLatch } from './held.js';
import { guardRegistration, TAMPER_CODE } from '../tamper/index.js';
import {
  changeOrigin,
  containAfterTrip,
  enrollAgent,
  recordedSessionAgent,
  recordSessionAgent,
} from '../contain/index.js';
import { recordedResidents } from '../resident/list.js';
import {
  getSession,
  insertSession,
  lastRepair,
  REPAIR_CODE,
  saveScanState,
  transition,
  type SessionRow,
} from '../session/records.js';
import { announce, removeAnnouncements } from '../session/announce.js';
import { immediate, type Db } from '../store/store.js';
import type { Decision, LatchEvent, Observation, ToolCall } from './events.js';
import type { Agent } from '../agents/agent.js';
import { abandonAtTurnEnd, awaitFileClock, hasBaseline, orphanedClosings, settleEnds } from '../ledger/ledger.js';
import { EMPTY_SCAN, type ScanResult } from '../session/transcript.js';
import { loadObserver, loadSlow, type Slow } from './load.js';
import { admitStart, closeAttempt, latchUncheckedCall, observe, recoverOrphans } from './attempts.js';
import {
  applyTranscript,
  countHookObservations,
  hookSourceOf,
  planCompactions,
  readTranscript,
  triggerOf,
  type CompactionPlan,
  type Counting,
} from './compaction.js';
import type { TranscriptRead } from './decide.js';

export type { Decision, LatchEvent, Observation, Reason, StartSource, TurnEnd } from './events.js';
export { loadObserver, loadSlow } from './load.js';
export { recoverOrphans } from './attempts.js';

import type { GuardContext } from './context.js';
import {
  allow,
  blockers,
  classifyContextOf,
  decideTool,
  denyDecision,
  heldReadOf,
  canonicalLatchRead,
  isLatchRead,
  latchReplay,
  policyOf,
  readSandbox,
  recordToolDenial,
  sessionContext,
  tripNotice,
  unpreparedRead,
  verdictOf,
} from './decide.js';

export type { GuardContext } from './context.js';
export { blockers, denialText, denyDecision } from './decide.js';

/** Handles one event. Throws on internal errors; the adapter turns a throw on a tracked tool into a deny. */
export async function handle(ctx: GuardContext, obs: Observation, event: LatchEvent): Promise<Decision> {
  // Latch's reads, in any spelling, are read as one (the classifier's), and the hook runs them itself.
  const ev =
    event.type === 'pre_tool' || event.type === 'post_tool'
      ? { ...event, call: canonicalLatchRead(event.call) }
      : event;
  const latchRead = ev.type === 'pre_tool' && isLatchRead(ev.call);
  if (ctx.resident) {
    residentGate(ctx, obs, ev);
    // It runs Latch in a process of its own: the ordinary hook's work.
    if (latchRead) throw new NotServedError('a Latch read');
  }
  if (ev.type === 'pre_tool') {
    const early = preToolShortcut(ctx, obs, ev.call);
    if (early) {
      if (early.verdict === 'deny') await recordEarlyDenial(ctx, obs, ev, early);
      return early;
    }
  }
  const d = await handleEvent(ctx, obs, ev);
  // A Latch read allowed while the session may mutate runs in the hook too: in the agent's shell it
  // could find no `latch`, or (inside the agent's sandbox) no writable store.
  if (latchRead && ev.type === 'pre_tool' && d.verdict === 'allow' && !d.updatedInput) {
    const replay = latchReplay(ctx, obs, ev.call);
    const input =
      ev.call.input && typeof ev.call.input === 'object' && !Array.isArray(ev.call.input)
        ? (ev.call.input as Record<string, unknown>)
        : {};
    if (replay !== null) return { ...d, updatedInput: { ...input, command: replay } };
  }
  return d;
}

/**
 * The out-of-band look (issue 29.2, src/watch/sentry.ts): what the session's next hook would count of
 * its transcript and its pending announcements, counted now by a Latch process that is not the agent's
 * hook, so that a compaction trips and is contained even when a job of the agent kills every hook.
 * Counting only: no session is created, no agent enrolled, no registration checked, no ledger step.
 * Containment starts from the agent process the session's hooks recorded (session_agents). Throws on
 * internal errors (the caller logs and tries again).
 */
export async function probeSession(ctx: GuardContext, sessionId: string): Promise<Decision> {
  const db = ctx.openDb();
  try {
    const row = getSession(db, sessionId);
    if (!row) return { verdict: 'observe', reasons: [], message: null, state: null };
    const obs: Observation = {
      sessionId,
      turnId: null,
      cwd: row.cwd,
      transcriptPath: row.transcript_path,
      model: row.model,
      permissionMode: row.permission_mode,
      agentId: null,
    };
    return await handleWithDb(ctx, db, obs, { type: 'probe' }, null);
  } finally {
    release(ctx, db);
  }
}

/**
 * A denial the shortcut made without the store is recorded like any other (status, report and the
 * rollout cross-check count it); a session the store has not seen yet is created first, as its first
 * hook would have. Best effort: the call is denied whether or not the record lands.
 */
async function recordEarlyDenial(
  ctx: GuardContext,
  obs: Observation,
  ev: LatchEvent & { type: 'pre_tool' },
  d: Decision,
): Promise<void> {
  try {
    const db = ctx.openDb();
    try {
      const row = getSession(db, obs.sessionId) ?? (await createSession(ctx, db, obs, ev));
      immediate(db, () => recordToolDenial(db, row, obs, ev.call, d.reasons, ctx.now()));
    } finally {
      release(ctx, db);
    }
  } catch {
    // the store is unavailable: the call is denied all the same
  }
}

async function handleEvent(ctx: GuardContext, obs: Observation, ev: LatchEvent): Promise<Decision> {
  // A compaction hook's first act, before it opens the store: the write-ahead announcement
  // (src/session/announce.ts). Should the store stay locked or this process be killed, the next hook
  // of the session counts it.
  const source = hookSourceOf(ev);
  const own = source
    ? announce(ctx.home, obs.sessionId, source, { trigger: triggerOf(ev), turnId: obs.turnId }, Date.parse(ctx.now()))
    : null;
  return handleAnnounced(ctx, obs, ev, own && 'id' in own ? own.id : null);
}

/**
 * The rest of a hook after its announcement (`own`: its file's name, or null when it could not write
 * one). Exported for the tests that put another process's count between the two.
 */
export async function handleAnnounced(
  ctx: GuardContext,
  obs: Observation,
  ev: LatchEvent,
  own: string | null,
): Promise<Decision> {
  const db = ctx.openDb();
  try {
    return await handleWithDb(ctx, db, obs, ev, own);
  } finally {
    release(ctx, db);
    // A window this hook ended (a Close, an Abandon): what anyone changes from now on is stamped after it.
    settleEnds(ctx.home);
  }
}

/**
 * The resident hook's first look, before the classifier: a session it does not know or that may not
 * mutate is the ordinary hook's at once (a latched read costs the round trip only). handleWithDb
 * looks again under the write lock.
 */
function residentGate(ctx: GuardContext, obs: Observation, ev: LatchEvent): void {
  if (ev.type !== 'pre_tool') throw new NotServedError(`a ${ev.type} event`);
  const db = ctx.openDb();
  try {
    const row = getSession(db, obs.sessionId);
    if (!row) throw new NotServedError('a session seen for the first time');
    if (!mayMutate(row.state)) throw new NotServedError(`a ${row.state} session`);
  } finally {
    release(ctx, db);
  }
}

/** Done with the store: closed, or kept by the resident hook (GuardContext.closeDb). */
function release(ctx: GuardContext, db: Db): void {
  if (ctx.closeDb) ctx.closeDb(db);
  else db.close();
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

/** What the human sees (Codex's and Claude Code's `systemMessage`) when a hook latched for a registration change. */
function registrationNotice(reasons: { message: string }[]): string {
  const first = reasons[0]?.message ?? 'Latch’s registration changed since it was recorded.';
  const last = reasons.length > 1 ? ` ${reasons[reasons.length - 1]!.message}` : '';
  return `Latch: ${first}.${last}`;
}

async function handleWithDb(
  ctx: GuardContext,
  db: Db,
  obs: Observation,
  ev: LatchEvent,
  ownAnnouncement: string | null,
): Promise<Decision> {
  const known = getSession(db, obs.sessionId);
  if (ctx.resident && !known) throw new NotServedError('a session seen for the first time');
  // An out-of-band look counts what a known session's transcript shows; it creates nothing.
  const probing = ev.type === 'probe';
  if (probing && !known) return { verdict: 'observe', reasons: [], message: null, state: null };
  let row = known ?? (await createSession(ctx, db, obs, ev));
  // The agent into a cgroup of Latch's own, at its first ordinary hook (a SessionStart comes first), so
  // that a trip's containment can freeze every process it started since (src/contain/cgroup.ts),
  // and its identity recorded for the session (a containment run by the watcher starts from it).
  // A PreToolUse of a session whose agent is recorded only looks when this hook was not born in such
  // a group (one read of its own cgroup).
  if (!ctx.resident && (ev.type === 'session_start' || ev.type === 'pre_tool')) {
    const recorded = recordedSessionAgent(db, row.session_id);
    const { agent, group } = enrollAgent(
      { unlessBornInGroup: ev.type === 'pre_tool' && recorded !== undefined },
      ctx.env,
    );
    if (agent) recordSessionAgent(db, row.session_id, agent, ctx.now(), 'dir' in group ? group.dir : null, recorded);
  }
  // Tamper evidence: Latch's registration (handlers, trust, feature flags), installed files and the
  // shell startup files against the fingerprint `latch setup` recorded (one lstat each; hashes only
  // when a stat changed). A change latches the workspace's sessions; a tracked call is denied.
  // A change no tool call (nor a job of one) could have made is the human's: it latches nothing.
  // (An out-of-band look leaves that to the hooks: it has no call to deny and no human to tell.)
  const reg = probing
    ? null
    : guardRegistration(db, row.workspace, ctx.now(), {
        resident: ctx.resident === true,
        originOf: (paths) => changeOrigin(db, paths, { spare: recordedResidents(ctx.home) }),
      });
  if (reg && reg.latched.length > 0) row = getSession(db, obs.sessionId)!;
  // The hook that finds the change tells the human at once, whatever its event: a handler switched
  // off (Codex's /hooks) is otherwise seen only at the next denied call, if ever.
  const tamperNotice = reg && (reg.latched.length > 0 || reg.fresh) ? registrationNotice(reg.reasons) : undefined;
  if (reg && ev.type === 'pre_tool' && ev.call.kind !== null && (reg.status === 'tampered' || reg.status === 'error')) {
    const call = ev.call;
    immediate(db, () => recordToolDenial(db, row, obs, call, reg.reasons, ctx.now()));
    const d = denyDecision(reg.reasons, row.state);
    return tamperNotice ? { ...d, notice: tamperNotice } : d;
  }

  // Phase 1, outside any transaction: read the new transcript bytes, and take the workspace
  // evidence if a checkpoint will be needed (the slow part: hashing).
  const scan = readTranscript(ctx, obs, row, ev);
  const hookSource = hookSourceOf(ev);
  const { pending, toCount, newTranscript, needEvidence, mayTrip } = planCompactions(
    ctx,
    db,
    row,
    ev,
    scan,
    ownAnnouncement,
  );
  const tracked = ev.type === 'pre_tool' && ev.call.kind !== null;
  // An out-of-band look with nothing to count takes no write lock (it runs at every transcript change;
  // the session's hooks save the scan's position as they go).
  if (probing && newTranscript.length === 0 && pending.list.length === 0)
    return { verdict: 'observe', reasons: [], message: null, state: row.state };
  if (ctx.resident) {
    const why = notServed(db, row, scan, pending, newTranscript.length, needEvidence || mayTrip);
    if (why) throw new NotServedError(why);
  }
  // The recovery barrier: before a tracked call's Start, and at a turn's end (so a stopped session
  // leaves no attempt stuck in `closing` behind a dead closer).
  if ((tracked || ev.type === 'turn_end') && orphanedClosings(db, row.workspace).length > 0)
    await recoverOrphans(ctx, db, row.workspace);
  // The first attempt in a workspace needs a baseline observation: its pre-state.
  if ((tracked || ev.type === 'session_start') && !hasBaseline(db, row.workspace)) {
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
    !row.state_reason?.startsWith(TAMPER_CODE) &&
    !row.state_reason?.startsWith(REPAIR_CODE)
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
  // (The resident hook got here only when none of these hold: notServed.)
  const heldRead =
    tracked &&
    ev.call.kind === 'shell' &&
    !ctx.resident &&
    (scan.problem !== null || pending.problem !== null || mayTrip || blockers(db, row).length > 0);
  const held = !tracked ? null : heldRead ? heldReadOf(ctx, obs, ev.call) : unpreparedRead(ctx, obs);
  /** Announcements counted (or found counted) by this hook: removed once its transaction committed. */
  const settled: string[] = [];

  /** The Start written for this PreToolUse's call (nanoseconds), if any. */
  let startedNs: string | null = null;
  /** Compactions this event tripped into a held state: their leftover processes are contained. */
  const contained: number[] = [];
  /** This PostToolUse latched the session for a call that ran unchecked: contained too. */
  let uncheckedTrip = false;
  // Phase 2: apply everything under one write lock. Every step is idempotent against a concurrent hook
  // (compactions are keyed by per-source counters that only grow).
  const decision = immediate<Decision>(db, () => {
    const now = ctx.now();
    row = getSession(db, obs.sessionId)!;
    // The compactions this hook observed: the transcript's new boundaries, then the announcements and
    // the hook's own observation (src/guard/compaction.ts).
    const counting: Counting = { ctx, db, obs, ev, slow, parts, evidence, now, row, contained, settled };
    applyTranscript(counting, scan);
    // What the listing under the lock found wrong (the directory swapped meanwhile) decides too.
    const relistProblem = countHookObservations(counting, pending, ownAnnouncement, tracked);
    row = counting.row;
    // A hook of the agent's own latched the session since notServed looked: rolled back, and the
    // ordinary hook decides (a held read needs the agent's process: its sandbox, its ancestry).
    if (ctx.resident && (!mayMutate(row.state) || relistProblem !== null || contained.length > 0 || settled.length > 0))
      throw new NotServedError('the session changed while the resident hook looked');

    switch (ev.type) {
      case 'pre_tool': {
        const d = decideTool(ctx, db, row, obs, ev.call, scan, held!, now, relistProblem ?? pending.problem);
        // A network tool changes no local file: no attempt (it is only denied while held).
        if (d.verdict !== 'allow' || ev.call.kind === null || ev.call.kind === 'network') return d;
        const admitted = admitStart(db, row, obs, ev.call, now);
        if (typeof admitted !== 'string') return admitted;
        startedNs = admitted;
        return d;
      }
      case 'post_tool': {
        // A call of a session the store knew ran with no Start: its PreToolUse never completed.
        const call = ev.call;
        const wasMutable = mayMutate(row.state);
        const notice =
          known && call.kind !== null && call.kind !== 'network' ? latchUncheckedCall(db, row, call, now) : null;
        // What the agent left running may be what killed the hook: contained as at a trip.
        if (wasMutable && !mayMutate(row.state)) uncheckedTrip = true;
        return { verdict: 'observe', reasons: [], message: null, state: row.state, ...(notice ? { notice } : {}) };
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
  // recorded (src/contain/index.ts; never throws; its own transaction, after the latch committed).
  // Only what is provably the agent's is signalled: its descendants, and orphans carrying its
  // session's mark (ctx.agent.sessionMarks); any other orphan of a window is listed for the human.
  for (const seq of contained)
    containAfterTrip(db, row.session_id, seq, {
      workspace: row.workspace,
      now: ctx.now(),
      marks: ctx.agent.sessionMarks,
      recordedAgent: probing,
    });
  if (uncheckedTrip)
    containAfterTrip(db, row.session_id, row.transcript_compactions, {
      workspace: row.workspace,
      now: ctx.now(),
      marks: ctx.agent.sessionMarks,
    });
  if (contained.length > 0) decision.notice ??= tripNotice(db, row, contained[contained.length - 1]!);
  if (tamperNotice) decision.notice ??= tamperNotice;
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
 * Why the resident hook leaves this PreToolUse to an ordinary hook process, or null: everything that
 * would count a compaction, trip, contain, recover an attempt, take a baseline, release by evidence or
 * prepare a held read happens in a process of the agent's own, as it always did. Checked before the
 * first write.
 */
function notServed(
  db: Db,
  row: SessionRow,
  scan: TranscriptRead,
  pending: CompactionPlan['pending'],
  newInTranscript: number,
  mayTrip: boolean,
): string | null {
  if (!mayMutate(row.state)) return `a ${row.state} session`;
  if (scan.problem !== null || pending.problem !== null) return 'a transcript or announcement problem';
  if (pending.list.length > 0 || newInTranscript > 0 || mayTrip) return 'a compaction to count';
  if ((scan.result?.briefOutputs.length ?? 0) > 0) return 'brief pages to record';
  if (blockers(db, row).length > 0) return 'a session with blockers';
  if (orphanedClosings(db, row.workspace).length > 0) return 'an attempt to recover';
  if (!hasBaseline(db, row.workspace)) return 'a workspace without a baseline';
  return null;
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
  // A store repaired after corruption does not know which sessions were latched (src/store/repair.ts).
  const repair = lastRepair(db);
  const repairLatch =
    repair && !provablyNew(obs, ev, repair.repaired_at, parentId, parent !== undefined, initial)
      ? `${REPAIR_CODE}: Latch's store was repaired after corruption (${repair.repaired_at}) and cannot tell whether this session was latched before it; a human runs \`latch verify\``
      : null;
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
    // Whatever the policy (it cannot say what the lost store held), and over any other latch, so that
    // only `latch verify` releases it (never the evidence release, which the reason rules out).
    if (created && repairLatch) {
      const reason = row.state === 'latched' ? `${repairLatch} (latched before: ${row.state_reason})` : repairLatch;
      transition(db, row, 'inherit:latched', { code: REPAIR_CODE, repaired_at: repair!.repaired_at }, reason, now);
    }
    return getSession(db, obs.sessionId)!;
  });
}

/**
 * Is a session first seen in a repaired store provably one that started after the repair (so the
 * lost store held nothing of it)? Its transcript must not exist yet, or have been created (its birth
 * time, where the file system keeps one) at or after the repair; and then either it is a fork (or
 * sub-agent) of a parent the repaired store knows (it inherits that parent's state, as any fork does),
 * or it names no parent and this is its SessionStart(startup), with no compaction in its transcript.
 * A resume, `clear`, a first hook that is not SessionStart, a parent the store does not know, an
 * unreadable transcript or a birth time the file system does not give: not provable, so latched.
 */
function provablyNew(
  obs: Observation,
  ev: LatchEvent,
  repairedAt: string,
  parentId: string | null,
  parentKnown: boolean,
  initial: ScanResult | null,
): boolean {
  const born = transcriptBirth(obs.transcriptPath);
  const at = Date.parse(repairedAt);
  if (born === null || !Number.isFinite(at) || (born !== 'absent' && born < at)) return false;
  if (parentId !== null) return parentKnown;
  if (ev.type !== 'session_start' || ev.source !== 'startup') return false;
  return born === 'absent' || (initial !== null && initial.state.compactions === 0);
}

/** When the transcript at `path` was created (ms since the epoch), `absent`, or null: unknown. */
function transcriptBirth(path: string | null): number | 'absent' | null {
  if (!path) return null;
  try {
    const b = statSync(path).birthtimeMs;
    return b > 0 ? b : null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : null;
  }
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
