// AppServerSession (src/agents/codex/app-server.ts) against a stand-in server: a node script speaking the
// app-server's line protocol. Every stdout line is kept as written (a non-JSON line too), server
// requests are answered with an error, error replies reject, and close() ends the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppServerError, AppServerSession, type CodexCommand } from '../../src/agents/codex/app-server.js';

const dir = mkdtempSync(join(tmpdir(), 'latch-as-session-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const SERVER = `
const rl = require('node:readline').createInterface({ input: process.stdin });
const out = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const got = [];
rl.on('line', (line) => {
  const m = JSON.parse(line);
  got.push(m);
  if (m.method === 'initialize') out({ id: m.id, result: { userAgent: 'stand-in/0.169.0' } });
  else if (m.method === 'echo') {
    process.stdout.write('not json\\n');
    out({ method: 'note', params: { n: 1 }, emittedAtMs: 1 });
    out({ id: 99, method: 'item/commandExecution/requestApproval', params: {} });
    out({ id: m.id, result: { echoed: m.params } });
  } else if (m.method === 'fail') out({ id: m.id, error: { code: 1, message: 'nope' } });
  else if (m.method === 'seen') out({ id: m.id, result: got.map((x) => x.method ?? ('reply:' + x.id + ':' + (x.error ? 'error' : 'result'))) });
});
rl.on('close', () => process.exit(0));
`;

function standIn(): CodexCommand {
  const script = join(dir, 'server.cjs');
  writeFileSync(script, SERVER);
  return { cmd: process.execPath, args: [script], path: script, from: 'given' };
}

test('AppServerSession: handshake, requests, raw lines, server requests answered, error replies, close', async () => {
  const s = await AppServerSession.start(standIn(), { env: process.env, codexHome: dir, cwd: dir, timeoutMs: 20_000 });
  try {
    assert.deepEqual(await s.request('echo', { a: 1 }), { echoed: { a: 1 } });
    const note = await s.waitFor((m) => m.method === 'note', 'note', { from: 0 });
    assert.deepEqual(note.params, { n: 1 });
    assert.equal(s.serverRequests.length, 1);
    await assert.rejects(
      s.request('fail', {}),
      (e: Error) => e instanceof AppServerError && /rejected fail: nope/.test(e.message),
    );
    const seen = await s.request('seen', {});
    assert.deepEqual(seen, ['initialize', 'initialized', 'echo', 'reply:99:error', 'fail', 'seen']);
    await assert.rejects(
      s.waitFor((m) => m.method === 'never', 'never', { from: s.mark(), timeoutMs: 50 }),
      /no never/,
    );
  } finally {
    await s.close();
  }
  assert.deepEqual(s.exit, { code: 0, signal: null });
  assert.ok(s.lines.includes('not json'));
  assert.equal(s.lines.length, s.messages.length + 1);
  assert.equal(s.stream(), s.lines.map((l) => l + '\n').join(''));
  await assert.rejects(
    s.waitFor((m) => m.method === 'never', 'never', { from: s.mark() }),
    /exited/,
  );
});
