// `latch status`: sessions, their authority state, checkpoints and why.
import { resolve } from 'node:path';
import { mayMutate } from '../session/authority.js';
import { ExitError, EXIT } from '../base/errors.js';
import { workspaceRoot } from '../base/git.js';
import { blockers } from '../guard/guard.js';
import { compactionsOf, getSession, sessionsIn, type SessionRow } from '../session/records.js';
import type { Db } from '../store/store.js';
import { readsReport } from '../agents/codex/sandbox.js';
import { latchHome } from '../base/paths.js';
import { registrationLines, registrationReport, RERECORD_FIX, type RegistrationReport } from '../guard/tamper.js';
import { json, withStore, type Io } from './io.js';

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
export function targetSessions(db: Db, io: Io, opts: TargetOptions): { workspace: string | null; sessions: SessionRow[] } {
  if (opts.session) {
    const row = getSession(db, opts.session);
    if (!row) throw new ExitError(EXIT.usage, `no session ${opts.session} in the Latch store`);
    return { workspace: row.workspace, sessions: [row] };
  }
  const workspace = resolveWorkspace(io, opts.cwd);
  return { workspace, sessions: sessionsIn(db, workspace) };
}

interface CheckpointJson {
  id: string;
  compaction_seq: number;
  trigger: string | null;
  observed_via: string[];
  created_at: string;
  tree: { sha256: string; files: number };
  git: { head: string | null; branch: string | null };
  transcript: { path: string | null; size: number | null; sha256: string | null };
}

export function sessionJson(db: Db, row: SessionRow) {
  const cps = db.prepare('SELECT * FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq, created_at').all(row.session_id) as Record<string, unknown>[];
  const compactions = compactionsOf(db, row.session_id);
  const viaOf = new Map(compactions.map((c) => [c.seq, JSON.parse(c.observed_via) as string[]]));
  const held = blockers(db, row).filter((s) => s.session_id !== row.session_id);
  const denials = (db.prepare('SELECT COUNT(*) AS n FROM denials WHERE session_id = ?').get(row.session_id) as { n: number }).n;
  const checkpoints: CheckpointJson[] = cps.map((c) => ({
    id: c.id as string,
    compaction_seq: c.compaction_seq as number,
    trigger: (c.trigger as string | null) ?? compactions.find((k) => k.seq === c.compaction_seq)?.trigger ?? null,
    observed_via: viaOf.get(c.compaction_seq as number) ?? (JSON.parse(c.observed_via as string) as string[]),
    created_at: c.created_at as string,
    tree: { sha256: c.tree_sha256 as string, files: c.tree_files as number },
    git: { head: c.git_head as string | null, branch: c.git_branch as string | null },
    transcript: { path: c.transcript_path as string | null, size: c.transcript_size as number | null, sha256: c.transcript_sha256 as string | null },
  }));
  const lastResume = db.prepare('SELECT at, decision, checks_json FROM resume_decisions WHERE session_id = ? ORDER BY id DESC LIMIT 1').get(row.session_id) as
    | { at: string; decision: string; checks_json: string }
    | undefined;
  const resume = lastResume
    ? {
        at: lastResume.at,
        decision: lastResume.decision,
        failed: (JSON.parse(lastResume.checks_json) as { name: string; ok: boolean; reason: string }[]).filter((c) => !c.ok).map((c) => ({ name: c.name, reason: c.reason })),
      }
    : null;
  const reason = row.state_reason ?? (held.length ? `held by the workspace-scoped latch of session ${held.map((h) => h.session_id).join(', ')}` : null);
  // The processes the agent had left running, stopped and killed at a trip (src/guard/contain.ts).
  const contained = db
    .prepare('SELECT compaction_seq, pid, cmdline, why, action, at FROM contained_processes WHERE session_id = ? ORDER BY id')
    .all(row.session_id) as { compaction_seq: number; pid: number; cmdline: string; why: string; action: string; at: string }[];
  return {
    session_id: row.session_id,
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

export async function status(io: Io, opts: TargetOptions & { json?: boolean }): Promise<number> {
  const none = (home: string): number => {
    if (opts.json) json(io, { workspace: resolveWorkspace(io, opts.cwd), sessions: [] });
    else io.out(`No Latch state at ${home} yet: nothing has been recorded (is Latch installed? \`latch doctor\`).\n`);
    return EXIT.ok;
  };
  return withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const out = sessions.map((s) => sessionJson(db, s));
    const registration = safeRegistration(db, workspace);
    const reads = readsReport(latchHome(io.env));
    if (opts.json) {
      json(io, { workspace, sessions: out, registration, reads });
      return EXIT.ok;
    }
    if (out.length === 0) {
      io.out(`No sessions recorded for ${workspace}.\n`);
      printRegistration(io, registration);
      io.out(`Reads while held: ${reads.detail}\n`);
      return EXIT.ok;
    }
    io.out(`Workspace ${workspace}\n`);
    for (const s of out) {
      const mark = s.may_mutate ? 'may mutate' : 'mutation blocked';
      io.out(`\nsession ${s.session_id}: ${s.state} (${mark}; policy ${s.policy}, scope ${s.scope})\n`);
      if (s.reason) io.out(`  reason: ${s.reason}\n`);
      io.out(`  compactions: ${s.compactions}, denied calls: ${s.denials}\n`);
      for (const c of s.checkpoints) {
        io.out(`  checkpoint ${c.id}: compaction #${c.compaction_seq} (${c.trigger ?? 'trigger unknown'}) via ${c.observed_via.join('+')} at ${c.created_at}\n`);
        io.out(`    tree ${c.tree.sha256.slice(0, 16)}… ${c.tree.files} files; git ${c.git.head?.slice(0, 12) ?? '-'} ${c.git.branch ?? ''}\n`);
      }
      if (s.contained.length > 0) {
        io.out(`  contained at the trip: ${s.contained.length} process(es) the agent left running, stopped then killed\n`);
        for (const p of s.contained.slice(0, 10)) io.out(`    pid ${p.pid} ${p.action} (${p.why}): ${p.cmdline.slice(0, 100)}\n`);
        if (s.contained.length > 10) io.out(`    … and ${s.contained.length - 10} more (--json)\n`);
      }
      if (s.last_resume) {
        io.out(`  last resume: ${s.last_resume.decision} (${s.last_resume.at})${s.last_resume.failed.length ? ': ' + s.last_resume.failed.map((f) => `${f.name}: ${f.reason}`).join('; ') : ''}\n`);
      }
      if (!s.may_mutate) io.out(`  next: a human runs \`latch ${s.state === 'paused' ? 'resume' : 'verify'}\` in ${s.workspace}\n`);
    }
    printRegistration(io, registration);
    io.out(`Reads while held: ${reads.detail}\n`);
    return EXIT.ok;
  }, { ifMissing: none });
}

/** The registration comparison (src/guard/tamper.ts); an error is reported, never thrown. */
function safeRegistration(db: Db, workspace: string | null): RegistrationReport | { status: 'unknown'; error: string } {
  try {
    return registrationReport(db, workspace);
  } catch (err) {
    return { status: 'unknown', error: err instanceof Error ? err.message : String(err) };
  }
}

function printRegistration(io: Io, r: RegistrationReport | { status: 'unknown'; error: string }): void {
  io.out('\n');
  if ('error' in r) {
    io.out(`Registration: cannot compare (${r.error})\n`);
    return;
  }
  const [first, ...rest] = registrationLines(r);
  io.out(`Registration: ${first}\n`);
  for (const l of rest) io.out(`  ${l}\n`);
  if (r.status === 'changed') io.out(`  next: ${RERECORD_FIX}\n`);
  if (r.status === 'unrecorded') io.out('  next: run `latch setup codex` to record it\n');
}
