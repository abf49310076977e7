// `latch setup codex` / `latch uninstall codex`: merge Latch's handlers into a Codex hooks.json; with
// `--trust`, also record Codex's trust for exactly those handlers (the hash the real Codex reports).
// Reached through the agent port (`codex.commands()`, ./commands.ts); Codex's own modules import it directly.
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { errorMessage, ExitError, EXIT } from '../../base/errors.js';
import { homeOf, type Io } from '../../kit/io.js';
import { dismissResidentHooks, residentLine } from '../../resident/list.js';
import { defaultEntry, failClosed, latchHookRun, writeConfigAtomic } from '../../base/hook-command.js';
import {
  extraCodexConfigs,
  forgetRegistrationIn,
  isLatchHandler as isLatchHandlerOf,
  latchHandlersOf,
  recordRegistration,
  acceptedLines,
  rerecordCodeCachesAtExit,
  runningFrom,
} from '../../tamper/index.js';
import { openStore } from '../../store/store.js';
import {
  isolatedCodexHome,
  listCodexHooks,
  resolveCodex,
  type CodexCommand,
  type CodexHookInfo,
} from './app-server.js';
import { TRACKED_TOOL_MATCHER } from './tools.js';

export interface SetupOptions {
  codexHome?: string;
  project?: string;
  dryRun?: boolean;
  /** Absolute path of the bundled entry (dist/latch.cjs); defaults to the running one. */
  entry?: string;
  /** Node binary for the hook command; defaults to the running one. */
  node?: string;
  /**
   * Also record Codex's trust for exactly Latch's handlers (`[hooks.state."<key>"] trusted_hash` in
   * $CODEX_HOME/config.toml), with the hash Codex itself reports for them. Run by the human.
   */
  trust?: boolean;
  /** Bound for the `codex app-server` child that reports the hashes (default 30 s). */
  timeoutMs?: number;
}

/** The events Latch listens to, with their matchers. */
export const LATCH_EVENTS: readonly { event: string; matcher: string | null; timeout: number; status: string }[] = [
  { event: 'SessionStart', matcher: null, timeout: 60, status: 'Latch: checking session authority' },
  { event: 'PreToolUse', matcher: TRACKED_TOOL_MATCHER, timeout: 120, status: 'Latch: checking mutation authority' },
  { event: 'PreCompact', matcher: null, timeout: 120, status: 'Latch: writing checkpoint' },
  { event: 'PostCompact', matcher: null, timeout: 60, status: 'Latch: latching after compaction' },
  { event: 'PostToolUse', matcher: TRACKED_TOOL_MATCHER, timeout: 120, status: 'Latch: recording changes' },
  { event: 'Stop', matcher: null, timeout: 120, status: 'Latch: closing the turn' },
  { event: 'SubagentStop', matcher: null, timeout: 120, status: 'Latch: closing the sub-agent turn' },
  { event: 'Interrupt', matcher: null, timeout: 3, status: 'Latch: closing the interrupted turn' }, // Codex 0.169 clamps Interrupt hooks to 3s (with a warning)
  { event: 'SessionEnd', matcher: null, timeout: 3, status: 'Latch: closing the session' },
];

type Handler = { type?: string; command?: string; [k: string]: unknown };
type Group = { matcher?: string; hooks?: Handler[]; [k: string]: unknown };
type HooksFile = { hooks?: Record<string, Group[]>; [k: string]: unknown };

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

/** A handler Latch wrote (its command runs `... hook codex --event NAME` of a latch entry). */
export function isLatchHandler(h: unknown): boolean {
  return isLatchHandlerOf(h);
}

export { defaultEntry };

/** The command text for one event. The PreToolUse one denies (exit 2) if Latch is missing or crashes. */
export function hookCommand(event: string, node: string, entry: string): string {
  const run = latchHookRun('codex', event, node, entry);
  return event === 'PreToolUse' ? failClosed(run, 'codex', entry) : run;
}

export function hooksFilePath(opts: Pick<SetupOptions, 'codexHome' | 'project'>, env: NodeJS.ProcessEnv): string {
  if (opts.project) return join(resolve(opts.project), '.codex', 'hooks.json');
  return join(userCodexHome(opts, env), 'hooks.json');
}

/** $CODEX_HOME (--codex-home, else the environment's, else ~/.codex). */
export function userCodexHome(opts: Pick<SetupOptions, 'codexHome'>, env: NodeJS.ProcessEnv): string {
  return opts.codexHome
    ? resolve(opts.codexHome)
    : env.CODEX_HOME
      ? resolve(env.CODEX_HOME)
      : join(env.HOME || homedir(), '.codex');
}

function readHooks(file: string): HooksFile {
  if (!existsSync(file)) return {};
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ExitError(
      EXIT.failure,
      `${file} is not valid JSON (${(err as Error).message}); fix it first, Latch will not overwrite it`,
    );
  }
  if (!data || typeof data !== 'object' || Array.isArray(data))
    throw new ExitError(EXIT.failure, `${file} is not a JSON object`);
  const hooks = (data as HooksFile).hooks;
  if (hooks !== undefined && (typeof hooks !== 'object' || hooks === null || Array.isArray(hooks))) {
    throw new ExitError(EXIT.failure, `${file}: "hooks" is not an object`);
  }
  for (const [event, groups] of Object.entries(hooks ?? {})) {
    const bad = (g: unknown) =>
      !g || typeof g !== 'object' || Array.isArray(g) || ('hooks' in g && !Array.isArray((g as Group).hooks));
    if (!Array.isArray(groups) || groups.some(bad))
      throw new ExitError(EXIT.failure, `${file}: "hooks.${event}" is not a list of hook groups`);
  }
  return data as HooksFile;
}

function writeAtomic(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.latch-${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, file);
}

export interface MergeResult {
  file: HooksFile;
  changes: { event: string; action: 'added' | 'updated' | 'unchanged' | 'removed' }[];
}

/** Puts Latch's handler for each event in place (where it was, or appended), keeping all others and their order. */
export function mergeLatchHooks(input: HooksFile, node: string, entry: string): MergeResult {
  const file: HooksFile = structuredClone(input);
  const hooks = (file.hooks ??= {});
  const changes: MergeResult['changes'] = [];
  for (const spec of LATCH_EVENTS) {
    const handler: Handler = {
      type: 'command',
      command: hookCommand(spec.event, node, entry),
      timeout: spec.timeout,
      statusMessage: spec.status,
    };
    const groups = (hooks[spec.event] ??= []);
    let placed = false;
    let dropped = false;
    let action: 'added' | 'updated' | 'unchanged' = 'added';
    // Only groups Latch empties are removed: Codex counts every group in its (positional) trust keys.
    const emptied = new Set<Group>();
    for (const g of groups) {
      if (!Array.isArray(g.hooks)) continue;
      // A group shared with other handlers keeps its matcher (it is part of their trust hash).
      const shared = g.hooks.some((h) => !isLatchHandler(h));
      const canPlace = !shared || (g.matcher ?? null) === spec.matcher;
      const next: Handler[] = [];
      for (const h of g.hooks) {
        if (!isLatchHandler(h)) {
          next.push(h);
          continue;
        }
        if (placed || !canPlace) {
          dropped = true; // duplicates, or a copy in a group whose matcher Latch must not change
          continue;
        }
        placed = true;
        const same = JSON.stringify(h) === JSON.stringify(handler) && (g.matcher ?? null) === spec.matcher;
        action = same ? 'unchanged' : 'updated';
        if (spec.matcher === null) delete g.matcher;
        else g.matcher = spec.matcher;
        next.push(handler);
      }
      if (next.length === 0 && g.hooks.length > 0) emptied.add(g);
      g.hooks = next;
    }
    if (!placed)
      groups.push(spec.matcher === null ? { hooks: [handler] } : { matcher: spec.matcher, hooks: [handler] });
    if (dropped) action = 'updated';
    hooks[spec.event] = groups.filter((g) => !emptied.has(g));
    changes.push({ event: spec.event, action });
  }
  return { file, changes };
}

export function removeLatchHooks(input: HooksFile): MergeResult {
  const file: HooksFile = structuredClone(input);
  const changes: MergeResult['changes'] = [];
  for (const [event, groups] of Object.entries(file.hooks ?? {})) {
    if (!Array.isArray(groups)) continue;
    let removed = false;
    const kept: Group[] = [];
    // Codex's trust keys are positional (<file>:<event>:<group>:<handler>): a group Latch empties
    // before someone else's group stays as an empty placeholder, so theirs keeps its key and trust.
    const isLatchOnly = (g: Group) => Array.isArray(g.hooks) && g.hooks.length > 0 && g.hooks.every(isLatchHandler);
    let lastForeign = -1;
    groups.forEach((g, i) => {
      if (!isLatchOnly(g)) lastForeign = i;
    });
    groups.forEach((g, i) => {
      const hs = Array.isArray(g.hooks) ? g.hooks.filter((h) => !isLatchHandler(h)) : null;
      if (!hs || hs.length === g.hooks!.length) {
        kept.push(g); // untouched, even when empty (other people's groups are not Latch's to tidy)
        return;
      }
      removed = true;
      if (hs.length > 0) kept.push({ ...g, hooks: hs });
      else if (i < lastForeign) kept.push({ hooks: [] });
    });
    if (!removed) continue;
    changes.push({ event, action: 'removed' });
    if (kept.length > 0) file.hooks![event] = kept;
    else delete file.hooks![event];
  }
  return { file, changes };
}

// ---------------------------------------------------------------------------------------------
// --trust: Codex's trust for exactly Latch's handlers

const snake = (event: string) => event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const camel = (event: string) => event.charAt(0).toLowerCase() + event.slice(1);

function realOrResolved(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** One Latch handler's trust entry: the key Codex uses and the hash Codex reported for it. */
export interface TrustEntry {
  event: string;
  matcher: string | null;
  /** `<abs hooks.json path as Codex spells it>:<event_snake>:<group>:<handler>` */
  key: string;
  /** `sha256:<hex>`, as `codex app-server` `hooks/list` reports it (`currentHash`). */
  hash: string;
  /** Codex's view before this run. */
  trustStatus: string;
  enabled: boolean;
}

export interface TrustEdit {
  key: string;
  hash: string;
  action: 'added' | 'updated' | 'unchanged';
  /** The trusted_hash replaced (updated). */
  was?: string;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);
}

/** The key path of a `[a."b".c]` table header line (parsed by the TOML parser itself), or null. */
function headerPath(line: string): string[] | null {
  const m = /^\s*\[(?!\[)(.*)\]\s*(?:#.*)?$/.exec(line.replace(/\r$/, ''));
  if (!m) return null;
  let doc: unknown;
  try {
    doc = parseToml(`[${m[1]}]\n`);
  } catch {
    return null;
  }
  const path: string[] = [];
  while (isTable(doc) && Object.keys(doc).length === 1) {
    const k = Object.keys(doc)[0]!;
    path.push(k);
    doc = doc[k];
  }
  return path;
}

const isHeaderLine = (line: string) => /^\s*\[/.test(line);

/**
 * config.toml text with `[hooks.state."<key>"] trusted_hash = "<hash>"` for each entry, every other
 * byte kept: an entry is appended as its own table, or its `trusted_hash` line is replaced (inserted
 * under its header when missing). The result is parsed again and must equal the original document
 * plus exactly these values; anything else (a `hooks.state` written as an inline table, say) throws.
 */
export function withTrustEntries(
  text: string,
  entries: { key: string; hash: string }[],
): { text: string; edits: TrustEdit[] } {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`not valid TOML (${errorMessage(err).split('\n')[0]}); fix it first, Latch will not rewrite it`);
  }
  const state = (d: Record<string, unknown>): Record<string, unknown> => {
    const hooks = isTable(d.hooks) ? d.hooks : {};
    return isTable(hooks.state) ? hooks.state : {};
  };
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split('\n');
  const appended: string[] = [];
  const edits: TrustEdit[] = [];
  for (const { key, hash } of entries) {
    const cur = state(doc)[key];
    if (cur === undefined) {
      appended.push(`[hooks.state.${JSON.stringify(key)}]${eol}trusted_hash = ${JSON.stringify(hash)}${eol}`);
      edits.push({ key, hash, action: 'added' });
      continue;
    }
    const was = isTable(cur) ? cur.trusted_hash : undefined;
    if (was === hash) {
      edits.push({ key, hash, action: 'unchanged' });
      continue;
    }
    const at = lines.findIndex((l) => {
      const p = headerPath(l);
      return !!p && p.length === 3 && p[0] === 'hooks' && p[1] === 'state' && p[2] === key;
    });
    if (at < 0)
      throw new Error(
        `[hooks.state."${key}"] is not written as its own table; edit it by hand (or remove it) and run again`,
      );
    let end = at + 1;
    while (end < lines.length && !isHeaderLine(lines[end]!)) end++;
    const line = `trusted_hash = ${JSON.stringify(hash)}`;
    const own = lines.slice(at + 1, end).findIndex((l) => /^\s*trusted_hash\s*=/.test(l));
    if (own >= 0) {
      const old = lines[at + 1 + own]!;
      lines[at + 1 + own] = `${/^\s*/.exec(old)![0]}${line}${old.endsWith('\r') ? '\r' : ''}`;
    } else {
      lines.splice(at + 1, 0, `${line}${eol === '\r\n' ? '\r' : ''}`);
    }
    edits.push({ key, hash, action: 'updated', ...(typeof was === 'string' ? { was } : {}) });
  }
  let out = lines.join('\n');
  if (appended.length) {
    if (out.length && !out.endsWith('\n')) out += eol;
    out += (out.length ? eol : '') + appended.join(eol);
  }
  if (out === text) return { text, edits };
  // The proof: the edited document is the original plus exactly these trusted_hash values.
  let after: Record<string, unknown>;
  try {
    after = parseToml(out) as Record<string, unknown>;
  } catch (err) {
    throw new Error(
      `the edit would not be valid TOML (${errorMessage(err).split('\n')[0]}); hooks.state is written in a form Latch does not edit: add the entries by hand or with /hooks in Codex`,
    );
  }
  const expected = parseToml(text) as Record<string, unknown>;
  const hooks = isTable(expected.hooks) ? expected.hooks : (expected.hooks = {});
  const st = isTable(hooks.state) ? hooks.state : (hooks.state = {});
  for (const { key, hash } of entries) {
    const e = st[key];
    if (isTable(e)) e.trusted_hash = hash;
    else st[key] = { trusted_hash: hash };
  }
  if (!isDeepStrictEqual(plain(after), plain(expected))) {
    throw new Error(
      'the edit would change more than the Latch trust entries (hooks.state is written in a form Latch does not edit): add them by hand or with /hooks in Codex',
    );
  }
  return { text: out, edits };
}

/** A parsed TOML document as plain data (the parser's objects may lack a prototype; dates as text). */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Date) return `date:${String(v)}:${Number.isNaN(v.getTime()) ? '' : v.toISOString()}`;
  if (typeof v === 'bigint') return `bigint:${v}`;
  if (typeof v === 'number' && Number.isNaN(v)) return 'number:NaN';
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.keys(v).map((k) => [k, plain((v as Record<string, unknown>)[k])]));
  return v;
}

export interface TrustPlan {
  codex: string;
  config: string;
  entries: TrustEntry[];
  /** Handlers Codex reports as managed (trusted by policy: nothing to record). */
  managed: TrustEntry[];
  problems: string[];
}

/**
 * Asks the real Codex (`codex app-server`, `hooks/list`) for the hash of each Latch handler in
 * `hooksText`, on a throwaway copy of CODEX_HOME (config.toml and the hooks.json about to be
 * written). A handler is trusted only when Codex reports, under its exact key, the very command,
 * matcher, timeout and status message setup writes for this installation.
 */
export async function planTrust(
  io: Io,
  codex: CodexCommand,
  opts: {
    codexHome: string;
    hooksFile: string;
    hooksText: string;
    project: string | null;
    node: string;
    entry: string;
    timeoutMs?: number;
  },
): Promise<TrustPlan> {
  const config = join(opts.codexHome, 'config.toml');
  const plan: TrustPlan = { codex: codex.path, config, entries: [], managed: [], problems: [] };
  const handlers = latchHandlersOf(JSON.parse(opts.hooksText));
  const iso = isolatedCodexHome(opts.codexHome);
  try {
    // The user hooks.json Codex reads is the copy's: it gets the text setup writes (or would write).
    let codexFile: string;
    let cwd: string;
    if (opts.project) {
      codexFile = join(realOrResolved(opts.project), '.codex', 'hooks.json');
      cwd = realOrResolved(opts.project);
    } else {
      writeFileSync(join(iso.dir, 'hooks.json'), opts.hooksText);
      codexFile = join(iso.dir, 'hooks.json');
      cwd = join(iso.dir, 'cwd');
      mkdirSync(cwd);
    }
    const realFile = opts.project ? codexFile : join(realOrResolved(opts.codexHome), 'hooks.json');
    const listed = await listCodexHooks(codex, {
      env: io.env,
      codexHome: iso.dir,
      cwds: [cwd],
      timeoutMs: opts.timeoutMs ?? 30_000,
      waitExit: true,
    });
    const all: CodexHookInfo[] = listed.flatMap((e) => e.hooks);
    for (const e of listed)
      for (const x of e.errors)
        plan.problems.push(`Codex reports: ${iso.toOriginal(String(x.path))}: ${iso.toOriginal(String(x.message))}`);
    for (const h of handlers) {
      const tail = `:${snake(h.event)}:${h.group}:${h.index}`;
      const spec = LATCH_EVENTS.find((s) => s.event === h.event);
      const label = `${h.event}${h.matcher ? ` [${h.matcher}]` : ''}`;
      const c = all.find((x) => x.key === codexFile + tail);
      if (!spec) {
        plan.problems.push(
          `${label}: not an event Latch installs; remove it (latch uninstall codex, then latch setup codex)`,
        );
        continue;
      }
      if (!c) {
        plan.problems.push(
          opts.project
            ? `${label}: Codex does not load ${codexFile} (it loads a project's .codex/ only once the project is trusted: open \`codex\` in ${opts.project} and trust it first)`
            : `${label}: Codex did not list this handler (key ${realFile + tail})`,
        );
        continue;
      }
      const want = {
        eventName: camel(h.event),
        command: hookCommand(h.event, opts.node, opts.entry),
        matcher: spec.matcher,
        timeoutSec: spec.timeout,
        statusMessage: spec.status,
      };
      const got = {
        eventName: c.eventName,
        command: c.command,
        matcher: c.matcher ?? null,
        timeoutSec: (c as { timeoutSec?: unknown }).timeoutSec,
        statusMessage: (c as { statusMessage?: unknown }).statusMessage ?? null,
      };
      const differs = (Object.keys(want) as (keyof typeof want)[]).filter((k) => want[k] !== got[k]);
      if (differs.length || (c.handlerType !== undefined && c.handlerType !== 'command')) {
        plan.problems.push(
          `${label}: Codex reports a different handler under ${realFile + tail} (${differs.join(', ') || 'handler type'}); not trusting it`,
        );
        continue;
      }
      if (typeof c.currentHash !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(c.currentHash)) {
        plan.problems.push(`${label}: Codex reported no usable hash (${String(c.currentHash)})`);
        continue;
      }
      const entry: TrustEntry = {
        event: h.event,
        matcher: h.matcher,
        key: realFile + tail,
        hash: c.currentHash,
        trustStatus: String(c.trustStatus),
        enabled: c.enabled !== false,
      };
      if (c.trustStatus === 'managed') plan.managed.push(entry);
      else plan.entries.push(entry);
    }
  } finally {
    iso.cleanup();
  }
  return plan;
}

const short = (hash: string) => hash.replace(/^sha256:/, '').slice(0, 12);

export async function setupCodex(io: Io, opts: SetupOptions): Promise<number> {
  const file = hooksFilePath(opts, io.env);
  const entry = resolve(opts.entry ?? defaultEntry());
  const node = opts.node ?? process.execPath;
  if (!existsSync(entry))
    throw new ExitError(EXIT.failure, `Latch entry ${entry} does not exist; run \`npm run build\` first`);
  // --trust needs the real Codex (it reports the hashes): found before anything is written.
  const codex = opts.trust ? resolveCodex(io.env) : null;
  if (opts.trust && !codex) {
    throw new ExitError(
      EXIT.failure,
      '--trust records the hash Codex itself reports for each Latch handler, and no `codex` was found on the PATH or in node_modules: install Codex (`npm i -g @openai/codex`) or put it on the PATH, then run again (nothing was written)',
    );
  }
  const before = readHooks(file);
  const { file: after, changes } = mergeLatchHooks(before, node, entry);
  const text = JSON.stringify(after, null, 2) + '\n';
  const home = homeOf(io);
  // The store first: handlers written without a usable store would deny every tracked call.
  const db = opts.dryRun ? null : openStore(home, { create: true });
  try {
    return await setupWith(io, opts, { db, file, entry, node, codex, text, changes, home });
  } finally {
    db?.close();
  }
}

async function setupWith(
  io: Io,
  opts: SetupOptions,
  s: {
    db: ReturnType<typeof openStore> | null;
    file: string;
    entry: string;
    node: string;
    codex: CodexCommand | null;
    text: string;
    changes: MergeResult['changes'];
    home: string;
  },
): Promise<number> {
  const { db, file, entry, node, codex, text, changes, home } = s;
  const codexHome = userCodexHome(opts, io.env);
  const project = opts.project ? resolve(opts.project) : null;
  io.out(`${opts.dryRun ? 'Would update' : 'Updated'} ${file}\n`);
  for (const c of changes) io.out(`  ${c.event}: ${c.action}\n`);
  if (opts.dryRun) io.out(text);
  else writeAtomic(file, text);

  let trusted: { plan: TrustPlan; edits: TrustEdit[] } | null = null;
  let trustError: string | null = null;
  if (opts.trust && codex) {
    try {
      trusted = await trustHandlers(io, codex, {
        codexHome,
        hooksFile: file,
        hooksText: text,
        project,
        node,
        entry,
        dryRun: opts.dryRun === true,
        timeoutMs: opts.timeoutMs,
      });
      if (trusted.plan.problems.length)
        trustError = 'not every Latch handler could be trusted (above); nothing was written to config.toml';
    } catch (err) {
      trustError = errorMessage(err);
    }
  }

  if (db) {
    // Recorded after the trust entries: they are part of the fingerprint (config.toml's hook settings).
    const userConfig = join(codexHome, 'config.toml');
    const rec = recordRegistration(
      db,
      {
        kind: project ? 'project' : 'user',
        hooksFile: file,
        configFiles: [
          ...(project ? [join(project, '.codex', 'config.toml')] : []),
          userConfig,
          ...extraCodexConfigs(codexHome),
        ],
        project,
        projectTrustFile: project ? userConfig : null,
        node,
        entry,
        home: io.env.HOME || homedir(),
        pathVar: io.env.PATH,
        version: VERSION,
      },
      io.now(),
    );
    io.out(`State store: ${home}\n`);
    io.out(
      `Registration fingerprint recorded (${rec.files} files: this hooks.json and config.toml's hook settings, Latch's installed files, ` +
        `your shell startup files, \`latch\`/\`node\`/\`codex\` on the PATH). Hooks, \`latch status\` and \`latch doctor\` compare it; ` +
        `a change made while an agent's tool call (or a job it started) ran latches the workspace's sessions; one made outside them (yours) ` +
        `refuses tracked calls until it is recorded. After a legitimate change (you edited hooks.json or a shell startup file, upgraded Latch), ` +
        `re-run \`latch setup codex\`${project ? ` --project ${project}` : ''} to record it again.\n`,
    );
    for (const l of acceptedLines(rec.accepted)) io.out(`${l}\n`);
    // A code cache this process writes at exit (src/loader.ts) is recorded again after it did.
    const atExit = runningFrom(entry);
    if (atExit) rerecordCodeCachesAtExit(() => openStore(home, { create: false }));
    else if (rec.missingCaches.length)
      io.out(
        `Note: no code cache ${rec.missingCaches.join(', ')}: run \`npm run build\` (a cache written later reads as a change).\n`,
      );
  }
  const again = `latch setup codex${project ? ` --project ${project}` : ''}${opts.codexHome ? ` --codex-home ${codexHome}` : ''} --trust`;
  if (trustError) {
    io.err(`latch setup: --trust: ${trustError}\n`);
    io.out(
      [
        '',
        `Codex skips untrusted hooks silently: fix the above and run \`${again}\`, or open \`codex\`, run /hooks and trust the Latch handlers.`,
        '',
      ].join('\n'),
    );
    return EXIT.failure;
  }
  if (trusted) {
    const n = trusted.plan.entries.length + trusted.plan.managed.length;
    io.out(
      opts.dryRun
        ? `\nWith --trust (without --dry-run), Codex will run all ${n} Latch handlers; \`latch doctor\` shows trust per handler.\n`
        : `\nCodex trusts all ${n} Latch handlers: it runs them without /hooks review. \`latch doctor\` shows trust per handler.\n` +
            'A changed handler (a new Latch location, node or version) is untrusted again: re-run this command after upgrading.\n',
    );
    return EXIT.ok;
  }
  io.out(
    [
      '',
      'Next step (required): Codex runs a hook only after you trust it.',
      `  Run \`${again}\` (records the hash Codex reports for Latch's handlers only),`,
      '  or start `codex`, open /hooks, review the Latch handlers and trust them.',
      '  (Codex skips untrusted hooks silently; `latch doctor` tells you whether they are trusted.)',
      '',
    ].join('\n'),
  );
  return EXIT.ok;
}

/** --trust: asks Codex for the hashes, then writes Latch's trust entries (only) into $CODEX_HOME/config.toml. */
async function trustHandlers(
  io: Io,
  codex: CodexCommand,
  opts: {
    codexHome: string;
    hooksFile: string;
    hooksText: string;
    project: string | null;
    node: string;
    entry: string;
    dryRun: boolean;
    timeoutMs?: number;
  },
): Promise<{ plan: TrustPlan; edits: TrustEdit[] }> {
  if (opts.project && opts.dryRun) {
    const onDisk = existsSync(opts.hooksFile) ? readFileSync(opts.hooksFile, 'utf8') : null;
    if (onDisk !== opts.hooksText) {
      throw new Error(
        `Codex reads ${opts.hooksFile} from the project itself, which --dry-run does not write: run without --dry-run to trust (the hashes are Codex's, for the file as written)`,
      );
    }
  }
  const plan = await planTrust(io, codex, opts);
  const config = plan.config;
  io.out(
    `\nTrust: asked ${plan.codex} (\`codex app-server\` hooks/list, on a throwaway copy of ${opts.codexHome}) for the hash of each Latch handler.\n`,
  );
  for (const m of plan.managed) io.out(`  ${m.event}: managed by policy (trusted; nothing to record)\n`);
  for (const p of plan.problems) io.out(`  ${p}\n`);
  if (plan.problems.length) return { plan, edits: [] };
  const text = existsSync(config) ? readFileSync(config, 'utf8') : '';
  let res: { text: string; edits: TrustEdit[] };
  try {
    res = withTrustEntries(text, plan.entries);
  } catch (err) {
    throw new Error(`${config}: ${errorMessage(err)}`);
  }
  const changed = res.text !== text;
  io.out(
    `${changed ? (opts.dryRun ? 'Would update' : 'Updated') : 'Unchanged:'} ${config} (only the [hooks.state] entries of Latch's handlers; every other byte kept)\n`,
  );
  for (const e of res.edits) {
    const h = plan.entries.find((x) => x.key === e.key)!;
    const what =
      e.action === 'updated'
        ? `updated ${e.was ? short(e.was) : '(no hash)'} -> ${short(e.hash)}`
        : `${e.action} ${short(e.hash)}`;
    io.out(
      `  ${h.event}${h.matcher ? ` [${h.matcher}]` : ''}: ${what}${h.enabled ? '' : ' (disabled in Codex: enable it in /hooks, Latch does not)'}\n`,
    );
  }
  if (changed && opts.dryRun) {
    for (const e of res.edits.filter((x) => x.action !== 'unchanged'))
      io.out(`[hooks.state.${JSON.stringify(e.key)}]\ntrusted_hash = ${JSON.stringify(e.hash)}\n`);
  }
  if (changed && !opts.dryRun) writeConfigAtomic(config, res.text);
  return { plan, edits: res.edits };
}

export async function uninstallCodex(
  io: Io,
  opts: Pick<SetupOptions, 'codexHome' | 'project' | 'dryRun'>,
): Promise<number> {
  const file = hooksFilePath(opts, io.env);
  if (!existsSync(file)) {
    io.out(`${file} does not exist; nothing to remove\n`);
    return EXIT.ok;
  }
  const { file: after, changes } = removeLatchHooks(readHooks(file));
  if (changes.length === 0) {
    io.out(`No Latch handlers in ${file}\n`);
    return EXIT.ok;
  }
  let stopped = 0;
  if (!opts.dryRun) {
    writeAtomic(file, JSON.stringify(after, null, 2) + '\n');
    const home = homeOf(io);
    stopped = dismissResidentHooks(home, 'codex');
    forgetRegistrationIn(home, file);
  }
  io.out(
    `${opts.dryRun ? 'Would remove' : 'Removed'} Latch handlers from ${file}: ${changes.map((c) => c.event).join(', ')}\n`,
  );
  io.out(residentLine(stopped));
  io.out('The state store is kept; existing latches still hold for `latch exec` and `latch status`.\n');
  return EXIT.ok;
}
