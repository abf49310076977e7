// `latch verify` (restore authority on evidence + human confirmation) and `latch resume` (lift a pause).
//
// Who may confirm (issue 10): a process of the agent must not be able to restore authority.
//  1. Ancestry (src/guard/contain.ts checkAncestry): refused (exit 77) when this process or an ancestor
//     is an agent process or its sandbox, runs in another pid namespace, was contained at a latch,
//     or is an orphan / terminal multiplexer child that started inside an attempt window.
//  2. Confirmation: interactively, the human types back a one-time code shown on /dev/tty (read
//     from /dev/tty, never stdin: `yes |` cannot answer it). `--yes` is for scripted human use and
//     is refused as well when the process tree looks scheduled (cron/at, or rooted after the latch).
//  3. The transition records how it was confirmed and the ancestry evidence.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { mayMutate } from '../session/authority.js';
import { checkAncestry, type AncestryReport, sameProcess } from '../guard/contain.js';
import { ExitError, EXIT } from '../base/errors.js';
import { latestCompaction, readStatus } from '../continuity/continuity.js';
import { announcedDir, pendingAnnouncements } from '../session/announce.js';
import { evaluateEvidence, type Evidence } from '../checkpoint/evidence.js';
import type { Db } from '../store/store.js';
import {
  getSession,
  recordedAnnouncements,
  RefusedTransition,
  transition,
  type SessionRow,
} from '../session/records.js';
import { immediate } from '../store/store.js';
import { json, withStore, type Io } from './io.js';
import { targetSessions, type TargetOptions } from './shared/target.js';

export interface VerifyOptions extends TargetOptions {
  yes?: boolean;
  json?: boolean;
  /** Accept the listed differences (the human has reviewed them). Recorded with the evidence. */
  acceptChanges?: boolean;
  /** Where the confirmation code is typed (tests inject one); default /dev/tty, null = none. */
  confirmer?: Confirmer | null;
}

/** A terminal only a human sits at: shows a prompt, reads one line. */
export interface Confirmer {
  readonly kind: string;
  ask(prompt: string): Promise<string | null> | string | null;
}

/** The controlling terminal, opened directly (not stdin); null when the process has none. */
export function ttyConfirmer(): Confirmer | null {
  let fd: number;
  try {
    fd = openSync('/dev/tty', 'r+');
  } catch {
    return null;
  }
  return {
    kind: 'tty',
    ask(prompt: string): string | null {
      try {
        writeSync(fd, prompt);
        const buf = Buffer.alloc(256);
        let line = '';
        for (;;) {
          const n = readSync(fd, buf, 0, buf.length, null);
          if (n <= 0) break;
          line += buf.toString('utf8', 0, n);
          if (line.includes('\n') || line.length > 1024) break;
        }
        return line.split('\n')[0] ?? '';
      } catch {
        return null;
      } finally {
        try {
          closeSync(fd);
        } catch {
          /* already closed */
        }
      }
    },
  };
}

const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A short one-time code (two groups of three, no look-alike characters). */
export function confirmationCode(): string {
  let c = '';
  for (let i = 0; i < 6; i++) c += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${c.slice(0, 3)}-${c.slice(3)}`;
}

const normCode = (s: string): string => s.toUpperCase().replace(/[\s-]/g, '');

interface Confirmation {
  by: string;
  ancestry: {
    chain: AncestryReport['chain'];
    pid1_ns: string | null;
    self_ns: string | null;
    notes: string[];
    supported: boolean;
  };
}

function episodeStartNs(rows: SessionRow[]): bigint | null {
  let min: number | null = null;
  for (const r of rows) {
    const t = r.episode_started_at ? Date.parse(r.episode_started_at) : NaN;
    if (Number.isFinite(t) && (min === null || t < min)) min = t;
  }
  return min === null ? null : BigInt(min) * 1_000_000n;
}

function ancestryEvidence(a: AncestryReport): Confirmation['ancestry'] {
  return {
    chain: a.chain.slice(0, 32),
    pid1_ns: a.pid1_ns,
    self_ns: a.self_ns,
    notes: a.notes,
    supported: a.supported,
  };
}

/** The ancestry check; a refusal is an ExitError (exit 77) naming the process. */
export function refuseAgentProcesses(a: AncestryReport, command: string): void {
  if (a.refusals.length === 0) return;
  const lines = a.refusals.map((r) => `  pid ${r.pid} (${r.cmdline || 'unknown'}): ${r.reason}`);
  throw new ExitError(
    EXIT.notHuman,
    `refused: this process may belong to a coding agent, so it cannot restore authority:\n${lines.join('\n')}\n` +
      `A human must run \`${command}\` from their own terminal (one not started by the agent or its tool calls).`,
  );
}

/**
 * The human's confirmation: `--yes` (after the ancestry check, refused when the process tree looks
 * scheduled), else a one-time code typed back on the controlling terminal. Returns how it was
 * confirmed, or null (not confirmed; the message is written).
 */
async function confirm(
  io: Io,
  opts: { yes?: boolean; confirmer?: Confirmer | null },
  a: AncestryReport,
  command: string,
  what: string,
): Promise<string | null> {
  if (opts.yes) {
    if (a.yes_refusals.length > 0) {
      const lines = a.yes_refusals.map((r) => `  pid ${r.pid} (${r.cmdline || 'unknown'}): ${r.reason}`);
      throw new ExitError(
        EXIT.notHuman,
        `refused: --yes is not accepted from this process tree:\n${lines.join('\n')}\nRun \`${command}\` without --yes on your terminal and type the code it shows.`,
      );
    }
    return '--yes';
  }
  const confirmer = opts.confirmer !== undefined ? opts.confirmer : ttyConfirmer();
  if (!confirmer) {
    io.err(
      `${command} needs a human confirmation: run it on a terminal (the code is read from /dev/tty, not stdin), or pass --yes to confirm non-interactively.\n`,
    );
    return null;
  }
  const code = confirmationCode();
  const answer = await confirmer.ask(`\n${what}\nType the code ${code} to confirm (anything else cancels): `);
  if (answer === null || normCode(answer) !== normCode(code)) {
    io.err('Not confirmed; authority stays revoked.\n');
    return null;
  }
  return `${confirmer.kind}-code`;
}

interface SessionOutcome {
  session_id: string;
  state_before: string;
  evidence: Evidence;
  restored: boolean;
  note: string;
}

function printEvidence(io: Io, e: Evidence): void {
  io.out(`\nsession ${e.session_id}\n`);
  if (e.baseline)
    io.out(
      `  baseline checkpoint ${e.baseline.id} (${e.baseline.created_at}): tree ${e.baseline.tree_sha256.slice(0, 16)}… ${e.baseline.tree_files} files\n`,
    );
  io.out(`  now: tree ${e.current.tree_sha256.slice(0, 16)}… ${e.current.tree_files} files\n`);
  for (const c of e.checks) io.out(`  [${c.ok ? 'ok' : 'FAIL'}] ${c.name}: ${c.detail}\n`);
  for (const ch of e.changes.slice(0, 50)) {
    const when = ch.first_seen_at_checkpoint
      ? `by checkpoint ${ch.first_seen_at_checkpoint}`
      : 'after the last checkpoint';
    const by = ch.attribution ? `; ${ch.attribution}${ch.attempt_id ? ` ${ch.attempt_id}` : ''}` : '';
    io.out(`    ${ch.change.padEnd(8)} ${ch.path} (${when}${ch.while_latched ? ', while latched' : ''}${by})\n`);
  }
  if (e.changes.length > 50) io.out(`    … and ${e.changes.length - 50} more (use --json)\n`);
  if (e.attempts.length > 0) {
    io.out(`  attempts since the checkpoint:\n`);
    for (const a of e.attempts.slice(0, 20))
      io.out(`    ${a.started_at} ${a.state.padEnd(9)} ${a.summary ?? a.tool}\n`);
  }
}

/** A process containment listed and did not signal (started during the agent's calls, without its mark). */
interface ListedProcess {
  pid: number;
  cmdline: string;
  why: string;
}

/**
 * The processes containment listed at this session's trips that still run (the same process: its
 * start time is checked): not provably the agent's, so never signalled. The human decides.
 */
function stillListed(db: Db, sessionId: string): ListedProcess[] {
  const rows = db
    .prepare(
      "SELECT pid, start_ticks, cmdline, why FROM contained_processes WHERE session_id = ? AND action = 'listed' ORDER BY id",
    )
    .all(sessionId) as { pid: number; start_ticks: string; cmdline: string | null; why: string }[];
  const seen = new Set<number>();
  const out: ListedProcess[] = [];
  for (const r of rows) {
    if (seen.has(r.pid) || !sameProcess(r.pid, r.start_ticks)) continue;
    seen.add(r.pid);
    out.push({ pid: r.pid, cmdline: r.cmdline ?? '', why: r.why });
  }
  return out;
}

function printListed(io: Io, listed: ListedProcess[]): void {
  if (listed.length === 0) return;
  io.out(
    `  still running, started during the agent's calls but not provably its (not signalled; yours? if not, \`kill\` them before you confirm):\n`,
  );
  for (const p of listed.slice(0, 20)) io.out(`    pid ${p.pid}: ${p.cmdline.slice(0, 100)}\n`);
  if (listed.length > 20) io.out(`    … and ${listed.length - 20} more (use --json)\n`);
}

/** The session's announcements no hook has counted yet (one counted but not removable is no reason to wait). */
function uncounted(db: Db, home: string, sessionId: string): { ids: string[]; problem: string | null } {
  const pending = pendingAnnouncements(home, sessionId);
  const ids = pending.list.map((a) => a.id);
  const counted = recordedAnnouncements(db, ids);
  return { ids: ids.filter((id) => !counted.has(id)), problem: pending.problem };
}

export async function verify(io: Io, opts: VerifyOptions): Promise<number> {
  // The ancestry check first (cheap, refuses the agent before any work), then evidence (slow:
  // hashing), then confirmation, then one transaction per session.
  const prepared = withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const held = sessions.filter((s) => !mayMutate(s.state));
    if (held.length === 0) return { workspace, held: [], ancestry: null };
    const ancestry = checkAncestry(db, {
      episodeStartNs: episodeStartNs(held),
      sessions: held.map((h) => h.session_id),
    });
    refuseAgentProcesses(ancestry, 'latch verify');
    return {
      workspace,
      ancestry,
      held: held.map((row) => ({
        row,
        seq: latestCompaction(db, row.session_id).seq,
        evidence: withBriefCheck(db, row, evaluateEvidence(db, row)),
        listed: stillListed(db, row.session_id),
      })),
    };
  });
  if (prepared.held.length === 0 || !prepared.ancestry) {
    if (opts.json) json(io, { workspace: prepared.workspace, restored: true, sessions: [] });
    else
      io.out(
        `Nothing to verify: no latched or paused session${opts.session ? ` ${opts.session}` : ` in ${prepared.workspace}`}.\n`,
      );
    return EXIT.ok;
  }
  if (!opts.json) {
    io.out(`Re-verification for ${prepared.workspace}\n`);
    for (const p of prepared.held) {
      printEvidence(io, p.evidence);
      printListed(io, p.listed);
    }
  }
  const failing = prepared.held.filter((p) => !p.evidence.holds);
  if (failing.length > 0 && !opts.acceptChanges) {
    const outcomes = prepared.held.map((p) =>
      outcome(p.row, p.evidence, false, p.evidence.holds ? 'evidence holds' : 'evidence does not hold'),
    );
    if (opts.json) json(io, { workspace: prepared.workspace, restored: false, sessions: outcomes });
    else
      io.out(
        `\nEvidence does not hold; authority stays revoked. Review the differences; to accept them as yours, run \`latch verify --accept-changes\`.\n`,
      );
    return EXIT.evidence;
  }

  const running = prepared.held.reduce((n, p) => n + p.listed.length, 0);
  const what = `Restore mutation authority for ${prepared.held.length} session(s) in ${prepared.workspace}${failing.length ? ' accepting the listed differences' : ''}${running ? ` with the ${running} process(es) listed above still running` : ''}?`;
  const confirmedBy = await confirm(io, opts, prepared.ancestry, 'latch verify', what);
  if (confirmedBy === null) return EXIT.usage;
  const confirmation: Confirmation = { by: confirmedBy, ancestry: ancestryEvidence(prepared.ancestry) };

  const outcomes = withStore(io, (db, home) =>
    prepared.held.map(({ row, seq, evidence }) =>
      immediate(db, () => {
        const now = io.now();
        const current = getSession(db, row.session_id)!;
        // A compaction its hooks announced but no hook has counted yet (the store was locked, or the
        // hook died after announcing): restoring now would settle a compaction nobody has seen.
        const pending = uncounted(db, home, row.session_id);
        if (pending.problem || pending.ids.length > 0) {
          return outcome(
            row,
            evidence,
            false,
            pending.problem ??
              `a compaction was announced for this session and is not counted yet (${pending.ids.join(', ')} in ${announcedDir(home)}); the session's next hook counts it: run latch verify again after it`,
          );
        }
        if (
          current.episode_started_at !== row.episode_started_at ||
          current.state !== row.state ||
          current.transcript_compactions !== row.transcript_compactions ||
          latestCompaction(db, row.session_id).seq !== seq
        ) {
          return outcome(
            row,
            evidence,
            false,
            'the session changed during verification (new compaction?); run latch verify again',
          );
        }
        try {
          transition(
            db,
            current,
            'verify',
            {
              confirmed_by: confirmedBy,
              confirmation,
              accepted_changes: !evidence.holds,
              checks: evidence.checks,
              changes: evidence.changes.slice(0, 500),
              baseline: evidence.baseline,
              current: evidence.current,
            },
            'latch verify',
            now,
          );
        } catch (err) {
          if (err instanceof RefusedTransition) return outcome(row, evidence, false, err.message);
          throw err;
        }
        return outcome(
          row,
          evidence,
          true,
          evidence.holds ? 'evidence held; confirmed' : 'differences accepted; confirmed',
        );
      }),
    ),
  );
  const all = outcomes.every((o) => o.restored);
  if (opts.json) json(io, { workspace: prepared.workspace, restored: all, sessions: outcomes });
  else
    for (const o of outcomes)
      io.out(`${o.restored ? 'Restored' : 'NOT restored'}: session ${o.session_id} (${o.note})\n`);
  return all ? EXIT.ok : EXIT.evidence;
}

/**
 * reverify = "both": a human's verify also needs a complete read of the current brief since the latest
 * compaction; reverify = "evidence" shows the read status as a check too (the same evidence that
 * would release the latch by itself).
 */
function withBriefCheck(db: Db, row: SessionRow, e: Evidence): Evidence {
  const policy = JSON.parse(row.policy_json) as { reverify?: string };
  if (policy.reverify !== 'both' && policy.reverify !== 'evidence') return e;
  const r = readStatus(db, row.session_id);
  const checks = [...e.checks, { name: 'brief' as const, ok: r.complete, detail: r.detail }];
  return { ...e, checks, holds: e.holds && r.complete };
}

function outcome(row: SessionRow, evidence: Evidence, restored: boolean, note: string): SessionOutcome {
  return { session_id: row.session_id, state_before: row.state, evidence, restored, note };
}

export async function resume(
  io: Io,
  opts: TargetOptions & { json?: boolean; yes?: boolean; confirmer?: Confirmer | null },
): Promise<number> {
  const prepared = withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const held = sessions.filter((s) => !mayMutate(s.state));
    if (held.length === 0) return { workspace, held, ancestry: null };
    const latched = held.filter((s) => s.state === 'latched');
    if (latched.length > 0) {
      throw new ExitError(
        EXIT.failure,
        `session ${latched.map((s) => s.session_id).join(', ')} is latched under fail_closed: \`latch resume\` only lifts a pause; run \`latch verify\``,
      );
    }
    const ancestry = checkAncestry(db, {
      episodeStartNs: episodeStartNs(held),
      sessions: held.map((h) => h.session_id),
    });
    refuseAgentProcesses(ancestry, 'latch resume');
    return { workspace, held, ancestry };
  });
  if (prepared.held.length === 0 || !prepared.ancestry) {
    io.out(`Nothing to resume in ${prepared.workspace}.\n`);
    return EXIT.ok;
  }
  const what = `Lift the pause of ${prepared.held.length} session(s) in ${prepared.workspace} (${prepared.held.map((s) => s.session_id).join(', ')})?`;
  const confirmedBy = await confirm(io, opts, prepared.ancestry, 'latch resume', what);
  if (confirmedBy === null) return EXIT.usage;
  const confirmation: Confirmation = { by: confirmedBy, ancestry: ancestryEvidence(prepared.ancestry) };
  return withStore(io, (db, home) => {
    const results: string[] = [];
    for (const row of prepared.held) {
      const done = immediate(db, () => {
        const current = getSession(db, row.session_id)!;
        if (current.state !== row.state || current.episode_started_at !== row.episode_started_at) return false;
        const pending = uncounted(db, home, row.session_id);
        if (pending.problem || pending.ids.length > 0) return false; // a compaction not counted yet
        transition(
          db,
          current,
          'resume',
          { by: 'latch resume', confirmed_by: confirmedBy, confirmation },
          'latch resume',
          io.now(),
        );
        return true;
      });
      if (done) results.push(row.session_id);
      else
        io.err(
          `Session ${row.session_id} changed during the confirmation, or a compaction was announced for it and is not counted yet (the session's next hook counts it); run latch resume again.\n`,
        );
    }
    if (opts.json) json(io, { workspace: prepared.workspace, resumed: results });
    else for (const id of results) io.out(`Resumed session ${id}: mutation allowed again.\n`);
    return results.length === prepared.held.length ? EXIT.ok : EXIT.failure;
  });
}
