// `latch verify` (restore authority on evidence + human confirmation) and `latch resume` (lift a pause).
import { mayMutate } from '../core/authority.js';
import { ExitError, EXIT } from '../core/errors.js';
import { readStatus } from '../core/continuity.js';
import { evaluateEvidence, type Evidence } from '../core/evidence.js';
import type { Db } from '../core/store.js';
import { getSession, RefusedTransition, transition, type SessionRow } from '../core/records.js';
import { immediate } from '../core/store.js';
import { json, withStore, type Io } from './io.js';
import { targetSessions, type TargetOptions } from './status.js';

export interface VerifyOptions extends TargetOptions {
  yes?: boolean;
  json?: boolean;
  /** Accept the listed differences (the human has reviewed them). Recorded with the evidence. */
  acceptChanges?: boolean;
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
  if (e.baseline) io.out(`  baseline checkpoint ${e.baseline.id} (${e.baseline.created_at}): tree ${e.baseline.tree_sha256.slice(0, 16)}… ${e.baseline.tree_files} files\n`);
  io.out(`  now: tree ${e.current.tree_sha256.slice(0, 16)}… ${e.current.tree_files} files\n`);
  for (const c of e.checks) io.out(`  [${c.ok ? 'ok' : 'FAIL'}] ${c.name}: ${c.detail}\n`);
  for (const ch of e.changes.slice(0, 50)) {
    const when = ch.first_seen_at_checkpoint ? `by checkpoint ${ch.first_seen_at_checkpoint}` : 'after the last checkpoint';
    const by = ch.attribution ? `; ${ch.attribution}${ch.attempt_id ? ` ${ch.attempt_id}` : ''}` : '';
    io.out(`    ${ch.change.padEnd(8)} ${ch.path} (${when}${ch.while_latched ? ', while latched' : ''}${by})\n`);
  }
  if (e.changes.length > 50) io.out(`    … and ${e.changes.length - 50} more (use --json)\n`);
  if (e.attempts.length > 0) {
    io.out(`  attempts since the checkpoint:\n`);
    for (const a of e.attempts.slice(0, 20)) io.out(`    ${a.started_at} ${a.state.padEnd(9)} ${a.summary ?? a.tool}\n`);
  }
}

export async function verify(io: Io, opts: VerifyOptions): Promise<number> {
  // Evidence first (slow: hashing), then confirmation, then one transaction per session.
  const prepared = withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const held = sessions.filter((s) => !mayMutate(s.state));
    return { workspace, held: held.map((row) => ({ row, evidence: withBriefCheck(db, row, evaluateEvidence(db, row)) })) };
  });
  if (prepared.held.length === 0) {
    if (opts.json) json(io, { workspace: prepared.workspace, restored: true, sessions: [] });
    else io.out(`Nothing to verify: no latched or paused session${opts.session ? ` ${opts.session}` : ` in ${prepared.workspace}`}.\n`);
    return EXIT.ok;
  }
  if (!opts.json) {
    io.out(`Re-verification for ${prepared.workspace}\n`);
    for (const p of prepared.held) printEvidence(io, p.evidence);
  }
  const failing = prepared.held.filter((p) => !p.evidence.holds);
  if (failing.length > 0 && !opts.acceptChanges) {
    const outcomes = prepared.held.map((p) => outcome(p.row, p.evidence, false, p.evidence.holds ? 'evidence holds' : 'evidence does not hold'));
    if (opts.json) json(io, { workspace: prepared.workspace, restored: false, sessions: outcomes });
    else io.out(`\nEvidence does not hold; authority stays revoked. Review the differences; to accept them as yours, run \`latch verify --accept-changes\`.\n`);
    return EXIT.evidence;
  }

  let confirmedBy: string;
  if (opts.yes) confirmedBy = '--yes';
  else if (io.interactive) {
    const q = `\nRestore mutation authority for ${prepared.held.length} session(s)${failing.length ? ' accepting the listed differences' : ''}? [y/N] `;
    const a = (await io.ask(q)).trim().toLowerCase();
    if (a !== 'y' && a !== 'yes') {
      io.err('Not confirmed; authority stays revoked.\n');
      return EXIT.usage;
    }
    confirmedBy = 'tty';
  } else {
    io.err('latch verify needs a human confirmation: run it on a terminal, or pass --yes to confirm non-interactively.\n');
    return EXIT.usage;
  }

  const outcomes = withStore(io, (db) =>
    prepared.held.map(({ row, evidence }) =>
      immediate(db, () => {
        const now = io.now();
        const current = getSession(db, row.session_id)!;
        if (current.episode_started_at !== row.episode_started_at || current.state !== row.state || current.transcript_compactions !== row.transcript_compactions) {
          return outcome(row, evidence, false, 'the session changed during verification (new compaction?); run latch verify again');
        }
        try {
          transition(
            db,
            current,
            'verify',
            { confirmed_by: confirmedBy, accepted_changes: !evidence.holds, checks: evidence.checks, changes: evidence.changes.slice(0, 500), baseline: evidence.baseline, current: evidence.current },
            'latch verify',
            now,
          );
        } catch (err) {
          if (err instanceof RefusedTransition) return outcome(row, evidence, false, err.message);
          throw err;
        }
        return outcome(row, evidence, true, evidence.holds ? 'evidence held; confirmed' : 'differences accepted; confirmed');
      }),
    ),
  );
  const all = outcomes.every((o) => o.restored);
  if (opts.json) json(io, { workspace: prepared.workspace, restored: all, sessions: outcomes });
  else for (const o of outcomes) io.out(`${o.restored ? 'Restored' : 'NOT restored'}: session ${o.session_id} (${o.note})\n`);
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

export async function resume(io: Io, opts: TargetOptions & { json?: boolean }): Promise<number> {
  return withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const held = sessions.filter((s) => !mayMutate(s.state));
    if (held.length === 0) {
      io.out(`Nothing to resume in ${workspace}.\n`);
      return EXIT.ok;
    }
    const latched = held.filter((s) => s.state === 'latched');
    if (latched.length > 0) {
      throw new ExitError(
        EXIT.failure,
        `session ${latched.map((s) => s.session_id).join(', ')} is latched under fail_closed: \`latch resume\` only lifts a pause; run \`latch verify\``,
      );
    }
    const results = held.map((row) =>
      immediate(db, () => {
        transition(db, getSession(db, row.session_id)!, 'resume', { by: 'latch resume' }, 'latch resume', io.now());
        return row.session_id;
      }),
    );
    if (opts.json) json(io, { workspace, resumed: results });
    else for (const id of results) io.out(`Resumed session ${id}: mutation allowed again.\n`);
    return EXIT.ok;
  });
}
