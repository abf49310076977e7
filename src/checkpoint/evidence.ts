// Re-verification evidence: does the workspace still match the checkpoint(s) of the current latch?
import { existsSync, lstatSync, statSync } from 'node:fs';
import type { CheckpointRow } from './checkpoint.js';
import { hashPrefix } from './checkpoint.js';
import { errorMessage } from '../base/errors.js';
import { gitState } from '../base/git.js';
import { REPAIR_CODE, type SessionRow } from '../session/records.js';
import type { Db } from '../store/store.js';
import { orphanedClosings } from '../ledger/ledger.js';
import { observeWorkspace } from '../ledger/observe.js';
import { immediate } from '../store/store.js';
import { decodeListing, diffTrees, encodeListing, type TreeEntry } from '../tree/listing.js';
import type { GitState } from '../base/git.js';

export interface Check {
  name: 'checkpoint' | 'tree' | 'git' | 'transcript' | 'attempts' | 'brief';
  ok: boolean;
  detail: string;
}

export interface Change {
  path: string;
  change: 'added' | 'removed' | 'modified';
  /** The checkpoint that first shows the change, or null when it came after the last one. */
  first_seen_at_checkpoint: string | null;
  while_latched: boolean;
  /** The ledger's attribution of the newest recorded change to this path (null if none recorded). */
  attribution: string | null;
  attempt_id: string | null;
}

export interface AttemptSummary {
  id: string;
  tool: string;
  summary: string | null;
  state: string;
  started_at: string;
  end_reason: string | null;
}

/**
 * What the workspace is compared with: the first checkpoint of the latch, or the tree a human accepted
 * at an earlier `latch verify --accept-changes` when that is newer (it was observed before that
 * verify restored authority, so before this latch began: nothing made while latched is in it).
 */
export interface Baseline {
  kind: 'checkpoint' | 'accepted';
  /** The checkpoint's id, or `accepted:<transition id>`. */
  id: string;
  /** When the checkpoint was taken, or when verify observed the accepted tree. */
  created_at: string;
  tree_sha256: string;
  tree_files: number;
}

export interface Evidence {
  session_id: string;
  baseline: Baseline | null;
  checkpoints: string[];
  current: { tree_sha256: string; tree_files: number; git_head: string | null; git_branch: string | null };
  checks: Check[];
  changes: Change[];
  /** The session's mutation attempts since the baseline checkpoint. */
  attempts: AttemptSummary[];
  holds: boolean;
}

/** Checkpoints of the current latch episode (oldest first); for an inherited latch, the parent's latest. */
export function episodeCheckpoints(db: Db, row: SessionRow): CheckpointRow[] {
  const own = row.episode_started_at
    ? (db
        .prepare(
          `SELECT c.* FROM checkpoints c JOIN compactions k ON k.session_id = c.session_id AND k.seq = c.compaction_seq
           WHERE c.session_id = ? AND k.tripped_at >= ? ORDER BY c.compaction_seq`,
        )
        .all(row.session_id, row.episode_started_at) as CheckpointRow[])
    : [];
  if (own.length > 0) return own;
  const ids = [row.session_id, row.parent_session_id].filter((x): x is string => !!x);
  for (const id of ids) {
    const last = db
      .prepare('SELECT * FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq DESC LIMIT 1')
      .get(id) as CheckpointRow | undefined;
    if (last) return [last];
  }
  return [];
}

/** A baseline with what the comparisons need (its listing and git state). */
interface BaselineSource extends Baseline {
  listing: Buffer;
  git_head: string | null;
  git_branch: string | null;
}

/** The evidence, with what verify shows and records beside it (not part of the evidence's JSON). */
export interface Assessment {
  evidence: Evidence;
  /** The baseline's entries (null: no baseline) and the workspace's as observed now. */
  before: TreeEntry[] | null;
  after: TreeEntry[];
  /** The git commit the baseline recorded (where the content it had may be read back), if any. */
  baseGitHead: string | null;
  git: GitState;
  /** When the workspace was observed. */
  observedAt: string;
}

/** The tree a human accepted at the session's latest `latch verify --accept-changes`, if any. */
function acceptedBaseline(db: Db, row: SessionRow): BaselineSource | null {
  const r = db
    .prepare(
      'SELECT transition_id, observed_at, git_head, git_branch, tree_sha256, tree_files, tree_listing FROM accepted_baselines WHERE session_id = ? AND workspace = ?',
    )
    .get(row.session_id, row.workspace) as
    | {
        transition_id: number;
        observed_at: string;
        git_head: string | null;
        git_branch: string | null;
        tree_sha256: string;
        tree_files: number;
        tree_listing: Buffer;
      }
    | undefined;
  if (!r) return null;
  return {
    kind: 'accepted',
    id: `accepted:${r.transition_id}`,
    created_at: r.observed_at,
    tree_sha256: r.tree_sha256,
    tree_files: r.tree_files,
    listing: r.tree_listing,
    git_head: r.git_head,
    git_branch: r.git_branch,
  };
}

function checkpointBaseline(c: CheckpointRow): BaselineSource {
  return {
    kind: 'checkpoint',
    id: c.id,
    created_at: c.created_at,
    tree_sha256: c.tree_sha256,
    tree_files: c.tree_files,
    listing: c.tree_listing,
    git_head: c.git_head,
    git_branch: c.git_branch,
  };
}

export function evaluateEvidence(db: Db, row: SessionRow): Evidence {
  return assessEvidence(db, row).evidence;
}

export function assessEvidence(db: Db, row: SessionRow): Assessment {
  const cps = episodeCheckpoints(db, row);
  const git = gitState(row.workspace);
  const observedAt = new Date().toISOString();
  const tree = immediate(db, () => observeWorkspace(db, row.workspace, 'verify', observedAt, git.isRepo)).snapshot;
  const checks: Check[] = [];
  const changes: Change[] = [];
  const first = cps[0];
  // Accepted differences are not listed again: a tree a human accepted after the latch's first
  // checkpoint was taken (a checkpoint taken while latched, before that verify) is the newer baseline.
  const accepted = acceptedBaseline(db, row);
  const baseline =
    accepted && (!first || accepted.created_at > first.created_at)
      ? accepted
      : first
        ? checkpointBaseline(first)
        : null;
  const current = { tree_sha256: tree.sha256, tree_files: tree.files, git_head: git.head, git_branch: git.branch };
  const assessment = (evidence: Evidence, before: TreeEntry[] | null): Assessment => ({
    evidence,
    before,
    after: tree.entries,
    baseGitHead: baseline?.git_head ?? null,
    git,
    observedAt,
  });
  if (!baseline) {
    checks.push(noCheckpoint(row));
    checks.push(attemptsCheck(db, row));
    return assessment(
      {
        session_id: row.session_id,
        baseline: null,
        checkpoints: [],
        current,
        checks,
        changes,
        attempts: [],
        holds: false,
      },
      null,
    );
  }
  const via =
    baseline.kind === 'accepted'
      ? `; the tree accepted at latch verify (observed ${baseline.created_at}) is ${first ? `newer than ${first.id}: it is ` : ''}the baseline`
      : '';
  checks.push(
    first
      ? {
          name: 'checkpoint',
          ok: true,
          detail: `${cps.length} checkpoint(s) since the latch: ${cps.map((c) => c.id).join(', ')}${via}`,
        }
      : { ...noCheckpoint(row), detail: `${noCheckpoint(row).detail}${via}` },
  );
  const what = baseline.kind === 'accepted' ? 'the accepted tree' : `checkpoint ${baseline.id}`;
  const before = decodeListing(baseline.listing);

  if (tree.sha256 === baseline.tree_sha256) {
    checks.push({
      name: 'tree',
      ok: true,
      detail: `workspace tree unchanged: ${tree.files} files, sha256 ${tree.sha256}`,
    });
  } else {
    const diff = diffTrees(before, tree.entries);
    // The checkpoints taken after the baseline: the first one that already shows a change dates it.
    const later = (
      baseline.kind === 'checkpoint' ? cps.slice(1) : cps.filter((c) => c.created_at > baseline.created_at)
    ).map((c) => ({ id: c.id, byPath: indexByPath(decodeListing(c.tree_listing)) }));
    const firstSeen = (path: string, after: TreeEntry | undefined): string | null => {
      for (const c of later) {
        const e = c.byPath.get(path);
        if (
          (after === undefined && e === undefined) ||
          (after && e && e.sha256 === after.sha256 && e.mode === after.mode)
        )
          return c.id;
      }
      return null;
    };
    const latest = db.prepare(
      'SELECT attribution, attempt_id FROM changes WHERE workspace = ? AND path = ? ORDER BY id DESC LIMIT 1',
    );
    const who = (path: string) =>
      (latest.get(row.workspace, path) as { attribution: string; attempt_id: string | null } | undefined) ?? {
        attribution: null,
        attempt_id: null,
      };
    for (const e of diff.added)
      changes.push({
        path: e.path,
        change: 'added',
        first_seen_at_checkpoint: firstSeen(e.path, e),
        while_latched: true,
        ...who(e.path),
      });
    for (const e of diff.removed)
      changes.push({
        path: e.path,
        change: 'removed',
        first_seen_at_checkpoint: firstSeen(e.path, undefined),
        while_latched: true,
        ...who(e.path),
      });
    for (const m of diff.modified)
      changes.push({
        path: m.after.path,
        change: 'modified',
        first_seen_at_checkpoint: firstSeen(m.after.path, m.after),
        while_latched: true,
        ...who(m.after.path),
      });
    changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    checks.push({
      name: 'tree',
      ok: false,
      detail: `workspace tree changed since ${what}: ${changes.length} path(s) (${baseline.tree_files} -> ${tree.files} files)`,
    });
  }

  if (!git.isRepo) {
    checks.push({ name: 'git', ok: true, detail: 'not a git repository' });
  } else if (git.head === baseline.git_head && git.branch === baseline.git_branch) {
    checks.push({
      name: 'git',
      ok: true,
      detail: `HEAD ${git.head ?? '(none)'} on ${git.branch ?? '(detached)'}, as at ${baseline.kind === 'accepted' ? 'the acceptance' : 'the checkpoint'}`,
    });
  } else {
    checks.push({
      name: 'git',
      ok: false,
      detail: `git moved: HEAD ${baseline.git_head ?? '(none)'} on ${baseline.git_branch ?? '(detached)'} -> ${git.head ?? '(none)'} on ${git.branch ?? '(detached)'}`,
    });
  }

  checks.push(transcriptCheck(cps));
  checks.push(attemptsCheck(db, row));
  const attempts = (
    db
      .prepare(
        'SELECT id, tool_name, summary, state, started_at, end_reason FROM attempts WHERE session_id = ? AND started_at >= ? ORDER BY started_ns',
      )
      .all(row.session_id, baseline.created_at) as {
      id: string;
      tool_name: string;
      summary: string | null;
      state: string;
      started_at: string;
      end_reason: string | null;
    }[]
  ).map((a) => ({
    id: a.id,
    tool: a.tool_name,
    summary: a.summary,
    state: a.state,
    started_at: a.started_at,
    end_reason: a.end_reason,
  }));
  return assessment(
    {
      session_id: row.session_id,
      baseline: pickBaseline(baseline),
      checkpoints: cps.map((c) => c.id),
      current,
      checks,
      changes,
      attempts,
      holds: checks.every((c) => c.ok),
    },
    before,
  );
}

function noCheckpoint(row: SessionRow): Check {
  return {
    name: 'checkpoint',
    ok: false,
    detail: row.state_reason?.startsWith(REPAIR_CODE)
      ? 'the store was repaired after corruption (`latch doctor --repair`): whatever was recorded for this session before stayed in the old store, so nothing proves the workspace is unchanged; review it, then accept it as it is (`latch verify --accept-changes`)'
      : 'no checkpoint was recorded for this latch, so nothing proves the workspace is unchanged',
  };
}

/**
 * `latch verify --accept-changes` restored authority: the tree and git state it showed become the
 * session's accepted baseline (in the restoring transaction, after the transition).
 */
export function recordAcceptance(
  db: Db,
  row: Pick<SessionRow, 'session_id' | 'workspace'>,
  a: Assessment,
  transitionId: number,
  now: string,
): void {
  db.prepare(
    `INSERT OR REPLACE INTO accepted_baselines (session_id, transition_id, accepted_at, observed_at, workspace, git_head,
       git_branch, tree_sha256, tree_files, tree_listing, changes)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.session_id,
    transitionId,
    now,
    a.observedAt,
    row.workspace,
    a.git.head,
    a.git.branch,
    a.evidence.current.tree_sha256,
    a.evidence.current.tree_files,
    encodeListing(a.after),
    a.evidence.changes.length,
  );
}

/** Verification waits for every attempt of the session to end, and for the workspace's recovery. */
function attemptsCheck(db: Db, row: SessionRow): Check {
  const live = db
    .prepare("SELECT id, state, summary FROM attempts WHERE session_id = ? AND state IN ('started','closing')")
    .all(row.session_id) as { id: string; state: string; summary: string | null }[];
  if (live.length > 0) {
    return {
      name: 'attempts',
      ok: false,
      detail: `${live.length} attempt(s) still live or unrecovered: ${live.map((a) => `${a.summary ?? a.id} (${a.state})`).join('; ')}; wait for the turn to end`,
    };
  }
  const orphans = orphanedClosings(db, row.workspace);
  if (orphans.length > 0)
    return {
      name: 'attempts',
      ok: false,
      detail: `${orphans.length} attempt(s) in the workspace await recovery (their hook process died)`,
    };
  return { name: 'attempts', ok: true, detail: 'no live or unrecovered attempts' };
}

function pickBaseline(b: BaselineSource): Baseline {
  return { kind: b.kind, id: b.id, created_at: b.created_at, tree_sha256: b.tree_sha256, tree_files: b.tree_files };
}

function indexByPath(entries: TreeEntry[]): Map<string, TreeEntry> {
  return new Map(entries.map((e) => [e.path, e]));
}

/** The transcript must be the same file as recorded at every checkpoint, and only appended to. */
function transcriptCheck(cps: CheckpointRow[]): Check {
  const recorded = cps.filter((c) => c.transcript_path);
  if (recorded.length === 0)
    return { name: 'transcript', ok: true, detail: 'no transcript was recorded at the checkpoint(s)' };
  const missingHash = recorded.find((c) => !c.transcript_sha256);
  if (missingHash)
    return { name: 'transcript', ok: false, detail: `checkpoint ${missingHash.id} could not hash the transcript` };
  for (const c of recorded) {
    const path = c.transcript_path!;
    if (!existsSync(path)) return { name: 'transcript', ok: false, detail: `transcript ${path} no longer exists` };
    if (lstatSync(path).isSymbolicLink())
      return { name: 'transcript', ok: false, detail: `transcript ${path} is now a symlink` };
    try {
      const st = statSync(path, { bigint: true });
      const now = { dev: String(st.dev), ino: String(st.ino), size: Number(st.size) };
      if (now.dev !== c.transcript_dev || now.ino !== c.transcript_ino)
        return { name: 'transcript', ok: false, detail: `transcript ${path} was replaced (device/inode changed)` };
      if (now.size < c.transcript_size!)
        return {
          name: 'transcript',
          ok: false,
          detail: `transcript ${path} shrank (${c.transcript_size} -> ${now.size} bytes)`,
        };
      const prefix = hashPrefix(path, c.transcript_size!);
      if (prefix.sha256 !== c.transcript_sha256)
        return {
          name: 'transcript',
          ok: false,
          detail: `transcript ${path} was rewritten within its first ${c.transcript_size} bytes`,
        };
    } catch (err) {
      return { name: 'transcript', ok: false, detail: `transcript ${path} cannot be read: ${errorMessage(err)}` };
    }
  }
  const last = recorded[recorded.length - 1]!;
  return {
    name: 'transcript',
    ok: true,
    detail: `transcript ${last.transcript_path} is the same file and was only appended to`,
  };
}
