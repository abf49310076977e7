// A containment scene run as PID 1 of its own pid namespace (`unshare --pid --fork --mount-proc`), so
// that nothing it starts or signals can reach the machine's other processes, and everything it started
// ends with it. Used by test/unit/contain-cgroup.test.ts.
//
//   node --import tsx test/helpers/contain-scene.ts '<json: {mode, dir}>'
//
// The scene: a stand-in agent (`sh`, its start recorded as an agent's would be), put into a cgroup of
// Latch's own when mode is 'group' (enroll), starts a job that forks its successor and exits, for ever,
// each hop appending a byte to a file (SIGTERM ignored); a recorded resident hook stand-in, detached
// from the agent; and, outside the agent, a user's own detached process. Then containment runs as
// the trip runs it, and the scene reports, as one JSON line on stdout, what still runs and whether the
// job's file still grows.
//
// 'moved': a job moves the agent out of its group first. 'decoy' and 'decoy-search': a job moves the
// agent into a cgroup of its own (`<parent>/decoy/in`) beside an empty directory of the group's name
// (`<parent>/decoy/latch-<pid>-<start>`); containment then looks the group up with the one the
// enrolling hook recorded ('decoy', as containAfterTrip does) or by name alone ('decoy-search').
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { cgroupOf, enroll, groupOf } from '../../src/contain/cgroup.js';
import { contain } from '../../src/contain/kill.js';
import { argvOf, bootNs, readProc } from '../../src/contain/proc.js';
import type { AttemptWindow } from '../../src/contain/windows.js';
import { wallNs } from '../../src/base/clock.js';

type Mode = 'group' | 'scan' | 'moved' | 'decoy' | 'decoy-search' | 'leader';
const { mode, dir, leader } = JSON.parse(process.argv[2]!) as { mode: Mode; dir: string; leader?: string };
const MARK = 'CODEX_THREAD_ID';
const SESSION = 'scene-session';
const hopLog = join(dir, 'hops');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const live = (pid: number): boolean => {
  const p = readProc(pid, bootNs());
  return p !== null && p.state !== 'Z' && p.state !== 'X';
};
const withArgv = (needle: string): number[] =>
  readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => live(pid) && argvOf(pid).join(' ').includes(needle));
const size = (): number => (existsSync(hopLog) ? statSync(hopLog).size : 0);

async function main(): Promise<void> {
  const boot = bootNs();
  const t0 = wallNs();
  // The stand-in agent waits for a line on stdin (so that it is enrolled before it starts anything),
  // then starts the job, a detached resident stand-in, and waits.
  // 'leader': the job is a program whose main thread calls the exit syscall while a second thread
  // appends to the file (its leader shows state Z, its cmdline is empty), detached from the agent.
  const hopper =
    mode === 'leader'
      ? `setsid ${leader} ${hopLog}`
      : `perl -e '$SIG{TERM}="IGNORE"; open(my $f, ">>", $ARGV[0]) or die; while (1) { my $p = fork(); exit 0 if $p; exit 1 unless defined $p; syswrite($f, "x"); }' ${hopLog} scene-hopper`;
  const agent = spawn(
    'sh',
    ['-c', `read go; (${hopper} &); (setsid perl -e 'sleep 300' scene-resident &); exec sleep 300.25`],
    {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { ...process.env, [MARK]: SESSION },
    },
  );
  const agentPid = agent.pid!;
  await sleep(50);
  const agentProc = readProc(agentPid, boot)!;
  const info = { pid: agentPid, start_ticks: agentProc.startTicks, exe: '/bin/sh', cmdline: 'scene agent' };
  const enrolled = mode === 'scan' || mode === 'leader' ? { none: `${mode} mode` } : enroll(info);
  agent.stdin!.write('go\n');
  // The user's own process, started outside the agent (the scene's PID 1 adopts it): never the agent's.
  spawnSync('sh', ['-c', "setsid perl -e 'sleep 300' scene-user &"], { stdio: 'ignore' });
  // Let the job hop for a while: by the trip its first processes are long gone.
  for (let i = 0; i < 100 && size() < (mode === 'leader' ? 10 : 2000); i++) await sleep(20);
  await sleep(200);
  const resident = withArgv('scene-resident');
  const residentProc = resident[0] ? readProc(resident[0], boot) : null;
  const windows: AttemptWindow[] = [{ id: 'a1', session_id: SESSION, from: t0, to: wallNs() + 60_000_000_000n }];
  // 'moved': a job of the same user moves the agent out of its group (into the cgroup above), as its
  // cgroup's delegation allows; the group, and what the agent started in it, stays.
  if (mode === 'moved' && 'dir' in enrolled)
    writeFileSync(join(dirname(enrolled.dir), 'cgroup.procs'), `${agentPid}\n`);
  // The decoy: made (and later removed) by this scene, as a job of the same user could.
  const decoy = 'dir' in enrolled ? join(dirname(enrolled.dir), 'decoy') : null;
  const made: string[] = [];
  if ((mode === 'decoy' || mode === 'decoy-search') && 'dir' in enrolled && decoy) {
    const fake = join(decoy, basename(enrolled.dir));
    for (const d of [decoy, fake, join(fake, 'agent'), join(decoy, 'in')]) {
      mkdirSync(d);
      made.unshift(d);
    }
    writeFileSync(join(decoy, 'in', 'cgroup.procs'), `${agentPid}\n`);
  }
  const group = groupOf(info, process.env, mode === 'decoy' && 'dir' in enrolled ? enrolled.dir : null);
  const result = contain({
    agent: info,
    windows,
    marks: [MARK],
    residents: new Set(residentProc ? [`${residentProc.pid}:${residentProc.startTicks}`] : []),
    group: 'dir' in group ? group.dir : null,
  });
  const after = size();
  await sleep(400);
  const grew = size() - after;
  let frozen: string | null = null;
  if ('dir' in group) frozen = readFileSync(join(group.dir, 'agent', 'cgroup.freeze'), 'utf8').trim();
  const report = {
    group: 'dir' in group ? group.dir : null,
    made,
    agentCgroup: cgroupOf(agentPid),
    enrolled,
    notes: result.notes,
    errors: result.errors,
    candidates: result.candidates.length,
    whys: [...new Set(result.candidates.map((c) => c.why))].sort(),
    hoppersLeft: withArgv('scene-hopper').length,
    grewAfter: grew,
    hopsBefore: after,
    agentAlive: live(agentPid),
    agentState: readProc(agentPid, boot)?.state ?? null,
    frozen,
    residentAlive: resident.length > 0 && resident.every(live),
    userAlive: withArgv('scene-user').length > 0,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  agent.kill('SIGKILL');
  // PID 1 leaving ends every process of the namespace.
  process.exit(0);
}

main().catch((err) => {
  process.stdout.write(`${JSON.stringify({ error: String(err?.stack ?? err) })}\n`);
  process.exit(1);
});
