// Acceptance for continuity with proof, on the real pinned Codex (0.171.0) over the loopback fake model:
// the brief is delivered after auto-compaction, the agent reads its pages, reverify = "evidence"
// gives authority back by itself; a failing read keeps it revoked; a resume of an untouched
// transcript is native, of a rewritten one full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { FakeStep, RecordedRequest } from '../../src/agents/codex/fake-model.js';
import { itemText } from '../../src/agents/codex/fake-model.js';
import { BIG, findRollout, setupEnv, type Env } from '../helpers/e2e.js';

/** The page-read commands the delivered brief tells the agent to run (from what the model saw). */
function pageCommands(req: RecordedRequest): string[] {
  const text = (req.body?.input ?? []).map(itemText).join('\n');
  const cmd = /`(latch brief --page) N`/.exec(text);
  const pages = /version \d+: (\d+) pages?\./.exec(text);
  if (!cmd || !pages) return [];
  return Array.from({ length: Number(pages[1]) }, (_, i) => `${cmd[1]} ${i + 1}`);
}

function script(readSuffix: string): { steps: FakeStep[]; seen: { brief: boolean; commands: string[] } } {
  const seen = { brief: false, commands: [] as string[] };
  const fixed: FakeStep[] = [
    { items: [{ type: 'message', text: 'Plan: write a.txt, then after.txt.' }], inputTokens: 200 },
  ];
  let step = 0;
  const steps = (req: RecordedRequest): FakeStep => {
    step++;
    if (step === 1) return { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: 200 };
    if (step === 2) return { items: [{ type: 'bash', cmd: 'echo step2 >> a.txt' }], inputTokens: BIG };
    if (step === 3) {
      // The first request after the compaction: it must carry the delivered brief.
      seen.commands = pageCommands(req);
      seen.brief =
        seen.commands.length > 0 && (req.body?.input ?? []).map(itemText).join('\n').includes('<<<LATCH-BRIEF');
      return { items: seen.commands.map((c) => ({ type: 'bash' as const, cmd: c + readSuffix })) };
    }
    if (step === 4) return { items: [{ type: 'bash', cmd: 'echo after > after.txt' }] };
    return fixed[0]!;
  };
  return { steps: steps as unknown as FakeStep[], seen };
}

function transitions(env: Env): { event: string; to_state: string; evidence: Record<string, unknown> }[] {
  const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
  try {
    return (
      db.prepare('SELECT event, to_state, evidence_json FROM transitions ORDER BY id').all() as {
        event: string;
        to_state: string;
        evidence_json: string;
      }[]
    ).map((r) => ({
      event: r.event,
      to_state: r.to_state,
      evidence: JSON.parse(r.evidence_json),
    }));
  } finally {
    db.close();
  }
}

test('reverify = "evidence": brief delivered after compaction, pages read, authority returns by itself; resume native, then full after a rewrite', {
  timeout: 300_000,
}, async (t) => {
  const s = script('');
  const env = await setupEnv(s.steps, { latchConfig: 'reverify = "evidence"\n' });
  t.after(() => (process.env.KEEP ? console.log('KEPT', env.base) : env.cleanup()));
  const r = await env.codex('Write a.txt with two steps, then after.txt.');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(
    env.fake.requests.some((q) => q.isCompaction),
    'Codex compacted',
  );
  assert.ok(s.seen.brief, 'the first request after compaction carried the brief');
  assert.ok(s.seen.commands.length >= 1);
  assert.equal(env.file('after.txt'), 'after\n', 'the Bash after the complete read ran');
  const st = env.statusJson().sessions[0]!;
  assert.equal(st.state, 'mutable');
  const verify = transitions(env).find((x) => x.event === 'verify');
  assert.ok(verify, 'a verify transition was recorded');
  assert.equal(verify!.evidence.reverify, 'evidence');
  assert.equal((verify!.evidence.reads as { complete: boolean }).complete, true);

  // A process resume of the untouched transcript qualifies as native.
  const resumed = await env.codex('continue', { resume: r.threadId! });
  assert.equal(resumed.code, 0, resumed.stderr);
  const native = env.statusJson().sessions[0] as unknown as {
    last_resume: { decision: string; failed: { name: string }[] };
  };
  assert.equal(native.last_resume.decision, 'native', JSON.stringify(native.last_resume));

  // One byte rewritten inside the recorded prefix: full.
  const rollout = findRollout(env.codexHome, r.threadId!)!;
  const bytes = readFileSync(rollout);
  const at = bytes.indexOf('step1');
  assert.ok(at > 0);
  bytes[at] = 'S'.charCodeAt(0);
  writeFileSync(rollout, bytes);
  const again = await env.codex('continue again', { resume: r.threadId! });
  assert.equal(again.code, 0, again.stderr);
  const full = env.statusJson().sessions[0] as unknown as {
    last_resume: { decision: string; failed: { name: string }[] };
  };
  assert.equal(full.last_resume.decision, 'full');
  assert.ok(
    full.last_resume.failed.some((f) => f.name === 'append-only'),
    JSON.stringify(full.last_resume),
  );
});

test('reverify = "evidence": a failing page read keeps authority revoked', { timeout: 300_000 }, async (t) => {
  const s = script(' && false');
  const env = await setupEnv(s.steps, { latchConfig: 'reverify = "evidence"\n' });
  t.after(() => (process.env.KEEP ? console.log('KEPT', env.base) : env.cleanup()));
  const r = await env.codex('Write a.txt with two steps, then after.txt.');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(s.seen.brief);
  assert.equal(env.file('after.txt'), null, 'the Bash after a failed read was denied');
  assert.equal(env.statusJson().sessions[0]!.state, 'latched');
  assert.equal(transitions(env).filter((x) => x.event === 'verify').length, 0);
  const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
  const reads = db.prepare('SELECT ok, reasons_json FROM brief_reads').all() as { ok: number; reasons_json: string }[];
  const denied = db.prepare("SELECT summary FROM denials WHERE summary LIKE '%brief --page%'").all() as {
    summary: string;
  }[];
  db.close();
  // While held, Latch runs its own reads only in their exact form: `<page command> && false` is
  // refused (recorded as a denial), so it produces no page and no receipt; a read that ran and failed
  // would be recorded as not a read.
  assert.ok(
    reads.every((x) => x.ok === 0),
    'no receipt counts',
  );
  assert.ok(
    denied.length >= 1 || reads.some((x) => /exit|code/i.test(x.reasons_json)),
    'the failing read was refused or recorded as not a read',
  );
});
