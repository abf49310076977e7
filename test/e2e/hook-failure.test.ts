// Upstream facts, measured on the real pinned binaries (Codex 0.171.0 `codex exec`, Claude Code 2.1.332
// `claude -p`, each over the project's loopback fake model): what the agent does with a Bash call when
// its PreToolUse hook is killed by a signal, outlives its timeout, exits non-zero other than 2, or
// prints invalid JSON. The hooks are tiny shell scripts written here, not Latch's. If an upgrade changes
// what an agent does, these assertions say so. The table and what it means for Latch:
// docs/hook-failures.md.
//
// One agent run per configuration, each making one Bash call per case (`echo x > w-<case>.txt`, so the
// file says whether the call ran) and ending with a call the hook denies with exit 2 (the control: the
// hook is still in force after the failures). The runs go concurrently: they mostly wait.
import { runBounded } from '../../src/base/bounded.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { itemText, startFakeModel } from '../../src/agents/codex/fake-model.js';
import { runCodex, writeCodexConfig, writeHooksJson } from '../../src/agents/codex/driver.js';
import { startClaudeFakeModel, toolResultsSeen } from '../../src/agents/claude/fake-model.js';
import { wrapFailClosed } from '../../src/base/hook-text.js';
import { CLAUDE_VERSION, claudeCommand } from '../helpers/claude.js';

const CODEX_VERSION = '0.171.0';
const T = { timeout: 240_000 };

const CASES = ['selfkill', 'childkill', 'timeout', 'exit1', 'badjson', 'notjson', 'badschema', 'deny'] as const;
/**
 * Latch's compensation, on Codex: the fail-closed wrapper Latch's setup puts around its PreToolUse hook
 * (src/base/hook-text.ts), here around a tiny script. `wrapkill`: the script's node child is SIGKILLed
 * inside the wrapper; `wrapperkill`: the wrapper's own shell is SIGKILLed.
 */
const WRAPPED = ['wrapkill', 'wrapperkill'] as const;
type Case = (typeof CASES)[number] | (typeof WRAPPED)[number];
/** Every case but the control: the hook failed. */
const FAILURES = CASES.filter((c) => c !== 'deny');
const cmdOf = (c: Case | 'outside') => (c === 'outside' ? 'echo x > ../outside.txt' : `echo x > w-${c}.txt`);
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The hook scripts, picked by the file the command writes. hook.sh (timeout 60 s) does every case but
 * the timeout; slow.sh (timeout 2 s) sleeps past its timeout on the timeout case and exits 0 at once on
 * the others. Both append `<case> start` to the log before they act. Each is registered as
 * `exec /bin/sh SCRIPT`, so the process the agent spawned is the script's shell.
 */
function writeHooks(dir: string): { log: string; hook: string; slow: string; wrapped: string } {
  const log = join(dir, 'hook.log');
  const hook = join(dir, 'hook.sh');
  const slow = join(dir, 'slow.sh');
  const wrapped = join(dir, 'wrapped.sh');
  const node = shq(process.execPath);
  writeFileSync(
    hook,
    [
      '#!/bin/sh',
      'payload=$(cat)',
      `log=${shq(log)}`,
      'case "$payload" in',
      // (a) The process the agent spawned kills itself with SIGKILL.
      '  *w-selfkill.txt*) echo "selfkill start" >> "$log"; kill -9 $$; echo "selfkill survived" >> "$log" ;;',
      // (a') The shell is fine; its child node is SIGKILLed and the shell exits with its status.
      `  *w-childkill.txt*) echo "childkill start" >> "$log"; ${node} -e 'process.kill(process.pid, "SIGKILL")'; st=$?; echo "childkill status $st" >> "$log"; exit $st ;;`,
      // (c) Exit 1 with a message on stderr.
      '  *w-exit1.txt*) echo "exit1 start" >> "$log"; echo "hook exploded" >&2; exit 1 ;;',
      // (d) A deny cut short: the JSON never closes.
      `  *w-badjson.txt*) echo "badjson start" >> "$log"; printf '%s' ${shq('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"half a deny"')}; exit 0 ;;`,
      // (d') Plain text, no JSON at all.
      '  *w-notjson.txt*) echo "notjson start" >> "$log"; echo "this is not JSON"; exit 0 ;;',
      // (d'') Well-formed JSON with a decision no schema knows.
      `  *w-badschema.txt*) echo "badschema start" >> "$log"; echo ${shq('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}')}; exit 0 ;;`,
      // The control: a deny the agents document (exit 2, reason on stderr).
      '  *w-deny.txt*) echo "deny start" >> "$log"; echo "denied by the test hook" >&2; exit 2 ;;',
      'esac',
      'exit 0',
      '',
    ].join('\n'),
  );
  writeFileSync(
    slow,
    [
      '#!/bin/sh',
      'payload=$(cat)',
      `log=${shq(log)}`,
      'case "$payload" in',
      // (b) The hook's child (a shell whose own child sleeps) records its pid, then outlives the timeout.
      '  *w-timeout.txt*) echo "timeout start $(date +%s%3N)" >> "$log"',
      `    /bin/sh -c ${shq('echo "timeout child $$" >> "$1"; sleep 10; echo "timeout child finished" >> "$1"')} _ "$log"`,
      '    echo "timeout parent finished" >> "$log"; exit 2 ;;',
      'esac',
      'exit 0',
      '',
    ].join('\n'),
  );
  writeFileSync(
    wrapped,
    [
      '#!/bin/sh',
      'payload=$(cat)',
      `log=${shq(log)}`,
      'case "$payload" in',
      `  *w-wrapkill.txt*) echo "wrapkill start" >> "$log"; ${node} -e 'process.kill(process.pid, "SIGKILL")'; st=$?; echo "wrapkill status $st" >> "$log"; exit $st ;;`,
      '  *w-wrapperkill.txt*) echo "wrapperkill start" >> "$log"; kill -9 $PPID; exit 0 ;;',
      'esac',
      'exit 0',
      '',
    ].join('\n'),
  );
  for (const f of [hook, slow, wrapped]) chmodSync(f, 0o755);
  return { log, hook, slow, wrapped };
}

interface Scene {
  cases: readonly Case[];
  /** The call wrote its file. */
  ran: Partial<Record<Case, boolean>>;
  /** The text the model got back for the call. */
  saw: Partial<Record<Case, string>>;
  /** Claude Code only: is_error of the tool_result. */
  isError: Partial<Record<Case, boolean>>;
  /** Claude Code only: the transcript's hook attachments for the call, by the script that ran. */
  attachments: Partial<Record<Case, { script: string; type: string; exitCode: unknown; stderr: unknown }[]>>;
  log: string[];
  /** The timeout case's child shell still runs when the agent has finished (read from /proc). */
  timeoutChildAlive: boolean | null;
  /** Milliseconds from the timeout hook's start to the call's file write. */
  timeoutWaitMs: number | null;
  /** Codex only: the call writing outside the workspace ran. */
  outsideRan?: boolean;
  code: number | null;
  stderr: string;
  /** How long the agent ran. */
  ms?: number;
  /** Every text the model was sent (Codex: input items; Claude Code: system, messages, tool results). */
  modelTexts?: string[];
}

const readLog = (log: string): string[] =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];

function finish(
  base: string,
  work: string,
  log: string[],
  cases: readonly Case[],
): Pick<Scene, 'ran' | 'timeoutChildAlive' | 'timeoutWaitMs'> {
  const ran: Partial<Record<Case, boolean>> = {};
  for (const c of cases) ran[c] = existsSync(join(work, `w-${c}.txt`));
  let timeoutChildAlive: boolean | null = null;
  const pid = log.map((l) => /^timeout child (\d+)$/.exec(l)?.[1]).find((p) => p !== undefined);
  if (pid) {
    try {
      // Alive unless gone or a zombie; nothing is signalled.
      timeoutChildAlive = !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      timeoutChildAlive = false;
    }
  }
  let timeoutWaitMs: number | null = null;
  const start = log.map((l) => /^timeout start (\d+)$/.exec(l)?.[1]).find((s) => s !== undefined);
  const file = join(work, 'w-timeout.txt');
  if (start && existsSync(file)) timeoutWaitMs = Math.round(statSync(file).mtimeMs - Number(start));
  if (process.env.KEEP) console.log(`KEPT ${base}`);
  return { ran, timeoutChildAlive, timeoutWaitMs };
}

function cleanup(base: string): void {
  if (!process.env.KEEP) rmSync(base, { recursive: true, force: true, maxRetries: 5 });
}

async function codexScene(
  sandboxMode: 'danger-full-access' | 'workspace-write',
  opts: { wrapped?: boolean; cases?: readonly Case[] } = {},
): Promise<Scene> {
  // Outside the temp directory, as users' homes are: Codex 0.171.0 refuses to create its sandbox
  // helper under /tmp, and workspace-write then fails every command.
  const root = join(homedir(), '.cache', 'latch-e2e');
  mkdirSync(root, { recursive: true });
  const base = mkdtempSync(join(root, 'hookfail-codex-'));
  const codexHome = join(base, 'codex-home');
  const work = join(base, 'work');
  const home = join(base, 'home');
  mkdirSync(work, { recursive: true });
  mkdirSync(home, { recursive: true });
  const h = writeHooks(base);
  const cases: readonly Case[] = [...(opts.cases ?? CASES), ...(opts.wrapped ? WRAPPED : [])];
  // Each case, then a command writing outside the workspace (what the sandbox mode allows), then "done".
  const steps = [...cases, 'outside' as const].map((c) => ({ items: [{ type: 'bash' as const, cmd: cmdOf(c) }] }));
  const fake = await startFakeModel({ steps });
  try {
    writeCodexConfig(codexHome, { baseUrl: fake.url, sandboxMode });
    writeHooksJson(codexHome, {
      PreToolUse: [
        {
          matcher: 'Bash',
          hooks: [
            { type: 'command', command: `exec /bin/sh ${shq(h.hook)}`, timeout: 60 },
            { type: 'command', command: `exec /bin/sh ${shq(h.slow)}`, timeout: 2 },
            ...(opts.wrapped
              ? [
                  {
                    type: 'command',
                    command: wrapFailClosed(`/bin/sh ${shq(h.wrapped)}`, 'codex', h.wrapped),
                    timeout: 60,
                  },
                ]
              : []),
          ],
        },
      ],
    });
    const t0 = Date.now();
    const run = await runCodex({
      codexHome,
      cwd: work,
      prompt: 'write the files',
      // Codex runs every hook and command as `$SHELL -lc`: a home of its own keeps the machine's login
      // files (a `pyenv init` takes seconds on a busy machine) out of the 2 s the timeout case has.
      env: { HOME: home, PYENV_REHASH_TIMEOUT: '2' },
      timeoutMs: 180_000,
    });
    assert.equal(run.timedOut, false, `codex timed out\n${run.stderr.slice(-3000)}`);
    const input = fake.requests.flatMap((r) => (Array.isArray(r.body?.input) ? r.body.input : []));
    const saw: Partial<Record<Case, string>> = {};
    for (const c of cases) {
      const call = input.find((i: any) => i?.type === 'function_call' && String(i.arguments).includes(`w-${c}.txt`));
      const out = call && input.find((i: any) => i?.type === 'function_call_output' && i.call_id === call.call_id);
      if (out) saw[c] = itemText(out);
    }
    const log = readLog(h.log);
    return {
      cases,
      saw,
      isError: {},
      attachments: {},
      log,
      ...finish(base, work, log, cases),
      outsideRan: existsSync(join(dirname(work), 'outside.txt')),
      modelTexts: input.map(itemText),
      code: run.code,
      stderr: run.stderr,
      ms: Date.now() - t0,
    };
  } finally {
    await fake.close();
    cleanup(base);
  }
}

/** The transcript's hook attachments (`hook_success`, `hook_non_blocking_error`, `hook_cancelled`, ...). */
function hookAttachments(configDir: string): any[] {
  const out: any[] = [];
  const root = join(configDir, 'projects');
  if (!existsSync(root)) return out;
  for (const d of readdirSync(root)) {
    const dir = join(root, d);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir))
      if (f.endsWith('.jsonl'))
        for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
          if (!line.includes('"hook_')) continue;
          const a = (JSON.parse(line) as { attachment?: { type?: unknown } }).attachment;
          if (a && typeof a.type === 'string' && a.type.startsWith('hook_')) out.push(a);
        }
  }
  return out;
}

async function claudeScene(opts: { onFailure?: 'block'; cases: readonly Case[] }): Promise<Scene> {
  const base = mkdtempSync(join(tmpdir(), 'latch-hookfail-claude-'));
  const work = join(base, 'work');
  const home = join(base, 'home');
  const configDir = join(base, 'claude-config');
  const tmpDir = join(base, 'claude-tmp');
  for (const d of [work, home, configDir, tmpDir]) mkdirSync(d, { recursive: true });
  const h = writeHooks(base);
  const { cases } = opts;
  const fake = await startClaudeFakeModel({
    turns: cases.map((c) => ({
      content: [{ type: 'tool_use' as const, id: `toolu_${c}`, name: 'Bash', input: { command: cmdOf(c) } }],
    })),
  });
  try {
    const extra = opts.onFailure ? { onFailure: opts.onFailure } : {};
    const handlers = [
      ...(cases.some((c) => c !== 'timeout')
        ? [{ type: 'command', command: `exec /bin/sh ${shq(h.hook)}`, timeout: 60, ...extra }]
        : []),
      ...(cases.includes('timeout')
        ? [{ type: 'command', command: `exec /bin/sh ${shq(h.slow)}`, timeout: 2, ...extra }]
        : []),
    ];
    writeFileSync(
      join(configDir, 'settings.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: handlers }] } }, null, 2),
    );
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!/^(ANTHROPIC_|CLAUDE_|CLAUDECODE$|OTEL_|AWS_BEARER_TOKEN_BEDROCK$|DISABLE_|MCP_|IS_SANDBOX$|LATCH_)/.test(k))
        env[k] = v;
    Object.assign(env, {
      HOME: home,
      CLAUDE_CONFIG_DIR: configDir,
      CLAUDE_CODE_TMPDIR: tmpDir,
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: 'sk-ant-latch-e2e-fake',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    });
    // As root, --dangerously-skip-permissions refuses to start unless it is told it runs in a sandbox.
    if (process.getuid?.() === 0) env.IS_SANDBOX = '1';
    const bin = claudeCommand();
    const t0 = Date.now();
    const { code, timedOut, stdout, stderr } = await runBounded(
      bin.cmd,
      [...bin.args, '-p', 'write the files', '--output-format', 'json', '--dangerously-skip-permissions'],
      { cwd: work, env, timeoutMs: 180_000 },
    );
    assert.equal(timedOut, false, `claude timed out\n${stderr.slice(-3000)}\n${stdout.slice(-3000)}`);
    const results = toolResultsSeen(fake.requests);
    const atts = hookAttachments(configDir);
    const saw: Partial<Record<Case, string>> = {};
    const isError: Partial<Record<Case, boolean>> = {};
    const attachments: Scene['attachments'] = {};
    for (const c of cases) {
      const r = results.find((x) => x.toolUseId === `toolu_${c}`);
      if (r) {
        saw[c] = r.text;
        isError[c] = r.isError;
      }
      attachments[c] = atts
        .filter((a) => a.toolUseID === `toolu_${c}`)
        .map((a) => ({
          script: String(a.command ?? '').includes('slow.sh') ? 'slow.sh' : 'hook.sh',
          type: String(a.type),
          exitCode: a.exitCode,
          stderr: a.stderr,
        }));
    }
    const log = readLog(h.log);
    const ms = Date.now() - t0;
    const modelTexts = fake.requests.flatMap((r) => [...r.systemTexts, ...r.messageTexts]);
    return { cases, saw, isError, attachments, log, ...finish(base, work, log, cases), code, stderr, ms, modelTexts };
  } finally {
    await fake.close();
    cleanup(base);
  }
}

// Started together when the file loads; each test awaits its own (a failure there rejects only it).
const quiet = <X>(p: Promise<X>): Promise<X> => {
  p.catch(() => {});
  return p;
};
const scenes = {
  codex: quiet(codexScene('danger-full-access', { wrapped: true })),
  // The sandbox bounds the command, not the hook: one case of each kind is enough to show it.
  codexWorkspaceWrite: quiet(
    codexScene('workspace-write', { cases: ['selfkill', 'timeout', 'exit1', 'badjson', 'deny'] }),
  ),
  claude: quiet(claudeScene({ cases: CASES })),
  // onFailure "block" turns a slow hook into a denial, so the timeout case gets a run of its own: a
  // stall of the other cases' slow.sh (it exits at once, but the machine may be busy) would block them.
  claudeBlock: quiet(claudeScene({ onFailure: 'block', cases: CASES.filter((c) => c !== 'timeout') })),
  claudeBlockTimeout: quiet(claudeScene({ onFailure: 'block', cases: ['timeout'] })),
};

/** What the failing hooks wrote (stderr, stdout) or what an agent would say of them, as the model might see it. */
const FAILURE_TEXT =
  /hook exploded|half a deny|this is not JSON|"maybe"|non-blocking|validation failed|No stderr output/i;

/** The model was told nothing of the failed hooks: no request carried their output or a word about them. */
function assertModelToldNothing(s: Scene, what: string): void {
  const told = (s.modelTexts ?? []).filter((x) => FAILURE_TEXT.test(x));
  assert.deepEqual(told, [], `${what}: the model saw the hooks' failures`);
}

/** Every hook ran and did what its case says (so "the call ran" is the agent's doing, not a hook that never started). */
function assertHooksActed(s: Scene, what: string): void {
  const log = s.log.join('\n');
  for (const c of s.cases) assert.match(log, new RegExp(`^${c} start`, 'm'), `${what}: the ${c} hook ran\n${log}`);
  if (s.cases.includes('selfkill')) assert.doesNotMatch(log, /selfkill survived/, `${what}: the hook died`);
  if (s.cases.includes('childkill')) assert.match(log, /^childkill status 137$/m, `${what}: node died of SIGKILL`);
  if (s.cases.includes('wrapkill')) assert.match(log, /^wrapkill status 137$/m, `${what}: node died of SIGKILL`);
  if (s.cases.includes('timeout')) {
    // The agent killed the hook's shell, and its child with it: neither got past the sleep.
    assert.doesNotMatch(log, /timeout parent finished/, `${what}: the hook was stopped at its timeout`);
    assert.doesNotMatch(log, /timeout child finished/, `${what}: the hook's child was stopped too`);
    assert.equal(s.timeoutChildAlive, false, `${what}: the hook's child is gone`);
  }
}

function assertCodexFailsOpen(s: Scene, what: string): void {
  assert.equal(s.code, 0, `${what}: codex exit\n${s.stderr.slice(-3000)}`);
  assertHooksActed(s, what);
  for (const c of FAILURES.filter((f) => s.cases.includes(f))) {
    assert.equal(s.ran[c], true, `${what}: the ${c} call ran (fails open)`);
    // The model gets the command's ordinary result: nothing says a hook failed.
    assert.match(s.saw[c] ?? '', /Process exited with code 0/, `${what}: ${c}: ${s.saw[c]}`);
    assert.doesNotMatch(s.saw[c] ?? '', /hook/i, `${what}: ${c}: ${s.saw[c]}`);
  }
  // Nothing in `codex exec`'s output names the failed hooks; the control's denial is logged.
  assert.doesNotMatch(
    s.stderr,
    /hook exploded|half a deny|this is not JSON|w-(selfkill|childkill|timeout|exit1|badjson|notjson|badschema)\.txt/,
    s.stderr.slice(-3000),
  );
  assertModelToldNothing(s, what);
  assert.equal(s.ran.deny, false, `${what}: the control was denied`);
  assert.equal(s.saw.deny, `Command blocked by PreToolUse hook: denied by the test hook. Command: ${cmdOf('deny')}`);
}

test(
  `Codex ${CODEX_VERSION}: a PreToolUse hook that is SIGKILLed, times out, exits 1 or prints bad JSON lets the Bash call run (fails open)`,
  T,
  async (t) => {
    const s = await scenes.codex;
    assertCodexFailsOpen(s, 'danger-full-access');
    assert.equal(s.outsideRan, true, 'danger-full-access: a write outside the workspace runs');
    // Latch's wrapper turns the killed node into a denial; nothing turns a killed wrapper into one.
    assert.equal(s.ran.wrapkill, false, 'the wrapper denied the call whose hook node was SIGKILLed');
    // The reason is the hook's whole stderr: the shell's own "Killed" line, then the wrapper's sentence.
    assert.match(
      s.saw.wrapkill ?? '',
      /^Command blocked by PreToolUse hook: (Killed\n)?Latch could not check this call \(hook exited 137\); blocking it\. Run: latch doctor\. Command: echo x > w-wrapkill\.txt$/,
    );
    assert.equal(s.ran.wrapperkill, true, 'a SIGKILLed wrapper shell lets the call run');
    assert.match(s.saw.wrapperkill ?? '', /Process exited with code 0/);
    t.diagnostic(
      `codex ran ${s.ms} ms; timeout case: the call ran ${s.timeoutWaitMs} ms after the hook started (timeout 2 s, hook sleeps 10 s)`,
    );
  },
);

test(
  `Codex ${CODEX_VERSION}: the same in workspace-write (hooks run outside the sandbox; it only bounds the command)`,
  T,
  async (t) => {
    const s = await scenes.codexWorkspaceWrite;
    // The hooks wrote their log outside the workspace and outside /tmp: they are not sandboxed.
    assertCodexFailsOpen(s, 'workspace-write');
    assert.equal(s.outsideRan, false, 'workspace-write: the sandbox is in force (a write outside the workspace fails)');
    t.diagnostic(`codex ran ${s.ms} ms; timeout case: the call ran ${s.timeoutWaitMs} ms after the hook started`);
  },
);

test(
  `Claude Code ${CLAUDE_VERSION}: without onFailure, every hook failure lets the Bash call run (fails open)`,
  T,
  async (t) => {
    const s = await scenes.claude;
    assert.equal(s.code, 0, s.stderr.slice(-3000));
    assertHooksActed(s, 'claude');
    for (const c of FAILURES) {
      assert.equal(s.ran[c], true, `claude: the ${c} call ran (fails open)`);
      assert.equal(s.isError[c], false, `claude: ${c}: ${s.saw[c]}`);
      // The model gets the command's ordinary result.
      assert.equal(s.saw[c], '(Bash completed with no output)', `claude: ${c}`);
    }
    // Nor anywhere else: the failures are in the transcript (below), not in what the model is sent.
    assertModelToldNothing(s, 'claude');
    // What the transcript records about hook.sh's (or slow.sh's) run for each call.
    const att = (c: Case, script = 'hook.sh') => s.attachments[c]?.find((a) => a.script === script);
    // A hook killed by a signal is recorded as exit code 1.
    assert.deepEqual(att('selfkill'), {
      script: 'hook.sh',
      type: 'hook_non_blocking_error',
      exitCode: 1,
      stderr: 'Failed with non-blocking status code: No stderr output',
    });
    assert.equal(att('childkill')?.type, 'hook_non_blocking_error');
    assert.equal(att('childkill')?.exitCode, 137);
    assert.equal(att('timeout', 'slow.sh')?.type, 'hook_cancelled');
    assert.equal(att('exit1')?.type, 'hook_non_blocking_error');
    assert.equal(att('exit1')?.stderr, 'Failed with non-blocking status code: hook exploded');
    // Output that is not JSON (cut short, or plain text) is a success whose stdout is just text.
    assert.equal(att('badjson')?.type, 'hook_success');
    assert.equal(att('notjson')?.type, 'hook_success');
    assert.equal(att('badschema')?.type, 'hook_non_blocking_error');
    assert.match(String(att('badschema')?.stderr), /Hook JSON output validation failed/);
    assert.equal(s.ran.deny, false);
    assert.equal(s.isError.deny, true);
    assert.match(
      s.saw.deny ?? '',
      /^PreToolUse:Bash hook error: \[exec \/bin\/sh '[^']*hook\.sh'\]: denied by the test hook/,
    );
    t.diagnostic(
      `claude ran ${s.ms} ms; timeout case: the call ran ${s.timeoutWaitMs} ms after the hook started (timeout 2 s, hook sleeps 10 s)`,
    );
  },
);

test(
  `Claude Code ${CLAUDE_VERSION}: with onFailure "block", a killed, failing, timed-out or schema-invalid hook denies; output that is not JSON still lets the call run`,
  T,
  async () => {
    const s = await scenes.claudeBlock;
    const st = await scenes.claudeBlockTimeout;
    assert.equal(s.code, 0, s.stderr.slice(-3000));
    assert.equal(st.code, 0, st.stderr.slice(-3000));
    assertHooksActed(s, 'claude, onFailure block');
    assertHooksActed(st, 'claude, onFailure block, timeout');
    const blocked = (script: string, how: string) =>
      new RegExp(
        `^PreToolUse:Bash hook error: \\[exec /bin/sh '[^']*${script.replace('.', '\\.')}'\\]: ${how}; blocking because onFailure is "block"`,
      );
    const denied: [Scene, Case, RegExp][] = [
      [s, 'selfkill', new RegExp(`${blocked('hook.sh', 'failed').source}\\nNo stderr output$`)],
      [s, 'childkill', new RegExp(`${blocked('hook.sh', 'failed').source}\\nKilled`)],
      [st, 'timeout', blocked('slow.sh', 'timed out')],
      [s, 'exit1', new RegExp(`${blocked('hook.sh', 'failed').source}\\nhook exploded`)],
      [s, 'badschema', new RegExp(`${blocked('hook.sh', 'failed').source}\\nHook JSON output validation failed`)],
    ];
    for (const [scene, c, re] of denied) {
      assert.equal(scene.ran[c], false, `onFailure block: the ${c} call did not run`);
      assert.equal(scene.isError[c], true, `onFailure block: ${c}: ${scene.saw[c]}`);
      assert.match(scene.saw[c] ?? '', re, `onFailure block: ${c}`);
    }
    // A deny cut short, or plain text, is not a failure to Claude Code: the call runs even so.
    for (const c of ['badjson', 'notjson'] as const) {
      assert.equal(s.ran[c], true, `onFailure block: the ${c} call ran`);
      assert.equal(s.saw[c], '(Bash completed with no output)', `onFailure block: ${c}`);
    }
    assert.equal(s.ran.deny, false);
    assert.match(s.saw.deny ?? '', /denied by the test hook/);
  },
);
