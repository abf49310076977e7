// Compaction counting under failure and forgery, driven in-process through runHook with both agents:
// - the hooks' write-ahead announcements (src/session/announce.ts): a compaction whose hooks could not
//   record it (the store locked, the hook killed after it announced) is counted by the next hook;
// - the pairing of sources across a restore (src/session/records.ts hookSeqOf): a real compaction after
//   a human's verify always latches again, a late observation of the verified one does not;
// - the order of a held read's preparation (src/guard/decide.ts): every held read about to be allowed
//   is prepared (Claude Code's shell snapshots emptied) last, a replayed Latch read included;
// - random interleavings (fast-check) of compactions, failed hooks, late boundaries, forgeries and
//   verifies against a model: every compaction the store can know of and no verify settled leaves the
//   session latched; in the normal order nothing is counted twice and nothing latches without a reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { claude } from '../../src/agents/claude/index.js';
import { runCodexHook, runHook } from '../../src/hook.js';
import { handle } from '../../src/guard/guard.js';
import type { GuardContext } from '../../src/guard/context.js';
import { decideTool, heldReadOf } from '../../src/guard/decide.js';
import { openStore, immediate } from '../../src/store/store.js';
import { getSession, transition } from '../../src/session/records.js';
import { announce, announcedDir, pendingAnnouncements, sessionKey } from '../../src/session/announce.js';
import { bash, payload as codexPayload, sandbox, type Sandbox } from '../helpers/workspace.js';
import { claudeBox, claudeBoxPayload } from '../helpers/claude-box.js';

type Ev = 'start' | 'pre' | 'ss' | 'post' | 'stop';

interface Harness {
  agent: 'claude' | 'codex';
  sb: Sandbox;
  env: NodeJS.ProcessEnv;
  /** The order the agent runs its compaction hooks in. */
  order: readonly Exclude<Ev, 'start' | 'stop'>[];
  hook(ev: Ev, env?: NodeJS.ProcessEnv): Promise<{ exitCode: number; stdout: string | null }>;
  /** A PreToolUse; the decision. */
  tool(
    command: string,
    env?: NodeJS.ProcessEnv,
  ): Promise<{ denied: boolean; updatedInput: Record<string, unknown> | null; reason: string }>;
  /** What the agent writes to its transcript for one compaction, with the line's timestamp (null: none). */
  boundary(at: string | null): void;
  transcript: string;
  cleanup(): void;
}

const CLAUDE_EVENTS: Record<Ev, string> = {
  start: 'session-start-startup',
  pre: 'pre-compact-auto',
  ss: 'session-start-compact',
  post: 'post-compact-auto',
  stop: 'stop',
};

let calls = 0;

function decision(stdout: string | null) {
  const out = stdout ? (JSON.parse(stdout) as Record<string, unknown>) : null;
  const h = out?.hookSpecificOutput as
    | { permissionDecision?: string; permissionDecisionReason?: string; updatedInput?: Record<string, unknown> }
    | undefined;
  return {
    denied: h?.permissionDecision === 'deny',
    updatedInput: h?.permissionDecision === 'allow' ? (h.updatedInput ?? null) : null,
    reason: h?.permissionDecisionReason ?? '',
  };
}

function claudeHarness(): Harness {
  const sb = claudeBox();
  const { tr, env } = sb;
  const payload = (name: string, over: Record<string, unknown> = {}) => claudeBoxPayload(sb, name, over);
  let uuid = 0;
  return {
    agent: 'claude',
    sb,
    env,
    order: ['pre', 'ss', 'post'],
    transcript: tr,
    hook: (ev, e = env) => {
      const p = payload(CLAUDE_EVENTS[ev]);
      return runHook(claude, JSON.stringify(p), String(p.hook_event_name), e);
    },
    tool: async (command, e = env) => {
      const p = payload('pre-tool-use-bash', {
        tool_name: 'Bash',
        tool_input: { command },
        tool_use_id: `toolu_count_${++calls}`,
      });
      return decision((await runHook(claude, JSON.stringify(p), 'PreToolUse', e)).stdout);
    },
    boundary: (at) => {
      const id = `b${++uuid}`;
      appendFileSync(
        tr,
        `${JSON.stringify({ parentUuid: null, logicalParentUuid: 'p0', type: 'system', subtype: 'compact_boundary', content: 'Conversation compacted', compactMetadata: { trigger: 'auto' }, ...(at ? { timestamp: at } : {}), uuid: id, sessionId: 'S', version: '2.1.332' })}\n` +
          `${JSON.stringify({ parentUuid: id, type: 'user', isCompactSummary: true, message: { role: 'user', content: 'This session is being continued…' } })}\n`,
      );
    },
    cleanup: sb.cleanup,
  };
}

const CODEX_EVENTS: Record<Ev, string> = {
  start: 'session-start-startup',
  pre: 'pre-compact-auto',
  ss: 'session-start-compact',
  post: 'post-compact-auto',
  stop: 'stop',
};

function codexHarness(): Harness {
  const sb = sandbox();
  const env = { ...sb.env, LATCH_CONTAIN: 'list' };
  const line = (at: string | null, type: string, p: unknown) =>
    `${JSON.stringify({ ...(at ? { timestamp: at } : {}), type, payload: p })}\n`;
  return {
    agent: 'codex',
    sb,
    env,
    order: ['pre', 'post', 'ss'],
    transcript: sb.transcript,
    hook: (ev, e = env) => {
      const p = codexPayload(CODEX_EVENTS[ev], sb);
      return runCodexHook(JSON.stringify(p), String(p.hook_event_name), e);
    },
    tool: async (command, e = env) =>
      decision((await runCodexHook(JSON.stringify(bash(sb, command)), 'PreToolUse', e)).stdout),
    boundary: (at) => {
      appendFileSync(
        sb.transcript,
        line(at, 'response_item', {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 's' }],
        }) +
          line(at, 'compacted', { message: 'summary', replacement_history: [] }) +
          line(at, 'turn_context', { cwd: '/', model: 'gpt-5.5' }) +
          line(at, 'event_msg', {
            type: 'item_completed',
            item: { type: 'ContextCompaction', id: `cc-${Math.random().toString(16).slice(2)}` },
          }),
      );
    },
    cleanup: sb.cleanup,
  };
}

const HARNESSES = [
  ['Claude Code', claudeHarness],
  ['Codex', codexHarness],
] as const;

function withDb<T>(h: Harness, fn: (db: ReturnType<typeof openStore>) => T): T {
  const db = openStore(h.sb.home, { create: false });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function state(h: Harness): string {
  return withDb(h, (db) => getSession(db, 'S')?.state ?? 'none');
}

/** A human's verify (the command's own checks are tested in verify-confirm.test.ts). */
function verify(h: Harness): string {
  return withDb(h, (db) =>
    immediate(db, () => {
      const now = new Date().toISOString();
      transition(db, getSession(db, 'S')!, 'verify', {}, 'a human verified (simulated)', now);
      return now;
    }),
  );
}

function counts(h: Harness) {
  return withDb(h, (db) => {
    const one = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      compactions: one("SELECT COUNT(*) n FROM compactions WHERE session_id = 'S'"),
      tripped: one("SELECT COUNT(*) n FROM compactions WHERE session_id = 'S' AND tripped_at IS NOT NULL"),
      trips: one("SELECT COUNT(*) n FROM transitions WHERE session_id = 'S' AND event LIKE 'compaction:%'"),
      latches: one(
        "SELECT COUNT(*) n FROM transitions WHERE session_id = 'S' AND event LIKE 'compaction:%' AND from_state = 'mutable'",
      ),
      again: one("SELECT COUNT(*) n FROM transitions WHERE session_id = 'S' AND evidence_json LIKE '%\"again\":true%'"),
      announcements: one("SELECT COUNT(*) n FROM announcements WHERE session_id = 'S'"),
    };
  });
}

/** The files still in $LATCH_HOME/announced/. */
function announced(h: Harness): string[] {
  const dir = announcedDir(h.sb.home);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Runs `fn` while another process holds the store's write lock (the hooks give up after 50 ms). */
async function locked<T>(h: Harness, fn: (env: NodeJS.ProcessEnv) => Promise<T>): Promise<T> {
  const locker = openStore(h.sb.home, { create: false });
  locker.exec('BEGIN EXCLUSIVE');
  try {
    return await fn({ ...h.env, LATCH_BUSY_TIMEOUT_MS: '50' });
  } finally {
    locker.exec('ROLLBACK');
    locker.close();
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Announcements

test('announce: a 0600 file in a 0700 directory, named by session, source and time; only the session’s are listed', () => {
  const sb = sandbox({ git: false });
  try {
    const a = announce(
      sb.home,
      'S',
      'post_compact',
      { trigger: 'auto', turnId: 't1' },
      Date.parse('2026-01-02T03:04:05.678Z'),
    );
    assert.ok('id' in a, JSON.stringify(a));
    const b = announce(sb.home, 'other', 'pre_compact', { trigger: null, turnId: null });
    assert.ok('id' in b);
    const weird = 'a/b c..d';
    const c = announce(sb.home, weird, 'session_start', { trigger: null, turnId: null });
    assert.ok('id' in c && !c.id.includes('/') && c.id.startsWith(sessionKey(weird)));
    assert.equal(statSync(announcedDir(sb.home)).mode & 0o777, 0o700);
    assert.equal(statSync(join(announcedDir(sb.home), a.id)).mode & 0o777, 0o600);
    const p = pendingAnnouncements(sb.home, 'S');
    assert.equal(p.problem, null);
    assert.deepEqual(p.list, [
      { id: a.id, source: 'post_compact', at: '2026-01-02T03:04:05.678Z', trigger: 'auto', turnId: 't1' },
    ]);
    assert.equal(pendingAnnouncements(sb.home, weird).list[0]?.source, 'session_start');
    // A name of the session's that does not parse still counts, as a tripping announcement made now.
    writeFileSync(join(announcedDir(sb.home), `${sessionKey('S')}.garbage`), '');
    assert.deepEqual(
      pendingAnnouncements(sb.home, 'S').list.map((x) => [x.source, x.at]),
      [
        ['post_compact', '2026-01-02T03:04:05.678Z'],
        ['post_compact', null],
      ],
    );
  } finally {
    sb.cleanup();
  }
});

for (const [name, make] of HARNESSES) {
  test(`${name}: a compaction hook counts its own announcement and removes it (one trip, one checkpoint)`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    assert.equal((await h.tool('echo 1 > a')).denied, false);
    for (const ev of h.order) assert.equal((await h.hook(ev)).exitCode, 0);
    assert.deepEqual(announced(h), [], 'every announcement removed once counted');
    assert.equal(existsSync(announcedDir(h.sb.home)), false, 'and the emptied directory');
    const c = counts(h);
    assert.equal(c.compactions, 1);
    assert.equal(c.trips, 1);
    assert.equal(c.announcements, 3, 'each hook recorded its own');
    assert.equal(
      withDb(
        h,
        (db) => (db.prepare('SELECT COUNT(*) n FROM announcements WHERE by_own_hook = 1').get() as { n: number }).n,
      ),
      3,
    );
    assert.ok((await h.tool('echo 2 > b')).denied);
  });

  test(`${name}: hooks that announced and then failed (store locked) are counted by the next hook, once`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    await h.tool('echo 1 > a');
    await locked(h, async (env) => {
      for (const ev of h.order) assert.equal((await h.hook(ev, env)).exitCode, 0, `${ev} never blocks`);
      assert.equal(announced(h).length, 3, 'three announcements wait');
      // While the store stays locked, a tracked call is denied (the store cannot be checked).
      const r = await h.tool('echo 2 > b', env);
      assert.ok(r.denied);
      assert.match(r.reason, /could not check it .*locked/);
    });
    assert.equal(state(h), 'mutable', 'nothing recorded yet');
    const r = await h.tool('echo 2 > b');
    assert.ok(r.denied, 'the first write after the compaction is denied');
    assert.match(r.reason, /latched/);
    assert.deepEqual(announced(h), []);
    const c = counts(h);
    assert.equal(c.compactions, 1);
    assert.equal(c.trips, 1);
    assert.equal(c.announcements, 3);
    // The boundary arrives later: the same compaction (no second trip).
    h.boundary(new Date().toISOString());
    await h.hook('stop');
    assert.deepEqual([counts(h).compactions, counts(h).trips], [1, 1]);
  });

  test(`${name}: a PreCompact announcement alone is a checkpoint, not a trip`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    await h.tool('echo 1 > a');
    await locked(h, (env) => h.hook('pre', env));
    assert.equal((await h.tool('echo 2 > b')).denied, false, 'PreCompact alone does not mean a compaction happened');
    const cp = withDb(h, (db) => (db.prepare('SELECT COUNT(*) n FROM checkpoints').get() as { n: number }).n);
    assert.equal(cp, 1);
    assert.deepEqual([counts(h).compactions, counts(h).trips], [1, 0]);
    // The real compaction that follows takes the same number (and a fresh checkpoint), so the sources
    // stay in step: one compaction, one trip, and its boundary no second one.
    for (const ev of h.order) await h.hook(ev);
    h.boundary(new Date().toISOString());
    assert.ok((await h.tool('echo 3 > c')).denied);
    assert.deepEqual([counts(h).compactions, counts(h).trips], [1, 1]);
  });

  test(`${name}: an announcement already counted is only removed (a file that comes back is not counted twice)`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    await h.tool('echo 1 > a');
    for (const ev of h.order) await h.hook(ev);
    const ids = withDb(h, (db) =>
      (db.prepare('SELECT id FROM announcements').all() as { id: string }[]).map((r) => r.id),
    );
    mkdirSync(announcedDir(h.sb.home), { recursive: true, mode: 0o700 });
    for (const id of ids) writeFileSync(join(announcedDir(h.sb.home), id), '');
    verify(h);
    assert.equal((await h.tool('echo 2 > b')).denied, false, 'not a new compaction');
    assert.deepEqual(announced(h), []);
    assert.equal(counts(h).trips, 1);
  });

  test(`${name}: an announcements directory that cannot be trusted denies tracked calls; compaction hooks still count`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    const elsewhere = join(h.sb.base, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, announcedDir(h.sb.home));
    const r = await h.tool('echo 1 > a');
    assert.ok(r.denied);
    assert.match(r.reason, /compaction announcements cannot be trusted: .* is a symbolic link/);
    const read = await h.tool('cat README.md');
    assert.ok(read.denied || read.updatedInput, 'a read still runs only rewritten');
    // The hooks cannot announce, but record their observation directly, as before.
    for (const ev of h.order) await h.hook(ev);
    assert.equal(state(h), 'latched');
    rmSync(announcedDir(h.sb.home));
    writeFileSync(announcedDir(h.sb.home), 'not a directory');
    assert.match((await h.tool('echo 2 > b')).reason, /is not a directory/);
  });

  // -------------------------------------------------------------------------------------------
  // Pairing across a restore (#15): both orders

  test(`${name}: a forged boundary, verified, does not absorb the next real compaction`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    h.boundary(new Date().toISOString()); // the agent forges one while mutable
    assert.ok((await h.tool('echo 1 > a')).denied, 'the forgery latches the forger');
    verify(h);
    assert.equal((await h.tool('echo 2 > b')).denied, false);
    for (const ev of h.order) await h.hook(ev);
    assert.ok((await h.tool('echo 3 > c')).denied, 'the real compaction latches');
    h.boundary(new Date().toISOString()); // its boundary, later: the same compaction
    await h.hook('stop');
    const c = counts(h);
    assert.deepEqual([c.compactions, c.latches, c.again], [2, 2, 0]);
  });

  test(`${name}: normal order, verify after the turn: one latch per compaction, none for the late boundary`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    for (let i = 1; i <= 2; i++) {
      await h.tool(`echo ${i} > a`);
      const at = new Date().toISOString();
      for (const ev of h.order) await h.hook(ev);
      assert.ok((await h.tool(`echo ${i} > b`)).denied, `compaction ${i} latches`);
      h.boundary(at);
      await h.hook('stop');
      verify(h);
      assert.equal((await h.tool(`echo ${i} > c`)).denied, false, `verified ${i}`);
    }
    const c = counts(h);
    assert.deepEqual([c.compactions, c.latches, c.again], [2, 2, 0]);
  });

  test(`${name}: normal order, verify mid-turn (before the boundary is read): the late boundary is the verified compaction`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    await h.tool('echo 1 > a');
    const at = new Date().toISOString();
    for (const ev of h.order) await h.hook(ev);
    await sleep(5);
    verify(h);
    h.boundary(at); // written at the compaction, appended (or first read) only now
    assert.equal((await h.tool('echo 2 > b')).denied, false, 'not a second latch');
    await h.hook('stop');
    // And the next real compaction still latches.
    for (const ev of h.order) await h.hook(ev);
    assert.ok((await h.tool('echo 3 > c')).denied);
    const c = counts(h);
    assert.deepEqual([c.compactions, c.latches, c.again], [2, 2, 0]);
  });

  test(`${name}: a boundary without a time read after a verify latches again (fail closed)`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    for (const ev of h.order) await h.hook(ev);
    verify(h);
    h.boundary(null);
    assert.ok((await h.tool('echo 1 > a')).denied);
    assert.equal(counts(h).again, 1);
  });

  test(`${name}: hooks forged while mutable, verified; a real compaction whose hooks never ran is still caught by its boundary`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    for (const ev of h.order) await h.hook(ev); // the agent runs Latch's hook itself (a forgery)
    verify(h);
    await sleep(5);
    h.boundary(new Date().toISOString()); // a real compaction; its hooks killed before they announced
    assert.ok((await h.tool('echo 1 > a')).denied, 'the boundary lands on the settled #1 and trips again');
    assert.equal(counts(h).again, 1);
  });

  test(`${name}: an announcement made before a verify and counted after it latches when nothing tripped at its number`, async (t) => {
    const h = make();
    t.after(h.cleanup);
    await h.hook('start');
    for (const ev of h.order) await h.hook(ev); // compaction #1, latched
    // Compaction #2: its hooks announce but cannot record (store locked) ...
    await locked(h, async (env) => {
      for (const ev of h.order) await h.hook(ev, env);
    });
    verify(h); // ... and the human, who saw only #1, verifies
    assert.ok((await h.tool('echo 1 > a')).denied, '#2 latches');
    const c = counts(h);
    assert.deepEqual([c.compactions, c.latches], [2, 2]);
  });
}

// ---------------------------------------------------------------------------------------------
// The held read's preparation

test('a read checked by the very call that latches the session is rewritten and prepared, not run as sent', async (t) => {
  const h = claudeHarness();
  t.after(h.cleanup);
  const snaps = join(h.env.CLAUDE_CONFIG_DIR!, 'shell-snapshots');
  mkdirSync(snaps);
  const snap = join(snaps, 'snapshot-bash-1700000000000-abcdef.sh');
  writeFileSync(snap, '');
  await h.hook('start');
  await h.tool('true');
  writeFileSync(snap, 'touch /tmp/latch-count-pwned\n'); // armed while mutable
  h.boundary(new Date().toISOString());
  const r = await h.tool('cat README.md');
  assert.equal(state(h), 'latched');
  assert.ok(
    r.denied || (r.updatedInput && readFileSync(snap, 'utf8') === ''),
    'denied, or rewritten with the snapshot emptied',
  );
  assert.ok(r.updatedInput, 'predicted held: rewritten');
  assert.notEqual(r.updatedInput!.command, 'cat README.md');
  // The same with a pending announcement instead of a boundary.
  writeFileSync(snap, 'touch /tmp/latch-count-pwned\n');
  verify(h);
  await locked(h, (env) => h.hook('ss', env));
  const r2 = await h.tool('cat README.md');
  assert.equal(state(h), 'latched');
  assert.ok(r2.updatedInput && readFileSync(snap, 'utf8') === '');
});

test('every held read about to be allowed is prepared last, a replayed Latch read included; a failure denies', async (t) => {
  const h = claudeHarness();
  t.after(h.cleanup);
  await h.hook('start');
  for (const ev of h.order) await h.hook(ev);
  assert.equal(state(h), 'latched');
  const steps: string[] = [];
  let answer: string | null = null;
  const agent = {
    ...claude,
    prepareHeldRead: () => {
      steps.push('prepare');
      return answer;
    },
  };
  const ctx: GuardContext = {
    home: h.sb.home,
    openDb: () => openStore(h.sb.home, { create: false }),
    now: () => new Date().toISOString(),
    env: h.env,
    agent,
  };
  const obs = {
    sessionId: 'S',
    turnId: null,
    cwd: h.sb.work,
    transcriptPath: h.transcript,
    model: null,
    permissionMode: null,
    agentId: null,
  };
  const call = {
    name: 'Bash',
    kind: 'shell' as const,
    command: 'cat README.md',
    mcpServer: null,
    toolUseId: 'toolu_x',
    input: { command: 'cat README.md' },
  };
  const replay = "printf '%s' 'status'; exit 0";
  const decide = () =>
    withDb(h, (db) => {
      const held = heldReadOf(ctx, obs, call, () => {
        steps.push('replay');
        return replay;
      });
      return decideTool(ctx, db, getSession(db, 'S')!, obs, call, { result: null, problem: null }, held, ctx.now());
    });
  const ok = decide();
  assert.equal(ok.verdict, 'allow');
  assert.equal(ok.updatedInput?.command, replay, 'the replayed read');
  assert.deepEqual(steps, ['replay', 'prepare'], 'prepared, as the last step before the allow');
  steps.length = 0;
  answer = 'the snapshots cannot be emptied';
  const no = decide();
  assert.equal(no.verdict, 'deny');
  assert.deepEqual(
    no.reasons.map((r) => r.code),
    ['latched', 'read_unsafe'],
  );
  // Through the whole guard: a plain held read is prepared once, a write never.
  steps.length = 0;
  answer = null;
  const d = await handle(ctx, obs, { type: 'pre_tool', call: { ...call, toolUseId: 'toolu_y' } });
  assert.equal(d.verdict, 'allow');
  assert.deepEqual(steps, ['prepare']);
  steps.length = 0;
  const w = await handle(ctx, obs, {
    type: 'pre_tool',
    call: { ...call, command: 'echo x > a', input: { command: 'echo x > a' }, toolUseId: 'toolu_z' },
  });
  assert.equal(w.verdict, 'deny');
  assert.deepEqual(steps, []);
});

// ---------------------------------------------------------------------------------------------
// Random interleavings against a model

type Fate = 'ok' | 'locked' | 'killed';
type Step =
  | { kind: 'compact'; fates: Fate[] }
  | { kind: 'pre_only'; fate: Fate }
  | { kind: 'flush' }
  | { kind: 'forge'; at: 'none' | 'now' }
  | { kind: 'tool' }
  | { kind: 'stop' }
  | { kind: 'verify' };

interface Compaction {
  at: number;
  /** A tripping hook (SessionStart(compact), PostCompact) of an earlier compaction was killed before it announced. */
  afterLoss: boolean;
  /** At least one of its hooks wrote its announcement. */
  announced: boolean;
  /** Its boundary is in the transcript. */
  flushed: boolean;
  /** A forgery (no hooks; its boundary written at once). */
  forged: boolean;
  /** The store knows of it: a hook that could record ran after it was announced or written. */
  known: boolean;
  /** A verify ran after it was known. */
  covered: boolean;
  /** The boundary's timestamp, for a real one. */
  boundaryAt: string | null;
}

function stepArb(normal: boolean): fc.Arbitrary<Step> {
  const fate: fc.Arbitrary<Fate> = normal
    ? fc.constantFrom('ok', 'ok', 'locked')
    : fc.constantFrom('ok', 'locked', 'killed');
  const options: fc.WeightedArbitrary<Step>[] = [
    {
      arbitrary: fc.array(fate, { minLength: 3, maxLength: 3 }).map((fates) => ({ kind: 'compact' as const, fates })),
      weight: 3,
    },
    { arbitrary: fate.map((f) => ({ kind: 'pre_only' as const, fate: f })), weight: 1 },
    { arbitrary: fc.constant({ kind: 'flush' as const }), weight: 3 },
    { arbitrary: fc.constant({ kind: 'tool' as const }), weight: 4 },
    { arbitrary: fc.constant({ kind: 'stop' as const }), weight: 1 },
    { arbitrary: fc.constant({ kind: 'verify' as const }), weight: 3 },
  ];
  if (!normal)
    options.push({
      arbitrary: fc.constantFrom('none', 'now').map((at) => ({ kind: 'forge' as const, at })),
      weight: 1,
    });
  return fc.oneof(...options);
}

async function runModel(make: () => Harness, steps: Step[], normal: boolean): Promise<void> {
  const h = make();
  try {
    await h.hook('start');
    const all: Compaction[] = [];
    /** Boundaries Claude Code (or Codex) has yet to write, oldest first. */
    const queue: Compaction[] = [];
    let lastVerify = 0;
    let writes = 0;
    /** A tripping hook was killed before it announced: its source's count lags from then on. */
    let lost = false;
    /** A hook that could record ran: every announced or written compaction is known from now on. */
    const recorded = () => {
      for (const c of all) if (c.announced || c.flushed) c.known = true;
    };
    const fire = async (ev: Exclude<Ev, 'start' | 'stop'>, fate: Fate, c: { announced: boolean }) => {
      if (fate === 'killed') return; // SIGKILLed before it announced: nothing at all
      c.announced = ev !== 'pre' || c.announced;
      if (fate === 'locked') await locked(h, (env) => h.hook(ev, env));
      else {
        await h.hook(ev);
        recorded();
      }
    };
    for (const step of steps) {
      switch (step.kind) {
        case 'compact': {
          const c: Compaction = {
            at: Date.now(),
            afterLoss: lost,
            announced: false,
            flushed: false,
            forged: false,
            known: false,
            covered: false,
            boundaryAt: null,
          };
          c.boundaryAt = iso(c.at);
          all.push(c);
          queue.push(c);
          // PreCompact alone announces nothing that trips; only SessionStart(compact)/PostCompact do.
          for (const [i, ev] of h.order.entries()) await fire(ev, step.fates[i]!, c);
          if (h.order.some((ev, i) => ev !== 'pre' && step.fates[i] === 'killed')) lost = true;
          break;
        }
        case 'pre_only': {
          await fire('pre', step.fate, { announced: false });
          break;
        }
        case 'flush': {
          const c = queue.shift();
          if (!c) break;
          h.boundary(c.boundaryAt);
          c.flushed = true;
          break;
        }
        case 'forge': {
          await sleep(2);
          const c: Compaction = {
            at: Date.now(),
            afterLoss: lost,
            announced: false,
            flushed: true,
            forged: true,
            known: false,
            covered: false,
            boundaryAt: null,
          };
          all.push(c);
          h.boundary(step.at === 'now' ? iso(c.at) : null);
          break;
        }
        case 'stop': {
          await h.hook('stop');
          recorded();
          break;
        }
        case 'verify': {
          if (state(h) !== 'latched') break;
          await sleep(2);
          lastVerify = Date.parse(verify(h));
          for (const c of all) if (c.known) c.covered = true;
          await sleep(2);
          break;
        }
        case 'tool': {
          const r = await h.tool(`echo ${++writes} > w${writes}`);
          recorded();
          const open = all.filter((c) => !c.covered);
          // Safety: a compaction that no verify settled denies the write when it happened after the
          // last verify and the store can know of it (a tripping hook announced it, or its boundary is
          // written), or when it was announced and no tripping hook was lost before it. (Lost: killed
          // before it announced. Its source's count then lags, and an announcement pending at a verify
          // can pair with the compaction before; the boundary still latches, later: the residual in
          // ARCHITECTURE.md, and the todo case below.)
          const mustDeny = open.filter(
            (c) => (c.at > lastVerify && (c.announced || c.flushed)) || (c.announced && !c.afterLoss),
          );
          assert.ok(
            !mustDeny.length || r.denied,
            `write ${writes} allowed with ${mustDeny.length} unsettled compaction(s): ${JSON.stringify(mustDeny)}`,
          );
          // Normal order: nothing latches without a compaction no verify settled.
          if (normal) assert.equal(r.denied, open.length > 0, `write ${writes}: ${r.reason}`);
          break;
        }
      }
    }
    if (normal) {
      // Nothing counted twice: one tripped compaction per real one the store knows, no trip again.
      await h.hook('stop');
      recorded();
      const c = counts(h);
      assert.equal(c.again, 0, 'no boundary tripped again');
      assert.equal(c.tripped, all.filter((x) => x.known).length, 'one tripped compaction per real one');
      assert.deepEqual(announced(h), [], 'every announcement counted and removed');
    }
  } finally {
    h.cleanup();
  }
}

const RUNS = Number(process.env.LATCH_MODEL_RUNS) || 6;

for (const [name, make] of HARNESSES) {
  for (const normal of [true, false]) {
    test(`model (${name}, ${normal ? 'normal order' : 'failures and forgeries'}): random interleavings of compactions, boundaries and verifies`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb(normal), { minLength: 4, maxLength: 14 }), (steps) =>
          runModel(make, steps, normal),
        ),
        { numRuns: RUNS },
      );
    });
  }
}

// Compaction n's PostCompact killed before it announced, then n+1's PostCompact announcement kept out
// of the store by a held lock: per-source counts alone would take it for n's late observation if a
// restore came between. No restore does: latch verify and latch resume refuse while the session has
// an announcement not counted (the last test in this file), and a hook's own release counts first.

test('... and the later compaction still latches by its boundary', async (t) => {
  const h = claudeHarness();
  t.after(h.cleanup);
  await h.hook('start');
  const at1 = new Date().toISOString();
  await h.hook('pre');
  await h.hook('ss');
  const at2 = new Date().toISOString();
  await h.hook('pre');
  await locked(h, (env) => h.hook('post', env));
  await sleep(5);
  verify(h);
  await h.tool('echo 1 > a');
  h.boundary(at1);
  h.boundary(at2);
  await h.hook('stop');
  assert.equal(state(h), 'latched', '#2’s boundary lands on #2 (recorded by its PreCompact, never tripped)');
});

test('latch verify refuses while a compaction is announced and not yet counted; the next hook counts it, and the write stays denied', async (t) => {
  const { verify: verifyCommand } = await import('../../src/commands/verify.js');
  const h = claudeHarness();
  t.after(h.cleanup);
  await h.hook('start');
  await h.hook('pre');
  await h.hook('ss'); // #1 trips; its PostCompact is killed before it announces
  await h.hook('stop');
  await h.hook('pre'); // #2: its PostCompact announces into a locked store
  await locked(h, (env) => h.hook('post', env));
  let out = '';
  let err = '';
  const io = {
    out: (s: string) => void (out += s),
    err: (s: string) => void (err += s),
    env: h.env,
    cwd: h.sb.work,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  };
  assert.notEqual(await verifyCommand(io, { yes: true, json: true }), 0, 'not restored');
  assert.equal(state(h), 'latched');
  assert.match(out + err, /announced for this session and is not counted yet/);
  const { status } = await import('../../src/commands/status.js');
  const shown = async () => {
    out = '';
    assert.equal(await status(io, { json: true }), 0);
    return (JSON.parse(out) as { sessions: { announced: { pending: string[]; problem: string | null } }[] })
      .sessions[0]!.announced;
  };
  assert.equal((await shown()).pending.length, 1, 'latch status shows the announcement waiting');
  assert.ok((await h.tool('echo 1 > a')).denied, 'the write is denied (and the hook counted #2)');
  assert.deepEqual(await shown(), { pending: [], problem: null });
  assert.equal(pendingAnnouncements(h.sb.home, 'S').list.length, 0, 'counted');
});

test('an announcement the agent makes a FIFO (or a link to one) does not stall the hook: it counts, and the write is denied', async (t) => {
  const h = claudeHarness();
  t.after(h.cleanup);
  await h.hook('start');
  assert.equal((await h.tool('echo 1 > a')).denied, false);
  const dir = announcedDir(h.sb.home);
  mkdirSync(dir, { mode: 0o700 });
  const fifo = join(h.sb.base, 'fifo');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  assert.equal(spawnSync('mkfifo', [join(dir, `${sessionKey('S')}.post_compact.1.1.a`)]).status, 0);
  symlinkSync(fifo, join(dir, `${sessionKey('S')}.post_compact.1.1.b`));
  const started = Date.now();
  assert.ok((await h.tool('echo 2 > b')).denied, 'denied');
  assert.ok(Date.now() - started < 20_000, 'answered');
  assert.equal(state(h), 'latched');
});

test('more announcements than a session can have made are no compactions to count one by one: tracked calls are denied', async (t) => {
  const h = claudeHarness();
  t.after(h.cleanup);
  await h.hook('start');
  assert.equal((await h.tool('echo 1 > a')).denied, false);
  const dir = announcedDir(h.sb.home);
  mkdirSync(dir, { mode: 0o700 });
  for (let i = 0; i < 65; i++) writeFileSync(join(dir, `${sessionKey('S')}.post_compact.${i}.1.x`), '');
  const r = await h.tool('echo 2 > b');
  assert.ok(r.denied, 'denied');
  assert.match(r.reason, /65 compaction announcements wait/);
  assert.equal(counts(h).compactions, 0, 'none counted one by one');
});
