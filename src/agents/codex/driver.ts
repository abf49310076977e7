// Helpers to drive the real Codex CLI (0.169) non-interactively: config, exec, resume, fork.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { findRolloutIn } from './lineage.js';

export interface CodexConfigOptions {
  /** Responses API base URL, e.g. the fake model's `url` (http://127.0.0.1:PORT/v1). */
  baseUrl: string;
  autoCompactTokenLimit?: number;
  /** Model slug; must be a catalog slug or Codex omits the apply_patch tool. Default gpt-5.5. */
  model?: string;
  /** Appended verbatim after the generated keys. Top-level keys here would land inside a table. */
  extraToml?: string;
  /** Extra top-level keys (raw TOML lines) placed before any table. */
  extraTopLevelToml?: string;
  /** Codex's own sandbox for the agent's commands; default `danger-full-access`. */
  sandboxMode?: 'danger-full-access' | 'workspace-write' | 'read-only';
}

/** Writes $CODEX_HOME/config.toml for an offline loopback provider (top-level keys before tables). */
export function writeCodexConfig(codexHome: string, opts: CodexConfigOptions): string {
  mkdirSync(codexHome, { recursive: true });
  const lines = [
    `model = ${JSON.stringify(opts.model ?? 'gpt-5.5')}`,
    'model_provider = "mock"',
    'approval_policy = "never"',
    `sandbox_mode = ${JSON.stringify(opts.sandboxMode ?? 'danger-full-access')}`,
    'check_for_update_on_startup = false',
    ...(opts.autoCompactTokenLimit !== undefined
      ? [`model_auto_compact_token_limit = ${Math.trunc(opts.autoCompactTokenLimit)}`]
      : []),
    ...(opts.extraTopLevelToml ? [opts.extraTopLevelToml.trimEnd()] : []),
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[model_providers.mock]',
    'name = "mock"',
    `base_url = ${JSON.stringify(opts.baseUrl)}`,
    'wire_api = "responses"',
    'requires_openai_auth = false',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    ...(opts.extraToml ? [opts.extraToml.trimEnd(), ''] : []),
  ];
  const file = join(codexHome, 'config.toml');
  writeFileSync(file, lines.join('\n'));
  return file;
}

/** Path of the `codex` launcher (bin/codex.js) of the project's @openai/codex dependency. */
export function resolveCodexBin(): string {
  const require = createRequire(import.meta.url);
  const pkgJson = require.resolve('@openai/codex/package.json');
  const pkg = require(pkgJson) as { bin: string | Record<string, string> };
  const rel = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.codex;
  if (!rel) throw new Error('@openai/codex has no codex bin');
  return join(dirname(pkgJson), rel);
}

export interface RunCodexOptions {
  /** A JS launcher (run with node) or a native binary. Default: resolveCodexBin(). */
  codexBin?: string;
  codexHome: string;
  cwd: string;
  prompt: string;
  /** `codex exec resume <id> <prompt>`. */
  resumeThreadId?: string;
  /** `codex exec fork <id> <prompt>` (new thread whose history starts as a copy). */
  forkThreadId?: string;
  /** Extra CLI args placed after the exec flags (e.g. ['-c', 'key=value']). */
  extraArgs?: string[];
  env?: Record<string, string>;
  /** Kill (SIGKILL to the process group) after this long; default 120 s. */
  timeoutMs?: number;
}

export interface RunCodexResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Parsed `--json` lines (unparseable lines are skipped). */
  events: any[];
  /** From the `thread.started` event. */
  threadId?: string;
  stdout: string;
  stderr: string;
}

/** Arguments after the binary for one `codex exec` invocation. */
export function codexExecArgs(
  opts: Pick<RunCodexOptions, 'prompt' | 'resumeThreadId' | 'forkThreadId' | 'extraArgs'>,
): string[] {
  if (opts.resumeThreadId && opts.forkThreadId) throw new Error('resumeThreadId and forkThreadId are exclusive');
  const flags = ['--dangerously-bypass-hook-trust', '--json', '--skip-git-repo-check', ...(opts.extraArgs ?? [])];
  if (opts.resumeThreadId) return ['exec', 'resume', ...flags, opts.resumeThreadId, opts.prompt];
  if (opts.forkThreadId) return ['exec', 'fork', ...flags, opts.forkThreadId, opts.prompt];
  return ['exec', ...flags, '--', opts.prompt];
}

export function runCodex(opts: RunCodexOptions): Promise<RunCodexResult> {
  const bin = opts.codexBin ?? resolveCodexBin();
  const args = codexExecArgs(opts);
  const [cmd, argv] = /\.[cm]?js$/.test(bin) ? [process.execPath, [bin, ...args]] : [bin, args];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // Keep real credentials and proxies away from the child; it talks to loopback only.
    if (v === undefined || /^(OPENAI_|CODEX_|HTTPS?_PROXY$|ALL_PROXY$)/i.test(k)) continue;
    env[k] = v;
  }
  Object.assign(
    env,
    { CODEX_HOME: opts.codexHome, NO_PROXY: '127.0.0.1,localhost', RUST_LOG: env.RUST_LOG ?? 'error' },
    opts.env,
  );

  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: opts.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, opts.timeoutMs ?? 120_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const events: any[] = [];
      for (const line of stdout.split('\n')) {
        if (!line.trim()) continue;
        try {
          events.push(JSON.parse(line));
        } catch {
          /* not a JSON event line */
        }
      }
      const threadId = events.find((e) => e?.type === 'thread.started')?.thread_id;
      resolve({ code, signal, timedOut, events, threadId, stdout, stderr });
    });
  });
}

/** Rollout files (`rollout-*.jsonl`) under $CODEX_HOME/sessions, oldest first by name. */
export function listRollouts(codexHome: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names.sort()) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/^rollout-.*\.jsonl$/.test(n)) out.push(p);
    }
  };
  walk(join(codexHome, 'sessions'));
  return out;
}

/** The rollout file of a thread (its name ends with the thread id). */
export function findRollout(codexHome: string, threadId: string): string | undefined {
  return findRolloutIn(join(codexHome, 'sessions'), threadId) ?? undefined;
}

/** Writes $CODEX_HOME/hooks.json. `hooks` is the value of the top-level "hooks" key. */
export function writeHooksJson(codexHome: string, hooks: Record<string, unknown[]>): string {
  mkdirSync(codexHome, { recursive: true });
  const file = join(codexHome, 'hooks.json');
  writeFileSync(file, JSON.stringify({ hooks }, null, 2));
  return file;
}
