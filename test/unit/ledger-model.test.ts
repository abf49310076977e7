// Model-based test of the attempt lifecycle: random command sequences (fast-check `commands`) drive
// the real hook entry point in-process (runCodexHook with Codex-shaped payloads) and a small
// in-memory model; after every command the SQLite ledger must match the model and the invariants:
// one state per attempt moving only forward along ATTEMPT_TABLE, no closed+abandoned mix, no
// attempt for a denied call, no lost or duplicated Start, nothing live after Stop, no orphaned
// closing after a tracked hook, every file a call wrote recorded by the next observation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { immediate, openStore } from '../../src/store/store.js';
import { claimRecovery, CLOSE_REASON, getAttempt } from '../../src/ledger/ledger.js';
import { recoverOrphans } from '../../src/guard/guard.js';
import { appendCompaction, payload, rolloutLine, sandbox, type Sandbox } from '../helpers/workspace.js';
import {
  crashClose,
  deadPid,
  hookInProcess,
  ledgerProblems,
  orphans,
  readLedger,
  reachable,
  sleep,
  type Reply,
} from '../helpers/ledger.js';
import type { AttemptState } from '../../src/ledger/ledger.js';

type Sid = 'S' | 'T';
const SESSIONS: Sid[] = ['S', 'T'];

interface MAttempt {
  id: string;
  session: Sid;
  callId: string;
  turn: string;
  state: AttemptState;
  /** closing because the test crashed its closer (the recovery barrier must finish it). */
  deadCloser: boolean;
}

interface Model {
  attempts: Map<string, MAttempt>;
  /** Calls whose every PreToolUse was denied: they must never get an attempt. */
  denied: Set<string>;
  latched: Record<Sid, boolean>;
  /** Compactions appended to the transcript and not yet read by a hook of that session. */
  pendingCompaction: Record<Sid, boolean>;
  /** Tool outputs appended to the transcript and not yet read by a hook of that session. */
  pendingOutputs: Record<Sid, string[]>;
  turn: Record<Sid, number>;
  /** Files written by tools since the last observation. */
  unobserved: string[];
  next: number;
}

interface Real {
  sb: Sandbox;
  transcripts: Record<Sid, string>;
  /** The last state read for each attempt (states only move forward). */
  prev: Map<string, AttemptState>;
  dead: number;
  log: string[];
}

const turnId = (m: Model, s: Sid) => `turn-${s}-${m.turn[s]}`;

// --- what a hook does to the model, in the order handleWithDb does it -------------------------

/** A hook of session s opened the store: it reads s's new transcript lines (phase 2). */
function readsTranscript(m: Model, s: Sid): void {
  if (m.pendingCompaction[s]) m.latched[s] = true;
  m.pendingCompaction[s] = false;
  for (const id of m.pendingOutputs[s]) {
    const a = m.attempts.get(id);
    if (a && a.state === 'started') a.state = 'abandoned';
  }
  m.pendingOutputs[s] = [];
}

/** The recovery barrier: every closing attempt whose closer died is closed, with an observation. */
function barrier(m: Model): boolean {
  let any = false;
  for (const a of m.attempts.values()) {
    if (a.state === 'closing' && a.deadCloser) {
      a.state = 'closed';
      a.deadCloser = false;
      any = true;
    }
  }
  return any;
}

// --- the real side -----------------------------------------------------------------------------

function pre(r: Real, m: Model, s: Sid, callId: string, command: string, turn = turnId(m, s)): Record<string, unknown> {
  return payload('pre-tool-use-bash', r.sb, {
    session_id: s,
    turn_id: turn,
    transcript_path: r.transcripts[s],
    tool_input: { command },
    tool_use_id: callId,
  });
}

function post(r: Real, a: MAttempt, command: string): Record<string, unknown> {
  return payload('post-tool-use-bash', r.sb, {
    session_id: a.session,
    turn_id: a.turn,
    transcript_path: r.transcripts[a.session],
    tool_input: { command },
    tool_use_id: a.callId,
  });
}

function event(r: Real, m: Model, name: 'stop' | 'session-end', s: Sid): Record<string, unknown> {
  const over: Record<string, unknown> = { session_id: s, transcript_path: r.transcripts[s] };
  if (name === 'stop') over.turn_id = turnId(m, s);
  return payload(name, r.sb, over);
}

async function call(r: Real, p: Record<string, unknown>): Promise<Reply> {
  const rep = await hookInProcess(r.sb.env, p);
  assert.equal(rep.exitCode, 0, `hook exit code (${String(p.hook_event_name)})`);
  return rep;
}

/** Checks the store against the model and the invariants. `after` names what just ran. */
function check(m: Model, r: Real, after: { stop?: Sid; tracked?: boolean; observed?: boolean }): void {
  const l = readLedger(r.sb.home);
  const ctx = () =>
    `\n  commands: ${r.log.join('; ')}\n  ledger: ${JSON.stringify(l.attempts.map((a) => [a.id, a.state, a.end_reason]))}`;
  assert.deepEqual(ledgerProblems(l), [], 'row invariants' + ctx());
  // The store holds exactly the model's attempts, in the model's states.
  assert.deepEqual(
    l.attempts.map((a) => `${a.id}:${a.state}`).sort(),
    [...m.attempts.values()].map((a) => `${a.id}:${a.state}`).sort(),
    'attempts match the model' + ctx(),
  );
  for (const a of l.attempts) {
    const was = r.prev.get(a.id);
    if (was) assert.ok(reachable(was).has(a.state), `${a.id} moved ${was} -> ${a.state}` + ctx());
    r.prev.set(a.id, a.state);
  }
  for (const id of r.prev.keys()) assert.ok(l.attempt(id), `attempt ${id} disappeared` + ctx());
  for (const id of m.denied) assert.equal(l.attempt(id), undefined, `denied call ${id} has an attempt` + ctx());
  if (after.stop) {
    const live = l.attempts.filter(
      (a) => a.session_id === after.stop && (a.state === 'started' || a.state === 'closing'),
    );
    assert.deepEqual(
      live.map((a) => a.id),
      [],
      `live attempts after the session stopped` + ctx(),
    );
  }
  if (after.tracked)
    assert.deepEqual(
      orphans(l).map((a) => a.id),
      [],
      'orphaned closing after a tracked hook' + ctx(),
    );
  if (after.observed) {
    for (const f of m.unobserved)
      assert.ok(l.recorded(f) >= 1, `${f} was written by a tool but has no change record` + ctx());
    m.unobserved = [];
  }
}

type Cmd = fc.AsyncCommand<Model, Real, boolean>;

function freshCall(m: Model): string {
  return `call_${m.next++}`;
}

/** A tracked PreToolUse. write: a write command (denied while latched); else read-only (always allowed). */
class StartCmd implements Cmd {
  constructor(
    readonly s: Sid,
    readonly write: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const callId = freshCall(m);
    const id = `${this.s}/${callId}`;
    const file = `f-${callId}.txt`;
    r.log.push(this.toString() + `=${callId}`);
    const rep = await call(r, pre(r, m, this.s, callId, this.write ? `echo x > ${file}` : 'ls -la'));
    const recovered = barrier(m);
    readsTranscript(m, this.s);
    const deny = this.write && m.latched[this.s];
    assert.equal(rep.denied, deny, `${this.toString()} decision: ${rep.reason}`);
    if (deny) m.denied.add(id);
    else {
      staleTurns(m, this.s, turnId(m, this.s));
      m.attempts.set(id, { id, session: this.s, callId, turn: turnId(m, this.s), state: 'started', deadCloser: false });
    }
    check(m, r, { tracked: true, observed: recovered });
    if (!deny && this.write) {
      writeFileSync(join(r.sb.work, file), `written by ${callId}\n`); // the tool runs
      m.unobserved.push(file);
    }
  }
  toString = () => `Start(${this.s},${this.write ? 'write' : 'read'})`;
}

/** Turn lanes: an admitted Start from turn t abandons the lane's started attempts of other turns. */
function staleTurns(m: Model, s: Sid, turn: string): void {
  for (const a of m.attempts.values())
    if (a.session === s && a.state === 'started' && a.turn !== turn) a.state = 'abandoned';
}

function pick(m: Model, k: number, ok: (a: MAttempt) => boolean): MAttempt | undefined {
  const xs = [...m.attempts.values()].filter(ok);
  return xs.length === 0 ? undefined : xs[k % xs.length];
}

/** The same PreToolUse delivered again (same session, call id and turn): never a second attempt. */
class DupStartCmd implements Cmd {
  constructor(readonly k: number) {}
  check = (m: Readonly<Model>) => m.attempts.size > 0;
  async run(m: Model, r: Real): Promise<void> {
    const a = pick(m, this.k, () => true)!;
    r.log.push(`DupStart(${a.id},${a.turn})`);
    const rep = await call(r, pre(r, m, a.session, a.callId, `echo x > f-${a.callId}.txt`, a.turn));
    const recovered = barrier(m);
    readsTranscript(m, a.session);
    const deny = m.latched[a.session];
    assert.equal(rep.denied, deny, `DupStart decision: ${rep.reason}`);
    if (!deny) staleTurns(m, a.session, a.turn);
    check(m, r, { tracked: true, observed: recovered });
  }
  toString = () => `DupStart(#${this.k})`;
}

/** PostToolUse: a started attempt closes (with an observation); any other state is left alone. */
class CloseCmd implements Cmd {
  constructor(readonly k: number) {}
  check = (m: Readonly<Model>) => m.attempts.size > 0;
  async run(m: Model, r: Real): Promise<void> {
    const a = pick(m, this.k, () => true)!;
    r.log.push(`Close(${a.id}:${a.state})`);
    await call(r, post(r, a, `echo x > f-${a.callId}.txt`));
    readsTranscript(m, a.session);
    const closes = a.state === 'started';
    if (closes) a.state = 'closed';
    check(m, r, { observed: closes });
  }
  toString = () => `Close(#${this.k})`;
}

/** Stop / SessionEnd: the session's started attempts are abandoned; nothing of it stays live. */
class TurnEndCmd implements Cmd {
  constructor(
    readonly kind: 'stop' | 'session-end',
    readonly s: Sid,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    r.log.push(this.toString());
    await call(r, event(r, m, this.kind, this.s));
    const recovered = barrier(m);
    readsTranscript(m, this.s);
    for (const a of m.attempts.values()) if (a.session === this.s && a.state === 'started') a.state = 'abandoned';
    check(m, r, { stop: this.s, observed: this.kind === 'stop' || recovered });
  }
  toString = () => `${this.kind === 'stop' ? 'Stop' : 'SessionEnd'}(${this.s})`;
}

/** Codex recorded the call's output without a PostToolUse: the next hook of the session abandons it. */
class OutputCmd implements Cmd {
  constructor(readonly k: number) {}
  check = (m: Readonly<Model>) => [...m.attempts.values()].some((a) => a.state === 'started');
  async run(m: Model, r: Real): Promise<void> {
    const a = pick(m, this.k, (x) => x.state === 'started')!;
    r.log.push(`Output(${a.id})`);
    appendFileSync(
      r.transcripts[a.session],
      rolloutLine('response_item', {
        type: 'function_call_output',
        call_id: a.callId,
        output: 'apply_patch verification failed',
      }),
    );
    m.pendingOutputs[a.session].push(a.id);
    check(m, r, {});
  }
  toString = () => `Output(#${this.k})`;
}

/** A compaction in the transcript, then a write call: denied (latched), and no attempt for it. */
class CompactDenyCmd implements Cmd {
  constructor(readonly s: Sid) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const callId = freshCall(m);
    r.log.push(this.toString() + `=${callId}`);
    appendCompaction(r.transcripts[this.s]);
    m.pendingCompaction[this.s] = true;
    const rep = await call(r, pre(r, m, this.s, callId, `echo y > g-${callId}.txt`));
    const recovered = barrier(m);
    readsTranscript(m, this.s);
    assert.ok(rep.denied, 'a write after a compaction is denied');
    m.denied.add(`${this.s}/${callId}`);
    check(m, r, { tracked: true, observed: recovered });
  }
  toString = () => `CompactDeny(${this.s})`;
}

/** A call touching $LATCH_HOME: denied before the store is opened (so no barrier, no transcript read). */
class HomeDenyCmd implements Cmd {
  constructor(readonly s: Sid) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const callId = freshCall(m);
    r.log.push(this.toString() + `=${callId}`);
    const rep = await call(r, pre(r, m, this.s, callId, `cat ${r.sb.home}/latch.db`));
    assert.ok(rep.denied, 'touching $LATCH_HOME is denied');
    m.denied.add(`${this.s}/${callId}`);
    check(m, r, {});
  }
  toString = () => `HomeDeny(${this.s})`;
}

/**
 * A PostToolUse that wrote `closing` and died (the tool had written a file before). reused: its pid
 * now belongs to a live process (this one) started at another time: still a dead closer.
 */
class CrashCmd implements Cmd {
  constructor(
    readonly k: number,
    readonly reused: boolean,
  ) {}
  check = (m: Readonly<Model>) => [...m.attempts.values()].some((a) => a.state === 'started');
  async run(m: Model, r: Real): Promise<void> {
    const a = pick(m, this.k, (x) => x.state === 'started')!;
    r.log.push(`Crash(${a.id}${this.reused ? ',reused pid' : ''})`);
    const file = `crash-${a.callId}.txt`;
    writeFileSync(join(r.sb.work, file), 'written before the crashed PostToolUse\n');
    m.unobserved.push(file);
    crashClose(r.sb.home, a.id, this.reused ? process.pid : r.dead);
    a.state = 'closing';
    a.deadCloser = true;
    check(m, r, {});
  }
  toString = () => `Crash(#${this.k}${this.reused ? ',reused pid' : ''})`;
}

class NextTurnCmd implements Cmd {
  constructor(readonly s: Sid) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    r.log.push(this.toString());
    m.turn[this.s]++;
  }
  toString = () => `NextTurn(${this.s})`;
}

const sid = fc.constantFrom<Sid>('S', 'T');
const k = fc.nat({ max: 50 });
const start = fc.tuple(sid, fc.boolean()).map(([s, w]) => new StartCmd(s, w));
const commands = [
  start,
  start,
  start,
  k.map((n) => new DupStartCmd(n)),
  k.map((n) => new CloseCmd(n)),
  k.map((n) => new CloseCmd(n)),
  sid.map((s) => new TurnEndCmd('stop', s)),
  sid.map((s) => new TurnEndCmd('session-end', s)),
  k.map((n) => new OutputCmd(n)),
  sid.map((s) => new CompactDenyCmd(s)),
  sid.map((s) => new HomeDenyCmd(s)),
  fc.tuple(k, fc.boolean()).map(([n, reused]) => new CrashCmd(n, reused)),
  fc.tuple(k, fc.boolean()).map(([n, reused]) => new CrashCmd(n, reused)),
  sid.map((s) => new NextTurnCmd(s)),
];

test('attempt lifecycle: random command sequences keep the ledger equal to the model', async () => {
  const dead = await deadPid();
  const t0 = performance.now();
  let runs = 0;
  let cmdCount = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 30, size: 'max' }), async (cmds) => {
      const sb = sandbox({ git: false });
      runs++;
      try {
        const tT = join(sb.base, 'rollout-T.jsonl');
        writeFileSync(
          tT,
          rolloutLine('session_meta', { id: 'T', session_id: 'T', cwd: sb.work, cli_version: '0.169.0' }),
        );
        const model: Model = {
          attempts: new Map(),
          denied: new Set(),
          latched: { S: false, T: false },
          pendingCompaction: { S: false, T: false },
          pendingOutputs: { S: [], T: [] },
          turn: { S: 0, T: 0 },
          unobserved: [],
          next: 0,
        };
        const real: Real = { sb, transcripts: { S: sb.transcript, T: tT }, prev: new Map(), dead, log: [] };
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        cmdCount += real.log.length;
        // The end of the sessions: a tracked call (the barrier), then Stop for both. Everything is
        // terminal and every file a tool wrote is recorded.
        await new StartCmd('S', false).run(model, real);
        for (const s of SESSIONS) await new TurnEndCmd('stop', s).run(model, real);
        const l = readLedger(sb.home);
        assert.deepEqual(
          l.attempts.filter((a) => a.state === 'started' || a.state === 'closing').map((a) => a.id),
          [],
        );
      } finally {
        sb.cleanup();
      }
    }),
    { numRuns: Number(process.env.LATCH_MODEL_RUNS ?? 60) },
  );
  console.log(`# ledger model: ${runs} runs, ${cmdCount} commands, ${Math.round(performance.now() - t0)} ms`);
});

test('a crashed close is finished by the next tracked PreToolUse (claimed once) and records what the call wrote', async (t) => {
  const sb = sandbox({ git: false });
  t.after(sb.cleanup);
  const dead = await deadPid();
  const p = (callId: string, command: string) =>
    payload('pre-tool-use-bash', sb, { tool_input: { command }, tool_use_id: callId });
  assert.equal((await hookInProcess(sb.env, p('c1', 'echo a > a.txt'))).denied, false);
  await sleep(40); // past the window edge (the kernel's file clock is coarse)
  writeFileSync(join(sb.work, 'a.txt'), 'a\n');
  crashClose(sb.home, 'S/c1', dead);
  assert.equal(orphans(readLedger(sb.home)).length, 1);
  assert.equal((await hookInProcess(sb.env, p('c2', 'ls'))).denied, false);
  const l = readLedger(sb.home);
  const a = l.attempt('S/c1')!;
  assert.equal(a.state, 'closed');
  assert.equal(a.recovery_gen, 1);
  assert.equal(a.end_reason, CLOSE_REASON.recovered);
  assert.equal(a.closer_pid, process.pid, 'the recoverer (this process) claimed it');
  const rec = l.changes.filter((c) => c.path === 'a.txt');
  assert.equal(rec.length, 1);
  assert.equal(rec[0]!.observed_by, 'recovery');
  assert.equal(rec[0]!.attempt_id, 'S/c1', 'the write inside the crashed call window is attributed to it');
  assert.equal(l.attempt('S/c2')!.state, 'started', 'the Start after the barrier was admitted');
});

test('a PostToolUse with no Start on record records the attempt untimed (started_ns 0) and closes it', async (t) => {
  const sb = sandbox({ git: false });
  t.after(sb.cleanup);
  writeFileSync(join(sb.work, 'b.txt'), 'b\n');
  await hookInProcess(
    sb.env,
    payload('post-tool-use-bash', sb, { tool_input: { command: 'echo b > b.txt' }, tool_use_id: 'c9' }),
  );
  const a = readLedger(sb.home).attempt('S/c9')!;
  assert.ok(a, 'the attempt is recorded at its PostToolUse');
  assert.equal(a.started_ns, '0', 'its window cannot time changes');
  assert.match(a.summary ?? '', /\(no Start recorded\)$/);
  assert.equal(a.state, 'closed');
  assert.equal(a.end_reason, CLOSE_REASON.hook);
});

test('a change made after a crashed close began is not attributed to the crashed call', async (t) => {
  const sb = sandbox({ git: false });
  t.after(sb.cleanup);
  const dead = await deadPid();
  const p = (callId: string, command: string) =>
    payload('pre-tool-use-bash', sb, { tool_input: { command }, tool_use_id: callId });
  await hookInProcess(sb.env, p('c1', 'echo a > a.txt'));
  await sleep(40);
  writeFileSync(join(sb.work, 'a.txt'), 'a\n');
  await sleep(40);
  crashClose(sb.home, 'S/c1', dead); // its PostToolUse arrived: the call was over
  await sleep(40);
  writeFileSync(join(sb.work, 'late.txt'), 'written by someone else, after the call ended\n');
  await hookInProcess(sb.env, p('c2', 'ls'));
  const l = readLedger(sb.home);
  assert.equal(l.attempt('S/c1')!.state, 'closed');
  assert.equal(l.changes.find((c) => c.path === 'a.txt')?.attempt_id, 'S/c1');
  const late = l.changes.find((c) => c.path === 'late.txt');
  assert.ok(late, 'late.txt recorded');
  assert.notEqual(late.attempt_id, 'S/c1', `late.txt attributed to the call that had ended (${late.attribution})`);
});

test('two recoverers racing for one orphan: only one claim wins, the generation moves once', async (t) => {
  const sb = sandbox({ git: false });
  t.after(sb.cleanup);
  const dead = await deadPid();
  await hookInProcess(
    sb.env,
    payload('pre-tool-use-bash', sb, { tool_input: { command: 'echo a > a.txt' }, tool_use_id: 'c1' }),
  );
  writeFileSync(join(sb.work, 'a.txt'), 'a\n');
  crashClose(sb.home, 'S/c1', dead);
  // Recoverer B has listed the orphan; before its claim transaction, recoverer A (alive: this
  // process, in its own connection) claims it. B must then not claim it again.
  const db = openStore(sb.home, { create: false });
  t.after(() => db.close());
  let injected = false;
  const racy = new Proxy(db, {
    get(target, key) {
      if (key === 'exec') {
        return (sql: string) => {
          if (!injected && sql === 'BEGIN IMMEDIATE') {
            injected = true;
            const other = openStore(sb.home, { create: false });
            try {
              assert.ok(
                immediate(other, () =>
                  claimRecovery(other, getAttempt(other, 'S/c1')!, { pid: process.pid, start: 'unknown' }),
                ),
                'A claims it',
              );
            } finally {
              other.close();
            }
          }
          return target.exec(sql);
        };
      }
      const v = Reflect.get(target, key) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const ctx = { home: sb.home, openDb: () => racy, now: () => new Date().toISOString() };
  const won = await recoverOrphans(ctx, racy, realpathSync(sb.work));
  assert.equal(injected, true);
  assert.equal(won, 0, 'B must not take over a claim held by a live recoverer');
  const a = getAttempt(db, 'S/c1')!;
  assert.equal(a.recovery_gen, 1);
  assert.equal(a.state, 'closing', 'still owned by A');
});
