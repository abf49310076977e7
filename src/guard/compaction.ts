// Compaction observation and counting: the hook sources, the transcript's boundaries and the
// write-ahead announcements (src/session/announce.ts), each counted into the same compaction numbers
// (hookSeqOf in src/session/records.ts), checkpointed and tripped. guard.ts runs these steps in its
// flow: planCompactions before the write lock, applyTranscript and countHookObservations under it.
import { resolve } from 'node:path';
import { compactionEvent, mayMutate } from '../session/authority.js';
import type { WorkspaceEvidence } from '../checkpoint/checkpoint.js';
import { errorMessage } from '../base/errors.js';
import {
  boundaryCopies,
  getCompaction,
  getSession,
  hookSeqOf,
  markTripped,
  noteHookSeen,
  noteParent,
  observeCompaction,
  observedAfterRestore,
  recordAnnouncement,
  recordedAnnouncements,
  saveIdentity,
  saveScanState,
  scanStateOf,
  SEEN_COLUMN,
  setCompactionCheckpoint,
  settledByRestore,
  settleInherited,
  transition,
  type CompactionRow,
  type CompactionSource,
  type SessionRow,
} from '../session/records.js';
import {
  pendingAnnouncements,
  type Announcement,
  type AnnouncedSource,
  type PendingAnnouncements,
} from '../session/announce.js';
import type { Db } from '../store/store.js';
import type { LatchEvent, Observation } from './events.js';
import type { AgentSlow } from '../agents/agent.js';
import { abandonAttempts, attemptId } from '../ledger/ledger.js';
import { EMPTY_SCAN, type ScanState, type TranscriptCompaction } from '../session/transcript.js';
import type { GuardContext } from './context.js';
import type { TranscriptRead } from './decide.js';
import type { Slow } from './load.js';

/** The compaction hook an event is, if any (the transcript is the fourth source). */
export function hookSourceOf(ev: LatchEvent): Exclude<CompactionSource, 'transcript'> | null {
  if (ev.type === 'pre_compact') return 'pre_compact';
  if (ev.type === 'post_compact') return 'post_compact';
  if (ev.type === 'session_start' && ev.source === 'compact') return 'session_start';
  return null;
}

export function triggerOf(ev: LatchEvent): string | null {
  return ev.type === 'pre_compact' || ev.type === 'post_compact' ? ev.trigger : null;
}

/** Phase 1 (outside any transaction): the compactions this hook will count. */
export interface CompactionPlan {
  /** The session's announcements on disk (and why they could not be listed, if so). */
  pending: PendingAnnouncements;
  /** Those not yet recorded: this hook counts them. */
  toCount: Announcement[];
  /** The transcript's boundaries beyond the ones already counted. */
  newTranscript: TranscriptCompaction[];
  /** Will a counted compaction need a checkpoint (the evidence is then taken before the lock)? */
  needEvidence: boolean;
  /** May this hook's counting trip the session (a new boundary, a pending tripping announcement)? */
  mayTrip: boolean;
}

export function planCompactions(
  ctx: GuardContext,
  db: Db,
  row: SessionRow,
  ev: LatchEvent,
  scan: TranscriptRead,
  ownAnnouncement: string | null,
): CompactionPlan {
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
  const mayTrip = newTranscript.length > 0 || toCount.some((a) => a.source !== 'pre_compact');
  return { pending, toCount, newTranscript, needEvidence, mayTrip };
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

/** Phase 2, under the write lock: what the counting steps share, and what they leave behind. */
export interface Counting {
  ctx: GuardContext;
  db: Db;
  obs: Observation;
  ev: LatchEvent;
  slow: Slow | null;
  parts: AgentSlow | null;
  evidence: WorkspaceEvidence | null;
  now: string;
  /** The session as the last step left it. */
  row: SessionRow;
  /** Compactions tripped into a held state: their leftover processes are contained. */
  contained: number[];
  /** Announcements counted (or found counted): removed once the transaction committed. */
  settled: string[];
}

/**
 * Applies this scan unless a concurrent hook already consumed further (a replaced or shrunk file
 * is rescanned from 0: its offset may be smaller, and it must still be applied).
 */
export function applyTranscript(c: Counting, scan: TranscriptRead): void {
  const { db, obs, now } = c;
  let row = c.row;
  if (!scan.result || (scan.result.reset === null && scan.result.state.offset < row.transcript_offset)) return;
  for (const t of scan.result.compactions) {
    if (t.index <= row.transcript_compactions) continue;
    // A boundary other sessions hold too (a fork's copy of its parent's compaction), judged before
    // this observation's row exists: whether anything of this session counted that number already.
    const copy = copyVerdict(db, row, t, getCompaction(db, row.session_id, t.index), scan);
    const comp = observeCompaction(
      db,
      row.session_id,
      t.index,
      'transcript',
      {
        transcript_offset: t.endOffset,
        summary_kind: t.summaryKind,
        turn_id: obs.turnId,
        boundary_id: t.boundaryId ?? null,
      },
      now,
    );
    ensureCheckpoint(
      c.slow,
      db,
      row,
      comp.seq,
      comp.checkpoint_id,
      c.evidence,
      { path: obs.transcriptPath!, size: t.endOffset },
      obs,
      comp.trigger,
      now,
    );
    // A fork's copy names the session it came from when only one session holds that compaction.
    if (copy?.fork && copy.owners.length === 1) noteParent(db, row.session_id, copy.owners[0]!);
    if (copy?.inherit) {
      // Settled here as a human's restore settled it in every session holding it: no trip.
      settleInherited(db, row, comp.seq, copy.owners, now);
      continue;
    }
    // A boundary written after a restore that lands on a compaction the restore settled is not
    // that compaction's late line: it trips again (see hookSeqOf in records.ts); while the
    // session is held anyway, the next restore covers it.
    const again = mayMutate(row.state) && settledByRestore(row, comp) && observedAfterRestore(row, t.at ?? null);
    if (trip(db, row, comp.seq, 'transcript', now, again, copy)) c.contained.push(comp.seq);
  }
  saveScanState(db, row.session_id, mergeScan(row, scan.result.state), now);
  // The identity a later resume must match: the newest turn identity (main lane only).
  if (scan.result.turnContext && !obs.agentId) saveIdentity(db, row.session_id, scan.result.turnContext);
  // A tool output in the transcript while its attempt is still `started`: Codex wrote the result
  // without a PostToolUse (a failed patch, an MCP error, a call another hook denied): a sure signal.
  const ids = scan.result.outputs.map((callId) => attemptId(row.session_id, callId));
  if (ids.length > 0) abandonAttempts(db, { ids }, 'tool output recorded without PostToolUse', now);
  row = getSession(db, obs.sessionId)!;
  c.row = row;
}

/** What a transcript boundary that other sessions hold too (the same boundary id) means here. */
interface CopyVerdict {
  /** Settle it here without a trip: a fork inheriting the human's decision of every session holding it. */
  inherit: boolean;
  /** It sits where a fork's copy of its parent's latest boundary sits (see copyVerdict). */
  fork: boolean;
  boundaryId: string;
  /** The other sessions holding it. */
  owners: string[];
  /** Why it trips all the same (added to the trip's reason); null: nothing to add. */
  detail: string | null;
}

/**
 * Claude Code's `--fork-session` opens the fork's transcript with a copy of its parent's latest
 * compact_boundary, uuid unchanged: the parent's compaction, which a human may already have
 * verified there. Such a boundary is inherited (settled here, no trip) only when all of these hold;
 * otherwise it trips like any boundary (fail closed), its reason naming the session that decided:
 * - it sits where a fork's copy sits: the first compaction and the first conversation record of the
 *   session's own recorded transcript, read without a reset (not a replaced or shrunk file, not
 *   another file a hook named). A compaction of the session itself always follows its conversation,
 *   so no boundary line written into the session (forged, or its real compaction's) is inherited;
 * - nothing of this session counted that number before (a compaction hook or its announcement: the
 *   hooks are the sure signal of the session's own compaction);
 * - this session is mutable;
 * - other sessions of the same agent hold that compaction (its boundary id recorded by their scans),
 *   and every one of them is mutable, in the same workspace, and had it settled by a human's restore
 *   there (settledByRestore; a fork that inherited it counts as settled, so a fork of a fork inherits).
 * An inherited compaction is settled as a restore settles it (settleInherited): a hook observation
 * made or counted afterwards opens a number above it, so the fork's own compaction still trips.
 */
function copyVerdict(
  db: Db,
  row: SessionRow,
  t: TranscriptCompaction,
  counted: CompactionRow | undefined,
  scan: TranscriptRead,
): CopyVerdict | null {
  const id = t.boundaryId ?? null;
  if (!id) return null;
  const copies = boundaryCopies(db, id, row.session_id, row.agent);
  const owners = [...new Set(copies.map((c) => c.session.session_id))];
  const fork = t.atHead === true && t.index === 1 && scan.ownFile === true && scan.result?.reset === null;
  const verdict = (detail: string | null, inherit = false): CopyVerdict => ({
    inherit,
    fork,
    boundaryId: id,
    owners,
    detail,
  });
  const named = owners.length === 1 ? `session ${owners[0]}` : `sessions ${owners.join(', ')}`;
  if (!fork)
    return owners.length === 0
      ? null
      : verdict(
          `its compact_boundary line carries the id of a compaction of ${named}, but not where a fork's copy sits (the head of the session's own transcript), so it counts as this session's own`,
        );
  if (owners.length === 0)
    return verdict(
      `it opens the transcript as a fork's copy does, but no session Latch knows holds that compaction (boundary ${id}), so no one verified it`,
    );
  if (counted)
    return verdict(
      `this session's own compaction hooks had counted #${t.index} before the copy of ${named}'s compaction was read`,
    );
  if (!mayMutate(row.state)) return verdict(null);
  for (const c of copies) {
    const s = c.session;
    const from = owners.length === 1 ? `forked from session ${s.session_id}` : `session ${s.session_id} holds it too`;
    if (!mayMutate(s.state)) return verdict(`${from}, which is ${s.state}`);
    if (s.workspace !== row.workspace) return verdict(`${from}, of another workspace (${s.workspace})`);
    if (!settledByRestore(s, c.compaction))
      return verdict(`${from}, where no one has verified compaction #${c.compaction.seq} since it was observed`);
  }
  return verdict(null, true);
}

/** One hook's observation of a compaction: counted, checkpointed, tripped (PreCompact: no trip). */
function countHook(
  c: Counting,
  source: AnnouncedSource,
  at: string | null,
  trigger: string | null,
  turnId: string | null,
): number {
  const { db, obs, now, slow, parts } = c;
  let row = c.row;
  const { seq, reopen } = hookSeqOf(db, row, source, at);
  const comp = observeCompaction(db, row.session_id, seq, source, { trigger, turn_id: turnId }, now);
  noteHookSeen(db, row.session_id, source, seq);
  const path = obs.transcriptPath ?? row.transcript_path;
  const transcript = path && source === 'pre_compact' ? { path, size: null } : null;
  // A PreCompact that takes an abandoned PreCompact's number again takes the checkpoint anew.
  ensureCheckpoint(slow, db, row, seq, reopen ? null : comp.checkpoint_id, c.evidence, transcript, obs, trigger, now);
  if (source !== 'pre_compact' && trip(db, row, seq, source, now)) c.contained.push(seq);
  row = c.row = getSession(db, obs.sessionId)!;
  // The brief is captured when the compaction is first announced (PreCompact, else SessionStart).
  if (
    slow &&
    parts &&
    (source === 'pre_compact' || (source === 'session_start' && !briefSince(db, row.session_id, comp.first_seen_at)))
  ) {
    try {
      slow.captureBrief(db, row, path, now, parts);
    } catch {
      // An unreadable transcript (gone, replaced by a directory, not yet written) must not undo the
      // count around it: the brief then holds the ledger's facts only, as with no transcript at all.
      slow.captureBrief(db, row, null, now, parts);
    }
  }
  return seq;
}

/**
 * Announcements first (oldest first; listed again under the write lock, so each is counted once,
 * by a hook that records; when there was none, only by a compaction hook or a tracked call, whose
 * decision must see one that came meanwhile), the hook's own among them; then the hook's own
 * observation if its announcement was not there. Returns what that second listing found wrong.
 */
export function countHookObservations(
  c: Counting,
  pending: PendingAnnouncements,
  ownAnnouncement: string | null,
  tracked: boolean,
): string | null {
  const { ctx, db, obs, ev, now } = c;
  const hookSource = hookSourceOf(ev);
  let ownCounted = false;
  const relist = pending.list.length > 0 || hookSource !== null || tracked;
  const again = relist ? pendingAnnouncements(ctx.home, c.row.session_id) : null;
  const listed = again?.list ?? [];
  const already = recordedAnnouncements(
    db,
    listed.map((a) => a.id),
  );
  for (const a of listed) {
    if (a.id === ownAnnouncement) ownCounted = true;
    c.settled.push(a.id);
    if (already.has(a.id)) continue;
    const mine = a.id === ownAnnouncement;
    const seq = mine
      ? countHook(c, a.source, a.at, triggerOf(ev), obs.turnId)
      : countHook(c, a.source, a.at, a.trigger, a.turnId);
    recordAnnouncement(
      db,
      {
        id: a.id,
        session_id: c.row.session_id,
        source: a.source,
        announced_at: a.at,
        seq,
        by_own_hook: mine,
      },
      now,
    );
  }
  // Its own observation, unless another process (the watcher's look, a concurrent hook of the session)
  // counted its announcement meanwhile and removed the file: then it is counted, once.
  const countedElsewhere =
    !ownCounted && ownAnnouncement !== null && recordedAnnouncements(db, [ownAnnouncement]).has(ownAnnouncement);
  if (hookSource && !ownCounted && !countedElsewhere) countHook(c, hookSource, null, triggerOf(ev), obs.turnId);
  return again?.problem ?? null;
}

/** Was a brief version created at or after `since`? */
function briefSince(db: Db, sessionId: string, since: string): boolean {
  return !!db.prepare('SELECT 1 FROM briefs WHERE session_id = ? AND created_at >= ?').get(sessionId, since);
}

/** Phase 1: reads the transcript bytes new since the last scan. */
export function readTranscript(ctx: GuardContext, obs: Observation, row: SessionRow, ev: LatchEvent): TranscriptRead {
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
  return { ...safeScan(ctx, path, scanStateOf(row), row, ev), ownFile: row.transcript_path !== null };
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

/** A compaction's checkpoint, taken once (from the evidence phase 1 collected). */
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
  setCompactionCheckpoint(db, row.session_id, seq, cp.id);
}

/**
 * The first tripping source of a compaction applies the policy's event; later sources only add to
 * observed_via. True when this trip left the session held (its leftover processes are then contained).
 */
function trip(
  db: Db,
  row: SessionRow,
  seq: number,
  source: CompactionSource,
  now: string,
  again = false,
  copy: CopyVerdict | null = null,
): boolean {
  const comp = getCompaction(db, row.session_id, seq)!;
  if (comp.tripped_at && !again) return false;
  markTripped(db, row.session_id, seq, now);
  const base = again
    ? `context compaction #${seq} observed again via ${source}, written after authority was restored (checkpoint ${comp.checkpoint_id ?? 'none'})`
    : `context compaction #${seq} observed via ${source} (checkpoint ${comp.checkpoint_id ?? 'none'})`;
  const reason = copy?.detail ? `${base}: ${copy.detail}` : base;
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
      ...(copy ? { boundary_id: copy.boundaryId, boundary_held_by: copy.owners, fork_copy: copy.fork } : {}),
    },
    reason,
    now,
  );
  return !mayMutate(getSession(db, row.session_id)!.state);
}
