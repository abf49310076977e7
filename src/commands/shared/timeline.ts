// The ledger as the commands read it: recorded changes (ChangeRow, ChangeJson) and the interleaved
// timeline of attempts, changes, compactions, transitions and denials (`latch log`, `latch report`).
import type { AttemptRow } from '../../ledger/ledger.js';
import type { Db } from '../../store/store.js';

export interface ChangeJson {
  path: string;
  change: string;
  attribution: string;
  attempt_id: string | null;
  session_id: string | null;
  candidates: string[];
  observed_at: string;
  observed_by: string;
  before: { sha256: string; mode: number; size: number } | null;
  after: { sha256: string; mode: number; size: number } | null;
}

export interface ChangeRow {
  id: number;
  path: string;
  change: string;
  attribution: string;
  attempt_id: string | null;
  session_id: string | null;
  candidates_json: string;
  observed_at: string;
  observed_by: string;
  before_sha256: string | null;
  before_mode: number | null;
  before_size: number | null;
  after_sha256: string | null;
  after_mode: number | null;
  after_size: number | null;
  /** When the file changed (ns since the epoch: its ctime, or its directory's mtime for a removal); null: untimed. */
  changed_ns: string | null;
}

export function changeJson(r: ChangeRow): ChangeJson {
  return {
    path: r.path,
    change: r.change,
    attribution: r.attribution,
    attempt_id: r.attempt_id,
    session_id: r.session_id,
    candidates: JSON.parse(r.candidates_json) as string[],
    observed_at: r.observed_at,
    observed_by: r.observed_by,
    before: r.before_sha256 === null ? null : { sha256: r.before_sha256, mode: r.before_mode!, size: r.before_size! },
    after: r.after_sha256 === null ? null : { sha256: r.after_sha256, mode: r.after_mode!, size: r.after_size! },
  };
}

export type LogEntry =
  | {
      kind: 'attempt';
      at: string;
      session_id: string;
      turn_id: string | null;
      agent_id: string | null;
      attempt_id: string;
      tool: string;
      summary: string | null;
      state: string;
      ended_at: string | null;
      end_reason: string | null;
      files: ChangeJson[];
    }
  | { kind: 'change'; at: string; session_id: string | null; change: ChangeJson }
  | {
      kind: 'compaction';
      at: string;
      session_id: string;
      seq: number;
      trigger: string | null;
      observed_via: string[];
      checkpoint_id: string | null;
    }
  | {
      kind: 'transition';
      at: string;
      session_id: string;
      event: string;
      from: string;
      to: string;
      reason: string | null;
    }
  | {
      kind: 'denial';
      at: string;
      session_id: string;
      turn_id: string | null;
      tool: string;
      summary: string | null;
      reasons: { code: string; message: string }[];
    };

/** The interleaved timeline of a workspace (or of the given sessions). */
export function timeline(db: Db, workspace: string, sessionIds: string[] | null): LogEntry[] {
  const inSessions = (id: string | null) => sessionIds === null || (id !== null && sessionIds.includes(id));
  const out: LogEntry[] = [];
  const attempts = db
    .prepare('SELECT * FROM attempts WHERE workspace = ? ORDER BY started_ns')
    .all(workspace) as AttemptRow[];
  const changes = db.prepare('SELECT * FROM changes WHERE workspace = ? ORDER BY id').all(workspace) as ChangeRow[];
  const byAttempt = new Map<string, ChangeJson[]>();
  for (const c of changes) {
    if (c.attempt_id) {
      const list = byAttempt.get(c.attempt_id) ?? [];
      list.push(changeJson(c));
      byAttempt.set(c.attempt_id, list);
    } else if (sessionIds === null || (c.session_id !== null && sessionIds.includes(c.session_id))) {
      out.push({ kind: 'change', at: c.observed_at, session_id: c.session_id, change: changeJson(c) });
    }
  }
  for (const a of attempts) {
    if (!inSessions(a.session_id)) continue;
    out.push({
      kind: 'attempt',
      at: a.started_at,
      session_id: a.session_id,
      turn_id: a.turn_id,
      agent_id: a.agent_id,
      attempt_id: a.id,
      tool: a.tool_name,
      summary: a.summary,
      state: a.state,
      ended_at: a.ended_at,
      end_reason: a.end_reason,
      files: byAttempt.get(a.id) ?? [],
    });
  }
  const sessions = (
    db.prepare('SELECT session_id FROM sessions WHERE workspace = ?').all(workspace) as { session_id: string }[]
  )
    .map((r) => r.session_id)
    .filter(inSessions);
  for (const sid of sessions) {
    for (const c of db.prepare('SELECT * FROM compactions WHERE session_id = ? ORDER BY seq').all(sid) as {
      seq: number;
      trigger: string | null;
      observed_via: string;
      checkpoint_id: string | null;
      first_seen_at: string;
    }[]) {
      out.push({
        kind: 'compaction',
        at: c.first_seen_at,
        session_id: sid,
        seq: c.seq,
        trigger: c.trigger,
        observed_via: JSON.parse(c.observed_via),
        checkpoint_id: c.checkpoint_id,
      });
    }
    for (const t of db.prepare('SELECT * FROM transitions WHERE session_id = ? ORDER BY id').all(sid) as {
      at: string;
      event: string;
      from_state: string;
      to_state: string;
      evidence_json: string;
    }[]) {
      const ev = JSON.parse(t.evidence_json) as { reason?: string };
      out.push({
        kind: 'transition',
        at: t.at,
        session_id: sid,
        event: t.event,
        from: t.from_state,
        to: t.to_state,
        reason: ev.reason ?? null,
      });
    }
    for (const d of db.prepare('SELECT * FROM denials WHERE session_id = ? ORDER BY id').all(sid) as {
      at: string;
      turn_id: string | null;
      tool_name: string;
      summary: string | null;
      reasons_json: string;
    }[]) {
      out.push({
        kind: 'denial',
        at: d.at,
        session_id: sid,
        turn_id: d.turn_id,
        tool: d.tool_name,
        summary: d.summary,
        reasons: JSON.parse(d.reasons_json),
      });
    }
  }
  // Stable: by time, then by kind order within the same millisecond.
  const rank: Record<LogEntry['kind'], number> = { compaction: 0, transition: 1, denial: 2, attempt: 3, change: 4 };
  return out
    .map((e, i) => ({ e, i }))
    .sort((x, y) => (x.e.at < y.e.at ? -1 : x.e.at > y.e.at ? 1 : rank[x.e.kind] - rank[y.e.kind] || x.i - y.i))
    .map((x) => x.e);
}
