// End-to-end harness: the real pinned Codex (package.json) over the project's loopback fake model, with Latch's
// hooks installed by the real `latch setup codex` (the built dist/latch.cjs) into a temp CODEX_HOME.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  findRollout,
  resolveCodexBin,
  runCodex,
  writeCodexConfig,
  type RunCodexResult,
} from '../../src/agents/codex/driver.js';
import type { Box } from './pidbox.js';
import {
  itemText,
  startFakeModel,
  type FakeModel,
  type FakeStep,
  type RecordedRequest,
} from '../../src/agents/codex/fake-model.js';
import { stopLatchProcesses } from './workspace.js';

export const LATCH = resolve('dist', 'latch.cjs');
if (!existsSync(LATCH)) throw new Error('dist/latch.cjs is missing: run `npm run build` before the e2e tests');

export const PATCH = (file: string, line = 'x') => `*** Begin Patch\n*** Add File: ${file}\n+${line}\n*** End Patch\n`;
/** A response that reports a context big enough to trigger auto-compaction (limit set below). */
export const BIG = 50_000;
export const COMPACT_LIMIT = 10_000;

export interface Env {
  base: string;
  work: string;
  codexHome: string;
  latchHome: string;
  fake: FakeModel;
  /** Runs `codex exec` (or resume) to completion. */
  codex(prompt: string, opts?: { resume?: string; fork?: string; env?: NodeJS.ProcessEnv }): Promise<RunCodexResult>;
  /** Runs the real CLI: `node dist/latch.cjs ...args`. */
  latch(args: string[], opts?: { input?: string }): { code: number; stdout: string; stderr: string };
  statusJson(): StatusJson;
  /** Text of every input item the fake model received (tool outputs included). */
  modelSaw(): string[];
  file(rel: string): string | null;
  cleanup(): Promise<void>;
}

export interface StatusJson {
  workspace: string;
  reads: { guard: 'sandbox' | 'classifier_only' | 'unknown'; detail: string };
  sessions: {
    session_id: string;
    state: string;
    policy: string;
    reason: string | null;
    may_mutate: boolean;
    checkpoints: {
      id: string;
      trigger: string | null;
      observed_via: string[];
      created_at: string;
      tree: { sha256: string; files: number };
    }[];
  }[];
}

export async function setupEnv(
  steps: FakeStep[] | ((req: RecordedRequest, index: number) => FakeStep),
  opts: {
    latchConfig?: string;
    setupArgs?: string[];
    /** Codex's own sandbox for the agent's commands (default danger-full-access). */
    sandboxMode?: 'danger-full-access' | 'workspace-write' | 'read-only';
    /** Where the test's directory goes (default the temp directory): a home outside /tmp, as users have. */
    baseDir?: string;
  } = {},
): Promise<Env> {
  if (opts.baseDir) mkdirSync(opts.baseDir, { recursive: true });
  const base = mkdtempSync(join(opts.baseDir ?? tmpdir(), 'latch-e2e-'));
  const work = join(base, 'work');
  const codexHome = join(base, 'codex-home');
  const latchHome = join(base, 'latch-state');
  mkdirSync(work);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: work });
  writeFileSync(join(work, 'README.md'), '# e2e\n');
  writeFileSync(join(work, 'a.txt'), 'original\n');
  execFileSync('git', ['add', '.'], { cwd: work });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'init'], {
    cwd: work,
  });
  const fake = await startFakeModel({ steps, summary: 'Summary: a.txt was updated; continue with the task.' });
  writeCodexConfig(codexHome, {
    baseUrl: fake.url,
    autoCompactTokenLimit: COMPACT_LIMIT,
    sandboxMode: opts.sandboxMode,
  });
  const env = { ...process.env, LATCH_HOME: latchHome, CODEX_HOME: codexHome };
  const latch: Env['latch'] = (args, o = {}) => {
    const r = spawnSync(process.execPath, [LATCH, ...args], {
      cwd: work,
      env,
      input: o.input ?? '',
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  };
  if (opts.latchConfig !== undefined) {
    mkdirSync(latchHome, { recursive: true, mode: 0o700 });
    writeFileSync(join(latchHome, 'config.toml'), opts.latchConfig);
  }
  const s = latch(['setup', 'codex', '--codex-home', codexHome, ...(opts.setupArgs ?? [])]);
  if (s.code !== 0) throw new Error(`latch setup failed: ${s.stderr}`);
  return {
    base,
    work,
    codexHome,
    latchHome,
    fake,
    latch,
    async codex(prompt, o = {}) {
      const r = await runCodex({
        codexHome,
        cwd: work,
        prompt,
        resumeThreadId: o.resume,
        forkThreadId: o.fork,
        // The resident hook logs what it answered (test/helpers/resident.ts). Codex runs every command
        // and hook with `$SHELL -lc`; on a machine whose startup files run `pyenv rehash`, a login
        // shell Codex kills mid-rehash (its own commands when `codex exec` ends) leaves pyenv's lock,
        // and every later login shell waits 60 s for it: the suite waits 2 s at most.
        env: { LATCH_HOME: latchHome, LATCH_RESIDENT_TRACE: '1', PYENV_REHASH_TIMEOUT: '2', ...o.env },
        timeoutMs: 120_000,
      });
      if (r.timedOut) throw new Error(`codex timed out\n${r.stderr.slice(-3000)}`);
      return r;
    },
    statusJson() {
      const r = latch(['status', '--json']);
      if (r.code !== 0) throw new Error(`latch status failed: ${r.stderr}`);
      return JSON.parse(r.stdout) as StatusJson;
    },
    modelSaw() {
      return fake.requests.flatMap((r) => (Array.isArray(r.body?.input) ? r.body.input : [])).map(itemText);
    },
    file(rel) {
      const p = join(work, rel);
      return existsSync(p) ? readFileSync(p, 'utf8') : null;
    },
    async cleanup() {
      await fake.close();
      stopLatchProcesses(latchHome, base);
      rmSync(base, { recursive: true, force: true, maxRetries: 10 });
    },
  };
}

/** Tool outputs the model received for calls whose output mentions `needle`. */
export function outputsContaining(env: Env, needle: string): string[] {
  return env.modelSaw().filter((t) => t.includes(needle));
}

export { findRollout };

/**
 * `codex exec` over the env's fake model and Latch home, with Codex and everything it starts inside a
 * pid namespace the test owns (test/helpers/pidbox.ts): a launcher script, as runCodex runs a non-.js
 * codexBin itself.
 */
export function codexInBox(
  box: Box,
  env: Env,
  prompt: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<RunCodexResult> {
  const wrapper = box.launcher(join(env.base, 'codex-in-box'), env.work, [process.execPath, resolveCodexBin()]);
  return runCodex({
    codexBin: wrapper,
    codexHome: env.codexHome,
    cwd: env.work,
    prompt,
    env: { LATCH_HOME: env.latchHome, PYENV_REHASH_TIMEOUT: '2', ...extraEnv },
    timeoutMs: 150_000,
  });
}
