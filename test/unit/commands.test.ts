// The human-facing commands (status, verify, resume, exec) and the CLI switch, called in-process with an
// in-memory Io. Latched sessions are produced as in hook.test.ts: real payloads through runCodexHook.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  closeSync,
  mkdtempSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliMain } from '../../src/cli.js';
import { execGuarded } from '../../src/commands/exec.js';
import type { Io } from '../../src/kit/io.js';
import { status } from '../../src/commands/status.js';
import { resume, verify } from '../../src/commands/verify.js';
import { ExitError } from '../../src/base/errors.js';
import { openStore } from '../../src/store/store.js';
import { runCodexHook } from '../../src/hook.js';
import { appendCompaction, appendModelTurn, bash, payload, sandbox, type Sandbox } from '../helpers/workspace.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NODE = process.execPath;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Captured {
  io: Io;
  out(): string;
  err(): string;
  asked: string[];
}

function capture(sb: Sandbox, over: { interactive?: boolean; answers?: string[]; cwd?: string } = {}): Captured {
  let out = '';
  let err = '';
  const asked: string[] = [];
  const answers = [...(over.answers ?? [])];
  const io: Io = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    env: sb.env,
    cwd: over.cwd ?? sb.work,
    interactive: over.interactive ?? false,
    ask: async (q) => {
      asked.push(q);
      assert.ok(answers.length > 0, `unexpected question: ${q}`);
      return answers.shift()!;
    },
    now: () => new Date().toISOString(),
  };
  return { io, out: () => out, err: () => err, asked };
}

function fresh(t: { after(fn: () => void): void }, opts: Parameters<typeof sandbox>[0] = {}): Sandbox {
  const sb = sandbox(opts);
  t.after(sb.cleanup);
  return sb;
}

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = r.stdout ? JSON.parse(r.stdout) : null;
  return { ...r, denied: parsed?.hookSpecificOutput?.permissionDecision === 'deny' };
}

/** Session S in sb.work goes through an auto-compaction seen by every source; files are written first. */
async function latchIt(sb: Sandbox, files: Record<string, string> = {}, config?: string): Promise<void> {
  if (config) writeFileSync(join(sb.home, 'config.toml'), config);
  await hook(sb, payload('session-start-startup', sb));
  for (const [p, text] of Object.entries(files)) writeFileSync(join(sb.work, p), text);
  assert.equal((await hook(sb, bash(sb, 'echo one > one.txt'))).denied, false);
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'echo two > two.txt'))).denied, 'latched: writes denied');
  // The turn ends: its attempts are terminal (verification waits for that).
  await hook(sb, payload('stop', sb));
}

function stateOf(sb: Sandbox, id = 'S'): string | undefined {
  const db = openStore(sb.home, { create: false });
  try {
    return (db.prepare('SELECT state FROM sessions WHERE session_id = ?').get(id) as { state: string } | undefined)
      ?.state;
  } finally {
    db.close();
  }
}

function transitions(sb: Sandbox, event: string, id = 'S'): { from_state: string; to_state: string; evidence: Json }[] {
  const db = openStore(sb.home, { create: false });
  try {
    const rows = db
      .prepare(
        'SELECT from_state, to_state, evidence_json FROM transitions WHERE session_id = ? AND event = ? ORDER BY id',
      )
      .all(id, event) as {
      from_state: string;
      to_state: string;
      evidence_json: string;
    }[];
    return rows.map((r) => ({ from_state: r.from_state, to_state: r.to_state, evidence: JSON.parse(r.evidence_json) }));
  } finally {
    db.close();
  }
}

async function statusJson(sb: Sandbox): Promise<Json> {
  const c = capture(sb);
  assert.equal(await status(c.io, { json: true }), 0);
  return JSON.parse(c.out());
}

async function verifyJson(
  sb: Sandbox,
  opts: Parameters<typeof verify>[1] = {},
): Promise<{ code: number; report: Json; err: string }> {
  const c = capture(sb);
  const code = await verify(c.io, { ...opts, json: true });
  return { code, report: c.out() ? JSON.parse(c.out()) : null, err: c.err() };
}

const check = (report: Json, name: string) => report.sessions[0].evidence.checks.find((c: Json) => c.name === name);

describe('latch status', () => {
  test('no sessions: a sentence, and JSON with an empty list', async (t) => {
    const sb = fresh(t);
    const c = capture(sb);
    assert.equal(await status(c.io, {}), 0);
    assert.match(
      c.out(),
      /^No sessions recorded for .*work\.\n\nRegistration: no registration fingerprint is recorded/,
    );
    const j = await statusJson(sb);
    assert.deepEqual(Object.keys(j), ['workspace', 'sessions', 'registration', 'reads']);
    assert.ok(j.workspace.endsWith('work'));
    assert.deepEqual(j.sessions, []);
  });

  test('--json shape of a latched session', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const { workspace, sessions } = await statusJson(sb);
    assert.ok(workspace.endsWith('work'));
    assert.equal(sessions.length, 1);
    const s = sessions[0];
    assert.equal(s.session_id, 'S');
    assert.equal(s.state, 'latched');
    assert.equal(s.may_mutate, false);
    assert.equal(s.policy, 'fail_closed');
    assert.equal(s.scope, 'session');
    assert.equal(typeof s.reason, 'string');
    assert.ok(s.reason.length > 0);
    assert.equal(s.compactions, 1);
    assert.ok(s.denials >= 1);
    assert.equal(s.checkpoints.length, 1);
    const cp = s.checkpoints[0];
    assert.match(cp.id, /^cp_/);
    assert.equal(cp.trigger, 'auto');
    assert.deepEqual(new Set(cp.observed_via), new Set(['pre_compact', 'transcript', 'post_compact', 'session_start']));
    assert.ok(!Number.isNaN(Date.parse(cp.created_at)));
    assert.match(cp.tree.sha256, /^[0-9a-f]{64}$/);
    assert.equal(typeof cp.tree.files, 'number');
    assert.ok(cp.tree.files >= 1);
    assert.match(cp.git.head, /^[0-9a-f]{40}$/);
    assert.equal(cp.git.branch, 'main');
    assert.equal(cp.transcript.path, sb.transcript);
  });

  test('human output names the state and the next step', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const c = capture(sb);
    assert.equal(await status(c.io, {}), 0);
    assert.match(c.out(), /session S: latched \(mutation blocked; policy fail_closed/);
    assert.match(c.out(), /checkpoint cp_\S+: compaction #1 \(auto\)/);
    assert.match(c.out(), /next: a human runs `latch verify`/);
  });

  test('--session: a known id from anywhere; an unknown id is exit 2', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const elsewhere = capture(sb, { cwd: sb.base });
    assert.equal(await status(elsewhere.io, { session: 'S', json: true }), 0);
    assert.equal(JSON.parse(elsewhere.out()).sessions[0].session_id, 'S');

    const c = capture(sb);
    await assert.rejects(
      status(c.io, { session: 'nope' }),
      (e: unknown) => e instanceof ExitError && e.exitCode === 2 && /no session nope/.test(e.message),
    );
    const cli = capture(sb);
    assert.equal(await cliMain(['status', '--session', 'nope'], cli.io), 2);
    assert.match(cli.err(), /latch status: no session nope/);
  });
});

describe('latch verify', () => {
  test('nothing latched: exit 0', async (t) => {
    const sb = fresh(t);
    await hook(sb, bash(sb, 'true'));
    const c = capture(sb);
    assert.equal(await verify(c.io, {}), 0);
    assert.match(c.out(), /Nothing to verify/);
    assert.deepEqual((await verifyJson(sb)).report.sessions, []);
  });

  test('unchanged tree, no --yes, not interactive: exit 2, still latched, no prompt', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const c = capture(sb);
    assert.equal(await verify(c.io, { confirmer: null }), 2);
    assert.match(c.err(), /needs a human confirmation/);
    assert.deepEqual(c.asked, []);
    assert.match(c.out(), /\[ok\] tree: workspace tree unchanged/);
    assert.equal(stateOf(sb), 'latched');
    assert.deepEqual(transitions(sb, 'verify'), []);
  });

  test('interactive, answer "n" (or empty): exit 2, still latched', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    // The confirmation is a one-time code read from the terminal: "y", nothing, or a wrong code do not restore.
    for (const a of ['n', '', 'y', 'maybe', 'ABC-123']) {
      const c = capture(sb);
      const asked: string[] = [];
      assert.equal(await verify(c.io, { confirmer: { kind: 'tty', ask: (q) => (asked.push(q), a) } }), 2, a);
      assert.equal(asked.length, 1);
      assert.match(asked[0]!, /Restore mutation authority for 1 session\(s\)/);
      assert.match(asked[0]!, /Type the code \S+ to confirm/);
      assert.match(c.err(), /Not confirmed/);
      assert.equal(stateOf(sb), 'latched');
    }
  });

  test('interactive, answer "y": exit 0, mutable, a `verify` transition with the checks and confirmed_by tty; writes allowed again', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    appendModelTurn(sb.transcript); // appending to the transcript is fine
    const c = capture(sb);
    const typed = (q: string) => ` ${/Type the code (\S+) to confirm/.exec(q)![1]!.toLowerCase()} `;
    assert.equal(await verify(c.io, { confirmer: { kind: 'tty', ask: typed } }), 0, c.out() + c.err());
    assert.match(c.out(), /Restored: session S/);
    assert.equal(stateOf(sb), 'mutable');
    const [tr, ...more] = transitions(sb, 'verify');
    assert.equal(more.length, 0);
    assert.equal(tr!.from_state, 'latched');
    assert.equal(tr!.to_state, 'mutable');
    assert.equal(tr!.evidence.confirmed_by, 'tty-code');
    assert.equal(tr!.evidence.accepted_changes, false);
    assert.deepEqual(
      tr!.evidence.checks.map((x: Json) => [x.name, x.ok]),
      [
        ['checkpoint', true],
        ['tree', true],
        ['git', true],
        ['transcript', true],
        ['attempts', true],
      ],
    );
    assert.match(tr!.evidence.baseline.id, /^cp_/);
    assert.equal((await hook(sb, bash(sb, 'echo three > three.txt'))).denied, false);
    const again = capture(sb);
    assert.equal(await verify(again.io, {}), 0);
    assert.match(again.out(), /Nothing to verify/);
  });

  test('a changed workspace: exit 65 listing added/modified/removed while latched, even with --yes; nothing recorded', async (t) => {
    const sb = fresh(t);
    await latchIt(sb, { 'keep.txt': 'keep\n', 'gone.txt': 'bye\n', 'edit.txt': 'v1\n' });
    writeFileSync(join(sb.work, 'edit.txt'), 'v2\n');
    unlinkSync(join(sb.work, 'gone.txt'));
    writeFileSync(join(sb.work, 'new.txt'), 'hello\n');
    const c = capture(sb);
    assert.equal(await verify(c.io, { yes: true }), 65);
    assert.match(c.out(), /\[FAIL\] tree: workspace tree changed since checkpoint cp_\S+: 3 path\(s\)/);
    // git diff --stat's form; edit.txt and gone.txt were never committed, so their lines at the
    // checkpoint cannot be counted (their sizes are shown).
    assert.match(c.out(), /changes since the checkpoint \(3 path\(s\)\):/);
    assert.match(c.out(), /\n {4}new\.txt {2}\| 1 \+ +added; outside\n/);
    assert.match(
      c.out(),
      /\n {4}edit\.txt \| \? 3 -> 3 bytes +modified; outside; lines not counted: its content at the baseline is not in git\n/,
    );
    assert.match(c.out(), /\n {4}gone\.txt \| \? 4 -> 0 bytes +removed; outside; lines not counted/);
    assert.match(c.out(), /3 files changed, 1 insertion\(\+\), 0 deletions\(-\) \(lines counted in 1 of them\)/);
    assert.doesNotMatch(c.out(), /keep\.txt/);
    assert.match(c.out(), /--accept-changes/);
    assert.equal(stateOf(sb), 'latched');
    assert.deepEqual(transitions(sb, 'verify'), []);

    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.equal(report.restored, false);
    assert.equal(report.sessions[0].restored, false);
    assert.equal(report.sessions[0].evidence.holds, false);
    assert.deepEqual(
      report.sessions[0].evidence.changes.map((x: Json) => [x.change, x.path, x.while_latched]),
      [
        ['modified', 'edit.txt', true],
        ['removed', 'gone.txt', true],
        ['added', 'new.txt', true],
      ],
    );
  });

  test('--accept-changes --yes: exit 0, mutable, evidence records accepted_changes and the changes', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    writeFileSync(join(sb.work, 'new.txt'), 'hello\n');
    const c = capture(sb);
    assert.equal(await cliMain(['verify', '--accept-changes', '--yes'], c.io), 0, c.out() + c.err());
    assert.match(c.out(), /Restored: session S \(differences accepted; confirmed\)/);
    assert.equal(stateOf(sb), 'mutable');
    const [tr] = transitions(sb, 'verify');
    assert.equal(tr!.evidence.accepted_changes, true);
    assert.equal(tr!.evidence.confirmed_by, '--yes');
    assert.deepEqual(
      tr!.evidence.changes.map((x: Json) => [x.change, x.path]),
      [['added', 'new.txt']],
    );
    assert.equal(tr!.evidence.checks.find((x: Json) => x.name === 'tree').ok, false);
  });

  test('--accept-changes without --yes and no terminal: still needs confirmation (exit 2)', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    writeFileSync(join(sb.work, 'new.txt'), 'hello\n');
    const c = capture(sb);
    assert.equal(await verify(c.io, { acceptChanges: true, confirmer: null }), 2);
    assert.equal(stateOf(sb), 'latched');
    const tty = capture(sb);
    const asked: string[] = [];
    assert.equal(
      await verify(tty.io, { acceptChanges: true, confirmer: { kind: 'tty', ask: (q) => (asked.push(q), 'n') } }),
      2,
    );
    assert.match(asked[0]!, /accepting the listed differences/);
    assert.equal(stateOf(sb), 'latched');
  });

  test('git HEAD moved (a commit by hand, tree unchanged): the git check fails, exit 65', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    execFileSync(
      'git',
      ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '--allow-empty', '-m', 'sneaky'],
      { cwd: sb.work },
    );
    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.equal(check(report, 'git').ok, false);
    assert.match(check(report, 'git').detail, /git moved/);
    assert.equal(check(report, 'tree').ok, true);
    assert.equal(stateOf(sb), 'latched');
  });

  test('git branch switched to the same commit: the git check fails', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    execFileSync('git', ['checkout', '-q', '-b', 'other'], { cwd: sb.work });
    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.equal(check(report, 'git').ok, false);
  });

  test('transcript rewritten within its recorded prefix (same file, same size): the transcript check fails', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const before = readFileSync(sb.transcript);
    const fd = openSync(sb.transcript, 'r+');
    try {
      writeSync(fd, Buffer.from(before[2] === 0x58 ? 'Y' : 'X'), 0, 1, 2);
    } finally {
      closeSync(fd);
    }
    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.equal(check(report, 'transcript').ok, false);
    assert.match(check(report, 'transcript').detail, /rewritten within its first \d+ bytes/);
    assert.equal(stateOf(sb), 'latched');
  });

  test('transcript replaced by an identical copy (new inode): the transcript check fails', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const copy = sb.transcript + '.new';
    writeFileSync(copy, readFileSync(sb.transcript));
    renameSync(copy, sb.transcript);
    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.match(check(report, 'transcript').detail, /replaced/);
  });

  test('transcript truncated or deleted: the transcript check fails', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const text = readFileSync(sb.transcript);
    writeFileSync(sb.transcript, text.subarray(0, 10)); // same inode, shorter
    let r = await verifyJson(sb, { yes: true });
    assert.equal(r.code, 65);
    assert.match(check(r.report, 'transcript').detail, /shrank/);
    rmSync(sb.transcript);
    r = await verifyJson(sb, { yes: true });
    assert.equal(r.code, 65);
    assert.match(check(r.report, 'transcript').detail, /no longer exists/);
  });

  test('verify restores a paused session too', async (t) => {
    const sb = fresh(t);
    await latchIt(sb, {}, 'policy = "pause"\n');
    assert.equal(stateOf(sb), 'paused');
    const c = capture(sb);
    assert.equal(await verify(c.io, { yes: true }), 0, c.out() + c.err());
    assert.equal(stateOf(sb), 'mutable');
  });
});

describe('latch resume', () => {
  test('paused: exit 0, mutable, a resume transition', async (t) => {
    const sb = fresh(t);
    await latchIt(sb, {}, 'policy = "pause"\n');
    assert.equal(stateOf(sb), 'paused');
    const c = capture(sb);
    assert.equal(await cliMain(['resume', '--yes'], c.io), 0, c.err());
    assert.match(c.out(), /Resumed session S/);
    assert.equal(stateOf(sb), 'mutable');
    assert.deepEqual(
      transitions(sb, 'resume').map((x) => [x.from_state, x.to_state]),
      [['paused', 'mutable']],
    );
    assert.equal((await hook(sb, bash(sb, 'touch after'))).denied, false);
  });

  test('latched: refused (exit 1, names `latch verify`), still latched', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const c = capture(sb);
    const code = await cliMain(['resume', '--yes'], c.io);
    assert.notEqual(code, 0);
    assert.equal(code, 1);
    assert.match(c.err(), /latch verify/);
    assert.equal(stateOf(sb), 'latched');
    assert.deepEqual(transitions(sb, 'resume'), []);
    await assert.rejects(resume(capture(sb).io, { session: 'S' }), /latch verify/);
  });

  test('nothing held: exit 0', async (t) => {
    const sb = fresh(t);
    const c = capture(sb);
    assert.equal(await resume(c.io, {}), 0);
    assert.match(c.out(), /Nothing to resume/);
  });
});

describe('latch exec', () => {
  const marker = (sb: Sandbox) => join(sb.base, 'ran-marker');
  const touchCmd = (sb: Sandbox) => [NODE, '-e', `require('fs').writeFileSync(${JSON.stringify(marker(sb))}, 'x')`];

  test('nothing latched: runs the command and returns its exit code', async (t) => {
    const sb = fresh(t);
    await hook(sb, bash(sb, 'true'));
    const c = capture(sb);
    assert.equal(await execGuarded(c.io, { command: [NODE, '-e', 'process.exit(7)'] }), 7);
    assert.equal(await execGuarded(c.io, { command: touchCmd(sb) }), 0);
    assert.ok(existsSync(marker(sb)));
    assert.equal(await cliMain(['exec', '--', NODE, '-e', 'process.exit(7)'], c.io), 7);
  });

  test('a latched session in the workspace: 73 and the command does not run', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    const c = capture(sb);
    assert.equal(await execGuarded(c.io, { command: touchCmd(sb) }), 73);
    assert.ok(!existsSync(marker(sb)), 'the command did not run');
    assert.match(
      c.err(),
      /not running .*the workspace has a latched session: S \(latched\)\. Run `latch verify` first/,
    );
    // From a subdirectory of the workspace, and with --cwd from elsewhere.
    mkdirSync(join(sb.work, 'src', 'deep'), { recursive: true });
    const sub = capture(sb, { cwd: join(sb.work, 'src', 'deep') });
    assert.equal(await cliMain(['exec', '--', ...touchCmd(sb)], sub.io), 73);
    const elsewhere = capture(sb, { cwd: sb.base });
    assert.equal(await cliMain(['exec', '--cwd', sb.work, '--', ...touchCmd(sb)], elsewhere.io), 73);
    assert.ok(!existsSync(marker(sb)));
    // Another directory is not this workspace.
    const other = mkdtempSync(join(tmpdir(), 'latch-exec-other-'));
    t.after(() => rmSync(other, { recursive: true, force: true, maxRetries: 5 }));
    assert.equal(await execGuarded(capture(sb, { cwd: other }).io, { command: touchCmd(sb) }), 0);
    assert.ok(existsSync(marker(sb)));
  });

  test('a paused session blocks too', async (t) => {
    const sb = fresh(t);
    await latchIt(sb, {}, 'policy = "pause"\n');
    const c = capture(sb);
    assert.equal(await execGuarded(c.io, { command: touchCmd(sb) }), 73);
    assert.ok(!existsSync(marker(sb)));
  });

  test('killed by a signal: 128 + n; not found: 127; no command: usage (2)', async (t) => {
    const sb = fresh(t);
    const c = capture(sb);
    assert.equal(await execGuarded(c.io, { command: [NODE, '-e', "process.kill(process.pid, 'SIGTERM')"] }), 128 + 15);
    assert.equal(await execGuarded(c.io, { command: [NODE, '-e', "process.kill(process.pid, 'SIGKILL')"] }), 128 + 9);
    assert.equal(await execGuarded(c.io, { command: [join(sb.base, 'no-such-binary')] }), 127);
    assert.match(c.err(), /cannot run/);
    await assert.rejects(
      execGuarded(c.io, { command: [] }),
      (e: unknown) => e instanceof ExitError && e.exitCode === 2,
    );
    const cli = capture(sb);
    assert.equal(await cliMain(['exec'], cli.io), 2);
    assert.match(cli.err(), /usage: latch exec/);
  });
});

describe('cliMain', () => {
  const neverCreated = join(tmpdir(), `latch-never-created-${process.pid}`);
  const io = () => capture({ env: { ...process.env, LATCH_HOME: neverCreated }, work: tmpdir() } as unknown as Sandbox);

  test('--help, -h, help and no arguments print the usage of every command', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], []]) {
      const c = io();
      assert.equal(await cliMain(argv, c.io), 0);
      for (const name of ['setup codex', 'uninstall codex', 'doctor', 'status', 'verify', 'resume', 'exec', 'demo']) {
        assert.ok(c.out().includes(`latch ${name}`), `${argv.join(' ')}: ${name}`);
      }
      assert.equal(c.err(), '');
    }
  });

  test('unknown command: exit 2, message and help on stderr', async () => {
    const c = io();
    assert.equal(await cliMain(['frobnicate'], c.io), 2);
    assert.match(c.err(), /unknown command `frobnicate`/);
    assert.match(c.err(), /Usage:/);
    assert.equal(c.out(), '');
  });

  test('unknown option, missing value, stray positional: exit 2 with the usage', async () => {
    for (const argv of [
      ['status', '--bogus'],
      ['verify', '--session'],
      ['status', 'extra'],
      ['setup', 'codex', '--nope'],
    ]) {
      const c = io();
      assert.equal(await cliMain(argv, c.io), 2, argv.join(' '));
      assert.match(c.err(), new RegExp(`latch ${argv[0]}: .*\\nusage: latch ${argv[0]}`), argv.join(' '));
    }
    const c = io();
    assert.equal(await cliMain(['setup', 'cursor'], c.io), 2);
    assert.match(c.err(), /usage: latch setup codex .*\| latch setup claude/);
  });

  test('`latch status --help` prints its usage and runs nothing', async () => {
    const c = io();
    assert.equal(await cliMain(['status', '--help'], c.io), 0);
    assert.match(c.out(), /^usage: latch status \[--cwd DIR\] \[--session ID\] \[--json\]\n/);
    assert.ok(!existsSync(neverCreated), 'no store opened');
    const v = io();
    assert.equal(await cliMain(['verify', '-h'], v.io), 0);
    assert.match(v.out(), /usage: latch verify/);
  });

  test('--version, -V, version', async () => {
    for (const argv of [['--version'], ['-V'], ['version']]) {
      const c = io();
      assert.equal(await cliMain(argv, c.io), 0);
      assert.match(c.out(), /^\d+\.\d+\.\d+(-[\w.]+)?\n$/);
    }
  });

  test('the built binary: a reader that went away (`latch … | head`) costs no stack trace; the exit code stays the command’s', async () => {
    const bin = join(ROOT, 'bin', 'latch.cjs');
    const tmp = mkdtempSync(join(tmpdir(), 'latch-bin-'));
    // stdout's read end closed before Latch writes (a Node start takes tens of ms): every write is EPIPE.
    const closedReader = (args: string[]) =>
      new Promise<{ status: number | null; stderr: string }>((done) => {
        const c = spawn(NODE, [bin, ...args], {
          env: { ...process.env, LATCH_HOME: join(tmp, 'state') },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        c.stdout!.destroy();
        let stderr = '';
        c.stderr!.on('data', (d: Buffer) => (stderr += d));
        c.on('close', (status) => done({ status, stderr }));
      });
    try {
      const help = await closedReader(['--help']);
      assert.deepEqual(help, { status: 0, stderr: '' });
      writeFileSync(join(tmp, 'not-a-transcript.jsonl'), '{"no":');
      const doctor = await closedReader(['doctor', join(tmp, 'not-a-transcript.jsonl'), '--json']);
      assert.doesNotMatch(doctor.stderr, /EPIPE|at /);
      const plain = spawnSync(NODE, [bin, 'doctor', join(tmp, 'not-a-transcript.jsonl'), '--json'], {
        env: { ...process.env, LATCH_HOME: join(tmp, 'state') },
      });
      assert.notEqual(plain.status, 0);
      assert.equal(doctor.status, plain.status);
    } finally {
      rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
    }
  });

  test('the built binary: --version is the package version; exec passes the exit code through', () => {
    const bin = join(ROOT, 'bin', 'latch.cjs');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const tmp = mkdtempSync(join(tmpdir(), 'latch-bin-'));
    try {
      const env = { ...process.env, LATCH_HOME: join(tmp, 'state') };
      const v = spawnSync(NODE, [bin, '--version'], { encoding: 'utf8', env });
      assert.equal(v.status, 0);
      assert.equal(v.stdout, `${pkg.version}\n`);
      const e = spawnSync(NODE, [bin, 'exec', '--', NODE, '-e', 'process.exit(7)'], {
        encoding: 'utf8',
        env,
        cwd: tmp,
      });
      assert.equal(e.status, 7, e.stderr);
      const u = spawnSync(NODE, [bin, 'nope'], { encoding: 'utf8', env });
      assert.equal(u.status, 2);
    } finally {
      rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
    }
  });
});

test('read commands do not create a store: status and log answer that nothing is recorded', async () => {
  const sb = sandbox({ store: false });
  try {
    const c = capture(sb);
    assert.equal(await status(c.io, {}), 0);
    assert.match(c.out(), /No Latch state at .* yet/);
    assert.equal(existsSync(join(sb.home, 'latch.db')), false);
  } finally {
    sb.cleanup();
  }
});
