// Decides whether a Bash command string (Codex `tool_input.command`) is read-only, and whether it
// would touch Latch's own state. Never throws.
//
// This is a STRICT ALLOWLIST meant to hold against a hostile agent with a shell even when no
// kernel sandbox runs (it is then the only gate). Every simple command must be a program on the
// allowlist (CHECKS below) with arguments its check accepts; everything not understood is "not
// read-only", with a sentence the agent can act on. In short:
//
// - Characters: no NUL, CR, other C0/C1 controls, DEL, lone surrogates, invisible/bidi
//   formatting characters; other non-ASCII only inside quotes, and never in a program name or
//   an option (see words.ts).
// - Shell: no builtins that change the shell (`set`, `shopt`, `export`, `alias`, `trap`, ...), no
//   keywords, functions, subshells, `eval`/`source`/`exec`, assignments, substitutions or
//   expansions other than plain globs and `~`/`~/...`; redirections only to /dev/null (and fd
//   duplications), input from files, heredocs.
// - Programs: only the allowlist below, each with an option policy closing every file-write and
//   command-execution form known for it (GTFOBins and the manuals). Launchers and interpreters
//   (env, xargs, nice, timeout, python, perl, node, ...) are never read-only; `sh -c`/`bash -c`
//   with a script that is itself classified are.
// - git: only `git --no-pager ...` with the safety overrides git.ts spells out (see there).
// - latch: only the installed executable (ctx.latchBin, exact absolute path) with a read-only
//   subcommand; every other spelling of latch (`latch`, `./latch`, `npx latch`, `node x/latch.cjs`)
//   is `touchesLatch`.
// - Paths: every word is resolved against ctx.cwd (and `cd`), `~`, `..`, globs (expanded on the
//   file system, bounded) and symlinks (realpath); reaching the Latch home, the executable or any
//   ctx.protectedPaths entry — reading or writing — is `touchesLatch`. A recursive reader (rg,
//   grep -r, diff -r) whose directory contains a protected path is `touchesLatch` too.
//
// The parts, in src/shell/: words.ts tokenizes the command; state.ts holds the shared State, its
// findings and the small helpers; glob.ts matches glob patterns; latch-guard.ts decides what
// touches Latch (protected paths, latch invocations); checks.ts and git.ts are the per-program
// checks. This file holds the allowlist (CHECKS), walks the parsed command and exports
// classifyCommand (and re-exports the types and GIT_SAFE_CONFIG its importers use).

import { posix } from 'node:path';
import { forbiddenCharacter, parseCommandList, type Redirection, type SimpleCommand, type Word } from './words.js';
import { patternSegments } from './glob.js';
import {
  type CommandVerdict,
  type ClassifyContext,
  TRUSTED_BIN_DIRS,
  type Span,
  type State,
  short,
  normPath,
  expandTilde,
  escapeGlob,
  isAllDigits,
  startsWithDashLookalike,
  makeState,
  deny,
  verdict,
  physical,
} from './state.js';
import {
  rawTouchCheck,
  wordTouchCheck,
  cwdTouchCheck,
  matchLatchInvocation,
  scanLauncher,
  fallbackLatchScan,
  handleLatch,
} from './latch-guard.js';
import {
  type CheckCx,
  type Check,
  always,
  checkWcDu,
  checkChecksum,
  checkFind,
  checkSort,
  checkGrep,
  checkRg,
  checkDiff,
  checkTree,
  checkFile,
  checkPrintf,
  checkUniq,
  checkSed,
  checkAwk,
} from './checks.js';
import { checkGit } from './git.js';

export type { ClassifyContext, CommandVerdict } from './state.js';
export { GIT_SAFE_CONFIG } from './git.js';

const MAX_COMMAND_LENGTH = 64 * 1024;
const MAX_SHELL_DEPTH = 3;
const MAX_TRACKED_CWDS = 32;

const SAFE_OUTPUT_TARGETS: ReadonlySet<string> = new Set(['/dev/null']);

/** Programs that run another program given in their arguments: used only to spot `latch` behind them. */
const LAUNCHERS: ReadonlySet<string> = new Set([
  'env',
  'xargs',
  'timeout',
  'nohup',
  'exec',
  'command',
  'builtin',
  'sudo',
  'doas',
  'su',
  'runuser',
  'nice',
  'ionice',
  'stdbuf',
  'time',
  'watch',
  'setsid',
  'flock',
  'chroot',
  'strace',
  'ltrace',
  'unbuffer',
  'script',
  'parallel',
  'find',
  'npx',
  'npm',
  'pnpm',
  'yarn',
  'bunx',
  'bun',
  'node',
  'deno',
  'tsx',
  'ts-node',
  'bash',
  'sh',
  'dash',
  'zsh',
  'ksh',
  'fish',
  'busybox',
  'eval',
  'source',
  '.',
]);

/** Shell builtins and keywords, with the reason each is refused. */
const SHELL_BUILTINS: ReadonlySet<string> = new Set([
  'set',
  'shopt',
  'enable',
  'alias',
  'unalias',
  'trap',
  'export',
  'declare',
  'typeset',
  'readonly',
  'local',
  'unset',
  'hash',
  'eval',
  'source',
  '.',
  'exec',
  'command',
  'builtin',
  'coproc',
  'function',
  'let',
  'read',
  'readarray',
  'mapfile',
  'getopts',
  'shift',
  'umask',
  'ulimit',
  'bind',
  'complete',
  'compgen',
  'compopt',
  'history',
  'fc',
  'jobs',
  'fg',
  'bg',
  'wait',
  'disown',
  'suspend',
  'kill',
  'logout',
  'exit',
  'return',
  'break',
  'continue',
  'pushd',
  'popd',
  'dirs',
  'caller',
  'times',
  'test',
  '[',
]);
const SHELL_KEYWORDS: ReadonlySet<string> = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'for',
  'while',
  'until',
  'do',
  'done',
  'case',
  'esac',
  'select',
  'in',
  'time',
  '!',
  '[[',
  ']]',
  '{',
  '}',
]);

// ---------------------------------------------------------------------------------------------

const CHECKS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ...[
    'ls',
    'cat',
    'head',
    'tail',
    'pwd',
    'echo',
    'true',
    'false',
    'stat',
    'df',
    'which',
    'type',
    'basename',
    'dirname',
    'realpath',
    'readlink',
    'cmp',
    'nl',
    'cut',
    'tr',
    'jq',
  ].map((n): [string, Check] => [n, always]),
  ...['md5sum', 'sha1sum', 'sha224sum', 'sha256sum', 'sha384sum', 'sha512sum', 'b2sum', 'cksum'].map(
    (n): [string, Check] => [n, checkChecksum(n)],
  ),
  ['wc', checkWcDu('wc')],
  ['du', checkWcDu('du')],
  ['grep', checkGrep('grep')],
  ['egrep', checkGrep('egrep')],
  ['fgrep', checkGrep('fgrep')],
  ['diff', checkDiff],
  ['find', checkFind],
  ['sort', checkSort],
  ['rg', checkRg],
  ['tree', checkTree],
  ['file', checkFile],
  ['printf', checkPrintf],
  ['uniq', checkUniq],
  ['sed', checkSed],
  ['awk', checkAwk],
  ['git', checkGit],
]);

// ---------------------------------------------------------------------------------------------
// Walking the parsed command

function checkRedirection(st: State, r: Redirection): void {
  const t = r.target;
  const v = t.value;
  const isFd = v === '-' || isAllDigits(v) || (v.endsWith('-') && isAllDigits(v.slice(0, -1)));
  if ((r.op === '<' || r.op === '<>') && (v.startsWith('/dev/tcp/') || v.startsWith('/dev/udp/'))) {
    deny(st, `\`< ${short(v, 60)}\` opens a network connection: not while latched`);
    return;
  }
  switch (r.op) {
    case '<':
    case '<<':
    case '<<-':
    case '<<<':
      return;
    case '<&':
      if (isFd && !t.glob) return;
      deny(st, `input duplication \`<&${short(v, 30)}\` is only allowed with a descriptor number`);
      return;
    case '<>':
      deny(st, `the read-write redirection \`<> ${short(v, 60)}\` can create files; use \`< ${short(v, 60)}\``);
      return;
    case '>|':
      deny(st, `\`>| ${short(v, 60)}\` writes a file; output may only go to /dev/null or stdout`);
      return;
    case '>&':
      if (isFd && !t.glob) return;
      break;
    default:
      break;
  }
  if (!t.glob && !t.tilde && SAFE_OUTPUT_TARGETS.has(v)) return;
  deny(
    st,
    `the redirection \`${r.fd ?? ''}${r.op} ${short(v, 60)}\` writes a file; output may only go to /dev/null (or 2>&1, >&2)`,
  );
}

function isAssignment(w: Word): boolean {
  const v = w.value;
  if (v.length === 0 || !/^[A-Za-z_]/.test(v)) return false;
  let i = 1;
  while (i < v.length && /[A-Za-z0-9_]/.test(v[i]!)) i++;
  return v[i] === '=' || (v[i] === '+' && v[i + 1] === '=') || v[i] === '[';
}

function handleCd(st: State, args: readonly Word[]): void {
  const targets = args.filter((w) => w.value !== '--' && w.value !== '-L' && w.value !== '-P');
  if (targets.length > 1 || args.some((w) => w.value.startsWith('-') && !['--', '-L', '-P'].includes(w.value))) {
    deny(st, '`cd` takes one directory (and optionally -L or -P)');
    return;
  }
  const target = targets[0];
  if (target === undefined) {
    if (st.home !== null) st.pendingCwds.push(st.home);
    else st.pendingCwdUnknown = true;
    return;
  }
  if (target.glob) {
    deny(st, '`cd` with a glob is not allowed: name the directory');
    return;
  }
  const v = target.tilde ? expandTilde(target.value, st.home) : target.value;
  // `cd` is logical by default (`link/..` is `.`); `cd -P` resolves symlinks first.
  const physicalCd = args.some((w) => w.value === '-P');
  if (v.startsWith('/')) st.pendingCwds.push(physicalCd ? physical(st, '/', v) : normPath(v));
  else if (st.cwdKnown)
    st.pendingCwds.push(...st.cwds.map((c) => (physicalCd ? physical(st, c.path, v) : posix.resolve(c.path, v))));
  else st.pendingCwdUnknown = true;
}

function handleShell(st: State, name: string, args: readonly Word[], depth: number, exempt: Set<Word>): void {
  let i = 0;
  let sawC = false;
  while (i < args.length) {
    const a = args[i]!.value;
    if (a === '--login' || (/^-[a-z]+$/.test(a) && a.includes('l'))) {
      // A login shell reads ~/.profile & co, which the agent may have armed while it was mutable.
      deny(
        st,
        `\`${name} -l\` (a login shell) reads startup files the agent may have written: use \`${name} -c '<script>'\``,
      );
      scanLauncher(st, name, args);
      return;
    } else if (/^-[ceu]{1,8}$/.test(a)) {
      if (a.includes('c')) sawC = true;
      i++;
    } else {
      break;
    }
  }
  const script = args[i];
  if (!sawC || script === undefined || i !== args.length - 1) {
    deny(st, `\`${name}\` is only allowed as \`${name} -c '<script>'\` with a single script argument (options -e -u)`);
    scanLauncher(st, name, args);
    return;
  }
  if (script.glob || script.tilde) {
    deny(st, `\`${name} -c\` with an unquoted glob or ~ as the script is not allowed: quote the script`);
    scanLauncher(st, name, args);
    return;
  }
  if (depth + 1 > MAX_SHELL_DEPTH) {
    deny(st, `shells nested more than ${MAX_SHELL_DEPTH} deep are not allowed`);
    scanLauncher(st, name, args);
    return;
  }
  exempt.add(script);
  classifyScript(st, script.value, depth + 1);
}

function analyzeArgv(st: State, argv: readonly Word[], depth: number, exempt: Set<Word>): void {
  const w0 = argv[0]!;
  const args = argv.slice(1);
  const name = w0.value;
  if (w0.nonAscii) {
    deny(
      st,
      `the program name \`${short(name, 40)}\` contains a non-ASCII character (it could be a look-alike): write it in ASCII`,
    );
    return;
  }
  const inv = matchLatchInvocation(st, argv);
  if (inv !== null) {
    handleLatch(st, inv, exempt);
    return;
  }
  const base = posix.basename(name);
  if (LAUNCHERS.has(base) && base !== 'bash' && base !== 'sh') scanLauncher(st, base, args);
  if (w0.glob) {
    deny(st, `the program name \`${short(name, 40)}\` contains a glob: name the program`);
    return;
  }
  if (name.includes('/') && (w0.tilde || !TRUSTED_BIN_DIRS.has(posix.normalize(posix.dirname(name))))) {
    deny(
      st,
      `\`${short(name, 60)}\` is run by path; only programs in /bin and /usr/bin (or by bare name) may run while latched`,
    );
    return;
  }
  if (SHELL_KEYWORDS.has(name)) {
    deny(st, `the shell keyword \`${name}\` is not supported: run plain commands joined with |, &&, || or ;`);
    return;
  }
  if (SHELL_BUILTINS.has(name)) {
    deny(
      st,
      `the shell builtin \`${name}\` can change how later commands run (options, aliases, traps, variables): it is not allowed while latched`,
    );
    return;
  }
  for (const w of args) {
    if (w.nonAscii && w.value.startsWith('-')) {
      deny(
        st,
        `the option \`${short(w.value, 40)}\` contains a non-ASCII character (it could be a look-alike): write options in ASCII`,
      );
      return;
    }
    if (startsWithDashLookalike(w.value)) {
      deny(
        st,
        `the argument \`${short(w.value, 40)}\` starts with a dash look-alike (not ASCII \`-\`): write options in ASCII`,
      );
      return;
    }
  }
  if (base === 'bash' || base === 'sh') {
    handleShell(st, base, args, depth, exempt);
    return;
  }
  if (base === 'cd') {
    handleCd(st, args);
    return;
  }
  const check = CHECKS.get(base);
  if (check === undefined) {
    deny(
      st,
      `\`${short(base, 40)}\` is not on the read-only allowlist (${[...CHECKS.keys()].filter((k) => !k.endsWith('sum')).join(', ')}, sh -c, cd)`,
    );
    return;
  }
  const cx: CheckCx = { st, recursive: false, implicitCwd: false, skipsHidden: false, recursivePaths: null };
  const reason = check(args, cx);
  if (reason !== null) deny(st, reason);
  if (cx.recursive) {
    for (const w of cx.recursivePaths ?? args) wordTouchCheck(st, w, { recursive: true, skipsHidden: cx.skipsHidden });
  }
  if (cx.implicitCwd) cwdTouchCheck(st, `\`${base}\``, cx.skipsHidden);
}

function classifySimple(st: State, cmd: SimpleCommand, depth: number, spans: Span[]): void {
  for (const r of cmd.redirections) checkRedirection(st, r);
  const words = cmd.words;
  const exempt = new Set<Word>();
  if (words.length === 0) {
    deny(st, 'a redirection without a command is not allowed');
  } else {
    let k = 0;
    while (k < words.length && isAssignment(words[k]!)) {
      deny(
        st,
        `the environment assignment \`${short(words[k]!.value, 40)}\` is not allowed: it can change what a program runs`,
      );
      k++;
    }
    if (k < words.length) analyzeArgv(st, words.slice(k), depth, exempt);
  }
  for (const w of words) {
    if (exempt.has(w)) spans.push([w.start, w.end]);
    else wordTouchCheck(st, w);
  }
  for (const r of cmd.redirections) if (r.op !== '<<' && r.op !== '<<-') wordTouchCheck(st, r.target);
  if (st.pendingCwdUnknown) {
    st.cwds = [];
    st.cwdKnown = false;
    st.pendingCwdUnknown = false;
    st.pendingCwds = [];
  }
  if (st.pendingCwds.length > 0) {
    for (const d of st.pendingCwds) {
      if (st.cwds.length < MAX_TRACKED_CWDS && !st.cwds.some((c) => c.path === d)) {
        st.cwds.push({ path: d, segs: patternSegments(escapeGlob(d)).filter((x) => x.length > 0) });
      }
    }
    st.cwdKnown = true;
    st.pendingCwds = [];
  }
}

function classifyScript(st: State, text: string, depth: number): void {
  const bad = forbiddenCharacter(text);
  if (bad !== null) {
    deny(st, bad);
    rawTouchCheck(st, text, []);
    fallbackLatchScan(st, text);
    return;
  }
  const parsed = parseCommandList(text);
  if (!parsed.ok) {
    deny(st, parsed.reason);
    rawTouchCheck(st, text, []);
    fallbackLatchScan(st, text);
    return;
  }
  if (parsed.commands.length === 0) {
    deny(st, 'the command is empty');
    rawTouchCheck(st, text, []);
    return;
  }
  const spans: Span[] = [];
  for (const cmd of parsed.commands) classifySimple(st, cmd, depth, spans);
  rawTouchCheck(st, text, spans);
}

// ---------------------------------------------------------------------------------------------

/**
 * Classify a shell command string. `readOnly` is true only if every simple command is on the
 * read-only allowlist and nothing writes; `touchesLatch` is computed independently.
 */
export function classifyCommand(command: string, ctx: ClassifyContext): CommandVerdict {
  let st: State | null = null;
  try {
    st = makeState(ctx);
    if (typeof command !== 'string') {
      deny(st, 'the command is not a string');
      return verdict(st);
    }
    if (command.length > MAX_COMMAND_LENGTH) {
      deny(st, `the command is longer than ${MAX_COMMAND_LENGTH} characters`);
      rawTouchCheck(st, command, []);
      fallbackLatchScan(st, command);
      return verdict(st);
    }
    classifyScript(st, command, 0);
    return verdict(st);
  } catch {
    let touchesLatch = false;
    try {
      if (st !== null && typeof command === 'string') touchesLatch = st.needles.some((n) => command.includes(n.text));
    } catch {
      touchesLatch = false;
    }
    const reasons = ['internal error while classifying the command'];
    return { readOnly: false, touchesLatch, reasons, touchReasons: touchesLatch ? reasons : [] };
  }
}
