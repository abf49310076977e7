// `latch demo claude`: the Codex story (src/commands/demo/index.ts) told on the real Claude Code CLI. A temp
// git workspace, a temp CLAUDE_CONFIG_DIR holding Latch's hooks (written by `latch setup claude`'s own
// code), and `claude -p` against a loopback fake of the Messages API (src/agents/claude/fake-model.ts)
// whose script writes, reports a context that makes Claude Code auto-compact, then tries to write
// again and reads. Latch checkpoints and latches; the writes are denied while `cat` runs (inside the
// read-only sandbox where one works); `latch verify --yes` restores authority, and the session resumed
// with `--resume` writes again. Nothing leaves the machine.
import { isReplay } from '../../guard/replay.js';
import { spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  COMPACTING_INPUT_TOKENS,
  startClaudeFakeModel,
  toolResultsSeen,
  type ClaudeFakeModel,
  type ClaudeTurn,
} from '../../agents/claude/fake-model.js';
import { setupClaude, TESTED_CLAUDE_VERSION } from '../../agents/claude/setup.js';
import { runBounded } from '../../base/bounded.js';
import { ExitError, EXIT } from '../../base/errors.js';
import { type Io, withStore } from '../../kit/io.js';
import {
  capture,
  conclusion,
  type DemoOptions,
  type DemoPart,
  type DemoSession,
  demoStatus,
  fileText,
  initDemoWorkspace,
  quoteDenial,
  sessionStory,
  teller,
  verifyStep,
} from './shared.js';
import { listWatchers, stopWatchers } from '../shared/watchers.js';
import { resolveWorkspace } from '../shared/target.js';

/** The Claude Code the demo drives; pinned and tested: the package's devDependency. */
const DEMO_CLAUDE = TESTED_CLAUDE_VERSION;
const INSTALL = `npm i -g @anthropic-ai/claude-code@${DEMO_CLAUDE}`;

export interface DemoClaudeBinary {
  /** What to spawn: the native binary, or node with the package's launcher. */
  cmd: string;
  args: string[];
  /** What the story names. */
  path: string;
  version: string;
}

/** The scripted turns of the first run (one tool call per model response, as Claude Code's own). */
function firstTurns(work: string): ClaudeTurn[] {
  const bash = (id: string, command: string, inputTokens?: number): ClaudeTurn => ({
    content: [{ type: 'tool_use', id, name: 'Bash', input: { command, description: 'Update progress' } }],
    ...(inputTokens !== undefined ? { inputTokens } : {}),
  });
  return [
    bash('toolu_demo_step1', 'echo "step 1: parsed the config" > progress.txt', 200),
    // The reported context nearly fills the window: the tool runs, then Claude Code auto-compacts
    // before it sends the result back.
    bash('toolu_demo_step2', 'echo "step 2: wrote the tests" >> progress.txt', COMPACTING_INPUT_TOKENS),
    bash('toolu_demo_cat', 'cat progress.txt'),
    bash('toolu_demo_again', 'echo "step 1: parsed the config (again)" > progress.txt'),
    {
      content: [
        {
          type: 'tool_use',
          id: 'toolu_demo_write',
          name: 'Write',
          input: { file_path: join(work, 'notes.md'), content: '# Notes written after compaction\n' },
        },
      ],
    },
    { content: [{ type: 'text', text: 'My writes were blocked by Latch; waiting for a human to verify.' }] },
  ];
}

const DENIED_IDS = ['toolu_demo_again', 'toolu_demo_write'];

/** After `latch verify --yes`, the resumed session writes again. */
function resumeTurns(): ClaudeTurn[] {
  return [
    {
      content: [
        {
          type: 'tool_use',
          id: 'toolu_demo_step3',
          name: 'Bash',
          input: { command: 'echo "step 3: verified, continuing" >> progress.txt', description: 'Update progress' },
        },
      ],
    },
    { content: [{ type: 'text', text: 'Step 3 done.' }] },
  ];
}

/** @anthropic-ai/claude-code beside Latch (a checkout's devDependency, or a global install in the same prefix). */
function claudeBesideLatch(): Omit<DemoClaudeBinary, 'version'> | null {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code/package.json'));
  } catch {
    return null;
  }
  // The postinstall copies the native binary over bin/claude.exe; without it, the node launcher.
  const exe = join(dir, 'bin', 'claude.exe');
  if (existsSync(exe) && statSync(exe).size > 10 * 1024 * 1024) return { cmd: exe, args: [], path: exe };
  const wrapper = join(dir, 'cli-wrapper.cjs');
  if (existsSync(wrapper)) return { cmd: process.execPath, args: [wrapper], path: wrapper };
  return null;
}

function claudeOnPath(env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const p = join(dir, 'claude');
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

/** Variables that could send Claude Code elsewhere, change its auth, or leak the user's session into the demo. */
const STRIP =
  /^(ANTHROPIC_|CLAUDE_|CLAUDECODE$|OTEL_|AWS_BEARER_TOKEN_BEDROCK$|DISABLE_|MCP_|IS_SANDBOX$|LATCH_HOME$|HTTPS?_PROXY$|ALL_PROXY$)/i;

/** The hermetic environment of every `claude` the demo runs. */
function claudeEnv(
  io: Io,
  dirs: { home: string; configDir: string; tmpDir: string; latchHome: string },
  baseUrl: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(io.env)) if (v !== undefined && !STRIP.test(k)) env[k] = v;
  Object.assign(env, {
    HOME: dirs.home,
    LATCH_HOME: dirs.latchHome,
    CLAUDE_CONFIG_DIR: dirs.configDir,
    CLAUDE_CODE_TMPDIR: dirs.tmpDir,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-latch-demo-fake',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    NO_PROXY: '127.0.0.1,localhost',
  });
  // As root, --dangerously-skip-permissions refuses to start unless it is told it runs in a sandbox:
  // the demo's session is a throwaway workspace talking to a loopback fake, and Latch's hooks guard it.
  if (process.getuid?.() === 0) env.IS_SANDBOX = '1';
  return env;
}

/**
 * What the Claude Code part needs besides Latch and git: the real Claude Code CLI (beside Latch first,
 * else `claude` on the PATH), and that it answers `--version`. Checked before anything is created.
 */
export async function demoClaude(io: Io): Promise<DemoClaudeBinary> {
  const onPath = claudeOnPath(io.env);
  const found = claudeBesideLatch() ?? (onPath ? { cmd: onPath, args: [], path: onPath } : null);
  if (!found) {
    throw new ExitError(
      EXIT.failure,
      'the demo drives the real Claude Code CLI, which is not installed here (no `claude` on the PATH, no @anthropic-ai/claude-code beside Latch). ' +
        `Install it: \`${INSTALL}\` (the release the demo is tested with), then run \`latch demo claude\` again. ` +
        'Nothing leaves the machine: the model is a loopback fake.',
    );
  }
  const base = mkdtempSync(join(tmpdir(), 'latch-demo-claude-'));
  try {
    const dirs = { home: base, configDir: base, tmpDir: base, latchHome: join(base, 'latch') };
    const r = await runBounded(found.cmd, [...found.args, '--version'], {
      env: claudeEnv(io, dirs, 'http://127.0.0.1:9'),
      cwd: base,
      timeoutMs: 30_000,
    });
    const raw = r.stdout.trim().split('\n')[0] ?? '';
    const version = /^(\d+\.\d+\.\d+)\b/.exec(raw)?.[1];
    if (!version) {
      const why = r.spawnError ?? (r.timedOut ? 'no answer within 30 s' : `exit ${r.code ?? r.signal}`);
      throw new ExitError(
        EXIT.failure,
        `cannot run Claude Code at ${found.path} (\`claude --version\`: ${why}); reinstall it: \`${INSTALL}\``,
      );
    }
    return { ...found, version };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

interface ClaudeRun {
  code: number | null;
  timedOut: boolean;
  stderr: string;
  sessionId: string | null;
  /** Tool calls Claude Code reports as denied (by the hooks), by tool_use id. */
  denied: string[];
}

/** `claude -p PROMPT --output-format json --dangerously-skip-permissions [--resume ID]`, to completion. */
function runClaude(
  bin: DemoClaudeBinary,
  env: NodeJS.ProcessEnv,
  cwd: string,
  prompt: string,
  resume?: string,
): Promise<ClaudeRun> {
  const args = [...bin.args, '-p', prompt, '--output-format', 'json', '--dangerously-skip-permissions'];
  if (resume) args.push('--resume', resume);
  return new Promise((resolve, reject) => {
    const child = spawn(bin.cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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
    }, 120_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      let result: { session_id?: string; permission_denials?: { tool_use_id?: string }[] } | null = null;
      try {
        result = JSON.parse(stdout);
      } catch {
        result = null;
      }
      resolve({
        code,
        timedOut,
        stderr: stderr || stdout,
        sessionId: typeof result?.session_id === 'string' ? result.session_id : null,
        denied: (result?.permission_denials ?? []).map((d) => String(d.tool_use_id)),
      });
    });
  });
}

/**
 * How the hooks let a read through, from the session's transcript: the PreToolUse reply for the call,
 * rewritten (updatedInput) into bubblewrap or Codex's sandbox, or left as it was.
 */
function readRoute(
  configDir: string,
  sessionId: string | null,
  toolUseId: string,
): 'replayed' | 'bubblewrap' | 'codex' | 'none' {
  const root = join(configDir, 'projects');
  if (!sessionId || !existsSync(root)) return 'none';
  for (const d of readdirSync(root)) {
    const f = join(root, d, `${sessionId}.jsonl`);
    if (!existsSync(f)) continue;
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (!line.includes(toolUseId) || !line.includes('updatedInput')) continue;
      try {
        const a = JSON.parse(line).attachment;
        if (a?.toolUseID !== toolUseId || a?.hookEvent !== 'PreToolUse') continue;
        const command = String(JSON.parse(String(a.stdout)).hookSpecificOutput?.updatedInput?.command ?? '');
        if (isReplay(command)) return 'replayed';
        if (/\bbwrap\b/.test(command)) return 'bubblewrap';
        if (command.includes(' sandbox -- ')) return 'codex';
      } catch {
        /* not a hook reply */
      }
    }
  }
  return 'none';
}

function modelSawAfterCompaction(fake: ClaudeFakeModel): string[] {
  const at = fake.requests.findIndex((r) => r.kind === 'compact');
  if (at < 0) return [];
  return fake.requests
    .slice(at + 1)
    .filter((r) => r.kind === 'main')
    .map((r) => [...r.systemTexts, ...r.messageTexts].join('\n'));
}

/** The Claude Code story, on a Claude Code the caller found (demoClaude). */
export async function claudeDemoPart(io: Io, opts: DemoOptions, claude: DemoClaudeBinary): Promise<DemoPart> {
  const base = opts.dir ?? mkdtempSync(join(tmpdir(), 'latch-demo-'));
  const dirs = {
    home: join(base, 'home'),
    configDir: join(base, 'claude-config'),
    tmpDir: join(base, 'claude-tmp'),
    latchHome: join(base, 'latch-state'),
  };
  const work = join(base, 'work');
  for (const d of [work, dirs.home, dirs.configDir, dirs.tmpDir]) mkdirSync(d, { recursive: true });
  const say = teller(io, opts);
  let queue: ClaudeTurn[] = [];
  const fake = await startClaudeFakeModel({
    turns: () => queue.shift() ?? { content: [{ type: 'text', text: 'done' }] },
    summary: 'Summary: progress.txt has steps 1 and 2; the task goes on with step 3.',
  });
  const env = claudeEnv(io, dirs, fake.url);
  const sub: Io = { ...io, env, cwd: work };
  const run = (prompt: string, turns: ClaudeTurn[], resume?: string) => {
    queue = [...turns];
    return runClaude(claude, env, work, prompt, resume);
  };
  const failed = (what: string, r: ClaudeRun): DemoPart => {
    io.err(`${what} failed (exit ${r.code}${r.timedOut ? ', timed out' : ''}):\n${r.stderr.slice(-2000)}\n`);
    return { ok: false, json: { ok: false, agent: 'claude', dir: base, error: `${what} failed (exit ${r.code})` } };
  };
  try {
    initDemoWorkspace(work);

    say(`Latch demo (Claude Code) in ${base}`);
    say(
      `Claude Code ${claude.version} at ${claude.path}${claude.version === DEMO_CLAUDE ? '' : ` (the demo is tested with ${DEMO_CLAUDE}; other releases may tell a different story)`}`,
    );
    say(
      '1. Install Latch into a fresh CLAUDE_CONFIG_DIR (`latch setup claude`) and point Claude Code at a loopback fake Messages API.',
    );
    const setup = capture(sub);
    const setupCode = await setupClaude(setup.io, {});
    if (setupCode !== EXIT.ok || !existsSync(join(dirs.configDir, 'settings.json'))) {
      io.err(`latch setup claude failed (exit ${setupCode}):\n${setup.text()}`);
      return { ok: false, json: { ok: false, agent: 'claude', dir: base, error: 'latch setup claude failed' } };
    }

    say('2. Run a real `claude -p`: two writes, an auto-compaction, then three more calls.');
    const first = await run('Work through the task in progress.txt.', firstTurns(work));
    if (first.code !== 0 || first.timedOut || !first.sessionId) return failed('claude -p', first);
    const firstUnused = queue.length;
    const compactions = fake.requests.filter((r) => r.kind === 'compact').length;
    const statusJson = await demoStatus(sub, work, opts.commands);
    const session: DemoSession | undefined =
      statusJson.sessions.find((s) => s.session_id === first.sessionId) ?? statusJson.sessions[0];
    const results = toolResultsSeen(fake.requests);
    const denials = DENIED_IDS.map((id) => results.find((t) => t.toolUseId === id)).filter(
      (t) => t?.isError === true && t.text.includes('Latch'),
    );
    const cat = results.find((t) => t.toolUseId === 'toolu_demo_cat');
    const catRan = cat !== undefined && !cat.isError;
    const route = readRoute(dirs.configDir, first.sessionId, 'toolu_demo_cat');
    say(`   compactions requested by Claude Code: ${compactions}`);
    const { equal, now } = sessionStory(say, session, work);
    say(
      `   denied after compaction: ${session?.denials ?? 0} call(s) (Bash, Write); the model received ${denials.length} denial message(s), e.g.:`,
    );
    quoteDenial(say, denials[0]?.text);
    const where =
      route === 'replayed'
        ? `inside Latch's read-only sandbox (${/bubblewrap/.test(statusJson.reads?.detail ?? '') ? 'bubblewrap + seccomp' : (statusJson.reads?.detail ?? 'unknown')}), run by the hook, its output replayed to the agent,`
        : route === 'bubblewrap'
          ? "inside bubblewrap's read-only sandbox"
          : route === 'codex'
            ? "inside Codex's read-only sandbox"
            : `without a sandbox rewrite (Latch's guard for held reads here: ${statusJson.reads?.detail ?? 'unknown'})`;
    say(
      catRan
        ? `   the read-only \`cat progress.txt\` ran ${where} and returned ${JSON.stringify(cat.text.trim())}`
        : `   the read-only \`cat progress.txt\` did NOT run: ${cat?.text.slice(0, 200) ?? 'no result'}`,
    );
    const briefDelivered = modelSawAfterCompaction(fake).some((t) => t.includes('<<<LATCH-BRIEF'));
    say(`   task brief re-delivered to the model after the compaction: ${briefDelivered ? 'yes' : 'no'}`);
    say(`   progress.txt is still: ${JSON.stringify(fileText(join(work, 'progress.txt')))}`);

    const verifyCode = await verifyStep(say, sub, work, 3, opts.commands);

    say('4. The session resumes (`claude -p --resume`) and may write again:');
    const before = fake.requests.length;
    const second = await run('Continue.', resumeTurns(), first.sessionId);
    const resumeBrief = fake.requests
      .slice(before)
      .some((r) => r.kind === 'main' && [...r.systemTexts, ...r.messageTexts].join('\n').includes('<<<LATCH-BRIEF'));
    const progress = fileText(join(work, 'progress.txt'));
    say(
      `   resume exit ${second.code} (same session: ${second.sessionId === first.sessionId ? 'yes' : 'no'}; brief re-delivered: ${resumeBrief ? 'yes' : 'no'}); progress.txt now:\n${progress.trimEnd().replace(/^/gm, '     ')}`,
    );
    const ok =
      firstUnused === 0 &&
      compactions >= 1 &&
      session?.state === 'latched' &&
      equal &&
      denials.length === DENIED_IDS.length &&
      catRan &&
      verifyCode === 0 &&
      second.code === 0 &&
      progress.includes('step 3') &&
      !progress.includes('(again)') &&
      !existsSync(join(work, 'notes.md'));
    conclusion(say, ok, opts, base, `LATCH_HOME=${dirs.latchHome} latch status --cwd ${work}`);
    return {
      ok,
      json: {
        ok,
        agent: 'claude',
        dir: base,
        claude_version: claude.version,
        compactions,
        status: statusJson,
        tree_now: now,
        denied_by_claude: first.denied,
        denials_seen_by_model: denials.length,
        read_ran: catRan,
        read_route: route,
        brief_delivered: briefDelivered,
        verify_exit: verifyCode,
        resume_exit: second.code,
        progress,
      },
    };
  } finally {
    await fake.close();
    // The workspace watcher a hook started: stopped now rather than when it notices the files gone.
    try {
      const io = capture(sub).io;
      withStore(io, (db) => stopWatchers(listWatchers(db, resolveWorkspace(io, work))), { ifMissing: () => [] });
    } catch {
      /* no store, no watcher */
    }
    if (!opts.keep && !opts.dir) rmSync(base, { recursive: true, force: true, maxRetries: 5 });
  }
}
