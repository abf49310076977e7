// End-to-end harness for Claude Code: the real pinned binary (@anthropic-ai/claude-code 2.1.332) in
// `claude -p` over the project's loopback fake of the Messages API, in a hermetic environment (temp
// HOME, CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR, LATCH_HOME), with Latch's hooks installed by the real
// `latch setup claude` (the built dist/latch.cjs) into the temp CLAUDE_CONFIG_DIR/settings.json.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  startClaudeFakeModel,
  toolResultsSeen,
  type ClaudeFakeModel,
  type ClaudeRequest,
  type ClaudeTurn,
  type ToolResult,
} from '../../src/agents/claude/fake-model.js';
import type { StatusJson } from './e2e.js';
import { stopLatchProcesses } from './workspace.js';

export const LATCH = resolve('dist', 'latch.cjs');
if (!existsSync(LATCH)) throw new Error('dist/latch.cjs is missing: run `npm run build` before the e2e tests');

export const CLAUDE_PACKAGE = resolve('node_modules', '@anthropic-ai', 'claude-code');
export const CLAUDE_VERSION = '2.1.332';
export const MCP_SERVER = resolve('test', 'helpers', 'claude-mcp-server.mjs');
/** The MCP server's name in --mcp-config: its tool is `mcp__w__write_file`. */
export const MCP_WRITE = 'mcp__w__write_file';

/** The native binary the postinstall copies to bin/claude.exe, else the package's node launcher. */
export function claudeCommand(): { cmd: string; args: string[] } {
  const exe = join(CLAUDE_PACKAGE, 'bin', 'claude.exe');
  if (existsSync(exe) && statSync(exe).size > 10 * 1024 * 1024) return { cmd: exe, args: [] };
  return { cmd: process.execPath, args: [join(CLAUDE_PACKAGE, 'cli-wrapper.cjs')] };
}

/** Environment variables that could send Claude Code elsewhere, change its auth, or leak a session. */
const STRIP = /^(ANTHROPIC_|CLAUDE_|CLAUDECODE$|OTEL_|AWS_BEARER_TOKEN_BEDROCK$|DISABLE_|MCP_|IS_SANDBOX$|LATCH_HOME$)/;

export interface ClaudeResultJson {
  session_id: string;
  result: string;
  is_error: boolean;
  terminal_reason?: string;
  permission_denials?: { tool_name: string; tool_use_id: string; tool_input: unknown }[];
  [k: string]: unknown;
}

export interface ClaudeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** The parsed `--output-format json` result (null when stdout was not JSON). */
  result: ClaudeResultJson | null;
  sessionId: string | null;
  /** Scripted turns the run did not use. */
  unused: number;
  /** The fake's requests made during this run. */
  requests: ClaudeRequest[];
}

/** A scripted answer, or one computed from the request it answers. */
export type ScriptedTurn = ClaudeTurn | ((req: ClaudeRequest) => ClaudeTurn);

export interface ClaudeOptions {
  /** The model's answers for this run, in order (main-agent requests only). */
  turns: ScriptedTurn[];
  resume?: string;
  /** `--continue`: the most recent session of the cwd. */
  continue?: boolean;
  /** With resume: `--fork-session` (a new session id whose transcript starts as a copy). */
  fork?: boolean;
  /** Start the test MCP server (`mcp__w__write_file`) with --mcp-config --strict-mcp-config. */
  mcp?: boolean;
  env?: Record<string, string>;
  timeoutMs?: number;
  /** A command that runs Claude Code: spawned as `wrap[0] …wrap[1..] CLAUDE …args` (e.g. nsenter). */
  wrap?: string[];
}

export interface ClaudeEnv {
  base: string;
  /** The session cwd: a git repository with README.md and a.txt committed. */
  work: string;
  home: string;
  configDir: string;
  tmpDir: string;
  latchHome: string;
  /** One line per `tools/call` the test MCP server received. */
  mcpCalls: string;
  settingsFile: string;
  fake: ClaudeFakeModel;
  /** `claude -p PROMPT --output-format json --dangerously-skip-permissions …`, to completion. */
  claude(prompt: string, opts: ClaudeOptions): Promise<ClaudeRun>;
  /** The real CLI: `node dist/latch.cjs …args`, from the test process (a plain process tree). */
  latch(args: string[], opts?: { input?: string }): { code: number; stdout: string; stderr: string };
  statusJson(): StatusJson;
  /** The tool result the model was sent for a tool_use id (first occurrence), if any. */
  toolResult(id: string): ToolResult | undefined;
  toolResults(): ToolResult[];
  /** Every text the model was sent (system prompt, messages, tool results), per request. */
  modelSaw(): string[];
  file(rel: string): string | null;
  /** The session's transcript lines ($CLAUDE_CONFIG_DIR/projects/<dir>/<id>.jsonl), parsed. */
  transcript(sessionId: string): any[];
  /** Lines the test MCP server logged for `tools/call`. */
  mcpCallsMade(): unknown[];
  readSettings(): any;
  writeSettings(settings: unknown): void;
  /** Closes the fake and stops the workspace's watchers; removes the files unless $KEEP is set. */
  cleanup(): Promise<void>;
}

export interface SetupOptions {
  /** $LATCH_HOME/config.toml. */
  latchConfig?: string;
  summary?: string;
}

function sh(cmd: string, args: string[], cwd: string): void {
  execFileSync(cmd, args, { cwd, stdio: 'ignore' });
}

export async function setupClaudeEnv(opts: SetupOptions = {}): Promise<ClaudeEnv> {
  const base = mkdtempSync(join(tmpdir(), 'latch-claude-e2e-'));
  const work = join(base, 'work');
  const home = join(base, 'home');
  const configDir = join(base, 'claude-config');
  const tmpDir = join(base, 'claude-tmp');
  const latchHome = join(base, 'latch-state');
  const mcpCalls = join(base, 'mcp-calls.jsonl');
  for (const d of [work, home, configDir, tmpDir]) mkdirSync(d, { recursive: true });
  sh('git', ['init', '-q', '-b', 'main'], work);
  writeFileSync(join(work, 'README.md'), '# e2e\n');
  writeFileSync(join(work, 'a.txt'), 'original\n');
  sh('git', ['add', '.'], work);
  sh('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'init'], work);

  let queue: ScriptedTurn[] = [];
  const fake = await startClaudeFakeModel({
    turns: (req) => {
      const next = queue.shift() ?? { content: [{ type: 'text', text: 'done' }] };
      return typeof next === 'function' ? next(req) : next;
    },
    summary: 'The user asked for a.txt and b.txt to be written; continue with the task.',
  });

  const baseEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!STRIP.test(k)) baseEnv[k] = v;
  Object.assign(baseEnv, {
    HOME: home,
    LATCH_HOME: latchHome,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_TMPDIR: tmpDir,
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: 'sk-ant-latch-e2e-fake',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    MCP_CALLS: mcpCalls,
    // The resident hook logs what it answered (test/helpers/resident.ts).
    LATCH_RESIDENT_TRACE: '1',
  });
  // As root, --dangerously-skip-permissions refuses to start unless it is told it runs in a sandbox.
  if (process.getuid?.() === 0) baseEnv.IS_SANDBOX = '1';

  const latch: ClaudeEnv['latch'] = (args, o = {}) => {
    const r = spawnSync(process.execPath, [LATCH, ...args], {
      cwd: work,
      env: baseEnv,
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
  const settingsFile = join(configDir, 'settings.json');
  const s = latch(['setup', 'claude']);
  if (s.code !== 0) throw new Error(`latch setup claude failed (${s.code}): ${s.stderr}${s.stdout}`);
  if (!existsSync(settingsFile)) throw new Error(`latch setup claude wrote no ${settingsFile}: ${s.stdout}`);

  const claudeBin = claudeCommand();
  const env: ClaudeEnv = {
    base,
    work,
    home,
    configDir,
    tmpDir,
    latchHome,
    mcpCalls,
    settingsFile,
    fake,
    latch,
    async claude(prompt, o) {
      queue = [...o.turns];
      const first = fake.requests.length;
      const args = [...claudeBin.args, '-p', prompt, '--output-format', 'json', '--dangerously-skip-permissions'];
      if (o.resume) args.push('--resume', o.resume);
      if (o.continue) args.push('--continue');
      if (o.fork) args.push('--fork-session');
      if (o.mcp) {
        const config = {
          mcpServers: {
            w: { type: 'stdio', command: process.execPath, args: [MCP_SERVER], env: { MCP_CALLS: mcpCalls } },
          },
        };
        args.push('--mcp-config', JSON.stringify(config), '--strict-mcp-config');
      }
      const t0 = Date.now();
      const [cmd, argv] = o.wrap?.length
        ? [o.wrap[0]!, [...o.wrap.slice(1), claudeBin.cmd, ...args]]
        : [claudeBin.cmd, args];
      const child = spawn(cmd, argv, {
        cwd: work,
        env: { ...baseEnv, ...(o.env ?? {}) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }, o.timeoutMs ?? 120_000);
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((res, rej) => {
        child.once('error', rej);
        child.once('close', (c, sig) => res([c, sig]));
      });
      clearTimeout(timer);
      if (timedOut) throw new Error(`claude timed out\n${stderr.slice(-3000)}\n${stdout.slice(-3000)}`);
      let result: ClaudeResultJson | null = null;
      try {
        result = JSON.parse(stdout) as ClaudeResultJson;
      } catch {
        result = null;
      }
      const unused = queue.length;
      queue = [];
      return {
        code,
        signal,
        stdout,
        stderr,
        ms: Date.now() - t0,
        result,
        sessionId: result?.session_id ?? null,
        unused,
        requests: fake.requests.slice(first),
      };
    },
    statusJson() {
      const r = latch(['status', '--json']);
      if (r.code !== 0) throw new Error(`latch status failed (${r.code}): ${r.stderr}`);
      return JSON.parse(r.stdout) as StatusJson;
    },
    toolResult(id) {
      return toolResultsSeen(fake.requests).find((t) => t.toolUseId === id);
    },
    toolResults() {
      return toolResultsSeen(fake.requests);
    },
    modelSaw() {
      return fake.requests.map((r) => [...r.systemTexts, ...r.messageTexts].join('\n'));
    },
    file(rel) {
      const p = join(work, rel);
      return existsSync(p) ? readFileSync(p, 'utf8') : null;
    },
    transcript(sessionId) {
      const root = join(configDir, 'projects');
      if (!existsSync(root)) return [];
      for (const d of readdirSync(root)) {
        const f = join(root, d, `${sessionId}.jsonl`);
        if (existsSync(f))
          return readFileSync(f, 'utf8')
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => JSON.parse(l));
      }
      return [];
    },
    mcpCallsMade() {
      if (!existsSync(mcpCalls)) return [];
      return readFileSync(mcpCalls, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l));
    },
    readSettings() {
      return JSON.parse(readFileSync(settingsFile, 'utf8'));
    },
    writeSettings(settings) {
      writeFileSync(settingsFile, JSON.stringify(settings, null, 2) + '\n');
    },
    async cleanup() {
      await fake.close();
      stopLatchProcesses(latchHome, base);
      if (process.env.KEEP) console.log(`KEPT ${base}`);
      else rmSync(base, { recursive: true, force: true, maxRetries: 10 });
    },
  };
  return env;
}

/** The texts of the first main request after the run's (first) compaction summary request. */
export function firstRequestAfterCompaction(requests: readonly ClaudeRequest[]): ClaudeRequest | undefined {
  const at = requests.findIndex((r) => r.kind === 'compact');
  if (at < 0) return undefined;
  return requests.slice(at + 1).find((r) => r.kind === 'main');
}

export type { ClaudeTurn, ClaudeRequest, ToolResult };
