// More acceptance on the real pinned Claude Code (2.1.332, `claude -p`) over the loopback fake of the
// Messages API, hooks installed by `latch setup claude` (the companion of claude.test.ts):
// - sub-agents: while the session may mutate, a sub-agent's Write runs and the ledger attributes it to
//   the sub-agent (its agent id; a foreground sub-agent's too: the Agent call around it is a container,
//   not a competing writer); once latched, the model's Agent and Task calls are denied and no sub-agent runs;
// - `latch exec` runs a command while the workspace's Claude session may mutate, refuses it (73) while
//   the session is latched or paused, and runs it again after `latch verify`;
// - the policies, set per project in the user's config.toml as a user would: `continue` records the
//   compaction and blocks nothing; `pause` blocks writes until `latch resume` (which a fail_closed
//   latch refuses).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPACTING_INPUT_TOKENS } from '../../src/agents/claude/fake-model.js';
import { snapshotTree } from '../../src/tree/snapshot.js';
import {
  firstRequestAfterCompaction,
  setupClaudeEnv,
  type ClaudeEnv,
  type ClaudeRequest,
  type ClaudeRun,
  type ClaudeTurn,
} from '../helpers/claude.js';
import {
  assertDenied,
  assertRan,
  attemptsIn,
  denialsIn,
  filesOf,
  firstMessageText,
  logEntries,
  ok,
  say,
  sessionOf,
  subagentIds,
  use,
} from '../helpers/claude-script.js';
import { awaitResident, residentTrace } from '../helpers/resident.js';

const T = { timeout: 240_000 };
const BRIEF_BLOCK = '<<<LATCH-BRIEF';
const REVOKED = 'mutation authority for this session is revoked';

/**
 * The next turn of a script, chosen from the request alone (sub-agent requests interleave with the
 * main agent's in arrival order): the first turn whose tool call has no result in the request yet, or
 * the first turn without a tool call; undefined when every call of the script has its result.
 */
function nextTurn(script: ClaudeTurn[], req: ClaudeRequest): ClaudeTurn | undefined {
  const answered = new Set(req.toolResults.map((r) => r.toolUseId));
  return script.find((turn) => {
    const call = turn.content?.find((b) => b.type === 'tool_use');
    return call?.type !== 'tool_use' || call.id === undefined || !answered.has(call.id);
  });
}

/** Routes a request to the sub-agent whose marker its first message carries, else to `main`. */
function routed(main: ClaudeTurn[], subs: Record<string, ClaudeTurn[]>): (req: ClaudeRequest) => ClaudeTurn {
  return (req) => {
    const first = firstMessageText(req);
    const marker = Object.keys(subs).find((m) => first.includes(m));
    return nextTurn(marker ? subs[marker]! : main, req) ?? say('done');
  };
}

const isSubagentRequest = (marker: string) => (r: ClaudeRequest) =>
  r.kind === 'main' && firstMessageText(r).includes(marker);

/** `latch exec -- node -e …` that writes `file` in the workspace and exits with `code`. */
function execWriting(env: ClaudeEnv, file: string, code = 0): { code: number; stdout: string; stderr: string } {
  return env.latch([
    'exec',
    '--',
    process.execPath,
    '-e',
    `require('fs').writeFileSync(${JSON.stringify(file)}, 'ran\\n'); process.exit(${code})`,
  ]);
}

/** The user's $LATCH_HOME/config.toml: fail_closed in general, `policy` for this workspace only. */
function setProjectPolicy(env: ClaudeEnv, policy: string): void {
  const ws = realpathSync(env.work);
  mkdirSync(env.latchHome, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(env.latchHome, 'config.toml'),
    `policy = "fail_closed"\n\n[projects.${JSON.stringify(ws)}]\npolicy = "${policy}"\n`,
  );
}

function compacted(env: ClaudeEnv, run: ClaudeRun, sid: string): void {
  assert.ok(
    run.requests.some((r) => r.kind === 'compact'),
    'Claude Code sent the summary request',
  );
  assert.ok(
    env.transcript(sid).some((l) => l.type === 'system' && l.subtype === 'compact_boundary'),
    'the transcript has a compact_boundary',
  );
}

function textAfterCompaction(run: ClaudeRun): string {
  const req = firstRequestAfterCompaction(run.requests);
  assert.ok(req, 'a main request followed the compaction');
  return [...req!.systemTexts, ...req!.messageTexts].join('\n');
}

const deniedIds = (run: ClaudeRun) => (run.result?.permission_denials ?? []).map((d) => d.tool_use_id).sort();

/** Writes a.txt before, compacts on the Write of b.txt, then tries a Bash write and a Write. */
function policyTurns(env: ClaudeEnv, last: string): ClaudeTurn[] {
  return [
    use('toolu_pre_bash', 'Bash', { command: 'echo before > a.txt', description: 'write a.txt' }, 200),
    use('toolu_pre_write', 'Write', { file_path: join(env.work, 'b.txt'), content: 'b\n' }, COMPACTING_INPUT_TOKENS),
    use('toolu_post_bash', 'Bash', { command: 'echo after >> a.txt; touch bash.txt', description: 'append' }),
    use('toolu_post_write', 'Write', { file_path: join(env.work, 'after.txt'), content: 'after\n' }),
    say(last),
  ];
}

// The three sessions are independent (each its own workspace, fake model, CLAUDE_CONFIG_DIR and
// LATCH_HOME): they run concurrently.
describe('Claude Code: sub-agents, latch exec, policies', { concurrency: true }, () => {
  // ---- sub-agents and `latch exec` under the default policy (fail_closed) ----

  test('sub-agents and `latch exec` with a Claude Code session (fail_closed)', T, async (t) => {
    const env = await setupClaudeEnv();
    t.after(() => env.cleanup());
    const SUB_FG = 'SUBAGENT-FOREGROUND-7f3c';
    const SUB_BG = 'SUBAGENT-BACKGROUND-2b61';
    const SUB2 = 'SUBAGENT-LATCHED-91ad';
    const agentCall = (id: string, marker: string, file: string, background: boolean) =>
      use(id, 'Agent', {
        description: `Write ${file}`,
        prompt: `${marker}: write ${file} with the word sub.`,
        subagent_type: 'general-purpose',
        run_in_background: background,
      });
    const subScript = (id: string, file: string) => [
      use(id, 'Write', { file_path: join(env.work, file), content: 'sub\n' }),
      say('sub-agent done'),
    ];

    // The main agent runs a sub-agent in the foreground (it writes fg.txt), then one in the background
    // (the default; it writes sub.txt). So that the sub-agent's Write has run when the ledger is read,
    // the main agent keeps reading README.md (Read starts no attempt) until the fake has seen that
    // Write's result. (The main agent's Stop no longer abandons a sub-agent's open calls:
    // test/unit/ledger-subagents.test.ts.)
    let bgWritten = false;
    let polls = 0;
    const mainScript = [
      agentCall('toolu_agent_fg', SUB_FG, 'fg.txt', false),
      agentCall('toolu_agent_bg', SUB_BG, 'sub.txt', true),
    ];
    const subs = { [SUB_FG]: subScript('toolu_fg_write', 'fg.txt'), [SUB_BG]: subScript('toolu_sub_write', 'sub.txt') };
    const route = routed([], subs);
    const turn1 = (req: ClaudeRequest): ClaudeTurn => {
      if (req.toolResults.some((r) => r.toolUseId === 'toolu_sub_write')) bgWritten = true;
      if (Object.keys(subs).some((m) => firstMessageText(req).includes(m))) return route(req);
      const step = nextTurn(mainScript, req);
      if (step) return step;
      if (!bgWritten && polls < 100)
        return use(`toolu_poll_${++polls}`, 'Read', { file_path: join(env.work, 'README.md') });
      return say('main done');
    };
    const first = await env.claude('Have two sub-agents write fg.txt and sub.txt.', { turns: Array(200).fill(turn1) });
    const who = (r: ClaudeRequest) =>
      Object.keys(subs)
        .find((m) => firstMessageText(r).includes(m))
        ?.split('-')[1];
    console.log(
      `run 1: ${first.ms} ms, ${polls} polls; requests ${first.requests.map((r) => `${r.kind}${who(r) ? `(${who(r)})` : ''}`).join(' ')}`,
    );
    assert.equal(
      first.code,
      0,
      `claude exited ${first.code}\n${first.stderr.slice(-2000)}\n${first.stdout.slice(-2000)}`,
    );
    assert.ok(first.result, first.stdout.slice(-2000));
    assert.ok(bgWritten, `the background sub-agent's Write result reached the model (${polls} polls)`);
    const sid = first.sessionId!;
    const writeOf = (file: string) => {
      const attempts = attemptsIn(logEntries(env)).filter((a) => a.tool === 'Write' && a.summary?.endsWith(`/${file}`));
      assert.equal(attempts.length, 1, JSON.stringify(attempts));
      return attempts[0]!;
    };

    await t.test('while mutable, sub-agents run; a sub-agent’s Write is attributed to it in the ledger', () => {
      for (const id of ['toolu_agent_fg', 'toolu_agent_bg']) assertRan(env, id);
      for (const id of ['toolu_fg_write', 'toolu_sub_write'])
        assert.match(assertRan(env, id), /File created successfully/);
      assert.equal(env.file('fg.txt'), 'sub\n');
      assert.equal(env.file('sub.txt'), 'sub\n');
      assert.ok(first.requests.some(isSubagentRequest(SUB_FG)), 'the foreground sub-agent asked the model');
      assert.ok(first.requests.some(isSubagentRequest(SUB_BG)), 'the background sub-agent asked the model');
      assert.deepEqual(deniedIds(first), []);
      assert.equal(sessionOf(env, sid).state, 'mutable');

      const attempts = attemptsIn(logEntries(env));
      const agents = attempts.filter((a) => a.tool === 'Agent');
      assert.deepEqual(
        agents.map((a) => [a.session_id, a.agent_id, a.state, a.summary]),
        [
          [sid, null, 'closed', 'Agent: Write fg.txt'],
          [sid, null, 'closed', 'Agent: Write sub.txt'],
        ],
        'the Agent calls are the main agent’s',
      );
      const fg = writeOf('fg.txt');
      const w = writeOf('sub.txt');
      const ids = subagentIds(env, sid);
      for (const a of [fg, w]) {
        assert.equal(a.session_id, sid, 'a sub-agent’s call belongs to the root session');
        assert.ok(a.agent_id && ids.includes(a.agent_id), `${a.agent_id} names a sub-agent transcript: ${ids}`);
        assert.equal(a.state, 'closed', JSON.stringify(a));
      }
      assert.notEqual(fg.agent_id, w.agent_id, 'each sub-agent has its own lane');
      assert.deepEqual(filesOf(w), [['added', 'sub.txt', 'attempt']]);
      assert.deepEqual(filesOf(agents[1]!), [], 'the file is the Write’s, not the Agent call’s');

      const blame = env.latch(['blame', 'sub.txt', '--json']);
      assert.equal(blame.code, 0, blame.stderr);
      const changes = (
        JSON.parse(blame.stdout) as {
          changes: { attribution: string; tool: string; attempt_id: string; session_id: string }[];
        }
      ).changes;
      assert.deepEqual(
        changes.map((c) => [c.attribution, c.tool, c.attempt_id, c.session_id]),
        [['attempt', 'Write', w.attempt_id, sid]],
      );
    });

    await t.test(
      'a foreground sub-agent’s Write is attributed to it alone (the Agent call around it is a container)',
      () => {
        const fg = writeOf('fg.txt');
        const blame = env.latch(['blame', 'fg.txt', '--json']);
        assert.equal(blame.code, 0, blame.stderr);
        const changes = (JSON.parse(blame.stdout) as { changes: { attribution: string; attempt_id: string | null }[] })
          .changes;
        assert.deepEqual(
          changes.map((c) => [c.attribution, c.attempt_id]),
          [['attempt', fg.attempt_id]],
        );
      },
    );

    await t.test('`latch exec` runs the command while the session may mutate (its exit code passes)', () => {
      const r = execWriting(env, 'exec-mutable.txt', 7);
      assert.equal(r.code, 7, r.stderr);
      assert.equal(env.file('exec-mutable.txt'), 'ran\n');
    });

    // The same session resumed: a tool call that compacts, then an Agent and a Task call while latched.
    const taskCall = use('toolu_task_latched', 'Task', {
      description: 'Write sub3.txt',
      prompt: `${SUB2}: write sub3.txt with the word sub.`,
      subagent_type: 'general-purpose',
    });
    const route2 = routed([agentCall('toolu_agent_latched', SUB2, 'sub2.txt', true), taskCall, say('blocked')], {
      [SUB2]: subScript('toolu_sub2_write', 'sub2.txt'),
    });
    const second = await env.claude('Go on; have another sub-agent write sub2.txt.', {
      resume: sid,
      turns: [
        use('toolu_fc_pre', 'Bash', { command: 'echo pre > pre.txt', description: 'write' }, COMPACTING_INPUT_TOKENS),
        route2,
        route2,
        route2,
      ],
    });
    console.log(`run 2: ${second.ms} ms; requests ${second.requests.map((r) => r.kind).join(' ')}`);
    ok(second, 'the run that compacts');
    assert.equal(second.sessionId, sid);

    await t.test('once latched, Agent and Task calls are denied and no sub-agent runs', () => {
      compacted(env, second, sid);
      assertRan(env, 'toolu_fc_pre');
      const s = sessionOf(env, sid);
      assert.equal(s.state, 'latched');
      assert.equal(s.checkpoints.length, 1, JSON.stringify(s.checkpoints));
      const cp = s.checkpoints[0]!;
      for (const id of ['toolu_agent_latched', 'toolu_task_latched']) {
        const text = assertDenied(env, id, { checkpoint: cp.id });
        // Claude Code runs `Task` as its Agent tool: the hook sees (and names) Agent.
        assert.match(text, /^PreToolUse:Agent hook error: Latch blocked this call/, text);
        assert.match(text, /This session is latched: its context was compacted/, text);
      }
      assert.deepEqual(deniedIds(second), ['toolu_agent_latched', 'toolu_task_latched']);
      assert.ok(!second.requests.some(isSubagentRequest(SUB2)), 'no sub-agent request reached the model');
      assert.equal(env.toolResult('toolu_sub2_write'), undefined);
      assert.equal(env.file('sub2.txt'), null);
      assert.equal(env.file('sub3.txt'), null);
      assert.equal(snapshotTree(env.work).sha256, cp.tree.sha256, 'the tree digest equals the checkpoint');

      const entries = logEntries(env);
      assert.deepEqual(
        attemptsIn(entries).filter((a) => /\/toolu_(agent|task)_latched$/.test(a.attempt_id)),
        [],
        'the denied call started no attempt',
      );
      const denials = denialsIn(entries);
      assert.deepEqual(
        denials.map((d) => [d.session_id, d.tool, d.reasons.map((r) => r.code).join(',')]),
        [
          [sid, 'Agent', 'latched'],
          [sid, 'Agent', 'latched'],
        ],
      );
      assert.match(denials[0]!.summary ?? '', /sub2\.txt/);
      assert.match(denials[1]!.summary ?? '', /sub3\.txt/);
    });

    await t.test('`latch exec` refuses (73) while the session is latched; `latch resume` cannot lift it', () => {
      const r = execWriting(env, 'exec-latched.txt');
      assert.equal(r.code, 73, r.stdout + r.stderr);
      assert.equal(env.file('exec-latched.txt'), null, 'the command did not run');
      assert.ok(r.stderr.includes(`${sid} (latched)`), r.stderr);
      assert.match(r.stderr, /Run `latch verify` first/);
      const res = env.latch(['resume', '--yes']);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stderr, /latched under fail_closed: `latch resume` only lifts a pause/);
      assert.equal(sessionOf(env, sid).state, 'latched');
    });

    await t.test('after `latch verify --yes`, `latch exec` runs again', () => {
      const v = env.latch(['verify', '--yes', '--json']);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      assert.equal(sessionOf(env, sid).state, 'mutable');
      const r = execWriting(env, 'exec-verified.txt');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(env.file('exec-verified.txt'), 'ran\n');
    });
  });

  // ---- policies, set per project in the user's config.toml ----

  test('policy "continue" for the project: the compaction is recorded, nothing is blocked', T, async (t) => {
    const env = await setupClaudeEnv();
    t.after(() => env.cleanup());
    setProjectPolicy(env, 'continue');
    const run = await env.claude('Update a.txt, write b.txt and after.txt.', { turns: policyTurns(env, 'done') });
    console.log(`continue: ${run.ms} ms`);
    ok(run, 'the run under continue');
    const sid = run.sessionId!;
    compacted(env, run, sid);

    for (const id of ['toolu_pre_bash', 'toolu_pre_write', 'toolu_post_bash', 'toolu_post_write']) assertRan(env, id);
    assert.deepEqual(deniedIds(run), []);
    assert.equal(env.file('a.txt'), 'before\nafter\n');
    assert.equal(env.file('bash.txt'), '');
    assert.equal(env.file('after.txt'), 'after\n');

    const s = sessionOf(env, sid);
    assert.equal(s.policy, 'continue', 'the project’s policy is in force');
    assert.equal(s.state, 'mutable');
    assert.equal(s.may_mutate, true);
    assert.equal(s.checkpoints.length, 1, 'the compaction still writes a checkpoint');
    assert.equal(s.checkpoints[0]!.trigger, 'auto');

    const text = textAfterCompaction(run);
    assert.ok(text.includes(BRIEF_BLOCK), 'the brief is still delivered after the compaction');
    assert.ok(!text.includes(REVOKED), 'the model is not told its authority is revoked');

    const entries = logEntries(env);
    assert.deepEqual(denialsIn(entries), []);
    const attempts = attemptsIn(entries);
    const postWrite = attempts.find((a) => a.tool === 'Write' && /after\.txt/.test(a.summary ?? ''));
    assert.ok(postWrite, JSON.stringify(attempts));
    assert.equal(postWrite!.state, 'closed');
    assert.deepEqual(filesOf(postWrite!), [['added', 'after.txt', 'attempt']]);
    const postBash = attempts.find((a) => a.tool === 'Bash' && /echo after/.test(a.summary ?? ''));
    assert.ok(postBash, JSON.stringify(attempts));
    assert.deepEqual(filesOf(postBash!).sort(), [
      ['added', 'bash.txt', 'attempt'],
      ['modified', 'a.txt', 'attempt'],
    ]);
    assert.ok(
      entries.some((e) => e.kind === 'compaction' && e.session_id === sid),
      'the log shows the compaction',
    );

    const r = execWriting(env, 'exec.txt');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('exec.txt'), 'ran\n');
  });

  test('policy "pause" for the project: writes blocked until `latch resume`', T, async (t) => {
    const env = await setupClaudeEnv();
    t.after(() => env.cleanup());
    setProjectPolicy(env, 'pause');
    const run = await env.claude('Update a.txt, write b.txt and after.txt.', { turns: policyTurns(env, 'paused') });
    console.log(`pause: ${run.ms} ms`);
    ok(run, 'the run under pause');
    const sid = run.sessionId!;
    compacted(env, run, sid);

    const s = sessionOf(env, sid);
    assert.equal(s.policy, 'pause', 'the project’s policy is in force');
    assert.equal(s.state, 'paused');
    assert.equal(s.may_mutate, false);
    assert.equal(s.checkpoints.length, 1);
    const cp = s.checkpoints[0]!;

    await t.test('after the compaction Bash and Write are denied with the pause’s reason', () => {
      assertRan(env, 'toolu_pre_bash');
      assertRan(env, 'toolu_pre_write');
      for (const id of ['toolu_post_bash', 'toolu_post_write']) {
        const text = assertDenied(env, id, { checkpoint: cp.id, release: /a human runs `latch resume`/ });
        assert.match(text, /This session is paused since its context was compacted/, text);
        assert.doesNotMatch(text, /latch verify/, 'a pause is lifted by `latch resume`, not verify');
      }
      assert.deepEqual(deniedIds(run), ['toolu_post_bash', 'toolu_post_write']);
      assert.equal(env.file('a.txt'), 'before\n');
      assert.equal(env.file('b.txt'), 'b\n');
      assert.equal(env.file('bash.txt'), null);
      assert.equal(env.file('after.txt'), null);
      assert.equal(snapshotTree(env.work).sha256, cp.tree.sha256, 'the tree digest equals the checkpoint');
      const text = textAfterCompaction(run);
      assert.ok(text.includes(REVOKED), 'the model is told its authority is revoked');
      assert.match(text, /paused since its context was compacted/);
      assert.deepEqual(
        denialsIn(logEntries(env)).map((d) => [d.tool, d.reasons.map((r) => r.code).join(',')]),
        [
          ['Bash', 'paused,not_read_only'],
          ['Write', 'paused'],
        ],
      );
    });

    await t.test('`latch exec` refuses (73) while paused', () => {
      const r = execWriting(env, 'exec-paused.txt');
      assert.equal(r.code, 73, r.stdout + r.stderr);
      assert.ok(r.stderr.includes(`${sid} (paused)`), r.stderr);
      assert.equal(env.file('exec-paused.txt'), null);
    });

    await t.test('`latch resume --yes` lifts the pause; the resumed session writes again', async () => {
      const noConfirm = env.latch(['resume']);
      assert.equal(noConfirm.code, 2, `no TTY and no --yes: no confirmation\n${noConfirm.stderr}`);
      assert.equal(sessionOf(env, sid).state, 'paused');
      const res = env.latch(['resume', '--yes', '--json']);
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.deepEqual(JSON.parse(res.stdout).resumed, [sid]);
      assert.equal(sessionOf(env, sid).state, 'mutable');
      const again = await env.claude('go on', {
        resume: sid,
        turns: [
          use('toolu_resumed_write', 'Write', { file_path: join(env.work, 'after.txt'), content: 'after\n' }),
          say('done'),
        ],
      });
      console.log(`pause, resumed: ${again.ms} ms`);
      ok(again, 'the run after latch resume');
      assertRan(env, 'toolu_resumed_write');
      assert.equal(env.file('after.txt'), 'after\n');
      assert.equal(sessionOf(env, sid).state, 'mutable');
    });
  });
});

test(
  'the resident hook answers the PreToolUse of the real binary, writes each Start, and answers nothing after the compaction',
  T,
  async (t) => {
    const env = await setupClaudeEnv();
    t.after(() => env.cleanup());
    const c = join(env.work, 'c.txt');
    let found = '(not looked)';
    const run = await env.claude('Write the files, then update a.txt.', {
      turns: [
        // The first PreToolUse runs in a process of its own and starts the resident hook; the model's
        // next answer waits until it is up (on a loaded machine a fixed pause was not always enough).
        use('toolu_r_sleep', 'Bash', { command: 'true', description: 'start' }, 200),
        () => {
          found = awaitResident(env.latchHome);
          return use('toolu_r_bash', 'Bash', { command: 'echo r > r.txt', description: 'write r.txt' }, 200);
        },
        use('toolu_r_write', 'Write', { file_path: c, content: 'c\n' }, 200),
        use(
          'toolu_r_bash2',
          'Bash',
          { command: 'echo s > s.txt', description: 'write s.txt' },
          COMPACTING_INPUT_TOKENS,
        ),
        use('toolu_r_post', 'Bash', { command: 'echo after >> a.txt', description: 'append' }),
        say('done'),
      ],
    });
    ok(run, 'the run');
    const sid = run.sessionId!;
    for (const id of ['toolu_r_sleep', 'toolu_r_bash', 'toolu_r_write', 'toolu_r_bash2']) assertRan(env, id);
    assert.equal(env.file('r.txt'), 'r\n');
    assert.equal(env.file('c.txt'), 'c\n');
    assertDenied(env, 'toolu_r_post', {});
    assert.equal(env.file('a.txt'), 'original\n');

    const trace = residentTrace(env.latchHome).filter((l) => l.session === sid);
    const served = trace.filter((l) => l.served).map((l) => l.call);
    assert.ok(
      served.length >= 1,
      `the resident hook answered a call: ${JSON.stringify(trace)}; resident hooks before the second call: ${found}`,
    );
    assert.ok(
      served.every((id) => ['toolu_r_bash', 'toolu_r_write', 'toolu_r_bash2'].includes(id!)),
      `only calls before the compaction were answered: ${served.join(', ')}`,
    );
    const post = trace.filter((l) => l.call === 'toolu_r_post');
    assert.ok(
      post.every((l) => !l.served && /latched session/.test(l.why ?? '')),
      `the call after the compaction was left to the ordinary hook: ${JSON.stringify(post)}`,
    );
    // Every call it answered has its write-ahead Start, attributed like the ordinary hook's.
    const attempts = attemptsIn(logEntries(env));
    for (const id of served)
      assert.ok(
        attempts.some((a) => a.attempt_id.endsWith(id!)),
        `${id} has an attempt: ${JSON.stringify(attempts.map((a) => a.attempt_id))}`,
      );
  },
);
