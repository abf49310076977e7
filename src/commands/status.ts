// `latch status`: sessions, their authority state, checkpoints and why.
import { EXIT } from '../base/errors.js';
import type { Db } from '../store/store.js';
import { readsReport } from '../agents/codex/sandbox.js';
import { claudeReadsReport } from '../agents/claude/sandbox.js';
import { latchHome } from '../base/paths.js';
import { registrationLines, registrationReport, RERECORD_FIX, type RegistrationReport } from '../tamper/index.js';
import { pendingAnnouncements } from '../session/announce.js';
import { json, withStore, type Io } from '../kit/io.js';
import { sessionJson } from './shared/session.js';
import { resolveWorkspace, targetSessions, type TargetOptions } from './shared/target.js';

export async function status(io: Io, opts: TargetOptions & { json?: boolean }): Promise<number> {
  const none = (home: string): number => {
    if (opts.json) json(io, { workspace: resolveWorkspace(io, opts.cwd), sessions: [] });
    else io.out(`No Latch state at ${home} yet: nothing has been recorded (is Latch installed? \`latch doctor\`).\n`);
    return EXIT.ok;
  };
  return withStore(
    io,
    (db, home) => {
      const { workspace, sessions } = targetSessions(db, io, opts);
      // A compaction hook's write-ahead announcement not counted yet (the store was locked, or the hook
      // died after announcing): the session's next hook counts it; verify and resume wait for it.
      const out = sessions.map((s) => {
        const pending = pendingAnnouncements(home, s.session_id);
        return {
          ...sessionJson(db, s),
          announced: { pending: pending.list.map((a) => a.id), problem: pending.problem },
        };
      });
      const registration = safeRegistration(db, workspace);
      // What guards held reads for the agent of the sessions shown (the first one's; Codex by default).
      const reads =
        out[0]?.agent === 'claude' ? claudeReadsReport(latchHome(io.env), io.env) : readsReport(latchHome(io.env));
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
        if (s.announced.problem) io.out(`  compaction announcements: ${s.announced.problem}\n`);
        else if (s.announced.pending.length > 0)
          io.out(
            `  compaction announced, not counted yet: ${s.announced.pending.length} (the session's next hook counts it; verify and resume wait for it)\n`,
          );
        for (const c of s.checkpoints) {
          io.out(
            `  checkpoint ${c.id}: compaction #${c.compaction_seq} (${c.trigger ?? 'trigger unknown'}) via ${c.observed_via.join('+')} at ${c.created_at}\n`,
          );
          io.out(
            `    tree ${c.tree.sha256.slice(0, 16)}… ${c.tree.files} files; git ${c.git.head?.slice(0, 12) ?? '-'} ${c.git.branch ?? ''}\n`,
          );
          if (c.inherited_from)
            io.out(
              `    a fork's copy of a compaction settled in ${c.inherited_from.join(', ')}: inherited, it did not latch\n`,
            );
        }
        const signalled = s.contained.filter((p) => p.action !== 'listed');
        const listed = s.contained.filter((p) => p.action === 'listed');
        if (signalled.length > 0) {
          io.out(
            `  contained at the trip: ${signalled.length} process(es) the agent left running, stopped then killed\n`,
          );
          for (const p of signalled.slice(0, 10))
            io.out(`    pid ${p.pid} ${p.action} (${p.why}): ${p.cmdline.slice(0, 100)}\n`);
          if (signalled.length > 10) io.out(`    … and ${signalled.length - 10} more (--json)\n`);
        }
        if (listed.length > 0) {
          io.out(
            `  started during the agent's calls, not provably the agent's, not signalled: ${listed.length} process(es) (yours? if not, stop them)\n`,
          );
          for (const p of listed.slice(0, 10)) io.out(`    pid ${p.pid} (${p.why}): ${p.cmdline.slice(0, 100)}\n`);
          if (listed.length > 10) io.out(`    … and ${listed.length - 10} more (--json)\n`);
        }
        if (s.last_resume) {
          io.out(
            `  last resume: ${s.last_resume.decision} (${s.last_resume.at})${s.last_resume.failed.length ? ': ' + s.last_resume.failed.map((f) => `${f.name}: ${f.reason}`).join('; ') : ''}\n`,
          );
        }
        if (!s.may_mutate)
          io.out(`  next: a human runs \`latch ${s.state === 'paused' ? 'resume' : 'verify'}\` in ${s.workspace}\n`);
      }
      printRegistration(io, registration);
      io.out(`Reads while held: ${reads.detail}\n`);
      return EXIT.ok;
    },
    { ifMissing: none },
  );
}

/** The registration comparison (src/tamper/index.ts); an error is reported, never thrown. */
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
