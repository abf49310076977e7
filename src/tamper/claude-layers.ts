// Claude Code's settings layers: every settings file a Claude Code session reads (user, project, local,
// managed), recorded per workspace when a session is first seen (its SessionStart) and compared by the
// keys that can disable or subvert Latch's hooks, so Claude Code's own edits (permission rules) are no
// finding while a program the agent ran (an interpreter, `cp -r`, `git checkout`) is.
import { type BigIntStats, lstatSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { immediate, type Db } from '../store/store.js';
import {
  canonicalJson,
  type FileNow,
  isTable,
  readForTrust,
  readNow,
  sha256,
  storedSig,
  userCanChange,
  verifyOf,
} from './fingerprint.js';
import { type FileRow, type HooksScope, type InstallScope, LAYER_PREFIX, type Role } from './types.js';

/**
 * The top-level settings keys whose change can disable or subvert Latch's hooks, or run a program
 * outside them; every other key (permissions, model, theme, ...) is left out, so the edits Claude Code
 * itself makes (an "always allow" click writes `permissions` to settings.local.json) are no finding.
 * - whether hooks run, and which: hooks, disableAllHooks, allowManagedHooksOnly,
 *   strictPluginOnlyCustomization, the HTTP-hook allowlists;
 * - what they run with: env (LATCH_HOME, LATCH_SANDBOX, NODE_OPTIONS, PATH, the shell prefix reach
 *   every hook), processWrapper (an argv prefix for the processes Claude Code starts);
 * - hooks that come with plugins: enabledPlugins and the marketplaces they are installed from;
 * - programs Claude Code runs itself, outside any hook and any sandbox, so also while the session is
 *   held: the status lines, the file-suggestion command, the credential and header helpers, the
 *   policy helpers, MCP servers it may start without asking.
 */
export const CLAUDE_SECURITY_KEYS: readonly string[] = [
  'hooks',
  'disableAllHooks',
  'allowManagedHooksOnly',
  'strictPluginOnlyCustomization',
  'allowedHttpHookUrls',
  'httpHookAllowedEnvVars',
  'env',
  'processWrapper',
  'enabledPlugins',
  'prependPlugins',
  'appendPlugins',
  'extraKnownMarketplaces',
  'additionalMarketplaces',
  'statusLine',
  'subagentStatusLine',
  'fileSuggestion',
  'apiKeyHelper',
  'proxyAuthHelper',
  'awsCredentialExport',
  'awsAuthRefresh',
  'gcpAuthRefresh',
  'otelHeadersHelper',
  'policyHelper',
  'policyHelpers',
  'managedMcpServers',
  'enableAllProjectMcpServers',
  'enabledMcpjsonServers',
];

/**
 * The MCP servers Claude Code starts by itself, outside any hook and any sandbox (at every start and
 * resume, a latched session's too): `.claude.json`'s user-scope `mcpServers` and each project's
 * local-scope servers and approvals; a project's `.mcp.json` servers (started once approved). Only
 * these keys count: Claude Code rewrites `.claude.json` all the time (start counts, tips, caches).
 */
const MCP_PROJECT_KEYS = [
  'mcpServers',
  'enabledMcpjsonServers',
  'disabledMcpjsonServers',
  'enableAllProjectMcpServers',
];

/** The part of a parsed `.claude.json` that decides which MCP servers start, or null when none. */
function claudeJsonMcp(data: Record<string, unknown>): unknown {
  const projects: Record<string, unknown> = {};
  if (isTable(data.projects))
    for (const [p, v] of Object.entries(data.projects)) {
      if (!isTable(v)) continue;
      const keys = MCP_PROJECT_KEYS.filter((k) => Object.hasOwn(v, k));
      if (keys.length) projects[p] = Object.fromEntries(keys.map((k) => [k, v[k]]));
    }
  const user = Object.hasOwn(data, 'mcpServers') ? data.mcpServers : undefined;
  return user === undefined && Object.keys(projects).length === 0 ? null : { mcpServers: user ?? null, projects };
}

/** The user settings files of a Claude Code configuration directory. */
const USER_LAYER_FILES = ['settings.json', 'settings.local.json', 'cowork_settings.json'];

/** The project settings files of a directory (project: `.claude/settings.json`; local: `.claude/settings.local.json`). */
const PROJECT_LAYER_FILES = ['settings.json', 'settings.local.json'];

/**
 * What Latch compares for one settings layer: `none` (absent, empty, a directory, or no security key),
 * `key=<sha256 of its canonical JSON>;...` for the security keys present (sorted), `raw:<sha256>` for
 * a file Latch cannot read as a JSON object (compared byte for byte: fail closed), `special` for a
 * FIFO or device (never read: Claude Code would read whatever a writer sends), `error:<code>`.
 */
export function layerDigest(now: FileNow, path = ''): string {
  if (now.kind === 'error') return `error:${now.error ?? 'unknown'}`;
  if (now.kind === 'other' || (now.kind === 'symlink' && /^l:[^>]*>o:/.test(now.sig))) return 'special';
  if (now.sha256?.startsWith('too-large:')) return `raw:${now.sha256}`;
  if (now.bytes === null) return 'none';
  const text = now.bytes.toString('utf8');
  if (text.trim() === '') return 'none';
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (!isTable(data)) return `raw:${now.sha256 ?? sha256(now.bytes)}`;
  const name = basename(path);
  if (name === '.claude.json' || name === '.config.json') {
    const mcp = claudeJsonMcp(data);
    return mcp === null ? 'none' : `mcp=${sha256(canonicalJson(mcp))}`;
  }
  const keys = name === '.mcp.json' ? ['mcpServers'] : CLAUDE_SECURITY_KEYS;
  const parts = keys
    .filter((k) => Object.hasOwn(data, k))
    .sort()
    .map((k) => `${k}=${sha256(canonicalJson(data[k]))}`);
  return parts.length ? parts.join(';') : 'none';
}

/** The drop-ins Claude Code reads from a managed-settings.d/ directory: `*.json`, not hidden, files or symlinks. */
export function dropinNames(dir: string): string[] | { error: string } {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.endsWith('.json') && !e.name.startsWith('.'))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
    return code === 'ENOENT' || code === 'ENOTDIR' ? [] : { error: code };
  }
}

/** A managed-settings.d/ directory's digest: `name:<layer digest>|...` of the drop-ins that hold a security key. */
export function dropinDigest(dir: string): string {
  const names = dropinNames(dir);
  if (!Array.isArray(names)) return `error:${names.error}`;
  const parts = names
    .map((n) => [n, layerDigest(readNow(join(dir, n)), join(dir, n))] as const)
    .filter(([, d]) => d !== 'none')
    .map(([n, d]) => `${n}:${d}`);
  return parts.length ? parts.join('|') : 'none';
}

/** The row recording a layer as it is now (a drop-in directory: also one row per drop-in in it). */
export function layerRowsNow(scope: string, path: string, role: Role): FileRow[] {
  const readAt = Date.now();
  const now = role === 'claude_settings' ? readForTrust(path, role) : readNow(path);
  if (role === 'claude_settings')
    return [
      {
        scope,
        path,
        role,
        sig: now.sig,
        sha256: layerDigest(now, path),
        link: now.link,
        verify: verifyOf(role, path, now, readAt),
      },
    ];
  const names = dropinNames(path);
  return [
    { scope, path, role, sig: now.sig, sha256: dropinDigest(path), link: now.link },
    ...(Array.isArray(names) ? names : []).flatMap((n) => layerRowsNow(scope, join(path, n), 'claude_settings')),
  ];
}

/** Claude Code's configuration directory, from a transcript path (`<dir>/projects/<project>/<session>.jsonl`, or a sub-agent's below it). */
export function claudeConfigDirOf(transcriptPath: string | null): string | null {
  if (!transcriptPath || !isAbsolute(transcriptPath)) return null;
  let d = dirname(resolve(transcriptPath));
  for (let i = 0; i < 4; i++) {
    const up = dirname(d);
    if (up === d) return null;
    if (basename(up) === 'projects') return dirname(up);
    d = up;
  }
  return null;
}

/** The managed settings directory Claude Code reads on this platform. */
export function claudeManagedDir(): string {
  return process.platform === 'darwin' ? '/Library/Application Support/ClaudeCode' : '/etc/claude-code';
}

/** True when this user could create or change `p` (its nearest existing ancestor, or its parent, is writable). */
function couldChange(p: string): boolean {
  let q = p;
  for (let i = 0; i < 64; i++) {
    try {
      lstatSync(q);
      break;
    } catch {
      const up = dirname(q);
      if (up === q) return false;
      q = up;
    }
  }
  return userCanChange(q);
}

export interface LayerSession {
  cwd: string;
  transcript_path: string | null;
}

/**
 * Every settings layer Claude Code 2.1.332 may read for a session: the user layer of its configuration
 * directory (from its transcript path; also each user directory Latch was set up in, and `~/.claude`
 * of the HOME setup ran with) with its `.claude.json` (MCP servers), the project
 * (`.claude/settings.json`), local (`.claude/settings.local.json`) and `.mcp.json` layers of its cwd,
 * of the workspace (its git root) and of every directory between them, and the managed settings
 * (managed-settings.json and managed-settings.d/) when this user could change them (root-owned
 * /etc/claude-code is out of a user's reach).
 */
export function claudeLayerPaths(
  s: LayerSession,
  workspace: string,
  userDirs: readonly string[] = [],
): { path: string; role: Role; project?: true }[] {
  const out = new Map<string, Role>();
  const project = new Set<string>();
  const configDir = claudeConfigDirOf(s.transcript_path);
  for (const d of new Set([...(configDir ? [configDir] : []), ...userDirs])) {
    for (const n of USER_LAYER_FILES) out.set(join(d, n), 'claude_settings');
    // `.claude.json` lives in CLAUDE_CONFIG_DIR when it is set, else beside `~/.claude` (in HOME).
    out.set(join(d, '.claude.json'), 'claude_settings');
    // The legacy global config, which Claude Code reads instead of `.claude.json` when it exists.
    out.set(join(d, '.config.json'), 'claude_settings');
    if (basename(d) === '.claude') out.set(join(dirname(d), '.claude.json'), 'claude_settings');
  }
  // Claude Code reads the project layer of the directory it started in and the local layer of that
  // directory or of its git root. The session's cwd is the first (it is recorded at the session's first
  // hook, SessionStart); the workspace is Latch's name for the git root; the directories between
  // them cover a session Latch first saw after a `cd` within the repository.
  const ws = resolve(workspace);
  const projects = [ws];
  for (let d = resolve(s.cwd), i = 0; i < 64 && d !== ws; i++) {
    projects.push(d);
    const up = dirname(d);
    if (up === d || !(up === ws || up.startsWith(ws.endsWith('/') ? ws : `${ws}/`))) break;
    d = up;
  }
  for (const p of projects)
    for (const f of [...PROJECT_LAYER_FILES.map((n) => join(p, '.claude', n)), join(p, '.mcp.json')]) {
      out.set(f, 'claude_settings');
      project.add(f);
    }
  const managed = claudeManagedDir();
  if (couldChange(join(managed, 'managed-settings.json'))) {
    out.set(join(managed, 'managed-settings.json'), 'claude_settings');
    out.set(join(managed, 'managed-settings.d'), 'claude_dropins');
  }
  return [...out].map(([path, role]) => (project.has(path) ? { path, role, project: true } : { path, role }));
}

/** The user settings directories of Claude Code registrations (setup's `<dir>/settings.json`) and `~/.claude` of setup's HOME. */
function claudeUserDirs(db: Db): string[] {
  const out = new Set<string>();
  for (const r of db.prepare(`SELECT kind, json FROM registrations WHERE kind IN ('user', 'install')`).all() as {
    kind: string;
    json: string;
  }[]) {
    const j = JSON.parse(r.json) as Partial<HooksScope & InstallScope>;
    if (r.kind === 'user' && j.hooks_file && basename(j.hooks_file) === 'settings.json') out.add(dirname(j.hooks_file));
    if (r.kind === 'install' && j.home) out.add(join(j.home, '.claude'));
  }
  return [...out];
}

/**
 * Since when Latch has watched the directory `workspace`, for the layers a later session is the first
 * to read there: the first session of the workspace itself (`recorded`: only once its layers were
 * recorded) and of every workspace enclosing it (a subdirectory made its own workspace, by `git init`
 * or in a directory that is no repository, lies in one Latch watched), but not HOME or above it (a
 * session started there does not make every project below it watched). `top`: the outermost such
 * workspace; null: none (the workspace's first record: what is there is its baseline). An unreadable
 * start counts as -Infinity (fail closed).
 */
function watchedSince(db: Db, workspace: string, recorded: boolean): { since: number; top: string } | null {
  const dirs: string[] = [];
  for (let d = resolve(workspace); dirs.at(-1) !== d; d = dirname(d)) dirs.push(d);
  const rows = db
    .prepare(
      `SELECT workspace, min(created_at) AS at FROM sessions WHERE workspace IN (${dirs.map(() => '?').join(', ')}) GROUP BY workspace`,
    )
    .all(...dirs) as { workspace: string; at: string | null }[];
  const homes = [homedir(), process.env.HOME, ...installHomes(db)]
    .filter((h): h is string => !!h)
    .map((h) => resolve(h));
  const within = (dir: string, top: string) => dir === top || dir.startsWith(top.endsWith('/') ? top : `${top}/`);
  let since = Number.POSITIVE_INFINITY;
  let top: string | null = null;
  const mine = resolve(workspace);
  for (const r of rows) {
    const ws = resolve(r.workspace);
    const own = ws === mine;
    if (own ? !recorded : !within(mine, ws) || homes.some((h) => within(h, ws))) continue;
    const ms = r.at ? Date.parse(r.at) : Number.NaN;
    since = Math.min(since, Number.isFinite(ms) ? ms : Number.NEGATIVE_INFINITY);
    if (top === null || within(top, ws)) top = ws;
  }
  return top === null ? null : { since, top };
}

/** The HOME each `latch setup` ran with. */
function installHomes(db: Db): string[] {
  const j = db.prepare(`SELECT json FROM registrations WHERE kind = 'install'`).pluck().all() as string[];
  return j.map((x) => (JSON.parse(x) as Partial<InstallScope>).home).filter((h): h is string => !!h);
}

/**
 * The newest ctime (ms) of `path` (and of its target, through a link) and of the symbolic links among
 * its directories below `top`. A ctime cannot be set back: a file written, linked, renamed or copied
 * into place, or reached through a link made, since a time is newer than it.
 */
function newestCtime(path: string, top: string): number {
  let newest = Number.NEGATIVE_INFINITY;
  const see = (p: string, follow: boolean) => {
    try {
      const st = (follow ? statSync : lstatSync)(p, { bigint: true, throwIfNoEntry: false });
      if (st) newest = Math.max(newest, Number(st.ctimeNs / 1_000_000n));
      return st;
    } catch {
      return undefined;
    }
  };
  if (see(path, false)?.isSymbolicLink()) see(path, true);
  const under = top.endsWith('/') ? top : `${top}/`;
  for (let d = dirname(path); d.startsWith(under); d = dirname(d)) {
    let st: BigIntStats | undefined;
    try {
      st = lstatSync(d, { bigint: true, throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    if (st?.isSymbolicLink()) newest = Math.max(newest, Number(st.ctimeNs / 1_000_000n));
  }
  return newest;
}

/**
 * Records the settings layers of the workspace's sessions that Latch has not seen yet (normally at their
 * SessionStart, the first hook of a session): a layer already recorded for the workspace keeps its
 * baseline, so a session started after a change cannot make it the norm. A project layer that a
 * later session is the first to read (its cwd is a directory the earlier ones did not start in, or a
 * workspace inside one Latch watched) is recorded as absent when it holds a security key and was
 * written since Latch began watching (watchedSince): the agent of an earlier session may have planted
 * it for this one, so its keys are a finding (a human's own such layer is accepted by `latch setup
 * claude`). The first Claude Code session of a workspace no Latch session enclosed records what is
 * there. Returns the rows added.
 */
export function recordClaudeLayers(db: Db, workspace: string, now: string): number {
  const scope = LAYER_PREFIX + workspace;
  const throughOf = () => {
    const j = db.prepare('SELECT json FROM registrations WHERE scope = ?').pluck().get(scope) as string | undefined;
    return j ? ((JSON.parse(j) as { through?: number }).through ?? 0) : 0;
  };
  const from = throughOf();
  const top =
    (db.prepare('SELECT max(rowid) FROM sessions WHERE workspace = ?').pluck().get(workspace) as number | null) ?? 0;
  if (top <= from) return 0;
  const fresh = db
    .prepare(
      `SELECT cwd, transcript_path FROM sessions WHERE workspace = ? AND rowid > ? AND rowid <= ? AND agent = 'claude'`,
    )
    .all(workspace, from, top) as LayerSession[];
  const have = new Set(
    (db.prepare('SELECT path FROM registration_files WHERE scope = ?').pluck().all(scope) as string[]) ?? [],
  );
  const rows: FileRow[] = [];
  if (fresh.length) {
    const userDirs = claudeUserDirs(db);
    const watched = watchedSince(db, workspace, have.size > 0);
    for (const s of fresh)
      for (const { path, role, project } of claudeLayerPaths(s, workspace, userDirs)) {
        if (have.has(path)) continue;
        have.add(path);
        const now = layerRowsNow(scope, path, role);
        const digest = now[0]?.sha256 ?? 'none';
        if (watched && project && digest !== 'none' && newestCtime(path, watched.top) >= watched.since)
          rows.push({ scope, path, role, sig: 'absent', sha256: 'none', link: null, verify: null });
        else rows.push(...now);
      }
  }
  // The files were read outside the lock; INSERT OR IGNORE keeps a baseline a concurrent hook wrote.
  return immediate(db, () => {
    const ins = db.prepare(
      'INSERT OR IGNORE INTO registration_files (scope, path, role, sig, sha256, link) VALUES (?, ?, ?, ?, ?, ?)',
    );
    let added = 0;
    for (const r of rows)
      added += ins.run(r.scope, r.path, r.role, storedSig(r.sig, r.verify), r.sha256, r.link).changes;
    if (throughOf() < top)
      db.prepare(
        `INSERT INTO registrations (scope, kind, recorded_at, json) VALUES (?, 'layers', ?, ?) ON CONFLICT (scope) DO UPDATE SET json = excluded.json, recorded_at = excluded.recorded_at`,
      ).run(scope, now, JSON.stringify({ through: top }));
    return added;
  });
}

/** Records every workspace's layers again as they are now (setup: the human accepts what is there). */
export function rebaselineClaudeLayers(db: Db): void {
  const rows = db
    .prepare(`SELECT scope, path, role FROM registration_files WHERE scope >= 'cw:' AND scope < 'cw;'`)
    .all() as { scope: string; path: string; role: Role }[];
  const up = db.prepare(
    'INSERT INTO registration_files (scope, path, role, sig, sha256, link) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, path) DO UPDATE SET role = excluded.role, sig = excluded.sig, sha256 = excluded.sha256, link = excluded.link',
  );
  for (const r of rows)
    for (const n of layerRowsNow(r.scope, r.path, r.role))
      up.run(n.scope, n.path, n.role, storedSig(n.sig, n.verify), n.sha256, n.link);
}

/** What changed between two layer digests, for a finding. */
export function describeLayerChange(before: string | null, after: string): string {
  const keyed = (d: string | null) =>
    new Map(
      d && d !== 'none' && !/^(raw:|error:|special$)/.test(d)
        ? d.split(';').map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)] as const)
        : [],
    );
  if (after.startsWith('error:')) return `cannot be read (${after.slice(6)})`;
  if (after === 'special') return 'is now a FIFO or device (Claude Code would read whatever a writer sends)';
  if (after.startsWith('raw:')) return 'is not a JSON object Latch can read (compared byte for byte)';
  const b = keyed(before);
  const a = keyed(after);
  const parts: string[] = [];
  for (const k of [...new Set([...b.keys(), ...a.keys()])].sort()) {
    if (!b.has(k)) parts.push(`${k} added`);
    else if (!a.has(k)) parts.push(`${k} removed`);
    else if (b.get(k) !== a.get(k)) parts.push(`${k} changed`);
  }
  if (before && /^(raw:|error:|special$)/.test(before)) parts.unshift('was not readable as JSON before');
  return parts.join(', ') || 'changed';
}
