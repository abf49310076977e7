// `latch doctor`'s Claude Code checks: Latch's handlers in Claude Code's settings files (written by
// ./setup.ts; installed in the form setup writes), nothing turning the hooks off, the hook command
// (its node and entry exist, it is what setup writes for this installation, and it fails closed end to
// end), and the Claude Code version; after the generic checks (store, watchers, src/commands/doctor.ts),
// what guards reads while a session is held (./sandbox.ts: bubblewrap + the pinned seccomp helper, as
// the hooks' probe found them) and the registration fingerprint (src/tamper/index.ts). Reached through
// the agent port (`claude.commands()`, ./commands.ts). A handler's command is compared as text, never
// run; the probe runs the command Latch builds itself; nothing here runs the sandbox probe.
import { constants, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { errorMessage } from '../../base/errors.js';
import { packageRoot } from '../../base/paths.js';
import { homeOf, type Io } from '../../kit/io.js';
import {
  checkRegistration,
  fileProblem,
  oneLine,
  probePreToolUse,
  projectDirOf,
  realOrSelf,
  registrationOf,
  thisInstallation,
  whichOnPath,
  type Check,
  type CheckStatus,
  type Installation,
  type ProbeSpec,
} from '../../kit/checks.js';
import type { AgentDoctor } from '../agent.js';
import { runBounded } from '../../base/bounded.js';
import { claudeReadsReport } from './sandbox.js';
import {
  CLAUDE_EVENTS,
  claudeHookCommand,
  claudeSettingsPath,
  hooksProblem,
  skippedSettingsProblem,
  isClaudeLatchHandler,
  matchesAll,
  parseClaudeHookCommand,
  TESTED_CLAUDE_VERSION,
} from './setup.js';

export interface ClaudeDoctorOptions {
  /** --project DIR (default: the cwd when it has a .claude/ directory). */
  project?: string;
  /** Claude Code's managed settings file (default: the system's; tests). */
  managedSettings?: string;
  /** Bound for each child process (`claude --version`, the hook probe). */
  timeoutMs: number;
  /** Where the read sandbox's parts are looked for (bubblewrap, sandbox-runtime); tests only. */
  sandboxPaths?: ClaudeSandboxPaths;
}

type ClaudeSandboxPaths = NonNullable<Parameters<typeof claudeReadsReport>[2]>;

const CLAUDE_SETUP_FIX = 'latch setup claude';

interface ClaudeHandlerRef {
  file: string;
  event: string;
  matcher: unknown;
  handler: Record<string, unknown>;
  command: string;
}

interface ClaudeScan {
  file: string;
  scope: 'user' | 'project' | 'project local';
  exists: boolean;
  error?: string;
  handlers: ClaudeHandlerRef[];
  disableAllHooks: boolean;
  /** Managed settings only: non-managed hooks do not run. */
  managedHooksOnly: boolean;
}

function scanClaudeSettings(file: string, scope: ClaudeScan['scope']): ClaudeScan {
  const scan: ClaudeScan = {
    file,
    scope,
    exists: existsSync(file),
    handlers: [],
    disableAllHooks: false,
    managedHooksOnly: false,
  };
  if (!scan.exists) return scan;
  let data: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    if (text.trim() === '') return scan;
    data = JSON.parse(text);
  } catch (err) {
    scan.error = `not valid JSON (${errorMessage(err)})`;
    return scan;
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    scan.error = 'not a JSON object';
    return scan;
  }
  const settings = data as { hooks?: unknown; disableAllHooks?: unknown; allowManagedHooksOnly?: unknown };
  scan.disableAllHooks = settings.disableAllHooks === true;
  scan.managedHooksOnly = settings.allowManagedHooksOnly === true;
  const problem = hooksProblem(settings.hooks) ?? skippedSettingsProblem(settings as Record<string, unknown>);
  if (problem) {
    scan.error = problem;
    return scan;
  }
  for (const [event, groups] of Object.entries((settings.hooks ?? {}) as Record<string, unknown[]>)) {
    for (const g of groups as { matcher?: unknown; hooks?: unknown[] }[]) {
      for (const h of g.hooks ?? []) {
        if (!isClaudeLatchHandler(h)) continue;
        const handler = h as Record<string, unknown>;
        scan.handlers.push({ file, event, matcher: g.matcher, handler, command: String(handler.command) });
      }
    }
  }
  return scan;
}

/** Claude Code's managed settings (what an organisation enforces), where this system keeps them. */
function claudeManagedSettingsPath(opts: ClaudeDoctorOptions): string {
  if (opts.managedSettings) return opts.managedSettings;
  return process.platform === 'darwin'
    ? '/Library/Application Support/ClaudeCode/managed-settings.json'
    : '/etc/claude-code/managed-settings.json';
}

interface ClaudeScans {
  scans: ClaudeScan[];
  managed: ClaudeScan;
  /** The project whose settings were read (--project, else the cwd when it has .claude/), or null. */
  projectDir: string | null;
}

/** The user settings, and the project's (--project, else the cwd when it has a .claude/ directory). */
function claudeScans(io: Io, opts: ClaudeDoctorOptions): ClaudeScans {
  const user = claudeSettingsPath({}, io.env, io.cwd);
  const scans = [scanClaudeSettings(user, 'user')];
  const projectDir = opts.project ? resolve(io.cwd, opts.project) : existsSync(join(io.cwd, '.claude')) ? io.cwd : null;
  if (projectDir) {
    const shared = claudeSettingsPath({ project: projectDir }, io.env, io.cwd);
    if (realOrSelf(shared) !== realOrSelf(user)) scans.push(scanClaudeSettings(shared, 'project'));
    scans.push(scanClaudeSettings(join(projectDir, '.claude', 'settings.local.json'), 'project local'));
  }
  return { scans, managed: scanClaudeSettings(claudeManagedSettingsPath(opts), 'user'), projectDir };
}

function claudeFixFor(scan: ClaudeScan): string {
  return scan.scope === 'user' ? CLAUDE_SETUP_FIX : `${CLAUDE_SETUP_FIX} --project ${projectDirOf(scan.file)}`;
}

/** Every Latch event has a handler, in the form setup writes: PreToolUse wrapped fail-closed, no matcher. */
function checkClaudeInstalled(scan: ClaudeScan, all: ClaudeScan[]): Check {
  const name = `claude hooks installed (${scan.scope})`;
  const fails: string[] = [];
  const warns: string[] = [];
  for (const spec of CLAUDE_EVENTS) {
    const hs = scan.handlers.filter((h) => h.event === spec.event);
    if (hs.length === 0) {
      fails.push(`${spec.event}: no Latch handler`);
      continue;
    }
    if (hs.length > 1) warns.push(`${spec.event}: ${hs.length} Latch handlers (each runs; setup keeps one)`);
    for (const h of hs) {
      // Where a gap would let a tool call through, it is a failure; elsewhere the ledger or brief degrades.
      const bad = (msg: string) => (spec.failClosed ? fails : warns).push(`${spec.event}: ${msg}`);
      if (!matchesAll(h.matcher))
        bad(`matcher ${JSON.stringify(h.matcher)} narrows it: other tools' calls never reach Latch`);
      if (h.handler.type !== 'command') bad(`type ${JSON.stringify(h.handler.type)} (setup writes "command")`);
      if (h.handler.async === true || h.handler.asyncRewake === true)
        bad('runs asynchronously: Claude Code does not wait for it, so it cannot deny a call');
      if (h.handler.if !== undefined) bad(`"if": ${JSON.stringify(h.handler.if)} limits the calls it runs for`);
      const parsed = parseClaudeHookCommand(h.command);
      if (!parsed) bad('command not in the form setup writes');
      else {
        if (parsed.event !== spec.event) fails.push(`${spec.event}: the command is for event ${parsed.event}`);
        if (spec.failClosed && !parsed.wrapped)
          fails.push(
            `${spec.event}: not wrapped fail-closed: a crash or a missing Latch would let the call through (Claude Code fails open on any exit but 2)`,
          );
        else if (!parsed.exact) warns.push(`${spec.event}: command text differs from what this Latch writes`);
      }
      if (spec.failClosed && h.handler.onFailure !== 'block')
        warns.push(
          `${spec.event}: no "onFailure": "block": a hook that times out lets the call through (Claude Code ${TESTED_CLAUDE_VERSION} blocks with it)`,
        );
      if (h.handler.timeout !== spec.timeout)
        warns.push(`${spec.event}: timeout ${JSON.stringify(h.handler.timeout)} (setup writes ${spec.timeout})`);
    }
  }
  for (const h of scan.handlers.filter((x) => !CLAUDE_EVENTS.some((s) => s.event === x.event)))
    warns.push(`${h.event}: unexpected Latch handler (setup does not install one there)`);
  const twice = all.filter((o) => o !== scan && o.handlers.length > 0);
  if (twice.length)
    warns.push(`Latch is also installed in ${twice.map((o) => o.file).join(', ')}: every Latch handler runs twice`);
  const present = CLAUDE_EVENTS.filter((s) => scan.handlers.some((h) => h.event === s.event)).map((s) => s.event);
  const detail = [`${scan.file}: ${present.join(', ') || 'none'}`, ...fails, ...warns].join('\n');
  const status: CheckStatus = fails.length ? 'fail' : warns.length ? 'warn' : 'ok';
  return status === 'ok' ? { name, status, detail } : { name, status, detail, fix: claudeFixFor(scan) };
}

/** Nothing turns Claude Code's hooks off: disableAllHooks, managed-only hooks, unreadable settings, bare/safe mode. */
function checkClaudeHooksRun(io: Io, c: ClaudeScans): Check {
  const name = 'claude hooks enabled';
  const fails: string[] = [];
  const warns: string[] = [];
  for (const s of c.scans) {
    if (s.error) fails.push(`${s.file}: ${s.error} (Claude Code cannot read its settings either)`);
    if (s.disableAllHooks) fails.push(`${s.file}: "disableAllHooks": true: Claude Code runs no hook`);
  }
  const m = c.managed;
  if (m.error) warns.push(`managed settings ${m.file}: ${m.error}`);
  if (m.disableAllHooks) fails.push(`managed settings ${m.file}: "disableAllHooks": true: Claude Code runs no hook`);
  if (m.managedHooksOnly)
    fails.push(
      `managed settings ${m.file}: "allowManagedHooksOnly": true: Claude Code runs only managed hooks, not Latch's`,
    );
  for (const v of ['CLAUDE_CODE_SIMPLE', 'CLAUDE_CODE_SAFE_MODE'])
    if (io.env[v] && io.env[v] !== '0' && io.env[v] !== 'false')
      warns.push(`${v} is set here: a Claude Code started with it runs without settings hooks (bare / safe mode)`);
  if (fails.length)
    return {
      name,
      status: 'fail',
      detail: [...fails, ...warns].join('\n'),
      fix: 'remove the setting (or fix the file), then run `latch doctor` again',
    };
  if (warns.length) return { name, status: 'warn', detail: warns.join('\n'), fix: 'unset it before starting `claude`' };
  return { name, status: 'ok', detail: 'no setting turns the hooks off' };
}

/** A Claude Code PreToolUse payload (2.1.332's shape) for the probe. */
function claudeProbePayload(dir: string, toolName: string, toolInput: unknown): string {
  return JSON.stringify({
    session_id: 'latch-doctor-probe',
    transcript_path: join(dir, 'transcript.jsonl'),
    cwd: dir,
    prompt_id: 'latch-doctor-probe-prompt',
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: toolName,
    tool_input: toolInput,
    tool_use_id: 'toolu_latch_doctor_probe',
  });
}

const CLAUDE_PROBE: ProbeSpec = {
  payload: claudeProbePayload,
  untracked: { name: 'Read', input: (dir) => ({ file_path: join(dir, 'none.txt') }) },
};

/** Each handler runs an existing node and Latch entry, as this installation writes it; the PreToolUse one fails closed. */
async function checkClaudeCommand(
  io: Io,
  handlers: ClaudeHandlerRef[],
  timeoutMs: number,
  inst: Installation,
): Promise<Check> {
  const name = 'claude hook command';
  const fix = `${CLAUDE_SETUP_FIX} (after \`npm run build\` or reinstalling agent-latch if the entry is gone)`;
  if (handlers.length === 0)
    return { name, status: 'fail', detail: 'no Latch hook command to check', fix: CLAUDE_SETUP_FIX };
  const fails: string[] = [];
  const oks: string[] = [];
  const seen = new Set<string>();
  let probe: { node: string; entry: string; where: string } | null = null;
  let unprobed: string | null = null;
  for (const h of handlers) {
    if (seen.has(h.command)) continue;
    seen.add(h.command);
    const where = `${h.event} in ${h.file}`;
    const parsed = parseClaudeHookCommand(h.command);
    if (!parsed) {
      fails.push(`${where}: cannot read the node binary and Latch entry out of the command`);
      continue;
    }
    const bad = [
      fileProblem(parsed.node, 'node binary', constants.X_OK),
      fileProblem(parsed.entry, 'Latch entry', constants.R_OK),
    ].filter((p): p is string => p !== null);
    if (bad.length) {
      fails.push(...bad.map((b) => `${where}: ${b}`));
      continue;
    }
    // Compared as text with what setup writes for this installation; never run as found.
    let match: { node: string; entry: string } | null = null;
    for (const node of inst.nodes)
      for (const entry of inst.entries)
        if (!match && claudeHookCommand(parsed.event, node, entry) === h.command) match = { node, entry };
    if (!match) {
      fails.push(
        `${where}: the command is not what \`latch setup claude\` writes for this installation (node ${inst.nodes.join(' or ')}, entry ${inst.entries[0]}); not run: ${oneLine(h.command, 160)}`,
      );
      continue;
    }
    if (h.event === 'PreToolUse' && !probe) {
      if (match.node === inst.nodes[0] && match.entry === inst.entries[0]) probe = { ...match, where };
      else
        unprobed = `${where}: not probed (it runs node ${match.node}, entry ${match.entry}; this doctor runs ${inst.nodes[0]}, ${inst.entries[0]})`;
    }
  }
  if (!handlers.some((h) => h.event === 'PreToolUse')) fails.push('no PreToolUse handler to probe');
  else if (!probe && unprobed) oks.push(unprobed);
  else if (probe) {
    const command = claudeHookCommand('PreToolUse', probe.node, probe.entry);
    const problems = await probePreToolUse(io, command, timeoutMs, CLAUDE_PROBE);
    if (problems.length) fails.push(...problems.map((p) => `${probe!.where}: ${p}`));
    else oks.push(`${probe.where}: Read passes, Bash denied with no store (fails closed)`);
  }
  if (fails.length) return { name, status: 'fail', detail: [...fails, ...oks].join('\n'), fix };
  const first = parseClaudeHookCommand(handlers[0]!.command)!;
  return { name, status: 'ok', detail: [`node ${first.node}, entry ${first.entry}`, ...oks].join('\n') };
}

/** `claude` on the PATH (else the one in Latch's own node_modules), and whether it is the tested release. */
async function checkClaudeVersion(io: Io, timeoutMs: number): Promise<Check> {
  const name = 'claude version';
  const install = `npm i -g @anthropic-ai/claude-code@${TESTED_CLAUDE_VERSION}`;
  let path = whichOnPath('claude', io.env);
  let from = 'PATH';
  if (!path) {
    const root = packageRoot();
    const local = root ? join(root, 'node_modules', '.bin', 'claude') : null;
    if (local && existsSync(local)) {
      path = local;
      from = "Latch's node_modules";
    }
  }
  if (!path)
    return { name, status: 'warn', detail: 'claude not found on PATH', fix: `install Claude Code: ${install}` };
  const env = { ...io.env, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
  const r = await runBounded(path, ['--version'], { env, cwd: io.cwd, timeoutMs });
  const raw = r.stdout.trim().split('\n')[0] ?? '';
  const version = /^(\d+\.\d+\.\d+)\b/.exec(raw)?.[1];
  if (!version) {
    const why = r.spawnError ?? (r.timedOut ? `no answer within ${timeoutMs} ms` : `exit ${r.code ?? r.signal}`);
    return {
      name,
      status: 'warn',
      detail: `${path} (from ${from}): \`claude --version\` gave no version (${why}${raw ? `: ${oneLine(raw)}` : ''})`,
      fix: 'check that `claude --version` works',
    };
  }
  const where = `${raw} (${path}, from ${from})`;
  if (version === TESTED_CLAUDE_VERSION)
    return { name, status: 'ok', detail: `${where}: the release Latch is tested with` };
  return {
    name,
    status: 'warn',
    detail: `${where} is not the release Latch is tested with (${TESTED_CLAUDE_VERSION}): its hook payloads, order or failure handling may differ. The latch still guards it`,
    fix: install,
  };
}

// ---------------------------------------------------------------------------------------------
// what guards reads while a session is held

const READS = 'claude reads while held';

/**
 * What guards Claude Code's held reads on this machine (./sandbox.ts's report, from the probe a hook
 * remembered; runs nothing): bubblewrap + seccomp, or Codex's sandbox lent, is ok (so is "not probed
 * yet": the first held read probes); the classifier alone is a warning, with what would give a sandbox.
 */
function checkClaudeReads(io: Io, paths: ClaudeSandboxPaths = {}): Check {
  const r = claudeReadsReport(homeOf(io), io.env, paths);
  if (r.guard !== 'classifier_only') return { name: READS, status: 'ok', detail: r.detail };
  return { name: READS, status: 'warn', detail: r.detail, fix: claudeReadsFix(io, r.detail) };
}

/** What would put the held reads back in a sandbox, from the reason the report gives. */
function claudeReadsFix(io: Io, detail: string): string {
  if (io.env.LATCH_SANDBOX === 'off') return 'leave LATCH_SANDBOX unset (LATCH_SANDBOX=off turns the sandbox off)';
  if (/Linux x64 only/.test(detail))
    return 'none on this system: the read-only sandbox for Claude Code (bubblewrap + seccomp) runs on Linux x64 only';
  const probe = join(homeOf(io), 'sandbox', 'claude-probe.json');
  const steps: string[] = [];
  if (/bubblewrap \(bwrap\) is not installed/.test(detail))
    steps.push('install bubblewrap (`sudo apt-get install bubblewrap`, `sudo dnf install bubblewrap`: /usr/bin/bwrap)');
  if (/sandbox-runtime|seccomp helper/.test(detail))
    steps.push(
      'reinstall Latch (`npm install -g agent-latch`): it runs the seccomp helper of the @anthropic-ai/sandbox-runtime release it pins',
    );
  if (/does not run here/.test(detail))
    steps.push(
      `let bubblewrap create user namespaces here (Ubuntu 24.04+ restricts them through AppArmor: an AppArmor profile for bwrap, or \`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0\`; in a container, allow unprivileged user namespaces), then remove ${probe} so the next held read probes again`,
    );
  if (/let a write through/.test(detail))
    steps.push(`check the bubblewrap installation (it let a write through), then remove ${probe} to probe again`);
  if (steps.length === 0)
    steps.push(
      'install bubblewrap (bwrap) and keep the @anthropic-ai/sandbox-runtime release Latch pins, and leave LATCH_SANDBOX unset',
    );
  return steps.join('; ');
}

async function claudeChecks(io: Io, c: ClaudeScans, timeoutMs: number): Promise<Check[]> {
  const installed = c.scans.filter((s) => s.handlers.length > 0);
  const checks: Check[] = installed.length
    ? installed.map((s) => checkClaudeInstalled(s, installed))
    : [
        {
          name: 'claude hooks installed',
          status: 'fail',
          detail: `no Latch handlers in ${c.scans.map((s) => s.file).join(', ')}`,
          fix: CLAUDE_SETUP_FIX,
        },
      ];
  checks.push(checkClaudeHooksRun(io, c));
  const handlers = installed.flatMap((s) => s.handlers);
  checks.push(await checkClaudeCommand(io, handlers, timeoutMs, thisInstallation(io)));
  checks.push(await checkClaudeVersion(io, timeoutMs));
  return checks;
}

/**
 * Claude Code's part of `latch doctor`: the settings files are read now (the user's; the project's
 * shared and local ones: --project, else the cwd when it has .claude/; the managed settings); the
 * checks run when asked. Latch counts as installed for Claude Code when a settings file holds a
 * Latch handler. After the shared checks, as Codex's: what guards reads while held, then the
 * registration fingerprint (the project's settings layers when a project was read, else the cwd's).
 */
export function claudeDoctor(io: Io, opts: ClaudeDoctorOptions): AgentDoctor {
  const c = claudeScans(io, opts);
  return {
    installed: c.scans.some((s) => s.handlers.length > 0),
    setupFix: CLAUDE_SETUP_FIX,
    checks: () => claudeChecks(io, c, opts.timeoutMs),
    afterShared: async () => [
      checkClaudeReads(io, opts.sandboxPaths),
      checkRegistration(registrationOf(io, c.projectDir ?? io.cwd), CLAUDE_SETUP_FIX),
    ],
  };
}
