// The port owns `processes` (issue 24): containment and `latch verify`'s ancestry check know an agent
// by the facts its folder supplies (Agent.processes), not by names written into src/guard/. A third
// agent Latch does not ship (test/fixtures/fake-agent/: a copy of bash named `latch-fake-agent`, its
// sandbox a copy named `latch-fake-sandbox`) is recognised once its facts are registered, with real
// processes, and not before. Nothing is signalled here but the processes this test started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_NAMES, agentProcesses, loadAgent, registerTestAgentProcesses } from '../../src/agents/index.js';
import { useAgentProcesses } from '../../src/contain/match.js';
import {
  bootNs,
  checkAncestry,
  findAgent,
  isAgentProcess,
  isSandboxProcess,
  listCandidates,
  procSupported,
  readProc,
} from '../../src/contain/index.js';
import { nowNs } from '../../src/ledger/ledger.js';
import { FAKE_AGENT_EXE, FAKE_SANDBOX_EXE, fakeAgentProcesses } from '../fixtures/fake-agent/processes.js';

const linux = procSupported();

function killQuietly(pid: number | undefined): void {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 1 || pid === process.pid) return; // never kill(0) / kill(-1) / PID 1
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** Waits for a file holding a pid (no deadline: a loaded machine is slow), while `child` runs. */
async function pidIn(file: string, child: ChildProcess): Promise<number> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the fake agent exited before ${file}`);
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8').trim();
      if (/^\d+$/.test(text)) return Number(text);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("each agent's `processes` is what the registry lists for it", async () => {
  const listed = agentProcesses();
  assert.equal(listed.length, AGENT_NAMES.length);
  for (const [i, name] of AGENT_NAMES.entries()) assert.equal((await loadAgent(name))!.processes, listed[i], name);
});

test('the registry hands containment every agent it lists, and a test-registered one until it is unregistered', () => {
  const shipped = agentProcesses().length;
  assert.equal(isAgentProcess(`/opt/bin/${FAKE_AGENT_EXE}`, [FAKE_AGENT_EXE]), false);
  const unregister = registerTestAgentProcesses(fakeAgentProcesses);
  try {
    assert.equal(agentProcesses().length, shipped + 1);
    assert.equal(isAgentProcess(`/opt/bin/${FAKE_AGENT_EXE}`, [FAKE_AGENT_EXE]), true);
    assert.equal(isAgentProcess('/usr/bin/node', ['node', '/x/latch-fake-agent.js']), true, 'its script, run by node');
    assert.equal(isAgentProcess('/usr/bin/python3', ['python3', '/x/latch-fake-agent.js']), false, 'not by python');
    assert.equal(isSandboxProcess(`/opt/bin/${FAKE_SANDBOX_EXE}`), true);
    assert.equal(
      isAgentProcess(`/opt/bin/${FAKE_SANDBOX_EXE}`, [FAKE_SANDBOX_EXE]),
      false,
      'its sandbox is not the agent',
    );
  } finally {
    unregister();
  }
  assert.equal(agentProcesses().length, shipped);
  assert.equal(isAgentProcess(`/opt/bin/${FAKE_AGENT_EXE}`, [FAKE_AGENT_EXE]), false);
  assert.equal(isSandboxProcess(`/opt/bin/${FAKE_SANDBOX_EXE}`), false);
});

test('without the registry nothing is known to be an agent, and asking fails closed: verify refuses', () => {
  useAgentProcesses(() => []);
  try {
    assert.throws(() => isAgentProcess('/usr/bin/codex', ['codex']), /no agent process facts/);
    assert.throws(() => isSandboxProcess('/usr/bin/bwrap'), /no agent process facts/);
    if (linux) {
      const r = checkAncestry(null, {});
      assert.ok(
        r.refusals.some((x) => /the ancestry could not be checked: no agent process facts/.test(x.reason)),
        JSON.stringify(r.refusals),
      );
    }
  } finally {
    useAgentProcesses(agentProcesses);
  }
  assert.equal(isAgentProcess('/usr/bin/codex', ['codex']), true, 'the registry again');
});

test('a fake agent is the agent: findAgent finds it as the nearest ancestor, its descendants are candidates, verify refuses under it', {
  skip: !linux && 'Linux /proc only',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'latch-fake-agent-'));
  mkdirSync(join(dir, 'bin'));
  const agentExe = join(dir, 'bin', FAKE_AGENT_EXE);
  const sandboxExe = join(dir, 'bin', FAKE_SANDBOX_EXE);
  for (const f of [agentExe, sandboxExe]) {
    copyFileSync('/bin/bash', f); // a real executable whose /proc/PID/exe basename is the fake's
    chmodSync(f, 0o755);
  }
  // The fake agent runs one command in its sandbox; the command leaves a job (the leaf) running.
  const script = String.raw`
"$1" -c 'sh -c "echo \$\$ > \"\$0/leaf\"; exec sleep 600" "$0" & echo $$ > "$0/sandbox"; wait' "$0" &
echo $! > "$0/sandboxpid"
wait`;
  const child: ChildProcess = spawn(agentExe, ['-c', script, dir, sandboxExe], { stdio: 'ignore' });
  const started: number[] = [];
  t.after(() => {
    for (const p of started) killQuietly(p);
    killQuietly(child.pid);
    rmSync(dir, { recursive: true, force: true });
  });
  const agent = { pid: child.pid! };
  const sandbox = await pidIn(join(dir, 'sandbox'), child);
  started.push(sandbox);
  const leaf = await pidIn(join(dir, 'leaf'), child);
  started.push(leaf);
  const boot = bootNs();
  assert.ok(readProc(leaf, boot), 'the leaf runs');

  // Unregistered, the fake is nobody's agent: the nearest agent above the leaf (if any: the agent
  // running this test) is not it, and its processes are not refused as an agent's.
  const before = findAgent(leaf, boot);
  assert.notEqual(before?.pid, agent.pid);
  const refusedBefore = checkAncestry(null, { pid: leaf }).refusals;
  assert.ok(!refusedBefore.some((r) => r.pid === agent.pid || r.pid === sandbox));

  const unregister = registerTestAgentProcesses(fakeAgentProcesses);
  try {
    // The agent: the nearest ancestor of the leaf that is an agent (its sandbox between them is not).
    const found = findAgent(leaf, boot);
    assert.equal(found?.pid, agent.pid);
    assert.equal(found?.exe, agentExe);
    assert.equal(findAgent(sandbox, boot)?.pid, agent.pid);

    // Its descendants are candidates (listed, never signalled here): the sandbox and its job, each
    // started inside a window that covers this test.
    const window = { id: 'w', session_id: 'S', from: 0n, to: nowNs() + 600_000_000_000n };
    const listed = listCandidates({ windows: [window], agent: found, orphanFilter: () => false });
    const whyOf = new Map(listed.candidates.map((c) => [c.pid, [c.why, c.action]]));
    assert.deepEqual(whyOf.get(sandbox), ['agent_descendant', 'listed']);
    assert.deepEqual(whyOf.get(leaf), ['agent_descendant', 'listed']);
    assert.ok(!whyOf.has(agent.pid), 'never the agent itself');
    assert.ok(readProc(leaf, boot) && readProc(sandbox, boot), 'listing signals nothing');

    // `latch verify` run from the job refuses: its ancestry holds the agent and the agent's sandbox.
    const refusals = checkAncestry(null, { pid: leaf }).refusals;
    assert.ok(
      refusals.some((r) => r.pid === agent.pid && /is an agent process/.test(r.reason)),
      JSON.stringify(refusals),
    );
    assert.ok(
      refusals.some((r) => r.pid === sandbox && /is an agent sandbox/.test(r.reason)),
      JSON.stringify(refusals),
    );
  } finally {
    unregister();
  }
});
