// Latch's own read-only sandbox: bubblewrap plus the seccomp helper that @anthropic-ai/sandbox-runtime
// ships (`vendor/seccomp/x64/apply-seccomp`, the one Claude Code's own sandbox uses), for every agent.
// The hook runs a held read in it (src/guard/decide.ts sandboxedReplay), outside the agent's own
// sandbox:
//
//   /usr/bin/bwrap --new-session --die-with-parent --unshare-all --unshare-user --cap-drop ALL
//     [--cap-add CAP_SETFCAP] --ro-bind / / --dev /dev --proc /proc [--tmpfs P --remount-ro P |
//     --ro-bind /dev/null F]… --setenv SRT_ALLOW_NESTED_USERNS 0 --unsetenv … -- <helper>
//     /usr/bin/env -u BASH_ENV … /bin/bash --noprofile --norc -c <command>          (stdin /dev/null)
//
// - The whole file system is a read-only bind (every submount too): the cwd, /tmp, $HOME are EROFS,
//   reopening /proc/self/fd/N for writing as well; /dev is private (its /dev/shm a private tmpfs). Own
//   network (nothing but a down loopback), pid, ipc, uts, cgroup and user namespaces: no connection
//   out, no signal to a process outside.
// - Sealed: Latch's home, the agent's registration and configuration, the project's .latch.toml,
//   Latch's installed files and the shell startup files (the classifier's protected paths) are hidden:
//   an empty read-only tmpfs over each directory, /dev/null over each file. So a read, whatever program
//   it runs, can neither change nor see them.
// - The helper stacks two seccomp filters before it runs the command: no new AF_UNIX socket (plain
//   bwrap lets the read connect to any listening unix socket outside: a tmux server, the session bus,
//   an ssh-agent, Claude Code's messaging socket) and no user namespace, mount, setns, pivot_root or
//   io_uring. It honours SRT_ALLOW_NESTED_USERNS=1 (nested namespaces allowed), so bwrap pins it to 0
//   itself; no shell runs between bwrap and the helper that could change it. CAP_SETFCAP is kept for a
//   root caller (whose capability set allows it), as sandbox-runtime does: the helper maps uid 0 into
//   its own namespace.
// - Inherited sockets are not covered by seccomp: stdin is /dev/null, and CLAUDE_CODE_MESSAGING_SOCKET /
//   _TOKEN are removed from the environment.
// - The helper is pinned: the installed package must be sandbox-runtime 0.0.83 and the helper's SHA-256
//   must be the one recorded below; otherwise there is no such sandbox (and the reason says which).
//   bubblewrap is the system's. Both are probed once per binary identity (a read runs, a write to a
//   file under $LATCH_HOME fails), remembered in `$LATCH_HOME/sandbox/claude-probe.json` (its first
//   user's name).
import { lstatSync, mkdirSync, readFileSync, realpathSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { nodeCrypto } from '../../base/lazy.js';
import { readShell, readShellArgv, shellQuote, trustedPath } from '../../guard/read-shell.js';
import type { ReadSandbox, SandboxedProcess, Spawn } from '../agent.js';

/** Where a sandboxed command's standard input comes from (an inherited socket is no sandbox's). */
export const NULL_STDIN = '</dev/null';

/** The environment a sandboxed read starts with: without the variables that reach Claude Code itself. */
export function withoutClaude(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const e = { ...env };
  for (const v of CLAUDE_UNSET) delete e[v];
  return e;
}

/**
 * What a sealed read must not see, as bubblewrap options: a read-only empty tmpfs over each existing
 * directory, /dev/null over each existing file (resolved through symlinks: a mount lands on the
 * target). Paths that do not exist have nothing to hide.
 */
export function hideOptions(paths: readonly string[]): string[] {
  const found: { real: string; dir: boolean }[] = [];
  for (const p of paths) {
    try {
      const real = realpathSync(p);
      if (real !== '/') found.push({ real, dir: statSync(real).isDirectory() });
    } catch {
      // Nothing there: nothing to hide (and the sandbox is read-only, so nothing appears).
    }
  }
  // Outermost first; a path under a directory already hidden is gone with it (and bubblewrap could
  // not make a mount point inside the read-only tmpfs).
  found.sort((a, b) => a.real.length - b.real.length);
  const out: string[] = [];
  const dirs: string[] = [];
  for (const f of found) {
    if (dirs.some((d) => f.real === d || f.real.startsWith(`${d}/`))) continue;
    if (f.dir) {
      dirs.push(f.real);
      out.push('--tmpfs', f.real, '--remount-ro', f.real);
    } else if (!out.includes(f.real)) out.push('--ro-bind', '/dev/null', f.real);
  }
  return out;
}

/** The sandbox-runtime release whose seccomp helper Latch runs (package.json pins it exactly). */
export const RUNTIME_PACKAGE = '@anthropic-ai/sandbox-runtime';
export const RUNTIME_VERSION = '0.0.83';
/** The helper inside that package, for the one architecture it is pinned for. */
const HELPER_PATH = 'vendor/seccomp/x64/apply-seccomp';
/** SHA-256 of sandbox-runtime 0.0.83's vendor/seccomp/x64/apply-seccomp (759,816 bytes). */
const HELPER_SHA256 = '7effeb0f2d94f7b8bbb8d25a9b21fe77416e5f5c7e408cefea5a07f7560ca24a';

/** The variables through which a read could reach Claude Code itself (its messaging socket). */
export const CLAUDE_UNSET = ['CLAUDE_CODE_MESSAGING_SOCKET', 'CLAUDE_CODE_MESSAGING_TOKEN'];

/** bubblewrap's options: everything read-only, every namespace private, the helper's switch pinned. */
export function bwrapOptions(setfcap: boolean): string[] {
  return [
    '--new-session',
    '--die-with-parent',
    '--unshare-all',
    '--unshare-user',
    '--cap-drop',
    'ALL',
    ...(setfcap ? ['--cap-add', 'CAP_SETFCAP'] : []),
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--setenv',
    'SRT_ALLOW_NESTED_USERNS',
    '0',
    '--unsetenv',
    'SRT_OBSERVE_SOCK',
    '--unsetenv',
    'SRT_ENCODED_CMD',
    ...CLAUDE_UNSET.flatMap((v) => ['--unsetenv', v]),
  ];
}

export interface Bwrap {
  bwrap: string;
  helper: string;
  setfcap: boolean;
}

/** The shell command line Claude Code runs instead of `command`: the clean read shell, sandboxed. */
export function wrapBwrap(command: string, b: Bwrap): string {
  return [
    '\\builtin',
    'exec',
    shellQuote(b.bwrap),
    ...bwrapOptions(b.setfcap),
    '--',
    shellQuote(b.helper),
    ...readShell(command),
    NULL_STDIN,
  ].join(' ');
}

/** wrapBwrap's command line as a process the hook starts (stdin is the spawner's: /dev/null). */
export function bwrapArgv(
  command: string,
  b: Bwrap,
  env: NodeJS.ProcessEnv,
  hide: readonly string[] = [],
): SandboxedProcess {
  return {
    file: b.bwrap,
    args: [...bwrapOptions(b.setfcap), ...hideOptions(hide), '--', b.helper, ...readShellArgv(command)],
    env: withoutClaude(env),
  };
}

export interface FileId {
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

export function fileId(path: string, st: Stats): FileId {
  return { path, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
}

export function sameId(a: FileId | undefined, b: FileId): boolean {
  return (
    a !== undefined &&
    a.path === b.path &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs &&
    a.ino === b.ino
  );
}

export interface ProbeRecord {
  bwrap: FileId;
  helper: FileId;
  /** bubblewrap's options as probed: another Latch (other options) probes again. */
  options: string;
  ok: boolean;
  why: string;
}

/** Test seams (never read from the environment): another bubblewrap path, another runtime package dir. */
export type SandboxPaths = { bwrap?: string; runtime?: string };

/** Is `p` a regular file someone may execute? */
export function executable(p: string): boolean {
  try {
    const st = statSync(p);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** /usr/bin/bwrap, else the first `bwrap` on the PATH without the directories the agent could fill. */
function findBwrap(env: NodeJS.ProcessEnv): string | null {
  if (executable('/usr/bin/bwrap')) return '/usr/bin/bwrap';
  for (const d of trustedPath(env.PATH, env.HOME).split(':')) if (executable(join(d, 'bwrap'))) return join(d, 'bwrap');
  return null;
}

/** Does this process hold CAP_SETFCAP in its bounding or inheritable set (what an exec as root keeps)? */
function holdsSetfcap(): boolean {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const bnd = /^CapBnd:\s*([0-9a-fA-F]+)\s*$/m.exec(status);
    const inh = /^CapInh:\s*([0-9a-fA-F]+)\s*$/m.exec(status);
    if (!bnd || !inh) return false;
    return (((BigInt(`0x${bnd[1]}`) | BigInt(`0x${inh[1]}`)) >> 31n) & 1n) === 1n;
  } catch {
    return false;
  }
}

export type Route = { ok: true; b: Bwrap } | { ok: false; why: string; fallback: boolean };

/**
 * bubblewrap and the pinned helper, found and checked (nothing runs): `fallback` is true when one is
 * missing (Codex's sandbox may stand in), false when the helper is not the pinned one (refused).
 */
export function findRoute(paths: SandboxPaths, env: NodeJS.ProcessEnv, verified: FileId | null = null): Route {
  const bwrap = paths.bwrap ?? findBwrap(env);
  if (bwrap === null || !executable(bwrap))
    return { ok: false, why: 'bubblewrap (bwrap) is not installed', fallback: true };
  let runtime: string;
  try {
    runtime = paths.runtime ?? dirname(createRequire(import.meta.url).resolve(`${RUNTIME_PACKAGE}/package.json`));
  } catch {
    return { ok: false, why: `${RUNTIME_PACKAGE} is not installed`, fallback: true };
  }
  let version: unknown;
  try {
    version = (JSON.parse(readFileSync(join(runtime, 'package.json'), 'utf8')) as { version?: unknown }).version;
  } catch {
    return { ok: false, why: `${RUNTIME_PACKAGE} is not installed (no package.json in ${runtime})`, fallback: true };
  }
  if (version !== RUNTIME_VERSION)
    return {
      ok: false,
      why: `${RUNTIME_PACKAGE} is ${String(version)} in ${runtime}, not the pinned ${RUNTIME_VERSION}`,
      fallback: false,
    };
  let helper: string;
  let bytes: Buffer | null = null;
  try {
    helper = realpathSync(join(runtime, HELPER_PATH));
    const st = statSync(helper);
    if (!st.isFile()) return { ok: false, why: `${helper} is not a file`, fallback: true };
    // Hashed once per file identity (device, inode, size, mtime, ctime): a probe record of this very
    // file says it was hashed then; any change to the file, or another file, is hashed again.
    if (verified === null || !sameId(verified, fileId(helper, st))) bytes = readFileSync(helper);
  } catch {
    return { ok: false, why: `the seccomp helper ${join(runtime, HELPER_PATH)} is missing`, fallback: true };
  }
  const sha = bytes === null ? HELPER_SHA256 : nodeCrypto().createHash('sha256').update(bytes).digest('hex');
  if (sha !== HELPER_SHA256)
    return {
      ok: false,
      why: `the seccomp helper ${helper} has SHA-256 ${sha}, not the one recorded for ${RUNTIME_PACKAGE}@${RUNTIME_VERSION} (${HELPER_SHA256})`,
      fallback: false,
    };
  const root = typeof process.geteuid === 'function' && process.geteuid() === 0;
  return { ok: true, b: { bwrap, helper, setfcap: root && holdsSetfcap() } };
}

/** Runs `write` (a sandboxed `: > target`): did the file appear? (It is removed again.) A probe's write test. */
export function wroteThrough(target: string, write: () => void): boolean {
  write();
  try {
    lstatSync(target);
  } catch {
    return false;
  }
  unlinkSync(target);
  return true;
}

/** The helper's identity as the last successful probe recorded it (it was hashed before that probe), or null. */
function verifiedHelper(latchHome: string): FileId | null {
  try {
    const rec = JSON.parse(readFileSync(join(latchHome, 'sandbox', 'claude-probe.json'), 'utf8')) as ProbeRecord;
    return rec.ok === true && rec.helper && typeof rec.helper === 'object' ? rec.helper : null;
  } catch {
    return null;
  }
}

/**
 * Does the wrap run here, read-only? Once per identity of bubblewrap and the helper (and the options),
 * remembered in `$LATCH_HOME/sandbox/claude-probe.json`: `/bin/true` must run inside, and a write to a
 * file under $LATCH_HOME must fail. A stale or forged record can only make Latch use the classifier
 * alone, or run the read in a sandbox that then fails the command: neither lets a write through.
 */
export function probe(latchHome: string, b: Bwrap, env: NodeJS.ProcessEnv, spawn: Spawn): { ok: boolean; why: string } {
  const dir = join(latchHome, 'sandbox');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'claude-probe.json');
  const bwrap = fileId(b.bwrap, statSync(b.bwrap));
  const helper = fileId(b.helper, statSync(b.helper));
  const options = bwrapOptions(b.setfcap).join(' ');
  try {
    const rec = JSON.parse(readFileSync(file, 'utf8')) as ProbeRecord;
    if (sameId(rec.bwrap, bwrap) && sameId(rec.helper, helper) && rec.options === options)
      return { ok: rec.ok === true, why: String(rec.why) };
  } catch {
    // No record yet (or unreadable): probe.
  }
  const target = join(dir, `claude-probe-${process.pid}`);
  try {
    unlinkSync(target);
  } catch {
    // absent, as it should be
  }
  const penv: NodeJS.ProcessEnv = { ...env };
  for (const v of CLAUDE_UNSET) delete penv[v];
  const args = (cmd: string[]) => [...bwrapOptions(b.setfcap), '--', b.helper, ...cmd];
  const t = spawn(b.bwrap, args(['/bin/true']), penv);
  let ok = false;
  let why: string;
  if (t.status !== 0) {
    const last = t.stderr.trim().split('\n').slice(-1)[0] ?? '';
    why = `bubblewrap with the seccomp helper does not run here (exit ${t.status}${last ? `: ${last}` : ''})`;
  } else {
    const wrote = wroteThrough(target, () => spawn(b.bwrap, args(['/bin/sh', '-c', ': > "$1"', 'sh', target]), penv));
    ok = !wrote;
    why = wrote
      ? 'bubblewrap let a write through (not read-only here)'
      : 'bubblewrap + seccomp run read-only (file system read-only, no network, no unix sockets)';
  }
  const rec: ProbeRecord = { bwrap, helper, options, ok, why };
  try {
    writeFileSync(file, `${JSON.stringify(rec)}\n`, { mode: 0o600 });
  } catch {
    // Not remembered: probed again next time.
  }
  return { ok, why };
}

/** Why no sandbox runs on this machine at all (the platform), or null. */
export function platformWhy(): string | null {
  return process.platform === 'linux' && process.arch === 'x64'
    ? null
    : `no bubblewrap read-only sandbox on ${process.platform}/${process.arch} (bubblewrap + seccomp: Linux x64 only)`;
}

/** A sealed sandbox, or why not: `fallback` when another sandbox may stand in (bubblewrap or the helper missing). */
export type BwrapSandbox = Extract<ReadSandbox, { ok: true }> | { ok: false; why: string; fallback: boolean };

/**
 * Latch's sealed read-only sandbox on this machine (bubblewrap + the pinned helper, probed once per
 * identity), or why there is none. `LATCH_SANDBOX=off` turns every sandbox off. `paths` is for tests.
 */
export function bwrapSandbox(
  latchHome: string,
  env: NodeJS.ProcessEnv,
  spawn: Spawn,
  paths: SandboxPaths = {},
): BwrapSandbox {
  if (env.LATCH_SANDBOX === 'off') return { ok: false, why: 'LATCH_SANDBOX=off', fallback: false };
  const platform = platformWhy();
  if (platform !== null) return { ok: false, why: platform, fallback: true };
  try {
    const route = findRoute(paths, env, verifiedHelper(latchHome));
    if (!route.ok) return route;
    const p = probe(latchHome, route.b, env, spawn);
    if (!p.ok) return { ok: false, why: p.why, fallback: true };
    const b = route.b;
    return {
      ok: true,
      wrap: (command) => wrapBwrap(command, b),
      argv: (command, e, hide) => bwrapArgv(command, b, e, hide),
      sealed: true,
      where: `bubblewrap (${b.bwrap}) + seccomp (${RUNTIME_PACKAGE}@${RUNTIME_VERSION} apply-seccomp)`,
    };
  } catch (err) {
    return { ok: false, why: `the sandbox cannot be prepared (${(err as Error).message})`, fallback: false };
  }
}

/** What guards held reads on a machine: Latch's sealed sandbox, the classifier alone, or not known yet. */
export interface ReadsReport {
  /** `sandbox`: held reads run inside a read-only sandbox; `classifier_only`: the classifier alone guards them; `unknown`: not probed on this machine yet. */
  guard: 'sandbox' | 'classifier_only' | 'unknown';
  detail: string;
}

/**
 * What the sealed sandbox does for held reads here, from the probe a hook remembered (runs nothing),
 * or why another sandbox may stand in (`fallback`: bubblewrap or the helper is missing, or its probe failed).
 */
export function sealedReadsReport(
  latchHome: string,
  env: NodeJS.ProcessEnv,
  paths: SandboxPaths = {},
): ReadsReport | { fallback: true; why: string } {
  if (env.LATCH_SANDBOX === 'off')
    return {
      guard: 'classifier_only',
      detail: 'LATCH_SANDBOX=off: reads while held are guarded by the classifier only',
    };
  const platform = platformWhy();
  if (platform !== null) return { fallback: true, why: platform };
  let route: Route;
  try {
    route = findRoute(paths, env);
  } catch (err) {
    route = { ok: false, why: (err as Error).message, fallback: false };
  }
  if (!route.ok)
    return route.fallback
      ? { fallback: true, why: route.why }
      : {
          guard: 'classifier_only',
          detail: `no read-only sandbox (${route.why}): reads while held are guarded by the classifier only`,
        };
  const b = route.b;
  let rec: ProbeRecord | null = null;
  try {
    rec = JSON.parse(readFileSync(join(latchHome, 'sandbox', 'claude-probe.json'), 'utf8')) as ProbeRecord;
    const same =
      sameId(rec.bwrap, fileId(b.bwrap, statSync(b.bwrap))) &&
      sameId(rec.helper, fileId(b.helper, statSync(b.helper))) &&
      rec.options === bwrapOptions(b.setfcap).join(' ');
    if (!same) rec = null;
  } catch {
    rec = null;
  }
  if (rec === null)
    return {
      guard: 'unknown',
      detail: `bubblewrap (${b.bwrap}) and the pinned seccomp helper are installed but not probed yet (the first held read does it)`,
    };
  if (!rec.ok) return { fallback: true, why: rec.why };
  return {
    guard: 'sandbox',
    detail: `reads while held run inside bubblewrap (${b.bwrap}) + seccomp (${RUNTIME_PACKAGE}@${RUNTIME_VERSION}), Latch's files hidden: read-only file system, no network, no unix sockets`,
  };
}
