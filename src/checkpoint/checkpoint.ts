// A checkpoint: the durable picture of a session and its workspace at a compaction.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { gitState, type GitState } from '../base/git.js';
import { observeWorkspace } from '../ledger/observe.js';
import { immediate, type Db } from '../store/store.js';
import { encodeListing, type TreeSnapshot } from '../tree/listing.js';

export interface TranscriptPrefix {
  path: string;
  dev: string;
  ino: string;
  size: number;
  sha256: string;
}

export interface WorkspaceEvidence {
  git: GitState;
  tree: TreeSnapshot;
  transcript: TranscriptPrefix | null;
}

export function newCheckpointId(): string {
  const t = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  return `cp_${t}_${randomBytes(4).toString('hex')}`;
}

/** SHA-256 of bytes [0, size) of a file, with its identity. size = null: the whole file as it is now. */
export function hashPrefix(path: string, size: number | null): TranscriptPrefix {
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd, { bigint: true });
    const total = Number(st.size);
    const want = size === null ? total : size;
    if (want > total) throw new Error(`transcript ${path} has ${total} bytes, fewer than the ${want} recorded`);
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(1 << 20);
    let pos = 0;
    while (pos < want) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, want - pos), pos);
      if (n <= 0) throw new Error(`transcript ${path} ended early at ${pos} bytes`);
      h.update(buf.subarray(0, n));
      pos += n;
    }
    return { path, dev: String(st.dev), ino: String(st.ino), size: want, sha256: h.digest('hex') };
  } finally {
    closeSync(fd);
  }
}

/** Collects tree, git and transcript evidence for a workspace. Slow part of a trip; runs outside transactions. */
export function collectEvidence(
  db: Db,
  workspace: string,
  transcript: { path: string; size: number | null } | null,
): WorkspaceEvidence {
  const git = gitState(workspace);
  // An observation, so that changes seen first by a checkpoint still enter the ledger.
  const tree = immediate(db, () =>
    observeWorkspace(db, workspace, 'checkpoint', new Date().toISOString(), git.isRepo),
  ).snapshot;
  return { git, tree, transcript: transcript ? hashPrefix(transcript.path, transcript.size) : null };
}

export interface CheckpointRow {
  id: string;
  session_id: string;
  compaction_seq: number;
  created_at: string;
  turn_id: string | null;
  trigger: string | null;
  observed_via: string;
  workspace: string;
  git_head: string | null;
  git_branch: string | null;
  git_status_sha256: string | null;
  tree_sha256: string;
  tree_files: number;
  tree_listing: Buffer;
  transcript_path: string | null;
  transcript_dev: string | null;
  transcript_ino: string | null;
  transcript_size: number | null;
  transcript_sha256: string | null;
  cli_version: string | null;
  model: string | null;
  permission_mode: string | null;
}

export function checkpointRow(
  ev: WorkspaceEvidence,
  fields: Pick<
    CheckpointRow,
    | 'session_id'
    | 'compaction_seq'
    | 'created_at'
    | 'turn_id'
    | 'trigger'
    | 'observed_via'
    | 'workspace'
    | 'cli_version'
    | 'model'
    | 'permission_mode'
  >,
): CheckpointRow {
  return {
    id: newCheckpointId(),
    ...fields,
    git_head: ev.git.head,
    git_branch: ev.git.branch,
    git_status_sha256: ev.git.statusSha256,
    tree_sha256: ev.tree.sha256,
    tree_files: ev.tree.files,
    tree_listing: encodeListing(ev.tree.entries),
    transcript_path: ev.transcript?.path ?? null,
    transcript_dev: ev.transcript?.dev ?? null,
    transcript_ino: ev.transcript?.ino ?? null,
    transcript_size: ev.transcript?.size ?? null,
    transcript_sha256: ev.transcript?.sha256 ?? null,
  };
}

export function insertCheckpoint(db: Db, row: CheckpointRow): void {
  db.prepare(
    `INSERT INTO checkpoints (id, session_id, compaction_seq, created_at, turn_id, trigger, observed_via, workspace,
       git_head, git_branch, git_status_sha256, tree_sha256, tree_files, tree_listing, transcript_path, transcript_dev,
       transcript_ino, transcript_size, transcript_sha256, cli_version, model, permission_mode)
     VALUES (@id, @session_id, @compaction_seq, @created_at, @turn_id, @trigger, @observed_via, @workspace,
       @git_head, @git_branch, @git_status_sha256, @tree_sha256, @tree_files, @tree_listing, @transcript_path, @transcript_dev,
       @transcript_ino, @transcript_size, @transcript_sha256, @cli_version, @model, @permission_mode)`,
  ).run(row);
}
