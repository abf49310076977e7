// `latch setup codex` / `latch uninstall codex`: merge Latch's handlers into a Codex hooks.json.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExitError, EXIT } from '../core/errors.js';
import { openStore } from '../core/store.js';
import { extraCodexConfigs, forgetRegistration, isLatchHandler as isLatchHandlerOf, recordRegistration, rerecordCodeCachesAtExit, runningFrom } from '../core/tamper.js';
import { TRACKED_TOOL_MATCHER } from '../core/tools.js';
import { homeOf, type Io } from './io.js';

export interface SetupOptions {
  codexHome?: string;
  project?: string;
  dryRun?: boolean;
  /** Absolute path of the bundled entry (dist/latch.cjs); defaults to the running one. */
  entry?: string;
  /** Node binary for the hook command; defaults to the running one. */
  node?: string;
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

/** The bundled hook entry: dist/latch.cjs beside the running bundle, else in the package root. */
export function defaultEntry(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const p of [join(here, 'latch.cjs'), join(here, '..', '..', 'dist', 'latch.cjs')]) if (existsSync(p)) return p;
  return join(here, 'latch.cjs');
}

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The command text for one event. The PreToolUse one denies (exit 2) if Latch is missing or crashes. */
export function hookCommand(event: string, node: string, entry: string): string {
  const run = `${shq(node)} ${shq(entry)} hook codex --event ${event}`;
  if (event !== 'PreToolUse') return run;
  const script =
    `${run}; s=$?; if [ "$s" -ne 0 ] && [ "$s" -ne 2 ]; then ` +
    `echo "Latch could not check this call (hook exited $s); blocking it. Run: latch doctor" >&2; exit 2; fi; exit "$s"`;
  return `/bin/sh -c ${shq(script)}`;
}

export function hooksFilePath(opts: Pick<SetupOptions, 'codexHome' | 'project'>, env: NodeJS.ProcessEnv): string {
  if (opts.project) return join(resolve(opts.project), '.codex', 'hooks.json');
  return join(userCodexHome(opts, env), 'hooks.json');
}

/** $CODEX_HOME (--codex-home, else the environment's, else ~/.codex). */
export function userCodexHome(opts: Pick<SetupOptions, 'codexHome'>, env: NodeJS.ProcessEnv): string {
  return opts.codexHome ? resolve(opts.codexHome) : env.CODEX_HOME ? resolve(env.CODEX_HOME) : join(env.HOME || homedir(), '.codex');
}

function readHooks(file: string): HooksFile {
  if (!existsSync(file)) return {};
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ExitError(EXIT.failure, `${file} is not valid JSON (${(err as Error).message}); fix it first, Latch will not overwrite it`);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new ExitError(EXIT.failure, `${file} is not a JSON object`);
  const hooks = (data as HooksFile).hooks;
  if (hooks !== undefined && (typeof hooks !== 'object' || hooks === null || Array.isArray(hooks))) {
    throw new ExitError(EXIT.failure, `${file}: "hooks" is not an object`);
  }
  for (const [event, groups] of Object.entries(hooks ?? {})) {
    const bad = (g: unknown) => !g || typeof g !== 'object' || Array.isArray(g) || ('hooks' in g && !Array.isArray((g as Group).hooks));
    if (!Array.isArray(groups) || groups.some(bad)) throw new ExitError(EXIT.failure, `${file}: "hooks.${event}" is not a list of hook groups`);
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
    const handler: Handler = { type: 'command', command: hookCommand(spec.event, node, entry), timeout: spec.timeout, statusMessage: spec.status };
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
    if (!placed) groups.push(spec.matcher === null ? { hooks: [handler] } : { matcher: spec.matcher, hooks: [handler] });
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

export async function setupCodex(io: Io, opts: SetupOptions): Promise<number> {
  const file = hooksFilePath(opts, io.env);
  const entry = resolve(opts.entry ?? defaultEntry());
  const node = opts.node ?? process.execPath;
  if (!existsSync(entry)) throw new ExitError(EXIT.failure, `Latch entry ${entry} does not exist; run \`npm run build\` first`);
  const before = readHooks(file);
  const { file: after, changes } = mergeLatchHooks(before, node, entry);
  const text = JSON.stringify(after, null, 2) + '\n';
  const home = homeOf(io);
  io.out(`${opts.dryRun ? 'Would update' : 'Updated'} ${file}\n`);
  for (const c of changes) io.out(`  ${c.event}: ${c.action}\n`);
  if (!opts.dryRun) {
    writeAtomic(file, text);
    const db = openStore(home, { create: true });
    try {
      const codexHome = userCodexHome(opts, io.env);
      const userConfig = join(codexHome, 'config.toml');
      const project = opts.project ? resolve(opts.project) : null;
      const rec = recordRegistration(
        db,
        {
          kind: project ? 'project' : 'user',
          hooksFile: file,
          configFiles: [...(project ? [join(project, '.codex', 'config.toml')] : []), userConfig, ...extraCodexConfigs(codexHome)],
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
          `a change latches the workspace's sessions. After a legitimate change (you edited hooks.json or a shell startup file, upgraded Latch), ` +
          `re-run \`latch setup codex\`${project ? ` --project ${project}` : ''} to record it again.\n`,
      );
      // A code cache this process writes at exit (src/loader.ts) is recorded again after it did.
      const atExit = runningFrom(entry);
      if (atExit) rerecordCodeCachesAtExit(() => openStore(home, { create: false }));
      else if (rec.missingCaches.length) io.out(`Note: no code cache ${rec.missingCaches.join(', ')}: run \`npm run build\` (a cache written later reads as a change).\n`);
    } finally {
      db.close();
    }
  } else {
    io.out(text);
  }
  io.out(
    [
      '',
      'Next step (required): Codex runs a hook only after you trust it.',
      '  Start `codex`, open /hooks, review the Latch handlers and trust them.',
      '  (Codex skips untrusted hooks silently; `latch doctor` tells you whether they are trusted.)',
      '',
    ].join('\n'),
  );
  return EXIT.ok;
}

export async function uninstallCodex(io: Io, opts: Pick<SetupOptions, 'codexHome' | 'project' | 'dryRun'>): Promise<number> {
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
  if (!opts.dryRun) {
    writeAtomic(file, JSON.stringify(after, null, 2) + '\n');
    const home = homeOf(io);
    if (existsSync(join(home, 'latch.db'))) {
      const db = openStore(home, { create: false });
      try {
        forgetRegistration(db, file);
      } finally {
        db.close();
      }
    }
  }
  io.out(`${opts.dryRun ? 'Would remove' : 'Removed'} Latch handlers from ${file}: ${changes.map((c) => c.event).join(', ')}\n`);
  io.out('The state store is kept; existing latches still hold for `latch exec` and `latch status`.\n');
  return EXIT.ok;
}
