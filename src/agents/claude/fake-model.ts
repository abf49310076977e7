// Loopback fake of the Anthropic Messages API, enough to drive the real Claude Code CLI (2.1.332,
// `claude -p`) offline. POST <base>/v1/messages is answered as SSE: message_start (with
// usage.input_tokens, which drives Claude Code's auto-compaction), per content block
// content_block_start / content_block_delta (text_delta or input_json_delta) / content_block_stop,
// then message_delta (stop_reason) and message_stop. The compaction summary request is recognised
// from its last user message and answered with `summary` without consuming a turn; requests that
// offer no tools (titles, other side calls) get a short text and consume nothing either. Every
// request is recorded with what the model was told (tool results, system and context texts).
// Zero dependencies beyond node:http (src/base/loopback.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonBody, pathOf, readBody, sseEvent, startLoopback, startSse } from '../../base/loopback.js';

export type ClaudeBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; name: string; input: unknown; id?: string };

/** One model response (or an API error). */
export interface ClaudeTurn {
  content?: ClaudeBlock[];
  /** Reported usage.input_tokens (default 100). ~990000 on a tool turn makes 2.1.332 auto-compact. */
  inputTokens?: number;
  outputTokens?: number;
  /** Default: tool_use when a tool_use block is present, else end_turn. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens';
  /** Answer with an HTTP error instead (e.g. 400 "prompt is too long: ..." for reactive compaction). */
  error?: { status?: number; type?: string; message?: string };
}

export type RequestKind = 'main' | 'compact' | 'side' | 'count_tokens' | 'other';

export interface ToolResult {
  toolUseId: string;
  isError: boolean;
  text: string;
}

export interface ClaudeRequest {
  /** 0-based position among all recorded requests. */
  index: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (undefined if it was not JSON). */
  body: any;
  kind: RequestKind;
  /** For main requests: the index of the turn that answered it. */
  turn?: number;
  /** Every tool_result block in the request's messages, in order. */
  toolResults: ToolResult[];
  /** The system prompt's texts. */
  systemTexts: string[];
  /** Every text of the messages (user and assistant text blocks, tool result texts). */
  messageTexts: string[];
  /** Names of the tools offered. */
  tools: string[];
}

export interface ClaudeFakeModel {
  /** ANTHROPIC_BASE_URL, e.g. http://127.0.0.1:PORT */
  url: string;
  requests: ClaudeRequest[];
  /** Errors thrown by a turns function (the request was answered with an error text). */
  errors: unknown[];
  /** Main-agent turns served so far. */
  served(): number;
  close(): Promise<void>;
}

export interface ClaudeFakeOptions {
  turns: ClaudeTurn[] | ((req: ClaudeRequest, index: number) => ClaudeTurn);
  /** Text of the compaction summary. */
  summary?: string;
  /** Text for tool-less side requests (titles, ...). */
  side?: string;
  /** Answer once the scripted turns are used up (default: a text "done"). */
  fallback?: ClaudeTurn;
  /** Largest accepted request body (default 64 MiB). */
  maxBodyBytes?: number;
}

/** The summary request's last user message contains this (2.1.332). */
export const SUMMARY_MARKER = 'Your task is to create a detailed summary';
/** How 2.1.332 passes a SessionStart hook's additionalContext to the model. */
export const HOOK_CONTEXT_PREFIX = 'SessionStart hook additional context:';
/** usage.input_tokens that makes 2.1.332's default model (1M window) auto-compact after a tool turn. */
export const COMPACTING_INPUT_TOKENS = 990_000;

/** All text in a Messages API content value (string, blocks, nested tool_result content). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const b of content as any[]) {
    if (b == null) continue;
    if (typeof b === 'string') parts.push(b);
    else if (typeof b.text === 'string') parts.push(b.text);
    else if (b.content !== undefined) parts.push(contentText(b.content));
  }
  return parts.join('\n');
}

function messagesOf(body: any): any[] {
  return Array.isArray(body?.messages) ? body.messages : [];
}

/** A compaction summary request: its last user message asks for the summary. */
export function isSummaryRequest(body: any): boolean {
  const msgs = messagesOf(body);
  const last = msgs[msgs.length - 1];
  return last?.role === 'user' && contentText(last.content).includes(SUMMARY_MARKER);
}

export function classifyRequest(method: string, path: string, body: any): RequestKind {
  if (method !== 'POST') return 'other';
  if (/\/v1\/messages\/count_tokens$/.test(path)) return 'count_tokens';
  if (!/\/v1\/messages$/.test(path) || !Array.isArray(body?.messages)) return 'other';
  if (isSummaryRequest(body)) return 'compact';
  if (!Array.isArray(body.tools) || body.tools.length === 0) return 'side';
  return 'main';
}

function toolResultsOf(body: any): ToolResult[] {
  const out: ToolResult[] = [];
  for (const m of messagesOf(body)) {
    if (!Array.isArray(m?.content)) continue;
    for (const b of m.content)
      if (b?.type === 'tool_result')
        out.push({ toolUseId: String(b.tool_use_id), isError: b.is_error === true, text: contentText(b.content) });
  }
  return out;
}

function systemTextsOf(body: any): string[] {
  const s = body?.system;
  if (typeof s === 'string') return [s];
  if (!Array.isArray(s)) return [];
  return s.map((b: any) => (typeof b?.text === 'string' ? b.text : '')).filter((t: string) => t !== '');
}

function messageTextsOf(body: any): string[] {
  const out: string[] = [];
  for (const m of messagesOf(body)) {
    if (typeof m?.content === 'string') out.push(m.content);
    else if (Array.isArray(m?.content))
      for (const b of m.content) {
        const t = b?.type === 'tool_result' ? contentText(b.content) : typeof b?.text === 'string' ? b.text : '';
        if (t !== '') out.push(t);
      }
  }
  return out;
}

let serverSeq = 0;

export async function startClaudeFakeModel(opts: ClaudeFakeOptions): Promise<ClaudeFakeModel> {
  const serverId = ++serverSeq;
  const maxBody = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const summary = opts.summary ?? 'The user asked for files to be written; the work is in progress.';
  const requests: ClaudeRequest[] = [];
  const errors: unknown[] = [];
  let nextTurn = 0;
  let idSeq = 0;
  const newId = (prefix: string) => `${prefix}_fake_${serverId}_${process.pid}_${++idSeq}`;

  const pickTurn = (rec: ClaudeRequest): ClaudeTurn => {
    if (typeof opts.turns === 'function') {
      const i = nextTurn++;
      rec.turn = i;
      return opts.turns(rec, i);
    }
    if (nextTurn >= opts.turns.length) return opts.fallback ?? { content: [{ type: 'text', text: 'done' }] };
    rec.turn = nextTurn;
    return opts.turns[nextTurn++]!;
  };

  const blocksOf = (turn: ClaudeTurn): ClaudeBlock[] =>
    (turn.content ?? [{ type: 'text', text: 'ok' }]).map((b) =>
      b.type === 'tool_use' ? { type: 'tool_use', id: b.id ?? newId('toolu'), name: b.name, input: b.input ?? {} } : b,
    );

  const send = (res: ServerResponse, model: string, turn: ClaudeTurn, stream: boolean) => {
    if (turn.error) {
      res.writeHead(turn.error.status ?? 400, { 'content-type': 'application/json', 'request-id': newId('req') }).end(
        JSON.stringify({
          type: 'error',
          error: { type: turn.error.type ?? 'invalid_request_error', message: turn.error.message ?? 'fake error' },
        }),
      );
      return;
    }
    const blocks = blocksOf(turn);
    const stopReason = turn.stopReason ?? (blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    const id = newId('msg');
    const inputTokens = turn.inputTokens ?? 100;
    const outputTokens = turn.outputTokens ?? 20;
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': newId('req') }).end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: blocks,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { input_tokens: inputTokens, output_tokens: outputTokens },
        }),
      );
      return;
    }
    startSse(res, { 'request-id': newId('req') });
    const ev = (data: Record<string, unknown>) => sseEvent(res, data);
    ev({
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: inputTokens,
          output_tokens: 1,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
    blocks.forEach((b, index) => {
      if (b.type === 'tool_use') {
        ev({
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
        });
        ev({
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) },
        });
      } else {
        ev({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
      }
      ev({ type: 'content_block_stop', index });
    });
    ev({
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    });
    ev({ type: 'message_stop' });
    res.end();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req, res, maxBody);
    if (raw === null) return;
    const method = req.method ?? 'GET';
    const path = pathOf(req);
    const body = jsonBody(raw);
    const rec: ClaudeRequest = {
      index: requests.length,
      method,
      path,
      headers: req.headers,
      body,
      kind: classifyRequest(method, path, body),
      toolResults: toolResultsOf(body),
      systemTexts: systemTextsOf(body),
      messageTexts: messageTextsOf(body),
      tools: Array.isArray(body?.tools) ? body.tools.map((t: any) => String(t?.name)) : [],
    };
    requests.push(rec);
    const model = typeof body?.model === 'string' ? body.model : 'claude-opus-5-5';
    const stream = body?.stream !== false;
    switch (rec.kind) {
      case 'count_tokens':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":100}');
        return;
      case 'other':
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"type":"error","error":{"type":"not_found_error","message":"fake: not found"}}');
        return;
      case 'compact':
        return send(
          res,
          model,
          { inputTokens: 1000, content: [{ type: 'text', text: `<summary>\n${summary}\n</summary>` }] },
          stream,
        );
      case 'side':
        return send(res, model, { inputTokens: 50, content: [{ type: 'text', text: opts.side ?? 'ok' }] }, stream);
      case 'main': {
        let turn: ClaudeTurn;
        try {
          turn = pickTurn(rec);
        } catch (err) {
          errors.push(err);
          turn = { content: [{ type: 'text', text: `fake-model error: ${String(err)}` }] };
        }
        return send(res, model, turn, stream);
      }
    }
  };

  const server = await startLoopback(handle, { requestTimeoutMs: 60_000, onError: (err) => errors.push(err) });
  return { url: `http://127.0.0.1:${server.port}`, requests, errors, served: () => nextTurn, close: server.close };
}

/** Every tool result the model was sent, first occurrence of each tool_use_id, in order. */
export function toolResultsSeen(requests: readonly ClaudeRequest[]): ToolResult[] {
  const seen = new Map<string, ToolResult>();
  for (const r of requests) for (const t of r.toolResults) if (!seen.has(t.toolUseId)) seen.set(t.toolUseId, t);
  return [...seen.values()];
}
