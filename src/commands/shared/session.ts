// A session as the commands show it (`latch status --json`, `latch report`): state, whether it may
// mutate, what holds it, its checkpoints, last resume decision and contained processes.
import { mayMutate } from '../../session/authority.js';
import { blockers } from '../../guard/guard.js';
import { compactionsOf, type SessionRow } from '../../session/records.js';
import type { Db } from '../../store/store.js';

interface CheckpointJson {
  id: string;
  compaction_seq: number;
  trigger: string | null;
  observed_via: string[];
  created_at: string;
  tree: { sha256: string; files: number };
  git: { head: string | null; branch: string | null };
  transcript: { path: string | null; size: number | null; sha256: string | null };
  /** A fork's copy of a compaction settled in these sessions: inherited, it did not trip (absent otherwise). */
  inherited_from?: string[];
}

export function sessionJson(db: Db, row: SessionRow) {
  const cps = db
    .prepare('SELECT * FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq, created_at')
    .all(row.session_id) as Record<string, unknown>[];
  const compactions = compactionsOf(db, row.session_id);
  const viaOf = new Map(compactions.map((c) => [c.seq, JSON.parse(c.observed_via) as string[]]));
  const inheritedOf = new Map(
    compactions.filter((c) => c.inherited_from).map((c) => [c.seq, JSON.parse(c.inherited_from!) as string[]]),
  );
  const held = blockers(db, row).filter((s) => s.session_id !== row.session_id);
  const denials = (
    db.prepare('SELECT COUNT(*) AS n FROM denials WHERE session_id = ?').get(row.session_id) as { n: number }
  ).n;
  const checkpoints: CheckpointJson[] = cps.map((c) => ({
    id: c.id as string,
    compaction_seq: c.compaction_seq as number,
    trigger: (c.trigger as string | null) ?? compactions.find((k) => k.seq === c.compaction_seq)?.trigger ?? null,
    observed_via: viaOf.get(c.compaction_seq as number) ?? (JSON.parse(c.observed_via as string) as string[]),
    created_at: c.created_at as string,
    tree: { sha256: c.tree_sha256 as string, files: c.tree_files as number },
    git: { head: c.git_head as string | null, branch: c.git_branch as string | null },
    transcript: {
      path: c.transcript_path as string | null,
      size: c.transcript_size as number | null,
      sha256: c.transcript_sha256 as string | null,
    },
    ...(inheritedOf.has(c.compaction_seq as number)
      ? { inherited_from: inheritedOf.get(c.compaction_seq as number)! }
      : {}),
  }));
  const lastResume = db
    .prepare('SELECT at, decision, checks_json FROM resume_decisions WHERE session_id = ? ORDER BY id DESC LIMIT 1')
    .get(row.session_id) as { at: string; decision: string; checks_json: string } | undefined;
  const resume = lastResume
    ? {
        at: lastResume.at,
        decision: lastResume.decision,
        failed: (JSON.parse(lastResume.checks_json) as { name: string; ok: boolean; reason: string }[])
          .filter((c) => !c.ok)
          .map((c) => ({ name: c.name, reason: c.reason })),
      }
    : null;
  const reason =
    row.state_reason ??
    (held.length ? `held by the workspace-scoped latch of session ${held.map((h) => h.session_id).join(', ')}` : null);
  // The processes the agent had left running, stopped and killed at a trip (src/contain/index.ts).
  const contained = db
    .prepare(
      'SELECT compaction_seq, pid, cmdline, why, action, at FROM contained_processes WHERE session_id = ? ORDER BY id',
    )
    .all(row.session_id) as {
    compaction_seq: number;
    pid: number;
    cmdline: string;
    why: string;
    action: string;
    at: string;
  }[];
  return {
    session_id: row.session_id,
    agent: row.agent,
    state: row.state,
    may_mutate: mayMutate(row.state) && held.length === 0,
    held_by: held.map((h) => h.session_id),
    policy: row.policy,
    scope: row.scope,
    workspace: row.workspace,
    parent_session_id: row.parent_session_id,
    latched_since: row.episode_started_at,
    reason,
    compactions: compactions.length,
    denials,
    checkpoints,
    last_resume: resume,
    contained,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
