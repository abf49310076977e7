// Forks and sub-agents on the real pinned Codex (0.171.0) over the loopback fake model, hooks installed by
// `latch setup codex`. See docs/codex-notes.md, "Forks and sub-agents (verified)".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { itemText, type FakeStep, type RecordedRequest } from '../../src/agents/codex/fake-model.js';
import { BIG, findRollout, outputsContaining, setupEnv, type Env } from '../helpers/e2e.js';

const T = { timeout: 300_000 };

/** session_meta payload of a rollout (its first line). */
function sessionMeta(codexHome: string, thread: string): Record<string, any> {
  const p = findRollout(codexHome, thread);
  assert.ok(p, `rollout of ${thread}`);
  return JSON.parse(readFileSync(p, 'utf8').split('\n')[0]!).payload;
}

function compactedLines(codexHome: string, thread: string): number {
  return readFileSync(findRollout(codexHome, thread)!, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && JSON.parse(l).type === 'compacted').length;
}

function session(env: Env, id: string) {
  return env.statusJson().sessions.find((s) => s.session_id === id);
}

test('fork of a latched session: the fork starts latched; after `latch verify` a new fork may mutate', T, async (t) => {
  const env = await setupEnv([
    /* parent */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
    { items: [{ type: 'message', text: 'parent stopped' }] },
    /* fork 1 */ {
      items: [
        { type: 'bash', cmd: 'echo fork > fork1.txt' },
        { type: 'patch', patch: '*** Begin Patch\n*** Add File: fork1b.txt\n+x\n*** End Patch\n' },
      ],
    },
    { items: [{ type: 'message', text: 'fork blocked' }] },
    /* fork 2, after verify */ { items: [{ type: 'bash', cmd: 'echo fork > fork2.txt' }] },
    { items: [{ type: 'message', text: 'fork done' }] },
  ]);
  t.after(() => env.cleanup());
  const parent = await env.codex('do the task');
  assert.equal(parent.code, 0, parent.stderr);
  const pid = parent.threadId!;
  assert.equal(session(env, pid)?.state, 'latched');

  await t.test('the first mutation of the fork is denied (the latch comes from the parent record)', async () => {
    const fork = await env.codex('try another way', { fork: pid });
    assert.equal(fork.code, 0, fork.stderr);
    const fid = fork.threadId!;
    assert.notEqual(fid, pid);
    // The premise: the fork's rollout points at the parent and does not hold the compacted line.
    const meta = sessionMeta(env.codexHome, fid);
    assert.equal(meta.forked_from_id, pid);
    assert.equal(meta.history_base.thread_id, pid);
    assert.equal(compactedLines(env.codexHome, fid), 0);
    assert.equal(compactedLines(env.codexHome, pid), 1);

    assert.equal(env.file('fork1.txt'), null);
    assert.equal(env.file('fork1b.txt'), null);
    const s = session(env, fid);
    assert.equal(s?.state, 'latched');
    assert.match(s!.reason ?? '', new RegExp(`forked from latched session ${pid}`));
    const blocked = outputsContaining(env, 'Latch blocked').filter((x) => x.includes('fork1'));
    assert.ok(
      blocked.some((x) => x.includes('echo fork > fork1.txt')),
      'Bash denial reached the model',
    );
    assert.ok(
      blocked.some((x) => x.includes('fork1b.txt')),
      'apply_patch denial reached the model',
    );
  });

  await t.test('after `latch verify --yes` a fork of the verified parent is not latched', async () => {
    const v = env.latch(['verify', '--yes']);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.equal(session(env, pid)?.state, 'mutable');
    const fork = await env.codex('again', { fork: pid });
    assert.equal(fork.code, 0, fork.stderr);
    assert.equal(sessionMeta(env.codexHome, fork.threadId!).forked_from_id, pid);
    assert.equal(env.file('fork2.txt'), 'fork\n');
    assert.equal(session(env, fork.threadId!)?.state, 'mutable');
  });
});

test(
  'fork of a compacted session Latch never saw: the fork is latched; a fork of an unseen uncompacted session is not',
  T,
  async (t) => {
    const env = await setupEnv([
      /* parent P (no Latch) */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: BIG },
      { items: [{ type: 'bash', cmd: 'echo unseen > unseen.txt' }] },
      { items: [{ type: 'message', text: 'P done' }] },
      /* parent Q (no Latch, no compaction) */ { items: [{ type: 'message', text: 'Q done' }] },
      /* fork of P */ { items: [{ type: 'bash', cmd: 'echo fork > forkp.txt' }] },
      { items: [{ type: 'message', text: 'fork of P blocked' }] },
      /* fork of Q */ { items: [{ type: 'bash', cmd: 'echo fork > forkq.txt' }] },
      { items: [{ type: 'message', text: 'fork of Q done' }] },
      /* fork of P resumed after verify --accept-changes */ {
        items: [{ type: 'bash', cmd: 'echo after > after.txt' }],
      },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    t.after(() => env.cleanup());
    const hooksFile = join(env.codexHome, 'hooks.json');
    const installed = readFileSync(hooksFile, 'utf8');
    writeFileSync(hooksFile, JSON.stringify({ hooks: {} }));

    const p = await env.codex('task P');
    assert.equal(p.code, 0, p.stderr);
    const q = await env.codex('task Q');
    assert.equal(q.code, 0, q.stderr);
    assert.equal(env.fake.requests.filter((r) => r.isCompaction).length, 1, 'P compacted, Q did not');
    assert.equal(env.file('unseen.txt'), 'unseen\n', 'without hooks nothing was denied');
    assert.equal(env.statusJson().sessions.length, 0, 'Latch never saw P or Q');

    const s = env.latch(['setup', 'codex', '--codex-home', env.codexHome]);
    assert.equal(s.code, 0, s.stderr);
    assert.equal(readFileSync(hooksFile, 'utf8').includes('hook codex --event PreToolUse'), true);
    assert.ok(installed.length > 0);

    const fp = await env.codex('continue P', { fork: p.threadId! });
    assert.equal(fp.code, 0, fp.stderr);
    const fid = fp.threadId!;
    assert.equal(compactedLines(env.codexHome, fid), 0, 'the fork file holds no compacted line');
    assert.equal(env.file('forkp.txt'), null, 'the fork of the unseen compacted session was denied');
    const fs = session(env, fid)!;
    assert.equal(fs.state, 'latched');
    assert.match(fs.reason ?? '', new RegExp(p.threadId!));
    assert.match(fs.reason ?? '', /compact/);
    assert.ok(outputsContaining(env, 'Latch blocked').some((x) => x.includes('forkp.txt')));

    const fq = await env.codex('continue Q', { fork: q.threadId! });
    assert.equal(fq.code, 0, fq.stderr);
    assert.equal(env.file('forkq.txt'), 'fork\n', 'the fork of the unseen uncompacted session may mutate');
    assert.equal(session(env, fq.threadId!)?.state, 'mutable');

    // No checkpoint exists for a compaction Latch never saw: verify cannot prove anything and says so;
    // a human who reviewed the workspace accepts it explicitly.
    const v = env.latch(['verify', '--yes', '--json']);
    assert.equal(v.code, 65, v.stdout + v.stderr);
    const out = JSON.parse(v.stdout);
    const ev = out.sessions.find((x: { session_id: string }) => x.session_id === fid).evidence;
    assert.ok(ev.checks.some((c: { name: string; ok: boolean }) => c.name === 'checkpoint' && !c.ok));
    const ok = env.latch(['verify', '--yes', '--accept-changes']);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const r = await env.codex('go on', { resume: fid });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(env.file('after.txt'), 'after\n');
  },
);

// ---------------------------------------------------------------------------------------------
// Sub-agents (multi_agent_v2: namespace `collaboration`, PreToolUse tool_name `collaborationspawn_agent`).

/** Codex's agent path of the root thread (an agent name, not a filesystem path); a sub-agent's is ROOT_AGENT + '/' + task. */
const ROOT_AGENT = '/root';
const subAgent = (task: string): string => `${ROOT_AGENT}/${task}`;

/** `agent_name` from the request's x-codex-turn-metadata header: ROOT_AGENT or subAgent(<task_name>). */
function agentName(r: RecordedRequest): string {
  const h = r.headers['x-codex-turn-metadata'];
  return JSON.parse(String(h)).agent_name as string;
}

const collab = (name: string, callId: string, args: unknown): FakeStep['items'][number] => ({
  type: 'raw',
  item: { type: 'function_call', namespace: 'collaboration', name, call_id: callId, arguments: JSON.stringify(args) },
});

function enableSubAgents(env: Env): void {
  appendFileSync(join(env.codexHome, 'config.toml'), '\n[features]\nmulti_agent_v2 = true\n');
}

function inputTexts(reqs: RecordedRequest[]): string[] {
  return reqs.flatMap((r) => (Array.isArray(r.body?.input) ? r.body.input : [])).map(itemText);
}

test(
  'sub-agent: spawned before the compaction, its mutations after the parent compacted are denied; spawning is denied while latched',
  T,
  async (t) => {
    let marker = '';
    let parentN = 0;
    let subN = 0;
    const script = (r: RecordedRequest): FakeStep => {
      if (agentName(r) === ROOT_AGENT) {
        switch (parentN++) {
          case 0: // spawn while mutable; this response's usage triggers auto-compaction of the parent
            return {
              items: [
                collab('spawn_agent', 'spawn_writer', {
                  task_name: 'writer',
                  message: 'Write sub.txt.',
                  fork_turns: 'none',
                }),
              ],
              inputTokens: BIG,
            };
          case 1: // first request after the compaction: the latch has tripped; release the sub-agent
            writeFileSync(marker, 'compacted\n');
            return {
              items: [
                collab('spawn_agent', 'spawn_late', {
                  task_name: 'late',
                  message: 'Write late.txt.',
                  fork_turns: 'none',
                }),
              ],
            };
          case 2:
            return { items: [{ type: 'bash', cmd: 'echo parent > parent.txt' }] };
          case 3:
            // Codex waits out the whole timeout when the sub-agent finished before the wait began (it
            // usually has: its writes are denied at once); 15 s is ample for one that has not.
            return { items: [collab('wait_agent', 'wait_1', { timeout_ms: 15_000 })] };
          default:
            return { items: [{ type: 'message', text: 'parent done' }] };
        }
      }
      // Keeps the sub-agent busy until the parent has compacted (containment kills the loop at the trip).
      const waitForParent: FakeStep = {
        items: [
          {
            type: 'bash',
            cmd: `i=0; while [ ! -f '${marker}' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo released`,
          },
        ],
      };
      switch (subN++) {
        case 0:
          return waitForParent;
        case 1:
          // The premise: the sub-agent's writes come after the parent compacted. Should the parent take
          // longer than the loop's 60 s (a loaded machine), the sub-agent waits again instead of writing
          // before the compaction, which Latch rightly allows.
          if (!existsSync(marker)) {
            subN--;
            return waitForParent;
          }
          return {
            items: [
              { type: 'bash', cmd: 'echo sub > sub.txt' },
              { type: 'patch', patch: '*** Begin Patch\n*** Add File: sub2.txt\n+x\n*** End Patch\n' },
            ],
          };
        default:
          return { items: [{ type: 'message', text: 'sub done' }] };
      }
    };
    // The fake model accepts a function of the request; the harness's parameter is typed as an array.
    const env = await setupEnv(script as unknown as FakeStep[]);
    t.after(() => env.cleanup());
    marker = join(env.base, 'parent-compacted');
    enableSubAgents(env);

    const r = await env.codex('delegate the task');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(env.fake.errors, []);
    const root = r.threadId!;
    const parentReqs = env.fake.requests.filter((q) => !q.isCompaction && agentName(q) === ROOT_AGENT);
    const subReqs = env.fake.requests.filter((q) => !q.isCompaction && agentName(q) === subAgent('writer'));
    assert.ok(existsSync(marker), 'the parent reached its post-compaction request');
    assert.ok(
      env.fake.requests.some((q) => q.isCompaction && agentName(q) === ROOT_AGENT),
      'the parent compacted',
    );
    assert.ok(subReqs.length >= 3, `the sub-agent ran (${subReqs.length} requests)`);
    const subThread = String(subReqs[0]!.headers['thread-id']);
    assert.notEqual(subThread, root, 'the sub-agent is its own thread');
    assert.equal(
      env.fake.requests.filter((q) => agentName(q) === subAgent('late')).length,
      0,
      'no second sub-agent was started',
    );

    // The sub-agent's rollout: its own file, session_meta.session_id = the root session.
    const meta = sessionMeta(env.codexHome, subThread);
    assert.equal(meta.session_id, root);
    assert.equal(meta.parent_thread_id, root);
    assert.equal(meta.thread_source, 'subagent');

    assert.equal(env.file('sub.txt'), null, 'sub-agent Bash denied');
    assert.equal(env.file('sub2.txt'), null, 'sub-agent apply_patch denied');
    assert.equal(env.file('parent.txt'), null, 'parent Bash denied');
    const subSaw = inputTexts(subReqs).filter((x) => x.includes('Latch blocked'));
    assert.ok(
      subSaw.some((x) => x.includes('echo sub > sub.txt')),
      'the sub-agent received the Bash denial',
    );
    assert.ok(
      subSaw.some((x) => x.includes('sub2.txt')),
      'the sub-agent received the apply_patch denial',
    );
    const parentSaw = inputTexts(parentReqs).filter((x) => x.includes('Latch blocked'));
    assert.ok(
      parentSaw.some((x) => x.includes('collaborationspawn_agent')),
      'spawn_agent denied while latched',
    );

    // One session in the store: hook payloads of the sub-agent carry the root session_id.
    const st = env.statusJson();
    assert.deepEqual(
      st.sessions.map((s) => [s.session_id, s.state]),
      [[root, 'latched']],
    );
    const db = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
    const denials = db.prepare('SELECT session_id, tool_name, turn_id FROM denials ORDER BY id').all() as {
      session_id: string;
      tool_name: string;
      turn_id: string;
    }[];
    db.close();
    assert.ok(denials.every((d) => d.session_id === root));
    assert.deepEqual([...new Set(denials.map((d) => d.tool_name))].sort(), [
      'Bash',
      'apply_patch',
      'collaborationspawn_agent',
    ]);
  },
);

test('sub-agent: its own compaction latches the session; the parent is denied afterwards', T, async (t) => {
  let parentN = 0;
  let subN = 0;
  const script = (r: RecordedRequest): FakeStep => {
    if (agentName(r) === ROOT_AGENT) {
      switch (parentN++) {
        case 0:
          return {
            items: [
              collab('spawn_agent', 'spawn_writer', {
                task_name: 'writer',
                message: 'Write sub.txt.',
                fork_turns: 'none',
              }),
            ],
          };
        case 1:
          return { items: [collab('wait_agent', 'wait_1', { timeout_ms: 60_000 })] };
        case 2:
          return { items: [{ type: 'bash', cmd: 'echo parent > parent.txt' }] };
        default:
          return { items: [{ type: 'message', text: 'parent done' }] };
      }
    }
    switch (subN++) {
      case 0: // allowed (nothing compacted yet); its usage triggers the sub-agent's auto-compaction
        return { items: [{ type: 'bash', cmd: 'echo before > before.txt' }], inputTokens: BIG };
      case 1:
        return { items: [{ type: 'bash', cmd: 'echo sub > sub.txt' }] };
      default:
        return { items: [{ type: 'message', text: 'sub done' }] };
    }
  };
  const env = await setupEnv(script as unknown as FakeStep[]);
  t.after(() => env.cleanup());
  enableSubAgents(env);
  const r = await env.codex('delegate the task');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(env.fake.errors, []);
  const root = r.threadId!;
  assert.ok(
    env.fake.requests.some((q) => q.isCompaction && agentName(q) === subAgent('writer')),
    'the sub-agent compacted',
  );
  assert.ok(!env.fake.requests.some((q) => q.isCompaction && agentName(q) === ROOT_AGENT), 'the parent did not');
  assert.equal(env.file('before.txt'), 'before\n');
  assert.equal(env.file('sub.txt'), null, 'sub-agent denied after its compaction');
  assert.equal(env.file('parent.txt'), null, 'parent denied: the latch covers the whole session');
  const s = env.statusJson().sessions;
  assert.equal(s.length, 1);
  assert.equal(s[0]!.session_id, root);
  assert.equal(s[0]!.state, 'latched');
  assert.equal(s[0]!.checkpoints.length, 1);
  for (const via of ['pre_compact', 'post_compact']) assert.ok(s[0]!.checkpoints[0]!.observed_via.includes(via), via);
});
