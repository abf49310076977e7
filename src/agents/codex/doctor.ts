// `latch doctor`'s Codex checks: Latch's handlers in Codex's hooks.json files (installed, in the form
// setup writes), the hook command (its node and entry exist, it is what setup writes for this
// installation, and it fails closed end to end), Codex's trust in each handler, the Codex version, and
// what guards reads while a session is held. Reached through the agent port (`codex.commands()`,
// ./commands.ts); the generic checks (store, watchers) are src/commands/doctor.ts's.
// Read-only towards the user's state: the end-to-end hook probe runs against a throwaway LATCH_HOME,
// Codex is asked through a bounded, offline `codex app-server` started on a throwaway copy of
// CODEX_HOME (config.toml + hooks.json). Doctor never runs a command taken from a hooks file: a
// handler's command is compared, as text, with what setup writes for this installation, and the probe
// runs the command Latch builds itself.
import { constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { errorMessage } from '../../base/errors.js';
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
import {
  codexVersion,
  isolatedCodexHome,
  listCodexHooksIsolated,
  resolveCodex,
  type CodexCommand,
  type CodexHookInfo,
  type HooksListEntry,
  type IsolatedCodexHome,
} from './app-server.js';
import { eachLatchHandler } from '../../tamper/handlers.js';
import { readsReport } from './sandbox.js';
import { withoutEntryGuard } from '../../base/hook-text.js';
import { hookCommand, hooksFilePath, LATCH_EVENTS } from './setup.js';

export interface CodexDoctorOptions {
  /** --codex-home DIR (default: $CODEX_HOME, else ~/.codex). */
  codexHome?: string;
  /** --project DIR (default: the cwd when it has .codex/hooks.json). */
  project?: string;
  /** Bound for each child process (Codex, the hook probe). */
  timeoutMs: number;
}

/**
 * The oldest Codex release Latch was measured on (issue 11: the latch, ledger and doctor work on 0.153.4
 * through 0.171.0). Informational only: which releases are qualified is read from the qualification
 * records (src/agents/codex/qualification.ts), never from a constant.
 */
export const MIN_CODEX_VERSION = '0.153.4';
const SETUP_FIX = 'latch setup codex';
const TRUST_FIX = 'open `codex`, run /hooks and trust the Latch handlers';

// ---------------------------------------------------------------------------------------------
// hooks.json scanning

type Scope = 'user' | 'project';

export interface LatchHandlerRef {
  file: string;
  scope: Scope;
  event: string;
  groupIndex: number;
  handlerIndex: number;
  command: string;
  matcher: string | null;
  timeout: unknown;
  statusMessage: unknown;
}

interface HooksScan {
  file: string;
  scope: Scope;
  exists: boolean;
  error?: string;
  handlers: LatchHandlerRef[];
}

function scanHooksFile(file: string, scope: Scope): HooksScan {
  const scan: HooksScan = { file, scope, exists: existsSync(file), handlers: [] };
  if (!scan.exists) return scan;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    scan.error = `not valid JSON (${errorMessage(err)})`;
    return scan;
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    scan.error = 'not a JSON object';
    return scan;
  }
  const hooks = (data as { hooks?: unknown }).hooks;
  if (hooks === undefined) return scan;
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks)) {
    scan.error = '"hooks" is not an object';
    return scan;
  }
  eachLatchHandler(hooks, ({ event, group, index, matcher, handler }) =>
    scan.handlers.push({
      file,
      scope,
      event,
      groupIndex: group,
      handlerIndex: index,
      command: handler.command,
      matcher,
      timeout: handler.timeout,
      statusMessage: handler.statusMessage,
    }),
  );
  return scan;
}

/** True when every Latch event has a handler in this file. */
function complete(scan: HooksScan): boolean {
  return !scan.error && LATCH_EVENTS.every((s) => scan.handlers.some((h) => h.event === s.event));
}

// ---------------------------------------------------------------------------------------------
// hook command parsing

/** The leading shell words of `s` (quotes and backslashes resolved), up to an unquoted ; & | or newline. */
export function leadingWords(s: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) return words; // unterminated: give up on this word
      cur += s.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length && '$`"\\\n'.includes(s[i + 1]!)) i++;
        cur += s[i];
        i++;
      }
      if (i >= s.length) return words;
      inWord = true;
      i++;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[i + 1];
      inWord = true;
      i += 2;
    } else if (c === ' ' || c === '\t') {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      i++;
    } else if (c === ';' || c === '&' || c === '|' || c === '\n') {
      break;
    } else {
      cur += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

export interface ParsedHookCommand {
  /** The node binary, or null when the command runs a `latch` launcher directly. */
  node: string | null;
  /** The bundled entry (latch.cjs), or the launcher when node is null. */
  entry: string;
  event: string;
}

/** Reads node, entry and event out of a command written by `hookCommand` (or `latch hook codex ...`). */
export function parseHookCommand(command: string): ParsedHookCommand | null {
  let words = leadingWords(command.trim());
  if (words.length >= 3 && /(^|\/)(ba|da)?sh$/.test(words[0]!) && words[1] === '-c')
    words = leadingWords(withoutEntryGuard(words[2]!.trim()));
  const at = words.indexOf('hook');
  if (at < 1 || words[at + 1] !== 'codex' || words[at + 2] !== '--event' || !words[at + 3]) return null;
  if (at === 1) return { node: null, entry: words[0]!, event: words[at + 3]! };
  if (at === 2) return { node: words[0]!, entry: words[1]!, event: words[at + 3]! };
  return null;
}

function sameMatcher(actual: string | null, expected: string | null): boolean {
  if (expected === null) return actual === null || actual === '' || actual === '*';
  return actual === expected;
}

// ---------------------------------------------------------------------------------------------
// check 1: hooks installed

function checkInstalled(scan: HooksScan, others: HooksScan[]): Check {
  const name = `hooks installed (${scan.scope})`;
  const elsewhere = others.find((o) => complete(o));
  if (!scan.exists) {
    if (elsewhere)
      return { name, status: 'ok', detail: `${scan.file} does not exist; Latch is installed in ${elsewhere.file}` };
    const fix = scan.scope === 'project' ? `latch setup codex --project ${projectDirOf(scan.file)}` : SETUP_FIX;
    return { name, status: 'fail', detail: `${scan.file} does not exist; no Latch handlers are installed`, fix };
  }
  if (scan.error)
    return {
      name,
      status: 'fail',
      detail: `${scan.file}: ${scan.error} (Codex cannot load it either)`,
      fix: `fix ${scan.file} by hand, then run \`${SETUP_FIX}\``,
    };
  if (scan.handlers.length === 0) {
    if (elsewhere)
      return {
        name,
        status: 'ok',
        detail: `${scan.file} has no Latch handlers; Latch is installed in ${elsewhere.file}`,
      };
    return { name, status: 'fail', detail: `${scan.file} has no Latch handlers`, fix: setupFix(scan) };
  }
  const fails: string[] = [];
  const warns: string[] = [];
  const oks: string[] = [];
  for (const spec of LATCH_EVENTS) {
    const hs = scan.handlers.filter((h) => h.event === spec.event);
    if (hs.length === 0) {
      fails.push(`${spec.event}: no Latch handler`);
      continue;
    }
    if (hs.length > 1)
      warns.push(`${spec.event}: ${hs.length} Latch handlers (duplicates run concurrently; setup keeps one)`);
    for (const h of hs) {
      if (!sameMatcher(h.matcher, spec.matcher)) {
        fails.push(
          `${spec.event}: matcher ${JSON.stringify(h.matcher)} differs from ${JSON.stringify(spec.matcher ?? '(none)')}, so some calls may not reach Latch`,
        );
      }
      const parsed = parseHookCommand(h.command);
      const stale: string[] = [];
      if (!parsed) stale.push('command not in the form setup writes');
      else {
        if (parsed.event !== spec.event) stale.push(`command is for event ${parsed.event}`);
        const node = parsed.node ?? process.execPath;
        if (h.command !== hookCommand(spec.event, node, parsed.entry))
          stale.push('command text differs from what this Latch writes');
        if (parsed.node !== null && parsed.node !== process.execPath)
          oks.push(`${spec.event} runs node ${parsed.node} (this one is ${process.execPath})`);
      }
      if (h.timeout !== spec.timeout) stale.push(`timeout ${JSON.stringify(h.timeout)} (setup writes ${spec.timeout})`);
      if (h.statusMessage !== spec.status) stale.push('statusMessage differs');
      if (stale.length) warns.push(`${spec.event}: stale install (${stale.join('; ')})`);
    }
  }
  const unexpected = scan.handlers.filter((h) => !LATCH_EVENTS.some((s) => s.event === h.event));
  for (const h of unexpected) warns.push(`${h.event}: unexpected Latch handler (setup does not install one there)`);
  if (elsewhere && complete(scan))
    warns.push(`Latch is also installed in ${elsewhere.file}: every Latch handler runs twice`);

  const status: CheckStatus = fails.length ? 'fail' : warns.length ? 'warn' : 'ok';
  const head = `${scan.file}: ${
    LATCH_EVENTS.filter((s) => scan.handlers.some((h) => h.event === s.event))
      .map((s) => s.event)
      .join(', ') || 'none'
  }`;
  const detail = [head, ...fails, ...warns, ...oks].join('\n');
  return status === 'ok' ? { name, status, detail } : { name, status, detail, fix: setupFix(scan) };
}

function setupFix(scan: HooksScan): string {
  return scan.scope === 'project' ? `latch setup codex --project ${projectDirOf(scan.file)}` : SETUP_FIX;
}

// ---------------------------------------------------------------------------------------------
// check 2: the hook command resolves and works end to end

function probePayload(dir: string, toolName: string, toolInput: unknown): string {
  return JSON.stringify({
    session_id: 'latch-doctor-probe',
    turn_id: 'latch-doctor-probe-turn',
    transcript_path: null,
    cwd: dir,
    hook_event_name: 'PreToolUse',
    model: 'latch-doctor',
    permission_mode: 'default',
    tool_name: toolName,
    tool_input: toolInput,
    tool_use_id: 'latch-doctor-probe-call',
  });
}

const CODEX_PROBE: ProbeSpec = {
  payload: probePayload,
  untracked: { name: 'view_image', input: (dir) => ({ path: join(dir, 'none.png') }) },
};

/** The installation's (node, entry) pair whose command for `event` is exactly `command`, if any. */
function matchInstallation(event: string, command: string, inst: Installation): { node: string; entry: string } | null {
  for (const node of inst.nodes)
    for (const entry of inst.entries) if (hookCommand(event, node, entry) === command) return { node, entry };
  return null;
}

async function checkBinary(io: Io, handlers: LatchHandlerRef[], timeoutMs: number, inst: Installation): Promise<Check> {
  const name = 'hook command';
  if (handlers.length === 0) return { name, status: 'fail', detail: 'no Latch hook command to check', fix: SETUP_FIX };
  const fails: string[] = [];
  const oks: string[] = [];
  const seen = new Set<string>();
  let probe: { node: string; entry: string; where: string } | null = null;
  let unprobed: string | null = null;
  for (const h of handlers) {
    if (seen.has(h.command)) continue;
    seen.add(h.command);
    const where = `${h.event} in ${h.file}`;
    const parsed = parseHookCommand(h.command);
    if (!parsed) {
      fails.push(`${where}: cannot read the node binary and Latch entry out of the command`);
      continue;
    }
    const problems =
      parsed.node === null
        ? [
            fileProblem(
              parsed.entry.startsWith('/') ? parsed.entry : (whichOnPath(parsed.entry, io.env) ?? parsed.entry),
              'latch launcher',
              constants.X_OK,
            ),
          ]
        : [
            fileProblem(parsed.node, 'node binary', constants.X_OK),
            fileProblem(parsed.entry, 'Latch entry', constants.R_OK),
          ];
    const bad = problems.filter((p): p is string => p !== null);
    if (bad.length) {
      fails.push(...bad.map((b) => `${where}: ${b}`));
      continue;
    }
    // Static: the text must be what setup writes for this installation. It is never run.
    const match = matchInstallation(h.event, h.command, inst);
    if (!match) {
      fails.push(
        `${where}: the command is not what \`latch setup codex\` writes for this installation (node ${inst.nodes.join(' or ')}, entry ${inst.entries[0]}); not run: ${oneLine(h.command, 160)}`,
      );
      continue;
    }
    // The probe runs only this very process's node and entry (a value read from the store or a
    // hooks file is compared, never run).
    if (h.event === 'PreToolUse' && !probe) {
      if (match.node === inst.nodes[0] && match.entry === inst.entries[0]) probe = { ...match, where };
      else
        unprobed = `${where}: not probed (it runs node ${match.node}, entry ${match.entry}, recorded at setup; this doctor runs ${inst.nodes[0]}, ${inst.entries[0]})`;
    }
  }
  if (!handlers.some((h) => h.event === 'PreToolUse')) fails.push('no PreToolUse handler to probe');
  else if (!probe && unprobed) oks.push(unprobed);
  else if (probe) {
    // The probe runs the command Latch builds from its own node and entry (equal, as text, to the handler's).
    const problems = await probePreToolUse(
      io,
      hookCommand('PreToolUse', probe.node, probe.entry),
      timeoutMs,
      CODEX_PROBE,
    );
    if (problems.length) fails.push(...problems.map((p) => `${probe!.where}: ${p}`));
    else oks.push(`${probe.where}: untracked tool passes, tracked tool denied with no store (fails closed)`);
  }
  if (fails.length)
    return {
      name,
      status: 'fail',
      detail: [...fails, ...oks].join('\n'),
      fix: `${SETUP_FIX} (after \`npm run build\` or reinstalling agent-latch if the entry is gone)`,
    };
  const first = parseHookCommand(handlers[0]!.command)!;
  return {
    name,
    status: 'ok',
    detail: [`node ${first.node ?? '(launcher)'}, entry ${first.entry}`, ...oks].join('\n'),
  };
}

// ---------------------------------------------------------------------------------------------
// check 3: trusted by Codex

const snake = (event: string) => event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const camel = (event: string) => event.charAt(0).toLowerCase() + event.slice(1);

/** Codex's trust key of a handler: `<abs path of hooks.json>:<event_snake_case>:<group index>:<handler index>`. */
export function trustKey(h: Pick<LatchHandlerRef, 'file' | 'event' | 'groupIndex' | 'handlerIndex'>): string {
  return `${h.file}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`;
}

function findCodexHook(h: LatchHandlerRef, listed: CodexHookInfo[]): CodexHookInfo | undefined {
  const key = trustKey(h);
  const file = realOrSelf(h.file);
  return (
    listed.find((c) => c.key === key) ??
    listed.find((c) => c.key === `${file}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`) ??
    listed.find((c) => realOrSelf(c.sourcePath) === file && c.eventName === camel(h.event) && c.command === h.command)
  );
}

/** One handler's line: event, matcher, key, then its trust. */
function handlerLabel(h: LatchHandlerRef): string {
  return `${h.event} (matcher ${h.matcher === null ? '* (all)' : h.matcher}, ${trustKey(h)})`;
}

/** The fix for untrusted Latch handlers: `latch setup codex --trust` for this CODEX_HOME / project, or /hooks. */
function trustFixFor(io: Io, codexHome: string, handlers: LatchHandlerRef[]): string {
  const defaultHome = io.env.CODEX_HOME ? resolve(io.cwd, io.env.CODEX_HOME) : join(io.env.HOME || homedir(), '.codex');
  const home = resolve(codexHome) === defaultHome ? '' : ` --codex-home ${codexHome}`;
  const projects = [...new Set(handlers.filter((h) => h.scope === 'project').map((h) => projectDirOf(h.file)))];
  const cmds = [
    ...(handlers.some((h) => h.scope === 'user') ? [`latch setup codex${home} --trust`] : []),
    ...projects.map((p) => `latch setup codex --project ${p}${home} --trust`),
  ];
  return `run \`${cmds.join('` and `')}\` (records the hash Codex itself reports, for Latch's handlers only), or ${TRUST_FIX}`;
}

/** Without Codex: a handler with no `[hooks.state."<key>"] trusted_hash` is certainly untrusted. */
function trustFromConfig(
  codexHome: string,
  handlers: LatchHandlerRef[],
): { untrusted: LatchHandlerRef[]; unknown: LatchHandlerRef[]; error?: string } {
  const file = join(codexHome, 'config.toml');
  let state: Record<string, { trusted_hash?: unknown }> = {};
  if (existsSync(file)) {
    try {
      const cfg = parseToml(readFileSync(file, 'utf8')) as {
        hooks?: { state?: Record<string, { trusted_hash?: unknown }> };
      };
      state = cfg.hooks?.state ?? {};
    } catch (err) {
      return { untrusted: [], unknown: handlers, error: `cannot read ${file}: ${errorMessage(err)}` };
    }
  }
  const untrusted: LatchHandlerRef[] = [];
  const unknown: LatchHandlerRef[] = [];
  for (const h of handlers) {
    const keys = [trustKey(h), `${realOrSelf(h.file)}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`];
    if (keys.some((k) => typeof state[k]?.trusted_hash === 'string')) unknown.push(h);
    else untrusted.push(h);
  }
  return { untrusted, unknown };
}

async function checkTrusted(
  io: Io,
  codex: CodexCommand | null,
  codexHome: string,
  cwd: string,
  handlers: LatchHandlerRef[],
  timeoutMs: number,
  isolated: IsolatedCodexHome | null,
): Promise<Check> {
  const name = 'hooks trusted';
  if (handlers.length === 0)
    return { name, status: 'warn', detail: 'no Latch handlers installed, nothing to trust', fix: SETUP_FIX };
  const fixTrust = trustFixFor(io, codexHome, handlers);
  let listed: HooksListEntry[] | null = null;
  let why = '';
  if (!codex) why = 'codex was not found on PATH or in node_modules';
  else {
    try {
      if (!isolated) throw new Error('cannot make a temporary copy of CODEX_HOME');
      listed = await listCodexHooksIsolated(codex, { env: io.env, codexHome, cwds: [cwd], timeoutMs, isolated });
    } catch (err) {
      why = `could not ask Codex (${codex.path}): ${errorMessage(err)}`;
    }
  }
  if (!listed) {
    const cfg = trustFromConfig(codexHome, handlers);
    const lines = [
      ...cfg.untrusted.map(
        (h) => `${handlerLabel(h)}: untrusted (no trusted_hash in ${join(codexHome, 'config.toml')}): Codex skips it`,
      ),
      ...cfg.unknown.map(
        (h) => `${handlerLabel(h)}: has a trusted_hash; whether it matches the handler only Codex can tell`,
      ),
    ];
    if (cfg.untrusted.length)
      return {
        name,
        status: 'warn',
        detail: [`${cfg.untrusted.length} of ${handlers.length} Latch handlers not trusted (${why})`, ...lines].join(
          '\n',
        ),
        fix: codex ? fixTrust : `install Codex (npm i -g @openai/codex), then ${fixTrust}`,
      };
    return {
      name,
      status: 'warn',
      detail: [
        `cannot determine: ${why}${cfg.error ? `; ${cfg.error}` : ''}; config.toml has a trusted_hash for every Latch handler but it cannot be compared with the current hash`,
        ...lines,
      ].join('\n'),
    };
  }
  const all = listed.flatMap((e) => e.hooks);
  const codexErrors = listed.flatMap((e) => e.errors.map((x) => `${x.path}: ${x.message}`));
  const trusted: string[] = [];
  const untrusted: string[] = [];
  const disabled: string[] = [];
  const missing: string[] = [];
  for (const h of handlers) {
    const c = findCodexHook(h, all);
    const label = handlerLabel(h);
    if (!c) {
      missing.push(
        h.scope === 'project'
          ? `${label}: not loaded: Codex does not load this project hooks.json (is the project trusted in Codex? it loads .codex/ only for trusted projects)`
          : `${label}: not loaded: Codex did not list this handler`,
      );
      continue;
    }
    if (!c.enabled) disabled.push(`${label}: disabled in Codex (enable it in /hooks)`);
    if (c.trustStatus === 'trusted' || c.trustStatus === 'managed')
      trusted.push(`${label}: ${c.trustStatus} ${c.currentHash}`);
    else if (c.trustStatus === 'modified')
      untrusted.push(`${label}: modified since it was trusted (current hash ${c.currentHash}): Codex skips it`);
    else untrusted.push(`${label}: ${c.trustStatus} (current hash ${c.currentHash}): Codex skips it`);
  }
  const problems = [...untrusted, ...disabled, ...missing, ...codexErrors.map((e) => `Codex reports: ${e}`)];
  if (problems.length === 0)
    return {
      name,
      status: 'ok',
      detail: [`all ${trusted.length} Latch handlers are trusted (asked ${codex!.path})`, ...trusted].join('\n'),
    };
  const head = `${trusted.length} of ${handlers.length} Latch handlers trusted (asked ${codex!.path})`;
  const detail = [head, ...problems, ...trusted].join('\n');
  const fix = missing.some((m) => m.includes('project'))
    ? `trust the project in Codex first (open \`codex\` in it), then ${fixTrust}`
    : disabled.length && !untrusted.length
      ? 'open `codex`, run /hooks and enable the Latch handlers'
      : fixTrust;
  return { name, status: 'warn', detail, fix };
}

// ---------------------------------------------------------------------------------------------
// check 4: Codex version

function cmpVersion(a: string, b: string): number {
  const pa = a.split(/[.-]/).slice(0, 3).map(Number);
  const pb = b.split(/[.-]/).slice(0, 3).map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

async function checkVersion(
  io: Io,
  codex: CodexCommand | null,
  codexHome: string | null,
  timeoutMs: number,
): Promise<Check> {
  const name = 'codex version';
  if (!codex)
    return {
      name,
      status: 'warn',
      detail: 'codex not found on PATH or in node_modules',
      fix: 'install Codex: npm i -g @openai/codex',
    };
  if (!codexHome) return { name, status: 'warn', detail: 'cannot make a temporary CODEX_HOME to run codex in' };
  const v = await codexVersion(codex, { env: io.env, codexHome, cwd: io.cwd, timeoutMs });
  if (!v.version)
    return {
      name,
      status: 'warn',
      detail: `${codex.path}: ${v.error ?? 'unknown version'}`,
      fix: 'check that `codex --version` works',
    };
  // The one source of truth (src/agents/codex/qualification.ts): the package's records + this machine's.
  const { versionStatus, qualifiedVersions } = await import('./qualification.js');
  const home = homeOf(io);
  const st = versionStatus(v.version, home);
  const where = `${v.raw} (${codex.path}, from ${codex.from})`;
  if (st.qualified && st.by) {
    const by =
      st.by.source === 'package'
        ? `the record shipped with Latch (${st.by.date.slice(0, 10)})`
        : `this machine's record ${st.by.path} (${st.by.date.slice(0, 10)})`;
    return { name, status: 'ok', detail: `${where}; qualified by ${by}` };
  }
  const all = qualifiedVersions(home);
  const failed = st.rejected.length
    ? `; a qualification run did not pass: ${st.rejected.map((r) => `${r.path}: ${r.problem}`).join('; ')}`
    : '';
  const older =
    all.length && cmpVersion(v.version, MIN_CODEX_VERSION) < 0
      ? `; older than any release Latch was measured on (${MIN_CODEX_VERSION})`
      : '';
  return {
    name,
    status: 'warn',
    detail:
      `${where} is not qualified by Latch (qualified: ${all.join(', ') || 'none'})${older}${failed}. ` +
      'The latch still guards it; what waits for qualification: a resume is never native (the brief is re-delivered), and `latch doctor FILE` exits 3 on its rollouts',
    fix: `latch qualify codex --codex ${codex.path}   (drives this binary over a loopback fake model; about a minute)`,
  };
}

// ---------------------------------------------------------------------------------------------
// what guards reads while a session is held

/** What guards reads while a session is held: Latch's sealed sandbox, Codex's, or the classifier alone. */
function checkReads(io: Io): Check {
  const r = readsReport(homeOf(io), io.env);
  if (r.guard === 'sandbox') return { name: 'reads while held', status: 'ok', detail: r.detail };
  if (r.guard === 'unknown') return { name: 'reads while held', status: 'ok', detail: r.detail };
  return {
    name: 'reads while held',
    status: 'warn',
    detail: r.detail,
    fix: 'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on Linux x64 with user namespaces on, and leave LATCH_SANDBOX unset',
  };
}

function resolveCodexHome(opts: CodexDoctorOptions, io: Io): string {
  if (opts.codexHome) return resolve(io.cwd, opts.codexHome);
  if (io.env.CODEX_HOME) return resolve(io.cwd, io.env.CODEX_HOME);
  return join(io.env.HOME || homedir(), '.codex');
}

// ---------------------------------------------------------------------------------------------
// the Codex part of `latch doctor`

/**
 * Codex's part of `latch doctor`: the hooks.json files are read now (the user's, and the project's:
 * --project, else the cwd when it has .codex/hooks.json); the checks run when asked. Latch counts as
 * installed for Codex when a hooks file holds a Latch handler or cannot be read.
 */
export function codexDoctor(io: Io, opts: CodexDoctorOptions): AgentDoctor {
  const { timeoutMs } = opts;
  const codexHome = resolveCodexHome(opts, io);
  const userFile = hooksFilePath({ codexHome }, io.env);
  const projectDir = opts.project
    ? resolve(io.cwd, opts.project)
    : existsSync(join(io.cwd, '.codex', 'hooks.json'))
      ? io.cwd
      : null;
  const projectFile = projectDir ? hooksFilePath({ project: projectDir }, io.env) : null;

  const scans: HooksScan[] = [scanHooksFile(userFile, 'user')];
  if (projectFile && realOrSelf(projectFile) !== realOrSelf(userFile))
    scans.push(scanHooksFile(projectFile, 'project'));

  return {
    installed: scans.some((s) => s.handlers.length > 0 || s.error !== undefined),
    setupFix: SETUP_FIX,
    async checks() {
      const checks: Check[] = scans.map((s) =>
        checkInstalled(
          s,
          scans.filter((o) => o !== s),
        ),
      );
      const handlers = scans.flatMap((s) => s.handlers);
      checks.push(await checkBinary(io, handlers, timeoutMs, thisInstallation(io)));
      const codex = resolveCodex(io.env);
      // Codex writes into its CODEX_HOME (skills, logs, databases): it runs on a throwaway copy.
      let isolated: IsolatedCodexHome | null = null;
      try {
        if (codex) isolated = isolatedCodexHome(codexHome);
      } catch {
        isolated = null;
      }
      try {
        checks.push(await checkTrusted(io, codex, codexHome, projectDir ?? io.cwd, handlers, timeoutMs, isolated));
        checks.push(await checkVersion(io, codex, isolated?.dir ?? null, timeoutMs));
      } finally {
        isolated?.cleanup();
      }
      return checks;
    },
    async afterShared() {
      return [checkReads(io), checkRegistration(registrationOf(io, projectDir ?? io.cwd), SETUP_FIX)];
    },
  };
}
