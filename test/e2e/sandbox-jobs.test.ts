// Measurement (issue 29, "What to build" 3) on the real pinned agents: when the agent runs with its
// own sandbox on, does a background job a tool call starts outlive that call, and the agent? One Bash
// call starts three jobs in the usual ways, each a `sleep` with a duration no other process has:
//   (sleep D1; echo late > m-subshell) &
//   nohup sh -c 'sleep D2; echo late > m-nohup' >/dev/null 2>&1 &
//   setsid sh -c 'sleep D3; echo late > m-setsid' &
// and the test looks from outside, in /proc: once when the model gets the call's output (the call has
// returned, the agent still runs), once after the agent exited. For a job still there it records its
// pid namespace, then ends its `sleep` so the job goes on to write its marker (does the job still act,
// and may it write the workspace?).
//
// Each agent runs inside a pid namespace of its own (`unshare --pid --fork --mount-proc`, entered with
// `nsenter`), whose init is a `sleep` that outlives the agent: jobs orphaned by the agent land there,
// nothing of the run can escape into the machine's namespace, and killing that `unshare` (the test's
// own child) ends everything the run started. The only other signal the test sends is to a job's
// `sleep`: argv `sleep D` with this run's D, LATCH_TEST_JOB=<this run's nonce> in its environment, and
// in the box's pid namespace or one nested under it.
//
// Measured (2026-12-07; docs/containment.md "Background jobs under the agent's own sandbox"): with the
// sandbox on, each call runs in a pid namespace of its own whose pid 1 is the sandbox's launcher, so
// every job ends with its call; Codex danger-full-access ends the call's process group (a `setsid` job
// survives); Claude Code without its sandbox, or in a call that sets `dangerouslyDisableSandbox` while
// `allowUnsandboxedCommands` is left at its default, ends nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { resolveCodexBin, runCodex } from '../../src/agents/codex/driver.js';
import { itemText } from '../../src/agents/codex/fake-model.js';
import { setupEnv } from '../helpers/e2e.js';
import { setupClaudeEnv } from '../helpers/claude.js';
import { say, use } from '../helpers/claude-script.js';
import { procStat } from '../../src/base/proc.js';
import { Box, nsOf } from '../helpers/pidbox.js';

const T = { timeout: 240_000 };
const BASE = join(homedir(), '.cache', 'latch-e2e');
const FORMS = ['subshell', 'nohup', 'setsid'] as const;
type Form = (typeof FORMS)[number];

const linux = process.platform === 'linux' && existsSync('/usr/bin/unshare') && existsSync('/usr/bin/nsenter');
const bwrap = existsSync('/usr/bin/bwrap') && existsSync('/usr/bin/socat');
const root = process.getuid?.() === 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Job {
  form: Form;
  /** The `sleep` duration: this run's own. */
  duration: string;
  marker: string;
}

interface Sighting {
  pid: number;
  /** `readlink /proc/PID/ns/pid`. */
  ns: string | null;
  /** Its environment carries LATCH_TEST_JOB=<this run's nonce> (the agent passed it on). */
  marked: boolean;
}

interface Observed {
  form: Form;
  /** Seen while the call ran (the call waits until the test has seen all three, at most 30 s). */
  during: Sighting | null;
  afterCall: Sighting | null;
  afterExit: Sighting | null;
  /** The job's pid namespace: the agent's (the box's), or another one nested in the box. */
  nsKind: 'agent' | 'nested' | null;
  /** What runs as pid 1 of a nested namespace (its argv, shortened). */
  nsInit: string | null;
  /** What the job wrote to its marker after its `sleep` ended (null: nothing). */
  marker: string | null;
}

/** The jobs of one Bash call, and what the test saw of them. */
class Scene {
  readonly jobs: Job[];
  readonly during = new Map<Form, Sighting>();
  /** For each nested pid namespace a job was seen in: what runs as its pid 1. */
  readonly nsInits = new Map<string, string | null>();
  /** A file outside the workspace the test creates once it saw every job (the call waits for it). */
  readonly seen: string;
  constructor(
    readonly box: Box,
    /** The run's LATCH_TEST_JOB value, given to the agent (its commands inherit it). */
    readonly nonce: string,
    /** Outside the workspace (not under /tmp, which Codex's workspace-write lets the agent write). */
    readonly dir: string,
    /** One digit: which call of the run. */
    readonly tag: number,
  ) {
    this.jobs = FORMS.map((form, k) => ({
      form,
      duration: `30.${nonce}${tag}${k + 1}`,
      marker: `m${tag}-${form}`,
    }));
    this.seen = join(dir, `seen-${tag}`);
  }

  /**
   * The Bash call: a write outside the workspace first (shows whether the sandbox is on), the three
   * jobs, then a wait until the test saw them (or 30 s).
   */
  command(): string {
    const [a, b, c] = this.jobs as [Job, Job, Job];
    const outside = join(this.dir, `outside-${this.tag}.txt`);
    return [
      `(echo x > ${outside}) 2>/dev/null && echo outside-written || echo outside-denied`,
      `(sleep ${a.duration}; echo late > ${a.marker}) &`,
      `nohup sh -c 'sleep ${b.duration}; echo late > ${b.marker}' >/dev/null 2>&1 &`,
      `setsid sh -c 'sleep ${c.duration}; echo late > ${c.marker}' &`,
      `i=0; while [ ! -e ${this.seen} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`,
      `[ -e ${this.seen} ] && echo jobs-seen || echo jobs-unseen`,
    ].join('\n');
  }

  /** The live `sleep` of a job: its argv (this run's duration), in the box. */
  find(job: Job): Sighting | null {
    for (const n of readdirSync('/proc')) {
      if (!/^\d+$/.test(n)) continue;
      const pid = Number(n);
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        if (argv.length !== 2 || !/(^|\/)sleep$/.test(argv[0]!) || argv[1] !== job.duration) continue;
        const st = procStat(pid);
        if (!st || st.state === 'Z' || st.state === 'X' || !this.box.holds(pid)) continue;
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        return { pid, ns: nsOf(pid), marked: environ.includes(`LATCH_TEST_JOB=${this.nonce}`) };
      } catch {
        /* gone, or not readable */
      }
    }
    return null;
  }

  snapshot(): Map<Form, Sighting | null> {
    return new Map(this.jobs.map((j) => [j.form, this.find(j)]));
  }

  /** Looks for the jobs every 100 ms while the agent runs; creates `seen` once all were seen. */
  watch(): () => void {
    const timer = setInterval(() => {
      for (const j of this.jobs) {
        if (this.during.has(j.form)) continue;
        const s = this.find(j);
        if (!s) continue;
        this.during.set(j.form, s);
        if (s.ns && s.ns !== this.box.ns && !this.nsInits.has(s.ns)) this.nsInits.set(s.ns, this.initOf(s.ns));
      }
      if (this.during.size === this.jobs.length && !existsSync(this.seen)) writeFileSync(this.seen, 'seen\n');
    }, 100);
    return () => clearInterval(timer);
  }

  /** The write outside the workspace went through: the sandbox was off for the call. */
  outsideWritten(): boolean {
    return existsSync(join(this.dir, `outside-${this.tag}.txt`));
  }

  /** The argv (argv[0]'s base name, at most 100 characters) of pid 1 of pid namespace `ns` (a process whose NSpid ends in 1). */
  initOf(ns: string): string | null {
    for (const n of readdirSync('/proc')) {
      if (!/^\d+$/.test(n) || nsOf(Number(n)) !== ns) continue;
      try {
        const nspid = /^NSpid:\s*(.*)$/m
          .exec(readFileSync(`/proc/${n}/status`, 'utf8'))?.[1]
          ?.trim()
          .split(/\s+/);
        if (nspid?.at(-1) !== '1') continue;
        const [exe = '', ...args] = readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0');
        const name = exe.startsWith('/proc/') ? exe : exe.split('/').at(-1);
        return [name, ...args].join(' ').trim().slice(0, 100);
      } catch {
        /* gone */
      }
    }
    return null;
  }

  /**
   * After the agent exited: ends each surviving job's `sleep` (only one carrying this run's nonce,
   * re-checked just before) so its shell goes on to the marker, waits for that shell to leave, and
   * reads the markers. SIGPIPE, because no shell reports a child it ended: on SIGTERM the shell writes
   * "Terminated" to its stderr, which for a job started without redirection is the agent's pipe, gone
   * with the agent, and the shell dies of SIGPIPE before it writes the marker (seen with Codex).
   */
  async finish(
    work: string,
    afterCall: Map<Form, Sighting | null>,
    afterExit: Map<Form, Sighting | null>,
  ): Promise<Observed[]> {
    const out: Observed[] = [];
    for (const job of this.jobs) {
      const s = afterExit.get(job.form) ?? null;
      if (s?.marked) {
        const again = this.find(job);
        const parent = again ? procStat(again.pid)?.ppid : undefined;
        if (again?.marked && again.pid === s.pid) process.kill(s.pid, 'SIGPIPE');
        for (let i = 0; i < 200 && parent; i++) {
          const st = procStat(parent);
          if (!st || st.state === 'Z') break;
          await sleep(50);
        }
      }
      const m = join(work, job.marker);
      const seen = this.during.get(job.form) ?? afterCall.get(job.form) ?? s;
      const nsKind = seen?.ns ? (seen.ns === this.box.ns ? 'agent' : 'nested') : null;
      out.push({
        form: job.form,
        during: this.during.get(job.form) ?? null,
        afterCall: afterCall.get(job.form) ?? null,
        afterExit: s,
        nsKind,
        nsInit: nsKind === 'nested' ? (this.nsInits.get(seen!.ns!) ?? null) : null,
        marker: existsSync(m) ? readFileSync(m, 'utf8') : null,
      });
    }
    return out;
  }
}

function report(what: string, obs: Observed[], outsideWritten: boolean): void {
  const row = (o: Observed) =>
    `  ${o.form.padEnd(8)} during the call: ${o.during ? 'alive' : 'unseen'}${
      o.during && !o.during.marked ? ' (without LATCH_TEST_JOB)' : ''
    }; after the call: ${o.afterCall ? 'alive' : 'gone'}; after the agent: ${
      o.afterExit ? 'alive' : 'gone'
    }; pid ns: ${o.nsKind ?? '-'}${o.nsInit ? ` (pid 1 there: ${o.nsInit})` : ''}; marker: ${
      o.marker === null ? 'none' : JSON.stringify(o.marker)
    }`;
  const extra = `the write outside the workspace ${outsideWritten ? 'went through' : 'was denied'}`;
  console.log(`${what} (${extra})\n${obs.map(row).join('\n')}`);
}

interface Measure {
  obs: Observed[];
  /** The write outside the workspace went through: the sandbox was off for the call. */
  outsideWritten: boolean;
  /** What the call answered the model. */
  output: string;
}

async function measureCodex(mode: 'workspace-write' | 'read-only' | 'danger-full-access'): Promise<Measure> {
  const box = await Box.open();
  const nonce = String(randomInt(100_000, 999_999));
  let scene: Scene | null = null;
  let afterCall: Map<Form, Sighting | null> | null = null;
  let env: Awaited<ReturnType<typeof setupEnv>> | null = null;
  try {
    env = await setupEnv(
      (req) => {
        const input: any[] = Array.isArray(req.body?.input) ? req.body.input : [];
        const returned = input.some((x) => x?.type === 'function_call_output');
        if (!returned) return { items: [{ type: 'bash', cmd: scene!.command() }] };
        afterCall ??= scene!.snapshot();
        return { items: [{ type: 'message', text: 'done' }] };
      },
      { sandboxMode: mode, baseDir: BASE },
    );
    scene = new Scene(box, nonce, env.base, 1);
    // `codex exec` in the box: a launcher script, as runCodex runs a non-.js codexBin itself.
    const wrapper = box.launcher(join(env.base, 'codex-in-box'), env.work, [process.execPath, resolveCodexBin()]);
    const stop = scene.watch();
    const r = await runCodex({
      codexBin: wrapper,
      codexHome: env.codexHome,
      cwd: env.work,
      prompt: 'start the jobs',
      env: { LATCH_HOME: env.latchHome, PYENV_REHASH_TIMEOUT: '2', LATCH_TEST_JOB: nonce },
      timeoutMs: 150_000,
    }).finally(stop);
    assert.equal(r.timedOut, false, r.stderr.slice(-2000));
    assert.equal(r.code, 0, `${r.stderr.slice(-3000)}\n${r.stdout.slice(-3000)}`);
    const afterExit = scene.snapshot();
    const input: any[] = env.fake.requests.flatMap((q) => (Array.isArray(q.body?.input) ? q.body.input : []));
    const output = itemText(input.find((x) => x?.type === 'function_call_output'));
    assert.ok(afterCall, 'the model got the call’s output');
    const obs = await scene.finish(env.work, afterCall, afterExit);
    const outsideWritten = scene.outsideWritten();
    report(`Codex ${mode}`, obs, outsideWritten);
    return { obs, outsideWritten, output };
  } finally {
    await box.close();
    await env?.cleanup();
  }
}

/**
 * One Claude Code run, one Bash call per entry of `calls` (its extra Bash input, e.g.
 * `dangerouslyDisableSandbox: true`), each with its own three jobs.
 */
async function measureClaude(
  settings: Record<string, unknown> | null,
  calls: Record<string, unknown>[],
  label: string,
): Promise<Measure[]> {
  const box = await Box.open();
  const nonce = String(randomInt(100_000, 999_999));
  const env = await setupClaudeEnv();
  try {
    if (settings) {
      env.writeSettings({ ...env.readSettings(), ...settings });
      const s = env.latch(['setup', 'claude']);
      assert.equal(s.code, 0, s.stderr);
    }
    const scenes = calls.map((_, i) => new Scene(box, nonce, env.base, i + 1));
    const afterCall: (Map<Form, Sighting | null> | null)[] = calls.map(() => null);
    const call = (i: number) =>
      use(`jobs${i}`, 'Bash', { command: scenes[i]!.command(), description: 'start jobs', ...calls[i] });
    const stops: (() => void)[] = [scenes[0]!.watch()];
    const turns = [
      call(0),
      ...calls.map((_, i) => () => {
        stops[i]!();
        afterCall[i] ??= scenes[i]!.snapshot();
        if (i + 1 === calls.length) return say('done');
        stops.push(scenes[i + 1]!.watch());
        return call(i + 1);
      }),
    ];
    const run = await env
      .claude('start the jobs', {
        turns,
        env: { LATCH_TEST_JOB: nonce },
        wrap: box.wrap(env.work),
        timeoutMs: 150_000,
      })
      .finally(() => {
        for (const stop of stops) stop();
      });
    assert.equal(run.code, 0, `${run.stderr.slice(-2000)}\n${run.stdout.slice(-2000)}`);
    const afterExit = scenes.map((sc) => sc.snapshot());
    const out: Measure[] = [];
    for (const [i, scene] of scenes.entries()) {
      const a = afterCall[i];
      assert.ok(a, `the model got call ${i + 1}’s output`);
      const obs = await scene.finish(env.work, a, afterExit[i]!);
      const outsideWritten = scene.outsideWritten();
      report(`Claude Code ${label}, call ${JSON.stringify(calls[i])}`, obs, outsideWritten);
      out.push({ obs, outsideWritten, output: env.toolResult(`jobs${i}`)?.text ?? '' });
    }
    return out;
  } finally {
    await box.close();
    await env.cleanup();
  }
}

const skip = !linux || !root ? 'needs Linux, util-linux unshare/nsenter and root (a pid namespace per run)' : false;

/**
 * What a run showed, one line per job form: gone or alive after the call and after the agent exited,
 * its pid namespace, its marker. Every job was seen running during its call, with LATCH_TEST_JOB.
 */
function table(m: Measure): string[] {
  for (const o of m.obs) {
    assert.ok(o.during, `${o.form}: the job was never seen running; the call answered ${JSON.stringify(m.output)}`);
    assert.equal(o.during!.marked, true, `${o.form}: the job's environment lacks LATCH_TEST_JOB`);
  }
  assert.match(m.output, /jobs-seen/);
  return m.obs.map(
    (o) =>
      `${o.form}: call ${o.afterCall ? 'survived' : 'ended it'}, agent ${o.afterExit ? 'survived' : 'ended it'}, ns ${o.nsKind}, marker ${o.marker === null ? 'none' : o.marker.trim()}`,
  );
}

const DIES_WITH_CALL = FORMS.map((f) => `${f}: call ended it, agent ended it, ns nested, marker none`);
const SURVIVES = FORMS.map((f) => `${f}: call survived, agent survived, ns agent, marker late`);

describe('background jobs of a call under the agents’ own sandboxes', { concurrency: 2 }, () => {
  for (const mode of ['workspace-write', 'read-only'] as const) {
    it(`Codex ${mode}: every job ends with its call (the call's own pid namespace dies with it)`, {
      ...T,
      skip,
    }, async () => {
      const m = await measureCodex(mode);
      assert.equal(m.outsideWritten, false, 'the sandbox is on: the write outside the workspace fails');
      assert.deepEqual(table(m), DIES_WITH_CALL);
      for (const o of m.obs) assert.match(o.nsInit ?? '', /^codex-linux-sandbox /);
    });
  }

  it('Codex danger-full-access: the call’s process group ends with it; a setsid job survives call and agent', {
    ...T,
    skip,
  }, async () => {
    const m = await measureCodex('danger-full-access');
    assert.equal(m.outsideWritten, true);
    assert.deepEqual(table(m), [
      'subshell: call ended it, agent ended it, ns agent, marker none',
      'nohup: call ended it, agent ended it, ns agent, marker none',
      'setsid: call survived, agent survived, ns agent, marker late',
    ]);
  });

  it('Claude Code sandbox.enabled: every job ends with its call; a call that sets dangerouslyDisableSandbox runs unsandboxed and its jobs survive', {
    ...T,
    skip: skip || (!bwrap ? 'bubblewrap and socat are needed for Claude Code’s sandbox' : false),
  }, async () => {
    const [sandboxed, disabled] = await measureClaude(
      { sandbox: { enabled: true } },
      [{}, { dangerouslyDisableSandbox: true }],
      'sandbox.enabled',
    );
    assert.equal(sandboxed!.outsideWritten, false, 'the sandbox is on: the write outside the workspace fails');
    assert.deepEqual(table(sandboxed!), DIES_WITH_CALL);
    assert.equal(disabled!.outsideWritten, true, 'the call ran outside the sandbox');
    assert.deepEqual(table(disabled!), SURVIVES);
  });

  it('Claude Code sandbox.enabled with allowUnsandboxedCommands false: dangerouslyDisableSandbox is ignored, the jobs end with the call', {
    ...T,
    skip: skip || (!bwrap ? 'bubblewrap and socat are needed for Claude Code’s sandbox' : false),
  }, async () => {
    const [m] = await measureClaude(
      { sandbox: { enabled: true, allowUnsandboxedCommands: false } },
      [{ dangerouslyDisableSandbox: true }],
      'sandbox.enabled, allowUnsandboxedCommands false',
    );
    assert.equal(m!.outsideWritten, false);
    assert.deepEqual(table(m!), DIES_WITH_CALL);
  });

  it('Claude Code without its sandbox: every job survives the call and the agent', { ...T, skip }, async () => {
    const [m] = await measureClaude(null, [{}], 'without sandbox');
    assert.equal(m!.outsideWritten, true);
    assert.deepEqual(table(m!), SURVIVES);
  });
});
