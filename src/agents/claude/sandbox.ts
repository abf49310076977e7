// Read-only that the kernel enforces, for Claude Code: while a session is latched or paused, the hook
// runs every Bash read Latch admits in its own sealed sandbox, bubblewrap + the pinned seccomp helper
// (src/agents/shared/bwrap.ts), and the call replays the output (src/guard/replay.ts). Without
// bubblewrap or the helper, a Codex binary (LATCH_CODEX_BIN, or `codex` on a trusted PATH) lends its own
// sandbox (src/agents/codex/sandbox.ts), unsealed; else the classifier alone guards the read, and
// `latch status` / `latch doctor` say so (claudeReadsReport).
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
  openSync,
  readdirSync,
  readSync,
  realpathSync,
} from 'node:fs';
import type { Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { isCleanShell, trustedPath } from '../../guard/read-shell.js';
import { isReplay } from '../../guard/replay.js';
import type { ReadSandbox, Spawn } from '../agent.js';
import {
  bwrapSandbox,
  CLAUDE_UNSET,
  executable,
  NULL_STDIN,
  platformWhy,
  type SandboxPaths,
  withoutClaude,
  wrapBwrap,
  type ReadsReport,
  sealedReadsReport,
} from '../shared/bwrap.js';
import { isWrapped, readOnlyArgv, readOnlySandbox, codexSandboxReport, wrapReadOnly } from '../codex/sandbox.js';

/** Where Codex's npm package keeps its native binary for Linux x64. */
const CODEX_TRIPLE = 'x86_64-unknown-linux-musl';

/** Before the Codex fallback's wrap (Codex's wrapper cannot take them): the same two variables gone. */
const CODEX_PREFIX = `\\builtin unset -v ${CLAUDE_UNSET.join(' ')}; `;
/** Where the clean read shell's own command starts (its fixed prefix never contains this). */
const SHELL_MARK = ' /bin/bash --noprofile --norc -c ';

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

/**
 * The read-only sandbox for Claude Code's held reads, or why there is none (then the classifier alone
 * guards them). `LATCH_SANDBOX=off` turns it off. `paths` is for tests only.
 */
export function claudeReadSandbox(
  latchHome: string,
  env: NodeJS.ProcessEnv,
  spawn: Spawn,
  paths: SandboxPaths = {},
): ReadSandbox {
  if (env.LATCH_SANDBOX === 'off') return { ok: false, why: 'LATCH_SANDBOX=off' };
  const platform = platformWhy();
  if (platform !== null) return { ok: false, why: platform };
  const sealed = bwrapSandbox(latchHome, env, spawn, paths);
  if (sealed.ok || !sealed.fallback) return sealed;
  const why = sealed.why;
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
    sealed: false,
    where: `\`${sb.bin} sandbox\` (${why})`,
  };
}

/** What guards Claude Code's held reads on this machine, from the probes hooks remembered (runs nothing). */
export function claudeReadsReport(
  latchHome: string,
  env: NodeJS.ProcessEnv = process.env,
  paths: SandboxPaths = {},
): ReadsReport {
  const sealed = sealedReadsReport(latchHome, env, paths);
  if ('guard' in sealed) return sealed;
  const bin = findCodex(env);
  if (bin === null)
    return {
      guard: 'classifier_only',
      detail: `no read-only sandbox (${sealed.why}; no Codex binary to lend its sandbox): reads while held are guarded by the classifier only`,
    };
  const codex = codexSandboxReport(latchHome, env);
  return { guard: codex.guard, detail: `${sealed.why}; Codex (${bin}) lends its sandbox: ${codex.detail}` };
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
