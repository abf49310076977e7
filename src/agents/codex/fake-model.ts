// Loopback fake of the OpenAI Responses API, enough to drive the real Codex CLI offline.
// POST <base>/responses is answered as SSE: response.created, one response.output_item.done per
// item, response.completed (with usage.input_tokens, which drives Codex's auto-compaction).
// Compaction requests are recognised from their input and answered with `summary` without
// consuming a scripted step. Zero dependencies beyond node:http (src/base/loopback.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonBody, pathOf, readBody, sseEvent, startLoopback, startSse } from '../../base/loopback.js';

export type FakeItem =
  /**
   * A shell call (exec_command). It asks Codex to wait up to BASH_YIELD_MS for the command to finish
   * (Codex's default is 10 s): on a busy machine a scripted command, with its login shell, can take
   * longer, and Codex would then answer with what it printed so far while the command runs on.
   */
  | { type: 'bash'; cmd: string; workdir?: string }
  | { type: 'patch'; patch: string }
  | { type: 'message'; text: string }
  | { type: 'raw'; item: unknown };

/** How long a scripted shell call asks Codex to wait for its command (exec_command's yield_time_ms). */
export const BASH_YIELD_MS = 30_000;

/** One model response. */
export interface FakeStep {
  items: FakeItem[];
  /** Reported usage.input_tokens; above `model_auto_compact_token_limit` it triggers auto-compaction. */
  inputTokens?: number;
  /** How long the model "thinks" before it answers (ms; default 0): a real model takes seconds. */
  delayMs?: number;
}

export interface RecordedRequest {
  /** 0-based position among all POST /responses requests (compactions included). */
  index: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (undefined if it was not JSON). */
  body: any;
  /** True when this was Codex's local compaction request (answered with `summary`). */
  isCompaction: boolean;
  /** Index of the scripted step that answered it; undefined for compactions and fallbacks. */
  stepIndex?: number;
}

export interface FakeModel {
  /** Base URL for a Codex model provider, e.g. http://127.0.0.1:PORT/v1 */
  url: string;
  requests: RecordedRequest[];
  /** Errors thrown by a steps function (the request was answered with an error message). */
  errors: unknown[];
  close(): Promise<void>;
}

export interface FakeModelOptions {
  steps: FakeStep[] | ((req: RecordedRequest, index: number) => FakeStep);
  /** Text returned as the compaction summary. */
  summary?: string;
  /** Largest accepted request body (default 32 MiB). */
  maxBodyBytes?: number;
}

/** Codex 0.169 local compaction appends a user message starting with this prompt. */
export const COMPACTION_MARKER = 'You are performing a CONTEXT CHECKPOINT COMPACTION';

/** All text contained in a Responses API input item (message content parts, outputs, ...). */
export function itemText(item: any): string {
  if (item == null) return '';
  if (typeof item === 'string') return item;
  const parts: string[] = [];
  if (typeof item.content === 'string') parts.push(item.content);
  else if (Array.isArray(item.content))
    for (const c of item.content) if (typeof c?.text === 'string') parts.push(c.text);
  if (typeof item.output === 'string') parts.push(item.output);
  else if (Array.isArray(item.output)) for (const c of item.output) if (typeof c?.text === 'string') parts.push(c.text);
  return parts.join('\n');
}

/**
 * Codex 0.169 local compaction: the request's LAST input item is a user message whose text starts
 * with COMPACTION_MARKER (observed: it also sends `tools: []` and `parallel_tool_calls: false`).
 */
export function isCompactionRequest(body: any): boolean {
  const input: unknown[] = Array.isArray(body?.input) ? body.input : [];
  const last: any = input[input.length - 1];
  return last?.type === 'message' && last.role === 'user' && itemText(last).trimStart().startsWith(COMPACTION_MARKER);
}

let serverSeq = 0;

export async function startFakeModel(opts: FakeModelOptions): Promise<FakeModel> {
  const serverId = ++serverSeq;
  const maxBody = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  const summary = opts.summary ?? 'Summary: the task is in progress.';
  const requests: RecordedRequest[] = [];
  const errors: unknown[] = [];
  let nextStep = 0;
  let idSeq = 0;
  const newId = (prefix: string) => `${prefix}_${serverId}_${++idSeq}`;

  const toOutputItem = (item: FakeItem): unknown => {
    switch (item.type) {
      case 'bash':
        return {
          type: 'function_call',
          name: 'exec_command',
          call_id: newId('call'),
          arguments: JSON.stringify({
            cmd: item.cmd,
            ...(item.workdir ? { workdir: item.workdir } : {}),
            yield_time_ms: BASH_YIELD_MS,
          }),
        };
      case 'patch':
        return { type: 'custom_tool_call', name: 'apply_patch', call_id: newId('call'), input: item.patch };
      case 'message':
        return message(item.text);
      case 'raw':
        return item.item;
    }
  };
  const message = (text: string) => ({
    type: 'message',
    role: 'assistant',
    id: newId('msg'),
    content: [{ type: 'output_text', text }],
  });

  const pickStep = (rec: RecordedRequest): FakeStep | undefined => {
    if (typeof opts.steps === 'function') {
      const i = nextStep++;
      rec.stepIndex = i;
      return opts.steps(rec, i);
    }
    if (nextStep >= opts.steps.length) return undefined;
    rec.stepIndex = nextStep;
    return opts.steps[nextStep++];
  };

  const sendSse = (res: ServerResponse, items: unknown[], inputTokens: number) => {
    const responseId = newId('resp');
    startSse(res, { connection: 'close' });
    const send = (data: Record<string, unknown>) => sseEvent(res, data);
    send({ type: 'response.created', response: { id: responseId } });
    items.forEach((item, output_index) => {
      send({ type: 'response.output_item.done', output_index, item });
    });
    const outputTokens = 10;
    send({
      type: 'response.completed',
      response: {
        id: responseId,
        usage: {
          input_tokens: inputTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: inputTokens + outputTokens,
        },
      },
    });
    res.end();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req, res, maxBody);
    if (raw === null) return;
    const path = pathOf(req);
    if (req.method !== 'POST' || !path.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const body = jsonBody(raw);
    const rec: RecordedRequest = {
      index: requests.length,
      method: req.method,
      path,
      headers: req.headers,
      body,
      isCompaction: isCompactionRequest(body),
    };
    requests.push(rec);
    if (rec.isCompaction) return sendSse(res, [message(summary)], 50);
    let step: FakeStep | undefined;
    try {
      step = pickStep(rec);
    } catch (err) {
      errors.push(err);
      return sendSse(res, [message(`fake-model error: ${String(err)}`)], 50);
    }
    if (!step) return sendSse(res, [message('done')], 50);
    if (step.delayMs) await new Promise((r) => setTimeout(r, step.delayMs));
    sendSse(res, step.items.map(toOutputItem), step.inputTokens ?? 100);
  };

  const server = await startLoopback(handle, { requestTimeoutMs: 30_000, onError: (err) => errors.push(err) });
  return { url: `http://127.0.0.1:${server.port}/v1`, requests, errors, close: server.close };
}
