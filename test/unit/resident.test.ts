// The resident hook (src/resident/): real processes of the built bundle (dist/latch.cjs) over a
// Claude Code box set up with `latch setup claude`. What it answers must be what the ordinary hook
// answers; what it does not answer is decided by the ordinary hook from scratch; a resident hook that
// fails in any way costs time or gives a deny, never an allow the ordinary hook would not give.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { claude } from '../../src/agents/claude/index.js';
import { isLatchError } from '../../src/base/errors.js';
import { handle } from '../../src/guard/guard.js';
import { checkRegistration } from '../../src/tamper/check.js';
import { procStat, runs } from '../../src/base/proc.js';
import { residentSpool, SPOOL } from '../../src/resident/identity.js';
import { recordedResidents } from '../../src/resident/list.js';
import { preparedOnce } from '../../src/resident/server.js';
import Database from 'better-sqlite3';
import { type Db, openStore } from '../../src/store/store.js';
import { announce, announcedDir } from '../../src/session/announce.js';
import { getSession } from '../../src/session/records.js';
import { claudeBox, claudeBoxPayload, type ClaudeBox } from '../helpers/claude-box.js';
import { residentTrace } from '../helpers/resident.js';

const DIST = join(process.cwd(), 'dist', 'latch.cjs');

let seq = 0;

/**
 * The box's PATH: node's directory and the system's. Setup records the PATH's directories, and a
 * change in one is the ordinary hook's to record; the machine's PATH here includes ~/.pyenv/shims,
 * whose mtime every `bash -lc` moves (pyenv's rehash in the login profile), and concurrent tests run
 * many: the resident hook would decline call after call.
 */
const STABLE_PATH = [...new Set([dirname(process.execPath), '/usr/bin', '/bin'])].join(':');

/** A box set up as a user would (`latch setup claude` with this bundle), traced, with a short idle bound. */
function setUp(
  t: { after(fn: () => void): void },
  extra: NodeJS.ProcessEnv | ((b: ClaudeBox) => NodeJS.ProcessEnv) = {},
): ClaudeBox {
  const b = claudeBox();
  const { LATCH_RESIDENT: _, ...env } = b.env;
  const more = typeof extra === 'function' ? extra(b) : extra;
  b.env = { ...env, PATH: STABLE_PATH, LATCH_RESIDENT_TRACE: '1', LATCH_RESIDENT_IDLE_MS: '20000', ...more };
  const r = spawnSync(process.execPath, [DIST, 'setup', 'claude'], { env: b.env, cwd: b.work, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  t.after(() => {
    stopResident(b);
    b.cleanup();
  });
  return b;
}

function bash(b: ClaudeBox, command: string): Record<string, unknown> {
  return claudeBoxPayload(b, 'pre-tool-use-bash', {
    tool_input: { command, description: 'test' },
    tool_use_id: `toolu_res_${++seq}`,
  });
}

interface HookRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** Why the resident hook did not answer (LATCH_RESIDENT_TRACE), else null: it answered. */
  notAnswered: string | null;
}

function hook(
  b: ClaudeBox,
  payload: Record<string, unknown>,
  env: NodeJS.ProcessEnv = b.env,
  event = 'PreToolUse',
): HookRun {
  const r = spawnSync(process.execPath, [DIST, 'hook', 'claude', '--event', event], {
    input: JSON.stringify(payload),
    env,
    cwd: b.work,
    encoding: 'utf8',
  });
  const why = /latch: resident hook: (.*)/.exec(r.stderr)?.[1] ?? null;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, notAnswered: why };
}

function spoolOf(b: ClaudeBox, env: NodeJS.ProcessEnv = b.env): string {
  return residentSpool(DIST, 'claude', env, b.work, [])!.dir;
}

function serverPid(dir: string): number | null {
  try {
    const [pid, start] = readFileSync(join(dir, SPOOL.server), 'utf8').trim().split(' ');
    const st = procStat(Number(pid));
    return st && st.start === start && st.state !== 'Z' ? Number(pid) : null;
  } catch {
    return null;
  }
}

async function until<T>(what: string, probe: () => T | null | undefined | false, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The box's session S known, and a resident hook serving it. */
async function residentFor(b: ClaudeBox): Promise<number> {
  hook(b, claudeBoxPayload(b, 'session-start-startup'), b.env, 'SessionStart');
  const first = hook(b, bash(b, 'echo first > first.txt'));
  assert.equal(first.notAnswered, 'no resident hook', first.stderr);
  return until('a resident hook', () => serverPid(spoolOf(b)));
}

/**
 * A PreToolUse of `command` the resident hook answers, within three calls: a call it declines because
 * the registration check found something to record (a file's ctime aged into trust; on a busy machine
 * a recorded PATH directory touched by other work) is the ordinary hook's, which records it.
 */
function servedCall(b: ClaudeBox, command = 'echo soon > soon.txt'): { run: HookRun; id: string } {
  const whys: (string | null)[] = [];
  for (let i = 0; i < 3; i++) {
    const payload = bash(b, command);
    const run = hook(b, payload);
    assert.equal(run.status, 0, run.stderr);
    if (run.notAnswered === null) return { run, id: String(payload.tool_use_id) };
    whys.push(run.notAnswered);
  }
  assert.fail(`not answered in three calls: ${whys.join('; ')}`);
}

/**
 * An in-process resident call (`call`), made again, up to three times, after a decline over the
 * registration (see servedCall): an ordinary hook records what the check found in between.
 */
async function afterRegistrationSettles<T>(b: ClaudeBox, call: () => Promise<T>): Promise<T> {
  const whys: string[] = [];
  for (let i = 0; i < 3; i++) {
    try {
      return await call();
    } catch (err) {
      if (!isLatchError(err, 'E_NOT_SERVED') || !/registration check/.test(err.message)) throw err;
      whys.push(err.message);
      hook(b, bash(b, 'cat README.md'), { ...b.env, LATCH_RESIDENT: 'off' });
    }
  }
  assert.fail(`declined in three calls: ${whys.join('; ')}`);
}

function stopResident(b: ClaudeBox): void {
  const root = join(b.home, 'resident');
  if (!existsSync(root)) return;
  for (const d of readdirSync(root)) {
    const pid = serverPid(join(root, d));
    if (pid) process.kill(pid, 'SIGKILL');
  }
}

function attemptsOf(b: ClaudeBox): { id: string; state: string }[] {
  const db = openStore(b.home, { create: false });
  try {
    return db.prepare('SELECT id, state FROM attempts ORDER BY started_ns').all() as { id: string; state: string }[];
  } finally {
    db.close();
  }
}

/** A GuardContext in resident mode over `db` (kept open, as the resident hook keeps its store). */
function residentCtx(b: ClaudeBox, db: Db) {
  return {
    home: b.home,
    openDb: () => db,
    closeDb: () => undefined,
    now: () => new Date().toISOString(),
    env: b.env,
    agent: claude,
    resident: true,
  };
}

/** Every table the guard writes on a PreToolUse, and the announcement files. */
function storeState(b: ClaudeBox, db: Db): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const tab of [
    'sessions',
    'attempts',
    'compactions',
    'transitions',
    'denials',
    'checkpoints',
    'registrations',
    'registration_files',
    'registration_alarm',
    'registration_content',
  ])
    out[tab] = (db.prepare(`SELECT * FROM ${tab}`).all() as unknown[]).map((r) => JSON.stringify(r)).sort();
  const dir = announcedDir(b.home);
  out.announcements = existsSync(dir) ? readdirSync(dir).sort() : [];
  return out;
}

test('the resident hook answers a PreToolUse as the ordinary hook does, and writes its Start', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  const { run: served, id } = servedCall(b, 'echo hi > a.txt');
  const ordinary = hook(b, bash(b, 'echo hi > b.txt'), { ...b.env, LATCH_RESIDENT: 'off' });
  assert.equal(ordinary.notAnswered, null);
  assert.deepEqual([served.status, served.stdout], [ordinary.status, ordinary.stdout]);
  // The write-ahead Start of the served call is in the ledger, like the ordinary hook's.
  const ids = attemptsOf(b).map((a) => a.id);
  assert.ok(
    ids.some((a) => a.endsWith(id)),
    `served Start recorded: ${ids.join(', ')}`,
  );
  assert.ok(ids.some((a) => a.endsWith(`toolu_res_${seq}`)));
  const last = residentTrace(b.home).at(-1)!;
  assert.deepEqual([last.served, last.call], [true, id]);
  // `latch doctor` lists it.
  const doctor = spawnSync(process.execPath, [DIST, 'doctor', '--json'], { env: b.env, cwd: b.work, encoding: 'utf8' });
  const check = (JSON.parse(doctor.stdout) as { checks: { name: string; detail: string }[] }).checks.find(
    (c) => c.name === 'resident hooks',
  );
  assert.match(check?.detail ?? '', new RegExp(`^1 running \\(pid ${serverPid(spoolOf(b))}\\)`));
});

test('the hook that starts a resident hook records its pid and start time in the spool (what containment spares)', async (t) => {
  const b = setUp(t);
  const pid = await residentFor(b);
  const start = procStat(pid)!.start;
  const file = join(spoolOf(b), SPOOL.spawned);
  assert.equal(readFileSync(file, 'utf8'), `${pid} ${start}\n`, 'written by the spawning hook, one line');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual([...recordedResidents(b.home)], [`${pid}:${start}`]);
  // The resident hook's sweep of stale files keeps it, however old.
  const old = new Date(Date.now() - 3_600_000);
  utimesSync(file, old, old);
  writeFileSync(join(spoolOf(b), 'stale.res'), 'x');
  utimesSync(join(spoolOf(b), 'stale.res'), old, old);
  await until('a sweep', () => !existsSync(join(spoolOf(b), 'stale.res')));
  assert.ok(existsSync(file), 'the record is not swept');
  // Only the spawning hook's record counts: a `server` file (which the serving process writes about
  // itself) adds nothing. It names no process that runs (stopResident kills what a server file names).
  mkdirSync(join(b.home, 'resident', 'other'), { mode: 0o700 });
  writeFileSync(join(b.home, 'resident', 'other', SPOOL.server), '4194000 12345\n');
  assert.deepEqual([...recordedResidents(b.home)], [`${pid}:${start}`]);
});

test('a command that touches Latch is denied by the resident hook with the ordinary hook’s reply', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  const command = `rm -rf ${b.home}`;
  const served = hook(b, bash(b, command));
  const ordinary = hook(b, bash(b, command), { ...b.env, LATCH_RESIDENT: 'off' });
  assert.equal(served.notAnswered, null);
  const decision = (r: HookRun) =>
    (JSON.parse(r.stdout) as { hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string } })
      .hookSpecificOutput;
  assert.equal(decision(served).permissionDecision, 'deny');
  assert.deepEqual(decision(served), decision(ordinary));
});

test('a latched session is left to the ordinary hook, which denies with the checkpoint', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  // The compaction Claude Code reports (SessionStart(compact) is a sure signal), in a hook process.
  hook(b, claudeBoxPayload(b, 'session-start-compact'), b.env, 'SessionStart');
  const r = hook(b, bash(b, 'echo after > after.txt'));
  assert.match(r.notAnswered ?? '', /latched session/);
  const out = JSON.parse(r.stdout) as {
    hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string };
  };
  assert.equal(out.hookSpecificOutput.permissionDecision, 'deny');
  assert.match(out.hookSpecificOutput.permissionDecisionReason, /checkpoint/i);
  assert.equal(existsSync(join(b.work, 'after.txt')), false);
  const last = residentTrace(b.home).at(-1)!;
  assert.deepEqual([last.served, last.call], [false, `toolu_res_${seq}`]);
});

test('the guard in resident mode writes nothing before it declines: a new session, a tamper, a latched session, another event', async (t) => {
  const b = setUp(t);
  const db = openStore(b.home, { create: false });
  t.after(() => db.close());
  const ctx = residentCtx(b, db);
  const run = async (p: Record<string, unknown>) => {
    const parsed = claude.parse(JSON.stringify(p));
    assert.ok(parsed.ok && parsed.event);
    return handle(ctx, parsed.obs, parsed.event);
  };
  const notServed = async (p: Record<string, unknown>, why: RegExp) => {
    const before = storeState(b, db);
    await assert.rejects(run(p), (err) => isLatchError(err, 'E_NOT_SERVED') && why.test(err.message));
    assert.deepEqual(storeState(b, db), before);
  };
  const off = { ...b.env, LATCH_RESIDENT: 'off' };
  // A session seen for the first time.
  await notServed(bash(b, 'echo x > x.txt'), /first time/);
  // Known and mutable: answered (a Start written).
  hook(b, claudeBoxPayload(b, 'session-start-startup'), off, 'SessionStart');
  hook(b, bash(b, 'echo y > y.txt'), off);
  const d = await afterRegistrationSettles(b, () => run(bash(b, 'echo z > z.txt')));
  assert.equal(d.verdict, 'allow');
  // A tamper (the PostToolUse handler removed from settings.json): nothing recorded, no alarm; the
  // ordinary hook then sees it and latches the session.
  const settings = join(b.config, 'settings.json');
  const original = readFileSync(settings, 'utf8');
  const edited = JSON.parse(original) as { hooks: Record<string, unknown> };
  delete edited.hooks.PostToolUse;
  writeFileSync(settings, JSON.stringify(edited, null, 2));
  await notServed(bash(b, 'echo w > w.txt'), /registration check that found a change/);
  const ordinary = hook(b, bash(b, 'echo v > v.txt'), off);
  assert.match(ordinary.stdout, /"permissionDecision":"deny"/);
  assert.equal(getSession(db, 'S')!.state, 'latched');
  // Latched: declined before anything is written.
  await notServed(bash(b, 'echo u > u.txt'), /latched session/);
  // Any other event.
  await notServed(claudeBoxPayload(b, 'stop'), /turn_end/);
});

test('a compaction announced while the resident hook holds the write lock: rolled back, the ordinary hook decides', async (t) => {
  const b = setUp(t);
  const off = { ...b.env, LATCH_RESIDENT: 'off' };
  hook(b, claudeBoxPayload(b, 'session-start-startup'), off, 'SessionStart');
  hook(b, bash(b, 'echo y > y.txt'), off);
  const db = openStore(b.home, { create: false });
  t.after(() => db.close());
  // The compaction hook of the agent's own process announces while this request holds the lock
  // (ctx.now() inside the transaction is the injection point: no timing involved).
  let injected = false;
  const ctx = {
    ...residentCtx(b, db),
    now: () => {
      if (db.inTransaction && !injected) {
        injected = true;
        announce(b.home, 'S', 'post_compact', { trigger: 'auto', turnId: null });
      }
      return new Date().toISOString();
    },
  };
  const parsed = claude.parse(JSON.stringify(bash(b, 'echo x > x.txt')));
  assert.ok(parsed.ok && parsed.event);
  const { obs, event } = parsed;
  let before: Record<string, unknown> = {};
  const call = () => {
    before = storeState(b, db);
    return handle(ctx, obs, event);
  };
  await assert.rejects(afterRegistrationSettles(b, call), (err) => isLatchError(err, 'E_NOT_SERVED'));
  assert.ok(injected, 'the announcement was made under the lock');
  const after = storeState(b, db);
  assert.deepEqual({ ...after, announcements: before.announcements }, before, 'nothing else was written');
  assert.equal(getSession(db, 'S')!.state, 'mutable', 'the trip is the ordinary hook’s, not the resident hook’s');
  // The ordinary hook counts the announcement and latches.
  const r = hook(b, bash(b, 'echo w > w.txt'), off);
  assert.match(r.stdout, /"permissionDecision":"deny"/);
  assert.equal(getSession(db, 'S')!.state, 'latched');
});

/** A process that names itself the spool's resident hook and does `act` with each request. */
function impostor(dir: string, act: 'claim-and-die' | 'never-claim' | 'garbage'): ChildProcess {
  const code = `
    const fs = require('fs'), path = require('path');
    const dir = ${JSON.stringify(dir)};
    const start = fs.readFileSync('/proc/' + process.pid + '/stat', 'utf8').split(') ')[1].split(' ')[19];
    fs.writeFileSync(path.join(dir, 'server.tmp'), process.pid + ' ' + start + '\\n');
    fs.renameSync(path.join(dir, 'server.tmp'), path.join(dir, 'server'));
    process.stdout.write('ready\\n');
    const act = ${JSON.stringify(act)};
    if (act !== 'never-claim') fs.watch(dir, (ev, name) => {
      if (!name || !name.endsWith('.req')) return;
      const id = name.slice(0, -4);
      try { fs.renameSync(path.join(dir, name), path.join(dir, id + '.work')); } catch { return; }
      if (act === 'claim-and-die') process.exit(0);
      fs.writeFileSync(path.join(dir, id + '.res'), '{"stdout": 12');
    });
    setTimeout(() => {}, 60000);
  `;
  return spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
}

/** A box whose resident hook was killed and replaced by an impostor doing `act`: its spool directory. */
async function impostorBox(
  t: { after(fn: () => void): void },
  act: 'claim-and-die' | 'never-claim' | 'garbage',
): Promise<{ b: ClaudeBox; dir: string }> {
  const b = setUp(t);
  await residentFor(b);
  const dir = spoolOf(b);
  process.kill(serverPid(dir)!, 'SIGKILL');
  const p = impostor(dir, act);
  t.after(() => p.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    p.stdout!.once('data', () => resolve());
    p.once('exit', () => reject(new Error('impostor exited early')));
  });
  return { b, dir };
}

test('a resident hook that dies after claiming a call: the call is denied, never decided twice', async (t) => {
  const { b } = await impostorBox(t, 'claim-and-die');
  const r = hook(b, bash(b, 'echo x > x.txt'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /stopped while checking this call/);
  assert.equal(
    attemptsOf(b).some((a) => a.id.endsWith(`toolu_res_${seq}`)),
    false,
    'no Start: nobody decided this call',
  );
});

test('an answer the client cannot write out (its stdout read-only): a deny, never a second decision', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  servedCall(b);
  const readOnly = openSync('/dev/null', 'r');
  t.after(() => closeSync(readOnly));
  const lines: { served: boolean }[][] = [];
  for (let i = 0; i < 3; i++) {
    // A deny that goes out on stdout (an allow of Claude Code's has none to write).
    const payload = bash(b, `rm -rf ${b.home}`);
    const r = spawnSync(process.execPath, [DIST, 'hook', 'claude', '--event', 'PreToolUse'], {
      input: JSON.stringify(payload),
      env: b.env,
      cwd: b.work,
      encoding: 'utf8',
      stdio: ['pipe', readOnly, 'pipe'],
    });
    const mine = residentTrace(b.home).filter((l) => l.call === payload.tool_use_id);
    lines.push(mine);
    // Declined (the registration check; see servedCall): the ordinary hook's, not this test's case.
    if (mine.length === 1 && !mine[0]!.served) continue;
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /failed while waiting for the resident hook/);
    assert.deepEqual(
      mine.map((l) => l.served),
      [true],
      'decided once, by the resident hook',
    );
    return;
  }
  assert.fail(`not answered in three calls: ${JSON.stringify(lines)}`);
});

test('a malformed answer is a deny', async (t) => {
  const { b } = await impostorBox(t, 'garbage');
  const r = hook(b, bash(b, 'echo x > x.txt'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unreadable answer/);
});

test('a call no one claims is withdrawn, and the ordinary hook decides it', async (t) => {
  const { b, dir } = await impostorBox(t, 'never-claim');
  const r = hook(b, bash(b, 'echo x > x.txt'));
  assert.equal(r.notAnswered, 'not claimed in time');
  assert.equal(r.status, 0);
  assert.ok(
    attemptsOf(b).some((a) => a.id.endsWith(`toolu_res_${seq}`)),
    'the ordinary hook wrote the Start',
  );
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.endsWith(SPOOL.request)),
    [],
    'the request was withdrawn',
  );
});

for (const [signal, what] of [
  ['SIGKILL', 'a dead resident hook'],
  ['SIGSTOP', 'a stopped resident hook (taken for gone)'],
] as const) {
  test(`${what}: the ordinary hook decides, and another resident hook starts`, async (t) => {
    const b = setUp(t);
    const old = await residentFor(b);
    process.kill(old, signal);
    t.after(() => {
      if (procStat(old)) process.kill(old, 'SIGKILL');
    });
    if (signal === 'SIGKILL') await until('the old resident hook gone', () => serverPid(spoolOf(b)) === null);
    writeFileSync(join(spoolOf(b), SPOOL.started), '0'); // past the restart spacing
    const r = hook(b, bash(b, 'echo x > x.txt'));
    assert.equal(r.notAnswered, 'the resident hook went away');
    assert.equal(r.status, 0);
    const next = await until('another resident hook', () => {
      const pid = serverPid(spoolOf(b));
      return pid !== old && pid;
    });
    assert.notEqual(next, old);
    servedCall(b);
  });
}

test('a store removed under the resident hook: it denies as the ordinary hook does, never from the old store', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  for (const f of ['latch.db', 'latch.db-wal', 'latch.db-shm']) rmSync(join(b.home, f), { force: true });
  const served = hook(b, bash(b, 'echo x > x.txt'));
  const ordinary = hook(b, bash(b, 'echo x > x.txt'), { ...b.env, LATCH_RESIDENT: 'off' });
  assert.equal(served.notAnswered, null, 'the resident hook answered');
  const decision = (r: HookRun) =>
    (JSON.parse(r.stdout) as { hookSpecificOutput: { permissionDecision: string } }).hookSpecificOutput;
  assert.equal(decision(served).permissionDecision, 'deny');
  assert.deepEqual(decision(served), decision(ordinary));
});

test('the kept statements: the same SQL gets its statement back with the result mode reset', () => {
  const db = new Database(':memory:');
  try {
    preparedOnce(db as unknown as Db);
    const a = db.prepare('SELECT 1 AS one');
    assert.equal(a.pluck().get(), 1);
    const b = db.prepare('SELECT 1 AS one');
    assert.equal(b, a, 'prepared once');
    assert.deepEqual(b.get(), { one: 1 }, 'pluck reset');
    assert.deepEqual(db.prepare('SELECT 1 AS one').raw().get(), [1]);
    assert.deepEqual(db.prepare('SELECT 1 AS one').get(), { one: 1 }, 'raw reset');
    db.prepare('CREATE TABLE t (x)').run();
    assert.equal(db.prepare('INSERT INTO t VALUES (?)').run(1).changes, 1, 'a writer is kept as it is');
  } finally {
    db.close();
  }
});

test('a request of another identity is not served; an identity names its own spool', async (t) => {
  const b = setUp(t);
  await residentFor(b);
  const dir = spoolOf(b);
  // A hook with one more variable in its environment meets no resident hook: its own spool is empty.
  const other = { ...b.env, EXTRA: '1' };
  assert.notEqual(spoolOf(b, other), dir);
  assert.equal(hook(b, bash(b, 'echo x > x.txt'), other).notAnswered, 'no resident hook');
  // A request in this spool that carries another identity (as a colliding name would) is declined.
  writeFileSync(
    join(dir, 'forged.tmp'),
    JSON.stringify({ v: 1, identity: '{"v":1}', input: JSON.stringify(bash(b, 'true')) }),
  );
  renameSync(join(dir, 'forged.tmp'), join(dir, `forged${SPOOL.request}`));
  const answer = await until('an answer', () => {
    try {
      return readFileSync(join(dir, `forged${SPOOL.answer}`), 'utf8');
    } catch {
      return null;
    }
  });
  assert.deepEqual(JSON.parse(answer), { notServed: 'a hook of another identity' });
});

test('the resident hook leaves when Latch’s files change, when its spool goes, and when idle', async (t) => {
  // Latch's files: a copy of the bundle, so that changing it touches no other test.
  const b = setUp(t);
  const dist = join(b.base, 'dist');
  mkdirSync(dist);
  for (const f of readdirSync(join(process.cwd(), 'dist'))) {
    if (!f.endsWith('.map')) writeFileSync(join(dist, f), readFileSync(join(process.cwd(), 'dist', f)));
  }
  const copy = join(dist, 'latch.cjs');
  const env = { ...b.env, NODE_PATH: join(process.cwd(), 'node_modules') };
  const start = (e: NodeJS.ProcessEnv) => {
    const r = spawnSync(process.execPath, [copy, 'hook', 'claude', '--event', 'PreToolUse'], {
      input: JSON.stringify(bash(b, 'true')),
      env: e,
      cwd: b.work,
      encoding: 'utf8',
    });
    return /latch: resident hook: (.*)/.exec(r.stderr)?.[1] ?? null;
  };
  const spool = (e: NodeJS.ProcessEnv) => residentSpool(copy, 'claude', e, b.work, [])!.dir;
  start(env);
  const pid = await until('a resident hook of the copy', () => serverPid(spool(env)));
  const later = new Date(Date.now() + 5000);
  utimesSync(join(dist, 'slow.cjs'), later, later);
  await until(
    'the resident hook to leave after a code change',
    () => procStat(pid) === null || procStat(pid)?.state === 'Z',
  );

  // Its spool removed.
  writeFileSync(join(spool(env), SPOOL.started), '0');
  start(env);
  const pid2 = await until('another resident hook', () => serverPid(spool(env)));
  rmSync(spool(env), { recursive: true, force: true });
  await until(
    'the resident hook to leave without its spool',
    () => procStat(pid2) === null || procStat(pid2)?.state === 'Z',
  );

  // Idle.
  const idle = { ...env, LATCH_RESIDENT_IDLE_MS: '1500' };
  start(idle);
  const pid3 = await until('an idle-bound resident hook', () => serverPid(spool(idle)));
  await until(
    'the resident hook to leave when idle',
    () => procStat(pid3) === null || procStat(pid3)?.state === 'Z',
    10_000,
  );
});

test('a PATH directory whose entries changed: answered without recording it; a shim of a name Latch resolves is the ordinary hook’s, which denies', async (t) => {
  // A PATH directory of the test's own, first on the PATH setup records.
  let bin = '';
  const b = setUp(t, (box) => {
    bin = join(box.base, 'path-bin');
    mkdirSync(bin);
    return { PATH: `${bin}:${STABLE_PATH}` };
  });
  await residentFor(b);
  servedCall(b);
  const sigOf = () => {
    const db = openStore(b.home, { create: false });
    try {
      return db.prepare('SELECT sig FROM registration_files WHERE path = ?').pluck().get(bin) as string;
    } finally {
      db.close();
    }
  };
  assert.ok(sigOf(), 'setup recorded the PATH directory');
  // An entry came (a version manager's rehash does this at every login shell): answered, not recorded.
  // Each try moves the directory again: on a busy machine the resident hook may decline a call for
  // another reason, and the ordinary hook that takes it then records the directory as it is.
  const whys: string[] = [];
  for (let i = 0; ; i++) {
    const later = new Date(Date.now() + 2000 + i * 1000);
    writeFileSync(join(bin, `tool${i}`), '#!/bin/sh\n', { mode: 0o755 });
    utimesSync(bin, later, later);
    const before = sigOf();
    const run = hook(b, bash(b, 'echo p > p.txt'));
    assert.equal(run.status, 0, run.stderr);
    if (run.notAnswered === null) {
      assert.equal(sigOf(), before, 'the resident hook recorded nothing');
      break;
    }
    whys.push(run.notAnswered);
    if (i === 2) assert.fail(`not answered in three calls: ${whys.join('; ')}`);
  }
  // A `latch` on that PATH now resolves to something else: declined, and the ordinary hook denies.
  writeFileSync(join(bin, 'latch'), '#!/bin/sh\n', { mode: 0o755 });
  const shim = hook(b, bash(b, 'echo q > q.txt'));
  assert.match(shim.notAnswered ?? '', /found a change/);
  assert.match(shim.stdout, /"permissionDecision":"deny"/);
  assert.match(shim.stdout, /latch/);
  // The shim made inert without moving the directory's identity (chmod 644): the identities are those of
  // the alarm just recorded, which the ordinary hook answers from (a deny, in any other workspace too).
  // The resident hook must not answer from its own look at the PATH (found by an adversarial review).
  chmodSync(join(bin, 'latch'), 0o644);
  const db = openStore(b.home, { create: false });
  t.after(() => db.close());
  assert.throws(
    () => checkRegistration(db, { workspace: b.work, now: new Date().toISOString(), resident: true }),
    (err) => isLatchError(err, 'E_NOT_SERVED') && /last alarm/.test(err.message),
  );
  assert.equal(checkRegistration(db, { workspace: b.work, now: new Date().toISOString() }).status, 'tampered');
});

test('latch uninstall claude: its resident hooks leave and leave nothing behind; another agent’s stays', async (t) => {
  const b = setUp(t);
  const pid = await residentFor(b);
  // A stand-in for a Codex resident hook of the same home: `__serve codex` on its command line, named
  // by the `server` file of a spool directory of its own.
  const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '__serve', 'codex'], { stdio: 'ignore' });
  t.after(() => other.kill('SIGKILL'));
  const otherDir = join(b.home, 'resident', 'stand-in');
  mkdirSync(otherDir, { mode: 0o700 });
  const otherStart = await until('the stand-in', () => procStat(other.pid!)?.start);
  writeFileSync(join(otherDir, SPOOL.server), `${other.pid} ${otherStart}\n`);

  const r = spawnSync(process.execPath, [DIST, 'uninstall', 'claude', '--json'], {
    env: b.env,
    cwd: b.work,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { resident_hooks_stopped: number }).resident_hooks_stopped, 1);
  await until('the resident hook to leave', () => procStat(pid) === null || procStat(pid)?.state === 'Z');
  assert.deepEqual(readdirSync(spoolOf(b)), [SPOOL.started], 'no server file, no marker left');
  assert.ok(runs(other.pid!, otherStart), 'the other agent’s stand-in still runs');
  assert.deepEqual(readdirSync(otherDir), [SPOOL.server], 'the other agent’s was not told to leave');

  // Nothing to stop: the text says nothing of resident hooks.
  spawnSync(process.execPath, [DIST, 'setup', 'claude'], { env: b.env, cwd: b.work });
  const again = spawnSync(process.execPath, [DIST, 'uninstall', 'claude'], {
    env: b.env,
    cwd: b.work,
    encoding: 'utf8',
  });
  assert.equal(again.status, 0, again.stderr);
  assert.doesNotMatch(again.stdout, /resident/);
});

test('LATCH_RESIDENT=off: every hook runs in its own process and none is started', async (t) => {
  const b = setUp(t, { LATCH_RESIDENT: 'off' });
  hook(b, claudeBoxPayload(b, 'session-start-startup'), b.env, 'SessionStart');
  for (let i = 0; i < 2; i++) assert.equal(hook(b, bash(b, `echo ${i} > a.txt`)).status, 0);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(existsSync(join(b.home, 'resident')), false);
});

test('the resident hook leaves with its agent: the agent process exits, it leaves long before the idle bound', async (t) => {
  const b = setUp(t);
  hook(b, claudeBoxPayload(b, 'session-start-startup'), b.env, 'SessionStart');
  // A stand-in agent: node running a script where Claude Code's lives, which runs one hook and stays.
  const script = join(b.base, 'node_modules', '@anthropic-ai', 'claude-code', 'cli.js');
  mkdirSync(dirname(script), { recursive: true });
  writeFileSync(
    script,
    `const { spawnSync } = require('node:child_process');
const r = spawnSync(process.execPath, [${JSON.stringify(DIST)}, 'hook', 'claude', '--event', 'PreToolUse'], {
  input: require('node:fs').readFileSync(process.argv[2], 'utf8'), env: process.env, cwd: process.cwd(), encoding: 'utf8' });
if (r.status !== 0) process.stderr.write('hook ' + r.status + ' ' + r.stderr + '\\n');
setInterval(() => {}, 1000);
`,
  );
  // (The payload in a file: the hook's environment is part of the resident hook's identity.)
  const payloadFile = join(b.base, 'payload.json');
  writeFileSync(payloadFile, JSON.stringify(bash(b, 'echo one > one.txt')));
  const agent = spawn(process.execPath, [script, payloadFile], { cwd: b.work, env: b.env, stdio: 'inherit' });
  t.after(() => agent.kill('SIGKILL'));
  const pid = await until('a resident hook started by the agent’s hook', () => serverPid(spoolOf(b)));
  // While its agent runs, it stays (the idle bound is 20 s).
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(serverPid(spoolOf(b)), pid, 'still serving while the agent runs');
  agent.kill('SIGKILL');
  await until(
    'the resident hook to leave after its agent',
    () => procStat(pid) === null || procStat(pid)?.state === 'Z',
    6000,
  );
});
