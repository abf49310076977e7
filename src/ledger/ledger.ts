// The mutation-scope ledger: write-ahead attempts (Start -> Close | Abandon), workspace observations
// and the attribution of every file change to the attempt that made it (or "outside" / "unknown").
//
// Attempt states (one table, like the authority machine):
//   started  --PostToolUse-->            closing --scan recorded--> closed
//   started  --sure signal-->            abandoned   (Stop, SubagentStop, Interrupt, SessionEnd, the
//                                                     tool's output in the transcript without a Post)
//   closing  --closer died, recovered--> closed      (recovery barrier, generation-claimed)
// A Start is written before the hook replies allow; if it cannot be written, the call is denied.
//
// Attribution (src/ledger/observe.ts) compares each changed file's time with the attempts' windows.
import { closeSync, constants, fstatSync, futimesSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../store/store.js';

export type AttemptState = 'started' | 'closing' | 'closed' | 'abandoned';
export type AttemptEvent = 'close_begin' | 'close_end' | 'abandon' | 'recover';

/** The attempt state machine: state x event -> next state; anything else is ignored (idempotent). */
export const ATTEMPT_TABLE: Readonly<Record<AttemptState, Partial<Record<AttemptEvent, AttemptState>>>> = {
  started: { close_begin: 'closing', abandon: 'abandoned' },
  closing: { close_end: 'closed', recover: 'closed' },
  closed: {},
  abandoned: {},
};

export function attemptStep(s: AttemptState, e: AttemptEvent): AttemptState | null {
  return ATTEMPT_TABLE[s][e] ?? null;
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

/** Wall-clock time in ns with sub-millisecond precision (compared with file ctimes). */
export function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
}

/**
 * Returns once the kernel's file timestamps have passed `ns` (giving up after maxMs): a file changed
 * after this returns has a ctime above ns. File timestamps come from a coarse clock that lags the one
 * nowNs() reads by up to a tick, so a tool that writes within a tick of its Start (Codex's
 * apply_patch writes 1-4 ms after the PreToolUse recorded it) would show a change time before its
 * window and be attributed "unknown". Touching a file of Latch's own until its ctime is past ns
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

export function laneOf(sessionId: string, agentId: string | null): string {
  return agentId ? `${sessionId}/${agentId}` : sessionId;
}

export function getAttempt(db: Db, id: string): AttemptRow | undefined {
  return db.prepare('SELECT * FROM attempts WHERE id = ?').get(id) as AttemptRow | undefined;
}

export function liveAttempts(db: Db, workspace: string): AttemptRow[] {
  return db.prepare("SELECT * FROM attempts WHERE workspace = ? AND state IN ('started','closing') ORDER BY started_ns").all(workspace) as AttemptRow[];
}

function scanGen(db: Db, workspace: string): number {
  const r = db.prepare('SELECT scan_gen FROM workspaces WHERE workspace = ?').get(workspace) as { scan_gen: number } | undefined;
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
}

/** Write-ahead Start (inside the caller's transaction). A duplicate delivery reuses the attempt. */
export function startAttempt(db: Db, s: StartInput, now: string): { attempt: AttemptRow; duplicate: boolean } {
  const id = attemptId(s.sessionId, s.toolUseId);
  const existing = getAttempt(db, id);
  if (existing) return { attempt: existing, duplicate: true };
  db.prepare(
    `INSERT INTO attempts (id, session_id, workspace, turn_id, agent_id, lane, tool_name, tool_use_id, summary, state, started_at, started_ns, scan_gen)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'started', ?, ?, ?)`,
  ).run(id, s.sessionId, s.workspace, s.turnId, s.agentId, laneOf(s.sessionId, s.agentId), s.toolName, s.toolUseId, s.summary, now, nowNs().toString(), scanGen(db, s.workspace));
  return { attempt: getAttempt(db, id)!, duplicate: false };
}

/** PostToolUse, phase 1 (own short transaction): started -> closing, owned by this process. */
export function beginClose(db: Db, id: string, owner: ProcessId): AttemptRow | undefined {
  const a = getAttempt(db, id);
  if (!a) return undefined;
  const next = attemptStep(a.state, 'close_begin');
  if (!next) return a;
  db.prepare("UPDATE attempts SET state = 'closing', closing_ns = ?, closer_pid = ?, closer_start = ? WHERE id = ? AND state = 'started'").run(
    nowNs().toString(),
    owner.pid,
    owner.start,
    id,
  );
  return getAttempt(db, id);
}

/** Phase 2 (inside the observation transaction): closing -> closed. */
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

export function endClose(db: Db, id: string, now: string, reason: (typeof CLOSE_REASON)[keyof typeof CLOSE_REASON]): void {
  db.prepare("UPDATE attempts SET state = 'closed', ended_at = ?, ended_ns = COALESCE(closing_ns, ?), end_reason = ? WHERE id = ? AND state = 'closing'").run(
    now,
    nowNs().toString(),
    reason,
    id,
  );
}

/** Abandons the live (started) attempts selected by `where` (inside the caller's transaction). */
export function abandonAttempts(db: Db, where: { session?: string; lane?: string; ids?: string[] }, reason: string, now: string): number {
  const rows = (
    where.ids
      ? where.ids.map((id) => getAttempt(db, id)).filter((a): a is AttemptRow => !!a)
      : (db.prepare("SELECT * FROM attempts WHERE state = 'started' AND (session_id = ? OR ? IS NULL) AND (lane = ? OR ? IS NULL)").all(
          where.session ?? null,
          where.session ?? null,
          where.lane ?? null,
          where.lane ?? null,
        ) as AttemptRow[])
  ).filter((a) => a.state === 'started');
  const st = db.prepare("UPDATE attempts SET state = 'abandoned', ended_at = ?, ended_ns = ?, end_reason = ? WHERE id = ? AND state = 'started'");
  for (const a of rows) st.run(now, nowNs().toString(), reason, a.id);
  return rows.length;
}

// ---------------------------------------------------------------------------
// Process identity for the recovery barrier: pid + its start time (pid reuse safe).

export interface ProcessId {
  pid: number;
  start: string;
}

/** State (field 3) and start time in clock ticks (field 22) of /proc/<pid>/stat; null without /proc. */
export function procStat(pid: number): { state: string; start: string } | null {
  try {
    // The comm field may hold spaces and parentheses: fields are counted after its last ')'.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return rest[19] === undefined ? null : { state: rest[0] ?? '', start: rest[19] };
  } catch {
    return null;
  }
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
  return (db.prepare("SELECT * FROM attempts WHERE workspace = ? AND state = 'closing'").all(workspace) as AttemptRow[]).filter(
    (a) => !isAlive({ pid: a.closer_pid, start: a.closer_start }),
  );
}

/**
 * Claims the recovery of an orphaned closing attempt: bumps its generation from the value read and
 * makes this process the closer. Two recoverers cannot both win (the UPDATE is conditional on the
 * generation); a crashed recoverer is itself orphaned and reclaimed by the next one.
 */
export function claimRecovery(db: Db, a: AttemptRow, owner: ProcessId): boolean {
  const r = db
    .prepare("UPDATE attempts SET recovery_gen = recovery_gen + 1, closer_pid = ?, closer_start = ? WHERE id = ? AND state = 'closing' AND recovery_gen = ?")
    .run(owner.pid, owner.start, a.id, a.recovery_gen);
  return r.changes === 1;
}

