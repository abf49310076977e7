// The IDE path end to end: the REAL `codex app-server` (0.169.0) over stdio JSON-RPC, the loopback
// fake model, Latch's hooks installed by the real `latch setup codex` and trusted through the
// app-server itself (hooks/list → config/batchWrite; no --dangerously-bypass-hook-trust). One turn
// auto-compacts between its writes: the write after the compaction is denied, `latch status` shows
// the session latched, the stream carries the hook runs, and `latch doctor STREAM` reads it without
// a false finding. (The fixture test/fixtures/doctor/app-server-latched.jsonl is this scenario's
// stream, saved by scripts/capture-doctor-fixtures.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FsckReport } from '../../src/agents/codex/fsck/fsck.js';
import { hookNotifications, runLatchedAppServer } from '../helpers/app-server-scenario.js';

/** Findings that are not about the stream: whether this Codex release is qualified is another check. */
const NOT_ABOUT_THE_STREAM = new Set(['unqualified_writer']);

test('codex app-server: trusted Latch hooks latch the session at an auto-compaction, deny the write after it, and doctor reads the stream clean', {
  timeout: 300_000,
}, async () => {
  const run = await runLatchedAppServer();
  const { env } = run;
  try {
    // Trust: untrusted as installed, trusted after the IDE-style config/batchWrite, no bypass flag.
    const ours = (hooks: typeof run.hooksBefore) => hooks.filter((h) => h.sourcePath === `${env.codexHome}/hooks.json`);
    assert.ok(ours(run.hooksBefore).length >= 8, 'the hooks latch setup installed are listed');
    assert.ok(
      ours(run.hooksBefore).every((h) => h.trustStatus === 'untrusted'),
      JSON.stringify(ours(run.hooksBefore).map((h) => h.trustStatus)),
    );
    assert.ok(
      ours(run.hooksAfter).every((h) => h.trustStatus === 'trusted'),
      JSON.stringify(ours(run.hooksAfter).map((h) => h.trustStatus)),
    );
    assert.match(
      readFileSync(join(env.codexHome, 'config.toml'), 'utf8'),
      /\[hooks\.state\."[^"]*hooks\.json:pre_tool_use:0:0"\]\s*\ntrusted_hash = "sha256:[0-9a-f]{64}"/,
    );
    assert.deepEqual(run.sent, [
      'initialize',
      'initialized',
      'hooks/list',
      'config/batchWrite',
      'hooks/list',
      'thread/start',
      'turn/start',
    ]);
    assert.deepEqual(run.serverRequests, [], 'no approval was asked');

    // The compaction happened inside the turn, between the two writes.
    assert.ok(
      env.fake.requests.some((r) => r.isCompaction),
      'Codex compacted',
    );
    const items = run.messages
      .filter((m) => m.method === 'item/completed')
      .map((m) => (m.params as { item: { type: string } }).item.type);
    assert.ok(items.includes('contextCompaction'), items.join());

    // The write after the compaction was denied: the file is as the pre-compaction writes left it.
    assert.equal(env.file('a.txt'), 'step1\nstep2\n');
    assert.equal(env.file('c.txt'), null);
    const status = env.statusJson();
    assert.equal(status.sessions.length, 1);
    const sess = status.sessions[0]!;
    assert.equal(sess.session_id, run.threadId);
    assert.equal(sess.state, 'latched');
    assert.equal(sess.may_mutate, false);
    assert.equal(sess.checkpoints.length, 1);

    // The hook runs in the stream: started and completed for each, the compaction hooks, and the
    // two post-compaction calls blocked by PreToolUse with Latch's feedback entry.
    const hooks = hookNotifications(run.messages);
    const started = hooks.filter((h) => h.method === 'hook/started');
    const completed = hooks.filter((h) => h.method === 'hook/completed');
    assert.equal(started.length, completed.length);
    for (const ev of ['sessionStart', 'preToolUse', 'postToolUse', 'preCompact', 'postCompact', 'stop']) {
      assert.ok(
        completed.some((h) => h.event === ev),
        `a completed ${ev} run`,
      );
    }
    const blocked = completed.filter((h) => h.status === 'blocked');
    assert.equal(blocked.length, 2, JSON.stringify(blocked.map((h) => h.id)));
    // Each blocked run carries Latch's feedback (what the model reads) among its output entries.
    for (const h of blocked) {
      assert.equal(h.event, 'preToolUse');
      assert.ok(
        h.entries.some((e) => e.kind === 'feedback' && e.text.startsWith('Latch blocked this call')),
        JSON.stringify(h.entries),
      );
    }
    const brief = completed.find((h) => h.event === 'sessionStart' && h.entries.some((e) => e.kind === 'context'));
    assert.ok(brief, 'the post-compaction SessionStart delivered Latch context');
    // Every line is one JSON object with no "jsonrpc" member.
    const lines = run.stream.trimEnd().split('\n');
    assert.equal(lines.length, run.messages.length);
    assert.ok(lines.every((l) => !('jsonrpc' in JSON.parse(l))));

    // latch doctor on the raw stream, cross-checked with the store of that very run.
    const file = join(env.base, 'app-server-stream.jsonl');
    writeFileSync(file, run.stream);
    const d = env.latch(['doctor', file, '--json']);
    const r = JSON.parse(d.stdout) as FsckReport;
    assert.equal(r.format, 'app-server');
    // 0: healthy; 3: healthy, written by a release this machine has not qualified (not the stream's fault).
    assert.ok(d.code === 0 || d.code === 3, `latch doctor exited ${d.code}: ${d.stderr}`);
    const findings = r.findings.filter((f) => !NOT_ABOUT_THE_STREAM.has(f.code));
    assert.deepEqual(findings, [], JSON.stringify(findings));
    assert.equal(r.compactions.length, 1);
    assert.equal(r.compactions[0]!.trigger, 'auto');
    assert.equal(r.hook_blocked_outputs, 2);
    const att = r.attempts_after_compaction.list.filter((a) => a.outcome === 'blocked');
    assert.deepEqual(
      att.map((a) => [a.tool, a.summary]),
      [
        ['Bash', 'echo after > a.txt'],
        ['apply_patch', 'add c.txt'],
      ],
    );
    assert.ok(
      att.every(
        (a) =>
          a.hook?.event === 'preToolUse' &&
          a.hook.status === 'blocked' &&
          a.hook.entries.some((e) => e.text.startsWith('Latch blocked')),
      ),
    );
    // The read after the compaction ran as Latch rewrote it (a held read) and is reported as the model's command.
    const read = r.attempts_after_compaction.list.find((a) => a.summary === 'cat a.txt');
    assert.ok(
      read && read.outcome === 'ran' && read.read_only === true,
      JSON.stringify(r.attempts_after_compaction.list),
    );
    assert.equal(r.hook_runs!.started, started.length);
    assert.equal(r.hook_runs!.by_event_status['preToolUse:blocked'], 2);
    const st = r.store!;
    assert.equal(st.status, 'checked');
    assert.equal(st.state, 'latched');
    assert.equal(st.denials!.store, 2);
    assert.deepEqual(st.denials!.missing_in_transcript, []);
    assert.deepEqual(st.denials!.missing_in_store, []);
    // The checkpoint's prefix hash is compared with the transcript it hashed (the rollout), not the stream.
    assert.equal(st.checkpoints![0]!.compared_file, run.rollout);
    assert.equal(st.checkpoints![0]!.prefix, 'same');

    // And the rollout of the same run reads clean against the same store.
    assert.ok(run.rollout);
    const rr = JSON.parse(env.latch(['doctor', run.rollout!, '--json']).stdout) as FsckReport;
    assert.deepEqual(
      rr.findings.filter((f) => !NOT_ABOUT_THE_STREAM.has(f.code)),
      [],
    );
    assert.equal(rr.store!.denials!.transcript_blocked_by_latch, 2);
  } finally {
    await env.cleanup();
  }
});
