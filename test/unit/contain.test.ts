// Process containment at a trip (src/contain/index.ts), with real processes: a fake agent (a copy of
// bash named `codex`, so /proc/PID/exe says codex) starts the jobs a hostile agent would leave behind
// (a live shell loop, nohup, setsid -f, a double fork, python and perl daemons, delayed `latch
// verify` jobs), attempt rows cover their starts, and the "hook" (test/fixtures/contain/runner.ts,
// a child of the fake agent) runs containAfterTrip. The oracle is /proc: who is dead, who is alive.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { failClosed, latchHookRun } from '../../src/base/hook-command.js';
import {
  copyFileSync,
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  rmSync,
  mkdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { hookCommand } from '../../src/agents/codex/setup.js';
// The registry hands containment every agent's process facts (a fake `codex` is Codex's).
import '../../src/agents/index.js';
import {
  attemptWindows,
  contain,
  environOf,
  listForSession,
  hookCommandText,
  isAgentProcess,
  isHookInvocation,
  listCandidates,
  procSupported,
  readProc,
  bootNs,
  type ContainResult,
} from '../../src/contain/index.js';
import { isHookProcess, latchEntries } from '../../src/contain/match.js';
import { nowNs } from '../../src/ledger/ledger.js';
import { openStore } from '../../src/store/store.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RUNNER = join(ROOT, 'test', 'fixtures', 'contain', 'runner.ts');
const linux = procSupported();

function alive(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const st = text.slice(text.lastIndexOf(')') + 2).split(' ')[0];
    return st !== 'Z' && st !== 'X';
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const readPid = (f: string): number => Number(readFileSync(f, 'utf8').trim());

function killQuietly(pid: number): void {
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return; // never kill(0) / kill(-1) / PID 1
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

interface Scene {
  dir: string;
  home: string;
  env: NodeJS.ProcessEnv;
  mark: string;
  fakeCodex: string;
  cleanup(): void;
}

function scene(t: { after(fn: () => void): void }): Scene {
  const dir = mkdtempSync(join(tmpdir(), 'latch-contain-'));
  const home = join(dir, 'state');
  mkdirSync(join(dir, 'bin'));
  const fakeCodex = join(dir, 'bin', 'codex');
  copyFileSync('/bin/bash', fakeCodex); // a real executable whose /proc/PID/exe basename is `codex`
  chmodSync(fakeCodex, 0o755);
  openStore(home, { create: true }).close();
  const mark = randomUUID();
  const env = { ...process.env, LATCH_HOME: home, LATCH_TEST_MARK: mark };
  const pids: number[] = [];
  const s: Scene = {
    dir,
    home,
    env,
    mark,
    fakeCodex,
    cleanup() {
      for (const f of [
        'loop',
        'nohup',
        'setsid',
        'double',
        'python',
        'perl',
        'delayed',
        'runtime',
        'helper',
        'u1',
        'u2',
        'user',
        'unmarked',
        'hook',
        'fakehook',
        'planted',
        'symresident',
        'symwatcher',
        'symhook',
        'symwrapped',
        'prehook',
        'recwatch',
        'recwatchchild',
        'agent-code/pre.cjs.pid',
      ]) {
        const p = join(dir, f);
        if (existsSync(p)) killQuietly(readPid(p));
      }
      for (const p of pids) killQuietly(p);
      // whatever else still runs from this scene (the spared hook's node child) names its directory
      // or carries its mark
      for (const name of readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) continue;
        try {
          if (
            readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(dir) ||
            environOf(Number(name))?.get('LATCH_TEST_MARK') === mark
          )
            killQuietly(Number(name));
        } catch {
          /* gone */
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  t.after(s.cleanup);
  return s;
}

function insertAttempt(
  home: string,
  id: string,
  session: string,
  workspace: string,
  startedNs: bigint,
  endedNs: bigint | null,
): void {
  const db = openStore(home, { create: false });
  try {
    db.prepare(
      `INSERT INTO attempts (id, session_id, workspace, lane, tool_name, summary, state, started_at, started_ns, scan_gen, ended_at, ended_ns)
       VALUES (?, ?, ?, ?, 'Bash', 'test', ?, ?, ?, 0, ?, ?)`,
    ).run(
      id,
      session,
      workspace,
      session,
      endedNs ? 'closed' : 'started',
      new Date().toISOString(),
      startedNs.toString(),
      endedNs ? new Date().toISOString() : null,
      endedNs?.toString() ?? null,
    );
  } finally {
    db.close();
  }
}

/** An orphan (reparented to PID 1) that writes its pid to `file` and sleeps. */
function orphan(env: NodeJS.ProcessEnv, file: string, secs: number): void {
  const r = spawnSync('setsid', ['-f', 'sh', '-c', `echo $$ > '${file}'; exec sleep ${secs}`], {
    env,
    stdio: 'ignore',
  });
  assert.equal(r.status, 0);
}

// The fake agent's script: $1 = scene dir. Phases are driven by marker files the test creates.
const AGENT_SCRIPT = String.raw`
D=$1
sleep 500 & echo $! > "$D/helper"          # a helper the agent started with the session (like an MCP server)
touch "$D/phase1"
until [ -e "$D/arm" ]; do sleep 0.02; done
# --- inside the attempt window: what a hostile tool call leaves behind ---
sh -c 'echo $$ > "$0/loop"; while :; do sleep 0.2; done' "$D" &                    # a live shell (exec_command session)
nohup sh -c 'echo $$ > "$0/nohup"; exec sleep 301' "$D" >/dev/null 2>&1 &
setsid -f sh -c 'echo $$ > "$0/setsid"; exec sleep 302' "$D"
( ( sh -c 'echo $$ > "$0/double"; exec sleep 303' "$D" & ) & )
python3 -c 'import os,sys,time
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
open(sys.argv[1],"w").write(str(os.getpid())); time.sleep(304)' "$D/python"
perl -e 'exit if fork; open(F,">",$ARGV[0]); print F $$; close F; sleep 305' "$D/perl"
( sh -c 'echo $$ > "$0/delayed"; sleep 30; latch verify --yes --accept-changes' "$D" & )
env -u CODEX_THREAD_ID setsid -f sh -c 'echo $$ > "$0/unmarked"; exec sleep 306' "$D"   # a job that drops the mark
sh -c 'n=la; echo $$ > "$0/runtime"; sleep 31; "$n"tch verify --yes' "$D" &
# a concurrent hook invocation (spared) and one with a changed environment (not spared)
exec 3<>"$D/stdin"
sh -c "$HOOK_TEXT" <&3 & echo $! > "$D/hook"
NODE_OPTIONS=--no-deprecation sh -c "$HOOK_TEXT" <&3 & echo $! > "$D/fakehook"
# the hook's exact text, running a latch.cjs of the agent's own (not spared)
sh -c "$PLANTED_TEXT" & echo $! > "$D/planted"
# a resident hook of this Latch (spared), and one with a changed environment (in another directory,
# so that it serves a spool of its own: not spared)
setsid -f sh -c 'echo $$ > "$0/resident"; exec node "$1" __serve claude' "$D" "$ENTRY"
(cd "$D" && NODE_OPTIONS=--no-deprecation setsid -f sh -c 'echo $$ > "$0/fakeresident"; exec node "$1" __serve claude' "$D" "$ENTRY")
# Latch's shapes run through symbolic links that name the agent's own scripts now, and Latch's
# latch.cjs at the trip (the test re-points them): a resident hook, a watcher, a hook's node, and the
# node under a real fail-closed wrapper whose text names the link (issue 29.1)
setsid -f sh -c 'echo $$ > "$0/symresident"; exec node "$1" __serve codex' "$D" "$D/link/res.cjs"
setsid -f sh -c 'echo $$ > "$0/symwatcher"; exec node --max-semi-space-size=1 "$1" __watch "$0"' "$D" "$D/link/watch.cjs"
node "$D/link/hook.cjs" hook codex --event Stop <&3 & echo $! > "$D/symhook"
sh -c "$LINKED_PRE_TEXT" <&3 & echo $! > "$D/symwrapped"
# the real fail-closed PreToolUse hook (spared: its shells and its node)
sh -c "$PRE_TEXT" <&3 & echo $! > "$D/prehook"
# a process the store names as a watcher (spared by its row), and its child (a candidate)
setsid -f sh -c 'sleep 308 & echo $! > "$0/recwatchchild"; echo $$ > "$0/recwatch"; exec sleep 309' "$D"
for f in loop nohup setsid double python perl delayed runtime unmarked resident fakeresident symresident symwatcher symhook symwrapped prehook recwatch recwatchchild agent-code/res.cjs.pid agent-code/watch.cjs.pid agent-code/hook.cjs.pid agent-code/pre.cjs.pid; do until [ -s "$D/$f" ]; do sleep 0.01; done; done
touch "$D/ready"
until [ -e "$D/go" ]; do sleep 0.02; done
# --- the trip: Codex runs the hook as its child ---
node --import tsx "$RUNNER" "$LATCH_HOME" S "$WORKSPACE" "$LATCH_TEST_MARK" "$D/result.json"
touch "$D/ran"
sleep 1000
`;

describe('containment at a trip (real processes)', { skip: !linux && 'Linux /proc only' }, () => {
  test("kills the agent's jobs and the orphans of its attempts; spares helpers, unrelated processes and the hook's ancestors", async (t) => {
    const s = scene(t);
    const workspace = join(s.dir, 'work');
    // A concurrent hook of this Latch (dist/latch.cjs, one of latchEntries()), kept alive at the trip
    // by a stdin that never ends (a FIFO the fake agent holds open).
    const entry = join(ROOT, 'dist', 'latch.cjs');
    assert.ok(existsSync(entry), `${entry} is missing: run npm run build`);
    assert.equal(spawnSync('mkfifo', [join(s.dir, 'stdin')]).status, 0);
    const hookText = hookCommand('Stop', process.execPath, entry);
    // A hostile tool's look-alike: the same text with an entry the agent wrote, named latch.cjs.
    mkdirSync(join(s.dir, 'agent-code'));
    writeFileSync(join(s.dir, 'agent-code', 'latch.cjs'), 'setTimeout(() => {}, 300000);\n');
    const plantedText = hookCommand('Stop', process.execPath, join(s.dir, 'agent-code', 'latch.cjs'));
    // The agent's own scripts, each started through a symbolic link (re-pointed at Latch's entry
    // before the trip); each writes its pid beside itself.
    mkdirSync(join(s.dir, 'link'));
    const linked = ['res', 'watch', 'hook', 'pre'];
    for (const n of linked) {
      writeFileSync(
        join(s.dir, 'agent-code', `${n}.cjs`),
        "require('node:fs').writeFileSync(__filename + '.pid', String(process.pid)); setTimeout(() => {}, 300000);\n",
      );
      symlinkSync(join(s.dir, 'agent-code', `${n}.cjs`), join(s.dir, 'link', `${n}.cjs`));
    }
    const linkedPreText = hookCommandText('PreToolUse', process.execPath, join(s.dir, 'link', 'pre.cjs'));
    const preText = hookCommandText('PreToolUse', process.execPath, entry);
    const agent: ChildProcess = spawn(s.fakeCodex, ['-c', AGENT_SCRIPT, 'codex', s.dir], {
      // Codex gives every command it runs CODEX_THREAD_ID = the session's id (Agent.sessionMarks).
      env: {
        ...s.env,
        CODEX_THREAD_ID: 'S',
        RUNNER,
        WORKSPACE: workspace,
        HOOK_TEXT: hookText,
        PLANTED_TEXT: plantedText,
        LINKED_PRE_TEXT: linkedPreText,
        PRE_TEXT: preText,
        ENTRY: entry,
      },
      cwd: ROOT,
      stdio: 'ignore', // not inherited: a spared process holding the runner's pipe would keep it waiting
    });
    t.after(() => killQuietly(agent.pid!));
    await waitFor(() => existsSync(join(s.dir, 'phase1')), 10_000, 'the fake agent');
    // An unrelated orphan started before the window (the helper too).
    orphan(s.env, join(s.dir, 'u1'), 400);
    await waitFor(() => existsSync(join(s.dir, 'u1')), 5000, 'u1');
    await new Promise((r) => setTimeout(r, 120));
    const from = nowNs();
    spawnSync('touch', [join(s.dir, 'arm')]);
    // A plain child of the test, started inside the window but neither the agent's nor an orphan.
    const mine = spawn('sleep', ['402'], { stdio: 'ignore', env: s.env });
    // The user's own job, started from another shell while the agent's call runs (`setsid sleep` in
    // a terminal; issue 23.1): an orphan inside the window, without the session's mark.
    orphan(s.env, join(s.dir, 'user'), 403);
    t.after(() => killQuietly(mine.pid!));
    await waitFor(() => existsSync(join(s.dir, 'ready')), 15_000, 'the jobs');
    const to = nowNs();
    insertAttempt(s.home, 'S/call-1', 'S', workspace, from, to);
    // The real resident hook recorded as startResident records the one it spawns (its spool's
    // `spawned` file: pid and start time); the look-alikes are not.
    const resident = readPid(join(s.dir, 'resident'));
    mkdirSync(join(s.home, 'resident', 'scene'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(s.home, 'resident', 'scene', 'spawned'),
      `${resident} ${readProc(resident, bootNs())!.startTicks}\n`,
      { mode: 0o600 },
    );
    // The store names `recwatch` as a watcher (as a watcher writes its own row).
    const recwatch = readPid(join(s.dir, 'recwatch'));
    const wdb = openStore(s.home, { create: false });
    try {
      wdb
        .prepare(
          "INSERT INTO watchers (workspace, instance, pid, pid_start, state, started_at, updated_at) VALUES (?, 'i', ?, ?, 'ready', ?, ?)",
        )
        .run(
          workspace,
          recwatch,
          readProc(recwatch, bootNs())!.startTicks,
          new Date().toISOString(),
          new Date().toISOString(),
        );
    } finally {
      wdb.close();
    }
    // The attack: every link now names Latch's entry (the processes run the agent's scripts).
    for (const n of linked) {
      const l = join(s.dir, 'link', `${n}.cjs`);
      symlinkSync(entry, `${l}.new`);
      renameSync(`${l}.new`, l);
      assert.equal(realpathSync(l), realpathSync(entry));
    }
    const prehookNode = pidWhere(
      (argv, env) => env?.get('LATCH_TEST_MARK') === s.mark && argv[1] === entry && argv.at(-1) === 'PreToolUse',
    );
    assert.ok(prehookNode, "the real PreToolUse hook's node runs");
    // An attempt of another workspace does not count for this one's orphans.
    // An unrelated orphan started after the window's end + 2 s.
    await new Promise((r) => setTimeout(r, 2150));
    orphan(s.env, join(s.dir, 'u2'), 401);
    await waitFor(() => existsSync(join(s.dir, 'u2')), 5000, 'u2');

    const jobs = ['loop', 'nohup', 'setsid', 'double', 'python', 'perl', 'delayed', 'runtime'];
    const pids = Object.fromEntries(jobs.map((j) => [j, readPid(join(s.dir, j))]));
    for (const j of jobs) assert.ok(alive(pids[j]!), `${j} runs before the trip`);
    const helper = readPid(join(s.dir, 'helper'));
    const u1 = readPid(join(s.dir, 'u1'));
    const u2 = readPid(join(s.dir, 'u2'));
    // Which of them are orphans now (the oracle for the orphan class)?
    const boot = bootNs();
    // (their short-lived parents may still be exiting under load)
    for (const j of ['setsid', 'double', 'python', 'perl', 'delayed'])
      await waitFor(() => readProc(pids[j]!, boot)?.ppid === 1, 5000, `${j} to be an orphan`);

    spawnSync('touch', [join(s.dir, 'go')]);
    await waitFor(() => existsSync(join(s.dir, 'ran')), 20_000, 'the hook');
    const r = JSON.parse(readFileSync(join(s.dir, 'result.json'), 'utf8')) as ContainResult & {
      wall_ms: number;
      self: number;
    };
    console.log(
      `# containment: ${r.candidates.length} processes in ${r.ms.toFixed(1)} ms (${r.rounds} rounds; with the record ${r.wall_ms.toFixed(1)} ms)`,
    );
    for (const c of r.candidates)
      console.log(`#   ${c.action} ${c.why}${c.attempt_id ? ` ${c.attempt_id}` : ''}: ${c.cmdline.slice(0, 90)}`);
    for (const x of r.spared) console.log(`#   spared (${x.why}): ${x.pid} ${x.cmdline.slice(0, 90)}`);
    assert.deepEqual(r.errors, []);
    assert.equal(r.supported, true);
    assert.equal(r.agent?.pid, agent.pid, 'the agent is the nearest `codex` ancestor of the hook');

    await waitFor(() => jobs.every((j) => !alive(pids[j]!)), 2000, 'the jobs to die');
    for (const j of jobs) assert.equal(alive(pids[j]!), false, `${j} was killed`);
    const by = new Map(r.candidates.map((c) => [c.pid, c]));
    for (const j of ['loop', 'nohup', 'runtime']) assert.equal(by.get(pids[j]!)?.why, 'agent_descendant', j);
    for (const j of ['setsid', 'double', 'python', 'perl', 'delayed']) {
      assert.equal(by.get(pids[j]!)?.why, 'orphan_of_attempt', j);
      assert.equal(by.get(pids[j]!)?.attempt_id, 'S/call-1', j);
    }
    for (const c of r.candidates)
      assert.match(
        c.action,
        c.why === 'orphan_unmarked' ? /^listed$/ : /^(terminated|killed|gone)$/,
        `${c.pid} ${c.cmdline}`,
      );

    // Survivors: the agent and the hook's other ancestors, the helper, the unrelated processes.
    assert.ok(alive(agent.pid!), 'the agent itself is not killed');
    assert.ok(alive(process.pid));
    assert.ok(alive(helper), 'a helper the agent started outside every window survives');
    assert.ok(r.spared.some((x) => x.pid === helper));
    assert.ok(alive(u1), 'an orphan started before the window survives');
    assert.ok(alive(u2), 'an orphan started after the window survives');
    assert.ok(
      alive(mine.pid!),
      "a child of the test started during the window (not the agent's, not an orphan) survives",
    );
    assert.ok(!by.has(agent.pid!) && !by.has(r.self) && !by.has(u1) && !by.has(u2) && !by.has(helper));
    // Orphans of the window without the session's mark are listed for the human, never signalled:
    // the user's job, and a job of the agent's that dropped the mark (verify still refuses it: it is
    // an orphan recorded in contained_processes).
    for (const name of ['user', 'unmarked']) {
      const pid = readPid(join(s.dir, name));
      assert.ok(alive(pid), `${name}: an unmarked orphan of the window survives`);
      assert.equal(by.get(pid)?.why, 'orphan_unmarked', name);
      assert.equal(by.get(pid)?.action, 'listed', name);
    }
    const hook = readPid(join(s.dir, 'hook'));
    const fakehook = readPid(join(s.dir, 'fakehook'));
    assert.ok(alive(hook), 'a concurrent hook invocation survives');
    assert.ok(r.spared.some((x) => x.pid === hook && /hook invocation/.test(x.why)));
    assert.equal(alive(fakehook), false, 'a hook look-alike with another NODE_OPTIONS is killed');
    assert.equal(by.get(fakehook)?.why, 'agent_descendant');
    const planted = readPid(join(s.dir, 'planted'));
    assert.equal(alive(planted), false, 'a hook look-alike running a latch.cjs that is not Latch is killed');
    assert.equal(by.get(planted)?.why, 'agent_descendant');
    const fakeresident = readPid(join(s.dir, 'fakeresident'));
    assert.ok(alive(resident), "this Latch's resident hook (recorded by its spawner) survives another session's trip");
    assert.ok(r.spared.some((x) => x.pid === resident && /resident hook \(recorded/.test(x.why)));
    assert.equal(alive(fakeresident), false, 'a resident hook with another NODE_OPTIONS is killed');
    assert.equal(by.get(fakeresident)?.why, 'orphan_of_attempt');
    // Issue 29.1: Latch's shapes through a link re-pointed at latch.cjs are not spared.
    const symresident = readPid(join(s.dir, 'symresident'));
    assert.equal(alive(symresident), false, 'a resident-hook shape nobody recorded is killed');
    assert.equal(by.get(symresident)?.why, 'orphan_of_attempt');
    const symwatcher = readPid(join(s.dir, 'symwatcher'));
    assert.equal(alive(symwatcher), false, 'a watcher shape the store does not name is killed');
    assert.equal(by.get(symwatcher)?.why, 'orphan_of_attempt');
    const symhook = readPid(join(s.dir, 'symhook'));
    assert.equal(alive(symhook), false, "a hook's node form whose entry is a link is killed");
    assert.equal(by.get(symhook)?.why, 'agent_descendant');
    // A spared hook's descendants are candidates: the wrapper whose text names the link is a hook
    // invocation (spared), the node it started is not.
    const symwrapped = readPid(join(s.dir, 'symwrapped'));
    const symwrappedNode = readPid(join(s.dir, 'agent-code', 'pre.cjs.pid'));
    assert.ok(r.spared.some((x) => x.pid === symwrapped && /hook invocation/.test(x.why)));
    assert.equal(
      alive(symwrappedNode),
      false,
      "the node under a hook's wrapper, running the agent's script, is killed",
    );
    assert.equal(by.get(symwrappedNode)?.why, 'agent_descendant');
    // The real fail-closed hook: its shells and its node are spared, none is a candidate.
    const prehook = readPid(join(s.dir, 'prehook'));
    assert.ok(alive(prehook) && alive(prehookNode!), 'the real PreToolUse hook and its node survive');
    assert.ok(r.spared.some((x) => x.pid === prehookNode && /hook invocation/.test(x.why)));
    assert.ok(!by.has(prehook) && !by.has(prehookNode!));
    // A watcher the store names is spared; what it started is not.
    const recwatchchild = readPid(join(s.dir, 'recwatchchild'));
    assert.ok(alive(recwatch), 'a watcher the store names survives');
    assert.ok(r.spared.some((x) => x.pid === recwatch && /watcher \(its row/.test(x.why)));
    assert.equal(alive(recwatchchild), false, "a watcher's child is a candidate");
    assert.equal(by.get(recwatchchild)?.why, 'orphan_of_attempt');

    // The record.
    const db = openStore(s.home, { create: false, readonly: true });
    try {
      // After the trip nothing is left to contain (listed from outside the agent: the recorded agent).
      const after = listForSession(db, 'S', {
        orphanFilter: (p) => environOf(p.pid)?.get('LATCH_TEST_MARK') === s.mark,
        marks: ['CODEX_THREAD_ID'],
      });
      assert.equal(after.agent?.pid, agent.pid);
      // Only the unmarked orphans are left, still listed.
      assert.deepEqual(
        after.candidates.map((c) => c.why),
        ['orphan_unmarked', 'orphan_unmarked'],
      );
      const runs = db.prepare('SELECT * FROM containments').all() as {
        session_id: string;
        compaction_seq: number;
        agent_pid: number;
        supported: number;
      }[];
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.agent_pid, agent.pid);
      const rows = db.prepare('SELECT pid, why, attempt_id, action FROM contained_processes ORDER BY pid').all() as {
        pid: number;
        why: string;
        action: string;
      }[];
      for (const j of jobs)
        assert.ok(
          rows.some((x) => x.pid === pids[j]),
          `${j} recorded`,
        );
    } finally {
      db.close();
    }
  });

  test('listCandidates lists without signalling; a window that holds nothing lists nothing', async (t) => {
    const s = scene(t);
    const agent = spawn(s.fakeCodex, ['-c', 'sleep 300 & echo $! > "$0/loop"; wait; exec sleep 100', s.dir], {
      env: s.env,
      stdio: 'ignore',
    });
    t.after(() => killQuietly(agent.pid!));
    await waitFor(
      () => existsSync(join(s.dir, 'loop')) && readFileSync(join(s.dir, 'loop'), 'utf8').trim() !== '',
      5000,
      'child',
    );
    const child = readPid(join(s.dir, 'loop'));
    const st = readProc(agent.pid!, bootNs())!;
    const info = { pid: agent.pid!, start_ticks: st.startTicks, exe: s.fakeCodex, cmdline: 'codex' };
    const far = { id: 'w', session_id: 'S', from: 0n, to: nowNs() + 10_000_000_000n };
    const l = listCandidates({ windows: [far], agent: info, orphanFilter: () => false });
    assert.deepEqual(
      l.candidates.map((c) => [c.pid, c.why, c.action]),
      [[child, 'agent_descendant', 'listed']],
    );
    assert.ok(alive(child));
    // No window: the agent's direct child is a helper (spared), nothing is listed.
    const none = listCandidates({ windows: [], agent: info, orphanFilter: () => false });
    assert.deepEqual(none.candidates, []);
    assert.ok(none.spared.some((x) => x.pid === child));
    // contain() on the same input kills it, and never the agent.
    const c = contain({ windows: [far], agent: info, orphanFilter: () => false });
    assert.deepEqual(
      c.candidates.map((x) => x.pid),
      [child],
    );
    assert.match(c.candidates[0]!.action, /^(terminated|killed)$/);
    await waitFor(() => !alive(child), 2000, 'child to die');
    assert.ok(alive(agent.pid!));
  });

  test('a contained job gets to run its exit handler (a tool’s lock file is removed, as pyenv rehash removes its own)', async (t) => {
    const s = scene(t);
    const lock = join(s.dir, 'shim.lock');
    // As pyenv rehash does: take a lock file, remove it on exit (bash runs the EXIT trap on SIGTERM).
    const job = `touch '${lock}'; trap "rm -f '${lock}'" EXIT; echo $$ > "$0/loop"; sleep 300; :`;
    const agent = spawn(
      s.fakeCodex,
      ['-c', `bash -c '${job.replace(/'/g, `'\\''`)}' "$0" & wait; exec sleep 100`, s.dir],
      {
        env: s.env,
        stdio: 'ignore',
      },
    );
    t.after(() => killQuietly(agent.pid!));
    await waitFor(() => existsSync(lock) && existsSync(join(s.dir, 'loop')), 5000, 'the job');
    const child = readPid(join(s.dir, 'loop'));
    const st = readProc(agent.pid!, bootNs())!;
    const info = { pid: agent.pid!, start_ticks: st.startTicks, exe: s.fakeCodex, cmdline: 'codex' };
    const far = { id: 'w', session_id: 'S', from: 0n, to: nowNs() + 10_000_000_000n };
    const c = contain({ windows: [far], agent: info, orphanFilter: () => false });
    assert.ok(c.candidates.some((x) => x.pid === child));
    await waitFor(() => !alive(child), 2000, 'the job to end');
    assert.equal(existsSync(lock), false, 'the lock was left behind (killed outright, no exit handler ran)');
    assert.ok(alive(agent.pid!));
  });

  test('a job whose thread-group leader exited while a thread runs (state Z) is contained', {
    skip: spawnSync('cc', ['--version']).status !== 0 && 'no C compiler here',
  }, async (t) => {
    const s = scene(t);
    // The main thread calls the exit syscall; a second thread goes on appending to a file (issue 29.3).
    const src = join(s.dir, 'zl.c');
    writeFileSync(
      src,
      `#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
static const char *path;
static void *run(void *a) { (void)a; for (;;) { FILE *f = fopen(path, "a"); if (f) { fputs("x", f); fclose(f); } usleep(20000); } return 0; }
int main(int argc, char **argv) { (void)argc; path = argv[1]; pthread_t t; pthread_create(&t, 0, run, 0); usleep(50000); syscall(SYS_exit, 0); return 0; }
`,
    );
    const bin = join(s.dir, 'zl');
    const cc = spawnSync('cc', ['-O1', '-pthread', '-o', bin, src], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    const out = join(s.dir, 'zl.out');
    const agent = spawn(s.fakeCodex, ['-c', `"$0/zl" "$0/zl.out" & echo $! > "$0/loop"; wait; exec sleep 100`, s.dir], {
      env: s.env,
      stdio: 'ignore',
    });
    t.after(() => killQuietly(agent.pid!));
    await waitFor(() => existsSync(join(s.dir, 'loop')) && existsSync(out), 5000, 'the job');
    const job = readPid(join(s.dir, 'loop'));
    await waitFor(() => readProc(job, bootNs())?.state === 'Z', 5000, 'the leader to exit');
    const size = () => (existsSync(out) ? statSync(out).size : 0);
    const before = size();
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(size() > before, 'the thread writes while its leader is a zombie');
    const st = readProc(agent.pid!, bootNs())!;
    const info = { pid: agent.pid!, start_ticks: st.startTicks, exe: s.fakeCodex, cmdline: 'codex' };
    const far = { id: 'w', session_id: 'S', from: 0n, to: nowNs() + 10_000_000_000n };
    const c = contain({ windows: [far], agent: info, orphanFilter: () => false });
    assert.ok(
      c.candidates.some((x) => x.pid === job && /^(terminated|killed)$/.test(x.action)),
      JSON.stringify(c.candidates),
    );
    await new Promise((r) => setTimeout(r, 100));
    const after = size();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(size(), after, 'the thread still writes after containment');
  });

  test('never signals this process, its ancestors or PID 1, even when they are in the window', () => {
    const far = { id: 'w', session_id: 'S', from: 0n, to: nowNs() + 10_000_000_000n };
    // Every orphan of this uid would qualify; the filter keeps it to this process's own ancestry.
    const mine = new Set<number>();
    for (let p = process.pid; p > 0; ) {
      mine.add(p);
      const st = readProc(p, bootNs());
      if (!st) break;
      p = st.ppid;
    }
    const l = listCandidates({ windows: [far], agent: null, orphanFilter: (p) => mine.has(p.pid) || p.pid === 1 });
    assert.deepEqual(l.candidates, []);
  });
});

describe('attempt windows', { skip: !linux && 'Linux /proc only' }, () => {
  test('an untimed attempt (started_ns 0) opens no window; no window opens before its session was first seen', (t) => {
    const s = scene(t);
    const now = nowNs();
    insertAttempt(s.home, 'S/untimed', 'S', '/w', 0n, now);
    insertAttempt(s.home, 'S/early', 'S', '/w', now - 3_600_000_000_000n, now);
    const db = openStore(s.home, { create: false });
    try {
      const created = new Date(Number((now - 60_000_000_000n) / 1_000_000n)).toISOString();
      db.prepare(
        "INSERT INTO sessions (session_id, workspace, cwd, policy, scope, policy_json, state, created_at, updated_at) VALUES ('S', '/w', '/w', 'fail_closed', 'session', '{}', 'latched', ?, ?)",
      ).run(created, created);
      const ws = attemptWindows(db, { workspace: '/w' });
      assert.deepEqual(
        ws.map((w) => w.id),
        ['S/early'],
      );
      assert.equal(
        ws[0]!.from,
        BigInt(Date.parse(created)) * 1_000_000n - 1_000_000_000n,
        "clamped to the session's first sight",
      );
    } finally {
      db.close();
    }
  });
});

/** The Latch entries the checks below are told of (the scan takes them from latchEntries()). */
const ENTRIES = new Set(["/opt/it's/dist/latch.cjs", '/x/dist/latch.cjs']);

describe('hook invocations and agent processes', () => {
  test('the hook command text matches setup.ts and is recognised exactly; look-alikes are not', () => {
    for (const ev of [
      'SessionStart',
      'PreToolUse',
      'PreCompact',
      'PostCompact',
      'PostToolUse',
      'Stop',
      'SubagentStop',
      'Interrupt',
      'SessionEnd',
    ]) {
      const text = hookCommand(ev, '/usr/bin/node', "/opt/it's/dist/latch.cjs");
      assert.equal(hookCommandText(ev, '/usr/bin/node', "/opt/it's/dist/latch.cjs"), text);
      assert.equal(isHookInvocation('/usr/bin/dash', ['/bin/sh', '-c', text], ENTRIES), true, ev);
      assert.equal(isHookInvocation('/usr/bin/bash', ['/bin/bash', '-lc', text], ENTRIES), true, ev);
      assert.equal(isHookInvocation('/usr/bin/bash', ['/bin/bash', '-lc', `${text}; sleep 100`], ENTRIES), false, ev);
      assert.equal(isHookInvocation('/usr/bin/bash', ['/bin/bash', '-lc', `sleep 100 # ${text}`], ENTRIES), false, ev);
      assert.equal(
        isHookInvocation('/usr/bin/python3', ['/bin/sh', '-c', text], ENTRIES),
        false,
        'exe must be a shell',
      );
    }
    assert.equal(
      isHookInvocation(
        '/usr/bin/node',
        ['/usr/bin/node', '/x/dist/latch.cjs', 'hook', 'codex', '--event', 'Stop'],
        ENTRIES,
      ),
      true,
    );
    assert.equal(
      isHookInvocation('/usr/bin/node', ['/usr/bin/node', '/x/evil.js', 'hook', 'codex', '--event', 'Stop'], ENTRIES),
      false,
    );
    assert.equal(
      isHookInvocation(
        '/usr/bin/bash',
        ['bash', '-lc', "'/usr/bin/node' '/tmp/evil.js' hook codex --event Stop"],
        ENTRIES,
      ),
      false,
    );
    // The exact text or argv with a latch.cjs that is not one of Latch's entries (a tool can write one).
    const planted = hookCommand('Stop', '/usr/bin/node', '/tmp/agent/latch.cjs');
    assert.equal(isHookInvocation('/usr/bin/dash', ['/bin/sh', '-c', planted], ENTRIES), false);
    assert.equal(
      isHookInvocation(
        '/usr/bin/node',
        ['/usr/bin/node', '/tmp/agent/latch.cjs', 'hook', 'codex', '--event', 'Stop'],
        ENTRIES,
      ),
      false,
    );
    assert.equal(
      isHookInvocation(
        '/usr/bin/node',
        ['/usr/bin/node', 'dist/latch.cjs', 'hook', 'codex', '--event', 'Stop'],
        new Set(['dist/latch.cjs']),
      ),
      false,
      'a relative entry is not checked against the scanner’s own directory',
    );
  });

  test("Claude Code's hook commands (as `latch setup claude` writes them) are spared too", () => {
    const node = '/usr/bin/node';
    const entry = "/opt/it's/dist/latch.cjs";
    for (const ev of [
      'SessionStart',
      'PreToolUse',
      'PostToolUse',
      'PostToolUseFailure',
      'PreCompact',
      'PostCompact',
      'Stop',
    ]) {
      const run = latchHookRun('claude', ev, node, entry);
      const text = ev === 'PreToolUse' ? failClosed(run, 'claude', entry) : run;
      assert.equal(hookCommandText(ev, node, entry, 'claude'), text, ev);
      // Claude Code runs a handler's command as `/bin/sh -c <command>`.
      assert.equal(isHookInvocation('/usr/bin/dash', ['/bin/sh', '-c', text], ENTRIES), true, ev);
      assert.equal(isHookInvocation('/usr/bin/dash', ['/bin/sh', '-c', `${text}; touch x`], ENTRIES), false, ev);
    }
    assert.equal(
      isHookInvocation(node, [node, '/x/dist/latch.cjs', 'hook', 'claude', '--event', 'Stop'], ENTRIES),
      true,
    );
    assert.equal(
      isHookInvocation(node, [node, '/x/dist/latch.cjs', 'hook', 'Claude;rm', '--event', 'Stop'], ENTRIES),
      false,
    );
  });

  test('agent processes', () => {
    assert.equal(
      isAgentProcess('/usr/lib/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex', [
        'codex',
      ]),
      true,
    );
    assert.equal(
      isAgentProcess('/usr/bin/node', ['node', '/usr/lib/node_modules/@openai/codex/bin/codex.js', 'exec']),
      true,
    );
    assert.equal(isAgentProcess('/usr/bin/node', ['node', '/home/u/.npm/@anthropic-ai/claude-code/cli.js']), true);
    assert.equal(isAgentProcess('/home/u/.local/share/claude/versions/2.0.14', ['claude']), true);
    assert.equal(isAgentProcess('/usr/bin/node', ['node', 'server.js']), false);
    assert.equal(isAgentProcess('/x/codex-linux-sandbox', ['codex-linux-sandbox']), false);
  });

  test('other platforms: unsupported, said so, nothing thrown', () => {
    const desc = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { value: 'darwin' });
    try {
      const r = contain({ windows: [] });
      assert.equal(r.supported, false);
      assert.match(r.notes[0]!, /^unsupported: process containment needs Linux \/proc/);
      assert.deepEqual(r.candidates, []);
    } finally {
      Object.defineProperty(process, 'platform', desc);
    }
  });
});

describe('what containment spares is the executable its name says (real processes)', {
  skip: !linux && 'Linux /proc only',
}, () => {
  test('a binary copied to a file named node or sh, in the exact shape of a hook, is not spared; nor is a hook node whose entry is a link to Latch’s entry', async (t) => {
    const entry = join(ROOT, 'dist', 'latch.cjs');
    assert.ok(existsSync(entry), `${entry} is missing: run npm run build`);
    const entries = latchEntries();
    const dir = mkdtempSync(join(tmpdir(), 'latch-exe-'));
    const home = join(dir, 'state');
    openStore(home, { create: true }).close();
    const procs: ChildProcess[] = [];
    t.after(() => {
      for (const p of procs) killQuietly(p.pid!);
      rmSync(dir, { recursive: true, force: true });
    });
    // A program that ignores its arguments and waits: any binary could stand in for it.
    writeFileSync(join(dir, 'wait.c'), '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n');
    const cc = spawnSync('cc', ['-o', join(dir, 'node'), join(dir, 'wait.c')], { encoding: 'utf8' });
    if (cc.error || cc.status !== 0) {
      t.skip(`no C compiler to build the stand-in (${cc.error?.message ?? cc.stderr})`);
      return;
    }
    copyFileSync(join(dir, 'node'), join(dir, 'sh'));
    chmodSync(join(dir, 'sh'), 0o755);
    const env = { ...process.env, LATCH_HOME: home };
    const start = (cmd: string, args: string[]) => {
      const p = spawn(cmd, args, { env, cwd: dir, stdio: ['pipe', 'ignore', 'ignore'] });
      procs.push(p);
      return p.pid!;
    };
    const text = hookCommandText('PreToolUse', process.execPath, entry);
    const real = {
      shell: start('/bin/sh', ['-c', text]),
      node: start(process.execPath, [entry, 'hook', 'codex', '--event', 'Stop']),
    };
    const fake = {
      shell: start(join(dir, 'sh'), ['-c', text]),
      node: start(join(dir, 'node'), [entry, 'hook', 'codex', '--event', 'Stop']),
    };
    // Latch's own node and entry, but the entry named through a link (one the agent could re-point).
    symlinkSync(entry, join(dir, 'link.cjs'));
    const linked = start(process.execPath, [join(dir, 'link.cjs'), 'hook', 'codex', '--event', 'Stop']);
    await new Promise((r) => setTimeout(r, 300));
    // The shapes match: the names alone would have spared the stand-ins.
    for (const pid of [fake.shell, fake.node])
      assert.equal(isHookInvocation(readlinkSync(`/proc/${pid}/exe`), readArgv(pid), entries), true);
    assert.equal(isHookProcess(real.shell, entries), true, 'a hook in its shell is spared');
    assert.equal(isHookProcess(real.node, entries), true, 'a hook as its node is spared');
    assert.equal(isHookProcess(fake.shell, entries), false, 'a stand-in named sh is not');
    assert.equal(isHookProcess(fake.node, entries), false, 'a stand-in named node is not');
    assert.equal(isHookProcess(linked, entries), false, 'a hook node whose entry is a link is not');
    // A real shell /etc/shells does not list (a user's own build): spared only as the agent's $SHELL.
    const ownShell = join(dir, 'bash');
    copyFileSync(realpathSync('/bin/sh'), ownShell);
    chmodSync(ownShell, 0o755);
    const own = start(ownShell, ['-c', text]);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(isHookProcess(own, entries), false, 'an unlisted shell is not spared by its name');
    assert.equal(isHookProcess(own, entries, ownShell), true, "the agent's own $SHELL is");
  });
});

/** The one process whose argv and environment satisfy `ok` (null: none, or more than one). */
function pidWhere(ok: (argv: string[], env: Map<string, string> | null) => boolean): number | null {
  const hits: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (ok(readArgv(Number(name)), environOf(Number(name)))) hits.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return hits.length === 1 ? hits[0]! : null;
}

function readArgv(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}
