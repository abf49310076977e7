// `latch doctor`: is Latch installed, wired, trusted by Codex, and is its store healthy?
// Read-only towards the user's state: the end-to-end hook probe runs against a throwaway LATCH_HOME,
// Codex is asked through a bounded, offline `codex app-server` started on a throwaway copy of
// CODEX_HOME (config.toml + hooks.json), and the store is opened read-only. Doctor never runs a
// command taken from a hooks file: a handler's command is compared, as text, with what setup writes
// for this installation, and the probe runs the command Latch builds itself.
import { readsReport } from '../agents/codex/sandbox.js';
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { errorMessage, EXIT } from '../base/errors.js';
import { dbPath, packageRoot } from '../base/paths.js';
import { openStore, SCHEMA_VERSION, type Db } from '../store/store.js';
import {
  codexVersion,
  isolatedCodexHome,
  listCodexHooksIsolated,
  resolveCodex,
  runBounded,
  type CodexCommand,
  type CodexHookInfo,
  type HooksListEntry,
  type IsolatedCodexHome,
} from '../agents/codex/app-server.js';
import {
  INSTALL_SCOPE,
  RERECORD_FIX,
  registrationLines,
  registrationReport,
  type Finding,
  type InstallScope,
  type RegistrationReport,
} from '../guard/tamper.js';
import {
  CLAUDE_EVENTS,
  claudeHookCommand,
  claudeSettingsPath,
  hooksProblem,
  isClaudeLatchHandler,
  matchesAll,
  parseClaudeHookCommand,
  TESTED_CLAUDE_VERSION,
} from '../agents/claude/setup.js';
import { homeOf, type Io } from './io.js';
import { defaultEntry, hookCommand, hooksFilePath, isLatchHandler, LATCH_EVENTS } from './setup.js';
import { listWatchers, type WatcherJson } from './shared/watchers.js';

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** The command or step that fixes it. */
  fix?: string;
  /** The registration check's findings (as data). */
  findings?: Finding[];
}

export interface DoctorOptions {
  codexHome?: string;
  project?: string;
  json?: boolean;
  /** Check only this agent's installation (default: Codex's, and Claude Code's when Latch is in its settings). */
  agent?: 'codex' | 'claude';
  /** Claude Code's managed settings file (default: the system's; tests). */
  claudeManagedSettings?: string;
  /** Bound for each child process (Codex, the hook probe). Default 10 s. */
  timeoutMs?: number;
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
  for (const [event, groups] of Object.entries(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((g: unknown, gi) => {
      if (!g || typeof g !== 'object') return;
      const group = g as { matcher?: unknown; hooks?: unknown };
      if (!Array.isArray(group.hooks)) return;
      group.hooks.forEach((h: unknown, hi) => {
        if (!isLatchHandler(h)) return;
        const handler = h as { command: string; timeout?: unknown; statusMessage?: unknown };
        scan.handlers.push({
          file,
          scope,
          event,
          groupIndex: gi,
          handlerIndex: hi,
          command: handler.command,
          matcher: typeof group.matcher === 'string' ? group.matcher : null,
          timeout: handler.timeout,
          statusMessage: handler.statusMessage,
        });
      });
    });
  }
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
    words = leadingWords(words[2]!.trim());
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

function projectDirOf(file: string): string {
  return resolve(file, '..', '..');
}

function setupFix(scan: HooksScan): string {
  return scan.scope === 'project' ? `latch setup codex --project ${projectDirOf(scan.file)}` : SETUP_FIX;
}

// ---------------------------------------------------------------------------------------------
// check 2: the hook command resolves and works end to end

function fileProblem(p: string, kind: 'node binary' | 'Latch entry' | 'latch launcher', mode: number): string | null {
  if (!p.startsWith('/')) return `${kind} ${p} is not an absolute path`;
  let st: Stats;
  try {
    st = statSync(p);
  } catch {
    return `${kind} ${p} does not exist`;
  }
  if (!st.isFile()) return `${kind} ${p} is not a file`;
  try {
    accessSync(p, mode);
  } catch {
    return `${kind} ${p} is not ${mode === constants.X_OK ? 'executable' : 'readable'}`;
  }
  return null;
}

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

function isDenyReply(stdout: string): boolean {
  try {
    const o = JSON.parse(stdout.trim()) as {
      hookSpecificOutput?: { hookEventName?: unknown; permissionDecision?: unknown };
    };
    return o?.hookSpecificOutput?.hookEventName === 'PreToolUse' && o.hookSpecificOutput.permissionDecision === 'deny';
  } catch {
    return false;
  }
}

function oneLine(s: string, max = 200): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

/** What a PreToolUse probe sends: the agent's payload for a tool call, and a tool Latch never blocks. */
interface ProbeSpec {
  payload(dir: string, toolName: string, toolInput: unknown): string;
  untracked: { name: string; input(dir: string): unknown };
}

const CODEX_PROBE: ProbeSpec = {
  payload: probePayload,
  untracked: { name: 'view_image', input: (dir) => ({ path: join(dir, 'none.png') }) },
};

/** Runs a PreToolUse command as the agent would (through a shell, payload on stdin) against an empty LATCH_HOME. */
async function probePreToolUse(
  io: Io,
  command: string,
  timeoutMs: number,
  spec: ProbeSpec = CODEX_PROBE,
): Promise<string[]> {
  const problems: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'latch-doctor-'));
  const payload = spec.payload;
  const tool = spec.untracked.name;
  try {
    const home = join(dir, 'state');
    mkdirSync(home, { mode: 0o700 });
    const env = { ...io.env, LATCH_HOME: home };
    const run = (input: string) => runBounded('/bin/sh', ['-c', command], { env, cwd: dir, input, timeoutMs });

    const untracked = await run(payload(dir, tool, spec.untracked.input(dir)));
    if (untracked.spawnError) problems.push(`cannot run /bin/sh: ${untracked.spawnError}`);
    else if (untracked.timedOut) problems.push(`untracked-tool probe (${tool}) did not finish within ${timeoutMs} ms`);
    else if (untracked.code !== 0 || untracked.stdout.trim() !== '') {
      problems.push(
        `untracked-tool probe (${tool}) should pass silently but exited ${untracked.code ?? untracked.signal}` +
          (untracked.stdout.trim() ? ` with stdout ${oneLine(untracked.stdout)}` : '') +
          (untracked.stderr.trim() ? ` (stderr: ${oneLine(untracked.stderr)})` : ''),
      );
    }

    const tracked = await run(payload(dir, 'Bash', { command: 'rm -rf x' }));
    if (tracked.spawnError) problems.push(`cannot run /bin/sh: ${tracked.spawnError}`);
    else if (tracked.timedOut)
      problems.push(`fail-closed probe (Bash with no store) did not finish within ${timeoutMs} ms`);
    else {
      const denied =
        (tracked.code === 0 && isDenyReply(tracked.stdout)) || (tracked.code === 2 && tracked.stderr.trim() !== '');
      if (!denied) {
        problems.push(
          `fail-closed probe (Bash \`rm -rf x\` with no store) was not denied: exit ${tracked.code ?? tracked.signal}` +
            (tracked.stdout.trim() ? `, stdout ${oneLine(tracked.stdout)}` : ', no stdout') +
            (tracked.stderr.trim() ? `, stderr ${oneLine(tracked.stderr)}` : ''),
        );
      }
    }
    try {
      const left = readdirSync(home);
      if (left.length)
        problems.push(`the hook created ${left.join(', ')} in an empty LATCH_HOME (it must not create a store)`);
    } catch {
      /* the probe removed its home: reported by the checks above if it mattered */
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return problems;
}

/** The node binaries and entries this installation writes into hook commands: the running ones and the ones setup recorded. */
export interface Installation {
  nodes: string[];
  entries: string[];
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

export function thisInstallation(io: Io): Installation {
  const nodes = [process.execPath];
  const entries = [resolve(defaultEntry())];
  const home = homeOf(io);
  if (existsSync(dbPath(home))) {
    try {
      const db = openStore(home, { create: false, readonly: true });
      try {
        const row = db.prepare('SELECT json FROM registrations WHERE scope = ?').get(INSTALL_SCOPE) as
          | { json: string }
          | undefined;
        if (row) {
          const rec = JSON.parse(row.json) as InstallScope;
          nodes.push(rec.node);
          entries.push(rec.entry);
        }
      } finally {
        db.close();
      }
    } catch {
      /* no fingerprint (older store): only the running installation counts */
    }
  }
  for (const e of [...entries]) entries.push(realOrSelf(e));
  return { nodes: [...new Set(nodes)], entries: [...new Set(entries)] };
}

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
    const problems = await probePreToolUse(io, hookCommand('PreToolUse', probe.node, probe.entry), timeoutMs);
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

function whichOnPath(cmd: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const p = join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// check 3: trusted by Codex

const snake = (event: string) => event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const camel = (event: string) => event.charAt(0).toLowerCase() + event.slice(1);

/** Codex's trust key of a handler: `<abs path of hooks.json>:<event_snake_case>:<group index>:<handler index>`. */
export function trustKey(h: Pick<LatchHandlerRef, 'file' | 'event' | 'groupIndex' | 'handlerIndex'>): string {
  return `${h.file}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`;
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

function findCodexHook(h: LatchHandlerRef, listed: CodexHookInfo[]): CodexHookInfo | undefined {
  const key = trustKey(h);
  const file = real(h.file);
  return (
    listed.find((c) => c.key === key) ??
    listed.find((c) => c.key === `${file}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`) ??
    listed.find((c) => real(c.sourcePath) === file && c.eventName === camel(h.event) && c.command === h.command)
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
    const keys = [trustKey(h), `${real(h.file)}:${snake(h.event)}:${h.groupIndex}:${h.handlerIndex}`];
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
  const { versionStatus, qualifiedVersions } = await import('../agents/codex/qualification.js');
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
// check 5: the store

function modeStr(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}

function checkStore(io: Io, setupCmd: string = SETUP_FIX): Check {
  const name = 'store';
  const home = homeOf(io);
  const me = typeof process.getuid === 'function' ? process.getuid() : undefined;
  let st: Stats;
  try {
    st = lstatSync(home);
  } catch {
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} does not exist (every tracked tool call is denied)`,
      fix: setupCmd,
    };
  }
  if (st.isSymbolicLink())
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} is a symlink; Latch refuses it`,
      fix: `replace the symlink ${home} by a real directory, then run \`${setupCmd}\``,
    };
  if (!st.isDirectory())
    return {
      name,
      status: 'fail',
      detail: `${home} is not a directory`,
      fix: `move ${home} away, then run \`${setupCmd}\``,
    };
  if (me !== undefined && st.uid !== me)
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} is owned by uid ${st.uid}, not by you (uid ${me})`,
      fix: `chown ${me} ${home}`,
    };
  const warns: string[] = [];
  if ((st.mode & 0o777) !== 0o700) warns.push(`state directory mode ${modeStr(st.mode)} (expected 0700)`);

  const file = dbPath(home);
  let fst: Stats;
  try {
    fst = lstatSync(file);
  } catch {
    return {
      name,
      status: 'fail',
      detail: `store ${file} is missing (every tracked tool call is denied)`,
      fix: setupCmd,
    };
  }
  if (fst.isSymbolicLink() || !fst.isFile())
    return {
      name,
      status: 'fail',
      detail: `${file} is ${fst.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; Latch refuses it`,
      fix: `move ${file} away, then run \`${setupCmd}\``,
    };
  if (me !== undefined && fst.uid !== me)
    return {
      name,
      status: 'fail',
      detail: `${file} is owned by uid ${fst.uid}, not by you (uid ${me})`,
      fix: `chown ${me} ${file}`,
    };
  if ((fst.mode & 0o777) !== 0o600) warns.push(`store mode ${modeStr(fst.mode)} (expected 0600)`);

  const modeFix = `chmod 700 ${home} && chmod 600 ${file}`;
  let db: Db;
  try {
    db = openStore(home, { create: false, readonly: true });
  } catch (err) {
    const msg = errorMessage(err);
    if (/needs a schema migration/.test(msg)) {
      return {
        name,
        status: 'warn',
        detail: [`${file}: ${msg}`, 'the next hook or command migrates it', ...warns].join('\n'),
        fix: 'latch status',
      };
    }
    return {
      name,
      status: 'fail',
      detail: `${msg} (every tracked tool call is denied)`,
      fix: `move ${file} away (keep it for inspection), then run \`${setupCmd}\``,
    };
  }
  try {
    const rows = db.pragma('quick_check') as { quick_check: string }[];
    const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
    if (problems.length || rows.length === 0) {
      return {
        name,
        status: 'fail',
        detail: `${file}: PRAGMA quick_check: ${problems.slice(0, 5).join('; ') || 'no result'}`,
        fix: `move ${file} away (keep it for inspection), then run \`${setupCmd}\``,
      };
    }
    const journal = String(db.pragma('journal_mode', { simple: true }));
    if (journal.toLowerCase() !== 'wal')
      warns.push(`journal_mode is ${journal} (expected wal; the next writer switches it)`);
    const version = Number(db.pragma('user_version', { simple: true }));
    if (version !== SCHEMA_VERSION) warns.push(`schema version ${version} (expected ${SCHEMA_VERSION})`);
  } catch (err) {
    return {
      name,
      status: 'fail',
      detail: `${file}: ${errorMessage(err)}`,
      fix: `move ${file} away (keep it for inspection), then run \`${setupCmd}\``,
    };
  } finally {
    db.close();
  }
  const head = `${file}: quick_check ok, schema ${SCHEMA_VERSION}`;
  if (warns.length) return { name, status: 'warn', detail: [head, ...warns].join('\n'), fix: modeFix };
  return { name, status: 'ok', detail: `${head}, wal, modes 0700/0600` };
}

// ---------------------------------------------------------------------------------------------
// check 6: workspace watchers (a Close stats only what they journaled; without one, every file)

/** What guards reads while a session is held: the agent's read-only sandbox, or the classifier alone. */
function checkReads(io: Io): Check {
  const r = readsReport(homeOf(io), io.env);
  if (r.guard === 'sandbox') return { name: 'reads while held', status: 'ok', detail: r.detail };
  if (r.guard === 'unknown') return { name: 'reads while held', status: 'ok', detail: r.detail };
  return {
    name: 'reads while held',
    status: 'warn',
    detail: r.detail,
    fix: 'run Codex where `codex sandbox` works (Linux user namespaces, or macOS), and leave LATCH_SANDBOX unset',
  };
}

function checkWatchers(io: Io): Check {
  const name = 'watchers';
  if (io.env.LATCH_WATCH === 'off')
    return { name, status: 'ok', detail: 'disabled (LATCH_WATCH=off): each Close stats every tracked file' };
  if (process.platform !== 'linux')
    return { name, status: 'ok', detail: `not available on ${process.platform}: each Close stats every tracked file` };
  const home = homeOf(io);
  if (!existsSync(dbPath(home))) return { name, status: 'ok', detail: 'none yet (a hook starts one per workspace)' };
  let rows: WatcherJson[];
  try {
    const db = openStore(home, { create: false, readonly: true });
    try {
      rows = listWatchers(db, null);
    } finally {
      db.close();
    }
  } catch (err) {
    return {
      name,
      status: 'warn',
      detail: `cannot read the watchers: ${errorMessage(err)}`,
      fix: 'latch doctor (see the store check)',
    };
  }
  const running = rows.filter((r) => r.state !== 'unavailable' && r.alive);
  const unavailable = rows.filter((r) => r.state === 'unavailable');
  const lines = [
    `${running.length} running${running.length ? ': ' + running.map((r) => `${r.workspace} (${r.directories} directories)`).join(', ') : ' (a hook starts one per workspace)'}`,
  ];
  for (const r of unavailable)
    lines.push(
      `unavailable for ${r.workspace}: ${r.reason ?? 'no reason recorded'}; each Close there stats every tracked file`,
    );
  if (unavailable.length === 0) return { name, status: 'ok', detail: lines.join('\n') };
  return {
    name,
    status: 'warn',
    detail: lines.join('\n'),
    fix: 'add large generated directories to .gitignore (ignored ones are not watched), or raise LATCH_WATCH_MAX_DIRS (and fs.inotify.max_user_watches)',
  };
}

// ---------------------------------------------------------------------------------------------
// check 7: the registration fingerprint (src/guard/tamper.ts)

export function registrationOf(io: Io, workspace: string | null): RegistrationReport | { error: string } {
  const home = homeOf(io);
  if (!existsSync(dbPath(home))) return { error: 'no store yet' };
  try {
    const db = openStore(home, { create: false, readonly: true });
    try {
      return registrationReport(db, workspace);
    } finally {
      db.close();
    }
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** ok | changed | unrecorded | unknown (the store could not be read). */
export function registrationStatus(c: Check): string {
  if (!c.findings) return 'unknown';
  if (c.status === 'fail') return 'changed';
  return c.findings.some((f) => f.code === 'no_fingerprint') ? 'unrecorded' : 'ok';
}

function checkRegistration(report: RegistrationReport | { error: string }): Check {
  const name = 'registration';
  if ('error' in report)
    return {
      name,
      status: 'warn',
      detail: `cannot compare the registration fingerprint: ${report.error}`,
      fix: SETUP_FIX,
    };
  const [first, ...rest] = registrationLines(report);
  const detail = [first ?? '', ...rest].join('\n');
  if (report.status === 'unrecorded')
    return { name, status: 'warn', detail, fix: SETUP_FIX, findings: report.findings };
  if (report.status === 'changed')
    return { name, status: 'fail', detail, fix: RERECORD_FIX, findings: report.findings };
  return { name, status: report.findings.length ? 'warn' : 'ok', detail, findings: report.findings };
}

// ---------------------------------------------------------------------------------------------
// Claude Code: Latch's handlers in its settings files (written by src/agents/claude/setup.ts)

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
  const problem = hooksProblem(settings.hooks);
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
function claudeManagedSettingsPath(opts: DoctorOptions): string {
  if (opts.claudeManagedSettings) return opts.claudeManagedSettings;
  return process.platform === 'darwin'
    ? '/Library/Application Support/ClaudeCode/managed-settings.json'
    : '/etc/claude-code/managed-settings.json';
}

interface ClaudeScans {
  scans: ClaudeScan[];
  managed: ClaudeScan;
}

/** The user settings, and the project's (--project, else the cwd when it has a .claude/ directory). */
function claudeScans(io: Io, opts: DoctorOptions): ClaudeScans {
  const user = claudeSettingsPath({}, io.env, io.cwd);
  const scans = [scanClaudeSettings(user, 'user')];
  const projectDir = opts.project ? resolve(io.cwd, opts.project) : existsSync(join(io.cwd, '.claude')) ? io.cwd : null;
  if (projectDir) {
    const shared = claudeSettingsPath({ project: projectDir }, io.env, io.cwd);
    if (real(shared) !== real(user)) scans.push(scanClaudeSettings(shared, 'project'));
    scans.push(scanClaudeSettings(join(projectDir, '.claude', 'settings.local.json'), 'project local'));
  }
  return { scans, managed: scanClaudeSettings(claudeManagedSettingsPath(opts), 'user') };
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

// ---------------------------------------------------------------------------------------------

function resolveCodexHome(opts: DoctorOptions, io: Io): string {
  if (opts.codexHome) return resolve(io.cwd, opts.codexHome);
  if (io.env.CODEX_HOME) return resolve(io.cwd, io.env.CODEX_HOME);
  return join(io.env.HOME || homedir(), '.codex');
}

export async function runChecks(io: Io, opts: DoctorOptions): Promise<Check[]> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const codexHome = resolveCodexHome(opts, io);
  const userFile = hooksFilePath({ codexHome }, io.env);
  const projectDir = opts.project
    ? resolve(io.cwd, opts.project)
    : existsSync(join(io.cwd, '.codex', 'hooks.json'))
      ? io.cwd
      : null;
  const projectFile = projectDir ? hooksFilePath({ project: projectDir }, io.env) : null;

  const scans: HooksScan[] = [scanHooksFile(userFile, 'user')];
  if (projectFile && real(projectFile) !== real(userFile)) scans.push(scanHooksFile(projectFile, 'project'));

  // Claude Code: checked when asked, or when its settings hold Latch's handlers. Codex: unless only
  // Claude Code is asked for, or only Claude Code has Latch (no Codex hooks file mentions it).
  const claude = opts.agent === 'codex' ? null : claudeScans(io, opts);
  const withClaude = opts.agent === 'claude' || (!!claude && claude.scans.some((s) => s.handlers.length > 0));
  const codexInstalled = scans.some((s) => s.handlers.length > 0 || s.error !== undefined);
  if (opts.agent === 'claude' || (withClaude && !codexInstalled && opts.agent !== 'codex')) {
    const store = checkStore(io, CLAUDE_SETUP_FIX);
    return [...(await claudeChecks(io, claude!, timeoutMs)), store, checkWatchers(io)];
  }

  const checks: Check[] = scans.map((s) =>
    checkInstalled(
      s,
      scans.filter((o) => o !== s),
    ),
  );
  const handlers = scans.flatMap((s) => s.handlers);

  // First: opening the store (below) tightens its modes, which this check reports.
  const store = checkStore(io);
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
  checks.push(store);
  checks.push(checkWatchers(io));
  checks.push(checkReads(io));
  checks.push(checkRegistration(registrationOf(io, projectDir ?? io.cwd)));
  if (withClaude && claude) checks.push(...(await claudeChecks(io, claude, timeoutMs)));
  return checks;
}

const MARK: Record<CheckStatus, string> = { ok: '[ok]  ', warn: '[warn]', fail: '[FAIL]' };

export function formatChecks(checks: Check[]): string {
  const lines = [`Latch doctor (${VERSION})`, ''];
  for (const c of checks) {
    const [first, ...rest] = c.detail.split('\n');
    lines.push(`${MARK[c.status]} ${c.name}: ${first ?? ''}`);
    for (const r of rest) lines.push(`         ${r}`);
    if (c.fix) lines.push(`         fix: ${c.fix}`);
  }
  const fails = checks.filter((c) => c.status === 'fail').length;
  const warns = checks.filter((c) => c.status === 'warn').length;
  lines.push('');
  lines.push(
    fails
      ? `${fails} check(s) failed, ${warns} warning(s).`
      : warns
        ? `No failures, ${warns} warning(s).`
        : 'All checks passed.',
  );
  return lines.join('\n') + '\n';
}

export async function doctor(io: Io, opts: DoctorOptions): Promise<number> {
  const checks = await runChecks(io, opts);
  const ok = checks.every((c) => c.status !== 'fail');
  const reg = checks.find((c) => c.name === 'registration');
  const registration = reg
    ? { status: registrationStatus(reg), detail: reg.detail, findings: reg.findings ?? [] }
    : null;
  if (opts.json) io.out(JSON.stringify({ ok, checks, registration }, null, 2) + '\n');
  else io.out(formatChecks(checks));
  return ok ? EXIT.ok : EXIT.failure;
}
