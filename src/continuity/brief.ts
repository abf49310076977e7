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
import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { immediate, type Db } from '../store/store.js';
import { outputCallId, topLevelType } from '../agents/codex/rollout.js';

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
export const HUMAN_FIELDS = ['objective', 'acceptance_criteria', 'stop_conditions', 'done_steps', 'decisions', 'next_action'] as const;
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

const MAX_TEXT = 2000;
const MAX_ITEMS = 50;
const MAX_FILES = 200;

export function emptyFacts(state = 'unknown'): LatchFacts {
  return { state, checkpoint_id: null, attempts_since_checkpoint: [], files_changed_since_checkpoint: [] };
}

export function emptyContent(): BriefContent {
  return { objective: '', acceptance_criteria: [], stop_conditions: [], done_steps: [], decisions: [], next_action: '', latch: emptyFacts() };
}

/** A brief with its rendering and page digests computed. */
export function buildBrief(
  content: BriefContent,
  meta: { session_id: string; source: BriefSource; version: number; created_at: string; human_fields?: readonly HumanField[] },
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
        .map((a) => `  - [${a.state}] ${oneLine(a.summary)}${a.files.length ? ` — files: ${a.files.map(oneLine).join(', ')}` : ''}`)
        .join('\n')
    : '  - (none)';
  const files = f.files_changed_since_checkpoint.length ? f.files_changed_since_checkpoint.map(oneLine).join(', ') : '(none)';
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
  if (!Number.isInteger(maxChars) || maxChars < 2) throw new RangeError(`page size must be an integer >= 2, got ${maxChars}`);
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
  if (!Number.isInteger(n) || n < 1 || n > pages.length) throw new RangeError(`page ${n} does not exist (the brief has ${pages.length})`);
  return pageBlock(b.session_id, b.version, n, pages.length, pages[n - 1]!);
}

export interface ParsedPage {
  session: string;
  version: number;
  page: number;
  total: number;
  sha256: string;
  /** The recomputed digest of the body equals the header's. */
  bodyOk: boolean;
  /** Offsets of the block in the text: [start of header, end of END line). */
  start: number;
  end: number;
  body: string;
}

const HEADER_RE = /^<<<LATCH-BRIEF session=(\S+) version=(\d+) page=(\d+)\/(\d+) sha256=([0-9a-f]{64})>>>$/gm;

/** Every complete page block in an arbitrary text (e.g. a tool output). */
export function parsePages(text: string): ParsedPage[] {
  const out: ParsedPage[] = [];
  HEADER_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = HEADER_RE.exec(text))) {
    const [header, session, version, page, total, digest] = m as unknown as [string, string, string, string, string, string];
    const bodyStart = m.index + header.length + 1;
    if (text[m.index + header.length] !== '\n') continue;
    const endLine = `<<<END-LATCH-BRIEF page=${page}/${total} version=${version}>>>`;
    let from = bodyStart;
    let endAt = -1;
    for (;;) {
      const j = text.indexOf(`\n${endLine}`, from);
      if (j < 0) break;
      const after = j + 1 + endLine.length;
      if (after === text.length || text[after] === '\n' || text[after] === '\r') {
        endAt = j;
        break;
      }
      from = j + 1;
    }
    if (endAt < 0) continue;
    const body = text.slice(bodyStart, endAt);
    const end = endAt + 1 + endLine.length;
    out.push({
      session,
      version: Number(version),
      page: Number(page),
      total: Number(total),
      sha256: digest,
      bodyOk: sha256(body) === digest,
      start: m.index,
      end,
      body,
    });
    HEADER_RE.lastIndex = end;
  }
  return out;
}

function countHeaders(text: string): number {
  return (text.match(/^<<<LATCH-BRIEF /gm) ?? []).length;
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

export interface ReadVerdict {
  ok: boolean;
  page: number | null;
  reasons: string[];
}

const TRUNC_HEAD = 'Warning: truncated output';
const TRUNC_MID_RE = /…\d+ tokens truncated…/;
const OMITTED_RE = /^\.\.\. \d+ bytes omitted \.\.\.$/m;

/**
 * Does one tool output, as Codex recorded it in the rollout (the function_call_output `output`
 * string of exec_command), prove a complete read of one page of the CURRENT brief version?
 */
export function verifyRead(output: string, b: Brief): ReadVerdict {
  const reasons: string[] = [];
  const trimmed = output.trimStart();
  if (trimmed.startsWith('Command blocked by PreToolUse hook')) {
    return { ok: false, page: null, reasons: ['the call was denied by a PreToolUse hook (no command ran)'] };
  }
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) {
      const isErr = typeof parsed === 'object' && parsed !== null && ((parsed as Record<string, unknown>).isError === true || (parsed as Record<string, unknown>).is_error === true);
      reasons.push(isErr ? 'the output is an error result (isError: true)' : 'the output is a JSON wrapper, not a command output');
    }
  }
  if (/"is_?error"\s*:\s*true/i.test(output) && !reasons.some((r) => r.includes('isError'))) {
    reasons.push('the output carries an error flag (isError: true)');
  }

  const marker = output.startsWith('Output:\n') ? 0 : output.indexOf('\nOutput:\n');
  if (marker < 0) {
    reasons.push('not an exec_command output (no "Output:" section)');
    return { ok: false, page: null, reasons };
  }
  const header = output.slice(0, marker);
  const body = output.slice(marker === 0 ? 'Output:\n'.length : marker + '\nOutput:\n'.length);
  const exit = /^Process exited with code (-?\d+)$/m.exec(header);
  if (!exit) {
    reasons.push(/^Process running with session ID/m.test(header) ? 'the command had not finished (still running)' : 'no exit status recorded');
  } else if (exit[1] !== '0') {
    reasons.push(`the command exited with code ${exit[1]}`);
  }
  if (body.startsWith(TRUNC_HEAD)) reasons.push('Codex truncated the output ("Warning: truncated output")');

  const pages = parsePages(body);
  let outside = body;
  for (const p of [...pages].reverse()) outside = outside.slice(0, p.start) + outside.slice(p.end);
  if (!body.startsWith(TRUNC_HEAD) && (TRUNC_MID_RE.test(outside) || OMITTED_RE.test(outside))) {
    reasons.push('Codex truncated the output (truncation marker found)');
  }
  const headers = countHeaders(body);
  if (pages.length === 0) {
    reasons.push(headers ? 'the page block is incomplete (no matching end line)' : 'no brief page in the output');
    return { ok: false, page: null, reasons };
  }
  if (pages.length > 1) reasons.push(`${pages.length} page blocks in one output; read one page per command`);
  if (headers > pages.length) reasons.push('an incomplete page block is in the output');
  const p = pages[0]!;
  if (p.session !== b.session_id) reasons.push(`the page belongs to session ${p.session}, not ${b.session_id}`);
  if (p.version !== b.version) reasons.push(`the page is of version ${p.version}; the current version is ${b.version}`);
  const total = b.page_digests.length;
  if (p.total !== total || p.page < 1 || p.page > total) reasons.push(`page ${p.page}/${p.total} does not exist in version ${b.version} (${total} pages)`);
  if (!p.bodyOk) reasons.push(`page ${p.page}: the body does not match its sha256`);
  else if (p.version === b.version && b.page_digests[p.page - 1] !== p.sha256) reasons.push(`page ${p.page}: the digest differs from the recorded page`);
  return { ok: reasons.length === 0, page: p.page, reasons };
}

// ---------------------------------------------------------------------------------------------
// Capture from a Codex rollout (streaming, bounded memory)

export interface PlanStep {
  step: string;
  status: string;
}

export interface TranscriptCapture {
  sessionId: string | null;
  cwd: string | null;
  forkedFrom: string | null;
  /** The user's own requests, oldest first: the first one and the latest MAX_REQUESTS - 1. */
  requests: string[];
  requestCount: number;
  plan: { explanation: string | null; steps: PlanStep[] } | null;
  goal: { objective: string; status: string | null } | null;
  lastAssistant: string | null;
  /** Lines longer than maxLineBytes that were skipped unread. */
  skippedLines: number;
  badLines: number;
}

export interface CaptureOptions {
  /** Lines longer than this are skipped (default 8 MiB). */
  maxLineBytes?: number;
  /** Follow a fork's history_base into its parent rollout (default true). */
  followParent?: boolean;
  /** Finds a thread's rollout; default: search the `sessions` tree the transcript lives in. */
  resolveRollout?: (threadId: string) => string | null;
}

const MAX_REQUESTS = 12;
const CHUNK = 1 << 20;

/** Codex's own context injected as user messages (0.169 marks them with provenance "harness"). */
const INJECTED_PREFIXES = [
  '<environment_context>',
  '<user_instructions>',
  '<INSTRUCTIONS>',
  '# AGENTS.md instructions',
  '<turn_aborted>',
  '<user_shell_command>',
  '<subagent_notification>',
  '<skill>',
  'You are performing a CONTEXT CHECKPOINT COMPACTION',
  'Another language model started to solve this problem',
];

const GOAL_TOOLS = new Set(['create_goal', 'update_goal', 'get_goal']);

class Capturer {
  c: TranscriptCapture = {
    sessionId: null,
    cwd: null,
    forkedFrom: null,
    requests: [],
    requestCount: 0,
    plan: null,
    goal: null,
    lastAssistant: null,
    skippedLines: 0,
    badLines: 0,
  };
  first: string | null = null;
  recent: string[] = [];
  goalCalls = new Set<string>();
  base: { threadId: string; endByte: number } | null = null;

  /** The assistant message before the last one, and the last one untrimmed by clip (see compacted()). */
  prevAssistant: string | null = null;
  lastAssistantText: string | null = null;

  line(line: Buffer): void {
    const type = topLevelType(line);
    if (type === 'session_meta') return this.meta(line);
    if (type === 'compacted') return this.compacted(line);
    if (type !== 'response_item') return;
    const head = line.subarray(0, 300).toString('latin1');
    const ptype = /"payload":\{"type":"([a-z_]+)"/.exec(head)?.[1];
    if (ptype === 'function_call_output') {
      const id = outputCallId(line);
      const named = head.includes('"name":"goal_objective"');
      if (!named && !(id && this.goalCalls.has(id))) return;
    } else if (ptype !== 'message' && ptype !== 'function_call' && ptype !== undefined) {
      return;
    }
    let obj: { payload?: Record<string, unknown>; metadata?: Record<string, unknown> };
    try {
      obj = JSON.parse(line.toString('utf8'));
    } catch {
      this.c.badLines++;
      return;
    }
    const p = obj.payload ?? {};
    if (p.type === 'message') this.message(p, obj.metadata ?? {});
    else if (p.type === 'function_call') this.call(p);
    else if (p.type === 'function_call_output') this.goalOutput(p);
  }

  private meta(line: Buffer): void {
    if (this.c.sessionId !== null) return;
    let p: Record<string, unknown>;
    try {
      p = (JSON.parse(line.toString('utf8')) as { payload: Record<string, unknown> }).payload ?? {};
    } catch {
      this.c.badLines++;
      return;
    }
    this.c.sessionId = str(p.id) ?? str(p.session_id);
    this.c.cwd = str(p.cwd);
    const hb = p.history_base as Record<string, unknown> | undefined;
    this.c.forkedFrom = str(p.forked_from_id) ?? str(hb?.thread_id);
    const tid = str(hb?.thread_id);
    if (tid && typeof hb?.end_byte_offset === 'number') this.base = { threadId: tid, endByte: hb.end_byte_offset };
  }

  private message(p: Record<string, unknown>, meta: Record<string, unknown>): void {
    const text = contentText(p.content);
    if (p.role === 'user') {
      if (!text.trim() || isInjected(p, text)) return;
      this.addRequest(text.trim());
    } else if (p.role === 'assistant') {
      if (meta.compaction_output === true || !text.trim()) return; // the compaction summary: never trusted
      this.prevAssistant = this.c.lastAssistant;
      this.lastAssistantText = text.trim();
      this.c.lastAssistant = clip(text.trim());
    }
  }

  /**
   * A `compacted` line. Releases without the `compaction_output` marker (0.153.4 writes no metadata)
   * record the summary as an ordinary assistant message just before it; the `compacted` line's
   * message quotes that summary, so a last assistant message it contains was the summary: never trusted.
   */
  private compacted(line: Buffer): void {
    if (this.lastAssistantText === null) return;
    let message: unknown;
    try {
      message = (JSON.parse(line.toString('utf8')) as { payload?: { message?: unknown } }).payload?.message;
    } catch {
      this.c.badLines++;
      return;
    }
    if (typeof message === 'string' && message.includes(this.lastAssistantText)) {
      this.c.lastAssistant = this.prevAssistant;
      this.lastAssistantText = null;
    }
  }

  addRequest(text: string): void {
    this.c.requestCount++;
    const t = clip(text);
    if (this.first === null) this.first = t;
    else {
      this.recent.push(t);
      if (this.recent.length > MAX_REQUESTS - 1) this.recent.shift();
    }
  }

  private call(p: Record<string, unknown>): void {
    const name = str(p.name);
    if (!name) return;
    if (GOAL_TOOLS.has(name)) {
      const id = str(p.call_id);
      if (id) this.goalCalls.add(id);
    }
    if (name !== 'update_plan' && name !== 'create_goal') return;
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(str(p.arguments) ?? '') as Record<string, unknown>;
    } catch {
      return;
    }
    if (name === 'create_goal') {
      const o = str(args.objective);
      if (o) this.c.goal = { objective: clip(o), status: 'active' };
      return;
    }
    const steps = Array.isArray(args.plan)
      ? args.plan
          .map((s) => (s && typeof s === 'object' ? (s as Record<string, unknown>) : {}))
          .filter((s) => typeof s.step === 'string')
          .slice(0, MAX_ITEMS)
          .map((s) => ({ step: clip(String(s.step)), status: str(s.status) ?? 'pending' }))
      : [];
    this.c.plan = { explanation: str(args.explanation) ? clip(str(args.explanation)!) : null, steps };
  }

  private goalOutput(p: Record<string, unknown>): void {
    const out = str(p.output);
    if (out === null) return;
    if (p.name === 'goal_objective') {
      if (out.trim()) this.c.goal = { objective: clip(out.trim()), status: this.c.goal?.status ?? 'active' };
      return;
    }
    try {
      const g = (JSON.parse(out) as { goal?: Record<string, unknown> }).goal;
      const o = str(g?.objective);
      if (o) this.c.goal = { objective: clip(o), status: str(g?.status) };
    } catch {
      /* an error text from the goal tool: no goal information */
    }
  }

  finish(): TranscriptCapture {
    this.c.requests = this.first === null ? [] : [this.first, ...this.recent];
    return this.c;
  }
}

function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c) => (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
    .filter(Boolean)
    .join('\n');
}

function isInjected(p: Record<string, unknown>, text: string): boolean {
  const pass = p.internal_chat_message_metadata_passthrough as Record<string, unknown> | undefined;
  const items = pass?.content_item_metadata;
  if (Array.isArray(items) && items.length > 0) {
    const kinds = items.map((i) => ((i as { provenance?: { type?: unknown } })?.provenance?.type ?? null) as unknown);
    if (kinds.some((k) => k !== null && k !== 'user')) return true;
  }
  const t = text.trimStart();
  return INJECTED_PREFIXES.some((pre) => t.startsWith(pre));
}

function clip(s: string, max = MAX_TEXT): string {
  return s.length <= max ? s : `${s.slice(0, max)}… [${s.length - max} more characters not kept]`;
}

/** Reads bytes [0, limit) of a rollout line by line, skipping lines longer than maxLine. */
function readLines(path: string, limit: number | null, maxLine: number, onLine: (line: Buffer) => boolean | void, onSkip: () => boolean | void): void {
  const fd = openSync(path, 'r');
  try {
    const size = Number(fstatSync(fd).size);
    const end = limit === null ? size : Math.min(limit, size);
    const buf = Buffer.allocUnsafe(CHUNK);
    let carry: Buffer[] = [];
    let carryLen = 0;
    let skipping = false;
    let pos = 0;
    while (pos < end) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, end - pos), pos);
      if (n <= 0) break;
      pos += n;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl < 0 || nl >= n) break;
        let stop: boolean | void = false;
        if (skipping) skipping = false;
        else if (carryLen + (nl - start) > maxLine) stop = onSkip();
        else stop = onLine(carryLen ? Buffer.concat([...carry, buf.subarray(start, nl)]) : buf.subarray(start, nl));
        if (stop === true) return;
        carry = [];
        carryLen = 0;
        start = nl + 1;
      }
      if (start < n && !skipping) {
        if (carryLen + (n - start) > maxLine) {
          onSkip();
          skipping = true;
          carry = [];
          carryLen = 0;
        } else {
          carry.push(Buffer.from(buf.subarray(start, n)));
          carryLen += n - start;
        }
      }
    }
    // A final line without a newline is still being written: ignore it.
  } finally {
    closeSync(fd);
  }
}

/** The rollout of a thread in the `sessions` tree that holds `near` (…/sessions/YYYY/MM/DD/file). */
export function findRolloutNear(near: string, threadId: string): string | null {
  const suffix = `-${threadId}.jsonl`;
  const same = dirname(near);
  const root = dirname(dirname(dirname(same)));
  const search = (dir: string, depth: number): string | null => {
    let names: string[];
    try {
      names = readdirSync(dir).sort().reverse();
    } catch {
      return null;
    }
    for (const n of names) {
      const p = join(dir, n);
      if (n.endsWith(suffix) && n.startsWith('rollout-')) return p;
      if (depth > 0 && /^\d+$/.test(n)) {
        try {
          if (!statSync(p).isDirectory()) continue;
        } catch {
          continue;
        }
        const f = search(p, depth - 1);
        if (f) return f;
      }
    }
    return null;
  };
  return search(same, 0) ?? (basename(root) === 'sessions' ? search(root, 3) : null);
}

/**
 * What the transcript says about the task: the user's requests (Codex's injected context skipped),
 * the latest plan or goal, and the last assistant message (the compaction summary is never used).
 * Follows a fork's history_base into the parent rollout for the requests made before the fork.
 */
export function captureFromTranscript(path: string, opts: CaptureOptions = {}): TranscriptCapture {
  const maxLine = opts.maxLineBytes ?? 8 << 20;
  const resolveRollout = opts.resolveRollout ?? ((id: string) => findRolloutNear(path, id));
  const chain: { path: string; limit: number | null }[] = [{ path, limit: null }];
  // Find the ancestors first (their session_meta only), then read oldest first.
  if (opts.followParent !== false) {
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const cur = chain[0]!;
      const probe = new Capturer();
      readLines(cur.path, cur.limit, maxLine, (l) => {
        if (topLevelType(l) !== 'session_meta') return false;
        probe.line(l);
        return true; // the first session_meta is enough
      }, () => false);
      const base = probe.base;
      if (!base || seen.has(base.threadId)) break;
      seen.add(base.threadId);
      const parent = resolveRollout(base.threadId);
      if (!parent) break;
      chain.unshift({ path: parent, limit: base.endByte });
    }
  }
  const cap = new Capturer();
  for (const [i, part] of chain.entries()) {
    if (i === chain.length - 1) {
      // The session's own file: its session_meta is the one reported.
      cap.c.sessionId = null;
      cap.c.cwd = null;
      cap.c.forkedFrom = null;
    }
    readLines(part.path, part.limit, maxLine, (l) => void cap.line(l), () => void cap.c.skippedLines++);
  }
  return cap.finish();
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
  if (cap.lastAssistant) nextAction += `${nextAction ? '\n\n' : ''}Your last message before the compaction: ${cap.lastAssistant}`;
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

// ---------------------------------------------------------------------------------------------
// Ledger facts

/** Attempts and files changed since the session's latest checkpoint (the whole session if none). */
export function ledgerFacts(db: Db, sessionId: string): LatchFacts {
  const s = db.prepare('SELECT state, workspace, created_at FROM sessions WHERE session_id = ?').get(sessionId) as
    | { state: string; workspace: string; created_at: string }
    | undefined;
  if (!s) return emptyFacts();
  const cp = db
    .prepare('SELECT id, created_at FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq DESC, created_at DESC LIMIT 1')
    .get(sessionId) as { id: string; created_at: string } | undefined;
  const since = cp?.created_at ?? '';
  const attempts = db
    .prepare('SELECT id, summary, tool_name, state FROM attempts WHERE session_id = ? AND started_at >= ? ORDER BY started_ns, id')
    .all(sessionId, since) as { id: string; summary: string | null; tool_name: string; state: string }[];
  const filesOf = db.prepare('SELECT DISTINCT path FROM changes WHERE attempt_id = ? ORDER BY path');
  const kept = attempts.slice(-MAX_ITEMS);
  const facts: AttemptFact[] = kept.map((a) => ({
    summary: clip(a.summary ?? a.tool_name, 300),
    state: a.state,
    files: (filesOf.all(a.id) as { path: string }[]).map((r) => r.path).slice(0, MAX_FILES),
  }));
  if (attempts.length > kept.length) facts.unshift({ summary: `(${attempts.length - kept.length} earlier attempts not listed)`, state: 'omitted', files: [] });
  // A checkpoint's own observation records what changed BEFORE it: leave it out unless an attempt
  // after the checkpoint is blamed for the change.
  const ids = new Set(attempts.map((a) => a.id));
  const changes = (
    cp
      ? db.prepare('SELECT path, observed_by, attempt_id FROM changes WHERE workspace = ? AND observed_at >= ? ORDER BY path').all(s.workspace, since)
      : db.prepare('SELECT path, observed_by, attempt_id FROM changes WHERE workspace = ? AND observed_at >= ? ORDER BY path').all(s.workspace, s.created_at)
  ) as { path: string; observed_by: string; attempt_id: string | null }[];
  const files = [...new Set(changes.filter((c) => c.observed_by !== 'checkpoint' || (c.attempt_id !== null && ids.has(c.attempt_id))).map((c) => c.path))];
  const shown = files.slice(0, MAX_FILES);
  if (files.length > shown.length) shown.push(`(${files.length - shown.length} more)`);
  return { state: s.state, checkpoint_id: cp?.id ?? null, attempts_since_checkpoint: facts, files_changed_since_checkpoint: shown };
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
  return { ...j, session_id: r.session_id, version: r.version, source: r.source as BriefSource, created_at: r.created_at, rendered: r.rendered, page_digests: JSON.parse(r.page_digests) as string[] };
}

export function latestBrief(db: Db, sessionId: string): Brief | null {
  const r = db.prepare('SELECT * FROM briefs WHERE session_id = ? ORDER BY version DESC LIMIT 1').get(sessionId) as BriefRow | undefined;
  return r ? fromRow(r) : null;
}

export function getBrief(db: Db, sessionId: string, version: number): Brief | null {
  const r = db.prepare('SELECT * FROM briefs WHERE session_id = ? AND version = ?').get(sessionId, version) as BriefRow | undefined;
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
    const v = (db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM briefs WHERE session_id = ?').get(sessionId) as { v: number }).v;
    const b = buildBrief(content, { session_id: sessionId, source: opts.source, version: v + 1, created_at: opts.now, human_fields: opts.humanFields ?? [] });
    const { rendered, page_digests, ...rest } = b;
    db.prepare(
      'INSERT INTO briefs (session_id, version, source, created_at, json, rendered, page_count, page_digests) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(sessionId, b.version, b.source, b.created_at, JSON.stringify(rest), rendered, page_digests.length, JSON.stringify(page_digests));
    return b;
  });
}

/** An auto capture merged over the latest brief: the fields a human set keep the human's values. */
export function mergeAuto(prev: Brief | null, auto: BriefContent): { content: BriefContent; humanFields: HumanField[] } {
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
export function recordAutoBrief(db: Db, sessionId: string, transcriptPath: string | null, now: string, opts: CaptureOptions = {}): Brief {
  const cap = transcriptPath ? captureFromTranscript(transcriptPath, opts) : new Capturer().finish();
  const facts = ledgerFacts(db, sessionId);
  return inTx(db, () => {
    const { content, humanFields } = mergeAuto(latestBrief(db, sessionId), autoContent(cap, facts));
    return saveBrief(db, sessionId, content, { source: 'auto', now, humanFields });
  });
}
