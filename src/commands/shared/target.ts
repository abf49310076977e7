// The sessions a command acts on: the workspace of --cwd, or --session ID. Shared by the commands
// (status, log, blame, verify, resume, brief, report, export, exec, watch) so none imports another.
import { resolve } from 'node:path';
import { ExitError, EXIT } from '../../base/errors.js';
import { workspaceRoot } from '../../base/git.js';
import { getSession, sessionsIn, type SessionRow } from '../../session/records.js';
import type { Db } from '../../store/store.js';
import type { Io } from '../../kit/io.js';

export interface TargetOptions {
  cwd?: string;
  session?: string;
}

export function resolveWorkspace(io: Io, cwd: string | undefined): string {
  const dir = resolve(io.cwd, cwd ?? '.');
  try {
    return workspaceRoot(dir);
  } catch {
    return dir;
  }
}

/** The sessions a command acts on: --session ID, else every session in the workspace of --cwd. */
export function targetSessions(
  db: Db,
  io: Io,
  opts: TargetOptions,
): { workspace: string | null; sessions: SessionRow[] } {
  if (opts.session) {
    const row = getSession(db, opts.session);
    if (!row) throw new ExitError(EXIT.usage, `no session ${opts.session} in the Latch store`);
    return { workspace: row.workspace, sessions: [row] };
  }
  const workspace = resolveWorkspace(io, opts.cwd);
  return { workspace, sessions: sessionsIn(db, workspace) };
}
