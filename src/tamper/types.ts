// The fingerprint's data (src/tamper/index.ts): file roles, findings, the rows of registration_files and
// the JSON of registrations, and the scope names (the installation, the touch log, a workspace's rows).

export type Role =
  | 'hooks' // a hooks.json with Latch handlers (user or project)
  | 'config' // a config.toml whose hook parts are recorded
  | 'installed' // Latch's own code
  | 'shell' // a shell startup file run by `$SHELL -lc`
  | 'path_dir' // a directory of the PATH setup ran with (its mtime moves when an entry appears)
  | 'path_target' // the file `latch` resolves to on that PATH
  | 'ws_config' // <workspace>/.codex/config.toml (rule-checked, no baseline)
  | 'ws_hooks' // <workspace>/.codex/hooks.json (rule-checked, no baseline)
  | 'claude_settings' // a Claude Code settings layer a session of the workspace reads (its security keys)
  | 'claude_dropins'; // Claude Code's managed-settings.d/ (the security keys of its drop-ins)

export type Severity = 'tamper' | 'warn';

/**
 * Who could have made a registration change (src/contain/jobs.ts): `agent` latches the sessions;
 * `human` (no tool call ran and no job of one was alive when the files changed) only refuses tracked
 * calls until `latch setup` re-records it.
 */
export type ChangeOrigin = { origin: 'human' } | { origin: 'agent'; why: string };

/** The reason code of a denial or latch for a registration change. */
export const TAMPER_CODE = 'registration_changed';

/** The alarm's origin as stored; anything else (an alarm from before, a damaged value) is the agent's. */
export function originOfJson(json: string | null): ChangeOrigin {
  try {
    const o = json ? (JSON.parse(json) as { origin?: unknown; why?: unknown }) : null;
    if (o?.origin === 'human') return { origin: 'human' };
    if (o?.origin === 'agent' && typeof o.why === 'string') return { origin: 'agent', why: o.why };
  } catch {
    /* below */
  }
  return { origin: 'agent', why: 'recorded without an origin' };
}

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
  /**
   * The content baseline findings compare against: the file's sha256, or what a role compares (a
   * settings layer's digest of its security keys). Kept apart from the trust in `sig`: a change
   * that is no finding records its new baseline once, however long its identity stays untrusted.
   */
  sha256: string | null;
  /** readlink of a symlink. */
  link: string | null;
  /**
   * Set while `sig` does not stand for the content (fingerprint.ts, verifyOf: a recent ctime, or a
   * filesystem where writes through a shared memory map leave the stat as it is): every hook compares
   * the file with `raw` (with the bytes the store keeps for it, check.ts verifyContent). Stored in the sig column after `?` or `!` (`sig?raw`, `sig!raw`).
   */
  verify?: Verify | null;
}

/** What the quick tier compares a file against: the sha256 of the bytes last read at its identity. */
export interface Verify {
  raw: string | null;
  /** `sync`: until a hook reads it again after an fdatasync (then trusted); `never`: a filesystem that does not write back. */
  until: 'sync' | 'never';
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
  /** The HOME setup ran with (its `.claude/` is a Claude Code user settings directory). */
  home?: string;
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

export const isRegistration = (s: ScopeRow) => s.kind === 'user' || s.kind === 'project';

/** A stat change whose content was unchanged (accepted as a `touch`), kept as evidence. */
export interface Touch {
  at: string;
  path: string;
  role: Role;
}

export const PATH_NAMES = ['latch', 'node', 'codex'] as const;

export const WS_PREFIX = 'ws:';

/**
 * Scope of a workspace's Claude Code settings layers (`cw:<workspace>`): in registration_files, one
 * row per layer file; in registrations (kind `layers`), `{"through": N}`, the highest sessions rowid
 * whose layers were recorded (sessions are never deleted, so rowids only grow).
 */
export const LAYER_PREFIX = 'cw:';

export const isWorkspaceScope = (scope: string) => scope.startsWith(WS_PREFIX) || scope.startsWith(LAYER_PREFIX);
