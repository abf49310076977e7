// The brief in the store: the ledger's facts about a session, the versions of its brief (saved,
// read, amended by a human, merged with an auto capture). The format and pages are brief.ts's; the
// capture from a transcript is the agent's (AgentSlow.capture).
import { immediate, type Db } from '../store/store.js';
import { emptyCapture, type CaptureOptions, type TranscriptCapture } from './capture.js';
import {
  autoContent,
  buildBrief,
  clip,
  emptyContent,
  contentOf,
  emptyFacts,
  HUMAN_FIELDS,
  MAX_FILES,
  MAX_ITEMS,
  type Brief,
  type BriefContent,
  type BriefPatch,
  type BriefSource,
  type HumanField,
  type LatchFacts,
  type AttemptFact,
} from './brief.js';

// ---------------------------------------------------------------------------------------------
// Ledger facts

/** Attempts and files changed since the session's latest checkpoint (the whole session if none). */
export function ledgerFacts(db: Db, sessionId: string): LatchFacts {
  const s = db.prepare('SELECT state, workspace, created_at FROM sessions WHERE session_id = ?').get(sessionId) as
    | { state: string; workspace: string; created_at: string }
    | undefined;
  if (!s) return emptyFacts();
  const cp = db
    .prepare(
      'SELECT id, created_at FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq DESC, created_at DESC LIMIT 1',
    )
    .get(sessionId) as { id: string; created_at: string } | undefined;
  const since = cp?.created_at ?? '';
  const attempts = db
    .prepare(
      'SELECT id, summary, tool_name, state FROM attempts WHERE session_id = ? AND started_at >= ? ORDER BY started_ns, id',
    )
    .all(sessionId, since) as { id: string; summary: string | null; tool_name: string; state: string }[];
  const filesOf = db.prepare('SELECT DISTINCT path FROM changes WHERE attempt_id = ? ORDER BY path');
  const kept = attempts.slice(-MAX_ITEMS);
  const facts: AttemptFact[] = kept.map((a) => ({
    summary: clip(a.summary ?? a.tool_name, 300),
    state: a.state,
    files: (filesOf.all(a.id) as { path: string }[]).map((r) => r.path).slice(0, MAX_FILES),
  }));
  if (attempts.length > kept.length)
    facts.unshift({
      summary: `(${attempts.length - kept.length} earlier attempts not listed)`,
      state: 'omitted',
      files: [],
    });
  // A checkpoint's own observation records what changed BEFORE it: leave it out unless an attempt
  // after the checkpoint is blamed for the change.
  const ids = new Set(attempts.map((a) => a.id));
  const changes = (
    cp
      ? db
          .prepare(
            'SELECT path, observed_by, attempt_id FROM changes WHERE workspace = ? AND observed_at >= ? ORDER BY path',
          )
          .all(s.workspace, since)
      : db
          .prepare(
            'SELECT path, observed_by, attempt_id FROM changes WHERE workspace = ? AND observed_at >= ? ORDER BY path',
          )
          .all(s.workspace, s.created_at)
  ) as { path: string; observed_by: string; attempt_id: string | null }[];
  const files = [
    ...new Set(
      changes
        .filter((c) => c.observed_by !== 'checkpoint' || (c.attempt_id !== null && ids.has(c.attempt_id)))
        .map((c) => c.path),
    ),
  ];
  const shown = files.slice(0, MAX_FILES);
  if (files.length > shown.length) shown.push(`(${files.length - shown.length} more)`);
  return {
    state: s.state,
    checkpoint_id: cp?.id ?? null,
    attempts_since_checkpoint: facts,
    files_changed_since_checkpoint: shown,
  };
}

// ---------------------------------------------------------------------------------------------
// Store

interface BriefRow {
  session_id: string;
  version: number;
  source: string;
  created_at: string;
  json: string;
  rendered: string;
  page_count: number;
  page_digests: string;
}

function inTx<T>(db: Db, fn: () => T): T {
  return db.inTransaction ? fn() : immediate(db, fn);
}

function fromRow(r: BriefRow): Brief {
  const j = JSON.parse(r.json) as Brief;
  return {
    ...j,
    session_id: r.session_id,
    version: r.version,
    source: r.source as BriefSource,
    created_at: r.created_at,
    rendered: r.rendered,
    page_digests: JSON.parse(r.page_digests) as string[],
  };
}

export function latestBrief(db: Db, sessionId: string): Brief | null {
  const r = db.prepare('SELECT * FROM briefs WHERE session_id = ? ORDER BY version DESC LIMIT 1').get(sessionId) as
    | BriefRow
    | undefined;
  return r ? fromRow(r) : null;
}

export function getBrief(db: Db, sessionId: string, version: number): Brief | null {
  const r = db.prepare('SELECT * FROM briefs WHERE session_id = ? AND version = ?').get(sessionId, version) as
    | BriefRow
    | undefined;
  return r ? fromRow(r) : null;
}

/** Saves content as the session's next version (in its own BEGIN IMMEDIATE unless already in one). */
export function saveBrief(
  db: Db,
  sessionId: string,
  content: BriefContent,
  opts: { source: BriefSource; now: string; humanFields?: readonly HumanField[] },
): Brief {
  return inTx(db, () => {
    const v = (
      db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM briefs WHERE session_id = ?').get(sessionId) as {
        v: number;
      }
    ).v;
    const b = buildBrief(content, {
      session_id: sessionId,
      source: opts.source,
      version: v + 1,
      created_at: opts.now,
      human_fields: opts.humanFields ?? [],
    });
    const { rendered, page_digests, ...rest } = b;
    db.prepare(
      'INSERT INTO briefs (session_id, version, source, created_at, json, rendered, page_count, page_digests) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      sessionId,
      b.version,
      b.source,
      b.created_at,
      JSON.stringify(rest),
      rendered,
      page_digests.length,
      JSON.stringify(page_digests),
    );
    return b;
  });
}

/** An auto capture merged over the latest brief: the fields a human set keep the human's values. */
export function mergeAuto(
  prev: Brief | null,
  auto: BriefContent,
): { content: BriefContent; humanFields: HumanField[] } {
  const content: BriefContent = { ...auto };
  const human = prev?.human_fields ?? [];
  for (const f of human) (content as unknown as Record<string, unknown>)[f] = prev![f];
  return { content, humanFields: [...human] };
}

/** A human's amendment: the given fields replace the latest version's; the ledger facts are refreshed. */
export function amendBrief(db: Db, sessionId: string, patch: BriefPatch, now: string): Brief {
  return inTx(db, () => {
    const prev = latestBrief(db, sessionId);
    const content: BriefContent = prev ? contentOf(prev) : emptyContent();
    const set: HumanField[] = [];
    for (const f of HUMAN_FIELDS) {
      if (patch[f] === undefined) continue;
      (content as unknown as Record<string, unknown>)[f] = patch[f];
      set.push(f);
    }
    content.latch = ledgerFacts(db, sessionId);
    if (!db.prepare('SELECT 1 FROM sessions WHERE session_id = ?').get(sessionId) && prev) content.latch = prev.latch;
    const humanFields = HUMAN_FIELDS.filter((f) => set.includes(f) || prev?.human_fields.includes(f));
    return saveBrief(db, sessionId, content, { source: 'human', now, humanFields });
  });
}

/** The auto capture at a compaction: transcript + ledger, merged under the human's fields, saved. */
export function recordAutoBrief(
  db: Db,
  sessionId: string,
  transcriptPath: string | null,
  now: string,
  capture: (path: string, opts?: CaptureOptions) => TranscriptCapture,
  opts: CaptureOptions = {},
): Brief {
  const cap = transcriptPath ? capture(transcriptPath, opts) : emptyCapture();
  const facts = ledgerFacts(db, sessionId);
  return inTx(db, () => {
    const { content, humanFields } = mergeAuto(latestBrief(db, sessionId), autoContent(cap, facts));
    return saveBrief(db, sessionId, content, { source: 'auto', now, humanFields });
  });
}
