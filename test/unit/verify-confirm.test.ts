// Who may restore authority (issue 10): `latch verify` / `latch resume` run by a process of the agent
// are refused (exit 77), whatever --yes says. Real processes and the real binary (dist/latch.cjs):
// a descendant of a fake agent (a copy of bash named `codex`), an orphan started inside an attempt
// window (the delayed-verify attack), a process in another pid namespace; a plain process of the
// test proceeds. The interactive path needs the one-time code typed on the terminal, not stdin.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verify, resume, type Confirmer } from '../../src/commands/verify.js';
import { containAfterTrip, findAgent, procSupported } from '../../src/contain/index.js';
import { nowNs } from '../../src/ledger/ledger.js';
import { openStore } from '../../src/store/store.js';
import { runCodexHook } from '../../src/hook.js';
import { assertFreshBuild, LATCH_BIN } from '../helpers/ledger.js';
import {
  appendCompaction,
  appendModelTurn,
  bash,
  payload,
  sandbox,
  type Sandbox,
  captureIo,
} from '../helpers/workspace.js';

const NODE = process.execPath;
const linux = procSupported();
const underAgent = linux && findAgent() !== null;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

function fresh(t: { after(fn: () => void): void }): Sandbox {
  const sb = sandbox();
  t.after(sb.cleanup);
  return sb;
}

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = r.stdout ? JSON.parse(r.stdout) : null;
  return { ...r, denied: parsed?.hookSpecificOutput?.permissionDecision === 'deny' };
}

/** Session S in sb.work goes through an auto-compaction (as in commands.test.ts). */
async function latchIt(sb: Sandbox, config?: string): Promise<void> {
  if (config) writeFileSync(join(sb.home, 'config.toml'), config);
  await hook(sb, payload('session-start-startup', sb));
  assert.equal((await hook(sb, bash(sb, 'echo one > one.txt'))).denied, false);
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
  assert.ok((await hook(sb, bash(sb, 'echo two > two.txt'))).denied, 'latched: writes denied');
  await hook(sb, payload('stop', sb));
}

function stateOf(sb: Sandbox): string | undefined {
  const db = openStore(sb.home, { create: false });
  try {
    return (db.prepare("SELECT state FROM sessions WHERE session_id = 'S'").get() as { state: string } | undefined)
      ?.state;
  } finally {
    db.close();
  }
}

function lastTransition(sb: Sandbox, event: string): Json {
  const db = openStore(sb.home, { create: false });
  try {
    const r = db
      .prepare("SELECT evidence_json FROM transitions WHERE session_id = 'S' AND event = ? ORDER BY id DESC LIMIT 1")
      .get(event) as { evidence_json: string } | undefined;
    return r ? JSON.parse(r.evidence_json) : null;
  } finally {
    db.close();
  }
}

function fakeCodex(sb: Sandbox): string {
  const p = join(sb.base, 'codex');
  copyFileSync('/bin/bash', p);
  chmodSync(p, 0o755);
  return p;
}

const capture = (sb: Sandbox) => captureIo(sb, { interactive: true });

/** A terminal where the "human" types back what the prompt shows (or something else). */
function terminal(answer: (prompt: string) => string): Confirmer & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    kind: 'test-tty',
    prompts,
    ask(prompt: string) {
      prompts.push(prompt);
      return answer(prompt);
    },
  };
}

const codeIn = (prompt: string): string => /Type the code ([A-Z0-9]{3}-[A-Z0-9]{3})/.exec(prompt)![1]!;

async function waitFile(f: string, ms: number): Promise<string> {
  const end = Date.now() + ms;
  while (!existsSync(f) || readFileSync(f, 'utf8').trim() === '') {
    if (Date.now() > end) throw new Error(`timed out waiting for ${f}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return readFileSync(f, 'utf8');
}

describe('latch verify / resume: only a human restores authority (real processes)', {
  skip: (!linux && 'Linux /proc only') || (underAgent && 'the test itself runs under an agent process'),
}, () => {
  test('run by a descendant of the agent process: refused (exit 77), names the agent, still latched', async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb);
    const codex = fakeCodex(sb);
    const r = spawnSync(
      codex,
      ['-c', '"$0" "$1" verify --yes --accept-changes --cwd "$2"; exit $?', NODE, LATCH_BIN, sb.work],
      { env: sb.env, encoding: 'utf8' },
    );
    assert.equal(r.status, 77, r.stdout + r.stderr);
    assert.match(r.stderr, /refused: this process may belong to a coding agent/);
    assert.match(
      r.stderr,
      new RegExp(`pid \\d+ \\(${codex.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} -c .*\\): is an agent process`),
    );
    assert.match(r.stderr, /A human must run `latch verify` from their own terminal/);
    assert.equal(stateOf(sb), 'latched');
    assert.equal(lastTransition(sb, 'verify'), null);
  });

  test('the delayed verify: an orphan started inside an attempt window runs `latch verify --yes` later: refused', async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb);
    // A live attempt of some session (any session counts): its window holds the orphan's start.
    const db = openStore(sb.home, { create: false });
    db.prepare(
      `INSERT INTO attempts (id, session_id, workspace, lane, tool_name, summary, state, started_at, started_ns, scan_gen)
       VALUES ('X/call-9', 'X', '/elsewhere', 'X', 'Bash', 'armed job', 'started', ?, ?, 0)`,
    ).run(new Date().toISOString(), nowNs().toString());
    db.close();
    const rc = join(sb.base, 'rc');
    const err = join(sb.base, 'err');
    // setsid -f: the job is reparented to PID 1 at once (nohup / double fork / python daemon alike);
    // it waits, then runs verify, as the attack does seconds after the latch.
    const job = `sleep 0.3; "$0" "$1" verify --yes --accept-changes --cwd "$2" 2> "$3"; echo $? > "$4"`;
    assert.equal(
      spawnSync('setsid', ['-f', 'sh', '-c', job, NODE, LATCH_BIN, sb.work, err, rc], { env: sb.env }).status,
      0,
    );
    assert.equal((await waitFile(rc, 20_000)).trim(), '77', readFileSync(err, 'utf8'));
    // (the window of S's own last attempt, which ended < 2 s ago, may hold it first)
    assert.match(
      readFileSync(err, 'utf8'),
      /inside the window of attempt (X\/call-9 \(session X\)|S\/\S+ \(session S\)), as an orphan: a tool call started it/,
    );
    assert.equal(stateOf(sb), 'latched');

    // The same attack through a process the containment recorded (pid + start): refused by the record.
    // And once no window holds any of its processes, a plain process of the test proceeds.
    const db2 = openStore(sb.home, { create: false });
    const old = (nowNs() - 60_000_000_000n).toString();
    db2
      .prepare("UPDATE attempts SET state = 'closed', started_ns = ?, ended_ns = ? WHERE id = 'X/call-9'")
      .run(old, old);
    db2.close();
    const ok = spawnSync(NODE, [LATCH_BIN, 'verify', '--yes', '--accept-changes', '--cwd', sb.work], {
      env: sb.env,
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.equal(stateOf(sb), 'mutable');
    const tr = lastTransition(sb, 'verify');
    assert.equal(tr.confirmed_by, '--yes');
    assert.equal(tr.confirmation.by, '--yes');
    assert.ok(tr.confirmation.ancestry.chain.length >= 2, 'the ancestry evidence is recorded');
    assert.equal(tr.confirmation.ancestry.chain[0].cmdline.includes('verify'), true);
  });

  test('a process recorded in contained_processes is refused', async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb);
    const rc = join(sb.base, 'rc');
    const err = join(sb.base, 'err');
    const go = join(sb.base, 'go');
    // A shell of the test (not an orphan, outside every window) that waits, then runs verify.
    const { spawn } = await import('node:child_process');
    const sh = spawn(
      'sh',
      [
        '-c',
        `while [ ! -e "$5" ]; do sleep 0.02; done; "$0" "$1" verify --yes --accept-changes --cwd "$2" 2> "$3"; echo $? > "$4"`,
        NODE,
        LATCH_BIN,
        sb.work,
        err,
        rc,
        go,
      ],
      {
        env: sb.env,
        stdio: 'ignore',
      },
    );
    const text = readFileSync(`/proc/${sh.pid}/stat`, 'utf8');
    const start = text.slice(text.lastIndexOf(')') + 2).split(' ')[19]!;
    const db = openStore(sb.home, { create: false });
    db.prepare(
      "INSERT INTO containments (session_id, compaction_seq, at, supported, rounds, ms, notes_json, errors_json, spared_json) VALUES ('S', 1, 'now', 1, 1, 1, '[]', '[]', '[]')",
    ).run();
    db.prepare(
      "INSERT INTO contained_processes (containment_id, session_id, compaction_seq, pid, start_ticks, start_ns, cmdline, why, action, at) VALUES (1, 'S', 1, ?, ?, '0', 'sh', 'agent_descendant', 'stop_failed: EPERM', 'now')",
    ).run(sh.pid, start);
    db.close();
    writeFileSync(go, 'x');
    assert.equal((await waitFile(rc, 20_000)).trim(), '77');
    assert.match(readFileSync(err, 'utf8'), /was contained at a latch/);
    assert.equal(stateOf(sb), 'latched');
  });

  test("another pid namespace than the agent's (a sandbox): refused", {
    skip:
      spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status !== 0 &&
      'cannot create a pid namespace here',
  }, async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb);
    // The trip's containment records the pid namespace the hook (the agent) ran in.
    const db = openStore(sb.home, { create: false });
    const c = containAfterTrip(db, 'S', 1, { orphanFilter: () => false });
    db.close();
    assert.deepEqual(c.errors, []);
    assert.ok(
      c.notes.some((n) =>
        /no agent process among the hook's ancestors: candidates recorded, nothing signalled/.test(n),
      ),
    );
    for (const mountProc of [true, false]) {
      const args = [
        '--pid',
        '--fork',
        ...(mountProc ? ['--mount-proc'] : []),
        NODE,
        LATCH_BIN,
        'verify',
        '--yes',
        '--accept-changes',
        '--cwd',
        sb.work,
      ];
      const r = spawnSync('unshare', args, { env: sb.env, encoding: 'utf8' });
      assert.equal(r.status, 77, `mount-proc ${mountProc}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /pid namespace/);
    }
    assert.equal(stateOf(sb), 'latched');
  });

  test('no terminal: `yes |` cannot confirm (the code is read from /dev/tty); exit 2, still latched', async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb);
    // setsid: a new session without a controlling terminal, like a detached job.
    const r = spawnSync(
      'setsid',
      ['-w', 'sh', '-c', 'yes | "$0" "$1" verify --accept-changes --cwd "$2"', NODE, LATCH_BIN, sb.work],
      { env: sb.env, encoding: 'utf8' },
    );
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /needs a human confirmation: run it on a terminal \(the code is read from \/dev\/tty, not stdin\)/,
    );
    assert.equal(stateOf(sb), 'latched');
  });

  test('interactive: the one-time code typed back restores; a wrong code, `y`, or no terminal does not', async (t) => {
    const sb = fresh(t);
    await latchIt(sb);
    for (const wrong of ['y', 'yes', '', 'ABC-DEF']) {
      const c = capture(sb);
      const tty = terminal(() => wrong);
      assert.equal(await verify(c.io, { acceptChanges: true, confirmer: tty }), 2, wrong);
      assert.match(tty.prompts[0]!, /Type the code [A-Z0-9]{3}-[A-Z0-9]{3} to confirm/);
      assert.match(c.err(), /Not confirmed/);
      assert.equal(stateOf(sb), 'latched');
    }
    const none = capture(sb);
    assert.equal(await verify(none.io, { acceptChanges: true, confirmer: null }), 2);
    assert.match(none.err(), /needs a human confirmation/);
    // Two prompts show two different codes.
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const c = capture(sb);
      await verify(c.io, { acceptChanges: true, confirmer: terminal((p) => (seen.add(codeIn(p)), 'no')) });
    }
    assert.ok(seen.size >= 4);
    const c = capture(sb);
    const tty = terminal((p) => ` ${codeIn(p).toLowerCase().replace('-', '')} `);
    assert.equal(await verify(c.io, { acceptChanges: true, confirmer: tty }), 0, c.out() + c.err());
    assert.equal(stateOf(sb), 'mutable');
    const tr = lastTransition(sb, 'verify');
    assert.equal(tr.confirmed_by, 'test-tty-code');
    assert.equal(tr.confirmation.ancestry.supported, true);
  });

  test("resume: refused from the agent's descendant; needs the code or --yes from a human; records the confirmation", async (t) => {
    assertFreshBuild();
    const sb = fresh(t);
    await latchIt(sb, 'policy = "pause"\n');
    assert.equal(stateOf(sb), 'paused');
    const codex = fakeCodex(sb);
    const r = spawnSync(codex, ['-c', '"$0" "$1" resume --yes --cwd "$2"; exit $?', NODE, LATCH_BIN, sb.work], {
      env: sb.env,
      encoding: 'utf8',
    });
    assert.equal(r.status, 77, r.stdout + r.stderr);
    assert.match(r.stderr, /A human must run `latch resume` from their own terminal/);
    assert.equal(stateOf(sb), 'paused');
    const c = capture(sb);
    assert.equal(await resume(c.io, { confirmer: terminal(() => 'y') }), 2);
    assert.equal(stateOf(sb), 'paused');
    const ok = spawnSync(NODE, [LATCH_BIN, 'resume', '--yes', '--cwd', sb.work], { env: sb.env, encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.equal(stateOf(sb), 'mutable');
    const tr = lastTransition(sb, 'resume');
    assert.equal(tr.confirmed_by, '--yes');
    assert.ok(tr.confirmation.ancestry.chain.length >= 2);
  });
});
