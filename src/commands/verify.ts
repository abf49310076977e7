// `latch verify` (restore authority on evidence + human confirmation) and `latch resume` (lift a pause).
//
// Who may confirm (issue 10): a process of the agent must not be able to restore authority.
//  1. Ancestry (src/contain/index.ts checkAncestry): refused (exit 77) when this process or an ancestor
//     is an agent process or its sandbox, runs in another pid namespace, was contained at a latch,
//     or is an orphan / terminal multiplexer child that started inside an attempt window.
//  2. Confirmation: interactively, the human types back a one-time code shown on /dev/tty (read
//     from /dev/tty, never stdin: `yes |` cannot answer it). `--yes` is for scripted human use and
//     is refused as well when the process tree looks scheduled (cron/at, or rooted after the latch).
//  3. The transition records how it was confirmed and the ancestry evidence.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { mayMutate } from '../session/authority.js';
import { checkAncestry, type AncestryReport, sameProcess } from '../contain/index.js';
import { ExitError, EXIT } from '../base/errors.js';
import { latestCompaction, readStatus } from '../continuity/continuity.js';
import { announcedDir, pendingAnnouncements } from '../session/announce.js';
import { assessEvidence, type Evidence, recordAcceptance } from '../checkpoint/evidence.js';
import { diffStat, type DiffStat, type StatFile } from '../checkpoint/diffstat.js';
import { latestBrief } from '../continuity/brief-store.js';
import type { Db } from '../store/store.js';
import {
  getSession,
  recordedAnnouncements,
  RefusedTransition,
  transition,
  type SessionRow,
} from '../session/records.js';
import { immediate } from '../store/store.js';
import { json, withStore, type Io } from '../kit/io.js';
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

/** What the human decides on, per held session: shown before the prompt, carried by --json. */
interface Shown {
  /** The durable task brief's gist (src/continuity/brief.ts), or null: no brief recorded. */
  brief: BriefSummary | null;
  /** The workspace's changes since the baseline, `git diff --stat`-like (the first STAT_FILES paths). */
  diffstat: DiffStat | null;
  /** Processes recorded at this session's trips that still run (the same process: start time checked). */
  processes: RunningProcess[];
}

interface SessionOutcome extends Shown {
  session_id: string;
  state_before: string;
  evidence: Evidence;
  restored: boolean;
  note: string;
}

interface BriefSummary {
  version: number;
  source: string;
  created_at: string;
  /** What the agent was doing (the brief's objective). */
  objective: string;
  done_steps: string[];
  /** Its next step (the brief's next action). */
  next_action: string;
}

/** The most changed paths the stat lists (the rest: a count, and --json's evidence.changes). */
const STAT_FILES = 20;
/** The longest one-line summary of a brief field on the terminal. */
const SUMMARY_CHARS = 240;

function briefOf(db: Db, sessionId: string): BriefSummary | null {
  const b = latestBrief(db, sessionId);
  if (!b) return null;
  return {
    version: b.version,
    source: b.source,
    created_at: b.created_at,
    objective: b.objective,
    done_steps: b.done_steps,
    next_action: b.next_action,
  };
}

/** Text on one line, cut to max characters. */
function gist(text: string, max = SUMMARY_CHARS): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

/** A process containment recorded at one of this session's trips. */
interface RunningProcess {
  pid: number;
  cmdline: string;
  why: string;
  /** What Latch did at the trip: listed (not signalled), stopped, killed, stop_failed: …, kill_failed: … */
  action: string;
  /** Latch sent it a signal (anything but listed). */
  signalled: boolean;
  compaction_seq: number;
}

/**
 * The processes containment recorded at this session's trips that still run (the same process: its
 * start time is checked), the latest record of each. A listed one was not provably the agent's (never
 * signalled); a signalled one that still runs survived its signals. The human decides.
 */
function stillRunning(db: Db, sessionId: string): RunningProcess[] {
  const rows = db
    .prepare(
      'SELECT pid, start_ticks, cmdline, why, action, compaction_seq FROM contained_processes WHERE session_id = ? ORDER BY id DESC',
    )
    .all(sessionId) as {
    pid: number;
    start_ticks: string;
    cmdline: string | null;
    why: string;
    action: string;
    compaction_seq: number;
  }[];
  const seen = new Set<string>();
  const out: RunningProcess[] = [];
  for (const r of rows) {
    const key = `${r.pid}:${r.start_ticks}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!sameProcess(r.pid, r.start_ticks)) continue;
    out.push({
      pid: r.pid,
      cmdline: r.cmdline ?? '',
      why: r.why,
      action: r.action,
      signalled: r.action !== 'listed',
      compaction_seq: r.compaction_seq,
    });
  }
  return out.reverse();
}

function whatLatchDid(p: RunningProcess): string {
  if (p.action === 'listed') return 'listed, not signalled';
  if (p.action === 'stopped') return 'stopped by Latch (SIGSTOP), not killed';
  if (p.action.startsWith('stop_failed') || p.action.startsWith('kill_failed'))
    return `Latch could not stop it (${p.action})`;
  return `${p.action} by Latch at the trip, yet still there`;
}

/** The session as the human sees it before confirming (the same text goes to the prompt under --json). */
function renderSession(row: SessionRow, e: Evidence, shown: Shown): string {
  let t = `\nsession ${e.session_id}: ${row.state}${row.state_reason ? ` (${row.state_reason})` : ''}\n`;
  t += renderBrief(e.session_id, shown.brief);
  if (e.baseline) {
    const what =
      e.baseline.kind === 'accepted'
        ? `the tree accepted at an earlier \`latch verify --accept-changes\` (observed ${e.baseline.created_at})`
        : `checkpoint ${e.baseline.id} (${e.baseline.created_at})`;
    t += `  baseline: ${what}: tree ${e.baseline.tree_sha256.slice(0, 16)}… ${e.baseline.tree_files} files\n`;
  }
  t += `  now: tree ${e.current.tree_sha256.slice(0, 16)}… ${e.current.tree_files} files\n`;
  for (const c of e.checks) t += `  [${c.ok ? 'ok' : 'FAIL'}] ${c.name}: ${c.detail}\n`;
  if (shown.diffstat && shown.diffstat.total > 0 && e.baseline)
    t += renderStat(shown.diffstat, e.changes, e.baseline.kind === 'accepted' ? 'the accepted tree' : 'the checkpoint');
  if (e.attempts.length > 0) {
    t += `  attempts since the ${e.baseline?.kind === 'accepted' ? 'accepted tree' : 'checkpoint'}:\n`;
    for (const a of e.attempts.slice(0, 20)) t += `    ${a.started_at} ${a.state.padEnd(9)} ${a.summary ?? a.tool}\n`;
  }
  t += renderProcesses(shown.processes);
  return t;
}

function renderBrief(sessionId: string, b: BriefSummary | null): string {
  if (!b) return '  brief: no brief recorded\n';
  const about = `brief version ${b.version}, ${b.source}, ${b.created_at}`;
  if (!b.objective.trim() && !b.next_action.trim() && b.done_steps.length === 0)
    return `  brief: no task or next step in it (${about})\n`;
  let t = `  doing: ${b.objective.trim() ? gist(b.objective) : '(not set)'}\n`;
  if (b.done_steps.length > 0)
    t += `  done: ${b.done_steps.length} step(s), the last: ${gist(b.done_steps[b.done_steps.length - 1]!)}\n`;
  t += `  next: ${b.next_action.trim() ? gist(b.next_action) : '(not set)'}\n`;
  t += `  (${about}; all of it: \`latch brief show --session ${sessionId}\`)\n`;
  return t;
}

/** `git diff --stat`'s form: path | count +++--, then the summary line. */
function renderStat(stat: DiffStat, changes: readonly Evidence['changes'][number][], since: string): string {
  const byPath = new Map(changes.map((c) => [c.path, c]));
  const name = (p: string) => (p.length <= 50 ? p : `...${p.slice(-47)}`);
  const width = Math.max(...stat.files.map((f) => name(f.path).length));
  const counts = stat.files.map((f) => (f.added === null ? '?' : String(f.added + (f.removed ?? 0))));
  const cw = Math.max(...counts.map((c) => c.length));
  const most = Math.max(...stat.files.map((f) => (f.added ?? 0) + (f.removed ?? 0)), 1);
  const scale = most > 30 ? 30 / most : 1;
  const bar = (n: number) => (n === 0 ? 0 : Math.max(1, Math.round(n * scale)));
  const graphs = stat.files.map((f, i) => {
    if (f.binary) return `Bin ${f.size_before ?? 0} -> ${f.size_after ?? 0} bytes`;
    if (f.added === null) return `${counts[i]!.padStart(cw)} ${f.size_before ?? 0} -> ${f.size_after ?? 0} bytes`;
    return `${counts[i]!.padStart(cw)} ${'+'.repeat(bar(f.added))}${'-'.repeat(bar(f.removed ?? 0))}`;
  });
  const gw = Math.max(...graphs.map((g) => g.length));
  let t = `  changes since ${since} (${stat.total} path(s)):\n`;
  stat.files.forEach((f, i) => {
    t += `    ${name(f.path).padEnd(width)} | ${graphs[i]!.padEnd(gw)}  ${changeNote(f, byPath.get(f.path))}\n`;
  });
  if (stat.total > stat.files.length) t += `    … and ${stat.total - stat.files.length} more (use --json)\n`;
  const counted = stat.files.filter((f) => f.added !== null).length;
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  t += `    ${plural(stat.total, 'file')} changed, ${plural(stat.insertions, 'insertion')}(+), ${plural(stat.deletions, 'deletion')}(-)`;
  t += counted === stat.total ? '\n' : ` (lines counted in ${counted} of them)\n`;
  return t;
}

function changeNote(f: StatFile, c: Evidence['changes'][number] | undefined): string {
  const parts: string[] = [f.change];
  if (f.mode_change) parts[0] += ` (mode ${f.mode_change})`;
  if (c?.first_seen_at_checkpoint) parts[0] += `, by checkpoint ${c.first_seen_at_checkpoint}`;
  if (c?.attribution) parts.push(`${c.attribution}${c.attempt_id ? ` ${c.attempt_id}` : ''}`);
  if (f.uncounted) parts.push(`lines not counted: ${f.uncounted}`);
  return parts.join('; ');
}

function renderProcesses(procs: readonly RunningProcess[]): string {
  if (procs.length === 0) return '';
  const listed = procs.some((p) => !p.signalled);
  let t = `  still running from the agent's calls (${procs.length})${listed ? '; a listed one may be yours: if not, `kill` it before you confirm' : ''}:\n`;
  for (const p of procs.slice(0, 20))
    t += `    pid ${p.pid}: ${whatLatchDid(p)} (${p.why}): ${p.cmdline.slice(0, 100)}\n`;
  if (procs.length > 20) t += `    … and ${procs.length - 20} more (use --json)\n`;
  return t;
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
      held: held.map((row) => {
        const assessed = assessEvidence(db, row);
        const evidence = withBriefCheck(db, row, assessed.evidence);
        const shown: Shown = {
          brief: briefOf(db, row.session_id),
          diffstat: assessed.before
            ? diffStat(row.workspace, evidence.changes, assessed.before, assessed.after, {
                baseGitHead: assessed.baseGitHead,
                isRepo: assessed.git.isRepo,
                limit: STAT_FILES,
              })
            : null,
          processes: stillRunning(db, row.session_id),
        };
        return { row, seq: latestCompaction(db, row.session_id).seq, assessed, evidence, shown };
      }),
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
  const report = `Re-verification for ${prepared.workspace}\n${prepared.held.map((p) => renderSession(p.row, p.evidence, p.shown)).join('')}`;
  if (!opts.json) io.out(report);
  const failing = prepared.held.filter((p) => !p.evidence.holds);
  if (failing.length > 0 && !opts.acceptChanges) {
    const outcomes = prepared.held.map((p) =>
      outcome(p, false, p.evidence.holds ? 'evidence holds' : 'evidence does not hold'),
    );
    if (opts.json) json(io, { workspace: prepared.workspace, restored: false, sessions: outcomes });
    else
      io.out(
        `\nEvidence does not hold; authority stays revoked. Review the differences; to accept them as yours, run \`latch verify --accept-changes\`.\n`,
      );
    return EXIT.evidence;
  }

  const running = prepared.held.reduce((n, p) => n + p.shown.processes.length, 0);
  const what = `Restore mutation authority for ${prepared.held.length} session(s) in ${prepared.workspace}${failing.length ? ' accepting the listed differences (later verifies compare with this tree)' : ''}${running ? ` with the ${running} process(es) listed above still running` : ''}?`;
  // Under --json stdout is for a program: the human at the terminal sees the same summary in the prompt.
  const confirmedBy = await confirm(
    io,
    opts,
    prepared.ancestry,
    'latch verify',
    opts.json ? `${report}\n${what}` : what,
  );
  if (confirmedBy === null) {
    if (opts.json)
      json(io, {
        workspace: prepared.workspace,
        restored: false,
        sessions: prepared.held.map((p) => outcome(p, false, 'not confirmed')),
      });
    return EXIT.usage;
  }
  const confirmation: Confirmation = { by: confirmedBy, ancestry: ancestryEvidence(prepared.ancestry) };

  const outcomes = withStore(io, (db, home) =>
    prepared.held.map((p) =>
      immediate(db, () => {
        const { row, seq, evidence } = p;
        const now = io.now();
        const current = getSession(db, row.session_id)!;
        // A compaction its hooks announced but no hook has counted yet (the store was locked, or the
        // hook died after announcing): restoring now would settle a compaction nobody has seen.
        const pending = uncounted(db, home, row.session_id);
        if (pending.problem || pending.ids.length > 0) {
          return outcome(
            p,
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
          return outcome(p, false, 'the session changed during verification (new compaction?); run latch verify again');
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
          if (err instanceof RefusedTransition) return outcome(p, false, err.message);
          throw err;
        }
        if (evidence.holds) return outcome(p, true, 'evidence held; confirmed');
        // What the human accepted is the baseline later verifies of this session compare with.
        recordAcceptance(db, row, p.assessed, lastTransitionId(db, row.session_id), now);
        return outcome(p, true, 'differences accepted; confirmed');
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

function outcome(
  p: { row: SessionRow; evidence: Evidence; shown: Shown },
  restored: boolean,
  note: string,
): SessionOutcome {
  return { session_id: p.row.session_id, state_before: p.row.state, evidence: p.evidence, restored, note, ...p.shown };
}

function lastTransitionId(db: Db, sessionId: string): number {
  return (
    db.prepare('SELECT id FROM transitions WHERE session_id = ? ORDER BY id DESC LIMIT 1').get(sessionId) as {
      id: number;
    }
  ).id;
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
