// Typed access to the session, compaction, transition and denial records.
import type { AuthEvent, AuthState, Policy } from './authority.js';
import { step } from './authority.js';
import type { ResolvedPolicy, Scope } from './policy.js';
import type { Db } from '../store/store.js';
import type { ScanState } from './transcript.js';

export interface SessionRow {
  session_id: string;
  /** The agent the session belongs to (src/agents/index.ts). */
  agent: string;
  workspace: string;
  cwd: string;
  policy: Policy;
  scope: Scope;
  policy_json: string;
  state: AuthState;
  state_reason: string | null;
  episode_started_at: string | null;
  parent_session_id: string | null;
  agent_id: string | null;
  transcript_path: string | null;
  transcript_dev: string | null;
  transcript_ino: string | null;
  transcript_offset: number;
  transcript_compactions: number;
  transcript_group: string | null;
  seen_pre_compact: number;
  seen_post_compact: number;
  seen_start_compact: number;
  /** When a human last restored authority (verify, resume, evidence); null if never. */
  restored_at: string | null;
  /** The highest compaction number a tripping source had reached at that restore (see hookSeqOf). */
  closed_seq: number;
  cli_version: string | null;
  model: string | null;
  permission_mode: string | null;
  created_at: string;
  updated_at: string;
}

export interface CompactionRow {
  session_id: string;
  seq: number;
  trigger: string | null;
  observed_via: string;
  turn_id: string | null;
  transcript_offset: number | null;
  summary_kind: string | null;
  checkpoint_id: string | null;
  tripped_at: string | null;
  first_seen_at: string;
  /** The agent's id of the transcript record that showed it (Claude Code's boundary uuid), if any. */
  boundary_id: string | null;
  /**
   * JSON array of the sessions whose settled copy of this compaction a fork inherited (it then did not
   * trip: tripped_at and the session's restore mark it settled, see settleInherited); null otherwise.
   */
  inherited_from: string | null;
}

export type CompactionSource = 'pre_compact' | 'post_compact' | 'session_start' | 'transcript';

export const SEEN_COLUMN: Record<
  Exclude<CompactionSource, 'transcript'>,
  'seen_pre_compact' | 'seen_post_compact' | 'seen_start_compact'
> = {
  pre_compact: 'seen_pre_compact',
  post_compact: 'seen_post_compact',
  session_start: 'seen_start_compact',
};

/**
 * Compaction counting. Each source (the three hooks, the transcript) counts its own observations and
 * the n-th observation of each is compaction #n, so one compaction seen four ways is one row, one
 * checkpoint, one trip. Two things would make one source's count drift from the others', and both
 * are handled here:
 *
 * - A PreCompact without a compaction (Claude Code gives up: "compaction cannot help"). PreCompact
 *   never trips; when the previous PreCompact's compaction is still observed by nothing else, the
 *   next PreCompact takes its number again (and a fresh checkpoint), so PreCompact stays in step.
 * - A forged or lost observation. A restore (a human's verify or resume) closes every number a
 *   tripping source reached (`closed_seq`), so that an observation made after it cannot pair with a
 *   compaction the human already settled, whatever a forgery did to one source's count:
 *   - a hook observation made after the restore opens a compaction above `closed_seq` (its counter
 *     jumps there): a real compaction after a verify always trips;
 *   - one made before it and counted after it (an announcement whose hook could not record it) keeps
 *     its source's count when that number is a compaction a hook tripped before the restore (it is
 *     that compaction's late observation: the human saw it) or one not tripped yet; a number only
 *     the transcript tripped is not one a late hook observation can belong to (whatever counted the
 *     boundary would have counted the announcement too): it opens a new compaction, as above;
 *   - a transcript boundary keeps the transcript's own numbering (the n-th boundary in the file), and
 *     trips again when it lands on a compaction settled by the restore while its own time (the
 *     line's timestamp; unknown counts as after) is after it (guard.ts). A boundary written before
 *     the restore (Claude Code appends it only by the turn's end) is the late line of the compaction
 *     verified.
 *
 * Returns the number, and whether it is an earlier PreCompact's number taken again (`reopen`: the
 * checkpoint is taken anew).
 */
export function hookSeqOf(
  db: Db,
  row: SessionRow,
  source: Exclude<CompactionSource, 'transcript'>,
  at: string | null,
): { seq: number; reopen: boolean } {
  if (source === 'pre_compact') {
    const k = row.seen_pre_compact;
    const others = Math.max(row.seen_post_compact, row.seen_start_compact, row.transcript_compactions, row.closed_seq);
    if (k > others) {
      const c = getCompaction(db, row.session_id, k);
      if (c && c.tripped_at === null && viaOf(c).every((v) => v === 'pre_compact')) return { seq: k, reopen: true };
    }
  }
  const next = row[SEEN_COLUMN[source]] + 1;
  if (!observedAfterRestore(row, at)) {
    const c = getCompaction(db, row.session_id, next);
    const late = !c || !settledByRestore(row, c) || viaOf(c).some((v) => v === 'post_compact' || v === 'session_start');
    if (late) return { seq: next, reopen: false };
  }
  return { seq: Math.max(next, row.closed_seq + 1), reopen: false };
}

function viaOf(c: CompactionRow): string[] {
  try {
    const v = JSON.parse(c.observed_via) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** Was an observation made at `at` (null: now, or unknown) made after the session's last restore? */
export function observedAfterRestore(row: Pick<SessionRow, 'restored_at'>, at: string | null): boolean {
  if (row.restored_at === null) return false;
  if (at === null) return true;
  const t = Date.parse(at);
  const r = Date.parse(row.restored_at);
  return !(Number.isFinite(t) && Number.isFinite(r)) || t >= r;
}

/** Was compaction `comp` tripped and then settled by the session's last restore? */
export function settledByRestore(row: Pick<SessionRow, 'restored_at'>, comp: CompactionRow): boolean {
  if (row.restored_at === null || comp.tripped_at === null) return false;
  return Date.parse(comp.tripped_at) <= Date.parse(row.restored_at);
}

/**
 * The reason code of a latch set because the store was repaired (`latch doctor --repair`,
 * src/store/repair.ts): the fresh store cannot tell whether a session it never saw was latched, so
 * it starts latched (src/guard/guard.ts createSession) and only `latch verify` releases it.
 */
export const REPAIR_CODE = 'store_repaired';

/** When the store was last repaired (its store_repairs row), or null: it never was. */
export function lastRepair(db: Db): { repaired_at: string } | null {
  const row = db.prepare('SELECT repaired_at FROM store_repairs ORDER BY id DESC LIMIT 1').get() as
    | { repaired_at: string }
    | undefined;
  return row ?? null;
}

export function getSession(db: Db, id: string): SessionRow | undefined {
  return db.prepare('SELECT * FROM sessions WHERE session_id = ?').get(id) as SessionRow | undefined;
}

export function sessionsIn(db: Db, workspace: string): SessionRow[] {
  return db
    .prepare('SELECT * FROM sessions WHERE workspace = ? ORDER BY created_at, session_id')
    .all(workspace) as SessionRow[];
}

export function allSessions(db: Db): SessionRow[] {
  return db.prepare('SELECT * FROM sessions ORDER BY created_at, session_id').all() as SessionRow[];
}

export function scanStateOf(row: SessionRow): ScanState {
  return {
    offset: row.transcript_offset,
    dev: row.transcript_dev,
    ino: row.transcript_ino,
    compactions: row.transcript_compactions,
    group: row.transcript_group ? (JSON.parse(row.transcript_group) as unknown) : null,
  };
}

export interface NewSession {
  session_id: string;
  agent: string;
  workspace: string;
  cwd: string;
  policy: ResolvedPolicy;
  parent_session_id: string | null;
  agent_id: string | null;
  transcript_path: string | null;
  cli_version: string | null;
  model: string | null;
  permission_mode: string | null;
  /** Compactions already in the transcript that the hook sources should not claim again. */
  hookBaseline: { pre: number; post: number; start: number };
}

export function insertSession(db: Db, s: NewSession, now: string): boolean {
  const r = db
    .prepare(
      `INSERT OR IGNORE INTO sessions (session_id, agent, workspace, cwd, policy, scope, policy_json, state, parent_session_id, agent_id,
         transcript_path, seen_pre_compact, seen_post_compact, seen_start_compact, cli_version, model, permission_mode, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'mutable', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(
      s.session_id,
      s.agent,
      s.workspace,
      s.cwd,
      s.policy.policy,
      s.policy.scope,
      JSON.stringify(s.policy),
      s.parent_session_id,
      s.agent_id,
      s.transcript_path,
      s.hookBaseline.pre,
      s.hookBaseline.post,
      s.hookBaseline.start,
      s.cli_version,
      s.model,
      s.permission_mode,
      now,
      now,
    );
  return r.changes === 1;
}

export function saveScanState(db: Db, sessionId: string, st: ScanState, now: string): void {
  db.prepare(
    `UPDATE sessions SET transcript_offset = ?, transcript_dev = ?, transcript_ino = ?, transcript_compactions = ?,
       transcript_group = ?, updated_at = ? WHERE session_id = ?`,
  ).run(st.offset, st.dev, st.ino, st.compactions, st.group ? JSON.stringify(st.group) : null, now, sessionId);
}

export function getCompaction(db: Db, sessionId: string, seq: number): CompactionRow | undefined {
  return db.prepare('SELECT * FROM compactions WHERE session_id = ? AND seq = ?').get(sessionId, seq) as
    | CompactionRow
    | undefined;
}

export function compactionsOf(db: Db, sessionId: string): CompactionRow[] {
  return db.prepare('SELECT * FROM compactions WHERE session_id = ? ORDER BY seq').all(sessionId) as CompactionRow[];
}

/** Records that `source` observed compaction `seq`; returns the row as it is now. */
export function observeCompaction(
  db: Db,
  sessionId: string,
  seq: number,
  source: CompactionSource,
  fields: {
    trigger?: string | null;
    turn_id?: string | null;
    transcript_offset?: number | null;
    summary_kind?: string | null;
    /** The transcript record's own id (TranscriptCompaction.boundaryId), when the source has one. */
    boundary_id?: string | null;
  },
  now: string,
): CompactionRow {
  const existing = getCompaction(db, sessionId, seq);
  if (!existing) {
    db.prepare(
      `INSERT INTO compactions (session_id, seq, trigger, observed_via, turn_id, transcript_offset, summary_kind, boundary_id, first_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      sessionId,
      seq,
      fields.trigger ?? null,
      JSON.stringify([source]),
      fields.turn_id ?? null,
      fields.transcript_offset ?? null,
      fields.summary_kind ?? null,
      fields.boundary_id ?? null,
      now,
    );
  } else {
    const via = JSON.parse(existing.observed_via) as string[];
    if (!via.includes(source)) via.push(source);
    db.prepare(
      `UPDATE compactions SET observed_via = ?, trigger = COALESCE(trigger, ?), turn_id = COALESCE(turn_id, ?),
         transcript_offset = COALESCE(transcript_offset, ?), summary_kind = COALESCE(summary_kind, ?),
         boundary_id = COALESCE(boundary_id, ?)
       WHERE session_id = ? AND seq = ?`,
    ).run(
      JSON.stringify(via),
      fields.trigger ?? null,
      fields.turn_id ?? null,
      fields.transcript_offset ?? null,
      fields.summary_kind ?? null,
      fields.boundary_id ?? null,
      sessionId,
      seq,
    );
  }
  return getCompaction(db, sessionId, seq)!;
}

/**
 * Applies an authority event to a session through the state machine and records the transition
 * with its evidence. Returns the new state, or throws with the table's refusal.
 */
export function transition(
  db: Db,
  row: SessionRow,
  event: AuthEvent,
  evidence: Record<string, unknown>,
  reason: string,
  now: string,
): AuthState {
  const r = step(row.state, event);
  if ('refuse' in r) throw new RefusedTransition(r.refuse);
  const to = r.to;
  const startsEpisode = row.state === 'mutable' && to !== 'mutable';
  const endsEpisode = to === 'mutable';
  const restores = row.state !== 'mutable' && to === 'mutable';
  db.prepare(
    `UPDATE sessions SET state = ?, state_reason = ?, episode_started_at = CASE WHEN ? THEN ? WHEN ? THEN NULL ELSE episode_started_at END,
       updated_at = ? WHERE session_id = ?`,
  ).run(to, endsEpisode ? null : reason, startsEpisode ? 1 : 0, now, endsEpisode ? 1 : 0, now, row.session_id);
  db.prepare(
    'INSERT INTO transitions (session_id, at, event, from_state, to_state, evidence_json) VALUES (?, ?, ?, ?, ?, ?)',
  ).run(row.session_id, now, event, row.state, to, JSON.stringify({ reason, ...evidence }));
  if (restores) {
    // A restore closes every compaction number a tripping source reached (see hookSeqOf); a PreCompact
    // that nothing else observed stays open for the next PreCompact.
    closeNumbers(db, row, now, 0);
  }
  row.state = to;
  row.state_reason = endsEpisode ? null : reason;
  if (startsEpisode) row.episode_started_at = now;
  if (endsEpisode) row.episode_started_at = null;
  return to;
}

export class RefusedTransition extends Error {
  override name = 'RefusedTransition';
}

export function recordDenial(
  db: Db,
  d: {
    session_id: string;
    turn_id: string | null;
    tool_name: string;
    tool_use_id: string | null;
    summary: string;
    reasons: unknown;
  },
  now: string,
): void {
  db.prepare(
    'INSERT INTO denials (session_id, at, turn_id, tool_name, tool_use_id, summary, reasons_json) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ).run(d.session_id, now, d.turn_id, d.tool_name, d.tool_use_id, d.summary, JSON.stringify(d.reasons));
}

/** Compaction announcements (src/session/announce.ts) already counted, of those named. */
export function recordedAnnouncements(db: Db, ids: readonly string[]): Set<string> {
  const out = new Set<string>();
  if (ids.length === 0) return out;
  const q = db.prepare('SELECT 1 FROM announcements WHERE id = ?');
  for (const id of ids) if (q.get(id)) out.add(id);
  return out;
}

export function recordAnnouncement(
  db: Db,
  a: { id: string; session_id: string; source: string; announced_at: string | null; seq: number; by_own_hook: boolean },
  now: string,
): void {
  db.prepare(
    `INSERT OR IGNORE INTO announcements (id, session_id, source, announced_at, seq, recorded_at, by_own_hook)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(a.id, a.session_id, a.source, a.announced_at, a.seq, now, a.by_own_hook ? 1 : 0);
}

/** The identity a later resume must match: the newest turn context seen in the transcript. */
export function saveIdentity(db: Db, sessionId: string, turnContext: unknown): void {
  db.prepare('UPDATE sessions SET identity_json = ? WHERE session_id = ?').run(JSON.stringify(turnContext), sessionId);
}

/** Raises a hook source's per-session counter to `seq` (never lowers it). */
export function noteHookSeen(
  db: Db,
  sessionId: string,
  source: Exclude<CompactionSource, 'transcript'>,
  seq: number,
): void {
  db.prepare(`UPDATE sessions SET ${SEEN_COLUMN[source]} = MAX(${SEEN_COLUMN[source]}, ?) WHERE session_id = ?`).run(
    seq,
    sessionId,
  );
}

export function setCompactionCheckpoint(db: Db, sessionId: string, seq: number, checkpointId: string): void {
  db.prepare('UPDATE compactions SET checkpoint_id = ? WHERE session_id = ? AND seq = ?').run(
    checkpointId,
    sessionId,
    seq,
  );
}

export function markTripped(db: Db, sessionId: string, seq: number, now: string): void {
  db.prepare('UPDATE compactions SET tripped_at = ? WHERE session_id = ? AND seq = ?').run(now, sessionId, seq);
}

/** A copy of a compaction in another session (the same boundary id), with that session as it is now. */
export interface BoundaryCopy {
  session: SessionRow;
  compaction: CompactionRow;
}

/** The compactions of the other sessions of `agent` recorded with boundary id `boundaryId`. */
export function boundaryCopies(db: Db, boundaryId: string, exceptSession: string, agent: string): BoundaryCopy[] {
  const rows = db
    .prepare(
      `SELECT c.* FROM compactions c JOIN sessions s ON s.session_id = c.session_id
        WHERE c.boundary_id = ? AND c.session_id <> ? AND s.agent = ? ORDER BY s.created_at, c.session_id, c.seq`,
    )
    .all(boundaryId, exceptSession, agent) as CompactionRow[];
  return rows.map((compaction) => ({ session: getSession(db, compaction.session_id)!, compaction }));
}

/**
 * Settles compaction `seq` of `row` as a restore would, without a human, because every other session
 * holding the same compaction (`from`) had it settled by a human's restore (a fork inheriting its
 * parent's decision, src/guard/compaction.ts): the compaction is marked tripped and the session
 * restored at `now`, with its numbers closed up to `seq` (see hookSeqOf). So a hook observation made
 * or counted after this opens a number above it, and a real compaction of the session still trips.
 * `row` is updated in place (as transition does).
 */
export function settleInherited(db: Db, row: SessionRow, seq: number, from: readonly string[], now: string): void {
  db.prepare('UPDATE compactions SET tripped_at = ?, inherited_from = ? WHERE session_id = ? AND seq = ?').run(
    now,
    JSON.stringify(from),
    row.session_id,
    seq,
  );
  closeNumbers(db, row, now, seq);
}

/** Records the session a fork was taken from, when the store did not know it. */
export function noteParent(db: Db, sessionId: string, parentId: string): void {
  db.prepare('UPDATE sessions SET parent_session_id = ? WHERE session_id = ? AND parent_session_id IS NULL').run(
    parentId,
    sessionId,
  );
}

/**
 * Records a restore of `row` at `now`: closes every compaction number a tripping source reached (and
 * `atLeast`), so a hook observation after it opens the next number (see hookSeqOf). Updates `row`.
 */
function closeNumbers(db: Db, row: SessionRow, now: string, atLeast: number): void {
  db.prepare(
    `UPDATE sessions SET restored_at = ?, updated_at = ?, closed_seq = MAX(closed_seq, seen_post_compact, seen_start_compact,
       transcript_compactions, ?, COALESCE((SELECT MAX(seq) FROM compactions
         WHERE compactions.session_id = sessions.session_id AND tripped_at IS NOT NULL), 0))
     WHERE session_id = ?`,
  ).run(now, now, atLeast, row.session_id);
  const r = db.prepare('SELECT restored_at, closed_seq FROM sessions WHERE session_id = ?').get(row.session_id) as
    | Pick<SessionRow, 'restored_at' | 'closed_seq'>
    | undefined;
  if (r) {
    row.restored_at = r.restored_at;
    row.closed_seq = r.closed_seq;
  }
}
