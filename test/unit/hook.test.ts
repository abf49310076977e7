// The hook's decisions, driven in-process with captured real payloads (re-pointed at temp dirs).
// Every reply is checked against Codex's own output schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCodexHook } from '../../src/hook.js';
import { remainingMs } from '../../src/base/deadline.js';
import { openStore } from '../../src/store/store.js';
import { dbPath } from '../../src/base/paths.js';
import { assertValidReply } from '../helpers/schemas.js';
import { isReplay, replayedCommand } from '../../src/guard/replay.js';
import { execFileSync } from 'node:child_process';
import { appendCompaction, appendModelTurn, bash, payload, sandbox, type Sandbox } from '../helpers/workspace.js';

async function hook(sb: Sandbox, p: Record<string, unknown>, expected: string | null = null) {
  const r = await runCodexHook(JSON.stringify(p), expected, sb.env);
  const event = String(p.hook_event_name ?? expected);
  const parsed = assertValidReply(event, r.stdout) as {
    hookSpecificOutput?: {
      permissionDecision?: string;
      permissionDecisionReason?: string;
      additionalContext?: string;
      updatedInput?: { command?: string };
    };
  } | null;
  const out = parsed?.hookSpecificOutput;
  return {
    ...r,
    parsed,
    denied: out?.permissionDecision === 'deny',
    reason: out?.permissionDecisionReason ?? '',
    /** Allowed as a held read: rewritten to run in the clean read shell (the sandbox when there is one). */
    rewritten: out?.permissionDecision === 'allow' ? (out.updatedInput?.command ?? null) : null,
  };
}

function counts(sb: Sandbox) {
  const db = openStore(sb.home, { create: false });
  try {
    const one = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      checkpoints: one('SELECT COUNT(*) n FROM checkpoints'),
      compactions: one('SELECT COUNT(*) n FROM compactions'),
      trips: one("SELECT COUNT(*) n FROM transitions WHERE event LIKE 'compaction:%'"),
      state: (db.prepare("SELECT state FROM sessions WHERE session_id = 'S'").get() as { state: string } | undefined)
        ?.state,
      via: (
        db.prepare("SELECT observed_via v FROM compactions WHERE session_id = 'S' ORDER BY seq").all() as {
          v: string;
        }[]
      ).map((r) => JSON.parse(r.v)),
    };
  } finally {
    db.close();
  }
}

test('no compaction: tracked tools are allowed with no output', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  assert.equal((await hook(sb, payload('session-start-startup', sb))).stdout, null);
  const r = await hook(sb, bash(sb, 'echo hi > a.txt'));
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, null);
  assert.equal((await hook(sb, payload('pre-tool-use-apply-patch', sb))).stdout, null);
  assert.equal(counts(sb).state, 'mutable');
});

test('compaction seen by PreCompact, PostCompact, SessionStart(compact) and the transcript is ONE trip and ONE checkpoint', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb));
  await hook(sb, bash(sb, 'echo one > one.txt'));
  writeFileSync(join(sb.work, 'one.txt'), 'one\n');
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  // The human (not the model) is told at the trip, through Codex's systemMessage (schema-checked).
  const post = await hook(sb, payload('post-compact-auto', sb));
  assert.match(
    (post.parsed as { systemMessage?: string } | null)?.systemMessage ?? '',
    /compaction #1 observed; session S is latched .*latch verify/,
  );
  const start = await hook(sb, payload('session-start-compact', sb));
  assert.match(start.parsed?.hookSpecificOutput?.additionalContext ?? '', /authority .* revoked/);
  assert.match(
    start.parsed?.hookSpecificOutput?.additionalContext ?? '',
    /Latch facts at delivery \(.*\): state latched/,
  );
  assert.doesNotMatch(start.parsed?.hookSpecificOutput?.additionalContext ?? '', /State: mutable/);
  appendModelTurn(sb.transcript);
  const denied = await hook(sb, bash(sb, 'echo two > two.txt'));
  assert.ok(denied.denied, 'post-compaction write denied');
  assert.match(
    (denied.parsed as { systemMessage?: string } | null)?.systemMessage ?? '',
    /Latch denied Bash: echo two > two.txt \(latched, not_read_only\)\. .*latch verify/,
  );
  assert.match(denied.reason, /latched/);
  assert.match(denied.reason, /latch verify/);
  assert.match(denied.reason, /cp_/);
  const c = counts(sb);
  assert.equal(c.checkpoints, 1);
  assert.equal(c.compactions, 1);
  assert.equal(c.trips, 1);
  assert.equal(c.state, 'latched');
  assert.deepEqual(new Set(c.via[0]), new Set(['pre_compact', 'transcript', 'post_compact', 'session_start']));
});

test('transcript only (no compaction hooks): the next PreToolUse trips and denies', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  assert.equal((await hook(sb, bash(sb, 'touch a'))).stdout, null);
  appendCompaction(sb.transcript);
  appendModelTurn(sb.transcript);
  const r = await hook(sb, bash(sb, 'touch b'));
  assert.ok(r.denied);
  const c = counts(sb);
  assert.deepEqual(c.via, [['transcript']]);
  assert.equal(c.checkpoints, 1);
});

test('read-only commands are allowed while latched; writes, latch verify and $LATCH_HOME are not', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  appendCompaction(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'echo x > x'))).denied);
  // Reads run in Latch's sandbox, in the hook; the call is rewritten to replay what they printed.
  for (const [cmd, out] of [
    ['ls -la', /README\.md/],
    ['cat README.md', /^# test\n$/],
    ['git status', /On branch main/],
    ['git --no-pager diff --no-ext-diff --no-textconv HEAD', /^$/],
    ['git log -p', /init/],
    ['rg foo . || true', /^$/],
    ['set -k; git --no-pager status', /nothing to commit/],
  ] as const) {
    const r = await hook(sb, bash(sb, cmd));
    assert.ok(r.rewritten !== null && isReplay(r.rewritten), `${cmd}: ${r.stdout}`);
    assert.equal(replayedCommand(r.rewritten), cmd);
    assert.match(execFileSync('/bin/bash', ['-c', r.rewritten], { cwd: sb.work, encoding: 'utf8' }), out, cmd);
  }
  for (const cmd of ['latch verify --yes', `ls ${sb.home}`, 'npx latch resume', 'sed -i s/a/b/ README.md']) {
    const r = await hook(sb, bash(sb, cmd));
    assert.ok(r.denied, `${cmd}: ${r.stdout}`);
    // A refused write names reads that work.
    if (cmd.startsWith('sed')) assert.match(r.reason, /reads still work .*`git status`/, cmd);
  }
  assert.ok((await hook(sb, payload('pre-tool-use-apply-patch', sb))).denied);
  assert.ok((await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'mcp__fs__write', tool_input: {} }))).denied);
  assert.ok((await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'spawn_agent', tool_input: {} }))).denied);
  assert.equal(
    (await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'view_image', tool_input: {} }))).stdout,
    null,
  );
  // A tool name Latch does not know is not a read-only one: it is denied with the same reason.
  assert.ok((await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'shiny_new_tool', tool_input: {} }))).denied);
});

test('touching Latch itself is denied even when not latched', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  assert.ok((await hook(sb, bash(sb, 'latch verify --yes'))).denied);
  assert.ok((await hook(sb, bash(sb, `rm -rf ${sb.home}`))).denied);
  // Decided before the store opens; recorded after, with the session (mutable: a denial latches nothing).
  assert.equal(counts(sb).state, 'mutable');
});

test('a denial made before the store opens is recorded for a session the store knows', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  assert.equal((await hook(sb, bash(sb, 'echo one > one.txt'))).denied, false);
  const r = await hook(sb, bash(sb, 'latch brief --page 1 && false'));
  assert.ok(r.denied);
  const db = openStore(sb.home, { create: false });
  try {
    const rows = db.prepare("SELECT summary, reasons_json FROM denials WHERE session_id = 'S'").all() as {
      summary: string;
      reasons_json: string;
    }[];
    assert.deepEqual(
      rows.map((x) => x.summary),
      ['Bash: latch brief --page 1 && false'],
    );
    assert.match(rows[0]!.reasons_json, /touches_latch/);
  } finally {
    db.close();
  }
});

test('fail closed: missing, corrupt and read-only stores deny tracked tools; untracked tools still run', async (t) => {
  const missing = sandbox({ store: false });
  t.after(missing.cleanup);
  const r1 = await hook(missing, bash(missing, 'echo x > y'));
  assert.ok(r1.denied);
  assert.match(r1.reason, /does not exist/);
  assert.equal(
    (await hook(missing, payload('pre-tool-use-bash', missing, { tool_name: 'view_image', tool_input: {} }))).stdout,
    null,
  );

  const corrupt = sandbox();
  t.after(corrupt.cleanup);
  writeFileSync(dbPath(corrupt.home), 'this is not a database, just bytes '.repeat(200));
  const r2 = await hook(corrupt, bash(corrupt, 'echo x > y'));
  assert.ok(r2.denied);
  assert.match(r2.reason, /fail closed/);
  assert.equal(
    (await hook(corrupt, payload('pre-tool-use-bash', corrupt, { tool_name: 'view_image', tool_input: {} }))).stdout,
    null,
  );
  assert.ok(
    (await hook(corrupt, payload('pre-tool-use-bash', corrupt, { tool_name: 'shiny_new_tool', tool_input: {} })))
      .denied,
    'an unknown tool is not untracked',
  );

  // Locked past the busy timeout: another process holds the write lock.
  const locked = sandbox();
  t.after(locked.cleanup);
  await hook(locked, bash(locked, 'true'));
  const holder = openStore(locked.home, { create: false });
  holder.exec('BEGIN EXCLUSIVE');
  try {
    const r3 = await hook(
      { ...locked, env: { ...locked.env, LATCH_BUSY_TIMEOUT_MS: '200' } },
      bash(locked, 'echo x > y'),
    );
    assert.ok(r3.denied);
    assert.match(r3.reason, /locked/);
  } finally {
    holder.exec('ROLLBACK');
    holder.close();
  }
});

test('fail closed: a read-only store denies', {
  skip: process.getuid?.() === 0 ? 'root ignores file modes' : false,
}, async (t) => {
  const ro = sandbox();
  t.after(() => {
    chmodSync(ro.home, 0o700);
    ro.cleanup();
  });
  await hook(ro, bash(ro, 'true'));
  chmodSync(dbPath(ro.home), 0o400);
  chmodSync(ro.home, 0o500);
  assert.ok((await hook(ro, bash(ro, 'echo x > y'))).denied);
});

test('invalid payloads: PreToolUse denies, other events reply nothing', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  const garbage = await runCodexHook('{not json', 'PreToolUse', sb.env);
  assert.equal(JSON.parse(garbage.stdout!).hookSpecificOutput.permissionDecision, 'deny');
  assertValidReply('PreToolUse', garbage.stdout);
  const wrongType = await runCodexHook(JSON.stringify({ ...bash(sb, 'ls'), session_id: 42 }), 'PreToolUse', sb.env);
  assert.equal(JSON.parse(wrongType.stdout!).hookSpecificOutput.permissionDecision, 'deny');
  const stop = await runCodexHook('{not json', 'Stop', sb.env);
  assert.equal(stop.stdout, null);
  assert.equal(stop.exitCode, 0, 'a broken Stop payload must not block (exit 2 would keep the turn going)');
});

test('transcript unreadable after it was recorded: deny; read-only still allowed', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  // Replace the file by a directory: unreadable even for root.
  rmSync(sb.transcript);
  mkdirSync(sb.transcript);
  const r = await hook(sb, bash(sb, 'touch z'));
  assert.ok(r.denied);
  assert.match(r.reason, /cannot tell whether the context was compacted/);
  assert.ok((await hook(sb, bash(sb, 'ls'))).rewritten, 'ls runs, rewritten into the clean read shell');
});

test('transcript deleted after it was recorded: deny', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  rmSync(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch z'))).denied);
});

test('null transcript: denied by default, allowed with transcript = "optional"', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  assert.ok((await hook(sb, bash(sb, 'touch z', { transcript_path: null, session_id: 'N1' }))).denied);
  writeFileSync(join(sb.home, 'config.toml'), 'transcript = "optional"\n');
  assert.equal((await hook(sb, bash(sb, 'touch z', { transcript_path: null, session_id: 'N2' }))).stdout, null);
});

test('two compactions: two checkpoints, still latched', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  appendCompaction(sb.transcript, 'a');
  assert.ok((await hook(sb, bash(sb, 'touch 1'))).denied);
  appendModelTurn(sb.transcript);
  appendCompaction(sb.transcript, 'b');
  assert.ok((await hook(sb, bash(sb, 'touch 2'))).denied);
  const c = counts(sb);
  assert.equal(c.checkpoints, 2);
  assert.equal(c.compactions, 2);
  assert.equal(c.state, 'latched');
});

test('policies: continue records but denies nothing; pause holds', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  writeFileSync(join(sb.home, 'config.toml'), 'policy = "continue"\n');
  await hook(sb, bash(sb, 'true'));
  appendCompaction(sb.transcript);
  assert.equal((await hook(sb, bash(sb, 'touch after'))).stdout, null);
  const c = counts(sb);
  assert.equal(c.state, 'mutable');
  assert.equal(c.checkpoints, 1);

  const sp = sandbox();
  t.after(sp.cleanup);
  writeFileSync(join(sp.home, 'config.toml'), 'policy = "pause"\n');
  await hook(sp, bash(sp, 'true'));
  appendCompaction(sp.transcript);
  const r = await hook(sp, bash(sp, 'touch after'));
  assert.ok(r.denied);
  assert.match(r.reason, /latch resume/);
  assert.equal(counts(sp).state, 'paused');
});

test('the policy is fixed at first sight: a later config change does not release or loosen', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  writeFileSync(join(sb.home, 'config.toml'), 'policy = "continue"\n');
  appendCompaction(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch x'))).denied);
});

test('a project .latch.toml can tighten but not loosen the user policy', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  writeFileSync(join(sb.work, '.latch.toml'), 'policy = "continue"\n');
  await hook(sb, bash(sb, 'true'));
  appendCompaction(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch x'))).denied, 'project file cannot loosen fail_closed');
});

test('scope = "workspace": a latched session latches the other sessions of the workspace', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  writeFileSync(join(sb.home, 'config.toml'), 'scope = "workspace"\n');
  await hook(sb, bash(sb, 'true'));
  const other = join(sb.base, 'other.jsonl');
  writeFileSync(other, '');
  assert.equal((await hook(sb, bash(sb, 'touch o', { session_id: 'T', transcript_path: other }))).stdout, null);
  appendCompaction(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch s'))).denied);
  const r = await hook(sb, bash(sb, 'touch o2', { session_id: 'T', transcript_path: other }));
  assert.ok(r.denied);
  assert.match(r.reason, /workspace-scoped/);
});

test('a fork of a latched session is latched', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, bash(sb, 'true'));
  appendCompaction(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch a'))).denied);
  const forkT = join(sb.base, 'fork.jsonl');
  writeFileSync(
    forkT,
    JSON.stringify({ type: 'session_meta', payload: { id: 'F', forked_from_id: 'S', cli_version: '0.169.0' } }) + '\n',
  );
  await hook(sb, payload('session-start-fork', sb, { session_id: 'F', transcript_path: forkT }));
  const r = await hook(sb, bash(sb, 'touch f', { session_id: 'F', transcript_path: forkT }));
  assert.ok(r.denied);
});

test('an invalid config denies tracked tools with a clear reason (fail closed), untracked tools still run', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  writeFileSync(join(sb.home, 'config.toml'), 'policy = "sometimes"\n');
  const r = await hook(sb, bash(sb, 'echo x > x.txt'));
  assert.ok(r.denied);
  assert.match(r.reason, /configuration is invalid: .*policy/);
  assert.equal(
    (await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'view_image', tool_input: {} }))).stdout,
    null,
  );
  // A tool name Latch does not know is not a read-only one: it is denied with the same reason.
  assert.ok((await hook(sb, payload('pre-tool-use-bash', sb, { tool_name: 'shiny_new_tool', tool_input: {} }))).denied);
});

test('slow work past the hook deadline denies instead of letting Codex time out (and fail open)', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  for (let i = 0; i < 600; i++) writeFileSync(join(sb.work, `f${i}.txt`), `${i}\n`);
  // The first tracked call in a workspace takes a baseline observation: give it no time at all.
  const r = await runCodexHook(JSON.stringify(bash(sb, 'echo x > x.txt')), null, {
    ...sb.env,
    LATCH_HOOK_DEADLINE_MS: '1',
  });
  assertValidReply('PreToolUse', r.stdout);
  const reply = JSON.parse(r.stdout!);
  assert.equal(reply.hookSpecificOutput.permissionDecision, 'deny');
  assert.match(reply.hookSpecificOutput.permissionDecisionReason, /ran out of time/);
});

test('a transcript replaced by a file with a new compaction trips, even though its offset is smaller', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  for (let i = 0; i < 40; i++) appendModelTurn(sb.transcript); // the old file is longer than the new one
  assert.equal((await hook(sb, bash(sb, 'true'))).stdout, null);
  const fresh = join(sb.base, 'replacement.jsonl');
  writeFileSync(fresh, '');
  appendCompaction(fresh);
  rmSync(sb.transcript);
  renameSync(fresh, sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'touch x'))).denied);
  assert.equal(counts(sb).state, 'latched');
});

test('a read-only command closes without a scan; a change in its window is still timed into it by the next observation', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb));
  const id = 'call_ro';
  assert.equal((await hook(sb, bash(sb, 'cat README.md', { tool_use_id: id }))).stdout, null);
  await new Promise((r) => setTimeout(r, 30));
  writeFileSync(join(sb.work, 'sneaky.txt'), 'written while a "read-only" call ran\n');
  await new Promise((r) => setTimeout(r, 30));
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: id, tool_input: { command: 'cat README.md' } }));
  const db = openStore(sb.home, { create: false });
  try {
    const a = db.prepare('SELECT state, end_reason FROM attempts WHERE id = ?').get(`S/${id}`) as {
      state: string;
      end_reason: string;
    };
    assert.deepEqual(a, { state: 'closed', end_reason: 'PostToolUse (read-only command: no scan)' });
    assert.equal((db.prepare('SELECT COUNT(*) n FROM changes').get() as { n: number }).n, 0, 'no scan at that Close');
  } finally {
    db.close();
  }
  await hook(sb, payload('stop', sb));
  const db2 = openStore(sb.home, { create: false });
  try {
    const c = db2.prepare("SELECT attribution, attempt_id FROM changes WHERE path = 'sneaky.txt'").get() as {
      attribution: string;
      attempt_id: string;
    };
    assert.deepEqual(c, { attribution: 'attempt', attempt_id: `S/${id}` });
  } finally {
    db2.close();
  }
});

test('an unknown SessionStart source delivers the full brief with the reason (never dropped)', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb));
  await hook(sb, bash(sb, 'echo one > one.txt'));
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb));
  const r = await hook(sb, payload('session-start-compact', sb, { source: 'compact_v2' }));
  assert.equal(r.exitCode, 0);
  const ctx = r.parsed?.hookSpecificOutput?.additionalContext ?? '';
  assert.match(ctx, /SessionStart source "compact_v2" is not one Latch knows; the full task brief is delivered/);
  assert.match(ctx, /LATCH-BRIEF session=S version=1 page=1\//);
  assert.match(ctx, /authority .* revoked/);
  assert.match((r.parsed as { systemMessage?: string } | null)?.systemMessage ?? '', /compact_v2/);
});

test('an unknown tool name is tracked: a ledger attempt while mutable, a denial naming it while latched', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb));
  const call = (id: string) =>
    payload('pre-tool-use-bash', sb, { tool_name: 'shiny_new_tool', tool_input: { path: 'x.txt' }, tool_use_id: id });
  const r1 = await hook(sb, call('call_new_1'));
  assert.equal(r1.stdout, null, 'allowed while mutable');
  const db = openStore(sb.home, { create: false });
  try {
    const a = db.prepare("SELECT tool_name, state FROM attempts WHERE tool_use_id = 'call_new_1'").get() as
      | { tool_name: string; state: string }
      | undefined;
    assert.deepEqual({ ...a }, { tool_name: 'shiny_new_tool', state: 'started' }, 'a write-ahead Start was recorded');
  } finally {
    db.close();
  }
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb));
  const r2 = await hook(sb, call('call_new_2'));
  assert.ok(r2.denied);
  assert.match(r2.reason, /does not know the tool `shiny_new_tool`/);
  // Codex's own waiting and viewing tools change nothing: they still run.
  for (const name of ['collaborationwait_agent', 'view_image']) {
    const r = await hook(
      sb,
      payload('pre-tool-use-bash', sb, { tool_name: name, tool_input: {}, tool_use_id: `call_${name}` }),
    );
    assert.equal(r.denied, false, name);
  }
});

test('a payload field Latch does not know changes nothing: still denied while latched, allowed while mutable', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb, { future_field: { nested: [1, 2] } }));
  assert.equal(
    (
      await hook(sb, {
        ...bash(sb, 'echo one > one.txt'),
        future_field: 'x',
        tool_input: { command: 'echo one > one.txt', future_flag: true },
      })
    ).stdout,
    null,
  );
  await hook(sb, { ...payload('pre-compact-auto', sb), future_field: 1 });
  appendCompaction(sb.transcript);
  await hook(sb, { ...payload('post-compact-auto', sb), future_field: 1 });
  const r = await hook(sb, {
    ...bash(sb, 'echo two > two.txt'),
    future_field: 'x',
    tool_input: { command: 'echo two > two.txt', future_flag: true },
  });
  assert.ok(r.denied);
  assert.match(r.reason, /latched/);
});

test('a PostToolUse with no Start in a session the store knew (its PreToolUse never completed) latches, with a notice; a first PostToolUse of an unknown session and a checked call do not', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  const post = (id: string, command: string) =>
    hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: id, tool_input: { command } }));
  // Latch installed mid-call: the session's first hook is the PostToolUse. Nothing to hold against it.
  await post('call_first', 'echo a > a.txt');
  assert.equal(counts(sb).state, 'mutable');
  // A call Latch checked: its Start is on record.
  assert.equal((await hook(sb, bash(sb, 'echo b > b.txt', { tool_use_id: 'call_checked' }))).stdout, null);
  await post('call_checked', 'echo b > b.txt');
  assert.equal(counts(sb).state, 'mutable');
  // A call whose PreToolUse never completed (killed, timed out: the agent runs it anyway).
  const r = await post('call_unchecked', 'echo c > c.txt');
  assert.equal(counts(sb).state, 'latched');
  assert.match(JSON.stringify(r.parsed), /latched: a call ran without Latch's check \(/);
  const db = openStore(sb.home, { create: false });
  try {
    const row = db.prepare("SELECT state_reason FROM sessions WHERE session_id = 'S'").get() as {
      state_reason: string;
    };
    assert.match(row.state_reason, /^unchecked_call: /);
    const tr = db.prepare("SELECT event, evidence_json FROM transitions WHERE session_id = 'S'").all() as {
      event: string;
      evidence_json: string;
    }[];
    assert.equal(tr.length, 1);
    assert.equal(tr[0]!.event, 'inherit:latched');
    assert.equal(JSON.parse(tr[0]!.evidence_json).tool_use_id, 'call_unchecked');
    // The unchecked call is still recorded, untimed.
    const a = db.prepare("SELECT started_ns FROM attempts WHERE id = 'S/call_unchecked'").get() as {
      started_ns: string;
    };
    assert.equal(a.started_ns, '0');
  } finally {
    db.close();
  }
  // The next write is checked and denied; another unchecked call of the held session only tells.
  assert.equal((await hook(sb, bash(sb, 'echo d > d.txt', { tool_use_id: 'call_d' }))).denied, true);
  const again = await post('call_unchecked_2', 'echo e > e.txt');
  assert.match(JSON.stringify(again.parsed), /this held session ran without Latch's check/);
  assert.equal(counts(sb).state, 'latched');
});

test('an early denial (a command that touches Latch) of a session the store never saw is recorded, with the session', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  const r = await hook(sb, bash(sb, `rm -rf ${sb.home}/latch.db`, { tool_use_id: 'call_first' }));
  assert.equal(r.denied, true);
  assert.match(r.reason, /Latch’s own state or registration/);
  const db = openStore(sb.home, { create: false });
  try {
    const s = db.prepare("SELECT state FROM sessions WHERE session_id = 'S'").get() as { state: string } | undefined;
    assert.equal(s?.state, 'mutable', 'the session was not created');
    const d = db.prepare("SELECT tool_use_id, reasons_json FROM denials WHERE session_id = 'S'").all() as {
      tool_use_id: string;
      reasons_json: string;
    }[];
    assert.equal(d.length, 1);
    assert.equal(d[0]!.tool_use_id, 'call_first');
    assert.match(d[0]!.reasons_json, /touches_latch/);
  } finally {
    db.close();
  }
});

test('a hook run in process leaves no deadline behind (a later git call of the same process would fail at once)', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb));
  await hook(sb, bash(sb, 'echo a > a.txt', { tool_use_id: 'call_a' }));
  assert.equal(remainingMs(), undefined);
});
