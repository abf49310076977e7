// The task brief: a durable, versioned statement of the task per session, re-delivered after a
// compaction in digest-carrying pages, and the proof (from the agent's own tool outputs) that the
// agent read every page of the current version.
//
// Page format (parsed by other parts of Latch; do not change without them):
//   <<<LATCH-BRIEF session=<id> version=<v> page=<n>/<total> sha256=<hex sha256 of body>>>>
//   <body>
//   <<<END-LATCH-BRIEF page=<n>/<total> version=<v>>>>
// body = the exact UTF-8 text between the header line's newline and the newline before `<<<END`.
import { createHash } from 'node:crypto';
import type { ToolOutput } from '../agents/agent.js';
import { pageRead, type BriefDigest, type PageRead } from './page-read.js';
export { parsePages, type ParsedPage } from './page-read.js';
import type { TranscriptCapture } from './capture.js';

// ---------------------------------------------------------------------------------------------
// Model

export interface AttemptFact {
  summary: string;
  state: string;
  files: string[];
}

export interface LatchFacts {
  state: string;
  checkpoint_id: string | null;
  attempts_since_checkpoint: AttemptFact[];
  files_changed_since_checkpoint: string[];
}

/** The fields a human can set (`latch brief set`); they win over auto-captured values. */
export const HUMAN_FIELDS = [
  'objective',
  'acceptance_criteria',
  'stop_conditions',
  'done_steps',
  'decisions',
  'next_action',
] as const;
export type HumanField = (typeof HUMAN_FIELDS)[number];

export interface BriefContent {
  objective: string;
  acceptance_criteria: string[];
  stop_conditions: string[];
  done_steps: string[];
  decisions: string[];
  next_action: string;
  latch: LatchFacts;
}

export type BriefPatch = Partial<Pick<BriefContent, HumanField>>;
export type BriefSource = 'auto' | 'human';

export interface Brief extends BriefContent {
  session_id: string;
  source: BriefSource;
  /** 1, 2, 3, ... per session. */
  version: number;
  created_at: string;
  /** Fields last set by a human: an auto capture keeps them. */
  human_fields: HumanField[];
  /** render(this), fixed when the version is created (the digests refer to it). */
  rendered: string;
  page_chars: number;
  /** sha256 of each page body, page 1 first. */
  page_digests: string[];
}

/** Largest page body, in UTF-16 code units (JS string length). A page block adds ~170 chars. */
export const PAGE_CHARS = 3500;
/** Codex's default additionalContext limit is 2,500 tokens; at a conservative 3 chars per token. */
export const ADDITIONAL_CONTEXT_TOKENS = 2500;
export const CHARS_PER_TOKEN = 3;
export const CONTEXT_CHARS = ADDITIONAL_CONTEXT_TOKENS * CHARS_PER_TOKEN;

/** The longest text one captured item keeps. */
export const MAX_TEXT = 2000;
/** The most items one list of the brief keeps. */
export const MAX_ITEMS = 50;
/** The most files the ledger facts list. */
export const MAX_FILES = 200;

export function emptyFacts(state = 'unknown'): LatchFacts {
  return { state, checkpoint_id: null, attempts_since_checkpoint: [], files_changed_since_checkpoint: [] };
}

export function emptyContent(): BriefContent {
  return {
    objective: '',
    acceptance_criteria: [],
    stop_conditions: [],
    done_steps: [],
    decisions: [],
    next_action: '',
    latch: emptyFacts(),
  };
}

/** A brief with its rendering and page digests computed. */
export function buildBrief(
  content: BriefContent,
  meta: {
    session_id: string;
    source: BriefSource;
    version: number;
    created_at: string;
    human_fields?: readonly HumanField[];
  },
  pageChars = PAGE_CHARS,
): Brief {
  const human = HUMAN_FIELDS.filter((f) => meta.human_fields?.includes(f));
  const base = {
    session_id: meta.session_id,
    source: meta.source,
    version: meta.version,
    created_at: meta.created_at,
    human_fields: human,
    objective: content.objective,
    acceptance_criteria: [...content.acceptance_criteria],
    stop_conditions: [...content.stop_conditions],
    done_steps: [...content.done_steps],
    decisions: [...content.decisions],
    next_action: content.next_action,
    latch: content.latch,
  };
  const rendered = render(base);
  const pages = paginate(rendered, pageChars);
  return { ...base, rendered, page_chars: pageChars, page_digests: pages.map(sha256) };
}

export function contentOf(b: BriefContent): BriefContent {
  return {
    objective: b.objective,
    acceptance_criteria: b.acceptance_criteria,
    stop_conditions: b.stop_conditions,
    done_steps: b.done_steps,
    decisions: b.decisions,
    next_action: b.next_action,
    latch: b.latch,
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering and pages

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A content line that could be read as a heading, a page marker or an escape gets a backslash. */
function escapeLine(line: string): string {
  return /^(#|<<<|\\)/.test(line) ? `\\${line}` : line;
}

export function unescapeLine(line: string): string {
  return /^\\(#|<<<|\\)/.test(line) ? line.slice(1) : line;
}

function textBlock(s: string): string {
  const t = s.replace(/\r\n?/g, '\n').trim();
  return t ? t.split('\n').map(escapeLine).join('\n') : '(not set)';
}

function listBlock(items: readonly string[]): string {
  if (items.length === 0) return '(none)';
  return items
    .map((it) => {
      const lines = it.replace(/\r\n?/g, '\n').trim().split('\n');
      return lines.map((l, i) => (i === 0 ? `- ${l}` : `  ${l}`)).join('\n');
    })
    .join('\n');
}

/** The brief as markdown. Its section headings are the ones `latch brief set` reads. */
export function render(b: Omit<Brief, 'rendered' | 'page_chars' | 'page_digests'>): string {
  const f = b.latch;
  const attempts = f.attempts_since_checkpoint.length
    ? f.attempts_since_checkpoint
        .map(
          (a) =>
            `  - [${a.state}] ${oneLine(a.summary)}${a.files.length ? ` — files: ${a.files.map(oneLine).join(', ')}` : ''}`,
        )
        .join('\n')
    : '  - (none)';
  const files = f.files_changed_since_checkpoint.length
    ? f.files_changed_since_checkpoint.map(oneLine).join(', ')
    : '(none)';
  const human = b.human_fields.length ? `; set by a human: ${b.human_fields.join(', ')}` : '';
  return [
    `# Task brief`,
    `Session ${b.session_id}, version ${b.version} (${b.source}, ${b.created_at}${human}).`,
    '',
    '## Objective',
    textBlock(b.objective),
    '',
    '## Acceptance criteria',
    listBlock(b.acceptance_criteria),
    '',
    '## Stop conditions',
    listBlock(b.stop_conditions),
    '',
    '## Done',
    listBlock(b.done_steps),
    '',
    '## Decisions',
    listBlock(b.decisions),
    '',
    '## Next action',
    textBlock(b.next_action),
    '',
    // The session's state is not in the pages: it changes after capture (a brief captured at
    // PreCompact precedes the latch). Each delivery states it as of delivery (continuity.ts).
    '## Latch facts',
    `- Checkpoint: ${f.checkpoint_id ?? '(none)'}`,
    `- Attempts since the checkpoint (${f.attempts_since_checkpoint.length}):`,
    attempts,
    `- Files changed since the checkpoint: ${files}`,
    '',
  ].join('\n');
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ⏎ ');
}

/**
 * Splits text into page bodies of at most maxChars (UTF-16 code units), on line boundaries; a line
 * longer than maxChars is cut (never inside a surrogate pair). The bodies concatenate to text.
 */
export function paginate(text: string, maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 2)
    throw new RangeError(`page size must be an integer >= 2, got ${maxChars}`);
  const pages: string[] = [];
  let cur = '';
  let i = 0;
  while (i < text.length) {
    const nl = text.indexOf('\n', i);
    const line = nl < 0 ? text.slice(i) : text.slice(i, nl + 1);
    i += line.length;
    if (cur.length + line.length <= maxChars) {
      cur += line;
      continue;
    }
    if (cur) pages.push(cur);
    cur = '';
    let rest = line;
    while (rest.length > maxChars) {
      let cut = maxChars;
      const c = rest.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff) cut--; // keep a surrogate pair together
      pages.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
    cur = rest;
  }
  if (cur || pages.length === 0) pages.push(cur);
  return pages;
}

export function pagesOf(b: Brief): string[] {
  const pages = paginate(b.rendered, b.page_chars);
  if (pages.length !== b.page_digests.length) {
    throw new Error(`brief ${b.session_id} v${b.version}: ${pages.length} pages, ${b.page_digests.length} recorded`);
  }
  return pages;
}

function pageBlock(session: string, version: number, n: number, total: number, body: string): string {
  return `<<<LATCH-BRIEF session=${session} version=${version} page=${n}/${total} sha256=${sha256(body)}>>>\n${body}\n<<<END-LATCH-BRIEF page=${n}/${total} version=${version}>>>\n`;
}

/** Page n (1-based) as the block `latch brief --page n` prints (ends with a newline). */
export function pageText(b: Brief, n: number): string {
  const pages = pagesOf(b);
  if (!Number.isInteger(n) || n < 1 || n > pages.length)
    throw new RangeError(`page ${n} does not exist (the brief has ${pages.length})`);
  return pageBlock(b.session_id, b.version, n, pages.length, pages[n - 1]!);
}

/**
 * The part of the brief that fits an additionalContext of limitChars: an instruction line, as many
 * whole pages as fit (each with its page number, version and digest), and the command for the rest.
 * A delivery is not a read: the agent must still read every page with `latch brief --page N`.
 * When even the instruction does not fit, the instruction alone is returned.
 */
export function fitContext(b: Brief, limitChars: number = CONTEXT_CHARS): string {
  const pages = pagesOf(b);
  const total = pages.length;
  const intro =
    `Latch task brief for session ${b.session_id}, version ${b.version}: ${total} page${total === 1 ? '' : 's'}. ` +
    `Your context was compacted; this brief is the durable statement of the task. ` +
    `Read every page with \`latch brief --page N\` (N = 1${total > 1 ? `..${total}` : ''}) before changing anything: ` +
    `pages shown here do not count as read.\n`;
  const tail = (k: number): string =>
    k >= total
      ? ''
      : `Pages ${k + 1}${total > k + 1 ? `..${total}` : ''} of ${total} are not shown here: run \`latch brief --page ${k + 1}\`${total > k + 1 ? ` through \`latch brief --page ${total}\`` : ''}.\n`;
  const blocks = pages.map((p, i) => pageBlock(b.session_id, b.version, i + 1, total, p));
  let text = intro;
  let k = 0;
  while (k < total && (text + blocks[k] + tail(k + 1)).length <= limitChars) {
    text += blocks[k];
    k++;
  }
  return text + tail(k);
}

// ---------------------------------------------------------------------------------------------
// Read verification

export type ReadVerdict = PageRead;

/** A brief's digest: what a read of its pages is checked against. */
export function digestOf(b: Brief): BriefDigest {
  return {
    session: b.session_id,
    version: b.version,
    pages: b.page_digests.map((sha256, i) => ({ n: i + 1, sha256 })),
  };
}

/**
 * Does one tool output, as the agent recorded it in its transcript, prove a complete read of one page
 * of the CURRENT brief version? The one rule (src/continuity/page-read.ts), with the agent's unwrapping.
 */
export function verifyRead(output: string, b: Brief, toolOutput: (output: string) => ToolOutput): ReadVerdict {
  return pageRead(output, digestOf(b), toolOutput);
}

/** An auto-captured brief content from a transcript capture and the ledger's facts. */
export function autoContent(cap: TranscriptCapture, facts: LatchFacts): BriefContent {
  const [first, ...later] = cap.requests;
  const parts: string[] = [];
  if (cap.goal) parts.push(`Goal${cap.goal.status ? ` (${cap.goal.status})` : ''}: ${cap.goal.objective}`);
  if (first !== undefined) parts.push(cap.goal ? `First request from the user: ${first}` : first);
  if (later.length) {
    const skipped = cap.requestCount - cap.requests.length;
    parts.push(
      `Later requests from the user, oldest first${skipped > 0 ? ` (${skipped} older ones not kept)` : ''}:\n` +
        later.map((r) => `- ${r.split('\n').join('\n  ')}`).join('\n'),
    );
  }
  const steps = cap.plan?.steps ?? [];
  const done = steps.filter((s) => s.status === 'completed').map((s) => s.step);
  if (cap.goal?.status === 'complete') done.push(`Goal complete: ${cap.goal.objective}`);
  const next = steps.find((s) => s.status === 'in_progress') ?? steps.find((s) => s.status === 'pending');
  let nextAction = next ? next.step : '';
  if (cap.lastAssistant)
    nextAction += `${nextAction ? '\n\n' : ''}Your last message before the compaction: ${cap.lastAssistant}`;
  return {
    objective: parts.join('\n\n'),
    acceptance_criteria: [],
    stop_conditions: [],
    done_steps: done.slice(0, MAX_ITEMS),
    decisions: cap.plan?.explanation ? [`Plan: ${cap.plan.explanation}`] : [],
    next_action: nextAction,
    latch: facts,
  };
}

/** `s` cut to `max` characters, marked. */
export function clip(s: string, max = MAX_TEXT): string {
  return s.length <= max ? s : `${s.slice(0, max)}… [${s.length - max} more characters not kept]`;
}
