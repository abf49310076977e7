// Read-only git queries used by Latch: workspace root detection and a compact
// fingerprint of the repository state (HEAD, branch, porcelain status).
//
// Every git invocation runs with GIT_OPTIONAL_LOCKS=0 so that read-only
// commands such as `git status` never take (or contend for) the index lock
// while the agent itself may be running git.

import { DeadlineError, remainingMs } from './deadline.js';
import { childProcess } from './lazy.js';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';

export interface GitState {
  isRepo: boolean;
  /** Full object id of HEAD, or null when not a repo or the branch is unborn (no commits). */
  head: string | null;
  /** Short branch name (also for an unborn branch); null when HEAD is detached or not a repo. */
  branch: string | null;
  /** sha256 (hex) of `git status --porcelain=v1 -z --untracked-files=all`; null when not a repo. */
  statusSha256: string | null;
}

export interface GitResult {
  status: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Output of one git call may be large (ls-files on a big repo); allow up to 1 GiB. */
const MAX_BUFFER = 1024 * 1024 * 1024;

/**
 * Config that makes git run a program, overridden for every call Latch makes: the agent writes the
 * repository's config and may have armed any of these while it was mutable, and Latch's own git runs
 * with Latch's authority, outside any sandbox. GIT_CONFIG_COUNT entries take precedence over every
 * config file. Filter drivers have names of the agent's choosing: `git status` gets their commands
 * emptied by name (see `filterOverrides`).
 */
const NO_PROGRAMS: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['core.pager', 'cat'],
  ['diff.external', ''],
  ['core.sshCommand', ''],
  ['gpg.program', ''],
];

/** The environment of every git call Latch makes: no optional locks, no prompt, no program from config. */
export function safeGitEnv(
  extra: ReadonlyArray<readonly [string, string]> = [],
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...base,
    GIT_OPTIONAL_LOCKS: '0',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    GIT_PAGER: 'cat',
    GIT_EXTERNAL_DIFF: '',
  };
  // Inherited knobs that could point git at other config or programs.
  for (const k of [
    'GIT_CONFIG_PARAMETERS',
    'GIT_CONFIG',
    'GIT_CONFIG_GLOBAL',
    'GIT_CONFIG_SYSTEM',
    'GIT_EXEC_PATH',
    'GIT_ASKPASS',
    'GIT_SSH',
    'GIT_SSH_COMMAND',
    'GIT_EDITOR',
  ])
    delete env[k];
  const all = [...NO_PROGRAMS, ...extra];
  all.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  env.GIT_CONFIG_COUNT = String(all.length);
  return env;
}

let gitEnv: NodeJS.ProcessEnv | undefined;
function env(): NodeJS.ProcessEnv {
  return (gitEnv ??= safeGitEnv());
}

/** Empty overrides for every filter driver the repository's config defines (`git config` runs nothing). */
function filterOverrides(cwd: string): Array<[string, string]> {
  return driverOverrides(cwd, '^filter\\..*\\.(clean|smudge|process)$');
}

function driverOverrides(cwd: string, pattern: string): Array<[string, string]> {
  const r = runGit(cwd, ['config', '-z', '--get-regexp', pattern]);
  if (r.status !== 0) return [];
  const out: Array<[string, string]> = [];
  for (const entry of r.stdout.toString('utf8').split('\0')) {
    const key = entry.split('\n', 1)[0];
    if (key) out.push([key, '']);
  }
  return out;
}

/** Run git synchronously in `cwd`. Never throws for a non-zero exit; throws only if git cannot be spawned at all. */
export function runGit(
  cwd: string,
  args: string[],
  extraConfig: ReadonlyArray<readonly [string, string]> = [],
  input?: string,
): GitResult {
  const r = childProcess().spawnSync('git', args, {
    cwd,
    env: extraConfig.length > 0 ? safeGitEnv(extraConfig) : env(),
    timeout: remainingMs(),
    killSignal: 'SIGKILL',
    maxBuffer: MAX_BUFFER,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(input === undefined ? {} : { input }),
    windowsHide: true,
  });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    // ENOENT: git not installed, or cwd does not exist. Report as a failed call.
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return { status: null, stdout: Buffer.alloc(0), stderr: String(r.error) };
    if (code === 'ETIMEDOUT')
      throw new DeadlineError(
        `ran out of time while running git ${args[0] ?? ''} (the hook must answer before Codex's timeout)`,
      );
    throw r.error;
  }
  return { status: r.status, stdout: r.stdout ?? Buffer.alloc(0), stderr: r.stderr ? r.stderr.toString('utf8') : '' };
}

/** Run git and return stdout (trimmed of one trailing newline) or null on failure. */
function gitLine(cwd: string, args: string[]): string | null {
  const r = runGit(cwd, args);
  if (r.status !== 0) return null;
  return r.stdout.toString('utf8').replace(/\r?\n$/, '');
}

/** True when `dir` is inside a git work tree (not inside the .git directory itself). */
export function isInsideWorkTree(dir: string): boolean {
  return gitLine(dir, ['rev-parse', '--is-inside-work-tree']) === 'true';
}

/**
 * The workspace root for `cwd`: the git top-level directory (realpath) when
 * `cwd` is inside a git work tree, otherwise realpath(cwd).
 */
export function workspaceRoot(cwd: string): string {
  const top = gitLine(cwd, ['rev-parse', '--show-toplevel']);
  if (top) {
    try {
      return realpathSync(top);
    } catch {
      // fall through to cwd
    }
  }
  return realpathSync(cwd);
}

/** Snapshot of HEAD / branch / working-tree status for the repository containing `root`. */
export function gitState(root: string): GitState {
  if (!isInsideWorkTree(root)) return { isRepo: false, head: null, branch: null, statusSha256: null };

  // Unborn branch (empty repo): --verify fails -> null.
  const head = gitLine(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}']);
  // Detached HEAD: symbolic-ref -q exits 1 without output -> null.
  const branch = gitLine(root, ['symbolic-ref', '-q', '--short', 'HEAD']);

  // status may run clean filters (racily clean entries): the repository's filter commands are emptied.
  const st = runGit(root, ['status', '--porcelain=v1', '-z', '--untracked-files=all'], filterOverrides(root));
  const statusSha256 = st.status === 0 ? createHash('sha256').update(st.stdout).digest('hex') : null;

  return { isRepo: true, head: head || null, branch: branch || null, statusSha256 };
}

/**
 * The blobs that object names such as `<commit>:<path>` or `:<path>` (the index) name, read with
 * `git cat-file` (no filter, no textconv: the bytes git stores): a name maps to its bytes when it
 * names a blob of at most maxBytes. Missing names, other objects, larger blobs and names git cannot
 * take on one line are left out. Two git calls (sizes first, then the blobs wanted).
 */
export function catBlobs(root: string, names: readonly string[], maxBytes: number): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const asked = [...new Set(names.filter((n) => !/[\n\r\0]/.test(n)))];
  if (asked.length === 0) return out;
  const check = runGit(root, ['cat-file', '--batch-check'], [], asked.map((n) => `${n}\n`).join(''));
  if (check.status !== 0) return out;
  const lines = check.stdout.toString('utf8').split('\n');
  const oidOf = new Map<string, string>();
  asked.forEach((name, i) => {
    const m = /^([0-9a-f]{40,64}) blob (\d+)$/.exec(lines[i] ?? '');
    if (m && Number(m[2]) <= maxBytes) oidOf.set(name, m[1]!);
  });
  const oids = [...new Set(oidOf.values())];
  if (oids.length === 0) return out;
  const batch = runGit(root, ['cat-file', '--batch'], [], oids.map((o) => `${o}\n`).join(''));
  if (batch.status !== 0) return out;
  const bytes = new Map<string, Buffer>();
  const buf = batch.stdout;
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) break;
    const m = /^([0-9a-f]{40,64}) blob (\d+)$/.exec(buf.toString('latin1', pos, nl));
    if (!m) break;
    const size = Number(m[2]);
    bytes.set(m[1]!, buf.subarray(nl + 1, nl + 1 + size));
    pos = nl + 1 + size + 1;
  }
  for (const [name, oid] of oidOf) {
    const b = bytes.get(oid);
    if (b) out.set(name, b);
  }
  return out;
}
