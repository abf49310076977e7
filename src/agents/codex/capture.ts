// The brief's capture from a Codex rollout (streaming, bounded memory): the user's requests (Codex's
// injected context skipped), the latest plan or goal, the last assistant message.
import { readLines } from '../../base/lines.js';
import { emptyCapture, type CaptureOptions, type TranscriptCapture } from '../../continuity/capture.js';
import { clip, MAX_ITEMS } from '../../continuity/brief.js';
import { findRollout } from './lineage.js';
import { outputCallId, topLevelType } from './rollout.js';

const MAX_REQUESTS = 12;

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
  c: TranscriptCapture = emptyCapture();
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
    .map((c) =>
      c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string'
        ? (c as { text: string }).text
        : '',
    )
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

/**
 * What the transcript says about the task: the user's requests (Codex's injected context skipped),
 * the latest plan or goal, and the last assistant message (the compaction summary is never used).
 * Follows a fork's history_base into the parent rollout for the requests made before the fork.
 */
export function captureFromTranscript(path: string, opts: CaptureOptions = {}): TranscriptCapture {
  const maxLine = opts.maxLineBytes ?? 8 << 20;
  const resolveRollout = opts.resolveRollout ?? ((id: string) => findRollout(path, id));
  const chain: { path: string; limit: number | null }[] = [{ path, limit: null }];
  // Find the ancestors first (their session_meta only), then read oldest first.
  if (opts.followParent !== false) {
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const cur = chain[0]!;
      const probe = new Capturer();
      readLines(
        cur.path,
        cur.limit,
        maxLine,
        (l) => {
          if (topLevelType(l) !== 'session_meta') return false;
          probe.line(l);
          return true; // the first session_meta is enough
        },
        () => false,
      );
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
    readLines(
      part.path,
      part.limit,
      maxLine,
      (l) => void cap.line(l),
      () => void cap.c.skippedLines++,
    );
  }
  return cap.finish();
}
