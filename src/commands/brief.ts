// `latch brief show|set` and `latch brief --page N`: the session's task brief.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as v from 'valibot';
import { amendBrief, latestBrief } from '../continuity/brief-store.js';
import { pageText, unescapeLine, type Brief, type BriefPatch, type HumanField } from '../continuity/brief.js';
import { ExitError, EXIT, errorMessage } from '../base/errors.js';
import { getSession, sessionsIn, type SessionRow } from '../session/records.js';
import { openStore, type Db } from '../store/store.js';
import { homeOf, json, withStore, type Io } from '../kit/io.js';
import { resolveWorkspace, type TargetOptions } from './shared/target.js';

const Text = v.pipe(v.string(), v.maxLength(20_000, 'is longer than 20,000 characters'));
const List = v.pipe(
  v.array(v.pipe(v.string(), v.maxLength(5_000, 'has an item longer than 5,000 characters'))),
  v.maxLength(200, 'has more than 200 items'),
);

export const BriefInput = v.strictObject({
  objective: v.optional(Text),
  acceptance_criteria: v.optional(List),
  stop_conditions: v.optional(List),
  done_steps: v.optional(List),
  decisions: v.optional(List),
  next_action: v.optional(Text),
});

const SECTIONS: Record<string, HumanField | null> = {
  objective: 'objective',
  'acceptance criteria': 'acceptance_criteria',
  'stop conditions': 'stop_conditions',
  done: 'done_steps',
  'done steps': 'done_steps',
  decisions: 'decisions',
  'next action': 'next_action',
  'latch facts': null, // written by Latch (show output); ignored on input
};

const LIST_FIELDS = new Set<HumanField>(['acceptance_criteria', 'stop_conditions', 'done_steps', 'decisions']);
const PLACEHOLDERS = new Set(['(not set)', '(none)']);

/** Reads the markdown form (the `## ...` sections of `latch brief show`); absent sections are left unchanged. */
export function parseBriefMarkdown(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let field: HumanField | null | undefined;
  let lines: string[] = [];
  const flush = () => {
    if (field === undefined || field === null) return;
    if (LIST_FIELDS.has(field)) {
      const items: string[] = [];
      for (const raw of lines) {
        const m = /^\s{0,3}(?:[-*+]|\d+[.)])\s+(.*)$/.exec(raw);
        if (m) items.push(m[1]!);
        else if (/^\s+\S/.test(raw) && items.length) items[items.length - 1] += `\n${raw.trim()}`;
        else if (raw.trim() === '' || PLACEHOLDERS.has(raw.trim())) continue;
        else
          throw new ExitError(
            EXIT.usage,
            `section "${sectionName(field)}": expected list items ("- ..."), got: ${raw.slice(0, 80)}`,
          );
      }
      out[field] = items.map((i) => i.trim()).filter((i) => i && !PLACEHOLDERS.has(i));
    } else {
      const t = lines.map(unescapeLine).join('\n').trim();
      out[field] = PLACEHOLDERS.has(t) ? '' : t;
    }
  };
  for (const raw of text.replace(/\r\n?/g, '\n').split('\n')) {
    const h = /^##\s+(.+?)\s*#*\s*$/.exec(raw);
    if (h) {
      flush();
      const key = h[1]!.toLowerCase().replace(/[:.]$/, '');
      if (!(key in SECTIONS)) {
        throw new ExitError(
          EXIT.usage,
          `unknown section "## ${h[1]}" (expected: Objective, Acceptance criteria, Stop conditions, Done, Decisions, Next action)`,
        );
      }
      field = SECTIONS[key]!;
      if (field !== null && field in out) throw new ExitError(EXIT.usage, `section "## ${h[1]}" appears twice`);
      lines = [];
      continue;
    }
    if (field === undefined) {
      if (raw.trim() === '' || /^#\s/.test(raw) || /^Session \S+, version \d+ /.test(raw)) continue;
      throw new ExitError(EXIT.usage, `text before the first "## " section: ${raw.slice(0, 80)}`);
    }
    lines.push(raw);
  }
  flush();
  if (field === undefined) throw new ExitError(EXIT.usage, 'no "## " sections found (expected e.g. "## Objective")');
  return out;
}

function sectionName(f: HumanField): string {
  return Object.entries(SECTIONS).find(([, v2]) => v2 === f)![0];
}

/** A brief file (JSON or markdown), validated. */
export function readBriefFile(file: string): BriefPatch {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ExitError(EXIT.usage, `cannot read ${file}: ${errorMessage(err)}`);
  }
  let raw: unknown;
  if (/^\s*\{/.test(text)) {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new ExitError(EXIT.usage, `${file} is not valid JSON: ${errorMessage(err)}`);
    }
  } else {
    raw = parseBriefMarkdown(text);
  }
  const r = v.safeParse(BriefInput, raw);
  if (!r.success) {
    const msgs = r.issues.map((i) => {
      const path = i.path?.map((p) => String(p.key)).join('.') ?? '(root)';
      return `${path}: ${i.message}`;
    });
    throw new ExitError(EXIT.usage, `${file}: invalid brief:\n  ${msgs.join('\n  ')}`);
  }
  const patch = r.output as BriefPatch;
  if (Object.keys(patch).length === 0) throw new ExitError(EXIT.usage, `${file} sets no field`);
  return patch;
}

/**
 * The session a brief command acts on: --session ID, else in the workspace of --cwd (or the current
 * directory) a latched or paused session first, then the most recently updated one. With
 * `needBrief`, only sessions that have a brief are candidates.
 */
export function pickSession(db: Db, io: Io, opts: TargetOptions, needBrief: boolean): SessionRow {
  if (opts.session) {
    const row = getSession(db, opts.session);
    if (!row) throw new ExitError(EXIT.usage, `no session ${opts.session} in the Latch store`);
    return row;
  }
  const workspace = resolveWorkspace(io, opts.cwd);
  let rows = sessionsIn(db, workspace);
  if (needBrief)
    rows = rows.filter((r) => db.prepare('SELECT 1 FROM briefs WHERE session_id = ? LIMIT 1').get(r.session_id));
  if (rows.length === 0) {
    throw new ExitError(
      EXIT.usage,
      `no session${needBrief ? ' with a brief' : ''} recorded for ${workspace} (use --session ID)`,
    );
  }
  const held = (r: SessionRow) => (r.state === 'mutable' ? 0 : 1);
  rows.sort((a, b) => held(b) - held(a) || (b.updated_at < a.updated_at ? -1 : b.updated_at > a.updated_at ? 1 : 0));
  return rows[0]!;
}

function needBriefOf(db: Db, sessionId: string): Brief {
  const b = latestBrief(db, sessionId);
  if (!b)
    throw new ExitError(
      EXIT.usage,
      `session ${sessionId} has no brief yet (a human can write one with \`latch brief set --file F\`)`,
    );
  return b;
}

export async function briefShow(io: Io, opts: TargetOptions & { json?: boolean }): Promise<number> {
  return withStore(io, (db) => {
    const row = pickSession(db, io, opts, true);
    const b = needBriefOf(db, row.session_id);
    if (opts.json) {
      json(io, { ...b, pages: b.page_digests.length });
      return EXIT.ok;
    }
    io.out(b.rendered);
    io.out(
      `\n(${b.page_digests.length} page${b.page_digests.length === 1 ? '' : 's'}; the agent reads them with \`latch brief --page N\`)\n`,
    );
    return EXIT.ok;
  });
}

export async function briefSet(io: Io, opts: TargetOptions & { file: string }): Promise<number> {
  const patch = readBriefFile(resolve(io.cwd, opts.file));
  return withStore(io, (db) => {
    const row = pickSession(db, io, opts, false);
    const b = amendBrief(db, row.session_id, patch, io.now());
    io.out(
      `Brief of session ${row.session_id} is now version ${b.version} (${b.page_digests.length} page${b.page_digests.length === 1 ? '' : 's'}; set: ${Object.keys(patch).join(', ')}).\n`,
    );
    return EXIT.ok;
  });
}

/** Prints exactly pageText(brief, n). Read-only: the store is opened read-only and never written. */
export async function briefPage(io: Io, opts: TargetOptions & { page: string | number }): Promise<number> {
  const n = typeof opts.page === 'number' ? opts.page : /^\d+$/.test(opts.page.trim()) ? Number(opts.page.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new ExitError(EXIT.usage, `--page expects a page number (1, 2, ...), got ${String(opts.page)}`);
  const db = openStore(homeOf(io), { create: false, readonly: true });
  try {
    const row = pickSession(db, io, opts, true);
    const b = needBriefOf(db, row.session_id);
    const total = b.page_digests.length;
    if (n > total)
      throw new ExitError(
        EXIT.usage,
        `the brief of session ${row.session_id} (version ${b.version}) has ${total} page${total === 1 ? '' : 's'}`,
      );
    io.out(pageText(b, n));
    return EXIT.ok;
  } finally {
    db.close();
  }
}
