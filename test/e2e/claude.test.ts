// Acceptance on the real pinned Claude Code (2.1.332, `claude -p`) over the project's loopback fake of
// the Messages API, hooks installed by `latch setup claude`: writes before an auto-compaction run;
// after it Bash, Write and an MCP write are denied (files unchanged) while `cat` runs; the latch holds
// across `--resume` and `--fork-session`; `latch verify --yes` gives authority back, and a fork taken
// after it inherits the verify (its copy of the boundary is the verified compaction) while a fork of
// the session compacted again starts latched; the brief reaches the model; the ledger attributes a
// Write and a Bash change; a crashing or missing Latch denies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { COMPACTING_INPUT_TOKENS, HOOK_CONTEXT_PREFIX } from '../../src/agents/claude/fake-model.js';
import { snapshotTree } from '../../src/tree/snapshot.js';
import {
  CLAUDE_VERSION,
  claudeCommand,
  firstRequestAfterCompaction,
  MCP_WRITE,
  setupClaudeEnv,
  type ClaudeEnv,
  type ClaudeRun,
  type ClaudeTurn,
} from '../helpers/claude.js';

const T = { timeout: 180_000 };
const BRIEF_BLOCK = '<<<LATCH-BRIEF';
const BRIEF_COMMAND = /`(latch brief --page) N`/;

const use = (id: string, name: string, input: unknown, inputTokens?: number): ClaudeTurn => ({
  content: [{ type: 'tool_use', id, name, input }],
  ...(inputTokens !== undefined ? { inputTokens } : {}),
});
const say = (text: string): ClaudeTurn => ({ content: [{ type: 'text', text }] });

function ok(run: ClaudeRun, what: string): void {
  assert.equal(
    run.code,
    0,
    `${what}: claude exited ${run.code}\n${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`,
  );
  assert.ok(run.result, `${what}: no JSON result: ${run.stdout.slice(-2000)}`);
  assert.equal(run.unused, 0, `${what}: the run stopped before the model's script ended`);
}

/** The tool result the model got for `id`: a Latch denial (is_error, names Latch and what to run). */
function assertDenied(env: ClaudeEnv, id: string, checkpoint?: string): string {
  const r = env.toolResult(id);
  assert.ok(r, `the model got a result for ${id}`);
  assert.equal(r!.isError, true, `${id} was denied: ${r!.text}`);
  assert.match(r!.text, /PreToolUse:\S+ hook error/, r!.text);
  assert.match(r!.text, /Latch/, r!.text);
  assert.match(r!.text, /latch verify/, r!.text);
  if (checkpoint)
    assert.ok(r!.text.includes(checkpoint), `${id}: the denial names checkpoint ${checkpoint}: ${r!.text}`);
  return r!.text;
}

function assertRan(env: ClaudeEnv, id: string): string {
  const r = env.toolResult(id);
  assert.ok(r, `the model got a result for ${id}`);
  assert.equal(r!.isError, false, `${id} ran: ${r!.text}`);
  return r!.text;
}

interface Session {
  session_id: string;
  state: string;
  may_mutate: boolean;
  reason: string | null;
  parent_session_id: string | null;
  checkpoints: {
    id: string;
    compaction_seq: number;
    trigger: string | null;
    observed_via: string[];
    tree: { sha256: string; files: number };
    inherited_from?: string[];
  }[];
}

/** The uuids of a transcript's compact_boundary lines, in order. */
function boundaryIds(id: string): string[] {
  return env
    .transcript(id)
    .filter((l) => l.type === 'system' && l.subtype === 'compact_boundary')
    .map((l) => String(l.uuid));
}

function session(env: ClaudeEnv, id: string): Session {
  const s = env.statusJson().sessions.find((x) => x.session_id === id);
  assert.ok(s, `latch status lists session ${id}`);
  return s as unknown as Session;
}

// ---- the shared session: writes, an auto-compaction, denials, a read, then resume / fork / verify ----

let env: ClaudeEnv;
let first: ClaudeRun;
let sid: string;

before(async () => {
  env = await setupClaudeEnv();
  const b = join(env.work, 'b.txt');
  first = await env.claude('Update a.txt and write b.txt, then finish the files.', {
    mcp: true,
    turns: [
      use('toolu_pre_bash', 'Bash', { command: 'echo before > a.txt', description: 'write a.txt' }, 200),
      // The tool runs, then Claude Code auto-compacts before it sends the result back.
      use('toolu_pre_write', 'Write', { file_path: b, content: 'written\n' }, COMPACTING_INPUT_TOKENS),
      use('toolu_post_bash', 'Bash', { command: 'echo after >> a.txt; touch bash.txt', description: 'append' }),
      use('toolu_post_write', 'Write', { file_path: join(env.work, 'write.txt'), content: 'after\n' }),
      use('toolu_post_mcp', MCP_WRITE, { path: 'mcp.txt', content: 'after\n' }),
      use('toolu_post_cat', 'Bash', { command: 'cat a.txt b.txt', description: 'read' }),
      // Inside the sandbox's own pid namespace, pid 1 is bubblewrap.
      use('toolu_post_pid1', 'Bash', { command: 'cat /proc/1/cmdline', description: 'read' }),
      // The page command the delivered brief names (a Latch read: the hook runs it itself).
      (req) => {
        const m = BRIEF_COMMAND.exec([...req.systemTexts, ...req.messageTexts].join('\n'));
        return m ? use('toolu_post_page', 'Bash', { command: `${m[1]} 1` }) : say('no brief command');
      },
      say('blocked'),
    ],
  });
  ok(first, 'the first run');
  sid = first.sessionId!;
}, T);

after(async () => {
  await env?.cleanup();
});

test(`the pinned binary is Claude Code ${CLAUDE_VERSION}; hooks installed`, () => {
  const { cmd, args } = claudeCommand();
  const v = execFileSync(cmd, [...args, '--version'], { encoding: 'utf8' });
  assert.match(v, new RegExp(`^${CLAUDE_VERSION.replace(/\./g, '\\.')} \\(Claude Code\\)`));
  const settings = env.readSettings();
  for (const event of ['PreToolUse', 'PostToolUse', 'SessionStart', 'PreCompact', 'PostCompact', 'Stop'])
    assert.ok(JSON.stringify(settings.hooks?.[event] ?? []).includes('hook claude'), `${event} handler installed`);
});

test('before the compaction, Bash and Write run', () => {
  assertRan(env, 'toolu_pre_bash');
  assert.match(assertRan(env, 'toolu_pre_write'), /File created successfully/);
  assert.equal(env.file('b.txt'), 'written\n');
});

test('an auto-compaction happened and latched the session', () => {
  assert.ok(
    first.requests.some((r) => r.kind === 'compact'),
    'Claude Code sent the summary request',
  );
  const lines = env.transcript(sid);
  assert.ok(
    lines.some((l) => l.type === 'system' && l.subtype === 'compact_boundary'),
    'the transcript has a compact_boundary',
  );
  const s = session(env, sid);
  assert.equal(s.state, 'latched');
  assert.equal(s.may_mutate, false);
  assert.equal(s.checkpoints.length, 1, JSON.stringify(s.checkpoints));
  const cp = s.checkpoints[0]!;
  assert.equal(cp.trigger, 'auto');
  for (const via of ['pre_compact', 'session_start', 'post_compact'])
    assert.ok(cp.observed_via.includes(via), `observed via ${via}: ${cp.observed_via}`);
});

test('after the compaction Bash, Write and the MCP write are denied; the workspace is unchanged', () => {
  const cp = session(env, sid).checkpoints[0]!;
  assertDenied(env, 'toolu_post_bash', cp.id);
  assertDenied(env, 'toolu_post_write', cp.id);
  assertDenied(env, 'toolu_post_mcp', cp.id);
  assert.equal(env.file('a.txt'), 'before\n');
  assert.equal(env.file('b.txt'), 'written\n');
  for (const f of ['bash.txt', 'write.txt', 'mcp.txt']) assert.equal(env.file(f), null, `${f} was not written`);
  assert.deepEqual(env.mcpCallsMade(), [], 'the denied MCP call never reached the server');
  const denied = (first.result!.permission_denials ?? []).map((d) => d.tool_use_id).sort();
  assert.deepEqual(denied, ['toolu_post_bash', 'toolu_post_mcp', 'toolu_post_write']);
  const now = snapshotTree(env.work);
  assert.equal(now.sha256, cp.tree.sha256, 'the tree digest equals the checkpoint');
});

test('`cat` runs while latched: Latch ran it in its read-only sandbox, the call replays its output', () => {
  assert.equal(assertRan(env, 'toolu_post_cat').trim(), 'before\nwritten');
  // The hook's reply, as Claude Code recorded it: an allow whose updatedInput is the command it ran.
  const reply = env
    .transcript(sid)
    .find(
      (l) =>
        l.type === 'attachment' &&
        l.attachment?.toolUseID === 'toolu_post_cat' &&
        l.attachment?.hookEvent === 'PreToolUse' &&
        String(l.attachment?.stdout ?? '').includes('updatedInput'),
    );
  assert.ok(reply, 'the PreToolUse reply for the read is in the transcript');
  const out = JSON.parse(reply.attachment.stdout).hookSpecificOutput;
  assert.equal(out.permissionDecision, 'allow');
  assert.equal(out.updatedInput.description, 'read', 'the full tool_input is kept');
  // The agent's own command first, then the replay of what Latch ran.
  assert.match(out.updatedInput.command, /^# cat a\.txt b\.txt\n# \(held session: Latch ran this read/);
  const reads = env.statusJson().reads;
  console.log(`reads.guard: ${reads.guard} (${reads.detail})`);
  const pid1 = assertRan(env, 'toolu_post_pid1');
  if (process.platform === 'linux' && existsSync('/usr/bin/bwrap')) {
    assert.equal(reads.guard, 'sandbox', `held reads ran sandboxed: ${reads.detail}`);
    assert.match(pid1, /bwrap/, `the read ran in the sandbox's pid namespace: ${pid1}`);
  }
});

test('the brief reaches the model after the compaction', () => {
  const req = firstRequestAfterCompaction(first.requests);
  assert.ok(req, 'a main request followed the compaction');
  const text = [...req!.systemTexts, ...req!.messageTexts].join('\n');
  assert.ok(text.includes(HOOK_CONTEXT_PREFIX), 'the SessionStart(compact) additionalContext reached the model');
  assert.ok(text.includes(BRIEF_BLOCK), 'it carries a LATCH-BRIEF page');
  assert.ok(text.includes(sid), 'the brief names the session');
});

test('the agent reads the brief page while latched; Latch records the complete read', () => {
  const out = assertRan(env, 'toolu_post_page');
  assert.ok(out.includes(`${BRIEF_BLOCK} session=${sid} version=1 page=1/1`), out);
  assert.ok(out.includes('<<<END-LATCH-BRIEF page=1/1'), out);
  const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
  try {
    const rows = db
      .prepare('SELECT call_id, page, ok, reasons_json FROM brief_reads WHERE session_id = ?')
      .all(sid) as { call_id: string; page: number; ok: number; reasons_json: string }[];
    assert.deepEqual(
      rows.map((r) => [r.call_id, r.page, r.ok]),
      [['toolu_post_page', 1, 1]],
      JSON.stringify(rows),
    );
  } finally {
    db.close();
  }
});

test('the ledger attributes the Write and the Bash change', () => {
  const log = env.latch(['log', '--json']);
  assert.equal(log.code, 0, log.stderr);
  type Entry = {
    kind: string;
    tool?: string;
    summary?: string;
    state?: string;
    files?: { path: string; change: string; attribution: string }[];
  };
  const attempts = (JSON.parse(log.stdout) as { entries: Entry[] }).entries.filter((e) => e.kind === 'attempt');
  const bash = attempts.find((a) => a.tool === 'Bash' && (a.summary ?? '').includes('echo before > a.txt'));
  assert.ok(bash, JSON.stringify(attempts));
  assert.equal(bash!.state, 'closed');
  assert.deepEqual(
    bash!.files!.map((f) => [f.change, f.path, f.attribution]),
    [['modified', 'a.txt', 'attempt']],
  );
  const write = attempts.find((a) => a.tool === 'Write');
  assert.ok(write, JSON.stringify(attempts));
  assert.match(write!.summary ?? '', /b\.txt/);
  assert.equal(write!.state, 'closed');
  assert.deepEqual(
    write!.files!.map((f) => [f.change, f.path, f.attribution]),
    [['added', 'b.txt', 'attempt']],
  );
  const blame = env.latch(['blame', 'b.txt', '--json']);
  assert.equal(blame.code, 0, blame.stderr);
  const changes = (JSON.parse(blame.stdout) as { changes: { attribution: string; tool: string }[] }).changes;
  assert.deepEqual(
    changes.map((c) => [c.attribution, c.tool]),
    [['attempt', 'Write']],
  );
  const denied = attempts.filter((a) => /after|bash\.txt|write\.txt|mcp/.test(a.summary ?? ''));
  assert.deepEqual(denied, [], 'denied calls start no attempt');
});

test('a new `claude --resume` process is still latched', async () => {
  const r = await env.claude('continue', {
    resume: sid,
    turns: [use('toolu_resume_bash', 'Bash', { command: 'echo resumed > resumed.txt' }), say('still blocked')],
  });
  ok(r, 'the resume');
  assert.equal(r.sessionId, sid, '--resume keeps the session id');
  assertDenied(env, 'toolu_resume_bash');
  assert.equal(env.file('resumed.txt'), null);
  assert.equal(session(env, sid).state, 'latched');
  const firstMain = r.requests.find((q) => q.kind === 'main');
  const text = [...firstMain!.systemTexts, ...firstMain!.messageTexts].join('\n');
  assert.ok(text.includes(BRIEF_BLOCK), 'SessionStart(resume) re-delivered the brief');
  const resume = (session(env, sid) as Session & { last_resume: { decision: string } | null }).last_resume;
  assert.equal(resume?.decision, 'full', `a documented full recovery on every resume: ${JSON.stringify(resume)}`);
});

test('`claude --continue` is still latched', async () => {
  const r = await env.claude('continue', {
    continue: true,
    turns: [
      use('toolu_continue_edit', 'Edit', {
        file_path: join(env.work, 'a.txt'),
        old_string: 'before',
        new_string: 'edited',
      }),
      say('still blocked'),
    ],
  });
  ok(r, 'the continue');
  assert.equal(r.sessionId, sid, '--continue keeps the session id');
  assertDenied(env, 'toolu_continue_edit');
  assert.equal(env.file('a.txt'), 'before\n');
  assert.equal(session(env, sid).state, 'latched');
});

test('a `--fork-session` of the compacted session starts latched', async () => {
  const r = await env.claude('fork and write', {
    resume: sid,
    fork: true,
    turns: [use('toolu_fork_write', 'Write', { file_path: join(env.work, 'fork.txt'), content: 'fork\n' }), say('ok')],
  });
  ok(r, 'the fork');
  const fork = r.sessionId!;
  assert.notEqual(fork, sid, 'a fork has its own session id');
  assertDenied(env, 'toolu_fork_write');
  assert.equal(env.file('fork.txt'), null);
  const s = session(env, fork);
  assert.equal(s.state, 'latched');
  assert.equal(s.may_mutate, false);
  // Its transcript opens with a copy of the parent's boundary (same uuid): the parent's compaction,
  // which the parent holds latched.
  assert.deepEqual(boundaryIds(fork), boundaryIds(sid));
  assert.match(s.reason ?? '', new RegExp(`forked from session ${sid}, which is latched`));
  assert.equal(s.parent_session_id, sid);
});

test('`latch verify --yes` restores authority; then a write works', async () => {
  const noConfirm = env.latch(['verify']);
  assert.equal(noConfirm.code, 2, `no TTY and no --yes: no confirmation\n${noConfirm.stderr}`);
  const v = env.latch(['verify', '--yes', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).restored, true, v.stdout);
  assert.equal(session(env, sid).state, 'mutable');
  const r = await env.claude('go on', {
    resume: sid,
    turns: [
      use('toolu_verified_bash', 'Bash', { command: 'echo verified > verified.txt' }),
      use('toolu_verified_write', 'Write', { file_path: join(env.work, 'verified2.txt'), content: 'v\n' }),
      say('done'),
    ],
  });
  ok(r, 'the run after verify');
  assertRan(env, 'toolu_verified_bash');
  assertRan(env, 'toolu_verified_write');
  assert.equal(env.file('verified.txt'), 'verified\n');
  assert.equal(env.file('verified2.txt'), 'v\n');
  assert.equal(session(env, sid).state, 'mutable');
});

test('a `--fork-session` of the verified session inherits the verify: its Write runs, it is mutable', async () => {
  const r = await env.claude('fork after the verify and write', {
    resume: sid,
    fork: true,
    turns: [
      use('toolu_vfork_write', 'Write', { file_path: join(env.work, 'vfork.txt'), content: 'vfork\n' }),
      use('toolu_vfork_bash', 'Bash', { command: 'echo vfork >> vfork.txt' }),
      say('done'),
    ],
  });
  ok(r, 'the fork after verify');
  const fork = r.sessionId!;
  assert.notEqual(fork, sid, 'a fork has its own session id');
  assertRan(env, 'toolu_vfork_write');
  assertRan(env, 'toolu_vfork_bash');
  assert.equal(env.file('vfork.txt'), 'vfork\nvfork\n');
  assert.deepEqual(boundaryIds(fork), boundaryIds(sid), 'the fork copied the verified boundary');
  const s = session(env, fork);
  assert.equal(s.state, 'mutable');
  assert.equal(s.may_mutate, true);
  // Its copy is recorded (checkpointed) as the compaction it inherited from the sessions that hold it
  // verified: the parent and the fork taken while it was latched (verified with it).
  assert.equal(s.checkpoints.length, 1, JSON.stringify(s.checkpoints));
  assert.ok(s.checkpoints[0]!.inherited_from?.includes(sid), JSON.stringify(s.checkpoints[0]));
  assert.deepEqual(s.checkpoints[0]!.observed_via, ['transcript']);
  // The parent is untouched.
  assert.equal(session(env, sid).state, 'mutable');
});

test('the parent compacts again: it latches, and a fork of it (a new boundary) starts latched', async () => {
  const r = await env.claude('more work', {
    resume: sid,
    turns: [
      use('toolu_again_bash', 'Bash', { command: 'echo again > again.txt' }, COMPACTING_INPUT_TOKENS),
      use('toolu_again_write', 'Write', { file_path: join(env.work, 'again2.txt'), content: 'x\n' }),
      say('blocked'),
    ],
  });
  ok(r, 'the second compaction');
  assertRan(env, 'toolu_again_bash');
  assertDenied(env, 'toolu_again_write');
  assert.equal(session(env, sid).state, 'latched');
  const ids = boundaryIds(sid);
  assert.equal(ids.length, 2, 'a second compact_boundary, with its own uuid');
  assert.notEqual(ids[1], ids[0]);
  const f = await env.claude('fork and write', {
    resume: sid,
    fork: true,
    turns: [
      use('toolu_again_fork_write', 'Write', { file_path: join(env.work, 'again-fork.txt'), content: 'x\n' }),
      say('ok'),
    ],
  });
  ok(f, 'the fork of the compacted-again session');
  const fork = f.sessionId!;
  assertDenied(env, 'toolu_again_fork_write');
  assert.equal(env.file('again-fork.txt'), null);
  assert.deepEqual(boundaryIds(fork), [ids[1]], 'the fork copies the latest boundary only');
  const s = session(env, fork);
  assert.equal(s.state, 'latched');
  assert.match(s.reason ?? '', new RegExp(`forked from session ${sid}, which is latched`));
});

// ---- fail closed: the installed PreToolUse handler denies when Latch is missing, crashes or hangs ----

test('a missing, crashing or hung Latch denies the write (the fail-closed handler)', T, async (t) => {
  const e = await setupClaudeEnv();
  t.after(() => e.cleanup());
  const installed = e.readSettings();
  const handler = installed.hooks.PreToolUse[0].hooks[0] as { command: string; timeout: number; onFailure?: string };
  const latchPath = /'([^']*latch\.cjs)'/.exec(handler.command)?.[1];
  assert.ok(latchPath, `the PreToolUse command names latch.cjs: ${handler.command}`);
  const crash = join(e.base, 'crash.cjs');
  // Half a JSON answer (an allow, even), then exit 1: Claude Code alone would run the tool.
  writeFileSync(
    crash,
    `process.stdout.write('{"hookSpecificOutput":{"permissionDecision":"allow"');process.exit(1);\n`,
  );
  const hang = join(e.base, 'hang.cjs');
  // Claude Code 2.1.332 kills a timed-out hook's process but waits until its stdout closes: the hang is short.
  writeFileSync(hang, 'setTimeout(() => {}, 4_000);\n');
  const wrapper = /could not check this call/;
  const cases: {
    name: string;
    entry?: string;
    node?: string;
    /** Edits the PreToolUse handler after the paths are replaced. */
    edit?: (h: typeof handler) => void;
    expect: RegExp;
  }[] = [
    { name: 'missing entry', entry: join(e.base, 'gone', 'latch.cjs'), expect: wrapper },
    { name: 'crashing entry', entry: crash, expect: wrapper },
    { name: 'missing node', node: join(e.base, 'gone', 'node'), expect: wrapper },
    // The wrapper alone, without the handler's `onFailure: "block"`.
    { name: 'crashing entry, no onFailure', entry: crash, edit: (h) => delete h.onFailure, expect: wrapper },
    // No wrapper can catch a timeout: the handler's `onFailure: "block"` does.
    { name: 'hung entry', entry: hang, edit: (h) => (h.timeout = 1), expect: /timed out/ },
  ];
  for (const [i, c] of cases.entries()) {
    let text = JSON.stringify(installed);
    if (c.entry) text = text.split(latchPath!).join(c.entry);
    if (c.node) text = text.split(`'${process.execPath}'`).join(`'${c.node}'`);
    const settings = JSON.parse(text);
    c.edit?.(settings.hooks.PreToolUse[0].hooks[0]);
    assert.notDeepEqual(settings, installed);
    e.writeSettings(settings);
    const file = `fc${i}.txt`;
    const r = await e.claude('write', {
      turns: [
        use(`toolu_fc_write_${i}`, 'Write', { file_path: join(e.work, file), content: 'x\n' }),
        use(`toolu_fc_bash_${i}`, 'Bash', { command: `echo x > bash-${file}` }),
        say('done'),
      ],
    });
    ok(r, c.name);
    for (const id of [`toolu_fc_write_${i}`, `toolu_fc_bash_${i}`]) {
      const res = e.toolResult(id);
      assert.ok(res, `${c.name}: a result for ${id}`);
      assert.equal(res!.isError, true, `${c.name}: ${id} denied: ${res!.text}`);
      assert.match(res!.text, c.expect, `${c.name}: ${res!.text}`);
    }
    assert.equal(e.file(file), null, `${c.name}: Write did not run`);
    assert.equal(e.file(`bash-${file}`), null, `${c.name}: Bash did not run`);
  }
});
