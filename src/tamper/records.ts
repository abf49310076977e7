// What `latch setup` records (the registration, the installation: Latch's files, the shell startup files,
// the PATH), what uninstall forgets, and the PATH resolution both recording and checking use.
import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { immediate, openStore, type Db } from '../store/store.js';
import { rebaselineClaudeLayers } from './claude-layers.js';
import { configPart } from './codex-config.js';
import {
  canonicalJson,
  parseStoredSig,
  readForTrust,
  readNow,
  realOr,
  sha256,
  statSig,
  storedSig,
  userCanChange,
  verifyOf,
} from './fingerprint.js';
import { latchHandlersOf, parseHooks, trustKeysOf } from './handlers.js';
import { dropUnnamedContent } from './quick.js';
import {
  type ChangeOrigin,
  type ConfigPart,
  type FileRow,
  type Finding,
  originOfJson,
  TAMPER_CODE,
  type HooksScope,
  INSTALL_SCOPE,
  type InstallScope,
  PATH_NAMES,
  type Role,
  TOUCH_SCOPE,
} from './types.js';
import { bundleOfCache, codeCacheNames } from '../base/code-cache.js';

// ---------------------------------------------------------------------------------------------
// PATH

/** The first executable `name` in `dirs` (no execution, no PATH from the environment). */
export function resolveOnPath(name: string, dirs: string[]): string | null {
  for (const d of dirs) {
    const p = join(d, name);
    try {
      if (!statSync(p).isFile()) continue;
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

export function pathDirs(pathVar: string | undefined): string[] {
  const out: string[] = [];
  for (const d of (pathVar ?? '').split(delimiter))
    if (d && isAbsolute(d) && !out.includes(resolve(d))) out.push(resolve(d));
  return out;
}

// ---------------------------------------------------------------------------------------------
// recording (setup)

export interface RecordInput {
  kind: 'user' | 'project';
  hooksFile: string;
  /** config.toml files whose hook parts count (user: $CODEX_HOME/config.toml; project: its .codex/config.toml and the user one). */
  configFiles: string[];
  project: string | null;
  /** The config.toml holding `[projects."<project>"] trust_level` (the user's), for a project install. */
  projectTrustFile?: string | null;
  node: string;
  entry: string;
  home: string;
  pathVar: string | undefined;
  version: string;
}

/**
 * The config layers besides config.toml whose hook settings count: Codex's managed config in
 * CODEX_HOME, and the system layer in /etc/codex (only when this user could change it).
 */
export function extraCodexConfigs(codexHome: string): string[] {
  const system = ['/etc/codex/config.toml', '/etc/codex/managed_config.toml', '/etc/codex/requirements.toml'].filter(
    userCanChange,
  );
  return [join(codexHome, 'managed_config.toml'), ...system];
}

/** The shell startup files `$SHELL -lc` may run (bash and zsh, login and rc), recorded present or absent. */
export function shellStartupFiles(home: string): string[] {
  return [
    join(home, '.bash_profile'),
    join(home, '.bash_login'),
    join(home, '.profile'),
    join(home, '.bashrc'),
    join(home, '.bash_logout'),
    join(home, '.zshenv'),
    join(home, '.zprofile'),
    join(home, '.zshrc'),
    join(home, '.zlogin'),
    '/etc/profile',
    '/etc/bash.bashrc',
    '/etc/zsh/zshenv',
    '/etc/zshenv',
  ];
}

/** Latch's code the hook runs: bin/latch.cjs, dist/*.cjs, their code caches, the SQLite addon, the TOML parser. */
export function installedFiles(entry: string): string[] {
  const dist = dirname(entry);
  const out = new Set<string>([entry]);
  let names: string[] = [];
  try {
    names = readdirSync(dist);
  } catch {
    names = [];
  }
  for (const n of names) if (n.endsWith('.cjs')) out.add(join(dist, n));
  // Every code cache the loader may read for a bundle that is there, present or absent (a cache
  // planted later is code the hook would run).
  for (const n of codeCacheNames()) if (names.includes(bundleOfCache(n))) out.add(join(dist, n));
  const bin = join(dist, '..', 'bin', 'latch.cjs');
  if (readNow(bin).kind !== 'absent') out.add(resolve(bin));
  const r = createRequire(entry);
  const beside = join(dist, '..', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  try {
    out.add(
      readNow(beside).kind !== 'absent'
        ? resolve(beside)
        : join(dirname(r.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node'),
    );
  } catch {
    /* not installed: the hook cannot open the store either */
  }
  try {
    out.add(r.resolve('smol-toml'));
  } catch {
    /* the full check reports it when it cannot parse */
  }
  return [...out];
}

function fileRow(scope: string, path: string, role: Role): FileRow {
  const readAt = Date.now();
  const now = readForTrust(path, role);
  return {
    scope,
    path,
    role,
    sig: now.sig,
    sha256: now.sha256,
    link: now.link,
    verify: verifyOf(role, path, now, readAt),
  };
}

/**
 * Records the fingerprint of one registration (user or project hooks file) and of the installation
 * (scope `*`: Latch's files, shell startup files, PATH). Replaces what was recorded for them and
 * clears the alarm. Returns the number of files recorded.
 */
export function recordRegistration(
  db: Db,
  input: RecordInput,
  now: string,
): { files: number; missingCaches: string[]; accepted: Accepted | null } {
  const hooksReadAt = Date.now();
  const hooks = readForTrust(input.hooksFile, 'hooks');
  const parsed = hooks.bytes ? parseHooks(hooks.bytes) : { data: null };
  const handlers = latchHandlersOf(parsed.data);
  const keys = handlers.flatMap((h) => trustKeysOf(input.hooksFile, h));
  const config: Record<string, ConfigPart> = {};
  const rows: FileRow[] = [
    {
      scope: input.hooksFile,
      path: input.hooksFile,
      role: 'hooks',
      sig: hooks.sig,
      sha256: hooks.sha256,
      link: hooks.link,
      verify: verifyOf('hooks', input.hooksFile, hooks, hooksReadAt),
    },
  ];
  for (const c of [...new Set(input.configFiles)]) {
    const readAt = Date.now();
    const r = readForTrust(c, 'config');
    config[c] = configPart(r.bytes, keys, input.project && c === input.projectTrustFile ? input.project : null);
    rows.push({
      scope: input.hooksFile,
      path: c,
      role: 'config',
      sig: r.sig,
      sha256: r.sha256,
      link: r.link,
      verify: verifyOf('config', c, r, readAt),
    });
  }
  const scope: HooksScope = {
    hooks_file: input.hooksFile,
    project: input.project,
    handlers,
    hooks_sha256: hooks.sha256,
    hooks_canon_sha256: parsed.data ? sha256(canonicalJson(parsed.data)) : null,
    config,
  };
  const dirs = pathDirs(input.pathVar);
  const resolved: Record<string, string | null> = {};
  for (const n of PATH_NAMES) resolved[n] = resolveOnPath(n, dirs);
  const install: InstallScope = {
    latch_version: input.version,
    node: input.node,
    entry: input.entry,
    path_dirs: dirs,
    resolved,
    home: input.home,
  };
  const inst: FileRow[] = [];
  const seen = new Set<string>();
  const add = (p: string, role: Role) => {
    if (seen.has(p)) return;
    seen.add(p);
    inst.push(fileRow(INSTALL_SCOPE, p, role));
  };
  for (const p of installedFiles(input.entry)) add(p, 'installed');
  // Outside HOME, only what this user could change (a file or its directory writable: root-owned
  // /etc/profile or /usr/bin are out of an agent's reach), which keeps the hot path's stat count down.
  for (const p of shellStartupFiles(input.home))
    if (p.startsWith(input.home + '/') || userCanChange(p)) add(p, 'shell');
  for (const d of dirs) if (userCanChange(d)) add(d, 'path_dir');
  if (resolved.latch) add(resolved.latch, 'path_target');
  const missingCaches = codeCacheNames()
    .map((n) => join(dirname(input.entry), n))
    .filter((p) => inst.some((r) => r.path === p && r.sig === 'absent'));
  const accepted = immediate(db, () => {
    const accepted = acceptedAlarm(db);
    db.prepare('DELETE FROM registration_files WHERE scope IN (?, ?)').run(input.hooksFile, INSTALL_SCOPE);
    db.prepare('DELETE FROM registration_alarm').run();
    db.prepare('DELETE FROM registrations WHERE scope = ?').run(TOUCH_SCOPE);
    const upScope = db.prepare(
      'INSERT INTO registrations (scope, kind, recorded_at, json) VALUES (?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET kind = excluded.kind, recorded_at = excluded.recorded_at, json = excluded.json',
    );
    upScope.run(input.hooksFile, input.kind, now, JSON.stringify(scope));
    upScope.run(INSTALL_SCOPE, 'install', now, JSON.stringify(install));
    const ins = db.prepare(
      'INSERT INTO registration_files (scope, path, role, sig, sha256, link) VALUES (?, ?, ?, ?, ?, ?)',
    );
    for (const r of [...rows, ...inst]) ins.run(r.scope, r.path, r.role, storedSig(r.sig, r.verify), r.sha256, r.link);
    // The settings layers recorded for the workspaces' sessions: re-recording accepts them as they are.
    rebaselineClaudeLayers(db);
    dropUnnamedContent(db);
    return accepted;
  });
  return { files: rows.length + inst.length, missingCaches, accepted };
}

/** What re-recording accepted: the standing alarm, and what it did to the sessions. */
export interface Accepted {
  at: string;
  findings: Finding[];
  origin: ChangeOrigin;
  /** Workspaces whose sessions had calls refused for it and are not latched: free again. */
  released: { workspace: string; sessions: string[] }[];
  /** Workspaces whose sessions it latched: they stay latched until `latch verify`. */
  stillLatched: { workspace: string; sessions: string[] }[];
}

function byWorkspace(rows: { workspace: string; session_id: string }[]): { workspace: string; sessions: string[] }[] {
  const m = new Map<string, string[]>();
  for (const r of rows) m.set(r.workspace, [...(m.get(r.workspace) ?? []), r.session_id]);
  return [...m].map(([workspace, sessions]) => ({ workspace, sessions }));
}

function acceptedAlarm(db: Db): Accepted | null {
  const a = db.prepare('SELECT findings_json, at, origin_json FROM registration_alarm WHERE id = 1').get() as
    | { findings_json: string; at: string; origin_json: string | null }
    | undefined;
  if (!a) return null;
  // Refused since the fingerprint was last recorded: the alarm's own time moves when a later hook
  // finds the change under other stat identities (a file's identity trusted meanwhile), so it is not
  // where the refusals start.
  const since =
    (db
      .prepare(`SELECT MAX(recorded_at) FROM registrations WHERE kind IN ('user', 'project', 'install')`)
      .pluck()
      .get() as string | null) ?? a.at;
  const released = db
    .prepare(
      `SELECT DISTINCT s.workspace, s.session_id FROM denials d JOIN sessions s ON s.session_id = d.session_id
       WHERE d.at >= ? AND d.reasons_json LIKE ? AND s.state = 'mutable' ORDER BY s.workspace, s.session_id`,
    )
    .all(since < a.at ? since : a.at, `%"${TAMPER_CODE}"%`) as { workspace: string; session_id: string }[];
  const latched = db
    .prepare(
      `SELECT workspace, session_id FROM sessions WHERE state <> 'mutable' AND state_reason LIKE ? ORDER BY workspace, session_id`,
    )
    .all(`${TAMPER_CODE}%`) as { workspace: string; session_id: string }[];
  return {
    at: a.at,
    findings: JSON.parse(a.findings_json) as Finding[],
    origin: originOfJson(a.origin_json),
    released: byWorkspace(released),
    stillLatched: byWorkspace(latched),
  };
}

/** Forgets a registration (uninstall). The installation scope stays while another registration uses it. */
/**
 * forgetRegistration in the store under `home`, when there is one: what an agent's uninstall does, so
 * that handlers removed on purpose do not read as handlers removed by someone (and latch every
 * workspace of every agent).
 */
export function forgetRegistrationIn(home: string, hooksFile: string): void {
  if (!existsSync(join(home, 'latch.db'))) return;
  const db = openStore(home, { create: false });
  try {
    forgetRegistration(db, hooksFile);
  } finally {
    db.close();
  }
}

export function forgetRegistration(db: Db, hooksFile: string): void {
  immediate(db, () => {
    db.prepare('DELETE FROM registrations WHERE scope = ?').run(hooksFile);
    db.prepare('DELETE FROM registration_files WHERE scope = ?').run(hooksFile);
    db.prepare('DELETE FROM registration_alarm').run();
    const left = db.prepare(`SELECT COUNT(*) AS n FROM registrations WHERE kind IN ('user', 'project')`).get() as {
      n: number;
    };
    if (left.n === 0) {
      db.prepare('DELETE FROM registrations WHERE scope IN (?, ?)').run(INSTALL_SCOPE, TOUCH_SCOPE);
      db.prepare('DELETE FROM registration_files WHERE scope = ?').run(INSTALL_SCOPE);
    }
    dropUnnamedContent(db);
  });
}

/**
 * The code caches the loader may write when this very process exits (a cache rejected by this Node,
 * src/loader.ts): re-record those after it did, so a setup run does not leave a false alarm.
 * Call only from the process that runs the recorded entry.
 */
export function rerecordCodeCachesAtExit(openDb: () => Db): void {
  process.once('exit', () => {
    try {
      const db = openDb();
      try {
        const rows = (
          db
            .prepare(
              `SELECT scope, path, role, sig, sha256, link FROM registration_files WHERE scope = ? AND role = 'installed'`,
            )
            .all(INSTALL_SCOPE) as FileRow[]
        ).filter((r) => r.path.endsWith('.v8cache'));
        const up = db.prepare(
          'UPDATE registration_files SET sig = ?, sha256 = ?, link = ? WHERE scope = ? AND path = ?',
        );
        for (const r of rows) {
          if (statSig(r.path) === parseStoredSig(r.sig).sig) continue;
          const readAt = Date.now();
          const now = readNow(r.path);
          up.run(storedSig(now.sig, verifyOf(r.role, r.path, now, readAt)), now.sha256, now.link, r.scope, r.path);
        }
      } finally {
        db.close();
      }
    } catch {
      /* the next hook reports the cache as changed; re-running setup records it */
    }
  });
}

/** True when this process runs the installation at `entry` (its dist/latch.cjs or bin/latch.cjs). */
export function runningFrom(entry: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  const dist = realOr(dirname(entry));
  const s = realOr(resolve(script));
  return dirname(s) === dist || s === realOr(join(dist, '..', 'bin', 'latch.cjs'));
}
