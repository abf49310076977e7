// Read-only that the kernel enforces, for Claude Code: while a session is latched or paused, every
// Bash call Latch lets through is rewritten (the PreToolUse reply's `updatedInput`) to run the clean
// read shell (src/guard/read-shell.ts) inside bubblewrap plus the seccomp helper that
// @anthropic-ai/sandbox-runtime ships (`vendor/seccomp/x64/apply-seccomp`, the one Claude Code's own
// sandbox uses):
//
//   \builtin exec '/usr/bin/bwrap' --new-session --die-with-parent --unshare-all --unshare-user
//     --cap-drop ALL [--cap-add CAP_SETFCAP] --ro-bind / / --dev /dev --proc /proc
//     --setenv SRT_ALLOW_NESTED_USERNS 0 --unsetenv … -- '<helper>' /usr/bin/env -u BASH_ENV … /bin/bash
//     --noprofile --norc -c '<command>' </dev/null
//
// - The whole file system is a read-only bind (every submount too): the cwd, /tmp, $HOME and
//   $LATCH_HOME are EROFS, reopening /proc/self/fd/N for writing as well; /dev is private (its /dev/shm
//   a private tmpfs). Own network (nothing but a down loopback), pid, ipc, uts, cgroup and user
//   namespaces: no connection out, no signal to a process outside.
// - The helper stacks two seccomp filters before it runs the command: no new AF_UNIX socket (plain
//   bwrap lets the read connect to any listening unix socket outside, Claude Code's messaging socket
//   among them) and no user namespace, mount, setns, pivot_root or io_uring. It honours
//   SRT_ALLOW_NESTED_USERNS=1 (nested namespaces allowed), so bwrap pins it to 0 itself; no shell runs
//   between bwrap and the helper that could change it. CAP_SETFCAP is kept for a root caller (whose
//   capability set allows it), as sandbox-runtime does: the helper maps uid 0 into its own namespace.
// - Inherited sockets are not covered by seccomp: stdin (an inherited socket under Claude Code) is
//   /dev/null, and CLAUDE_CODE_MESSAGING_SOCKET / _TOKEN are removed from the environment.
// - The helper is pinned: the installed package must be sandbox-runtime 0.0.83 and the helper's
//   SHA-256 must be the one recorded below; otherwise there is no sandbox (and the reason says which).
//   bubblewrap is the system's. Both are probed once per binary identity (a read runs, a write to a
//   file under $LATCH_HOME fails), remembered in `$LATCH_HOME/sandbox/claude-probe.json`.
// - Without bubblewrap or the helper, a Codex binary (LATCH_CODEX_BIN, or `codex` on a trusted PATH)
//   lends its own sandbox (src/agents/codex/sandbox.ts); else the classifier alone guards the read,
//   and `latch status` / `latch doctor` say so (claudeReadsReport).
//
// Claude Code runs each Bash command as `bash -c 'source <snapshot> … && eval '<command>' && pwd -P
// >| …'`: the shell snapshot (`$CLAUDE_CONFIG_DIR/shell-snapshots/*.sh`) runs before the wrap, outside
// any sandbox, and the agent could have written to it while it was mutable. prepareClaudeHeldRead
// empties every snapshot before a held read is allowed (the read is denied when it cannot).
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import type { Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { nodeCrypto } from '../../base/lazy.js';
import { isCleanShell, readShell, readShellArgv, shellQuote, trustedPath } from '../../guard/read-shell.js';
import { isReplay } from '../../guard/replay.js';
import type { ReadSandbox, SandboxedProcess, Spawn } from '../agent.js';
import {
  isWrapped,
  type ReadsReport,
  readOnlyArgv,
  readOnlySandbox,
  readsReport,
  wrapReadOnly,
} from '../codex/sandbox.js';

/** The sandbox-runtime release whose seccomp helper Latch runs (package.json pins it exactly). */
const RUNTIME_PACKAGE = '@anthropic-ai/sandbox-runtime';
const RUNTIME_VERSION = '0.0.83';
/** The helper inside that package, for the one architecture it is pinned for. */
const HELPER_PATH = 'vendor/seccomp/x64/apply-seccomp';
/** SHA-256 of sandbox-runtime 0.0.83's vendor/seccomp/x64/apply-seccomp (759,816 bytes). */
const HELPER_SHA256 = '7effeb0f2d94f7b8bbb8d25a9b21fe77416e5f5c7e408cefea5a07f7560ca24a';
/** Where Codex's npm package keeps its native binary for Linux x64. */
const CODEX_TRIPLE = 'x86_64-unknown-linux-musl';

/** The variables through which a read could reach Claude Code itself (its messaging socket). */
const CLAUDE_UNSET = ['CLAUDE_CODE_MESSAGING_SOCKET', 'CLAUDE_CODE_MESSAGING_TOKEN'];
const NULL_STDIN = '</dev/null';
/** Before the Codex fallback's wrap (Codex's wrapper cannot take them): the same two variables gone. */
const CODEX_PREFIX = `\\builtin unset -v ${CLAUDE_UNSET.join(' ')}; `;
/** Where the clean read shell's own command starts (its fixed prefix never contains this). */
const SHELL_MARK = ' /bin/bash --noprofile --norc -c ';

/** bubblewrap's options: everything read-only, every namespace private, the helper's switch pinned. */
function bwrapOptions(setfcap: boolean): string[] {
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

interface Bwrap {
  bwrap: string;
  helper: string;
  setfcap: boolean;
}

/** The shell command line Claude Code runs instead of `command`: the clean read shell, sandboxed. */
function wrapBwrap(command: string, b: Bwrap): string {
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

/** The environment a sandboxed read starts with: without the variables that reach Claude Code itself. */
function withoutClaude(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const e = { ...env };
  for (const v of CLAUDE_UNSET) delete e[v];
  return e;
}

/** wrapBwrap's command line as a process the hook starts (stdin is the spawner's: /dev/null). */
function bwrapArgv(command: string, b: Bwrap, env: NodeJS.ProcessEnv): SandboxedProcess {
  return {
    file: b.bwrap,
    args: [...bwrapOptions(b.setfcap), '--', b.helper, ...readShellArgv(command)],
    env: withoutClaude(env),
  };
}

/** The Codex fallback: `codex sandbox` around the clean read shell, without Claude's variables or stdin. */
function wrapCodex(command: string, sb: Parameters<typeof wrapReadOnly>[1]): string {
  return `${CODEX_PREFIX}${wrapReadOnly(command, sb)} ${NULL_STDIN}`;
}

/** The string a shellQuote'd word stands for, or null when `w` is not exactly one such word. */
function unquote(w: string): string | null {
  if (!/^'(?:[^']|'\\'')*'$/.test(w)) return null;
  return w.slice(1, -1).replace(/'\\''/g, "'");
}

/**
 * Is `text` a command claudeReadSandbox's wrap wrote (bubblewrap, or the Codex fallback), or the
 * classifier-only clean shell? Exact for the bubblewrap form: the text must be what the wrap writes
 * for the command it carries, with nothing added.
 */
export function isClaudeRewrittenRead(text: string): boolean {
  if (isReplay(text) || isCleanShell(text)) return true;
  if (text.startsWith(CODEX_PREFIX) && text.endsWith(` ${NULL_STDIN}`)) {
    const inner = text.slice(CODEX_PREFIX.length, -(NULL_STDIN.length + 1));
    return isWrapped(inner) && !isCleanShell(inner);
  }
  const head = /^\\builtin exec ('(?:[^']|'\\'')*') /.exec(text);
  if (!head || !text.endsWith(` ${NULL_STDIN}`)) return false;
  const bwrap = unquote(head[1]!);
  const helperAt = text.indexOf(' -- ', head[0].length);
  const mark = text.indexOf(SHELL_MARK);
  if (bwrap === null || helperAt < 0 || mark < 0) return false;
  const helperWord = /^'(?:[^']|'\\'')*'/.exec(text.slice(helperAt + 4));
  const helper = helperWord ? unquote(helperWord[0]) : null;
  const command = unquote(text.slice(mark + SHELL_MARK.length, -(NULL_STDIN.length + 1)));
  if (helper === null || command === null || !bwrap.startsWith('/') || !helper.endsWith('/apply-seccomp')) return false;
  return [true, false].some((setfcap) => wrapBwrap(command, { bwrap, helper, setfcap }) === text);
}

interface FileId {
  path: string;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

function fileId(path: string, st: Stats): FileId {
  return { path, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
}

function sameId(a: FileId | undefined, b: FileId): boolean {
  return (
    a !== undefined &&
    a.path === b.path &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs &&
    a.ino === b.ino
  );
}

interface ProbeRecord {
  bwrap: FileId;
  helper: FileId;
  /** bubblewrap's options as probed: another Latch (other options) probes again. */
  options: string;
  ok: boolean;
  why: string;
}

/** Test seams (never read from the environment): another bubblewrap path, another runtime package dir. */
type ClaudeSandboxPaths = { bwrap?: string; runtime?: string };

/** Is `p` a regular file someone may execute? */
function executable(p: string): boolean {
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

type Route = { ok: true; b: Bwrap } | { ok: false; why: string; fallback: boolean };

/**
 * bubblewrap and the pinned helper, found and checked (nothing runs): `fallback` is true when one is
 * missing (Codex's sandbox may stand in), false when the helper is not the pinned one (refused).
 */
function findRoute(paths: ClaudeSandboxPaths, env: NodeJS.ProcessEnv): Route {
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
  let bytes: Buffer;
  try {
    helper = realpathSync(join(runtime, HELPER_PATH));
    if (!statSync(helper).isFile()) return { ok: false, why: `${helper} is not a file`, fallback: true };
    bytes = readFileSync(helper);
  } catch {
    return { ok: false, why: `the seccomp helper ${join(runtime, HELPER_PATH)} is missing`, fallback: true };
  }
  const sha = nodeCrypto().createHash('sha256').update(bytes).digest('hex');
  if (sha !== HELPER_SHA256)
    return {
      ok: false,
      why: `the seccomp helper ${helper} has SHA-256 ${sha}, not the one recorded for ${RUNTIME_PACKAGE}@${RUNTIME_VERSION} (${HELPER_SHA256})`,
      fallback: false,
    };
  const root = typeof process.geteuid === 'function' && process.geteuid() === 0;
  return { ok: true, b: { bwrap, helper, setfcap: root && holdsSetfcap() } };
}

/**
 * Does the wrap run here, read-only? Once per identity of bubblewrap and the helper (and the options),
 * remembered in `$LATCH_HOME/sandbox/claude-probe.json`: `/bin/true` must run inside, and a write to a
 * file under $LATCH_HOME must fail. A stale or forged record can only make Latch use the classifier
 * alone, or run the read in a sandbox that then fails the command: neither lets a write through.
 */
function probe(latchHome: string, b: Bwrap, env: NodeJS.ProcessEnv, spawn: Spawn): { ok: boolean; why: string } {
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
    spawn(b.bwrap, args(['/bin/sh', '-c', ': > "$1"', 'sh', target]), penv);
    let wrote = false;
    try {
      lstatSync(target);
      wrote = true;
      unlinkSync(target);
    } catch {
      wrote = false;
    }
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

/** Does `p` start like an ELF executable? */
function isElf(p: string): boolean {
  let fd: number | null = null;
  try {
    fd = openSync(p, 'r');
    const head = Buffer.alloc(4);
    return readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === '\x7fELF';
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/**
 * The Codex binary that can lend its sandbox: LATCH_CODEX_BIN as given, else `codex` on the trusted
 * PATH (npm's `codex` is a JavaScript launcher: the native binary of its platform package, which
 * `codex sandbox` needs, since it re-executes itself inside bubblewrap).
 */
function findCodex(env: NodeJS.ProcessEnv): string | null {
  if (env.LATCH_CODEX_BIN) return env.LATCH_CODEX_BIN;
  for (const d of trustedPath(env.PATH, env.HOME).split(':')) {
    const p = join(d, 'codex');
    if (!executable(p)) continue;
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      continue;
    }
    if (isElf(real)) return real;
    const candidates = [join(dirname(dirname(real)), 'vendor', CODEX_TRIPLE, 'bin', 'codex')];
    try {
      const pkg = createRequire(real).resolve('@openai/codex-linux-x64/package.json');
      candidates.unshift(join(dirname(pkg), 'vendor', CODEX_TRIPLE, 'bin', 'codex'));
    } catch {
      // No platform package beside the launcher: try the launcher's own vendor directory.
    }
    for (const c of candidates) if (executable(c) && isElf(c)) return c;
  }
  return null;
}

/** Why no sandbox runs on this machine at all (the platform), or null. */
function platformWhy(): string | null {
  return process.platform === 'linux' && process.arch === 'x64'
    ? null
    : `no read-only sandbox for Claude Code on ${process.platform}/${process.arch} (bubblewrap + seccomp: Linux x64 only)`;
}

/**
 * The read-only sandbox for Claude Code's held reads, or why there is none (then the classifier alone
 * guards them). `LATCH_SANDBOX=off` turns it off. `paths` is for tests only.
 */
export function claudeReadSandbox(
  latchHome: string,
  env: NodeJS.ProcessEnv,
  spawn: Spawn,
  paths: ClaudeSandboxPaths = {},
): ReadSandbox {
  if (env.LATCH_SANDBOX === 'off') return { ok: false, why: 'LATCH_SANDBOX=off' };
  const platform = platformWhy();
  if (platform !== null) return { ok: false, why: platform };
  let why: string;
  try {
    const route = findRoute(paths, env);
    if (route.ok) {
      const p = probe(latchHome, route.b, env, spawn);
      if (p.ok) {
        const b = route.b;
        return {
          ok: true,
          wrap: (command) => wrapBwrap(command, b),
          argv: (command, e) => bwrapArgv(command, b, e),
          where: `bubblewrap (${b.bwrap}) + seccomp (${RUNTIME_PACKAGE}@${RUNTIME_VERSION} apply-seccomp)`,
        };
      }
      why = p.why;
    } else {
      if (!route.fallback) return { ok: false, why: route.why };
      why = route.why;
    }
  } catch (err) {
    return { ok: false, why: `the sandbox cannot be prepared (${(err as Error).message})` };
  }
  // bubblewrap or the helper is missing, or does not run here: Codex's sandbox, when Codex is installed.
  const bin = findCodex(env);
  if (bin === null) return { ok: false, why: `${why}; no Codex binary to lend its sandbox either` };
  const st = readOnlySandbox(latchHome, { ...env, LATCH_CODEX_BIN: bin }, spawn);
  if (!st.ok) return { ok: false, why: `${why}; Codex's sandbox: ${st.why}` };
  const sb = st.sandbox;
  return {
    ok: true,
    wrap: (command) => wrapCodex(command, sb),
    argv: (command, e) => readOnlyArgv(command, sb, withoutClaude(e)),
    where: `\`${sb.bin} sandbox\` (${why})`,
  };
}

/** What guards Claude Code's held reads on this machine, from the probes hooks remembered (runs nothing). */
export function claudeReadsReport(
  latchHome: string,
  env: NodeJS.ProcessEnv = process.env,
  paths: ClaudeSandboxPaths = {},
): ReadsReport {
  if (env.LATCH_SANDBOX === 'off')
    return {
      guard: 'classifier_only',
      detail: 'LATCH_SANDBOX=off: reads while held are guarded by the classifier only',
    };
  const platform = platformWhy();
  if (platform !== null)
    return { guard: 'classifier_only', detail: `${platform}: reads while held are guarded by the classifier only` };
  let route: Route;
  try {
    route = findRoute(paths, env);
  } catch (err) {
    route = { ok: false, why: (err as Error).message, fallback: false };
  }
  if (route.ok) {
    let rec: ProbeRecord | null = null;
    try {
      rec = JSON.parse(readFileSync(join(latchHome, 'sandbox', 'claude-probe.json'), 'utf8')) as ProbeRecord;
      const b = route.b;
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
        detail: `bubblewrap (${route.b.bwrap}) and the pinned seccomp helper are installed but not probed yet (the first held read does it)`,
      };
    if (rec.ok)
      return {
        guard: 'sandbox',
        detail: `reads while held run inside bubblewrap (${route.b.bwrap}) + seccomp (${RUNTIME_PACKAGE}@${RUNTIME_VERSION}): read-only file system, no network, no unix sockets`,
      };
    route = { ok: false, why: rec.why, fallback: true };
  }
  if (!route.fallback)
    return {
      guard: 'classifier_only',
      detail: `no read-only sandbox (${route.why}): reads while held are guarded by the classifier only`,
    };
  const bin = findCodex(env);
  if (bin === null)
    return {
      guard: 'classifier_only',
      detail: `no read-only sandbox (${route.why}; no Codex binary to lend its sandbox): reads while held are guarded by the classifier only`,
    };
  const codex = readsReport(latchHome, env);
  return { guard: codex.guard, detail: `${route.why}; Codex (${bin}) lends its sandbox: ${codex.detail}` };
}

/** Claude Code's shell snapshots: `$CLAUDE_CONFIG_DIR/shell-snapshots`, else `~/.claude/shell-snapshots`. */
function snapshotDir(env: NodeJS.ProcessEnv): string {
  const config = env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
  return join(config, 'shell-snapshots');
}

/** Empties one snapshot without following a symlink; null when done, else why not. */
function emptySnapshot(p: string): string | null {
  let st: Stats;
  try {
    st = lstatSync(p);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : `cannot be examined (${(err as Error).message})`;
  }
  if (st.isSymbolicLink()) return 'is a symbolic link';
  if (!st.isFile()) return 'is not a regular file';
  let fd: number;
  try {
    fd = openSync(p, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : `cannot be opened (${(err as Error).message})`;
  }
  try {
    const f = fstatSync(fd);
    if (!f.isFile() || f.ino !== st.ino || f.dev !== st.dev) return 'changed while it was being emptied';
    // A second link would make Latch empty another file (the agent's pick) along with it.
    if (f.nlink > 1) return `has ${f.nlink} hard links`;
    if (f.size > 0) ftruncateSync(fd, 0);
    if (fstatSync(fd).size !== 0) return 'could not be emptied';
    return null;
  } catch (err) {
    return `could not be emptied (${(err as Error).message})`;
  } finally {
    closeSync(fd);
  }
}

/**
 * Claude Code sources its shell snapshot before every Bash call, outside any wrap: every file in the
 * snapshot directory is emptied (truncated to 0 bytes, through no symlink) before a held read is
 * allowed. Null when done or when there is no such directory; else why not (the read is then denied).
 */
export function prepareClaudeHeldRead(env: NodeJS.ProcessEnv): string | null {
  const dir = snapshotDir(env);
  const problem = (why: string) =>
    `Claude Code's shell snapshots (${dir}) run before every Bash call, outside the sandbox, and ${why}`;
  try {
    const st = lstatSync(dir);
    // A link there would make Latch empty every file of the directory it names.
    if (st.isSymbolicLink()) return problem('the directory is a symbolic link');
    if (!st.isDirectory()) return problem('it is not a directory');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return problem(`it cannot be examined (${(err as Error).message})`);
  }
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    return problem(`it cannot be listed (${(err as Error).message})`);
  }
  for (const name of names) {
    const why = emptySnapshot(join(dir, name));
    if (why !== null) return problem(`${name} ${why}`);
  }
  return null;
}
