// The mutation-scope ledger: write-ahead attempts (Start -> Close | Abandon), workspace observations
// and the attribution of every file change to the attempt that made it (or "outside" / "unknown").
//
// Attempt states (ATTEMPT_TABLE below is the one authority: every write of the attempts table is in
// this file, and each one is an event the table allows from the row's current state):
//   absent   --start (PreToolUse)-->      started
//   started  --mark_untimed-->            started     (recorded at its PostToolUse: no Start time)
//   started  --close_begin (PostToolUse)--> closing --close_end (observation recorded)--> closed
//   started  --abandon (sure signal)-->   abandoned   (Stop / Interrupt: the ending agent's calls;
//                                                     SubagentStop: the sub-agent's; SessionEnd: all;
//                                                     a later turn in the lane, the tool's output in
//                                                     the transcript without a Post)
//   closing  --claim (closer died)-->     closing     (recovery barrier: generation-claimed)
//   closing  --recover (claimed, observed)--> closed
// A Start is written before the hook replies allow; if it cannot be written, the call is denied.
//
// Attribution (src/ledger/observe.ts) compares each changed file's time with the attempts' windows.
import { closeSync, constants, fstatSync, futimesSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { wallNs } from '../base/clock.js';
import { procStat } from '../base/proc.js';
import type { Db } from '../store/store.js';

export type AttemptState = 'started' | 'closing' | 'closed' | 'abandoned';
/** An attempt's place in the state table: a row's state, or `absent` before its Start (no row). */
export type AttemptPlace = AttemptState | 'absent';
/**
 * What happens to an attempt, each applied by one writer below: start (startAttempt), mark_untimed
 * (markUntimed), close_begin (beginClose), close_end and recover (endClose), abandon
 * (abandonAttempts), claim (claimRecovery).
 */
export const ATTEMPT_EVENTS = [
  'start',
  'mark_untimed',
  'close_begin',
  'close_end',
  'abandon',
  'claim',
  'recover',
] as const;
export type AttemptEvent = (typeof ATTEMPT_EVENTS)[number];

/**
 * The attempt state machine: place x event -> next state. The one authority for every write of the
 * attempts table: each writer below applies its event through it (a pair not listed is refused: the
 * row is left as it is), and the conditional UPDATEs take their `state IN (...)` from it.
 */
export const ATTEMPT_TABLE: Readonly<Record<AttemptPlace, Partial<Record<AttemptEvent, AttemptState>>>> = {
  absent: { start: 'started' },
  started: { mark_untimed: 'started', close_begin: 'closing', abandon: 'abandoned' },
  closing: { claim: 'closing', close_end: 'closed', recover: 'closed' },
  closed: {},
  abandoned: {},
};

export function attemptStep(s: AttemptPlace, e: AttemptEvent): AttemptState | null {
  return ATTEMPT_TABLE[s][e] ?? null;
}

/** The (row state -> next state) moves of an event, read from ATTEMPT_TABLE at each call. */
function movesOf(e: AttemptEvent): [AttemptState, AttemptState][] {
  const moves: [AttemptState, AttemptState][] = [];
  for (const [from, row] of Object.entries(ATTEMPT_TABLE) as [
    AttemptPlace,
    Partial<Record<AttemptEvent, AttemptState>>,
  ][]) {
    const to = row[e];
    if (from !== 'absent' && to) moves.push([from, to]);
  }
  return moves;
}

/**
 * The one writer of an existing attempt row: applies `event` where the table allows it from the
 * row's current state, in one conditional UPDATE (a row another process moved meanwhile is left
 * alone), with the event's own columns (`set`, evaluated against the row before the update) and an
 * optional extra condition. Returns whether the row changed.
 */
function applyEvent(
  db: Db,
  id: string,
  event: AttemptEvent,
  set: string,
  setParams: unknown[],
  also = '',
  alsoParams: unknown[] = [],
): boolean {
  const moves = movesOf(event);
  if (moves.length === 0) return false;
  const sql =
    `UPDATE attempts SET state = CASE state${' WHEN ? THEN ?'.repeat(moves.length)} END${set ? `, ${set}` : ''}` +
    ` WHERE id = ? AND state IN (${moves.map(() => '?').join(', ')})${also ? ` AND ${also}` : ''}`;
  return (
    db.prepare(sql).run(...moves.flat(), ...setParams, id, ...moves.map(([from]) => from), ...alsoParams).changes === 1
  );
}

export const LIVE: readonly AttemptState[] = ['started', 'closing'];

export interface AttemptRow {
  id: string;
  session_id: string;
  workspace: string;
  turn_id: string | null;
  agent_id: string | null;
  lane: string;
  tool_name: string;
  tool_use_id: string | null;
  summary: string | null;
  state: AttemptState;
  started_at: string;
  started_ns: string;
  scan_gen: number;
  closing_ns: string | null;
  closer_pid: number | null;
  closer_start: string | null;
  recovery_gen: number;
  ended_at: string | null;
  ended_ns: string | null;
  end_reason: string | null;
  output_seen: number;
}

/** Deterministic: a duplicate delivery of the same call maps to the same attempt. */
export function attemptId(sessionId: string, toolUseId: string): string {
  return `${sessionId}/${toolUseId}`;
}

/**
 * Wall-clock time in ns with sub-millisecond precision (compared with file ctimes): the monotonic
 * clock anchored to the wall clock once per process (src/base/clock.ts, within 10 µs), which spares
 * the hook loading perf_hooks.
 */
export function nowNs(): bigint {
  return wallNs();
}

/**
 * How far past a window's recorded end a change still counts as inside it: the clock's error (under
 * 10 µs), with room. A tool's own writes precede its end by far (its PostToolUse, its turn's end);
 * a change written after an end is stamped past end + END_SLACK_NS (settleEnds).
 */
export const END_SLACK_NS = 100_000n;

/** The latest window end this process recorded and has not yet settled (settleEnds). */
let unsettledEnd: bigint | null = null;

/** nowNs() for a window's end (a close or an abandon), remembered for settleEnds. */
function endNs(): bigint {
  const t = nowNs();
  if (unsettledEnd === null || t > unsettledEnd) unsettledEnd = t;
  return t;
}

/**
 * Returns once the kernel's file timestamps have passed `ns` (giving up after maxMs): a file changed
 * after this returns has a ctime above ns. File timestamps come from a coarse clock that lags the one
 * nowNs() reads by up to a tick, so a tool that writes within a tick of its Start (Codex's
 * patch tool writes 1-4 ms after the PreToolUse recorded it) would show a change time before its
 * window and be attributed "unknown"; and a change made within a tick after a window's end would
 * show a time inside it (settleEnds). Touching a file of Latch's own until its ctime is past ns
 * closes that gap: on Linux >= 6.13 (multigrain timestamps) reading a ctime makes the next one
 * fine-grained and every later one at least as late, so two touches do (~12 µs); on older kernels
 * it waits out the tick. Best effort: on any error the edge rule of the attribution still holds.
 */
export function awaitFileClock(home: string, ns: bigint, maxMs = 20): void {
  let fd = -1;
  try {
    // Not truncated, and never through a symlink: only Latch's own file has its times set.
    fd = openSync(join(home, 'clock'), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    const stamp = new Date(0);
    const deadline = Date.now() + maxMs;
    do {
      futimesSync(fd, stamp, stamp);
      if (fstatSync(fd, { bigint: true }).ctimeNs > ns) return;
    } while (Date.now() <= deadline);
  } catch {
    /* no clock file: a change right after the Start may be attributed "unknown" */
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/**
 * After this process recorded a window's end (a Close, an Abandon): returns once a file changed from
 * now on is stamped past that end (with its slack), so that a change made right after, by anyone, is
 * not attributed to the ended attempt. A no-op when no end is pending.
 */
export function settleEnds(home: string): void {
  if (unsettledEnd === null) return;
  const ns = unsettledEnd + END_SLACK_NS;
  unsettledEnd = null;
  awaitFileClock(home, ns);
}

export function laneOf(sessionId: string, agentId: string | null): string {
  return agentId ? `${sessionId}/${agentId}` : sessionId;
}

export function getAttempt(db: Db, id: string): AttemptRow | undefined {
  return db.prepare('SELECT * FROM attempts WHERE id = ?').get(id) as AttemptRow | undefined;
}

export function liveAttempts(db: Db, workspace: string): AttemptRow[] {
  return db
    .prepare("SELECT * FROM attempts WHERE workspace = ? AND state IN ('started','closing') ORDER BY started_ns")
    .all(workspace) as AttemptRow[];
}

function scanGen(db: Db, workspace: string): number {
  const r = db.prepare('SELECT scan_gen FROM workspaces WHERE workspace = ?').get(workspace) as
    | { scan_gen: number }
    | undefined;
  return r?.scan_gen ?? 0;
}

export interface StartInput {
  sessionId: string;
  workspace: string;
  turnId: string | null;
  agentId: string | null;
  toolName: string;
  toolUseId: string;
  summary: string;
  /** What the call is to its agent's adapter (ToolKind); `agent`: it runs a sub-agent. */
  kind?: string | null;
}

/** Write-ahead Start (inside the caller's transaction). A duplicate delivery reuses the attempt. */
export function startAttempt(db: Db, s: StartInput, now: string): { attempt: AttemptRow; duplicate: boolean } {
  const id = attemptId(s.sessionId, s.toolUseId);
  const existing = getAttempt(db, id);
  // A row already there: the same call delivered again (no state has a `start` move: nothing is written).
  if (existing) return { attempt: existing, duplicate: true };
  const state = attemptStep('absent', 'start');
  if (!state) throw new Error(`attempt ${id}: the attempt state table has no Start (absent --start-->): not recorded`);
  db.prepare(
    `INSERT INTO attempts (id, session_id, workspace, turn_id, agent_id, lane, tool_name, tool_use_id, summary, state, started_at, started_ns, scan_gen, kind)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    s.sessionId,
    s.workspace,
    s.turnId,
    s.agentId,
    laneOf(s.sessionId, s.agentId),
    s.toolName,
    s.toolUseId,
    s.summary,
    state,
    now,
    nowNs().toString(),
    scanGen(db, s.workspace),
    s.kind ?? null,
  );
  return { attempt: getAttempt(db, id)!, duplicate: false };
}

/**
 * A PostToolUse found no Start on record (Latch was installed mid-call) and recorded the attempt
 * then: its Start time is unknown, so its window cannot time any change (started_ns = 0: the
 * attribution makes whatever it may cover "unknown"). Only while started; returns whether it was marked.
 */
export function markUntimed(db: Db, id: string): boolean {
  return applyEvent(db, id, 'mark_untimed', "started_ns = '0'", []);
}

/** PostToolUse, phase 1 (own short transaction): started -> closing, owned by this process. */
export function beginClose(db: Db, id: string, owner: ProcessId): AttemptRow | undefined {
  const a = getAttempt(db, id);
  if (!a) return undefined;
  if (!attemptStep(a.state, 'close_begin')) return a;
  applyEvent(db, id, 'close_begin', 'closing_ns = ?, closer_pid = ?, closer_start = ?', [
    endNs().toString(),
    owner.pid,
    owner.start,
  ]);
  return getAttempt(db, id);
}

/** Why a Close ended (attempts.end_reason of a closed attempt). */
export const CLOSE_REASON = {
  /** The PostToolUse hook observed the workspace. */
  hook: 'PostToolUse',
  /** The PostToolUse of a command the read-only classifier accepts: no scan. */
  readOnly: 'PostToolUse (read-only command: no scan)',
  /** The workspace watcher observed the workspace for the PostToolUse. */
  watcher: 'PostToolUse (observed by the workspace watcher)',
  /** The recovery barrier finished the Close of a hook that died. */
  recovered: 'recovered after the closing hook died',
} as const;

/**
 * Phase 2 (inside the observation transaction): closing -> closed; the recovery barrier's reason is
 * the `recover` event, any other reason `close_end`. Returns whether the attempt was closed.
 */
export function endClose(
  db: Db,
  id: string,
  now: string,
  reason: (typeof CLOSE_REASON)[keyof typeof CLOSE_REASON],
): boolean {
  const event: AttemptEvent = reason === CLOSE_REASON.recovered ? 'recover' : 'close_end';
  return applyEvent(db, id, event, 'ended_at = ?, ended_ns = COALESCE(closing_ns, ?), end_reason = ?', [
    now,
    endNs().toString(),
    reason,
  ]);
}

/** Which attempts an abandon addresses (the table decides which of them it moves). */
export interface AbandonWhere {
  /** These attempts (the other fields are then ignored). */
  ids?: string[];
  session?: string;
  lane?: string;
  /** Whose calls: null, the main agent's only (agent_id NULL); a string, that sub-agent's; absent, anyone's. */
  agent?: string | null;
}

/**
 * Abandons the live (started) attempts selected by `where` (inside the caller's transaction): by ids,
 * else by session, lane and/or agent (none of them: every attempt the table lets abandon). Returns how many.
 */
export function abandonAttempts(db: Db, where: AbandonWhere, reason: string, now: string): number {
  const from = movesOf('abandon').map(([state]) => state);
  const anyAgent = where.agent === undefined ? 1 : 0;
  const ids =
    where.ids ??
    (
      db
        .prepare(
          `SELECT id FROM attempts WHERE state IN (${from.map(() => '?').join(', ')}) AND (session_id = ? OR ? IS NULL) AND (lane = ? OR ? IS NULL) AND (? = 1 OR agent_id IS ?)`,
        )
        .all(
          ...from,
          where.session ?? null,
          where.session ?? null,
          where.lane ?? null,
          where.lane ?? null,
          anyAgent,
          where.agent ?? null,
        ) as {
        id: string;
      }[]
    ).map((r) => r.id);
  let n = 0;
  for (const id of ids)
    if (applyEvent(db, id, 'abandon', 'ended_at = ?, ended_ns = ?, end_reason = ?', [now, endNs().toString(), reason]))
      n++;
  return n;
}

/** How a turn ends (the guard's TurnEnd). */
export type TurnEndKind = 'stop' | 'subagent_stop' | 'interrupt' | 'session_end';

/**
 * The attempts a turn's end abandons (calls that will get no PostToolUse), by whose turn ended:
 * - session_end: every live attempt of the session, its sub-agents' included;
 * - stop, interrupt: those of the agent whose turn ended (the hook's agent id: none, the main agent),
 *   never a sub-agent's: a background sub-agent runs on after the main agent's turn (Claude Code
 *   delivers the main Stop before the SubagentStop of an async sub-agent still running), and its calls
 *   close at their own PostToolUse or are abandoned at its SubagentStop;
 * - subagent_stop: that sub-agent's; without an agent id, none (which sub-agent stopped is unknown,
 *   and the main agent's Agent call that ran it may still be open).
 * Null: nothing to abandon.
 */
export function turnEndScope(kind: TurnEndKind, sessionId: string, agentId: string | null): AbandonWhere | null {
  switch (kind) {
    case 'session_end':
      return { session: sessionId };
    case 'subagent_stop':
      return agentId ? { session: sessionId, agent: agentId } : null;
    case 'stop':
    case 'interrupt':
      return { session: sessionId, agent: agentId };
  }
}

/** Abandons what a turn's end abandons (turnEndScope), inside the caller's transaction. Returns how many. */
export function abandonAtTurnEnd(
  db: Db,
  end: { kind: TurnEndKind; sessionId: string; agentId: string | null },
  now: string,
): number {
  const where = turnEndScope(end.kind, end.sessionId, end.agentId);
  return where ? abandonAttempts(db, where, `${end.kind} before PostToolUse`, now) : 0;
}

// ---------------------------------------------------------------------------
// Process identity for the recovery barrier: pid + its start time (pid reuse safe).

export interface ProcessId {
  pid: number;
  start: string;
}

export function selfId(): ProcessId {
  return { pid: process.pid, start: procStat(process.pid)?.start ?? 'unknown' };
}

export function isAlive(owner: { pid: number | null; start: string | null }): boolean {
  if (!owner.pid) return false;
  const stat = procStat(owner.pid);
  if (stat === null) {
    // No /proc (not Linux): fall back to a signal-0 probe.
    try {
      process.kill(owner.pid, 0);
      return owner.start === 'unknown';
    } catch {
      return false;
    }
  }
  // A zombie has exited: nobody reaped it yet (a detached watcher under a PID 1 that does not reap).
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return owner.start === 'unknown' || stat.start === owner.start;
}

/** Closing attempts whose closer died before recording: the recovery barrier's work list. */
export function orphanedClosings(db: Db, workspace: string): AttemptRow[] {
  return (
    db.prepare("SELECT * FROM attempts WHERE workspace = ? AND state = 'closing'").all(workspace) as AttemptRow[]
  ).filter((a) => !isAlive({ pid: a.closer_pid, start: a.closer_start }));
}

/**
 * Claims the recovery of an orphaned closing attempt: bumps its generation from the value read and
 * makes this process the closer. Two recoverers cannot both win (the UPDATE is conditional on the
 * generation); a crashed recoverer is itself orphaned and reclaimed by the next one.
 */
export function claimRecovery(db: Db, a: AttemptRow, owner: ProcessId): boolean {
  return applyEvent(
    db,
    a.id,
    'claim',
    'recovery_gen = recovery_gen + 1, closer_pid = ?, closer_start = ?',
    [owner.pid, owner.start],
    'recovery_gen = ?',
    [a.recovery_gen],
  );
}

/** The `started` attempts of a lane from any other turn than `turnId` (a later turn proves them over). */
export function staleInLane(db: Db, lane: string, turnId: string | null): string[] {
  return (
    db
      .prepare("SELECT id FROM attempts WHERE lane = ? AND state = 'started' AND turn_id IS NOT ? ")
      .all(lane, turnId) as { id: string }[]
  ).map((r) => r.id);
}

/** Has the workspace had an observation yet (its baseline)? */
export function hasBaseline(db: Db, workspace: string): boolean {
  return !!db.prepare('SELECT 1 FROM workspaces WHERE workspace = ?').get(workspace);
}
