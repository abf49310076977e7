// Tamper evidence for Latch's registration (issue 10, classes 4 and 7).
//
// `latch setup codex` records a fingerprint of everything that decides whether Latch's hooks run and
// what they run: the hooks.json it wrote (each Latch handler as canonical JSON, and a digest of the
// whole file), the hook-related parts of config.toml (the `[hooks.state]` trust entries of Latch's
// handlers, the `features` flags that turn hooks off, inline `[hooks]`, foreign trusted hooks, the
// project's trust level), Latch's installed files (bin/latch.cjs, dist/*.cjs, their V8 code caches,
// the SQLite addon, the TOML parser), the user's shell startup files (Codex runs every hook and every
// command as `$SHELL -lc`), and what `latch`, `node` and `codex` resolve to on the PATH.
//
// Two tiers:
// - `quickCheck`: the hook hot path. One SELECT and one lstat per recorded file (no hashing, no TOML,
//   no file contents): a file whose lstat identity (kind, size, mtime_ns, ctime_ns, ino, dev) is
//   unchanged is unchanged. ctime cannot be set back by a process, so "edit, then restore mtime"
//   shows as a change.
// - `fullCheck`: re-hash and re-parse the files (all of them, or the ones whose stat changed), and
//   return findings as data. A stat change whose content is unchanged (`touch`) or whose change is
//   benign (a trust entry added by the human's /hooks review, another table of config.toml) is no
//   finding; `checkRegistration` then refreshes the recorded stat so the next hook is quick again.
//
// A change is undone only by a human re-running `latch setup codex` (which re-records everything).
import {
  accessSync,
  constants,
  lstatSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  realpathSync,
  statSync,
  type BigIntStats,
} from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { nodeCrypto } from '../base/lazy.js';
import { sessionsIn, transition } from '../session/records.js';
import { immediate, type Db } from '../store/store.js';

// ---------------------------------------------------------------------------------------------
// data

export type Role =
  | 'hooks' // a hooks.json with Latch handlers (user or project)
  | 'config' // a config.toml whose hook parts are recorded
  | 'installed' // Latch's own code
  | 'shell' // a shell startup file run by `$SHELL -lc`
  | 'path_dir' // a directory of the PATH setup ran with (its mtime moves when an entry appears)
  | 'path_target' // the file `latch` resolves to on that PATH
  | 'ws_config' // <workspace>/.codex/config.toml (rule-checked, no baseline)
  | 'ws_hooks'; // <workspace>/.codex/hooks.json (rule-checked, no baseline)

export type Severity = 'tamper' | 'warn';

export interface Finding {
  code: string;
  severity: Severity;
  path: string;
  detail: string;
}

export interface FileRow {
  scope: string;
  path: string;
  role: Role;
  /** lstat identity: `absent`, or `kind:size:mtime_ns:ctime_ns:ino:dev` (a symlink adds `>` + its target's). */
  sig: string;
  sha256: string | null;
  /** readlink of a symlink. */
  link: string | null;
}

export interface CanonHandler {
  event: string;
  group: number;
  index: number;
  matcher: string | null;
  /** The handler object as canonical JSON (sorted keys): command, timeout, statusMessage, type, ... */
  json: string;
}

export interface ConfigPart {
  exists: boolean;
  error?: string;
  /** `features.hooks` / `features.codex_hooks` when set. */
  features: Record<string, unknown>;
  /** `[hooks.state."<key>"]` of Latch's handlers (both the path and its realpath spelling). */
  state: Record<string, unknown>;
  /** Every other trusted hook: sorted `key=hash`. */
  foreign: string[];
  /** Canonical JSON digest of `[hooks]` without `state` (inline hook definitions), null when none. */
  inline: string | null;
  /** `projects."<dir>".trust_level` of the project a project registration lives in. */
  project_trust?: unknown;
}

export interface InstallScope {
  latch_version: string;
  node: string;
  entry: string;
  path_dirs: string[];
  resolved: Record<string, string | null>;
}

export interface HooksScope {
  hooks_file: string;
  project: string | null;
  handlers: CanonHandler[];
  /** sha256 of the file's bytes and of its canonical JSON (formatting-only edits are not findings). */
  hooks_sha256: string | null;
  hooks_canon_sha256: string | null;
  config: Record<string, ConfigPart>;
}

export interface ScopeRow {
  scope: string;
  kind: 'install' | 'user' | 'project' | 'log';
  recorded_at: string;
  json: string;
}

export interface Recorded {
  scopes: ScopeRow[];
  files: FileRow[];
  alarm: { sigs: string; findings: Finding[]; at: string } | null;
}

export const INSTALL_SCOPE = '*';
/** A registrations row (kind `log`) holding the touches seen since setup: JSON array of Touch. */
export const TOUCH_SCOPE = '~touched';
const isRegistration = (s: ScopeRow) => s.kind === 'user' || s.kind === 'project';

/** A stat change whose content was unchanged (accepted as a `touch`), kept as evidence. */
export interface Touch {
  at: string;
  path: string;
  role: Role;
}
export const PATH_NAMES = ['latch', 'node', 'codex'] as const;
/** The bundles the loader reads a code cache for (src/loader.ts). */
const CACHED_BUNDLES = ['main.cjs', 'slow.cjs', 'observer.cjs', 'cli.cjs'];

// ---------------------------------------------------------------------------------------------
// lstat identity (the quick tier: no file contents)

function sigOf(st: BigIntStats): string {
  const kind = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'o';
  return `${kind}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.dev}`;
}

/** The stat identity of `path` (a symlink also carries its target's). Never reads the file. */
export function statSig(path: string): string {
  let st: BigIntStats | undefined;
  try {
    st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    return `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
  if (!st) return 'absent';
  const own = sigOf(st);
  if (!st.isSymbolicLink()) return own;
  let target: BigIntStats | undefined;
  try {
    target = statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    target = undefined;
  }
  return `${own}>${target ? sigOf(target) : 'dangling'}`;
}

// ---------------------------------------------------------------------------------------------
// store access

export function loadRecorded(db: Db): Recorded {
  const scopes = db
    .prepare('SELECT scope, kind, recorded_at, json FROM registrations ORDER BY scope')
    .all() as ScopeRow[];
  const files = db
    .prepare('SELECT scope, path, role, sig, sha256, link FROM registration_files ORDER BY scope, path')
    .all() as FileRow[];
  const a = db.prepare('SELECT sigs, findings_json, at FROM registration_alarm WHERE id = 1').get() as
    | { sigs: string; findings_json: string; at: string }
    | undefined;
  return {
    scopes,
    files,
    alarm: a ? { sigs: a.sigs, findings: JSON.parse(a.findings_json) as Finding[], at: a.at } : null,
  };
}

function isRecorded(src: Db | Recorded): src is Recorded {
  return Array.isArray((src as Recorded).files) && Array.isArray((src as Recorded).scopes);
}

const WS_PREFIX = 'ws:';

type Statement = import('better-sqlite3').Statement<unknown[]>;
const statements = new WeakMap<Db, { packed: Statement; ws: Statement }>();
function stmts(db: Db): { packed: Statement; ws: Statement } {
  let s = statements.get(db);
  if (!s) {
    s = {
      // One string for the hot path (a row per file costs ~4x more to fetch): scope US path US sig RS ...
      packed: db
        .prepare(
          `SELECT group_concat(scope || char(31) || path || char(31) || sig, char(30)) AS p FROM registration_files WHERE scope NOT LIKE 'ws:%' OR scope = ?`,
        )
        .pluck(),
      ws: db.prepare('SELECT scope, path, role, sig, sha256, link FROM registration_files WHERE scope = ?'),
    };
    statements.set(db, s);
  }
  return s;
}

interface QuickRow {
  scope: string;
  path: string;
  sig: string;
}

function packedRows(db: Db, wsScope: string): QuickRow[] {
  const p = stmts(db).packed.get(wsScope) as string | null;
  if (!p) return [];
  return p.split('\x1e').map((r) => {
    const [scope = '', path = '', sig = ''] = r.split('\x1f');
    return { scope, path, sig };
  });
}

function workspaceRows(src: Db | Recorded, workspace: string | null | undefined): FileRow[] {
  if (!workspace) return [];
  const scope = WS_PREFIX + workspace;
  const recorded = isRecorded(src)
    ? src.files.filter((f) => f.scope === scope)
    : (stmts(src).ws.all(scope) as FileRow[]);
  const rows: FileRow[] = [];
  for (const [name, role] of [
    ['config.toml', 'ws_config'],
    ['hooks.json', 'ws_hooks'],
  ] as const) {
    const path = join(workspace, '.codex', name);
    rows.push(recorded.find((r) => r.path === path) ?? { scope, path, role, sig: 'absent', sha256: null, link: null });
  }
  return rows;
}

export interface QuickResult {
  /** ok: every recorded stat identity holds; changed: some differ (escalate); unrecorded: no fingerprint. */
  status: 'ok' | 'changed' | 'unrecorded';
  changed: { scope: string; path: string; now: string }[];
  /** Every current identity, in row order (the alarm key). */
  sigs: string;
  files: number;
}

/**
 * The hot-path tier: lstat every recorded file (and the workspace's `.codex/config.toml` and
 * `.codex/hooks.json`), compare with the recorded identity. Reads no file contents, loads no crypto
 * and no TOML. Cost: one SELECT (one packed string) + one lstat per file.
 */
export function quickCheck(src: Db | Recorded, opts: { workspace?: string | null } = {}): QuickResult {
  const wsScope = opts.workspace ? WS_PREFIX + opts.workspace : '';
  const packed: QuickRow[] = isRecorded(src)
    ? src.files.filter((f) => !f.scope.startsWith(WS_PREFIX) || f.scope === wsScope)
    : packedRows(src, wsScope);
  const files = packed.filter((f) => !f.scope.startsWith(WS_PREFIX));
  const rows: QuickRow[] = files.slice();
  if (opts.workspace) {
    // The workspace's .codex/ files: their last identity seen, else expected absent.
    for (const name of ['config.toml', 'hooks.json']) {
      const path = join(opts.workspace, '.codex', name);
      rows.push(packed.find((r) => r.scope === wsScope && r.path === path) ?? { scope: wsScope, path, sig: 'absent' });
    }
  }
  const changed: QuickResult['changed'] = [];
  const all: string[] = [];
  for (const row of rows) {
    const now = statSig(row.path);
    all.push(now);
    if (now !== row.sig) changed.push({ scope: row.scope, path: row.path, now });
  }
  const status = files.length === 0 ? 'unrecorded' : changed.length ? 'changed' : 'ok';
  return { status, changed, sigs: all.join('|'), files: rows.length };
}

// ---------------------------------------------------------------------------------------------
// hashing and parsing (the full tier; loaded on first use)

const req = createRequire(import.meta.url);
let toml: typeof import('smol-toml') | undefined;
function parseToml(text: string): Record<string, unknown> {
  toml ??= req('smol-toml') as typeof import('smol-toml');
  return toml.parse(text) as Record<string, unknown>;
}

function sha256(data: string | Buffer): string {
  return nodeCrypto().createHash('sha256').update(data).digest('hex');
}

/** JSON with object keys sorted at every level. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

interface FileNow {
  sig: string;
  kind: 'absent' | 'file' | 'symlink' | 'dir' | 'other' | 'error';
  link: string | null;
  bytes: Buffer | null;
  sha256: string | null;
  error?: string;
}

const MAX_HASHED = 64 * 1024 * 1024;

function readNow(path: string): FileNow {
  const sig = statSig(path);
  if (sig === 'absent') return { sig, kind: 'absent', link: null, bytes: null, sha256: null };
  if (sig.startsWith('error:'))
    return { sig, kind: 'error', link: null, bytes: null, sha256: null, error: sig.slice(6) };
  const k = sig[0];
  const kind = k === 'f' ? 'file' : k === 'l' ? 'symlink' : k === 'd' ? 'dir' : 'other';
  let link: string | null = null;
  if (kind === 'symlink') {
    try {
      link = readlinkSync(path);
    } catch {
      link = null;
    }
  }
  if (kind === 'dir' || kind === 'other' || sig.endsWith('>dangling'))
    return { sig, kind, link, bytes: null, sha256: null };
  if (kind === 'symlink' && !/>f:/.test(sig)) return { sig, kind, link, bytes: null, sha256: null };
  // No recorded file is this large; hashing one would blow the hook's deadline (and memory).
  const size = Number((kind === 'symlink' ? sig.slice(sig.indexOf('>') + 1) : sig).split(':')[1]);
  if (size > MAX_HASHED)
    return { sig, kind, link, bytes: null, sha256: `too-large:${size}`, error: `larger than ${MAX_HASHED} bytes` };
  try {
    const bytes = readFileSync(path);
    return { sig, kind, link, bytes, sha256: sha256(bytes) };
  } catch (err) {
    return {
      sig,
      kind: 'error',
      link,
      bytes: null,
      sha256: null,
      error: (err as NodeJS.ErrnoException).code ?? String(err),
    };
  }
}

function kindOfSig(sig: string): string {
  if (sig === 'absent') return 'absent';
  if (sig.startsWith('error:')) return 'unreadable';
  return { f: 'file', l: 'symlink', d: 'directory' }[sig[0] as 'f' | 'l' | 'd'] ?? 'special file';
}

// ---------------------------------------------------------------------------------------------
// hooks.json

const MARK = / hook [a-z]+ --event /;

/** A handler Latch wrote: its command runs `... hook <agent> --event NAME` of a `latch` entry. */
export function isLatchHandler(h: unknown): boolean {
  if (!h || typeof h !== 'object') return false;
  const c = (h as { command?: unknown }).command;
  return typeof c === 'string' && MARK.test(c) && /latch/.test(c);
}

/** Latch's handlers in a parsed hooks file, with their positions (Codex's trust keys are positional). */
export function latchHandlersOf(data: unknown): CanonHandler[] {
  const out: CanonHandler[] = [];
  const hooks = data && typeof data === 'object' ? (data as { hooks?: unknown }).hooks : undefined;
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks)) return out;
  for (const [event, groups] of Object.entries(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((g: unknown, gi) => {
      if (!g || typeof g !== 'object') return;
      const group = g as { matcher?: unknown; hooks?: unknown };
      if (!Array.isArray(group.hooks)) return;
      group.hooks.forEach((h: unknown, hi) => {
        if (!isLatchHandler(h)) return;
        out.push({
          event,
          group: gi,
          index: hi,
          matcher: typeof group.matcher === 'string' ? group.matcher : null,
          json: canonicalJson(h),
        });
      });
    });
  }
  return out;
}

const snake = (event: string) => event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Codex's trust keys of a handler: `<hooks.json path>:<event_snake>:<group>:<handler>` (path as given and real). */
export function trustKeysOf(hooksFile: string, h: Pick<CanonHandler, 'event' | 'group' | 'index'>): string[] {
  const tail = `:${snake(h.event)}:${h.group}:${h.index}`;
  const real = realOr(hooksFile);
  return real === hooksFile ? [hooksFile + tail] : [hooksFile + tail, real + tail];
}

function parseHooks(bytes: Buffer): { data: unknown; error?: string } {
  try {
    const data: unknown = JSON.parse(bytes.toString('utf8'));
    if (!data || typeof data !== 'object' || Array.isArray(data)) return { data: null, error: 'not a JSON object' };
    return { data };
  } catch (err) {
    return { data: null, error: `not valid JSON (${(err as Error).message})` };
  }
}

function describeHandlerChange(before: CanonHandler, after: CanonHandler): string {
  const b = JSON.parse(before.json) as Record<string, unknown>;
  const a = JSON.parse(after.json) as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter(
    (k) => canonicalJson(b[k]) !== canonicalJson(a[k]),
  );
  const parts = fields.map((k) =>
    k === 'command'
      ? `command now ${clip(String(a[k]))}`
      : `${k} ${clip(canonicalJson(b[k]))} -> ${clip(canonicalJson(a[k]))}`,
  );
  if (before.matcher !== after.matcher)
    parts.push(`matcher ${JSON.stringify(before.matcher)} -> ${JSON.stringify(after.matcher)}`);
  return parts.join('; ') || 'changed';
}

function clip(s: string, max = 160): string {
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

function compareHooks(scope: HooksScope, row: FileRow, now: FileNow): Finding[] {
  const path = row.path;
  const f = (code: string, detail: string): Finding => ({ code, severity: 'tamper', path, detail });
  if (now.kind === 'absent')
    return [f('hooks_file_missing', 'hooks.json was removed: Codex runs none of the Latch handlers')];
  if (now.kind === 'error' || now.bytes === null)
    return [f('hooks_file_unreadable', `cannot read it (${now.error ?? now.kind})`)];
  const out: Finding[] = [];
  if (row.link !== now.link || kindOfSig(row.sig) !== kindOfSig(now.sig)) {
    out.push(
      f(
        'file_replaced',
        `was a ${kindOfSig(row.sig)}${row.link ? ` -> ${row.link}` : ''}, now a ${kindOfSig(now.sig)}${now.link ? ` -> ${now.link}` : ''}`,
      ),
    );
  }
  if (now.sha256 === scope.hooks_sha256) return out;
  const parsed = parseHooks(now.bytes);
  if (parsed.error)
    return [...out, f('hooks_file_unreadable', `${parsed.error}: Codex cannot load it, so no Latch handler runs`)];
  const cur = latchHandlersOf(parsed.data);
  const pos = (h: CanonHandler) => `${h.event}:${h.group}:${h.index}`;
  for (const r of scope.handlers) {
    const same = cur.find((c) => pos(c) === pos(r));
    if (same && same.json === r.json && same.matcher === r.matcher) continue;
    if (same) {
      out.push(
        f(
          'handler_changed',
          `${r.event} handler ${describeHandlerChange(r, same)} (Codex skips a changed handler until it is trusted again)`,
        ),
      );
      continue;
    }
    const moved = cur.find((c) => c.event === r.event && c.json === r.json);
    if (moved)
      out.push(
        f(
          'handler_moved',
          `${r.event} handler moved from group ${r.group}/${r.index} to ${moved.group}/${moved.index} (its trust key changed: Codex skips it)`,
        ),
      );
    else out.push(f('handler_removed', `${r.event} handler removed`));
  }
  for (const c of cur) {
    if (
      !scope.handlers.some((r) => pos(r) === pos(c)) &&
      !scope.handlers.some((r) => r.event === c.event && r.json === c.json)
    ) {
      out.push(
        f(
          'handler_added',
          `a Latch-looking ${c.event} handler was added at ${c.group}/${c.index}: ${clip(String((JSON.parse(c.json) as { command?: unknown }).command))}`,
        ),
      );
    }
  }
  if (out.length === 0 && sha256(canonicalJson(parsed.data)) !== scope.hooks_canon_sha256) {
    out.push(
      f(
        'hooks_file_changed',
        'content other than the Latch handlers changed (a hook added, removed or edited: it runs outside any sandbox on every matching event)',
      ),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// config.toml

const FEATURE_FLAGS = ['hooks', 'codex_hooks'];

function isTable(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);
}

/** The hook-related parts of a config.toml: the flags that turn hooks off, Latch's trust entries, the rest of [hooks]. */
export function configPart(bytes: Buffer | null, latchKeys: string[], project: string | null): ConfigPart {
  if (bytes === null) return { exists: false, features: {}, state: {}, foreign: [], inline: null };
  let cfg: Record<string, unknown>;
  try {
    cfg = parseToml(bytes.toString('utf8'));
  } catch (err) {
    return {
      exists: true,
      error: (err as Error).message.split('\n')[0] ?? 'parse error',
      features: {},
      state: {},
      foreign: [],
      inline: null,
    };
  }
  const features: Record<string, unknown> = {};
  if (isTable(cfg.features)) for (const k of FEATURE_FLAGS) if (k in cfg.features) features[k] = cfg.features[k];
  const hooks = isTable(cfg.hooks) ? cfg.hooks : {};
  const stateTable = isTable(hooks.state) ? hooks.state : {};
  const state: Record<string, unknown> = {};
  const foreign: string[] = [];
  for (const [k, v] of Object.entries(stateTable)) {
    if (latchKeys.includes(k)) state[k] = JSON.parse(canonicalJson(v));
    else if (isTable(v) && typeof v.trusted_hash === 'string' && v.enabled !== false)
      foreign.push(`${k}=${v.trusted_hash}`);
  }
  const rest = Object.fromEntries(Object.entries(hooks).filter(([k]) => k !== 'state'));
  const part: ConfigPart = {
    exists: true,
    features,
    state,
    foreign: foreign.sort(),
    inline: Object.keys(rest).length ? sha256(canonicalJson(rest)) : null,
  };
  if (project) {
    const projects = isTable(cfg.projects) ? cfg.projects : {};
    const p = projects[project] ?? projects[realOr(project)];
    part.project_trust = isTable(p) ? (p.trust_level ?? null) : null;
  }
  return part;
}

/** Findings for a config change, and whether the change may be accepted as the new baseline. */
function compareConfig(path: string, before: ConfigPart, after: ConfigPart): Finding[] {
  const out: Finding[] = [];
  const f = (code: string, detail: string): Finding => ({ code, severity: 'tamper', path, detail });
  if (after.error)
    return [
      f(
        'config_unreadable',
        `not valid TOML (${after.error}): Codex falls back to defaults, which drops every trust entry`,
      ),
    ];
  for (const k of FEATURE_FLAGS) {
    const b = before.features[k];
    const a = after.features[k];
    if (a !== undefined && a !== true && canonicalJson(a) !== canonicalJson(b))
      out.push(
        f(
          'feature_disabled',
          `features.${k} = ${canonicalJson(a)} (was ${b === undefined ? 'unset' : canonicalJson(b)}): Codex runs no hooks`,
        ),
      );
  }
  for (const [k, b] of Object.entries(before.state)) {
    const a = after.state[k];
    const bh = isTable(b) ? b.trusted_hash : undefined;
    const ah = isTable(a) ? a.trusted_hash : undefined;
    if (typeof bh === 'string' && ah === undefined)
      out.push(f('trust_removed', `[hooks.state."${k}"] trust entry removed: Codex skips this Latch handler`));
    else if (typeof bh === 'string' && ah !== bh)
      out.push(
        f(
          'trust_changed',
          `[hooks.state."${k}"] trusted_hash ${String(bh)} -> ${String(ah)}: Codex skips this Latch handler`,
        ),
      );
  }
  for (const [k, a] of Object.entries(after.state)) {
    const b = before.state[k];
    if (isTable(a) && a.enabled === false && !(isTable(b) && b.enabled === false))
      out.push(f('hook_disabled', `[hooks.state."${k}"] enabled = false: Codex skips this Latch handler`));
  }
  const added = after.foreign.filter((x) => !before.foreign.includes(x));
  for (const x of added)
    out.push(f('trust_added', `a hook outside Latch is now trusted (${clip(x)}): it runs outside any sandbox`));
  if (after.inline !== before.inline)
    out.push(
      f(
        'inline_hooks_changed',
        `the inline [hooks] tables changed (hook definitions in config.toml run outside any sandbox)`,
      ),
    );
  if ('project_trust' in before && before.project_trust === 'trusted' && after.project_trust !== 'trusted') {
    out.push(
      f(
        'project_untrusted',
        `the project is no longer trusted (trust_level ${canonicalJson(after.project_trust ?? null)}): Codex stops loading its .codex/hooks.json`,
      ),
    );
  }
  return out;
}

/** Rules for a workspace's own .codex/ files (no baseline): anything that turns hooks off or adds hooks. */
function ruleCheckWorkspace(row: FileRow, now: FileNow, latchKeys: string[]): Finding[] {
  if (now.kind === 'absent') return [];
  const path = row.path;
  if (now.bytes === null)
    return [
      {
        code: 'project_config_unreadable',
        severity: 'warn',
        path,
        detail: `cannot read it (${now.error ?? now.kind})`,
      },
    ];
  if (row.role === 'ws_config') {
    const part = configPart(now.bytes, latchKeys, null);
    if (part.error)
      return [
        { code: 'project_config_unreadable', severity: 'tamper', path, detail: `not valid TOML (${part.error})` },
      ];
    const out: Finding[] = [];
    for (const k of FEATURE_FLAGS) {
      const v = part.features[k];
      if (v !== undefined && v !== true)
        out.push({
          code: 'feature_disabled',
          severity: 'tamper',
          path,
          detail: `features.${k} = ${canonicalJson(v)} in the project's config: Codex runs no hooks here`,
        });
    }
    for (const [k, v] of Object.entries(part.state)) {
      if (isTable(v) && v.enabled === false)
        out.push({ code: 'hook_disabled', severity: 'tamper', path, detail: `[hooks.state."${k}"] enabled = false` });
    }
    if (part.inline)
      out.push({
        code: 'project_hooks',
        severity: 'warn',
        path,
        detail: 'the project config defines hooks inline (they run only once trusted)',
      });
    return out;
  }
  const parsed = parseHooks(now.bytes);
  if (parsed.error)
    return [{ code: 'project_hooks', severity: 'warn', path, detail: `project hooks file: ${parsed.error}` }];
  const latch = latchHandlersOf(parsed.data);
  const hooks = (parsed.data as { hooks?: unknown }).hooks;
  const total = isTable(hooks)
    ? Object.values(hooks).reduce<number>(
        (n, gs) =>
          n +
          (Array.isArray(gs)
            ? gs.reduce<number>((m, g) => m + (isTable(g) && Array.isArray(g.hooks) ? g.hooks.length : 0), 0)
            : 0),
        0,
      )
    : 0;
  if (total === 0) return [];
  return [
    {
      code: 'project_hooks',
      severity: 'warn',
      path,
      detail: `the workspace has a project hooks file (${total} handler(s), ${latch.length} Latch-looking) that \`latch setup codex --project\` did not record; Codex runs it only when the project and each hook are trusted, and \`latch doctor\` never runs it`,
    },
  ];
}

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
// the full tier

export interface FullResult {
  findings: Finding[];
  /** Rows whose new identity may be recorded (content unchanged, or a change that is not a finding). */
  refresh: FileRow[];
  /** Scopes whose JSON changes with an accepted change (config parts). */
  scopeUpdates: { scope: string; json: string }[];
  checked: number;
}

function scopeJson<T>(recorded: Recorded, scope: string): T | null {
  const s = recorded.scopes.find((x) => x.scope === scope);
  return s ? (JSON.parse(s.json) as T) : null;
}

function allLatchKeys(recorded: Recorded): string[] {
  const keys: string[] = [];
  for (const s of recorded.scopes) {
    if (!isRegistration(s)) continue;
    const h = JSON.parse(s.json) as HooksScope;
    for (const x of h.handlers) keys.push(...trustKeysOf(h.hooks_file, x));
  }
  return keys;
}

/**
 * Re-hashes and re-parses the recorded files (`only`: just these rows; default all) and compares
 * them with the fingerprint. Findings are data; `severity: "warn"` ones never latch.
 */
export function fullCheck(recorded: Recorded, opts: { only?: FileRow[]; workspace?: string | null } = {}): FullResult {
  const res: FullResult = { findings: [], refresh: [], scopeUpdates: [], checked: 0 };
  if (!recorded.scopes.some(isRegistration)) {
    res.findings.push({
      code: 'no_fingerprint',
      severity: 'warn',
      path: '',
      detail:
        "no registration fingerprint is recorded (Latch was set up by an older version): changes to hooks.json, config.toml, Latch's files or shell startup files go unnoticed; run `latch setup codex` to record it",
    });
    if (!opts.only) return res;
  }
  const rows =
    opts.only ??
    recorded.files.filter((f) => !f.scope.startsWith(WS_PREFIX)).concat(workspaceRows(recorded, opts.workspace));
  const install = scopeJson<InstallScope>(recorded, INSTALL_SCOPE);
  const scopes = new Map<string, HooksScope>();
  let pathFindings: Finding[] | null = null;
  for (const row of rows) {
    res.checked++;
    const now = readNow(row.path);
    const before = res.findings.length;
    const f = (code: string, detail: string, severity: Severity = 'tamper') =>
      res.findings.push({ code, severity, path: row.path, detail });
    switch (row.role) {
      case 'hooks': {
        const s = scopes.get(row.scope) ?? scopeJson<HooksScope>(recorded, row.scope);
        if (!s) break;
        scopes.set(row.scope, s);
        res.findings.push(...compareHooks(s, row, now));
        break;
      }
      case 'config': {
        const s = scopes.get(row.scope) ?? scopeJson<HooksScope>(recorded, row.scope);
        if (!s) break;
        scopes.set(row.scope, s);
        const keys = s.handlers.flatMap((h) => trustKeysOf(s.hooks_file, h));
        const recordedPart = s.config[row.path] ?? {
          exists: false,
          features: {},
          state: {},
          foreign: [],
          inline: null,
        };
        if (now.kind === 'error') {
          f('config_unreadable', `cannot read it (${now.error})`);
          break;
        }
        if (now.kind !== 'absent' && now.bytes === null) {
          f('file_replaced', `is now a ${kindOfSig(now.sig)}`);
          break;
        }
        // The project's trust level is read from the config it was recorded from (the user's).
        const part = configPart(now.bytes, keys, 'project_trust' in recordedPart ? s.project : null);
        res.findings.push(...compareConfig(row.path, recordedPart, part));
        if (res.findings.length === before && canonicalJson(part) !== canonicalJson(recordedPart)) {
          s.config[row.path] = part;
          res.scopeUpdates = res.scopeUpdates
            .filter((u) => u.scope !== row.scope)
            .concat({ scope: row.scope, json: JSON.stringify(s) });
        }
        break;
      }
      case 'installed':
      case 'shell':
      case 'path_target': {
        const wasAbsent = row.sig === 'absent';
        if (wasAbsent && now.kind === 'absent') break;
        const what =
          row.role === 'shell'
            ? 'shell startup file (runs before every hook and command: `$SHELL -lc`)'
            : row.role === 'path_target'
              ? '`latch` on the PATH'
              : 'Latch installed file';
        if (wasAbsent) f('file_appeared', `${what} appeared (was absent at setup)`);
        else if (now.kind === 'absent') f('file_missing', `${what} was removed`);
        else if (kindOfSig(row.sig) !== kindOfSig(now.sig) || row.link !== now.link) {
          f(
            'file_replaced',
            `${what}: was a ${kindOfSig(row.sig)}${row.link ? ` -> ${row.link}` : ''}, now a ${kindOfSig(now.sig)}${now.link ? ` -> ${now.link}` : ''}`,
          );
        } else if (now.sha256 !== row.sha256) {
          const size = row.sig.split(':')[1];
          const nowSize = now.sig.split(':')[1];
          f(
            'file_changed',
            `${what}: content changed (sha256 ${short(row.sha256)} -> ${short(now.sha256)}${size === nowSize ? ', same size' : `, size ${size} -> ${nowSize}`})`,
          );
        }
        break;
      }
      case 'path_dir': {
        if (!install) break;
        if (!pathFindings) {
          pathFindings = [];
          for (const name of PATH_NAMES) {
            const was = install.resolved[name] ?? null;
            const is = resolveOnPath(name, install.path_dirs);
            if (was !== is)
              pathFindings.push({
                code: 'path_shim',
                severity: 'tamper',
                path: is ?? was ?? row.path,
                detail: `\`${name}\` on the PATH setup recorded now resolves to ${is ?? 'nothing'} (was ${was ?? 'nothing'})`,
              });
          }
          res.findings.push(...pathFindings);
        }
        if (pathFindings.length) continue; // no refresh while the resolution differs
        break;
      }
      case 'ws_config':
      case 'ws_hooks':
        // A project registration covers its own hooks file (compared above, against its fingerprint).
        if (row.role === 'ws_hooks' && recorded.scopes.some((x) => x.scope === row.path)) break;
        res.findings.push(...ruleCheckWorkspace(row, now, allLatchKeys(recorded)));
        break;
    }
    const tamper = res.findings.slice(before).some((x) => x.severity === 'tamper');
    if (!tamper && now.sig !== row.sig)
      res.refresh.push({ ...row, sig: now.sig, sha256: now.sha256 ?? row.sha256, link: now.link });
  }
  return res;
}

function short(h: string | null): string {
  return h ? h.slice(0, 12) : '-';
}

// ---------------------------------------------------------------------------------------------
// the hook entry point

const TOUCH_ROLES = new Set<Role>(['hooks', 'installed', 'shell', 'path_target']);
const TOUCH_LOG_MAX = 50;

export interface RegistrationCheck {
  status: 'ok' | 'tampered' | 'unrecorded';
  findings: Finding[];
  /** True when the stat tier saw a change and the full tier ran. */
  escalated: boolean;
  /** True when the findings came from the cached alarm (same stat identities as the last alarm). */
  cached: boolean;
}

/**
 * What the guard calls on every hook: `quickCheck`; on a stat change, `fullCheck` of the changed
 * files; a change that is no finding refreshes the recorded identity (a short write transaction), a
 * tamper is cached as the alarm (same identities next time: no re-hash). `db` must be writable.
 */
export function checkRegistration(db: Db, opts: { workspace?: string | null; now: string }): RegistrationCheck {
  const q = quickCheck(db, opts);
  if (q.status === 'unrecorded') {
    const none = db.prepare('SELECT COUNT(*) AS n FROM registrations').get() as { n: number };
    if (none.n === 0)
      return {
        status: 'unrecorded',
        findings: fullCheck({ scopes: [], files: [], alarm: null }).findings,
        escalated: false,
        cached: false,
      };
  }
  if (q.status === 'ok') return { status: 'ok', findings: [], escalated: false, cached: false };
  const alarm = db.prepare('SELECT sigs, findings_json FROM registration_alarm WHERE id = 1').get() as
    | { sigs: string; findings_json: string }
    | undefined;
  if (alarm && alarm.sigs === q.sigs)
    return {
      status: 'tampered',
      findings: JSON.parse(alarm.findings_json) as Finding[],
      escalated: true,
      cached: true,
    };
  const recorded = loadRecorded(db);
  const ws = workspaceRows(recorded, opts.workspace);
  const only = q.changed
    .map(
      (c) =>
        recorded.files.find((f) => f.scope === c.scope && f.path === c.path) ??
        ws.find((f) => f.scope === c.scope && f.path === c.path),
    )
    .filter((r): r is FileRow => !!r);
  const full = fullCheck(recorded, { only, workspace: opts.workspace });
  const tamper = full.findings.filter((f) => f.severity === 'tamper');
  immediate(db, () => {
    const up = db.prepare(
      'INSERT INTO registration_files (scope, path, role, sig, sha256, link) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, path) DO UPDATE SET sig = excluded.sig, sha256 = excluded.sha256, link = excluded.link',
    );
    for (const r of full.refresh) up.run(r.scope, r.path, r.role, r.sig, r.sha256, r.link);
    // Same content, other stat identity (a touch): accepted, but kept as evidence, since a change
    // reverted before any hook ran (one that blinded the hooks meanwhile) looks the same.
    const touched: Touch[] = full.refresh
      .filter(
        (r) =>
          TOUCH_ROLES.has(r.role) &&
          only.some(
            (o) =>
              o.path === r.path &&
              o.scope === r.scope &&
              o.sha256 !== null &&
              o.sha256 === r.sha256 &&
              o.sig !== 'absent',
          ),
      )
      .map((r) => ({ at: opts.now, path: r.path, role: r.role }));
    if (touched.length) {
      const prev = db.prepare('SELECT json FROM registrations WHERE scope = ?').pluck().get(TOUCH_SCOPE) as
        | string
        | undefined;
      const log = [...(prev ? (JSON.parse(prev) as Touch[]) : []), ...touched].slice(-TOUCH_LOG_MAX);
      db.prepare(
        `INSERT INTO registrations (scope, kind, recorded_at, json) VALUES (?, 'log', ?, ?) ON CONFLICT (scope) DO UPDATE SET json = excluded.json, recorded_at = excluded.recorded_at`,
      ).run(TOUCH_SCOPE, opts.now, JSON.stringify(log));
    }
    for (const u of full.scopeUpdates)
      db.prepare('UPDATE registrations SET json = ? WHERE scope = ?').run(u.json, u.scope);
    if (tamper.length) {
      db.prepare(
        'INSERT INTO registration_alarm (id, sigs, findings_json, at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET sigs = excluded.sigs, findings_json = excluded.findings_json, at = excluded.at',
      ).run(q.sigs, JSON.stringify(full.findings), opts.now);
    }
  });
  return { status: tamper.length ? 'tampered' : 'ok', findings: full.findings, escalated: true, cached: false };
}

// ---------------------------------------------------------------------------------------------
// what a tamper does

export const TAMPER_CODE = 'registration_changed';

export function summarize(findings: Finding[], max = 3): string {
  const t = findings.filter((f) => f.severity === 'tamper');
  const head = t.slice(0, max).map((f) => `${f.path ? `${f.path}: ` : ''}${f.detail}`);
  return head.join('; ') + (t.length > max ? `; and ${t.length - max} more` : '');
}

/** Reasons for a deny (the guard's `Reason` shape: code + message), one per tamper finding (at most 5). */
export function tamperReasons(findings: Finding[]): { code: string; message: string }[] {
  const t = findings.filter((f) => f.severity === 'tamper');
  if (t.length === 0) return [];
  const reasons = t.slice(0, 5).map((f) => ({
    code: TAMPER_CODE,
    message: `Latch's registration changed since \`latch setup codex\`: ${f.path ? `${f.path}: ` : ''}${f.detail} [${f.code}]`,
  }));
  if (t.length > 5)
    reasons.push({ code: TAMPER_CODE, message: `and ${t.length - 5} more change(s); \`latch status\` lists them` });
  reasons.push({
    code: TAMPER_CODE,
    message:
      'Every session of this workspace is latched. A human checks the change (`latch doctor`), re-runs `latch setup codex` if it is theirs (that re-records the fingerprint), then runs `latch verify`.',
  });
  return reasons;
}

/**
 * Latches every session of `workspace` for a registration change (event `inherit:latched`, reason
 * `registration_changed: ...`, findings as evidence). Sessions already latched for this reason are
 * left as they are (the hook calls this on every call while the change stands). Returns the sessions
 * whose state changed or whose reason was added. Runs in its own write transaction.
 */
export function latchForTamper(db: Db, workspace: string, findings: Finding[], now: string): string[] {
  const t = findings.filter((f) => f.severity === 'tamper');
  if (t.length === 0) return [];
  const reason = `${TAMPER_CODE}: ${summarize(t)}`;
  return immediate(db, () => {
    const done: string[] = [];
    for (const row of sessionsIn(db, workspace)) {
      if (row.state === 'latched' && row.state_reason?.startsWith(TAMPER_CODE)) continue;
      const r =
        row.state === 'latched' && row.state_reason ? `${reason} (latched before: ${row.state_reason})` : reason;
      transition(db, row, 'inherit:latched', { code: TAMPER_CODE, findings: t }, r, now);
      done.push(row.session_id);
    }
    return done;
  });
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
  for (const n of CACHED_BUNDLES) if (names.includes(n)) out.add(join(dist, `${n}.v8cache`));
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

/** True when this user may write `p` or (to replace or create it) its directory. */
export function userCanChange(p: string): boolean {
  for (const q of [p, dirname(p)]) {
    try {
      accessSync(q, constants.W_OK);
      return true;
    } catch {
      /* not writable, or absent */
    }
  }
  return false;
}

function fileRow(scope: string, path: string, role: Role): FileRow {
  const now = readNow(path);
  return { scope, path, role, sig: now.sig, sha256: now.sha256, link: now.link };
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
): { files: number; missingCaches: string[] } {
  const hooks = readNow(input.hooksFile);
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
    },
  ];
  for (const c of [...new Set(input.configFiles)]) {
    const r = readNow(c);
    config[c] = configPart(r.bytes, keys, input.project && c === input.projectTrustFile ? input.project : null);
    rows.push({ scope: input.hooksFile, path: c, role: 'config', sig: r.sig, sha256: r.sha256, link: r.link });
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
  const missingCaches = CACHED_BUNDLES.map((n) => join(dirname(input.entry), `${n}.v8cache`)).filter((p) =>
    inst.some((r) => r.path === p && r.sig === 'absent'),
  );
  immediate(db, () => {
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
    for (const r of [...rows, ...inst]) ins.run(r.scope, r.path, r.role, r.sig, r.sha256, r.link);
  });
  return { files: rows.length + inst.length, missingCaches };
}

/** Forgets a registration (uninstall). The installation scope stays while another registration uses it. */
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
          if (statSig(r.path) === r.sig) continue;
          const now = readNow(r.path);
          up.run(now.sig, now.sha256, now.link, r.scope, r.path);
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

// ---------------------------------------------------------------------------------------------
// reports (latch status, latch doctor)

export interface RegistrationReport {
  /** ok: nothing changed; changed: tamper findings; unrecorded: no fingerprint (setup by an older Latch). */
  status: 'ok' | 'changed' | 'unrecorded';
  recorded_at: string | null;
  /** Files compared, by role. */
  files: Record<string, number>;
  registrations: { scope: string; kind: string; recorded_at: string }[];
  findings: Finding[];
  /** Files seen touched since setup (same content, new stat identity), newest last. */
  touched: Touch[];
}

/** The full comparison, read-only (no refresh, no alarm): what `latch status` and `latch doctor` show. */
export function registrationReport(db: Db, workspace: string | null): RegistrationReport {
  const recorded = loadRecorded(db);
  const full = fullCheck(recorded, { workspace });
  const files: Record<string, number> = {};
  for (const f of recorded.files) if (!f.scope.startsWith(WS_PREFIX)) files[f.role] = (files[f.role] ?? 0) + 1;
  const regs = recorded.scopes
    .filter(isRegistration)
    .map((s) => ({ scope: s.scope, kind: s.kind, recorded_at: s.recorded_at }));
  const tamper = full.findings.some((f) => f.severity === 'tamper');
  return {
    status: regs.length === 0 ? 'unrecorded' : tamper ? 'changed' : 'ok',
    recorded_at:
      regs
        .map((r) => r.recorded_at)
        .sort()
        .at(-1) ?? null,
    files,
    registrations: regs,
    findings: full.findings,
    touched: JSON.parse(recorded.scopes.find((s) => s.scope === TOUCH_SCOPE)?.json ?? '[]') as Touch[],
  };
}

const ROLE_LABEL: Record<string, string> = {
  hooks: 'hooks.json',
  config: 'Codex config files (hook settings)',
  installed: 'installed Latch files',
  shell: 'shell startup files',
  path_dir: 'PATH directories',
  path_target: '`latch` on the PATH',
};

export const RERECORD_FIX =
  'check each change; if it is yours, re-run `latch setup codex` (with --project DIR for a project install) to record the fingerprint again, then `latch verify` in each latched workspace';

/** Text lines for a report: first line is the summary. */
export function registrationLines(r: RegistrationReport): string[] {
  const counts = Object.entries(r.files)
    .map(([role, n]) => `${n} ${ROLE_LABEL[role] ?? role}`)
    .join(', ');
  if (r.status === 'unrecorded')
    return [r.findings.find((f) => f.code === 'no_fingerprint')?.detail ?? 'no registration fingerprint recorded'];
  const head =
    r.status === 'ok'
      ? `ok: unchanged since \`latch setup codex\` (${r.recorded_at}); compared ${counts}`
      : `CHANGED since \`latch setup codex\` (${r.recorded_at}):`;
  const lines = [head];
  for (const f of r.findings)
    lines.push(
      `${f.severity === 'tamper' ? 'changed' : 'note'}: ${f.path ? `${f.path}: ` : ''}${f.detail} [${f.code}]`,
    );
  for (const t of r.touched.slice(-5))
    lines.push(
      `note: ${t.path}: touched at ${t.at}, content unchanged (a change undone before any hook ran would look the same)`,
    );
  if (r.touched.length > 5) lines.push(`note: and ${r.touched.length - 5} earlier touch(es)`);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// the guard's one call

export interface GuardRegistration {
  status: RegistrationCheck['status'] | 'error';
  findings: Finding[];
  /** Deny reasons (code `registration_changed`), empty unless tampered. */
  reasons: { code: string; message: string }[];
  /** Sessions this call latched (their rows must be re-read). */
  latched: string[];
  error?: string;
}

/**
 * For every hook, outside any transaction (it opens its own short ones): the registration check, and
 * on a tamper the latch of every session in `workspace`. Never throws: a failure comes back as
 * `status: "error"` (a tracked PreToolUse should then deny; other events go on).
 */
export function guardRegistration(db: Db, workspace: string, now: string): GuardRegistration {
  try {
    const r = checkRegistration(db, { workspace, now });
    if (r.status !== 'tampered') return { status: r.status, findings: r.findings, reasons: [], latched: [] };
    const latched = latchForTamper(db, workspace, r.findings, now);
    return { status: r.status, findings: r.findings, reasons: tamperReasons(r.findings), latched };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    return {
      status: 'error',
      findings: [],
      reasons: [{ code: TAMPER_CODE, message: `Latch could not compare its registration fingerprint (${error}).` }],
      latched: [],
      error,
    };
  }
}
