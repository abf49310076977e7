// Continuity with proof: brief capture at compaction, delivery at SessionStart(compact|resume), read
// receipts proven from the transcript, native-resume qualification, and evidence-based re-verification.
// Slow path (loaded through slow.ts): it hashes transcripts and reads briefs.
import { lstatSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { mayMutate } from '../session/authority.js';
import { pageCommand } from '../base/command.js';
import { fitContext, verifyRead, CONTEXT_CHARS, type Brief } from './brief.js';
import { getBrief, latestBrief, recordAutoBrief } from './brief-store.js';
import { hashPrefix } from '../checkpoint/checkpoint.js';
import { evaluateEvidence, type Evidence } from '../checkpoint/evidence.js';
import type { QualifyDecision, RecordedTranscript } from './qualify.js';
import type { AgentParts } from '../agents/agent.js';
import type { SessionRow } from '../session/records.js';
import type { Db } from '../store/store.js';
import type { BriefOutput, TurnIdentity } from '../session/transcript.js';

/** Captures (or refreshes) the brief at a compaction. */
export function captureBrief(
  db: Db,
  row: SessionRow,
  transcriptPath: string | null,
  now: string,
  agent: AgentParts,
): Brief {
  return recordAutoBrief(db, row.session_id, transcriptPath, now, agent.capture);
}

/** The newest compaction seq of a session (0: none). */
export function latestCompaction(
  db: Db,
  sessionId: string,
): { seq: number; first_seen_at: string | null; transcript_offset: number | null } {
  const r = db
    .prepare(
      'SELECT seq, first_seen_at, transcript_offset FROM compactions WHERE session_id = ? ORDER BY seq DESC LIMIT 1',
    )
    .get(sessionId) as { seq: number; first_seen_at: string; transcript_offset: number | null } | undefined;
  return r ?? { seq: 0, first_seen_at: null, transcript_offset: null };
}

/** Records read receipts for brief-page outputs found by the transcript scan (idempotent per call). */
export function recordReads(
  db: Db,
  row: SessionRow,
  outputs: BriefOutput[],
  now: string,
  agent: Pick<AgentParts, 'toolOutput'>,
): number {
  const brief = latestBrief(db, row.session_id);
  const insert = db.prepare(
    `INSERT OR IGNORE INTO brief_reads (session_id, call_id, version, page, ok, reasons_json, compaction_seq, transcript_offset, at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let n = 0;
  for (const o of outputs) {
    if (!o.callId) continue;
    const v = brief
      ? verifyRead(o.output, brief, agent.toolOutput)
      : { ok: false, page: null, reasons: ['no brief is recorded for this session'] };
    const r = insert.run(
      row.session_id,
      o.callId,
      brief?.version ?? null,
      v.page,
      v.ok ? 1 : 0,
      JSON.stringify(v.reasons),
      o.compactionsBefore,
      o.endOffset,
      now,
    );
    n += r.changes;
  }
  return n;
}

export interface ReadStatus {
  complete: boolean;
  version: number | null;
  pages: number;
  read: number[];
  missing: number[];
  detail: string;
}

/** A complete read = every page of the current version read successfully after the latest compaction. */
export function readStatus(db: Db, sessionId: string): ReadStatus {
  const brief = latestBrief(db, sessionId);
  if (!brief)
    return {
      complete: false,
      version: null,
      pages: 0,
      read: [],
      missing: [],
      detail: 'no brief is recorded for this session',
    };
  const latest = latestCompaction(db, sessionId).seq;
  const rows = db
    .prepare(
      'SELECT DISTINCT page FROM brief_reads WHERE session_id = ? AND version = ? AND ok = 1 AND compaction_seq >= ? ORDER BY page',
    )
    .all(sessionId, brief.version, latest) as { page: number }[];
  const read = rows.map((r) => r.page);
  const total = brief.page_digests.length;
  const missing = Array.from({ length: total }, (_, i) => i + 1).filter((p) => !read.includes(p));
  const complete = total > 0 && missing.length === 0;
  return {
    complete,
    version: brief.version,
    pages: total,
    read,
    missing,
    detail: complete
      ? `all ${total} page(s) of brief version ${brief.version} read successfully after compaction #${latest}`
      : `brief version ${brief.version}: page(s) ${missing.join(', ')} of ${total} not read successfully since compaction #${latest}`,
  };
}

/**
 * What SessionStart(compact|resume) hands the agent: its authority status, then the brief. A delta
 * (what changed since the version the agent last received) is delivered only when that previous
 * delivery is proven read (every page of its version, receipts from the transcript); otherwise the
 * full brief. Either way the current version's pages must be read again after this compaction.
 */
export function deliveryText(
  db: Db,
  row: SessionRow,
  status: string | null,
  reason: 'compact' | 'resume',
  now: string,
  kind: 'full' | 'native',
): string | null {
  const brief = latestBrief(db, row.session_id);
  // Facts as of this delivery (the brief's pages were captured earlier, possibly before the latch).
  const facts =
    status || (brief && kind === 'full')
      ? `Latch facts at delivery (${now}): state ${row.state}${mayMutate(row.state) ? '' : ' (mutation authority revoked)'}.\n`
      : '';
  const preamble =
    (status ? status + '\n\n' : '') +
    facts +
    (brief && kind === 'full' ? `To read the brief's pages run: \`${pageCommand('N')}\`\n` : '');
  let text = preamble;
  let delivered: 'full' | 'native' | 'delta' = kind;
  if (brief && kind === 'full') {
    const delta = deltaSincePreviousRead(db, row.session_id, brief);
    if (delta) {
      delivered = 'delta';
      text += delta;
    } else {
      text += fitContext(brief, Math.max(500, CONTEXT_CHARS - preamble.length));
    }
  }
  if (!text.trim()) return null;
  db.prepare('INSERT INTO deliveries (session_id, at, reason, kind, version, chars) VALUES (?, ?, ?, ?, ?, ?)').run(
    row.session_id,
    now,
    reason,
    delivered,
    brief?.version ?? null,
    text.length,
  );
  return text;
}

const DELTA_FIELDS = [
  'objective',
  'acceptance_criteria',
  'stop_conditions',
  'done_steps',
  'decisions',
  'next_action',
  'latch',
] as const;

/** The changed fields since the last delivered version, if that delivery was proven read. */
function deltaSincePreviousRead(db: Db, sessionId: string, current: Brief): string | null {
  const prev = db
    .prepare(
      "SELECT version FROM deliveries WHERE session_id = ? AND kind IN ('full','delta') AND version IS NOT NULL ORDER BY id DESC LIMIT 1",
    )
    .get(sessionId) as { version: number } | undefined;
  if (!prev || prev.version === current.version) return null;
  const old = getBrief(db, sessionId, prev.version);
  if (!old) return null;
  const readPages = (
    db
      .prepare('SELECT DISTINCT page FROM brief_reads WHERE session_id = ? AND version = ? AND ok = 1')
      .all(sessionId, prev.version) as { page: number }[]
  ).map((r) => r.page);
  if (old.page_digests.some((_, i) => !readPages.includes(i + 1))) return null; // not proven read: full
  const changed = DELTA_FIELDS.filter((f) => JSON.stringify(old[f]) !== JSON.stringify(current[f]));
  const total = current.page_digests.length;
  const lines = [
    `Latch task brief for session ${sessionId}: version ${current.version} (${total} page${total === 1 ? '' : 's'}) replaces version ${old.version}, which you read completely.`,
    changed.length
      ? `Changed since version ${old.version}: ${changed.join(', ')}.`
      : `Nothing but the version changed since version ${old.version}.`,
  ];
  for (const f of changed) {
    const v = current[f];
    lines.push(`- ${f}: ${typeof v === 'string' ? v : JSON.stringify(v)}`.slice(0, 1500));
  }
  lines.push(
    `Read every page of version ${current.version} with \`${pageCommand('N')}\` (N = 1${total > 1 ? `..${total}` : ''}) before changing anything.`,
  );
  return lines.join('\n') + '\n';
}

/** The transcript's identity at a turn's end: what a later resume is compared with. */
export function recordTranscript(db: Db, row: SessionRow, path: string | null, identity: TurnIdentity | null): void {
  if (identity)
    db.prepare('UPDATE sessions SET identity_json = ? WHERE session_id = ?').run(
      JSON.stringify(identity),
      row.session_id,
    );
  if (!path) return;
  try {
    const st = lstatSync(path);
    const prefix = hashPrefix(path, null);
    const rec: RecordedTranscript = {
      path,
      realpath: realpathSync(path),
      dev: prefix.dev,
      ino: prefix.ino,
      uid: st.uid,
      size: prefix.size,
      sha256: prefix.sha256,
    };
    db.prepare('UPDATE sessions SET transcript_record_json = ? WHERE session_id = ?').run(
      JSON.stringify(rec),
      row.session_id,
    );
  } catch {
    db.prepare('UPDATE sessions SET transcript_record_json = NULL WHERE session_id = ?').run(row.session_id);
  }
}

/** SessionStart(resume): native or full, recorded with every check. */
export function qualify(
  db: Db,
  row: SessionRow & { identity_json?: string | null; transcript_record_json?: string | null },
  payload: {
    session_id: string;
    cwd: string;
    model: string | null;
    permission_mode: string | null;
    transcriptPath: string | null;
  },
  now: string,
  agent: AgentParts,
): QualifyDecision {
  const identity = row.identity_json ? (JSON.parse(row.identity_json) as TurnIdentity) : null;
  const recorded = row.transcript_record_json ? (JSON.parse(row.transcript_record_json) as RecordedTranscript) : null;
  const brief = latestBrief(db, row.session_id);
  const decision = payload.transcriptPath
    ? agent.qualifyResume(
        {
          transcriptPath: payload.transcriptPath,
          recorded,
          expected: {
            session_id: row.session_id,
            cwd: identity?.cwd ?? row.cwd,
            model: identity?.model ?? row.model,
            approval_policy: identity?.approval_policy ?? null,
            sandbox_policy: identity?.sandbox_policy ?? null,
            permission_profile: identity?.permission_profile ?? null,
          },
          payload: {
            session_id: payload.session_id,
            cwd: payload.cwd,
            model: payload.model,
            permission_mode: payload.permission_mode,
          },
          currentBrief: brief
            ? {
                session: brief.session_id,
                version: brief.version,
                pages: brief.page_digests.map((sha256, i) => ({ n: i + 1, sha256 })),
              }
            : null,
          lastCompactionOffset: latestCompaction(db, row.session_id).transcript_offset,
        },
        dirname(db.name),
      )
    : {
        decision: 'full' as const,
        checks: [{ name: 'file', ok: false, reason: 'the resuming session has no transcript' }],
      };
  db.prepare('INSERT INTO resume_decisions (session_id, at, decision, checks_json) VALUES (?, ?, ?, ?)').run(
    row.session_id,
    now,
    decision.decision,
    JSON.stringify(decision.checks),
  );
  return decision;
}

/**
 * reverify = "evidence": authority returns by itself when the brief was read completely since the
 * latest compaction, the workspace equals the checkpoint or changed only by recorded outside edits,
 * and no attempt is live. Returns the evidence that carried it, or null.
 */
export function evidenceRelease(db: Db, row: SessionRow): { evidence: Evidence; reads: ReadStatus } | null {
  const reads = readStatus(db, row.session_id);
  if (!reads.complete) return null;
  const evidence = evaluateEvidence(db, row);
  const ok = evidence.checks.every(
    (c) =>
      c.ok ||
      (c.name === 'tree' &&
        evidence.changes.length > 0 &&
        evidence.changes.every((ch) => ch.attribution === 'outside')),
  );
  return ok ? { evidence, reads } : null;
}
