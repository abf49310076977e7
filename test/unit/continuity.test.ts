// Continuity through the real guard path (in-process hooks with captured payloads): remote-style
// compaction (empty summary) delivers the brief the same way; reverify = "both" makes a human's verify
// wait for a complete read proven by the transcript.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCodexHook } from '../../src/hook.js';
import { pageText } from '../../src/continuity/brief.js';
import { latestBrief } from '../../src/continuity/brief-store.js';
import { openStore } from '../../src/store/store.js';
import { verify } from '../../src/commands/verify.js';
import type { Io } from '../../src/kit/io.js';
import { assertValidReply } from '../helpers/schemas.js';
import { bash, payload, rolloutLine, sandbox, type Sandbox } from '../helpers/workspace.js';

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  return assertValidReply(String(p.hook_event_name), r.stdout) as {
    hookSpecificOutput?: { permissionDecision?: string; additionalContext?: string };
  } | null;
}

function io(sb: Sandbox): Io & { text(): string } {
  let buf = '';
  return {
    out: (t) => (buf += t),
    err: (t) => (buf += t),
    env: sb.env,
    cwd: sb.work,
    interactive: false,
    ask: async () => 'n',
    now: () => new Date().toISOString(),
    text: () => buf,
  };
}

const userAsks = (text: string) =>
  rolloutLine('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const remoteCompaction = () =>
  rolloutLine('response_item', {
    type: 'message',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'working' }],
  }) +
  rolloutLine('compacted', {
    message: '',
    replacement_history: [{ type: 'compaction', encrypted_content: 'opaque' }],
  }) +
  rolloutLine('event_msg', { type: 'item_completed', item: { type: 'ContextCompaction', id: 'remote-1' } });

async function compactRemotely(sb: Sandbox) {
  appendFileSync(sb.transcript, userAsks('Implement the TOML parser and keep the tests green.'));
  await hook(sb, payload('session-start-startup', sb));
  await hook(sb, bash(sb, 'true'));
  await hook(sb, payload('pre-compact-auto', sb));
  appendFileSync(sb.transcript, remoteCompaction());
  await hook(sb, payload('post-compact-auto', sb));
  return hook(sb, payload('session-start-compact', sb));
}

test("remote-style compaction (empty summary): latched, and the brief is delivered from Latch's own records", async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  const start = await compactRemotely(sb);
  const ctx = start?.hookSpecificOutput?.additionalContext ?? '';
  assert.match(ctx, /mutation authority for this session is revoked/);
  assert.match(ctx, /<<<LATCH-BRIEF session=S version=\d+ page=1\//);
  assert.match(ctx, /Implement the TOML parser/, 'the objective comes from the transcript, not the (empty) summary');
  assert.equal((await hook(sb, bash(sb, 'echo x > x.txt')))?.hookSpecificOutput?.permissionDecision, 'deny');
});

test('reverify = "both": verify waits for a complete read proven by the transcript, then restores', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  writeFileSync(join(sb.home, 'config.toml'), 'reverify = "both"\n');
  await compactRemotely(sb);
  await hook(sb, payload('stop', sb));
  const first = io(sb);
  assert.equal(await verify(first, { yes: true }), 65);
  assert.match(first.text(), /\[FAIL\] brief: brief version \d+: page\(s\) 1/);

  // The agent reads every page: what Codex records for a successful `latch brief --page N`.
  const db = openStore(sb.home, { create: false });
  const brief = latestBrief(db, 'S')!;
  db.close();
  brief.page_digests.forEach((_, i) => {
    const output = `Chunk ID: c${i}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 40\nOutput:\n${pageText(brief, i + 1)}`;
    appendFileSync(
      sb.transcript,
      rolloutLine('response_item', {
        type: 'function_call',
        name: 'exec_command',
        call_id: `read_${i}`,
        arguments: '{}',
      }),
    );
    appendFileSync(
      sb.transcript,
      rolloutLine('response_item', { type: 'function_call_output', call_id: `read_${i}`, output }),
    );
  });
  await hook(sb, payload('stop', sb)); // any hook scans the transcript and records the receipts
  const second = io(sb);
  assert.equal(await verify(second, { yes: true }), 0, second.text());
  assert.match(second.text(), /\[ok\] brief: all \d+ page\(s\) of brief version \d+ read successfully/);
});

function readAllPages(sb: Sandbox, tag: string) {
  const db = openStore(sb.home, { create: false });
  const brief = latestBrief(db, 'S')!;
  db.close();
  brief.page_digests.forEach((_, i) => {
    const output = `Chunk ID: ${tag}${i}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 40\nOutput:\n${pageText(brief, i + 1)}`;
    appendFileSync(
      sb.transcript,
      rolloutLine('response_item', {
        type: 'function_call',
        name: 'exec_command',
        call_id: `${tag}_${i}`,
        arguments: '{}',
      }),
    );
    appendFileSync(
      sb.transcript,
      rolloutLine('response_item', { type: 'function_call_output', call_id: `${tag}_${i}`, output }),
    );
  });
}

async function compactAgain(sb: Sandbox) {
  await hook(sb, payload('pre-compact-auto', sb));
  appendFileSync(sb.transcript, remoteCompaction().replace('remote-1', 'remote-2'));
  await hook(sb, payload('post-compact-auto', sb));
  return (await hook(sb, payload('session-start-compact', sb)))?.hookSpecificOutput?.additionalContext ?? '';
}

test('delivery: a delta only when the previous delivery was proven read, else the full brief', async (t) => {
  const read = sandbox();
  t.after(read.cleanup);
  await compactRemotely(read);
  readAllPages(read, 'r');
  await hook(read, payload('stop', read));
  const delta = await compactAgain(read);
  assert.match(delta, /replaces version \d+, which you read completely/);
  assert.doesNotMatch(delta, /<<<LATCH-BRIEF/);

  const unread = sandbox();
  t.after(unread.cleanup);
  await compactRemotely(unread);
  await hook(unread, payload('stop', unread));
  const full = await compactAgain(unread);
  assert.match(full, /<<<LATCH-BRIEF session=S version=\d+ page=1\//);
  assert.doesNotMatch(full, /which you read completely/);
});
