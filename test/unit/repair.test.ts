// `latch doctor --repair` (issue 23, item 7): a store corrupted on disk is reported with the fix line,
// moved aside (kept byte for byte) and replaced by a fresh store in which every session it does not
// know starts latched until a human runs `latch verify`; a session provably started after the repair
// is not; a healthy store is left alone; the agent cannot run the repair. Real stores, real hooks
// (runCodexHook with captured payloads, as hook.test.ts), the real verify path.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { join } from 'node:path';
import { doctor, type Check, REPAIR_FIX } from '../../src/commands/doctor.js';
import type { Io } from '../../src/kit/io.js';
import { verify } from '../../src/commands/verify.js';
import { findAgent, procSupported } from '../../src/contain/index.js';
import { runCodexHook } from '../../src/hook.js';
import { dbPath } from '../../src/base/paths.js';
import { inspectStore } from '../../src/store/health.js';
import { repairStore } from '../../src/store/repair.js';
import { MIGRATIONS } from '../../src/store/schema.js';
import { openSqlite, openStore, SCHEMA_VERSION } from '../../src/store/store.js';
import { bash, payload, rolloutLine, sandbox, type Sandbox } from '../helpers/workspace.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const underAgent = procSupported() && findAgent() !== null;

/** A sandbox whose hooks start no watcher and no resident hook (neither keeps the store open here). */
function fresh(t: { after(fn: () => void): void }): Sandbox {
  const sb = sandbox();
  t.after(sb.cleanup);
  sb.env.LATCH_WATCH = 'off';
  sb.env.LATCH_RESIDENT = 'off';
  return sb;
}

function capture(sb: Sandbox): { io: Io; text(): string; reset(): void } {
  let out = '';
  return {
    io: {
      out: (t) => void (out += t),
      err: (t) => void (out += t),
      env: sb.env,
      cwd: sb.work,
      interactive: false,
      ask: async () => '',
      now: () => new Date().toISOString(),
    },
    text: () => out,
    reset: () => void (out = ''),
  };
}

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = r.stdout ? (JSON.parse(r.stdout) as Json) : null;
  return {
    ...r,
    denied: parsed?.hookSpecificOutput?.permissionDecision === 'deny',
    reason: String(parsed?.hookSpecificOutput?.permissionDecisionReason ?? ''),
    notice: String(parsed?.systemMessage ?? ''),
    context: String(parsed?.hookSpecificOutput?.additionalContext ?? ''),
  };
}

/** A rollout of session `id` (its session_meta line), created now. */
function transcriptOf(sb: Sandbox, id: string): string {
  const p = join(sb.base, `rollout-${id}.jsonl`);
  writeFileSync(p, rolloutLine('session_meta', { id, session_id: id, cwd: sb.work, cli_version: '0.169.0' }));
  return p;
}

/** Overwrites `bytes` at `offset` of the store file (a disk fault, a stray write). */
function scribble(file: string, offset: number, bytes: Buffer): void {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
}

function sessionRow(sb: Sandbox, id: string): { state: string; state_reason: string | null } | undefined {
  const db = openStore(sb.home, { create: false, readonly: true });
  try {
    return db.prepare('SELECT state, state_reason FROM sessions WHERE session_id = ?').get(id) as
      | { state: string; state_reason: string | null }
      | undefined;
  } finally {
    db.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('inspectStore: what counts as corrupt', () => {
  /** A store built by the real migrations up to `upTo`, then changed by `spoil`. */
  function built(t: { after(fn: () => void): void }, spoil: (file: string) => void, upTo = SCHEMA_VERSION): string {
    const sb = sandbox({ git: false, store: false });
    t.after(sb.cleanup);
    if (upTo === SCHEMA_VERSION) openStore(sb.home, { create: true }).close();
    else {
      openStore(sb.home, { create: true }).close();
      // Rebuilt at an older version: what an older Latch left behind.
      writeFileSync(dbPath(sb.home), '');
      const db = openSqlite(dbPath(sb.home));
      for (let v = 0; v < upTo; v++) db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${upTo}`);
      db.close();
    }
    spoil(dbPath(sb.home));
    return dbPath(sb.home);
  }
  const cases: {
    name: string;
    spoil: (file: string) => void;
    upTo?: number;
    kind: string | null;
    problem?: RegExp;
  }[] = [
    { name: 'a healthy store', spoil: () => {}, kind: null },
    { name: 'an older store this Latch migrates', spoil: () => {}, upTo: SCHEMA_VERSION - 2, kind: null },
    {
      name: 'not a SQLite file (the header overwritten)',
      spoil: (f) => scribble(f, 0, Buffer.alloc(100, 'x')),
      kind: 'corrupt',
      problem: /not a database/,
    },
    {
      name: 'a page overwritten (quick_check or SQLite itself finds it)',
      spoil: (f) => scribble(f, 4096 * 2, Buffer.alloc(4096, 0xa5)),
      kind: 'corrupt',
      problem: /quick_check|malformed|corrupt/i,
    },
    {
      name: 'a schema newer than this Latch',
      spoil: (f) => {
        const db = openSqlite(f);
        db.pragma('user_version = 99');
        db.close();
      },
      kind: 'newer',
      problem: /schema version 99 is newer/,
    },
    {
      name: 'a schema it cannot migrate (a version below the tables it holds)',
      spoil: (f) => {
        const db = openSqlite(f);
        db.pragma(`user_version = ${SCHEMA_VERSION - 2}`);
        db.close();
      },
      kind: 'corrupt',
      problem: new RegExp(`schema version ${SCHEMA_VERSION - 2} cannot be migrated.*(already exists|duplicate column)`),
    },
    {
      name: 'a table missing',
      spoil: (f) => {
        const db = openSqlite(f);
        db.exec('DROP TABLE transitions');
        db.close();
      },
      kind: 'corrupt',
      problem: /lacks table transitions/,
    },
  ];
  for (const c of cases)
    test(c.name, (t) => {
      const found = inspectStore(built(t, c.spoil, c.upTo));
      if (c.kind === null) assert.equal(found.ok, true, JSON.stringify(found));
      else {
        assert.equal(found.ok, false);
        assert.equal(!found.ok && found.kind, c.kind, JSON.stringify(found));
        assert.match(!found.ok ? found.problem : '', c.problem!);
      }
    });
});

describe('latch doctor --repair', () => {
  test('a healthy store: nothing moved, said so (exit 0); no store: exit 1', async (t) => {
    const sb = fresh(t);
    await hook(sb, payload('session-start-startup', sb));
    const before = readFileSync(dbPath(sb.home));
    const c = capture(sb);
    assert.equal(await doctor(c.io, { repair: true }), 0);
    assert.match(c.text(), /is healthy \(quick_check ok, schema \d+\): nothing to repair/);
    c.reset();
    assert.equal(await doctor(c.io, { repair: true, json: true }), 0);
    const j = JSON.parse(c.text()) as Json;
    assert.equal(j.ok, true);
    assert.equal(j.repair.status, 'healthy');
    assert.deepEqual(readFileSync(dbPath(sb.home)), before);
    assert.deepEqual(
      readdirSync(sb.home).filter((n) => n.includes('corrupt') || n.includes('repair')),
      [],
    );
    assert.equal(sessionRow(sb, 'S')?.state, 'mutable');

    const none = fresh(t);
    const n = capture(none);
    const gone = { ...n.io, env: { ...none.env, LATCH_HOME: join(none.base, 'never') } };
    assert.equal(await doctor(gone, { repair: true, json: true }), 1);
    assert.equal((JSON.parse(n.text()) as Json).repair.status, 'missing');
  });

  test('a corrupt store: doctor names the fix; --repair keeps it as evidence; pre-repair sessions are latched until latch verify', {
    skip: underAgent && 'the test itself runs under an agent process (latch verify refuses it)',
  }, async (t) => {
    const sb = fresh(t);
    // Before: session S works, and session R exists (its rollout, written before the repair).
    await hook(sb, payload('session-start-startup', sb));
    assert.equal((await hook(sb, bash(sb, 'echo one > one.txt'))).denied, false);
    const rTranscript = transcriptOf(sb, 'R');
    // A fork of a session the fresh store will know (N, below), its rollout written before the repair.
    const f0 = join(sb.base, 'rollout-F0.jsonl');
    writeFileSync(f0, rolloutLine('session_meta', { id: 'F0', forked_from_id: 'N', cli_version: '0.169.0' }));

    // The disk garbles the store's first page.
    const file = dbPath(sb.home);
    scribble(file, 0, Buffer.alloc(512, 'garbage!'));
    const corrupt = readFileSync(file);
    // Fail closed, but stuck: every tracked call is denied.
    assert.equal((await hook(sb, bash(sb, 'echo two > two.txt'))).denied, true);

    const c = capture(sb);
    assert.equal(await doctor(c.io, { json: true }), 1);
    const store = (JSON.parse(c.text()) as { checks: Check[] }).checks.find((x) => x.name === 'store')!;
    assert.equal(store.status, 'fail');
    assert.equal(store.fix, REPAIR_FIX);
    assert.equal(REPAIR_FIX, 'latch doctor --repair');
    assert.match(store.detail, /file is not a database.*every tracked tool call is denied/);

    // The repair.
    c.reset();
    assert.equal(await doctor(c.io, { repair: true, json: true }), 0, c.text());
    const { repair } = JSON.parse(c.text()) as Json;
    assert.equal(repair.status, 'repaired');
    assert.equal(repair.store, file);
    assert.match(repair.problem, /not a database/);
    // The main file first; its -wal and -shm beside it when a failed open left them (whether one did
    // depends on which process closed the store last: the watcher a call started, or nobody).
    assert.equal(repair.evidence[0].from, file);
    for (const e of repair.evidence.slice(1) as { from: string; to: string }[]) {
      assert.match(e.from, /-(wal|shm|journal)$/);
      assert.equal(e.to, repair.evidence[0].to + e.from.slice(file.length));
    }
    assert.match(repair.evidence[0].to, /\/latch\.db\.corrupt-\d{8}T\d{6}\.\d{3}Z$/);
    assert.deepEqual(readFileSync(repair.evidence[0].to), corrupt, 'the evidence holds the old bytes');
    assert.deepEqual(repair.holders, []);
    const fresh0 = inspectStore(file);
    assert.ok(fresh0.ok && fresh0.repairs.length === 1 && fresh0.repairs[0]!.evidence[0]!.to === repair.evidence[0].to);
    // Run again, it moves nothing more (the fresh store is healthy).
    c.reset();
    assert.equal(await doctor(c.io, { repair: true }), 0);
    assert.match(c.text(), /nothing to repair/);
    assert.equal(readdirSync(sb.home).filter((n) => /^latch\.db\.corrupt-.*Z$/.test(n)).length, 1);
    // The store check says it was repaired, and is healthy.
    c.reset();
    await doctor(c.io, { json: true });
    const after = (JSON.parse(c.text()) as { checks: Check[] }).checks.find((x) => x.name === 'store')!;
    assert.equal(after.status, 'ok', after.detail);
    assert.match(after.detail, /repaired .*the old store is kept at .*latch\.db\.corrupt-/);

    // S, seen before the repair: its next call is denied, with the reason.
    const denied = await hook(sb, bash(sb, 'echo three > three.txt'));
    assert.equal(denied.denied, true);
    assert.match(denied.reason, /store was repaired after corruption/);
    assert.match(denied.reason, /latch verify/);
    assert.match(denied.notice, /latch verify/);
    assert.match(sessionRow(sb, 'S')?.state_reason ?? '', /^store_repaired: /);
    assert.equal(existsSync(join(sb.work, 'three.txt')), false);

    // R's first hook after the repair is a SessionStart(startup), but its rollout predates the repair:
    // not provably new, latched.
    const r = await hook(sb, payload('session-start-startup', sb, { session_id: 'R', transcript_path: rTranscript }));
    assert.match(r.context, /store was repaired after corruption/);
    assert.equal(sessionRow(sb, 'R')?.state, 'latched');

    // N starts after the repair (SessionStart(startup), its rollout created since): it works.
    await sleep(30); // past the file system's coarse clock
    const nTranscript = transcriptOf(sb, 'N');
    assert.ok(statSync(nTranscript).birthtimeMs >= Date.parse(repair.repaired_at));
    await hook(sb, payload('session-start-startup', sb, { session_id: 'N', transcript_path: nTranscript }));
    assert.equal(sessionRow(sb, 'N')?.state, 'mutable');
    const n = await hook(sb, bash(sb, 'echo four > four.txt', { session_id: 'N', transcript_path: nTranscript }));
    assert.equal(n.denied, false, n.reason);
    // Forks: one of N made since the repair inherits N's state; one whose rollout predates the repair,
    // or whose parent the fresh store does not know, is latched.
    const fork = (id: string, parent: string) => {
      const p = join(sb.base, `rollout-${id}.jsonl`);
      writeFileSync(p, rolloutLine('session_meta', { id, forked_from_id: parent, cli_version: '0.169.0' }));
      return p;
    };
    const f1 = fork('F1', 'N');
    await hook(sb, payload('session-start-fork', sb, { session_id: 'F1', transcript_path: f1 }));
    assert.equal(sessionRow(sb, 'F1')?.state, 'mutable');
    await hook(sb, payload('session-start-fork', sb, { session_id: 'F0', transcript_path: f0 }));
    assert.match(sessionRow(sb, 'F0')?.state_reason ?? '', /^store_repaired: /);
    await hook(sb, payload('session-start-fork', sb, { session_id: 'F2', transcript_path: fork('F2', 'U') }));
    assert.match(sessionRow(sb, 'F2')?.state_reason ?? '', /^store_repaired: /);
    // A Claude Code-like start whose transcript does not exist yet: new too.
    await hook(sb, payload('session-start-startup', sb, { session_id: 'M', transcript_path: join(sb.base, 'none') }));
    assert.equal(sessionRow(sb, 'M')?.state, 'mutable');

    // The agent cannot run the repair (nor any `latch doctor`): a Bash PreToolUse of the mutable N.
    const stores = () =>
      readdirSync(sb.home)
        .filter((f) => /^latch\.db(?!-wal$|-shm$)/.test(f))
        .sort();
    const before = stores();
    const ino = statSync(dbPath(sb.home)).ino;
    const agentRepair = await hook(
      sb,
      bash(sb, 'latch doctor --repair', { session_id: 'N', transcript_path: nTranscript }),
    );
    assert.equal(agentRepair.denied, true);
    assert.match(agentRepair.reason, /Latch’s own state or registration/);
    assert.deepEqual(stores(), before);
    assert.equal(statSync(dbPath(sb.home)).ino, ino);

    // verify is the way out: the evidence cannot hold (the checkpoints stayed in the old store), so
    // the human accepts the workspace as it is.
    c.reset();
    assert.equal(await verify(c.io, { session: 'S', yes: true, confirmer: null }), 65);
    assert.match(c.text(), /repaired after corruption.*latch verify --accept-changes/);
    assert.equal(sessionRow(sb, 'S')?.state, 'latched');
    c.reset();
    assert.equal(await verify(c.io, { session: 'S', yes: true, acceptChanges: true, confirmer: null }), 0, c.text());
    assert.equal(sessionRow(sb, 'S')?.state, 'mutable');
    assert.equal((await hook(sb, bash(sb, 'echo five > five.txt'))).denied, false);
    // R was not verified: still latched.
    assert.equal(
      (await hook(sb, bash(sb, 'echo six > six.txt', { session_id: 'R', transcript_path: rTranscript }))).denied,
      true,
    );
  });

  test('the fresh store is put in place once no process holds the old one open; one that still does is named', {
    skip: !procSupported() && 'Linux /proc only',
  }, async (t) => {
    const sb = fresh(t);
    await hook(sb, payload('session-start-startup', sb));
    const file = dbPath(sb.home);
    scribble(file, 0, Buffer.alloc(100, 'x'));
    /** A process of the test's own holding the store open for `seconds`, as a connection would. */
    const holder = (seconds: number) => {
      const p = spawn('/bin/sh', ['-c', `exec 3<"$0"; exec sleep ${seconds}`, file], { stdio: 'ignore' });
      t.after(() => p.kill());
      return p;
    };
    const waitOpen = async (pid: number) => {
      for (let i = 0; i < 100 && !readdirSync(`/proc/${pid}/fd`).includes('3'); i++) await sleep(20);
    };
    // Gone within the wait: the repair waits for it, and names nobody.
    const brief = holder(0.6);
    await waitOpen(brief.pid!);
    const started = Date.now();
    const r1 = repairStore(sb.home, new Date().toISOString(), { waitMs: 10_000 });
    assert.equal(r1.status, 'repaired');
    assert.ok(Date.now() - started >= 300, `waited ${Date.now() - started} ms`);
    assert.deepEqual(r1.status === 'repaired' && r1.holders, []);
    // Still there after the wait: named (the repair still completes: the store stays fail-closed).
    scribble(file, 0, Buffer.alloc(100, 'x'));
    const stuck = holder(30);
    await waitOpen(stuck.pid!);
    const r2 = repairStore(sb.home, new Date().toISOString(), { waitMs: 200 });
    assert.equal(r2.status, 'repaired');
    assert.deepEqual(r2.status === 'repaired' && r2.holders.map((h) => h.pid), [stuck.pid]);
    assert.equal(inspectStore(file).ok, true);
  });
});
