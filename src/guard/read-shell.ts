// The clean shell every read of a held session runs in, whatever the agent: no pager, no startup
// file, no program from git's config, and (outside a sandbox) a PATH without directories the agent
// could have filled. An agent's read-only sandbox (src/agents/<name>/sandbox.ts) wraps this shell;
// where there is none, the classifier alone guards it. Also Latch's own reads, run by the hook itself.
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GIT_SAFE_CONFIG } from '../shell/readonly.js';

/** The environment every held read gets: no pager, no startup files, no prompts, no optional locks. */
const READ_ENV = [
  'PAGER=cat',
  'GIT_PAGER=cat',
  'MANPAGER=cat',
  'SYSTEMD_PAGER=cat',
  'LESSSECURE=1',
  'GIT_TERMINAL_PROMPT=0',
  'GIT_OPTIONAL_LOCKS=0',
];

/**
 * git config that runs a program, switched off for a held read (GIT_CONFIG_COUNT entries win over
 * every config file): the agent may have armed any of it while it was mutable. The classifier
 * (gitEnvHardened) relies on exactly this list.
 */
function gitOverrides(): string[] {
  const out = [`GIT_CONFIG_COUNT=${GIT_SAFE_CONFIG.length}`];
  GIT_SAFE_CONFIG.forEach(([k, v], i) => {
    out.push(`GIT_CONFIG_KEY_${i}=${k}`, `GIT_CONFIG_VALUE_${i}=${v}`);
  });
  return out;
}

/** Variables that would make the shell or git read other files or run other programs. */
const UNSET = [
  'BASH_ENV',
  'ENV',
  'CDPATH',
  'GIT_CONFIG_PARAMETERS',
  'GIT_CONFIG',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_EXEC_PATH',
  'GIT_EXTERNAL_DIFF',
  'GIT_DIR',
  'GIT_WORK_TREE',
  'RIPGREP_CONFIG_PATH',
  'NODE_OPTIONS',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
];

/**
 * `env -u … <read env> bash --noprofile --norc -c <command>` as an argument vector: the read itself,
 * in a clean shell, for a process the hook spawns (no shell parses it).
 */
export function readShellArgv(command: string, path?: string): string[] {
  return [
    '/usr/bin/env',
    ...UNSET.flatMap((v) => ['-u', v]),
    ...READ_ENV,
    ...(path === undefined ? [] : [`PATH=${path}`]),
    ...gitOverrides(),
    '/bin/bash',
    '--noprofile',
    '--norc',
    '-c',
    command,
  ];
}

/** The same clean shell as shell words for a command line (the command always quoted, as one word). */
export function readShell(command: string, path?: string): string[] {
  const words = readShellArgv(command, path).slice(0, -1);
  return [...words.map((w) => (PLAIN.test(w) ? w : shellQuote(w))), shellQuote(command)];
}

/**
 * Where no sandbox runs: the same clean shell, so that no pager, startup file or program from git's
 * config runs; only the classifier stands between the command and a write.
 */
export function wrapClassifierOnly(command: string, path?: string): string {
  return ['exec', ...readShell(command, path)].join(' ');
}

/**
 * PATH for a read outside any sandbox: without the directories the agent could have filled while it
 * was mutable (under $HOME, temp directories, relative entries), so that `cat` is not a script it
 * planted in ~/.local/bin. Inside the sandbox a planted program cannot write, so PATH stays as is.
 */
export function trustedPath(path: string | undefined, home: string | undefined): string {
  const h = home && home !== '/' ? home.replace(/\/+$/, '') : null;
  const keep = (path ?? '').split(':').filter((d) => {
    if (!d.startsWith('/')) return false;
    if (h && (d === h || d.startsWith(h + '/'))) return false;
    return !/^\/(tmp|var\/tmp|dev\/shm)(\/|$)/.test(d);
  });
  return keep.length > 0 ? [...new Set(keep)].join(':') : '/usr/local/bin:/usr/bin:/bin';
}

/** Quotes one word for a POSIX shell. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Latch's read-only subcommands the hook may run on the agent's behalf while it is held. */
const LATCH_READS: ReadonlySet<string> = new Set(['status', 'brief', 'log', 'blame']);
/** A plain word: nothing a shell would expand, quote or split. */
const PLAIN = /^[A-Za-z0-9_./=:,@+-]+$/;

/** The installed files a path may name to mean this Latch: its entry, and the package's bin next to it. */
function isThisLatch(word: string, latchEntry: string): boolean {
  if (word === latchEntry) return true;
  if (!word.startsWith('/')) return false;
  const bin = join(dirname(dirname(latchEntry)), 'bin', 'latch.cjs');
  if (word === bin) return true;
  try {
    const real = realpathSync(word);
    return real === realpathSync(latchEntry) || real === realpathSync(bin);
  } catch {
    return false;
  }
}

/**
 * The arguments of `command` when it is exactly one call of this very Latch with a read subcommand and
 * plain words only; else null. Spellings: `latch`, the installed `latch.cjs` or the package's
 * `bin/latch.cjs` (or any absolute path that resolves to one of them), each alone or after `node`.
 * The hook runs the read itself (its own node, no shell, no PATH lookup), so `latch` means this Latch
 * whatever the agent's PATH holds. The classifier decides whether the arguments are a read.
 */
export function latchReadArgs(command: string, latchEntry: string): string[] | null {
  const words = command.trim().split(/[ \t]+/);
  if (words.some((w) => !PLAIN.test(w))) return null;
  let i = 0;
  if (words[0] === 'node' || words[0] === process.execPath) i = 1;
  const prog = words[i];
  if (prog === undefined || !((i === 0 && prog === 'latch') || isThisLatch(prog, latchEntry))) return null;
  const args = words.slice(i + 1);
  return args.length > 0 && LATCH_READS.has(args[0]!) ? args : null;
}

/** Is `text` the classifier-only clean shell (wrapClassifierOnly)? */
export function isCleanShell(text: string): boolean {
  return text.startsWith('exec /usr/bin/env -u BASH_ENV ');
}
