// Observations: one incremental snapshot of a workspace, its delta against the stat cache, and the
// attribution of each change. A changed file's ctime (a removed file: its parent directory's mtime) is
// compared with the attempts' windows [started, ended]: exactly one window -> that attempt; several ->
// contended (with the set); none -> outside; too close to a window edge, or no time -> unknown.
// "Unknown" is preferred to a wrong attribution. A sub-agent container (the Agent call that runs a
// sub-agent) writes nothing itself: a change inside a call of one of the session's sub-agents is that
// call's, not contended with the container around it (see `attribute`).
import { lstatSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { END_SLACK_NS, nowNs, type AttemptState } from './ledger.js';
import type { Db } from '../store/store.js';
import type { TreeSnapshot } from '../tree/listing.js';
import { observeTree, type WatchSyncHint } from '../tree/observe-tree.js';

/** Window edges closer than this to a change time make the attribution "unknown" (coarse kernel clock). */
export const EDGE_NS = 20_000_000n;

export type Attribution = 'attempt' | 'contended' | 'outside' | 'unknown';

export interface ChangeRecord {
  path: string;
  change: 'added' | 'modified' | 'removed';
  before: { mode: number; size: number; sha256: string } | null;
  after: { mode: number; size: number; sha256: string } | null;
  changed_ns: string | null;
  attribution: Attribution;
  attempt_id: string | null;
  session_id: string | null;
  candidates: string[];
}

export interface Window {
  id: string;
  session_id: string;
  start: bigint;
  end: bigint | null; // null: still running
  /** The sub-agent that made the call (null or absent: the session's main agent). */
  agent_id?: string | null;
  /** A call that runs a sub-agent (the agent's tool of kind `agent`): it changes no file itself. */
  container?: boolean;
}

/**
 * The candidates without the sub-agent containers that a sub-agent's own call covers: a container
 * (Claude Code's Agent/Task call, Codex's spawn_agent) is dropped when a change is inside a call, not
 * itself a container, that a sub-agent of the same session other than the container's own agent
 * made. A foreground sub-agent's calls all run inside the main agent's open Agent call: its Write is
 * the writer, the Agent call only waits for it. A container that no such call covers keeps its window
 * (whatever its sub-agent changed outside any call of its own is the container's).
 */
function withoutContainers(inside: Window[], near: Window[]): { inside: Window[]; near: Window[] } {
  const inner = inside.filter((w) => !w.container && w.agent_id);
  if (inner.length === 0 || !inside.concat(near).some((w) => w.container)) return { inside, near };
  const covered = (c: Window) =>
    c.container === true && inner.some((w) => w.session_id === c.session_id && w.agent_id !== (c.agent_id ?? null));
  return { inside: inside.filter((w) => !covered(w)), near: near.filter((w) => !covered(w)) };
}

/** Attributes a change at time t (ns) among attempt windows. */
export function attribute(
  t: bigint | null,
  windows: Window[],
): { attribution: Attribution; attempt: Window | null; candidates: Window[] } {
  if (t === null) return { attribution: 'unknown', attempt: null, candidates: [] };
  // A change is inside a window only up to its end: the tool had finished by then (ctime never runs
  // ahead of the real write time), so a later change is someone else's (END_SLACK_NS: the clock's error).
  const inWindow = windows.filter((w) => t >= w.start && (w.end === null || t <= w.end + END_SLACK_NS));
  const { inside, near } = withoutContainers(
    inWindow,
    windows.filter((w) => !inWindow.includes(w) && t >= w.start - EDGE_NS && t < w.start),
  );
  // An attempt with no recorded Start (start 0) cannot be timed: whatever it may cover is unknown.
  if (inside.some((w) => w.start === 0n)) return { attribution: 'unknown', attempt: null, candidates: inside };
  if (inside.length === 1 && near.length === 0)
    return { attribution: 'attempt', attempt: inside[0]!, candidates: inside };
  if (inside.length > 1) return { attribution: 'contended', attempt: null, candidates: [...inside, ...near] };
  if (near.length > 0 || inside.length === 1)
    return { attribution: 'unknown', attempt: null, candidates: [...inside, ...near] };
  return { attribution: 'outside', attempt: null, candidates: [] };
}

function changeTime(root: string, path: string, removed: boolean): bigint | null {
  try {
    if (removed) {
      const parent = dirname(path);
      return lstatSync(parent === '.' ? root : join(root, parent), { bigint: true }).mtimeNs;
    }
    return lstatSync(join(root, path), { bigint: true }).ctimeNs;
  } catch {
    return null;
  }
}

function windowsOf(db: Db, workspace: string, sinceNs: bigint): Window[] {
  const rows = db
    .prepare(
      `SELECT id, session_id, agent_id, kind, started_ns, ended_ns, closing_ns, state FROM attempts
        WHERE workspace = ? AND (state IN ('started','closing') OR CAST(ended_ns AS INTEGER) >= ?)`,
    )
    .all(workspace, (sinceNs - 10n * EDGE_NS).toString()) as {
    id: string;
    session_id: string;
    agent_id: string | null;
    kind: string | null;
    started_ns: string;
    ended_ns: string | null;
    closing_ns: string | null;
    state: AttemptState;
  }[];
  // A closing attempt's window already ended: its PostToolUse arrived (closing_ns) after the tool finished.
  const endOf = (r: (typeof rows)[number]) => (r.state === 'started' ? null : (r.ended_ns ?? r.closing_ns));
  return rows.map((r) => {
    const end = endOf(r);
    return {
      id: r.id,
      session_id: r.session_id,
      start: BigInt(r.started_ns),
      end: end === null ? null : BigInt(end),
      agent_id: r.agent_id,
      // Recorded at Start from the agent's own classification (src/guard/events.ts ToolKind).
      container: r.kind === 'agent',
    };
  });
}

/**
 * Snapshots the workspace against the stat cache and records every change since the previous
 * observation, attributed. Must run inside a BEGIN IMMEDIATE transaction: observations of one
 * workspace are serialised, so no change is recorded twice or lost.
 */
export function observeWorkspace(
  db: Db,
  workspace: string,
  by: string,
  now: string,
  isGit?: boolean,
  opts: { digest?: boolean; watch?: WatchSyncHint | null } = {},
): { snapshot: TreeSnapshot; changes: ChangeRecord[] } {
  // The snapshot's entries and sha256 are computed when first read (checkpoints and verify read them);
  // the delta comes straight from the stored state (src/tree/tree.ts, observeTree).
  const obs = observeTree(workspace, db, { isGit, watch: opts.watch });
  const snapshot = obs.snapshot;
  const ws = db.prepare('SELECT scan_gen, last_scan_ns FROM workspaces WHERE workspace = ?').get(workspace) as
    | { scan_gen: number; last_scan_ns: string | null }
    | undefined;
  const gen = (ws?.scan_gen ?? 0) + 1;
  const firstScan = ws === undefined && obs.beforeCount === 0;
  const changes: ChangeRecord[] = [];
  if (!firstScan) {
    const delta = obs.delta;
    if (delta.length > 0) {
      const since = ws?.last_scan_ns ? BigInt(ws.last_scan_ns) : 0n;
      const windows = windowsOf(db, workspace, since);
      const insert = db.prepare(
        `INSERT INTO changes (workspace, scan_gen, observed_at, observed_by, path, change, before_sha256, before_mode, before_size,
           after_sha256, after_mode, after_size, changed_ns, attribution, attempt_id, session_id, candidates_json)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const d of delta) {
        const t = changeTime(workspace, d.path, d.change === 'removed');
        const a = attribute(t, windows);
        const rec: ChangeRecord = {
          path: d.path,
          change: d.change,
          before: d.before && { mode: d.before.mode, size: d.before.size, sha256: d.before.sha256 },
          after: d.after && { mode: d.after.mode, size: d.after.size, sha256: d.after.sha256 },
          changed_ns: t === null ? null : t.toString(),
          attribution: a.attribution,
          attempt_id: a.attempt?.id ?? null,
          session_id:
            a.attempt?.session_id ??
            (a.candidates.length > 0 && a.candidates.every((c) => c.session_id === a.candidates[0]!.session_id)
              ? a.candidates[0]!.session_id
              : null),
          candidates: a.candidates.map((c) => c.id),
        };
        changes.push(rec);
        insert.run(
          workspace,
          gen,
          now,
          by,
          rec.path,
          rec.change,
          rec.before?.sha256 ?? null,
          rec.before?.mode ?? null,
          rec.before?.size ?? null,
          rec.after?.sha256 ?? null,
          rec.after?.mode ?? null,
          rec.after?.size ?? null,
          rec.changed_ns,
          rec.attribution,
          rec.attempt_id,
          rec.session_id,
          JSON.stringify(rec.candidates),
        );
      }
    }
  }
  // workspaces.tree_sha256: the digest when this observation computes it (opts.digest, or a checkpoint
  // or verify observation, whose callers read snapshot.sha256 anyway), otherwise NULL: a Close does not
  // pay for sorting and hashing the whole listing, and the column is never stale.
  const digest = opts.digest || by === 'checkpoint' || by === 'verify' ? snapshot.sha256 : null;
  db.prepare(
    `INSERT INTO workspaces (workspace, scan_gen, last_scan_ns, last_scan_at, tree_sha256, tree_files) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(workspace) DO UPDATE SET scan_gen = excluded.scan_gen, last_scan_ns = excluded.last_scan_ns, last_scan_at = excluded.last_scan_at,
       tree_sha256 = excluded.tree_sha256, tree_files = excluded.tree_files`,
  ).run(workspace, gen, nowNs().toString(), now, digest, snapshot.files);
  return { snapshot, changes };
}
