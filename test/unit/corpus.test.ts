// The adversarial corpus of issue 10 with a real oracle. For every case (test/helpers/corpus/cases.ts)
// the decision is computed by `heldShell` (src/guard/held.ts), the one place that decides what a Bash
// call of a held session may do, in three modes:
//   sealed      — Latch's own sealed sandbox (bubblewrap + the pinned seccomp helper, Latch's files
//                 hidden), which admits any command that states no write; run as the hook runs it
//                 (its argument vector, the protected paths hidden);
//   sandbox     — with the real Codex read-only sandbox (`codex sandbox` from node_modules), unsealed:
//                 the strict allowlist admits;
//   classifier  — with no sandbox (the command would run raw, guarded by the classifier alone).
// Every call it lets through is RUN as rewritten, exactly as Codex runs a Bash call (`/bin/bash -lc`,
// cwd = the workspace, stdin /dev/null, a timeout, background children waited for), in a scratch root
// restored from a pristine copy (and re-armed) before each run. The oracle: nothing under the scratch
// root changed (every entry: type, mode, owner, link count, size, content hash, symlink target, mtime
// and ctime; only atime is ignored), no marker appeared, and no canary planted in the store or the
// registration shows in the output. A root whose snapshot did not change at all is reused as it is
// (restoring it would be a no-op); any change, and every arm with background jobs, restores it. Latch's own exact reads
// (`node <dist>/latch.cjs status`...) are replayed by the hook (src/guard/guard.ts `latchReplay`): the
// agent's command becomes a printf, and that is what runs here too.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { classifierContext, heldShell } from '../../src/guard/held.js';
import { latchReadArgs, shellQuote } from '../../src/guard/read-shell.js';
import { replayOf } from '../../src/guard/replay.js';
import { codex } from '../../src/agents/codex/index.js';
import { wrapReadOnly } from '../../src/agents/codex/sandbox.js';
import type { ClassifyContext } from '../../src/shell/readonly.js';
import { CATEGORIES, caseKey, corpus, type Case } from '../helpers/corpus/cases.js';
import { KNOWN, knownCause } from '../helpers/corpus/known.js';
import {
  buildRoot,
  CANARY,
  diffSnapshots,
  endProcessesOf,
  resetRoot,
  runArm,
  runEnv,
  runShell,
  snapshot,
  subst,
  type Root,
} from '../helpers/corpus/scratch.js';

type Mode = 'sealed' | 'sandbox' | 'classifier';

interface ModeResult {
  mode: Mode;
  allowed: boolean;
  reasons: string[];
  ran: boolean;
  status: number | null;
  timedOut: boolean;
  changes: string[];
  canary: boolean;
  output: string;
  positiveProblem: string | null;
  ms: number;
}

interface CaseResult {
  c: Case;
  key: string;
  command: string;
  modes: ModeResult[];
  armError: string | null;
}

const cases = corpus();
const results: CaseResult[] = [];
let roots: Root[] = [];
let base = '';
let elapsedMs = 0;
let workers: Worker[] = [];
const potency: Array<{ arm: string; cmd: string; changes: number; err: string | null }> = [];

function ctxFor(root: Root): ClassifyContext {
  const env = { HOME: root.home, CODEX_HOME: root.codexHome };
  return classifierContext({
    latchHome: root.latchHome,
    cwd: root.ws,
    latchEntry: root.entry,
    env,
    registration: codex.registrationPaths(env, root.ws),
  });
}

interface Worker {
  root: Root;
  /**
   * What the root holds now: 'pristine', `arm:<name>` (a static arm, untouched since), or 'dirty'. A
   * run whose snapshot shows no change at all (every entry, times but atime included) leaves the state
   * as it was, so restoring it would be a no-op; any change makes it 'dirty'.
   */
  state: string;
  armCache: Map<string, string>;
  armPgids: number[];
  prepMs: number;
  counts: { resets: number; restores: number; arms: number };
  classifyMs: number;
  runMs: Record<Mode, number>;
}

/** Bring the worker's root to the state the case starts from: pristine, then armed. */
async function prepare(w: Worker, c: Case): Promise<string | null> {
  const t0 = Date.now();
  try {
    // Armed background jobs of the previous case (and anything else of this root) end here.
    if (w.armPgids.splice(0).length > 0) endProcessesOf(w.root);
    if (!c.arm) {
      if (w.state !== 'pristine') {
        resetRoot(w.root);
        w.counts.resets++;
      }
      w.state = 'pristine';
      return null;
    }
    if (c.arm.static && w.state === `arm:${c.arm.name}`) return null;
    const cached = c.arm.static ? w.armCache.get(c.arm.name) : undefined;
    if (cached !== undefined) {
      rmSync(w.root.r, { recursive: true, force: true, maxRetries: 3 });
      w.counts.restores++;
      const cp = spawnSync('cp', ['-a', cached, w.root.r], { encoding: 'utf8' });
      if (cp.status !== 0) throw new Error(`cp -a: ${cp.stderr}`);
      w.state = `arm:${c.arm.name}`;
      return null;
    }
    if (w.state !== 'pristine') {
      resetRoot(w.root);
      w.counts.resets++;
    }
    w.counts.arms++;
    const a = await runArm(subst(c.arm.script, w.root), w.root);
    w.state = c.arm.static ? `arm:${c.arm.name}` : 'dirty';
    if (!c.arm.static) w.armPgids.push(a.pgid);
    if (a.status !== 0) {
      w.state = 'dirty';
      return `arm ${c.arm.name} exited ${a.status}: ${a.stderr.trim().slice(0, 300)}`;
    }
    if (c.arm.static) {
      const dir = `${w.root.r}.arm-${c.arm.name}`;
      const cp = spawnSync('cp', ['-a', w.root.r, dir], { encoding: 'utf8' });
      if (cp.status !== 0) throw new Error(`cp -a: ${cp.stderr}`);
      w.armCache.set(c.arm.name, dir);
    }
    return null;
  } finally {
    w.prepMs += Date.now() - t0;
  }
}

/** The command Codex runs for an allowed call: Latch's own reads are replayed by the hook. */
function asRewritten(command: string, allowedCommand: string, root: Root): string {
  const args = latchReadArgs(command, root.entry);
  if (args !== null)
    return replayOf(root.latchHome, command, {
      stdout: Buffer.from(`latch (replayed by the hook) ${args.join(' ')}\n`),
      stderr: Buffer.alloc(0),
      code: 0,
    });
  return allowedCommand;
}

/** What the hook runs for a sealed read: the sandbox's argument vector, Latch's files hidden. */
function sealedCommand(root: Root, command: string, ctx: ClassifyContext): string {
  const hide = [ctx.latchHome, ...(ctx.protectedPaths ?? []).map((p) => p.path)];
  const p = root.sealed!.argv(command, runEnv(root, false), hide);
  return ['exec', p.file, ...p.args].map((w) => (w === 'exec' ? w : shellQuote(w))).join(' ') + ' </dev/null';
}

async function runMode(w: Worker, c: Case, mode: Mode, command: string): Promise<ModeResult> {
  const sb = mode === 'sandbox' ? w.root.sandbox : null;
  const ctx = ctxFor(w.root);
  const sandbox =
    mode === 'sealed'
      ? { wrap: (cmd: string) => sealedCommand(w.root, cmd, ctx), sealed: true }
      : sb
        ? { wrap: (cmd: string) => wrapReadOnly(cmd, sb), sealed: false }
        : null;
  const tc = Date.now();
  const d = heldShell(command, ctx, sandbox);
  w.classifyMs += Date.now() - tc;
  const r: ModeResult = {
    mode,
    allowed: d.allow,
    reasons: d.reasons,
    ran: false,
    status: null,
    timedOut: false,
    changes: [],
    canary: false,
    output: '',
    positiveProblem: null,
    ms: 0,
  };
  if (c.expect && !d.allow) r.positiveProblem = `denied: ${d.reasons.join(' | ')}`;
  if (!d.allow) return r;
  const run = asRewritten(command, d.command, w.root);
  const before = snapshot(w.root.r);
  const t0 = Date.now();
  const res = await runShell(run, w.root, {
    timeoutMs: c.timeoutMs ?? 4000,
    settleMs: c.settleMs ?? 150,
    ...(c.tty !== undefined ? { tty: subst(c.tty, w.root) } : {}),
    keepGroups: new Set(w.armPgids),
  });
  w.runMs[mode] += Date.now() - t0;
  r.ms = Date.now() - t0;
  const afterSnap = snapshot(w.root.r);
  r.ran = true;
  r.status = res.status;
  r.timedOut = res.timedOut;
  r.changes = diffSnapshots(before, afterSnap);
  if (r.changes.length > 0 || (c.arm !== undefined && !c.arm.static)) w.state = 'dirty';
  r.canary = (res.stdout + res.stderr).includes(CANARY);
  r.output = (res.stdout + (res.stderr ? `\n[stderr] ${res.stderr}` : '')).slice(0, 400);
  if (c.expect) {
    if (res.status !== (c.expectStatus ?? 0))
      r.positiveProblem = `exit ${res.status}${res.timedOut ? ' (timed out)' : ''}: ${res.stderr.slice(0, 300)}`;
    else if (!c.expect.test(res.stdout))
      r.positiveProblem = `unexpected output ${JSON.stringify(res.stdout.slice(0, 200))}`;
  }
  return r;
}

async function runCase(w: Worker, c: Case): Promise<CaseResult> {
  const out: CaseResult = { c, key: caseKey(c), command: subst(c.cmd, w.root), modes: [], armError: null };
  const modes: Mode[] = [
    ...(w.root.sealed ? (['sealed'] as const) : []),
    ...(w.root.sandbox ? (['sandbox'] as const) : []),
    'classifier' as const,
  ];
  for (const mode of modes) {
    // Each mode starts from the same state; prepare() restores or re-arms only what differs.
    const e = await prepare(w, c);
    out.armError ??= e;
    out.modes.push(await runMode(w, c, mode, out.command));
  }
  return out;
}

function failureText(r: CaseResult, m: ModeResult): string[] {
  const problems: string[] = [];
  if (m.changes.length > 0)
    problems.push(
      `changed: ${m.changes.slice(0, 6).join('; ')}${m.changes.length > 6 ? ` (+${m.changes.length - 6})` : ''}`,
    );
  if (m.canary) problems.push('the store/registration canary showed in the output');
  if (m.positiveProblem) problems.push(`positive read failed: ${m.positiveProblem}`);
  return problems.length === 0 ? [] : [`${r.key} [${m.mode}] ${problems.join(' / ')}`];
}

before(async () => {
  const t0 = Date.now();
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'latch-corpus2-')));
  roots = [buildRoot(path.join(base, 's0')), buildRoot(path.join(base, 's1'))];
  workers = roots.map((root) => ({
    root,
    state: 'pristine',
    armCache: new Map(),
    armPgids: [],
    prepMs: 0,
    counts: { resets: 0, restores: 0, arms: 0 },
    classifyMs: 0,
    runMs: { sealed: 0, sandbox: 0, classifier: 0 },
  }));
  let next = 0;
  const slots: Array<CaseResult | undefined> = new Array(cases.length);
  await Promise.all(
    workers.map(async (w) => {
      for (;;) {
        const i = next++;
        if (i >= cases.length) break;
        slots[i] = await runCase(w, cases[i]!);
      }
      w.armPgids.splice(0);
      endProcessesOf(w.root);
    }),
  );
  for (const s of slots) if (s) results.push(s);
  // Every arm is live: its potency command, run raw and unguarded right after it, changes the root.
  const arms = new Map<string, NonNullable<Case['arm']>>();
  for (const c of cases) if (c.arm?.potency !== undefined) arms.set(c.arm.name, c.arm);
  const w = workers[0]!;
  for (const a of arms.values()) {
    const c: Case = { cat: 'two-stage', cmd: a.potency!, arm: a, settleMs: 600, timeoutMs: 3000 };
    const err = await prepare(w, c);
    const before = snapshot(w.root.r);
    await runShell(subst(c.cmd, w.root), w.root, { timeoutMs: 3000, settleMs: 600, keepGroups: new Set(w.armPgids) });
    const changes = diffSnapshots(before, snapshot(w.root.r));
    w.state = 'dirty';
    potency.push({ arm: a.name, cmd: a.potency!, changes: err === null ? changes.length : 0, err });
  }
  if (w.armPgids.splice(0).length > 0) endProcessesOf(w.root);
  elapsedMs = Date.now() - t0;
});

after(() => {
  for (const r of roots) endProcessesOf(r);
  if (base) rmSync(base, { recursive: true, force: true, maxRetries: 3 });
});

describe('adversarial corpus (issue 10): heldShell decisions, run for real', () => {
  test('the corpus is large and every case ran through the oracle', (t) => {
    t.diagnostic(
      `${cases.length} cases, oracle finished in ${(elapsedMs / 1000).toFixed(1)} s; sandbox: ${roots[0]?.sandboxWhy}`,
    );
    for (const [i, w] of workers.entries()) {
      void i;
      t.diagnostic(
        `worker ${i}: prepare ${(w.prepMs / 1000).toFixed(1)} s (${w.counts.resets} resets, ${w.counts.restores} armed restores, ${w.counts.arms} arm runs), classify ${(w.classifyMs / 1000).toFixed(1)} s, runs sealed ${(w.runMs.sealed / 1000).toFixed(1)} s, runs sandboxed ${(w.runMs.sandbox / 1000).toFixed(1)} s, runs raw ${(w.runMs.classifier / 1000).toFixed(1)} s`,
      );
    }
    const slow = results
      .flatMap((r) => r.modes.map((m) => ({ k: `${r.key} [${m.mode}]`, ms: m.ms })))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 25);
    for (const s of slow) t.diagnostic(`slow ${s.ms} ms ${s.k}`);
    const byCat = new Map<string, number>();
    for (const r of results)
      for (const m of r.modes) byCat.set(`${r.c.cat}/${m.mode}`, (byCat.get(`${r.c.cat}/${m.mode}`) ?? 0) + m.ms);
    t.diagnostic(`run time by category: ${[...byCat].map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}`);
    assert.ok(cases.length >= 1500, `${cases.length} cases`);
    assert.equal(results.length, cases.length);
    assert.ok(
      roots.every((r) => r.sandbox !== null),
      `the real Codex sandbox must run here: ${roots[0]?.sandboxWhy}`,
    );
    assert.ok(
      roots.every((r) => r.sealed !== null),
      `Latch's sealed sandbox must run here (bubblewrap: .ci/run installs it): ${roots[0]?.sealedWhy}`,
    );
  });

  test('every arming step succeeded (a case armed wrong proves nothing)', () => {
    const bad = results.filter((r) => r.armError !== null).map((r) => `${r.key}: ${r.armError}`);
    assert.deepEqual([...new Set(bad)], []);
  });

  test('every arm is live: its command run raw and unguarded changes the scratch root', (t) => {
    t.diagnostic(`${potency.length} arms checked`);
    const dead = potency
      .filter((p) => p.changes === 0)
      .map((p) => `${p.arm}: \`${p.cmd}\` changed nothing${p.err ? ` (${p.err})` : ''}`);
    assert.ok(potency.length >= 25, `${potency.length} arms`);
    assert.deepEqual(dead, []);
  });

  test('the unsealed modes decide alike (Codex’s sandbox only wraps what the classifier admits)', () => {
    const odd = results
      .filter((r) => {
        const [a, b] = (['sandbox', 'classifier'] as const).map((m) => r.modes.find((x) => x.mode === m));
        return a !== undefined && b !== undefined && a.allowed !== b.allowed;
      })
      .map((r) => r.key);
    assert.deepEqual(odd, []);
  });

  test('the sealed mode admits everything the strict allowlist admits', () => {
    const odd = results
      .filter((r) => {
        const [a, b] = (['sealed', 'classifier'] as const).map((m) => r.modes.find((x) => x.mode === m));
        return a !== undefined && b !== undefined && b.allowed && !a.allowed;
      })
      .map((r) => r.key);
    assert.deepEqual(odd, []);
  });

  test('every program the classifier admits has GTFOBins-style payloads', () => {
    const src = readFileSync(path.resolve('src/shell/readonly.ts'), 'utf8');
    const start = src.indexOf('const CHECKS');
    const block = src.slice(start, src.indexOf(']);', src.indexOf('new Map', start)));
    const admitted = new Set([...block.matchAll(/'([a-z0-9]+)'/g)].map((m) => m[1]!));
    for (const extra of ['sh', 'bash', 'cd']) admitted.add(extra);
    assert.ok(admitted.size >= 20, `parsed ${admitted.size} admitted programs from readonly.ts`);
    const have = new Map<string, number>();
    for (const c of cases) if (c.cat === 'gtfobins' && c.prog) have.set(c.prog, (have.get(c.prog) ?? 0) + 1);
    const missing = [...admitted].filter((p) => (have.get(p) ?? 0) < 8);
    assert.deepEqual(missing, [], 'admitted programs without enough payloads');
  });

  for (const cat of CATEGORIES) {
    test(`category ${cat}: nothing an allowed call does changes the scratch root or reads the store`, async (t) => {
      const mine = results.filter((r) => r.c.cat === cat);
      const allowed = mine.filter((r) => r.modes.some((m) => m.allowed)).length;
      const ran = mine.reduce((n, r) => n + r.modes.filter((m) => m.ran).length, 0);
      const failures: Array<{ key: string; text: string }> = [];
      for (const r of mine)
        for (const m of r.modes)
          for (const text of failureText(r, m)) failures.push({ key: `${r.key}|${m.mode}`, text });
      t.diagnostic(
        `${cat}: ${mine.length} cases, ${allowed} allowed, ${mine.length - allowed} denied, ${ran} runs, ${failures.length} oracle failures (${failures.filter((f) => KNOWN.has(f.key)).length} known)`,
      );
      const unknown = failures.filter((f) => !KNOWN.has(f.key));
      for (const f of failures)
        t.diagnostic(`${KNOWN.has(f.key) ? 'KNOWN' : 'FAIL'} ${JSON.stringify(f.key)} :: ${f.text}`);
      for (const f of failures.filter((x) => KNOWN.has(x.key))) {
        await t.test(f.key, { todo: `known leak: ${knownCause(f.key)}` }, () => assert.fail(f.text));
      }
      assert.deepEqual(
        unknown.map((f) => f.text),
        [],
      );
    });
  }
});
