import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeModel } from '../../src/agents/codex/fake-model.js';
import { findRollout, runCodex, writeCodexConfig } from '../../src/agents/codex/driver.js';

test('real codex runs a Bash item from the fake model and writes a rollout', { timeout: 120_000 }, async () => {
  const base = mkdtempSync(join(tmpdir(), 'latch-smoke-'));
  const codexHome = join(base, 'home');
  const cwd = join(base, 'work');
  mkdirSync(cwd, { recursive: true });
  const fake = await startFakeModel({ steps: [{ items: [{ type: 'bash', cmd: 'echo smoke > smoke.txt' }] }] });
  try {
    writeCodexConfig(codexHome, { baseUrl: fake.url });
    const run = await runCodex({ codexHome, cwd, prompt: 'write smoke.txt', timeoutMs: 90_000 });
    assert.equal(run.timedOut, false);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.threadId, 'thread.started event carries the thread id');

    assert.equal(readFileSync(join(cwd, 'smoke.txt'), 'utf8'), 'smoke\n');
    const rollout = findRollout(codexHome, run.threadId!);
    assert.ok(rollout && existsSync(rollout), 'rollout file exists');
    const first = JSON.parse(readFileSync(rollout!, 'utf8').split('\n')[0]!);
    assert.equal(first.type, 'session_meta');
    assert.equal(first.payload.id, run.threadId);

    // Step 0 (the Bash call), then the fallback "done" answer after the tool output.
    assert.equal(fake.requests.length, 2);
    const callId = fake.requests[1]!.body.input.find((i: any) => i.type === 'function_call_output')?.call_id;
    assert.ok(callId, 'the model received the tool output');
    assert.ok(run.events.some((e) => e.type === 'turn.completed'));
  } finally {
    await fake.close();
    rmSync(base, { recursive: true, force: true, maxRetries: 5 });
  }
});
