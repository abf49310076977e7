import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import {
  BASH_YIELD_MS,
  COMPACTION_MARKER,
  isCompactionRequest,
  startFakeModel,
} from '../../src/agents/codex/fake-model.js';

type Sse = { event: string; data: any };

async function post(url: string, body: unknown): Promise<{ status: number; events: Sse[] }> {
  const res = await fetch(`${url}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const events = text
    .split('\n\n')
    .filter((b) => b.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null');
      return { event, data };
    });
  return { status: res.status, events };
}

const userMsg = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const items = (events: Sse[]) => events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item);

test('serves scripted steps as Responses API SSE, in order', async () => {
  const fm = await startFakeModel({
    steps: [
      {
        items: [
          { type: 'bash', cmd: 'echo hi > a.txt' },
          { type: 'patch', patch: '*** Begin Patch\n*** End Patch\n' },
        ],
        inputTokens: 4242,
      },
      {
        items: [
          { type: 'message', text: 'ok' },
          { type: 'raw', item: { type: 'reasoning', summary: [] } },
        ],
      },
    ],
  });
  try {
    assert.match(fm.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const r1 = await post(fm.url, { input: [userMsg('go')] });
    assert.equal(r1.status, 200);
    assert.deepEqual(
      r1.events.map((e) => e.event),
      ['response.created', 'response.output_item.done', 'response.output_item.done', 'response.completed'],
    );
    for (const e of r1.events) assert.equal(e.data.type, e.event);
    const [bash, patch] = items(r1.events);
    assert.equal(bash.type, 'function_call');
    assert.equal(bash.name, 'exec_command');
    assert.deepEqual(JSON.parse(bash.arguments), { cmd: 'echo hi > a.txt', yield_time_ms: BASH_YIELD_MS });
    assert.equal(patch.type, 'custom_tool_call');
    assert.equal(patch.name, 'apply_patch');
    assert.equal(patch.input, '*** Begin Patch\n*** End Patch\n');
    assert.notEqual(bash.call_id, patch.call_id);
    assert.equal(r1.events.at(-1)!.data.response.usage.input_tokens, 4242);

    const r2 = await post(fm.url, {
      input: [userMsg('go'), { type: 'function_call_output', call_id: bash.call_id, output: 'x' }],
    });
    const [msg, raw] = items(r2.events);
    assert.equal(msg.role, 'assistant');
    assert.deepEqual(msg.content, [{ type: 'output_text', text: 'ok' }]);
    assert.deepEqual(raw, { type: 'reasoning', summary: [] });

    assert.equal(fm.requests.length, 2);
    assert.deepEqual(
      fm.requests.map((r) => [r.index, r.stepIndex, r.isCompaction]),
      [
        [0, 0, false],
        [1, 1, false],
      ],
    );
    assert.equal(fm.requests[1]!.body.input[1].call_id, bash.call_id);
  } finally {
    await fm.close();
  }
});

test('compaction requests get the summary and do not consume a step', async () => {
  const fm = await startFakeModel({ steps: [{ items: [{ type: 'message', text: 'step0' }] }], summary: 'THE SUMMARY' });
  try {
    const compaction = {
      input: [userMsg('task'), userMsg(`${COMPACTION_MARKER}. Create a handoff summary.`)],
      tools: [],
    };
    const c = await post(fm.url, compaction);
    assert.equal(items(c.events)[0].content[0].text, 'THE SUMMARY');
    const s = await post(fm.url, { input: [userMsg('next')] });
    assert.equal(items(s.events)[0].content[0].text, 'step0');
    assert.deepEqual(
      fm.requests.map((r) => r.isCompaction),
      [true, false],
    );
    assert.equal(fm.requests[0]!.stepIndex, undefined);
  } finally {
    await fm.close();
  }
});

test('isCompactionRequest only looks at the last input item', () => {
  assert.equal(isCompactionRequest({ input: [userMsg(COMPACTION_MARKER)] }), true);
  assert.equal(isCompactionRequest({ input: [userMsg(COMPACTION_MARKER), userMsg('later')] }), false);
  assert.equal(isCompactionRequest({ input: [userMsg(`quoting "${COMPACTION_MARKER}"`)] }), false);
  assert.equal(isCompactionRequest({ input: 'text' }), false);
  assert.equal(isCompactionRequest(undefined), false);
});

test('answers "done" when steps run out; call ids stay unique; function steps see the request', async () => {
  const seen: number[] = [];
  const fm = await startFakeModel({
    steps: (req, i) => {
      seen.push(i);
      assert.ok(Array.isArray(req.body.input));
      return i < 2
        ? {
            items: [
              { type: 'bash', cmd: `echo ${i}` },
              { type: 'bash', cmd: 'true' },
            ],
          }
        : { items: [{ type: 'message', text: 'fn-done' }] };
    },
  });
  const fixed = await startFakeModel({ steps: [] });
  try {
    const ids = new Set<string>();
    for (let i = 0; i < 2; i++) for (const it of items((await post(fm.url, { input: [] })).events)) ids.add(it.call_id);
    assert.equal(ids.size, 4);
    assert.equal(items((await post(fm.url, { input: [] })).events)[0].content[0].text, 'fn-done');
    assert.deepEqual(seen, [0, 1, 2]);

    const d = await post(fixed.url, { input: [] });
    assert.equal(items(d.events)[0].content[0].text, 'done');
    assert.ok(d.events.at(-1)!.data.response.usage.input_tokens < 1000);
  } finally {
    await fm.close();
    await fixed.close();
  }
});

test('a throwing steps function is recorded and answered, not hung', async () => {
  const fm = await startFakeModel({
    steps: () => {
      throw new Error('boom');
    },
  });
  try {
    const r = await post(fm.url, { input: [] });
    assert.match(items(r.events)[0].content[0].text, /boom/);
    assert.equal(fm.errors.length, 1);
  } finally {
    await fm.close();
  }
});

test('unknown routes get 404; close() ends idle keep-alive connections and is idempotent', async () => {
  const fm = await startFakeModel({ steps: [] });
  const res = await fetch(`${fm.url}/models`);
  assert.equal(res.status, 404);
  await res.text();
  // Hold a raw socket open without sending a full request.
  const port = Number(new URL(fm.url).port);
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/v1/responses',
    headers: { 'content-length': '100' },
  });
  req.on('error', () => {});
  req.write('{');
  await new Promise((r) => setTimeout(r, 50));
  const started = Date.now();
  await Promise.all([fm.close(), fm.close()]);
  assert.ok(Date.now() - started < 2000);
});
