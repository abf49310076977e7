// `latch setup claude` / `latch uninstall claude`: Latch's hook handlers in a Claude Code settings
// file (the user's `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`; with --project
// DIR, `DIR/.claude/settings.json`). Only Latch's handlers are written or removed: every other setting
// and hook keeps its place, and the text outside the event lists Latch changes keeps its bytes.
//
// Claude Code 2.1.332 runs a command handler as `/bin/sh -c <command>` with the payload on stdin, and
// lets the tool call through (fails open) when a PreToolUse hook exits 1, dies, prints no JSON, is
// missing or times out; exit 2 blocks. So the PreToolUse command is wrapped (any exit other than 0/2
// becomes exit 2), and its handler says `"onFailure": "block"` (2.1.332: a failure to start, a kill,
// a timeout, an exit other than 0/2, JSON that fails the schema count as exit 2) for what no wrapper
// can catch. Stdout that is not JSON at all (even a deny cut short) is plain text to Claude Code, a
// success, with or without onFailure (measured: docs/hook-failures.md).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ExitError, EXIT } from '../../base/errors.js';
import { homeOf, type Io } from '../../kit/io.js';
import { dismissResidentHooks, residentLine } from '../../resident/list.js';
import { defaultEntry, failClosed, latchHookRun, writeConfigAtomic } from '../../base/hook-command.js';
import { editJsonText } from '../../kit/json-text.js';
import { openStore } from '../../store/store.js';
import { claudeConfigDir } from './transcript.js';
import { acceptedLines, forgetRegistrationIn, recordRegistration } from '../../tamper/index.js';
import { withoutEntryGuard } from '../../base/hook-text.js';
import { homedir } from 'node:os';

/** The Claude Code release Latch is tested against (payloads, hook order, failure modes). */
export const TESTED_CLAUDE_VERSION = '2.1.332';

export interface ClaudeEventSpec {
  event: string;
  /** Seconds. Above the hook's own deadline (90 s), so Latch answers before Claude Code gives up. */
  timeout: number;
  status: string;
  /** The tool hook: wrapped fail-closed, `onFailure: "block"`. */
  failClosed: boolean;
}

/**
 * The events Latch listens to. No matcher anywhere: every tool reaches PreToolUse (an unknown tool is
 * tracked), PostToolUse and PostToolUseFailure (2.1.332 sends a tool call that failed, such as a
 * Bash command exiting non-zero, to PostToolUseFailure instead of PostToolUse: without it such an
 * attempt is never closed). StopFailure: a turn that ended on an API error (its attempts are
 * abandoned). Claude Code caps SessionEnd hooks at 60 s.
 */
export const CLAUDE_EVENTS: readonly ClaudeEventSpec[] = [
  { event: 'SessionStart', timeout: 60, status: 'Latch: checking session authority', failClosed: false },
  { event: 'PreToolUse', timeout: 120, status: 'Latch: checking mutation authority', failClosed: true },
  { event: 'PostToolUse', timeout: 120, status: 'Latch: recording changes', failClosed: false },
  { event: 'PostToolUseFailure', timeout: 120, status: 'Latch: recording changes', failClosed: false },
  { event: 'PreCompact', timeout: 120, status: 'Latch: writing checkpoint', failClosed: false },
  { event: 'PostCompact', timeout: 60, status: 'Latch: latching after compaction', failClosed: false },
  { event: 'Stop', timeout: 120, status: 'Latch: closing the turn', failClosed: false },
  { event: 'SubagentStop', timeout: 120, status: 'Latch: closing the sub-agent turn', failClosed: false },
  { event: 'StopFailure', timeout: 60, status: 'Latch: closing the failed turn', failClosed: false },
  { event: 'SessionEnd', timeout: 60, status: 'Latch: closing the session', failClosed: false },
];

export interface ClaudeSetupOptions {
  /** Install into DIR/.claude/settings.json instead of the user settings. */
  project?: string;
  dryRun?: boolean;
  json?: boolean;
  /** Absolute path of the bundled entry (dist/latch.cjs); defaults to the running one. */
  entry?: string;
  /** Node binary for the hook command; defaults to the running one. */
  node?: string;
}

type Handler = { type?: unknown; command?: unknown; [k: string]: unknown };
type Group = { matcher?: unknown; hooks?: unknown[]; [k: string]: unknown };
export type ClaudeSettings = { hooks?: Record<string, Group[]>; [k: string]: unknown };

export interface ClaudeChange {
  event: string;
  action: 'added' | 'updated' | 'unchanged' | 'removed';
}

// ---------------------------------------------------------------------------------------------
// where and what

/** The settings file setup writes: the user's, or DIR/.claude/settings.json with `project`. */
export function claudeSettingsPath(opts: { project?: string }, env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  if (opts.project) return join(resolve(cwd, opts.project), '.claude', 'settings.json');
  return join(claudeConfigDir(env), 'settings.json');
}

/** The command text for one event; the PreToolUse one denies (exit 2) if Latch is missing or crashes. */
export function claudeHookCommand(event: string, node: string, entry: string): string {
  const run = latchHookRun('claude', event, node, entry);
  return event === 'PreToolUse' ? failClosed(run, 'claude', entry) : run;
}

/** The handler setup writes for one event. */
export function claudeHandler(spec: ClaudeEventSpec, node: string, entry: string): Handler {
  return {
    type: 'command',
    command: claudeHookCommand(spec.event, node, entry),
    timeout: spec.timeout,
    ...(spec.failClosed ? { onFailure: 'block' } : {}),
    statusMessage: spec.status,
  };
}

const MARK = / hook claude --event [A-Za-z]+/;

/** A handler Latch wrote: its command runs `... hook claude --event NAME` of a `latch` entry. */
export function isClaudeLatchHandler(h: unknown): boolean {
  if (!h || typeof h !== 'object' || Array.isArray(h)) return false;
  const c = (h as Handler).command;
  return typeof c === 'string' && MARK.test(c) && /latch/.test(c);
}

const RUN_RE = /^(?:NODE_EXTRA_CA_CERTS= )?'((?:[^']|'\\'')*)' '((?:[^']|'\\'')*)' hook claude --event ([A-Za-z]+)/;
const WRAP_PREFIX = '/bin/sh -c ';
const unq = (s: string): string => s.replace(/'\\''/g, "'");

export interface ParsedClaudeCommand {
  node: string;
  entry: string;
  event: string;
  /** Run through the fail-closed wrapper. */
  wrapped: boolean;
  /** Exactly the text setup writes for this event, node and entry. */
  exact: boolean;
}

/** Node, entry and event of a command in the form setup writes (wrapped or not); null otherwise. */
export function parseClaudeHookCommand(command: string): ParsedClaudeCommand | null {
  let inner = command;
  let wrapped = false;
  if (command.startsWith(WRAP_PREFIX)) {
    const w = /^'((?:[^']|'\\'')*)'$/.exec(command.slice(WRAP_PREFIX.length));
    if (!w) return null;
    inner = withoutEntryGuard(unq(w[1]!));
    wrapped = true;
  }
  const m = RUN_RE.exec(inner);
  if (!m) return null;
  if (!wrapped && inner.length !== m[0].length) return null;
  const node = unq(m[1]!);
  const entry = unq(m[2]!);
  const event = m[3]!;
  const exact = claudeHookCommand(event, node, entry) === command;
  return { node, entry, event, wrapped, exact };
}

// ---------------------------------------------------------------------------------------------
// reading

export interface SettingsRead {
  file: string;
  /** The file's text, or null when it does not exist (or holds only whitespace). */
  text: string | null;
  data: ClaudeSettings;
}

/** Reads a settings file; refuses (exit 1, nothing written) one that is not a JSON object with well-formed hooks. */
export function readClaudeSettings(file: string): SettingsRead {
  if (!existsSync(file)) return { file, text: null, data: {} };
  const text = readFileSync(file, 'utf8');
  if (text.trim() === '') return { file, text: null, data: {} };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ExitError(
      EXIT.failure,
      `${file} is not valid JSON (${(err as Error).message}); fix it first, Latch will not overwrite it`,
    );
  }
  if (!data || typeof data !== 'object' || Array.isArray(data))
    throw new ExitError(EXIT.failure, `${file} is not a JSON object; fix it first, Latch will not overwrite it`);
  const problem = hooksProblem((data as ClaudeSettings).hooks);
  if (problem) throw new ExitError(EXIT.failure, `${file}: ${problem}; fix it first, Latch will not overwrite it`);
  return { file, text, data: data as ClaudeSettings };
}

/** What is wrong with a settings file's `hooks` value (the shape Claude Code reads), or null. */
export function hooksProblem(hooks: unknown): string | null {
  if (hooks === undefined) return null;
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks)) return '"hooks" is not an object';
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) return `"hooks.${event}" is not a list of hook groups`;
    for (const g of groups) {
      if (!g || typeof g !== 'object' || Array.isArray(g)) return `"hooks.${event}" has an entry that is not an object`;
      if ('hooks' in g && !Array.isArray((g as Group).hooks))
        return `"hooks.${event}" has a group whose "hooks" is not a list`;
    }
  }
  return null;
}

/**
 * Values that make Claude Code skip a settings file whole, its hooks included (so Latch's handlers in
 * it would never run), or null. Each was measured on Claude Code 2.1.332 with `claude -p`: a wrong
 * type for `model`, `includeCoAuthoredBy`, `permissions` or its `allow`, `deny` and
 * `additionalDirectories` lists, a `defaultMode` that is not a string, and a `cleanupPeriodDays`
 * below 1 or not a number. Not every key Claude Code validates is known here (nor its allowed
 * `defaultMode` values), so null does not prove the file is accepted.
 */
export function skippedSettingsProblem(data: Record<string, unknown>): string | null {
  const has = (o: Record<string, unknown>, k: string) => Object.hasOwn(o, k);
  if (has(data, 'model') && typeof data.model !== 'string') return '"model" is not a string';
  if (has(data, 'includeCoAuthoredBy') && typeof data.includeCoAuthoredBy !== 'boolean')
    return '"includeCoAuthoredBy" is not true or false';
  if (has(data, 'cleanupPeriodDays') && (typeof data.cleanupPeriodDays !== 'number' || !(data.cleanupPeriodDays >= 1)))
    return '"cleanupPeriodDays" is not a number of at least 1';
  if (has(data, 'permissions')) {
    const p = data.permissions;
    if (!p || typeof p !== 'object' || Array.isArray(p)) return '"permissions" is not an object';
    const perms = p as Record<string, unknown>;
    for (const k of ['allow', 'deny', 'additionalDirectories'])
      if (has(perms, k) && !Array.isArray(perms[k])) return `"permissions.${k}" is not a list`;
    if (has(perms, 'defaultMode') && typeof perms.defaultMode !== 'string')
      return '"permissions.defaultMode" is not a string';
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// merging (as data)

/** A matcher that lets every tool through: none, "" or "*". */
export function matchesAll(matcher: unknown): boolean {
  return matcher === undefined || matcher === '' || matcher === '*';
}

/**
 * Puts Latch's handler for each event in place, keeping every other handler and group in its order:
 * an existing Latch handler is replaced where it is (in a group with no narrowing matcher, or a group
 * of Latch's own, whose matcher is dropped), copies elsewhere are removed (with a group left empty by
 * that), and an event without one gets a new group at its end.
 */
export function mergeClaudeHooks(
  input: ClaudeSettings,
  node: string,
  entry: string,
): { data: ClaudeSettings; changes: ClaudeChange[] } {
  const data = structuredClone(input);
  const hooks = (data.hooks ??= {});
  const changes: ClaudeChange[] = [];
  for (const spec of CLAUDE_EVENTS) {
    const handler = claudeHandler(spec, node, entry);
    const groups = hooks[spec.event] ?? [];
    let placed = false;
    let changed = false;
    let action: ClaudeChange['action'] = 'added';
    const out: Group[] = [];
    for (const g of groups) {
      if (!Array.isArray(g.hooks) || !g.hooks.some(isClaudeLatchHandler)) {
        out.push(g);
        continue;
      }
      const shared = g.hooks.some((h) => !isClaudeLatchHandler(h));
      const canPlace = !shared || matchesAll(g.matcher);
      const next: unknown[] = [];
      let here = false;
      for (const h of g.hooks) {
        if (!isClaudeLatchHandler(h)) next.push(h);
        else if (placed || !canPlace)
          changed = true; // a copy, or in a group narrowed by someone else's matcher
        else {
          placed = here = true;
          if (!isDeepStrictEqual(h, handler)) changed = true;
          action = 'unchanged';
          next.push(handler);
        }
      }
      if (next.length === 0) continue; // a group only Latch's copies were in
      const ng: Group = { ...g, hooks: next };
      if (here && !shared && 'matcher' in ng) {
        delete ng.matcher; // Latch's own group: every tool
        changed = true;
      }
      out.push(ng);
    }
    if (!placed) out.push({ hooks: [handler] });
    else if (changed) action = 'updated';
    hooks[spec.event] = out;
    changes.push({ event: spec.event, action });
  }
  return { data, changes };
}

/** Removes every Latch handler (any event), and the groups and event lists left empty by that. */
export function removeClaudeHooks(input: ClaudeSettings): { data: ClaudeSettings; changes: ClaudeChange[] } {
  const data = structuredClone(input);
  const changes: ClaudeChange[] = [];
  const hooks = data.hooks;
  if (!hooks) return { data, changes };
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue;
    let removed = false;
    const kept: Group[] = [];
    for (const g of groups) {
      if (!Array.isArray(g.hooks) || !g.hooks.some(isClaudeLatchHandler)) {
        kept.push(g); // untouched, even when empty: other people's groups are not Latch's to tidy
        continue;
      }
      removed = true;
      const rest = g.hooks.filter((h) => !isClaudeLatchHandler(h));
      if (rest.length) kept.push({ ...g, hooks: rest });
    }
    if (!removed) continue;
    changes.push({ event, action: 'removed' });
    if (kept.length) hooks[event] = kept;
    else delete hooks[event];
  }
  // A `hooks` that only Latch's handlers were in goes too (setup added it).
  if (changes.length && Object.keys(hooks).length === 0) delete data.hooks;
  return { data, changes };
}

// ---------------------------------------------------------------------------------------------
// writing (as text)

/**
 * The new text of a settings file: `before`'s text with only what differs in `after` rewritten (in
 * the file's own style), every other byte kept; a file that did not exist is written anew.
 */
export function settingsText(text: string | null, before: ClaudeSettings, after: ClaudeSettings): string {
  if (text === null) return `${JSON.stringify(after, null, 2)}\n`;
  return isDeepStrictEqual(before, after) ? text : editJsonText(text, before, after);
}

// ---------------------------------------------------------------------------------------------
// the commands

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

function scopeOf(opts: { project?: string }): 'user' | 'project' {
  return opts.project ? 'project' : 'user';
}

export async function setupClaude(io: Io, opts: ClaudeSetupOptions): Promise<number> {
  const file = claudeSettingsPath(opts, io.env, io.cwd);
  const entry = resolve(opts.entry ?? defaultEntry());
  const node = opts.node ?? process.execPath;
  if (!existsSync(entry))
    throw new ExitError(EXIT.failure, `Latch entry ${entry} does not exist; run \`npm run build\` first`);
  const read = readClaudeSettings(file);
  // Handlers in a file Claude Code skips would never run, and the fingerprint would take it as it is.
  const skipped = skippedSettingsProblem(read.data);
  if (skipped)
    throw new ExitError(
      EXIT.failure,
      `${file}: ${skipped}; Claude Code skips a settings file like this whole, hooks included, so Latch's handlers would never run: fix it first`,
    );
  const { data: after, changes } = mergeClaudeHooks(read.data, node, entry);
  const text = settingsText(read.text, read.data, after);
  const changed = text !== read.text;
  const home = homeOf(io);
  if (!opts.dryRun) {
    // The store first: handlers written without a usable store would deny every tracked call.
    const db = openStore(home, { create: true });
    try {
      if (changed) writeConfigAtomic(file, text, opts.project ? {} : { dirMode: 0o700 });
      // Tamper evidence, as for Codex (src/tamper/index.ts): this settings file, Latch's installed
      // files, the shell startup files and PATH; every hook compares them, and a change latches.
      const project = opts.project ? resolve(io.cwd, opts.project) : null;
      const rec = recordRegistration(
        db,
        {
          kind: project ? 'project' : 'user',
          hooksFile: file,
          configFiles: [],
          project,
          node,
          entry,
          home: io.env.HOME || homedir(),
          pathVar: io.env.PATH,
          version: VERSION,
        },
        io.now(),
      );
      for (const l of acceptedLines(rec.accepted)) io.out(`${l}\n`);
    } finally {
      db.close();
    }
  }
  const scope = scopeOf(opts);
  const project = opts.project ? resolve(io.cwd, opts.project) : null;
  const next = nextSteps(scope, project);
  if (opts.json) {
    io.out(
      `${JSON.stringify(
        {
          agent: 'claude',
          latch_version: VERSION,
          file,
          scope,
          dry_run: opts.dryRun === true,
          changed,
          changes,
          node,
          entry,
          store: opts.dryRun ? null : home,
          ...(opts.dryRun ? { text } : {}),
          next,
        },
        null,
        2,
      )}\n`,
    );
    return EXIT.ok;
  }
  const what = scope === 'user' ? 'Claude Code user settings' : 'Claude Code project settings';
  io.out(
    changed
      ? `${opts.dryRun ? 'Would update' : 'Updated'} ${file} (${what}; every other setting and hook kept)\n`
      : `Unchanged: ${file} (${what}; Latch's handlers are already in place)\n`,
  );
  for (const c of changes) io.out(`  ${c.event}: ${c.action}\n`);
  if (opts.dryRun) {
    if (changed) io.out(text);
    io.out('Dry run: nothing was written (no settings file, no store).\n');
    return EXIT.ok;
  }
  io.out(`State store: ${home}\n`);
  io.out(['', ...next, ''].join('\n'));
  return EXIT.ok;
}

function nextSteps(scope: 'user' | 'project', project: string | null): string[] {
  const lines = [
    'Next step: start a new `claude` session: Claude Code reads its hooks when a session starts',
    '(a session already running may show the change in /hooks and need a restart). Then run `latch doctor`.',
  ];
  if (scope === 'project' && project)
    lines.push(
      `Claude Code runs these hooks for sessions started in ${project}, once its folder is trusted there. The commands`,
      "hold this machine's absolute paths (node, Latch): commit .claude/settings.json only if everyone has them.",
    );
  return lines;
}

export async function uninstallClaude(
  io: Io,
  opts: Pick<ClaudeSetupOptions, 'project' | 'dryRun' | 'json'>,
): Promise<number> {
  const file = claudeSettingsPath(opts, io.env, io.cwd);
  const report = (o: Record<string, unknown>, line: string) => {
    if (opts.json)
      io.out(`${JSON.stringify({ agent: 'claude', file, dry_run: opts.dryRun === true, ...o }, null, 2)}\n`);
    else io.out(line);
  };
  if (!existsSync(file)) {
    report({ changed: false, changes: [] }, `${file} does not exist; nothing to remove\n`);
    return EXIT.ok;
  }
  const read = readClaudeSettings(file);
  const { data: after, changes } = removeClaudeHooks(read.data);
  if (changes.length === 0) {
    report({ changed: false, changes }, `No Latch handlers in ${file}\n`);
    return EXIT.ok;
  }
  const text = settingsText(read.text, read.data, after);
  let stopped = 0;
  if (!opts.dryRun) {
    writeConfigAtomic(file, text);
    const home = homeOf(io);
    stopped = dismissResidentHooks(home, 'claude');
    forgetRegistrationIn(home, file);
  }
  report(
    { changed: true, changes, ...(opts.dryRun ? { text } : { resident_hooks_stopped: stopped }) },
    `${opts.dryRun ? 'Would remove' : 'Removed'} Latch handlers from ${file}: ${changes.map((c) => c.event).join(', ')}\n` +
      (opts.dryRun
        ? text
        : `${residentLine(stopped)}Every other setting and hook is kept. The state store is kept; existing latches still hold for \`latch exec\` and \`latch status\`.\n`),
  );
  return EXIT.ok;
}
