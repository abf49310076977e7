// Atomic containment (issue 29.3): where the agent is in a cgroup of Latch's own, a job that forks its
// successor and exits, for ever (its processes orphaned at once, so no /proc scan by ancestry follows
// it), is contained; the agent, a recorded resident hook and a process of the user's are not touched.
// Each scene runs in its own pid namespace (`unshare --pid --fork --mount-proc`, a reaping PID 1), so
// nothing it starts or signals can reach the machine's other processes. The oracle: /proc inside the
// namespace (who still runs) and the job's file (does it still grow).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cgroup2Mount,
  cgroupOf,
  empty,
  enroll,
  mayMakeRoom,
  removeGroup,
  setFrozen,
  systemdManaged,
} from '../../src/contain/cgroup.js';
import { bootNs, procSupported, readProc } from '../../src/contain/proc.js';
import { checkContainment } from '../../src/commands/doctor.js';

// PID 1 of the namespace: runs the scene and reaps every orphan (the job's hops), leaving with it.
const INIT =
  'my $pid = fork; if (!$pid) { exec @ARGV or die } while ((my $w = wait) != -1) { exit($? >> 8) if $w == $pid }';

interface SceneReport {
  group: string | null;
  agentCgroup: string | null;
  enrolled: { dir?: string; none?: string };
  notes: string[];
  errors: string[];
  whys: string[];
  hoppersLeft: number;
  grewAfter: number;
  hopsBefore: number;
  agentAlive: boolean;
  agentState: string | null;
  frozen: string | null;
  /** Cgroup directories the scene made (a decoy), innermost first: removed after it. */
  made?: string[];
  residentAlive: boolean;
  userAlive: boolean;
  error?: string;
}

function canRunUnshare(): string | null {
  if (!procSupported()) return 'needs Linux /proc';
  const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { encoding: 'utf8' });
  if (probe.status !== 0) return `needs unshare --pid (${(probe.stderr || String(probe.error)).trim()})`;
  if (spawnSync('perl', ['-e', '1']).status !== 0) return 'needs perl';
  return null;
}

function canRun(): string | null {
  if (!procSupported()) return 'needs Linux /proc';
  if (!cgroup2Mount()) return 'needs a cgroup v2 hierarchy';
  const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { encoding: 'utf8' });
  if (probe.status !== 0) return `needs unshare --pid (${(probe.stderr || String(probe.error)).trim()})`;
  if (spawnSync('perl', ['-e', '1']).status !== 0) return 'needs perl';
  return null;
}
const skip = canRun();

type SceneMode = 'group' | 'scan' | 'moved' | 'decoy' | 'decoy-search' | 'leader';

function scene(mode: SceneMode, leader?: string): SceneReport {
  const dir = mkdtempSync(join(tmpdir(), 'latch-scene-'));
  try {
    const r = spawnSync(
      'unshare',
      [
        '--pid',
        '--fork',
        '--mount-proc',
        'perl',
        '-e',
        INIT,
        process.execPath,
        '--import',
        'tsx',
        'test/helpers/contain-scene.ts',
        JSON.stringify({ mode, dir, leader }),
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    const line = r.stdout.trim().split('\n').pop() ?? '';
    assert.ok(line.startsWith('{'), `the scene printed no report (exit ${r.status}): ${r.stdout}${r.stderr}`);
    const report = JSON.parse(line) as SceneReport;
    if (report.group) {
      // The namespace's processes end with its PID 1; the group empties a moment later.
      for (let i = 0; i < 100 && !empty(report.group); i++) spawnSync('sleep', ['0.02']);
      removeGroup(report.group);
    }
    for (const d of report.made ?? []) {
      for (let i = 0; i < 100 && existsSync(d); i++) {
        try {
          rmdirSync(d);
        } catch {
          spawnSync('sleep', ['0.02']);
        }
      }
    }
    assert.equal(report.error, undefined, report.error);
    return report;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('atomic containment in the agent’s cgroup', { skip: skip ?? false }, () => {
  test('a job that forks its successor and exits, for ever, is contained; the agent, a recorded resident hook and the user’s process are not', () => {
    const r = scene('group');
    assert.ok(r.enrolled.dir, `the agent was not put into a cgroup: ${r.enrolled.none}`);
    assert.ok(r.hopsBefore > 0, 'the job never ran');
    assert.deepEqual(r.errors, []);
    assert.ok(r.whys.includes('agent_cgroup'), `the job's orphans were not found by their cgroup: ${r.whys}`);
    assert.equal(r.hoppersLeft, 0, `the job still runs: ${JSON.stringify(r)}`);
    assert.equal(r.grewAfter, 0, 'the job still wrote after containment');
    // The agent itself: alive, thawed, not stopped.
    assert.ok(r.agentAlive);
    assert.notEqual(r.agentState, 'T');
    assert.equal(r.frozen, '0', "the agent's cgroup was left frozen");
    assert.ok(r.residentAlive, 'a recorded resident hook (in the group, orphaned) was killed');
    assert.ok(r.userAlive, "the user's own process was killed");
  });

  test('an agent moved out of its group (by a job of the same user) still has its group frozen and its job contained', () => {
    const r = scene('moved');
    assert.ok(r.enrolled.dir, `the agent was not put into a cgroup: ${r.enrolled.none}`);
    assert.ok(!r.agentCgroup?.endsWith('/agent'), `the scene did not move the agent: ${r.agentCgroup}`);
    assert.equal(r.group, r.enrolled.dir, 'the group was not found beside the cgroup the agent is in now');
    assert.equal(r.hoppersLeft, 0, `the job still runs: ${JSON.stringify(r)}`);
    assert.equal(r.grewAfter, 0, 'the job still wrote after containment');
    assert.ok(r.agentAlive && r.residentAlive && r.userAlive, 'containment harmed what it must not');
  });

  test('a decoy: the agent moved beside an empty directory of its group’s name; the group its hook recorded is frozen, not the decoy', () => {
    const r = scene('decoy');
    assert.ok(r.enrolled.dir, `the agent was not put into a cgroup: ${r.enrolled.none}`);
    assert.ok(r.agentCgroup?.endsWith('/decoy/in'), `the scene did not move the agent: ${r.agentCgroup}`);
    assert.equal(r.group, r.enrolled.dir, 'the decoy was taken for the group');
    assert.ok(r.whys.includes('agent_cgroup'), `the job's orphans were not found by their cgroup: ${r.whys}`);
    assert.equal(r.hoppersLeft, 0, `the job still runs: ${JSON.stringify(r)}`);
    assert.equal(r.grewAfter, 0, 'the job still wrote after containment');
    assert.ok(r.agentAlive && r.residentAlive && r.userAlive, 'containment harmed what it must not');
  });

  test('the decoy, looked up by name alone (the control): the decoy is what the search finds', () => {
    const r = scene('decoy-search');
    assert.ok(r.enrolled.dir, `the agent was not put into a cgroup: ${r.enrolled.none}`);
    assert.notEqual(r.group, r.enrolled.dir);
    assert.match(r.group ?? '', /\/decoy\/latch-\d+-\d+$/);
    assert.ok(r.agentAlive && r.residentAlive && r.userAlive, 'containment harmed what it must not');
  });

  test('without the cgroup, scanning /proc alone (the control): what it leaves is reported, not asserted', (t) => {
    // The same scene with the job's mark and an open window: the stop, rescan and kill loop can catch
    // a hop only by luck. Not asserted (luck is not an oracle); the numbers show in the test's output.
    const r = scene('scan');
    t.diagnostic(`scan alone: ${r.hoppersLeft} hopper(s) left, ${r.grewAfter} bytes written after containment`);
    assert.ok(r.agentAlive && r.residentAlive && r.userAlive, 'the control harmed what it must not');
  });
});

// Attack 3 of issue 29: a thread-group leader that exits while a second thread runs shows state Z (and
// an empty cmdline) in /proc; a scan that skipped Z, or a signal path that took Z for dead, let the
// thread write on. Scanned by /proc alone (no cgroup), in the scene's own pid namespace.
const LEADER_C = `#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
static const char *path;
static void *run(void *a) { (void)a; for (;;) { FILE *f = fopen(path, "a"); if (f) { fputs("x", f); fclose(f); } usleep(5000); } return 0; }
int main(int argc, char **argv) { (void)argc; path = argv[1]; pthread_t t; pthread_create(&t, 0, run, 0); usleep(20000); syscall(SYS_exit, 0); return 0; }
`;

describe('a job whose thread-group leader exited while a thread runs', {
  skip: canRunUnshare() ?? (spawnSync('cc', ['--version']).status !== 0 ? 'no C compiler here' : null) ?? false,
}, () => {
  test('is contained by the /proc scan (its leader in state Z): no byte written after, the rest untouched', () => {
    const dir = mkdtempSync(join(tmpdir(), 'latch-leader-'));
    try {
      writeFileSync(join(dir, 'leader.c'), LEADER_C);
      const cc = spawnSync('cc', ['-O1', '-pthread', '-o', join(dir, 'leader'), join(dir, 'leader.c')], {
        encoding: 'utf8',
      });
      assert.equal(cc.status, 0, cc.stderr);
      const r = scene('leader', join(dir, 'leader'));
      assert.ok(r.hopsBefore > 0, 'the thread never wrote');
      assert.deepEqual(r.errors, []);
      assert.ok(r.whys.includes('orphan_of_attempt'), `the job was not a candidate: ${JSON.stringify(r)}`);
      assert.equal(r.grewAfter, 0, `the thread still wrote after containment: ${JSON.stringify(r)}`);
      assert.ok(r.agentAlive && r.residentAlive && r.userAlive, 'containment harmed what it must not');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('whose cgroup Latch may make room in', () => {
  test('a systemd unit of the system manager is left alone; the user manager’s subtree and a plain cgroup are not', () => {
    assert.match(systemdManaged('/user.slice/user-1000.slice/session-2.scope') ?? '', /session-2\.scope/);
    assert.match(systemdManaged('/system.slice/ssh.service') ?? '', /ssh\.service/);
    assert.equal(
      systemdManaged(
        '/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope',
      ),
      null,
    );
    assert.equal(systemdManaged('/'), null);
    assert.equal(systemdManaged('/docker/3f2a'), null);
  });
});

/** May Latch make groups in this process's cgroup (where the stand-in agents below start)? */
function dividable(): boolean {
  const mount = cgroup2Mount();
  return mount !== null && mayMakeRoom(mount, cgroupOf('self') ?? '/nonexistent') === null;
}

/** A stand-in agent of the test's own (`sleep 300`), moved into a group of its own. */
function standIn(): { agent: ChildProcess; g: { dir: string } } {
  const agent = spawn('sleep', ['300'], { stdio: 'ignore' });
  const start = readProc(agent.pid!, bootNs())!.startTicks;
  const g = enroll({ pid: agent.pid!, start_ticks: start, exe: '/bin/sleep', cmdline: 'sleep 300' });
  if (!('dir' in g)) {
    agent.kill('SIGKILL');
    assert.fail(`the stand-in agent got no group: ${g.none}`);
  }
  return { agent, g };
}

describe('latch doctor: containment', () => {
  const io = (env: NodeJS.ProcessEnv) => ({
    out: () => {},
    err: () => {},
    env,
    cwd: process.cwd(),
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  });

  test('says whether an agent started here gets a cgroup of its own, and how to turn it off', () => {
    assert.match(
      checkContainment(io({ LATCH_CGROUP: 'off' })).detail,
      /LATCH_CGROUP=off: at a trip \/proc is scanned alone/,
    );
    const c = checkContainment(io({}));
    if (dividable()) assert.deepEqual([c.status, /^atomic: /.test(c.detail)], ['ok', true], c.detail);
    else assert.equal(c.status, 'warn', c.detail);
  });

  test('an agent group left frozen (a containment that died half-way) fails, with the line that thaws it', {
    skip: skip ?? false,
  }, (t) => {
    if (!dividable()) return t.skip('this cgroup is not this user’s to divide');
    // A stand-in agent of the test's own, in a group of its own, frozen as a dead containment leaves it.
    const { agent, g } = standIn();
    t.after(() => {
      setFrozen(join(g.dir, 'agent'), false);
      agent.kill('SIGKILL');
      for (let i = 0; i < 50 && !empty(g.dir); i++) spawnSync('sleep', ['0.02']);
      removeGroup(g.dir);
    });
    assert.equal(setFrozen(join(g.dir, 'agent'), true), null);
    const c = checkContainment(io({}));
    assert.equal(c.status, 'fail', c.detail);
    assert.match(
      c.fix ?? '',
      new RegExp(`echo 0 > ${join(g.dir, 'agent', 'cgroup.freeze').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    setFrozen(join(g.dir, 'agent'), false);
    assert.equal(checkContainment(io({})).status, 'ok');
  });
});

test('latch uninstall removes the empty groups of agents that have exited, in its own cgroup', {
  skip: skip ?? false,
}, (t) => {
  if (!dividable()) return t.skip('this cgroup is not this user’s to divide');
  const { agent, g } = standIn();
  const home = mkdtempSync(join(tmpdir(), 'latch-uninstall-'));
  t.after(() => {
    removeGroup(g.dir);
    rmSync(home, { recursive: true, force: true });
  });
  agent.kill('SIGKILL');
  for (let i = 0; i < 100 && !empty(g.dir); i++) spawnSync('sleep', ['0.02']);
  // Another agent's first hook in this cgroup (a concurrent test's) removes it too: nothing to show then.
  if (!existsSync(g.dir)) return t.skip('a concurrent agent’s first hook removed the group first');
  const r = spawnSync(process.execPath, ['dist/latch.cjs', 'uninstall', 'codex', '--codex-home', home], {
    encoding: 'utf8',
    env: { ...process.env, LATCH_HOME: join(home, 'latch'), CODEX_HOME: home },
  });
  assert.ok(r.status !== null, r.stderr);
  assert.equal(existsSync(g.dir), false, `uninstall left the group: ${r.stdout}${r.stderr}`);
});
