// Sub-agents in the ledger (src/ledger/observe.ts, src/ledger/ledger.ts):
// - attribution: a call that runs a sub-agent (Claude Code's Agent/Task, Codex's spawn_agent) is a
//   container, not a competing writer: a change inside a call of one of the session's sub-agents is
//   that call's alone, while a change no sub-agent call covers stays the container's;
// - turn ends: the main agent's Stop (or Interrupt) abandons the main agent's open calls only, a
//   SubagentStop that sub-agent's, SessionEnd every call of the session.
// Real temp stores and real temp git repositories; the last tests run the Claude hook path in-process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claude } from '../../src/agents/claude/index.js';
import { runHook } from '../../src/hook.js';
import {
  abandonAtTurnEnd,
  abandonAttempts,
  attemptId,
  awaitFileClock,
  beginClose,
  CLOSE_REASON,
  END_SLACK_NS,
  endClose,
  getAttempt,
  selfId,
  settleEnds,
  startAttempt,
  turnEndScope,
  type AttemptRow,
  type AttemptState,
} from '../../src/ledger/ledger.js';
import { attribute, observeWorkspace, type Window } from '../../src/ledger/observe.js';
import { classifyTool as claudeTool } from '../../src/agents/claude/tools.js';
import { classifyTool as codexTool } from '../../src/agents/codex/tools.js';
import { openStore, type Db } from '../../src/store/store.js';
import { git, tmpDir } from '../helpers/git.js';
import { sandbox, type Sandbox } from '../helpers/workspace.js';

// ---------------------------------------------------------------------------------------------
// A real store and a real git workspace, driven through the ledger's own functions.

interface Ws {
  db: Db;
  home: string;
  root: string;
}

function workspace(): Ws {
  const root = tmpDir('latch-sub-ws-');
  git(root, 'init', '-q', '-b', 'main');
  writeFileSync(join(root, 'README.md'), '# test\n');
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'init');
  const home = tmpDir('latch-sub-home-');
  const db = openStore(home, { create: true });
  const ws = { db, home, root };
  observe(ws, 'baseline');
  return ws;
}

/** A session row of `agent` (sessions.agent: which adapter classifies its tools). */
function session(ws: Ws, id: string, agent: string): void {
  const now = new Date().toISOString();
  ws.db
    .prepare(
      `INSERT INTO sessions (session_id, workspace, cwd, policy, scope, policy_json, state, created_at, updated_at, agent)
       VALUES (?, ?, ?, 'fail_closed', 'session', '{}', 'mutable', ?, ?, ?)`,
    )
    .run(id, ws.root, ws.root, now, now, agent);
}

/** A Start, then the file clock past it (as the PreToolUse does before it replies). */
function start(ws: Ws, sessionId: string, agentId: string | null, toolName: string, toolUseId: string): AttemptRow {
  // The kind the guard records at Start: the session's agent's own classification of the tool.
  const row = ws.db.prepare('SELECT agent FROM sessions WHERE session_id = ?').get(sessionId) as
    | { agent: string }
    | undefined;
  const kind = row ? kindOf(row.agent, toolName) : null;
  const a = startAttempt(
    ws.db,
    {
      sessionId,
      workspace: ws.root,
      turnId: 'turn-1',
      agentId,
      toolName,
      toolUseId,
      summary: `${toolName} call`,
      kind,
    },
    new Date().toISOString(),
  ).attempt;
  awaitFileClock(ws.home, BigInt(a.started_ns));
  return a;
}

function observe(ws: Ws, by: string): { path: string; attribution: string; attempt_id: string | null }[] {
  ws.db.exec('BEGIN IMMEDIATE');
  try {
    return observeWorkspace(ws.db, ws.root, by, new Date().toISOString()).changes.map((c) => ({
      path: c.path,
      attribution: c.attribution,
      attempt_id: c.attempt_id,
    }));
  } finally {
    ws.db.exec('COMMIT');
  }
}

/** A PostToolUse: closing, one observation, closed. Returns what the observation recorded. */
function close(ws: Ws, a: AttemptRow): ReturnType<typeof observe> {
  beginClose(ws.db, a.id, selfId());
  const changes = observe(ws, 'close');
  assert.ok(endClose(ws.db, a.id, new Date().toISOString(), CLOSE_REASON.hook));
  return changes;
}

const put = (ws: Ws, file: string) => writeFileSync(join(ws.root, file), `${file}\n`);

/** Kind `agent` (a sub-agent container) by the session agent's adapter; null for an agent it does not know. */
function kindOf(agent: string, toolName: string): string | null {
  const classify = agent === 'claude' ? claudeTool : agent === 'codex' ? codexTool : null;
  return classify ? classify(toolName, null).kind : null;
}

test('the adapters classify the calls that run a sub-agent as kind `agent` (what the guard records at Start)', () => {
  for (const name of ['Agent', 'Task']) assert.equal(kindOf('claude', name), 'agent', name);
  for (const name of ['Agent', 'spawn_agent', 'collaborationspawn_agent'])
    assert.equal(kindOf('codex', name), 'agent', name);
  for (const name of ['Write', 'Bash', 'Edit', 'mcp__x__y', 'WebFetch', 'TaskStop'])
    assert.notEqual(kindOf('claude', name), 'agent', name);
  for (const name of ['apply_patch', 'Bash', 'Task', 'collaborationsend_message'])
    assert.notEqual(kindOf('codex', name), 'agent', name);
  assert.notEqual(kindOf('claude', 'collaborationspawn_agent'), 'agent', 'another agent’s tool name');
});

test('Claude Code: a foreground sub-agent’s Write inside the open Agent call is the Write’s alone', () => {
  const ws = workspace();
  session(ws, 'S', 'claude');
  const agent = start(ws, 'S', null, 'Agent', 'toolu_agent_fg');
  const write = start(ws, 'S', 'a1', 'Write', 'toolu_fg_write');
  put(ws, 'fg.txt');
  assert.deepEqual(close(ws, write), [{ path: 'fg.txt', attribution: 'attempt', attempt_id: write.id }]);
  // The Agent call ends after its sub-agent: nothing more to record, the change stays the Write's.
  assert.deepEqual(close(ws, agent), []);
  const recorded = ws.db.prepare('SELECT attribution, attempt_id, candidates_json FROM changes').all();
  assert.deepEqual(recorded, [
    { attribution: 'attempt', attempt_id: write.id, candidates_json: JSON.stringify([write.id]) },
  ]);
  ws.db.close();
});

test('Claude Code: a change no sub-agent call covers is the Agent call’s (the container keeps its window)', () => {
  const ws = workspace();
  session(ws, 'S', 'claude');
  const agent = start(ws, 'S', null, 'Task', 'toolu_task');
  const write = start(ws, 'S', 'a1', 'Write', 'toolu_w');
  put(ws, 'in-write.txt');
  assert.deepEqual(close(ws, write), [{ path: 'in-write.txt', attribution: 'attempt', attempt_id: write.id }]);
  // After the sub-agent's Write closed (its window ended), inside the Task call only.
  awaitFileClock(ws.home, BigInt(getAttempt(ws.db, write.id)!.ended_ns!) + 2_000_000n);
  put(ws, 'by-container.txt');
  assert.deepEqual(close(ws, agent), [{ path: 'by-container.txt', attribution: 'attempt', attempt_id: agent.id }]);
  ws.db.close();
});

test('Codex: the spawn_agent call is a container too; its sub-agent’s patch is the patch’s', () => {
  const ws = workspace();
  session(ws, 'C', 'codex');
  const spawn = start(ws, 'C', null, 'collaborationspawn_agent', 'call_spawn');
  const patch = start(ws, 'C', '019a-sub-thread', 'apply_patch', 'call_patch');
  put(ws, 'patched.txt');
  assert.deepEqual(close(ws, patch), [{ path: 'patched.txt', attribution: 'attempt', attempt_id: patch.id }]);
  close(ws, spawn);
  ws.db.close();
});

test('only containers step aside: other overlapping calls stay contended', () => {
  // The main agent's own Bash and a sub-agent's Write (Claude Code runs a background sub-agent
  // alongside the main agent): either could have written.
  {
    const ws = workspace();
    session(ws, 'S', 'claude');
    const bash = start(ws, 'S', null, 'Bash', 'toolu_bash');
    const write = start(ws, 'S', 'a1', 'Write', 'toolu_w');
    put(ws, 'x.txt');
    const [c] = close(ws, write);
    assert.equal(c?.attribution, 'contended');
    const row = ws.db.prepare('SELECT candidates_json FROM changes').get() as { candidates_json: string };
    assert.deepEqual(JSON.parse(row.candidates_json).sort(), [bash.id, write.id].sort());
    ws.db.close();
  }
  // A sub-agent call of another session does not make S's Agent call step aside.
  {
    const ws = workspace();
    session(ws, 'S', 'claude');
    session(ws, 'T', 'claude');
    start(ws, 'S', null, 'Agent', 'toolu_agent');
    const write = start(ws, 'T', 'b1', 'Write', 'toolu_w');
    put(ws, 'y.txt');
    assert.equal(close(ws, write)[0]?.attribution, 'contended');
    ws.db.close();
  }
  // The main agent's own call inside its Agent call (parallel tool calls): no sub-agent call covers it.
  {
    const ws = workspace();
    session(ws, 'S', 'claude');
    start(ws, 'S', null, 'Agent', 'toolu_agent');
    const bash = start(ws, 'S', null, 'Bash', 'toolu_bash');
    put(ws, 'z.txt');
    assert.equal(close(ws, bash)[0]?.attribution, 'contended');
    ws.db.close();
  }
  // A session without a row: its calls are not classified, so an Agent call is an ordinary window.
  {
    const ws = workspace();
    start(ws, 'S', null, 'Agent', 'toolu_agent');
    const write = start(ws, 'S', 'a1', 'Write', 'toolu_w');
    put(ws, 'w.txt');
    assert.equal(close(ws, write)[0]?.attribution, 'contended');
    ws.db.close();
  }
});

test('attribute: the container rule with the window edges and untimed calls', () => {
  const w = (id: string, start: bigint, end: bigint | null, o: Partial<Window> = {}): Window => ({
    id,
    session_id: 'S',
    start,
    end,
    ...o,
  });
  const ms = 1_000_000n;
  const T = 1_000n * ms;
  const container = w('agent', T - 500n * ms, null, { agent_id: null, container: true });
  const sub = w('write', T - 100n * ms, T + 5n * ms, { agent_id: 'a1' });
  const ids = (r: ReturnType<typeof attribute>) => [
    r.attribution,
    r.attempt?.id ?? null,
    r.candidates.map((c) => c.id),
  ];
  assert.deepEqual(ids(attribute(T, [container, sub])), ['attempt', 'write', ['write']]);
  // Before the sub-agent's call: the container's.
  assert.deepEqual(ids(attribute(T - 200n * ms, [container, sub])), ['attempt', 'agent', ['agent']]);
  // Just before the sub-agent call's start (the coarse clock): unknown, as with any window edge.
  assert.deepEqual(ids(attribute(T - 105n * ms, [container, sub])), ['unknown', null, ['agent', 'write']]);
  // A container starting right after the change does not make it unknown once a sub-agent call covers it.
  const late = w('agent2', T + 10n * ms, null, { agent_id: null, container: true });
  assert.deepEqual(ids(attribute(T, [late, sub])), ['attempt', 'write', ['write']]);
  // An untimed sub-agent call covering the change: unknown.
  assert.deepEqual(ids(attribute(T, [container, w('untimed', 0n, null, { agent_id: 'a1' })])), [
    'unknown',
    null,
    ['untimed'],
  ]);
  // Two sub-agents' calls: contended between them, never the container.
  const sub2 = w('write2', T - 50n * ms, null, { agent_id: 'a2' });
  assert.deepEqual(ids(attribute(T, [container, sub, sub2])), ['contended', null, ['write', 'write2']]);
  // A sub-agent's own container (a nested spawn) steps aside for a call of another sub-agent…
  const nested = w('spawn', T - 300n * ms, null, { agent_id: 'a1', container: true });
  const child = w('patch', T - 100n * ms, null, { agent_id: 'a3' });
  assert.deepEqual(ids(attribute(T, [nested, child])), ['attempt', 'patch', ['patch']]);
  // …but not for its own agent's call, nor for the main agent's.
  assert.deepEqual(ids(attribute(T, [nested, w('own', T - 100n * ms, null, { agent_id: 'a1' })])), [
    'contended',
    null,
    ['spawn', 'own'],
  ]);
  assert.deepEqual(ids(attribute(T, [nested, w('main', T - 100n * ms, null, { agent_id: null })])), [
    'contended',
    null,
    ['spawn', 'main'],
  ]);
  // Two containers alone: both stay (neither is a sub-agent's writing call).
  const c2 = w('agentB', T - 400n * ms, null, { agent_id: 'a1', container: true });
  assert.deepEqual(ids(attribute(T, [container, c2])), ['contended', null, ['agent', 'agentB']]);
  // Windows without the new fields (as before): unchanged.
  assert.deepEqual(ids(attribute(T, [w('a', T - 10n * ms, null), w('b', T - 20n * ms, null)])), [
    'contended',
    null,
    ['a', 'b'],
  ]);
});

// ---------------------------------------------------------------------------------------------
// Turn ends.

test('turnEndScope: whose open calls each turn end abandons', () => {
  assert.deepEqual(turnEndScope('stop', 'S', null), { session: 'S', agent: null });
  assert.deepEqual(turnEndScope('interrupt', 'S', null), { session: 'S', agent: null });
  assert.deepEqual(turnEndScope('subagent_stop', 'S', 'a1'), { session: 'S', agent: 'a1' });
  assert.equal(turnEndScope('subagent_stop', 'S', null), null);
  assert.deepEqual(turnEndScope('session_end', 'S', null), { session: 'S' });
  assert.deepEqual(turnEndScope('session_end', 'S', 'a1'), { session: 'S' });
});

test('abandonAtTurnEnd: the main Stop leaves sub-agents’ calls open; SubagentStop and SessionEnd end them', () => {
  const ws = workspace();
  const now = () => new Date().toISOString();
  const calls = {
    main: start(ws, 'S', null, 'Bash', 'm1'),
    mainClosing: start(ws, 'S', null, 'Bash', 'm2'),
    bg: start(ws, 'S', 'a1', 'Write', 's1'),
    bg2: start(ws, 'S', 'a2', 'Write', 's2'),
    other: start(ws, 'T', null, 'Bash', 't1'),
    otherSub: start(ws, 'T', 'a1', 'Write', 't2'),
  };
  beginClose(ws.db, calls.mainClosing.id, selfId());
  const states = () =>
    Object.fromEntries(
      Object.entries(calls).map(([k, a]) => {
        const r = getAttempt(ws.db, a.id)!;
        return [k, r.state === 'abandoned' ? `abandoned: ${r.end_reason}` : r.state];
      }),
    ) as Record<keyof typeof calls, AttemptState | string>;

  assert.equal(abandonAtTurnEnd(ws.db, { kind: 'stop', sessionId: 'S', agentId: null }, now()), 1);
  assert.deepEqual(states(), {
    main: 'abandoned: stop before PostToolUse',
    mainClosing: 'closing',
    bg: 'started',
    bg2: 'started',
    other: 'started',
    otherSub: 'started',
  });
  // A SubagentStop without an agent id: which sub-agent stopped is unknown; nothing is abandoned.
  assert.equal(abandonAtTurnEnd(ws.db, { kind: 'subagent_stop', sessionId: 'S', agentId: null }, now()), 0);
  assert.equal(abandonAtTurnEnd(ws.db, { kind: 'subagent_stop', sessionId: 'S', agentId: 'a1' }, now()), 1);
  assert.equal(states().bg, 'abandoned: subagent_stop before PostToolUse');
  assert.equal(states().bg2, 'started');
  assert.equal(states().otherSub, 'started', 'the same agent id in another session is another sub-agent');
  // The background sub-agent's call still open closes normally.
  assert.equal(beginClose(ws.db, calls.bg2.id, selfId())?.state, 'closing');
  assert.equal(abandonAtTurnEnd(ws.db, { kind: 'interrupt', sessionId: 'T', agentId: null }, now()), 1);
  assert.equal(states().other, 'abandoned: interrupt before PostToolUse');
  assert.equal(states().otherSub, 'started');
  assert.equal(abandonAtTurnEnd(ws.db, { kind: 'session_end', sessionId: 'T', agentId: null }, now()), 1);
  assert.equal(states().otherSub, 'abandoned: session_end before PostToolUse');
  assert.deepEqual(
    [states().mainClosing, states().bg2],
    ['closing', 'closing'],
    'a closing call is never abandoned (the table)',
  );
  ws.db.close();
});

// ---------------------------------------------------------------------------------------------
// The Claude hook path, in-process (runHook with the Claude agent and a temp LATCH_HOME).

const FIX = join('test', 'fixtures', 'claude');

interface ClaudeSb extends Sandbox {
  claudeTranscript: string;
}

function claudeSandbox(): ClaudeSb {
  const sb = sandbox();
  const claudeTranscript = join(sb.base, 'S.jsonl');
  writeFileSync(claudeTranscript, '');
  return { ...sb, claudeTranscript, env: { ...sb.env, LATCH_WATCH: 'off', LATCH_CONTAIN: 'list' } };
}

function payload(sb: ClaudeSb, name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  const base = JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>;
  // The fixtures of main-agent events carry no agent_id; a sub-agent's carry one.
  const { agent_id: _a, agent_type: _t, ...rest } = base;
  return { ...rest, session_id: 'S', cwd: sb.work, transcript_path: sb.claudeTranscript, ...over };
}

async function hook(sb: ClaudeSb, p: Record<string, unknown>): Promise<void> {
  const r = await runHook(claude, JSON.stringify(p), String(p.hook_event_name), sb.env);
  assert.equal(r.exitCode, 0, r.stderr);
  assert.ok(!/"deny"/.test(r.stdout ?? ''), `${String(p.hook_event_name)} denied: ${r.stdout}`);
}

const sub = (agentId: string) => ({ agent_id: agentId, agent_type: 'general-purpose' });
const agentCall = (sb: ClaudeSb, event: 'pre' | 'post', id: string, background: boolean) =>
  payload(sb, `${event}-tool-use-agent`, {
    tool_use_id: id,
    tool_input: {
      description: 'Write a file',
      prompt: 'p',
      subagent_type: 'general-purpose',
      run_in_background: background,
    },
  });
const writeCall = (sb: ClaudeSb, event: 'pre' | 'post', id: string, file: string, agentId: string) =>
  payload(sb, `${event}-tool-use-write`, {
    tool_use_id: id,
    tool_input: { file_path: join(sb.work, file), content: 'sub\n' },
    ...(event === 'post' ? { tool_response: { type: 'create', filePath: join(sb.work, file) } } : {}),
    ...sub(agentId),
  });

function ledger(sb: ClaudeSb) {
  const db = openStore(sb.home, { create: false });
  try {
    return {
      attempts: Object.fromEntries(
        (db.prepare('SELECT tool_use_id, state, agent_id FROM attempts').all() as AttemptRow[]).map((a) => [
          a.tool_use_id,
          a.state,
        ]),
      ),
      changes: db.prepare('SELECT path, attribution, attempt_id FROM changes ORDER BY id').all() as {
        path: string;
        attribution: string;
        attempt_id: string | null;
      }[],
    };
  } finally {
    db.close();
  }
}

test('Claude hook path: a foreground sub-agent’s Write is attributed to it, not contended with the Agent call', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  await hook(sb, payload(sb, 'session-start-startup'));
  await hook(sb, agentCall(sb, 'pre', 'toolu_agent_fg', false));
  await hook(sb, writeCall(sb, 'pre', 'toolu_fg_write', 'fg.txt', 'afg'));
  writeFileSync(join(sb.work, 'fg.txt'), 'sub\n');
  await hook(sb, writeCall(sb, 'post', 'toolu_fg_write', 'fg.txt', 'afg'));
  await hook(sb, payload(sb, 'subagent-stop', sub('afg')));
  await hook(sb, agentCall(sb, 'post', 'toolu_agent_fg', false));
  await hook(sb, payload(sb, 'stop'));
  const l = ledger(sb);
  assert.deepEqual(l.attempts, { toolu_agent_fg: 'closed', toolu_fg_write: 'closed' });
  assert.deepEqual(l.changes, [
    { path: 'fg.txt', attribution: 'attempt', attempt_id: attemptId('S', 'toolu_fg_write') },
  ]);
});

test('Claude hook path: the main Stop leaves a background sub-agent’s call open; it closes, and SubagentStop ends the rest', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  await hook(sb, payload(sb, 'session-start-startup'));
  await hook(sb, agentCall(sb, 'pre', 'toolu_agent_bg', true));
  await hook(sb, agentCall(sb, 'post', 'toolu_agent_bg', true));
  await hook(sb, writeCall(sb, 'pre', 'toolu_bg_write', 'bg.txt', 'abg'));
  // The main agent ends its turn while the sub-agent's Write runs (Claude Code sends Stop before
  // the async sub-agent's SubagentStop).
  await hook(sb, payload(sb, 'stop'));
  assert.deepEqual(ledger(sb).attempts, { toolu_agent_bg: 'closed', toolu_bg_write: 'started' });
  writeFileSync(join(sb.work, 'bg.txt'), 'sub\n');
  await hook(sb, writeCall(sb, 'post', 'toolu_bg_write', 'bg.txt', 'abg'));
  // A call the sub-agent starts and never finishes: its SubagentStop abandons it.
  await hook(sb, writeCall(sb, 'pre', 'toolu_bg_never', 'never.txt', 'abg'));
  await hook(sb, payload(sb, 'subagent-stop', sub('abg')));
  const l = ledger(sb);
  assert.deepEqual(l.attempts, { toolu_agent_bg: 'closed', toolu_bg_write: 'closed', toolu_bg_never: 'abandoned' });
  assert.deepEqual(l.changes, [
    { path: 'bg.txt', attribution: 'attempt', attempt_id: attemptId('S', 'toolu_bg_write') },
  ]);
  await hook(sb, payload(sb, 'session-end'));
});

test('a change made right after a window ends (an Abandon, a Close) is not the ended call’s: settleEnds stamps it past the end', () => {
  const ws = workspace();
  session(ws, 'S', 'claude');
  const ended = (a: AttemptRow) => BigInt(getAttempt(ws.db, a.id)!.ended_ns!);
  const ctime = (file: string) => lstatSync(join(ws.root, file), { bigint: true }).ctimeNs;
  // Without settleEnds a file written right after an end is often stamped inside the window's slack
  // (the kernel's coarse clock): measured, so that the check below is not one that passes anyway.
  let inside = 0;
  for (let i = 0; i < 100; i++) {
    const a = start(ws, 'S', null, 'Bash', `toolu_plain_${i}`);
    abandonAttempts(ws.db, { ids: [a.id] }, 'the turn ended', new Date().toISOString());
    settleEnds(ws.home); // a plain Abandon's end, settled before the measured one below
    const b = start(ws, 'S', null, 'Bash', `toolu_plain_b${i}`);
    abandonAttempts(ws.db, { ids: [b.id] }, 'the turn ended', new Date().toISOString());
    put(ws, `plain-${i}.txt`);
    if (ctime(`plain-${i}.txt`) <= ended(b) + END_SLACK_NS) inside++;
    settleEnds(ws.home);
  }
  assert.ok(inside > 0, 'without settleEnds, some files written right after an end are stamped inside its slack');
  observe(ws, 'stop');
  let late = 0;
  for (let i = 0; i < 100; i++) {
    const a = start(ws, 'S', null, 'Bash', `toolu_${i}`);
    abandonAttempts(ws.db, { ids: [a.id] }, 'the turn ended', new Date().toISOString());
    settleEnds(ws.home);
    put(ws, `after-${i}.txt`);
    if (ctime(`after-${i}.txt`) <= ended(a) + END_SLACK_NS) late++;
  }
  assert.equal(late, 0, 'every file written after settleEnds is stamped past the end and its slack');
  observe(ws, 'stop');
  // The same through a Close, and what the observation makes of it: outside, not the closed call's.
  const w = start(ws, 'S', null, 'Write', 'toolu_w');
  put(ws, 'by-write.txt');
  assert.deepEqual(close(ws, w), [{ path: 'by-write.txt', attribution: 'attempt', attempt_id: w.id }]);
  settleEnds(ws.home);
  put(ws, 'after-close.txt');
  assert.deepEqual(
    observe(ws, 'stop').filter((c) => c.path === 'after-close.txt'),
    [{ path: 'after-close.txt', attribution: 'outside', attempt_id: null }],
  );
  ws.db.close();
});
