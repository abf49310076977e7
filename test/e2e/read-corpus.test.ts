// Acceptance for issue 22: the read commands real agents typed (test/fixtures/read-corpus/commands.jsonl,
// from public trajectories, kept by a bubblewrap oracle that saw each leave the workspace unchanged) run
// through the Codex hook while the session is latched, and give what they give unguarded.
//
// For each command, in a copy of the corpus workspace:
//   unguarded — `/bin/bash -c <command>` in the workspace, twice (a command whose two runs differ is
//               nondeterministic: `date`, `ps`; it then only has to be allowed);
//   latched   — the PreToolUse hook (runCodexHook, with the real payload shape Codex 0.169+ sends; the
//               real binary is in held-reads.test.ts) decides: a deny is a refusal; an allow runs what
//               the hook answered (its updatedInput: the replay of what Latch ran in its sandbox).
// Pass: at least 97% of the commands allowed with the same stdout, stderr and exit status as unguarded.
// The suite runs every 8th command (a fixed, spread sample over every source, to keep CI short); READ_CORPUS=full runs
// them all (the numbers in docs/benchmarks.md), READ_CORPUS_LIMIT=N the first N of the selection,
// READ_CORPUS_REPORT=FILE writes every refusal and difference there.
// The summary names the refusals and the differences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCodexHook } from '../../src/hook.js';
import { assertValidReply } from '../helpers/schemas.js';
import { loadReadCorpus, makeCorpusWorkspace } from '../helpers/read-corpus.js';
import { appendCompaction, appendModelTurn, bash, sandbox } from '../helpers/workspace.js';

const LIMIT = Number(process.env.READ_CORPUS_LIMIT ?? Number.POSITIVE_INFINITY);
const STRIDE = process.env.READ_CORPUS === 'full' ? 1 : 8;
const GOAL = 0.97;
const TIMEOUT_MS = 20_000;

function cannotRun(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `Linux x64 only (${process.platform})`;
  if (!existsSync('/usr/bin/bwrap')) return 'bubblewrap is not installed (CI installs it with apt-get)';
  return false;
}

interface Ran {
  stdout: string;
  stderr: string;
  code: number | null;
}

function run(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve) => {
    const p = spawn('/bin/bash', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-p.pid!, 'SIGKILL');
      } catch {}
    }, TIMEOUT_MS);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code });
    });
  });
}

const same = (a: Ran, b: Ran) => a.stdout === b.stdout && a.stderr === b.stderr && a.code === b.code;

test('the reads real agents typed run while latched, with the output they give unguarded', {
  skip: cannotRun(),
  timeout: (STRIDE === 1 ? 90 : 15) * 60_000,
}, async (t) => {
  // READ_CORPUS_ONLY=FILE: the commands of a JSONL file of the same shape instead (a batch rerun).
  const all = process.env.READ_CORPUS_ONLY ? loadReadCorpus(process.env.READ_CORPUS_ONLY) : loadReadCorpus();
  const corpus = all.filter((_, i) => i % STRIDE === 0).slice(0, LIMIT);
  const sb = sandbox({ git: false });
  const base = mkdtempSync('/var/tmp/latch-read-corpus-run-');
  t.after(() => {
    sb.cleanup();
    rmSync(base, { recursive: true, force: true });
  });
  const template = path.join(base, 'template');
  makeCorpusWorkspace(template);
  // The session's workspace: a copy of the template at one fixed path, restored when a run changed it.
  const ws = sb.work;
  rmSync(ws, { recursive: true, force: true });
  cpSync(template, ws, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  const home = path.join(base, 'home');
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = { ...sb.env, HOME: home };
  const userEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', TERM: 'dumb' };
  const hook = async (command: string) => {
    const r = await runCodexHook(JSON.stringify(bash(sb, command)), 'PreToolUse', env);
    const reply = assertValidReply('PreToolUse', r.stdout) as {
      hookSpecificOutput?: {
        permissionDecision?: string;
        permissionDecisionReason?: string;
        updatedInput?: { command?: string };
      };
    } | null;
    const o = reply?.hookSpecificOutput;
    if (o?.permissionDecision === 'deny') return { denied: o.permissionDecisionReason ?? '' };
    return { command: o?.updatedInput?.command ?? command };
  };
  // Latch the session: one mutable call, then a compaction in the rollout.
  assert.equal((await hook('true')).denied, undefined);
  appendCompaction(sb.transcript);
  appendModelTurn(sb.transcript);
  assert.ok((await hook('echo x > x.txt')).denied !== undefined, 'the session is latched');

  let ok = 0;
  let nondeterministic = 0;
  const refused: { cmd: string; why: string }[] = [];
  const differ: { cmd: string; plain: Ran; latched: Ran }[] = [];
  const t0 = Date.now();
  for (const c of corpus) {
    const plain = await run(c.cmd, ws, userEnv);
    const h = await hook(c.cmd);
    if (h.denied !== undefined) {
      // The reason the refusal gives for this command comes after the session's (the same for every refusal).
      refused.push({ cmd: c.cmd, why: h.denied.replace(/\s+/g, ' ').slice(-240) });
      continue;
    }
    const latched = await run(h.command, ws, userEnv);
    if (same(plain, latched)) ok++;
    else if (!same(plain, await run(c.cmd, ws, userEnv))) {
      // Two unguarded runs differ (`date`, `ps`, timing): it only has to be allowed.
      nondeterministic++;
      ok++;
    } else differ.push({ cmd: c.cmd, plain, latched });
    const done = ok + refused.length + differ.length;
    if (done % 250 === 0)
      process.stderr.write(`  ${done}/${corpus.length} (${Math.round((Date.now() - t0) / 1000)} s)\n`);
  }
  const n = corpus.length;
  const pct = (x: number) => `${((100 * x) / n).toFixed(1)}%`;
  const lines = [
    `read corpus: ${n} of ${all.length} commands${STRIDE > 1 ? ` (every ${STRIDE}th; READ_CORPUS=full for all)` : ''} in ${Math.round((Date.now() - t0) / 1000)} s`,
    `  allowed with the same output: ${ok} (${pct(ok)}; ${nondeterministic} of them nondeterministic unguarded, allowed only)`,
    `  refused: ${refused.length} (${pct(refused.length)})`,
    `  allowed, other output: ${differ.length} (${pct(differ.length)})`,
    ...refused.slice(0, 40).map((r) => `  refused: ${JSON.stringify(r.cmd.slice(0, 100))}: ${r.why}`),
    ...differ
      .slice(0, 40)
      .map(
        (d) =>
          `  differs: ${JSON.stringify(d.cmd.slice(0, 100))}: exit ${d.plain.code}/${d.latched.code}, stdout ${d.plain.stdout.length}/${d.latched.stdout.length} B, stderr ${JSON.stringify(d.latched.stderr.slice(0, 120))}`,
      ),
  ];
  // READ_CORPUS_REPORT=FILE: every refusal and difference, whole, as JSON.
  if (process.env.READ_CORPUS_REPORT)
    writeFileSync(
      process.env.READ_CORPUS_REPORT,
      `${JSON.stringify({ n, ok, nondeterministic, refused, differ }, null, 1)}\n`,
    );
  t.diagnostic(lines.join('\n'));
  process.stderr.write(`${lines.join('\n')}\n`);
  assert.ok(all.length >= 1500, `the corpus holds ${all.length} commands (at least 1,500 expected)`);
  assert.ok(ok / n >= GOAL, `${pct(ok)} allowed with the same output (goal ${GOAL * 100}%)`);
});
