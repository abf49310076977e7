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
//   an option (see shell-words.ts).
// - Shell: no builtins that change the shell (`set`, `shopt`, `export`, `alias`, `trap`, ...), no
//   keywords, functions, subshells, `eval`/`source`/`exec`, assignments, substitutions or
//   expansions other than plain globs and `~`/`~/...`; redirections only to /dev/null (and fd
//   duplications), input from files, heredocs.
// - Programs: only the allowlist below, each with an option policy closing every file-write and
//   command-execution form known for it (GTFOBins and the manuals). Launchers and interpreters
//   (env, xargs, nice, timeout, python, perl, node, ...) are never read-only; `sh -c`/`bash -c`
//   with a script that is itself classified are.
// - git: only `git --no-pager ...` with the safety overrides of GIT_SAFE_PREFIX (see there).
// - latch: only the installed executable (ctx.latchBin, exact absolute path) with a read-only
//   subcommand; every other spelling of latch (`latch`, `./latch`, `npx latch`, `node x/latch.cjs`)
//   is `touchesLatch`.
// - Paths: every word is resolved against ctx.cwd (and `cd`), `~`, `..`, globs (expanded on the
//   file system, bounded) and symlinks (realpath); reaching the Latch home, the executable or any
//   ctx.protectedPaths entry — reading or writing — is `touchesLatch`. A recursive reader (rg,
//   grep -r, diff -r) whose directory contains a protected path is `touchesLatch` too.

import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { forbiddenCharacter, parseCommandList, type Redirection, type SimpleCommand, type Word } from './words.js';

export interface CommandVerdict {
  /** Every part is on the read-only allowlist and nothing writes. */
  readOnly: boolean;
  /** Would change (or read) Latch's own state: always denied, latched or not. */
  touchesLatch: boolean;
  /** Human-readable reasons for every "not read-only" and "touches Latch" finding. */
  reasons: string[];
  /** The "touches Latch" findings alone (what a denial in any state names). */
  touchReasons: string[];
}

export interface ClassifyContext {
  /** Latch's state directory (absolute). */
  latchHome: string;
  /**
   * Absolute path of the installed Latch executable. `latch` runs read-only only when argv[0]
   * is exactly this path (or `node <this path>` when it is a .cjs/.js/.mjs file); without it
   * every latch invocation is `touchesLatch`.
   */
  latchBin?: string;
  /** Home directory used for `~` expansion; defaults to os.homedir(). */
  home?: string;
  /**
   * The working directory the command runs in (the payload's `cwd`, absolute). Relative paths
   * are resolved against it; without it a relative path with `..` is not read-only, and git
   * subcommands that read the work tree are not read-only.
   */
  cwd?: string;
  /**
   * More paths the agent may neither read nor write (the Codex home's hooks.json and config.toml,
   * a project's `.codex/`, Latch's install directory, shell startup files...). Reaching one is
   * `touchesLatch`; `reason` names it in the message ("the Codex hook registration").
   */
  protectedPaths?: ReadonlyArray<{ path: string; reason: string }>;
  /**
   * The command will run with GIT_SAFE_ENV (src/agents/codex/sandbox.ts: GIT_OPTIONAL_LOCKS=0 and, through
   * GIT_CONFIG_COUNT, every `-c` switch below): git then needs only `--no-pager` and, where a diff is
   * produced, `--no-ext-diff --no-textconv` right after the subcommand.
   */
  gitEnvHardened?: boolean;
}

/**
 * What a held read's environment sets for git (src/agents/codex/sandbox.ts applies it; GIT_CONFIG_COUNT
 * entries win over every config file): the same switches the full spelling spells out with -c.
 */
export const GIT_SAFE_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['gpg.program', '/dev/null'],
  ['gpg.ssh.program', '/dev/null'],
  ['gpg.x509.program', '/dev/null'],
  ['log.showSignature', 'false'],
  ['diff.autoRefreshIndex', 'false'],
  ['core.pager', 'cat'],
  ...['status', 'diff', 'log', 'show', 'branch', 'blame', 'grep'].map((c): readonly [string, string] => [`pager.${c}`, 'false']),
];

const MAX_COMMAND_LENGTH = 64 * 1024;
const MAX_SHELL_DEPTH = 3;
const MAX_TRACKED_CWDS = 32;
/** File-system lookups (realpath, readdir, config reads) allowed per classification. */
const FS_BUDGET = 4000;

/** Absolute program paths accepted for allowlisted programs (not /usr/local/bin: often user-writable). */
const TRUSTED_BIN_DIRS: ReadonlySet<string> = new Set(['/bin', '/usr/bin']);
const SAFE_OUTPUT_TARGETS: ReadonlySet<string> = new Set(['/dev/null']);

/** Programs that run another program given in their arguments: used only to spot `latch` behind them. */
const LAUNCHERS: ReadonlySet<string> = new Set([
  'env', 'xargs', 'timeout', 'nohup', 'exec', 'command', 'builtin', 'sudo', 'doas', 'su', 'runuser',
  'nice', 'ionice', 'stdbuf', 'time', 'watch', 'setsid', 'flock', 'chroot', 'strace', 'ltrace',
  'unbuffer', 'script', 'parallel', 'find', 'npx', 'npm', 'pnpm', 'yarn', 'bunx', 'bun', 'node',
  'deno', 'tsx', 'ts-node', 'bash', 'sh', 'dash', 'zsh', 'ksh', 'fish', 'busybox', 'eval', 'source', '.',
]);

/** Shell builtins and keywords, with the reason each is refused. */
const SHELL_BUILTINS: ReadonlySet<string> = new Set([
  'set', 'shopt', 'enable', 'alias', 'unalias', 'trap', 'export', 'declare', 'typeset', 'readonly',
  'local', 'unset', 'hash', 'eval', 'source', '.', 'exec', 'command', 'builtin', 'coproc', 'function',
  'let', 'read', 'readarray', 'mapfile', 'getopts', 'shift', 'umask', 'ulimit', 'bind', 'complete',
  'compgen', 'compopt', 'history', 'fc', 'jobs', 'fg', 'bg', 'wait', 'disown', 'suspend', 'kill',
  'logout', 'exit', 'return', 'break', 'continue', 'pushd', 'popd', 'dirs', 'caller', 'times', 'test', '[',
]);
const SHELL_KEYWORDS: ReadonlySet<string> = new Set([
  'if', 'then', 'else', 'elif', 'fi', 'for', 'while', 'until', 'do', 'done', 'case', 'esac', 'select',
  'in', 'time', '!', '[[', ']]', '{', '}',
]);

/** Latch subcommands that change state; used when the command could not be parsed. */
const LATCH_MUTATING_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'verify', 'resume', 'setup', 'uninstall', 'exec', 'hook', 'demo', 'doctor', 'watch', '__watch', 'report', 'export',
]);

type Span = [number, number];

interface Target {
  path: string;
  /** The path split into glob-pattern segments. */
  segs: string[];
  /** The path after symlink resolution (null: same as path). */
  real: string | null;
  reason: string;
}

interface Cwd {
  path: string;
  /** The path escaped and split into glob-pattern segments. */
  segs: string[];
}

interface State {
  home: string | null;
  latchHome: string | null;
  latchBin: string | null;
  /** Plain-text needles whose presence in the raw command means "touches Latch". */
  needles: Array<{ text: string; reason: string }>;
  /** Latch's own paths and the protected paths, for the word-level checks. */
  targets: Target[];
  /** Absolute directories the commands may be running in (ctx.cwd, then learned from `cd`). */
  cwds: Cwd[];
  /** False when no working directory is known (no ctx.cwd and no `cd /abs`). */
  cwdKnown: boolean;
  gitEnvHardened: boolean;
  pendingCwds: string[];
  pendingCwdUnknown: boolean;
  deny: string[];
  touch: string[];
  fsBudget: number;
  realCache: Map<string, string>;
  /** Paths (after resolution) known not to exist. */
  missing: Set<string>;
  /** dev:ino of the protected files (and of the files directly inside a protected directory), built on first need. */
  protectedInodes: Map<string, Target> | null;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function short(s: string, max = 80): string {
  const oneLine = s.replace(/\s+/g, ' ');
  return oneLine.length > max ? oneLine.slice(0, max - 1) + '…' : oneLine;
}

function normPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function expandTilde(v: string, home: string | null): string {
  if (home === null) return v;
  if (v === '~') return home;
  if (v.startsWith('~/')) return home + v.slice(1);
  return v;
}

function isInside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === '/' ? '/' : dir + '/');
}

function escapeGlob(s: string): string {
  let out = '';
  for (const ch of s) out += '*?[]\\'.includes(ch) ? '\\' + ch : ch;
  return out;
}

function isAllDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (const ch of s) if (ch < '0' || ch > '9') return false;
  return true;
}

/** `--name=value` → `name`; anything that is not a long option → null. */
function longName(a: string): string | null {
  if (!a.startsWith('--') || a.length === 2) return null;
  const eq = a.indexOf('=');
  return eq < 0 ? a.slice(2) : a.slice(2, eq);
}

/** True if `a` is one of the long options `names`, or an abbreviation of one (getopt_long style). */
function isLongOption(a: string, names: readonly string[]): boolean {
  const n = longName(a);
  if (n === null || n.length === 0) return false;
  return names.some((x) => x === n || x.startsWith(n));
}

/**
 * True if the short-option cluster `a` (e.g. `-uo`) contains one of `letters` as an option
 * letter. Scanning stops at the first letter that takes an argument (the rest is that argument).
 */
function shortClusterHas(a: string, letters: string, takesArgument: string): boolean {
  if (!a.startsWith('-') || a.startsWith('--') || a.length < 2) return false;
  for (let i = 1; i < a.length; i++) {
    const ch = a[i]!;
    if (letters.includes(ch)) return true;
    if (takesArgument.includes(ch)) return false;
  }
  return false;
}

/** Words before a `--` end-of-options marker. */
function optionArea(args: readonly Word[]): Word[] {
  const out: Word[] = [];
  for (const w of args) {
    if (w.value === '--') break;
    out.push(w);
  }
  return out;
}

/** An unquoted glob that could expand to a file name starting with `-` (option injection). */
function mayExpandToOption(w: Word): boolean {
  if (!w.glob) return false;
  const c = w.pattern[0];
  return c === '*' || c === '?' || c === '[' || c === '-';
}

function globOptionReason(cmd: string, w: Word): string {
  return `the glob \`${short(w.value)}\` could expand to a file name that \`${cmd}\` reads as an option: write ./${short(w.value)} instead`;
}

/** Characters that look like an ASCII hyphen-minus. */
function startsWithDashLookalike(v: string): boolean {
  const c = v.charCodeAt(0);
  return (c >= 0x2010 && c <= 0x2015) || c === 0x2212 || c === 0xfe58 || c === 0xfe63 || c === 0xff0d || c === 0x2043 || c === 0x2e3a || c === 0x2e3b;
}

// ---------------------------------------------------------------------------------------------
// Glob matching against protected paths (for `cat ~/.local/state/lat*/latch.db`)

type GlobItem = { k: 'lit'; c: string } | { k: 'any' } | { k: 'star' } | { k: 'set'; neg: boolean; chars: string; ranges: Array<[string, string]> };

function setMatches(it: { neg: boolean; chars: string; ranges: Array<[string, string]> }, ch: string): boolean {
  const inSet = it.chars.includes(ch) || it.ranges.some(([a, b]) => ch >= a && ch <= b);
  return it.neg ? !inSet : inSet;
}

function compileSegment(pat: string): GlobItem[] {
  const items: GlobItem[] = [];
  const lastClose = pat.lastIndexOf(']');
  for (let i = 0; i < pat.length; i++) {
    const ch = pat[i]!;
    if (ch === '\\' && i + 1 < pat.length) {
      items.push({ k: 'lit', c: pat[i + 1]! });
      i++;
    } else if (ch === '*') {
      if (items.length === 0 || items[items.length - 1]!.k !== 'star') items.push({ k: 'star' });
    } else if (ch === '?') {
      items.push({ k: 'any' });
    } else if (ch === '[' && i < lastClose) {
      // A bracket expression matches one character: its set, or "any" when it uses a character
      // class or an equivalence class (over-approximation).
      let j = i + 1;
      const neg = pat[j] === '!' || pat[j] === '^';
      if (neg) j++;
      let chars = '';
      const ranges: Array<[string, string]> = [];
      let vague = false;
      let first = true;
      let closed = false;
      while (j < pat.length) {
        let c = pat[j]!;
        if (c === ']' && !first) {
          closed = true;
          break;
        }
        first = false;
        if (c === '[' && (pat[j + 1] === ':' || pat[j + 1] === '=' || pat[j + 1] === '.')) vague = true;
        if (c === '\\' && j + 1 < pat.length) {
          j++;
          c = pat[j]!;
        }
        if (pat[j + 1] === '-' && pat[j + 2] !== undefined && pat[j + 2] !== ']') {
          let hi = pat[j + 2]!;
          let skip = 2;
          if (hi === '\\' && pat[j + 3] !== undefined) {
            hi = pat[j + 3]!;
            skip = 3;
          }
          ranges.push([c, hi]);
          j += skip + 1;
          continue;
        }
        chars += c;
        j++;
      }
      if (closed) {
        items.push(vague ? { k: 'any' } : { k: 'set', neg, chars, ranges });
        i = j;
      } else {
        items.push({ k: 'lit', c: '[' });
      }
    } else {
      items.push({ k: 'lit', c: ch });
    }
  }
  return items;
}

/** Wildcard match with single-star backtracking: O(len(pattern) * len(text)), no regex. */
function segmentMatches(pat: string, text: string): boolean {
  const items = compileSegment(pat);
  let pi = 0;
  let si = 0;
  let starPi = -1;
  let starSi = 0;
  while (si < text.length) {
    const it = items[pi];
    if (it !== undefined && (it.k === 'any' || (it.k === 'lit' && it.c === text[si]) || (it.k === 'set' && setMatches(it, text[si]!)))) {
      pi++;
      si++;
    } else if (it !== undefined && it.k === 'star') {
      starPi = pi++;
      starSi = si;
    } else if (starPi >= 0) {
      pi = starPi + 1;
      si = ++starSi;
    } else {
      return false;
    }
  }
  while (pi < items.length && items[pi]!.k === 'star') pi++;
  return pi === items.length;
}

/** Split a glob pattern into path segments (escapes kept). */
function patternSegments(p: string): string[] {
  const segs: string[] = [];
  let cur = '';
  for (let i = 0; i < p.length; i++) {
    const ch = p[i]!;
    if (ch === '\\' && i + 1 < p.length) {
      cur += ch + p[i + 1]!;
      i++;
    } else if (ch === '/') {
      segs.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  segs.push(cur);
  return segs;
}

/** Apply `.`, `..` and empty segments of `rel` on top of `base` (both already split). */
function resolveSegments(base: readonly string[], rel: readonly string[]): string[] {
  const out = [...base];
  for (const s of rel) {
    if (s === '' || s === '.') continue;
    if (s === '..') out.pop();
    else out.push(s);
  }
  return out;
}

/** Could the glob pattern (split, absolute) match the target path (split) or something inside it? */
function globReaches(segs: readonly string[], tsegs: readonly string[]): boolean {
  if (segs.length < tsegs.length) return false;
  for (let i = 0; i < tsegs.length; i++) if (!segmentMatches(segs[i]!, tsegs[i]!)) return false;
  return true;
}

/** A pattern segment without unescaped glob characters, unescaped; null if it is a glob. */
function literalSegment(seg: string): string | null {
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    const ch = seg[i]!;
    if (ch === '\\' && i + 1 < seg.length) {
      out += seg[i + 1]!;
      i++;
    } else if (ch === '*' || ch === '?' || ch === '[') {
      return null;
    } else {
      out += ch;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// State and findings

function makeState(ctx: ClassifyContext | undefined): State {
  let home: string | null = null;
  try {
    const h = typeof ctx?.home === 'string' && ctx.home.length > 0 ? ctx.home : homedir();
    home = h.startsWith('/') ? normPath(h) : null;
  } catch {
    home = null;
  }
  const lh = typeof ctx?.latchHome === 'string' && ctx.latchHome.length > 0 ? normPath(expandTilde(ctx.latchHome, home)) : null;
  const lbRaw = typeof ctx?.latchBin === 'string' && ctx.latchBin.length > 0 ? normPath(expandTilde(ctx.latchBin, home)) : null;
  const lb = lbRaw !== null && lbRaw.startsWith('/') ? lbRaw : null;
  const st: State = {
    home,
    latchHome: lh,
    latchBin: lb,
    needles: [
      { text: 'LATCH_HOME=', reason: 'the command sets LATCH_HOME, the variable naming the Latch home directory; the agent may not use it' },
      { text: '$LATCH_HOME', reason: 'the command mentions $LATCH_HOME, the Latch home directory; the agent may neither read nor change it' },
      { text: '${LATCH_HOME', reason: 'the command mentions ${LATCH_HOME}, the Latch home directory; the agent may neither read nor change it' },
    ],
    targets: [],
    cwds: [],
    cwdKnown: false,
    gitEnvHardened: ctx?.gitEnvHardened === true,
    pendingCwds: [],
    pendingCwdUnknown: false,
    deny: [],
    touch: [],
    fsBudget: FS_BUDGET,
    realCache: new Map(),
    missing: new Set(),
    protectedInodes: null,
  };
  const addPath = (p: string, what: string): void => {
    const reason = `the command mentions ${p} (${what}), which the agent may neither read nor change`;
    st.needles.push({ text: p, reason });
    if (home !== null && home !== '/' && p.startsWith(home + '/')) {
      const rest = p.slice(home.length);
      st.needles.push({ text: '~' + rest, reason }, { text: '$HOME' + rest, reason }, { text: '${HOME}' + rest, reason });
    }
  };
  const addTarget = (path: string, reason: string): void => {
    const real = realish(st, path);
    st.targets.push({ path, segs: path.split('/').filter((x) => x.length > 0), real: real !== path ? real : null, reason });
  };
  if (lh !== null) {
    addPath(lh, 'the Latch home directory');
    addTarget(lh, `it reaches the Latch home directory ${lh}, which the agent may neither read nor change`);
    if (lh.endsWith('/latch')) {
      // The default home is ${XDG_STATE_HOME:-~/.local/state}/latch.
      const reason = `the command mentions the Latch home directory ${lh}, which the agent may neither read nor change`;
      for (const text of ['XDG_STATE_HOME/latch', 'XDG_STATE_HOME}/latch', '/.local/state}/latch']) st.needles.push({ text, reason });
    }
  }
  if (lb !== null) {
    addPath(lb, 'the Latch executable');
    addTarget(lb, `it reaches the Latch executable ${lb}, which the agent may neither read nor change (it may only run it, as \`${lb} status\` and the other read forms)`);
  }
  if (Array.isArray(ctx?.protectedPaths)) {
    for (const pp of ctx.protectedPaths) {
      if (typeof pp?.path !== 'string' || pp.path.length === 0) continue;
      const p = normPath(expandTilde(pp.path, home));
      if (!p.startsWith('/')) continue;
      const what = typeof pp.reason === 'string' && pp.reason.length > 0 ? pp.reason : 'a path protected by Latch';
      addPath(p, what);
      addTarget(p, `it reaches ${p} (${what}), which the agent may neither read nor change`);
    }
  }
  const cwd = typeof ctx?.cwd === 'string' && ctx.cwd.startsWith('/') ? normPath(ctx.cwd) : null;
  if (cwd !== null) {
    st.cwds.push({ path: cwd, segs: patternSegments(escapeGlob(cwd)).filter((x) => x.length > 0) });
    st.cwdKnown = true;
  }
  return st;
}

function deny(st: State, reason: string): void {
  st.deny.push(reason);
}

function touch(st: State, reason: string): void {
  st.touch.push(reason);
}

function verdict(st: State): CommandVerdict {
  const reasons: string[] = [];
  const seen = new Set<string>();
  for (const r of [...st.deny, ...st.touch]) {
    if (!seen.has(r)) {
      seen.add(r);
      reasons.push(r);
    }
  }
  return { readOnly: st.deny.length === 0, touchesLatch: st.touch.length > 0, reasons, touchReasons: [...new Set(st.touch)] };
}

function spend(st: State): boolean {
  if (st.fsBudget <= 0) {
    deny(st, 'the command names too many paths to check; split it into smaller commands');
    return false;
  }
  st.fsBudget--;
  return true;
}

/**
 * The path with every symlink resolved, as far as it exists (a missing tail is appended as is).
 * One lstat per path component not seen before in this classification (directories are cached),
 * realpath only at a symlink. Never throws.
 */
function realish(st: State, p: string, depth = 0): string {
  if (p === '/' || p.length === 0 || !p.startsWith('/')) return p;
  const hit = st.realCache.get(p);
  if (hit !== undefined) return hit;
  const parent = realish(st, posix.dirname(p), depth);
  const name = posix.basename(p);
  let out = parent === '/' ? '/' + name : parent + '/' + name;
  if (!st.missing.has(parent) && depth < 40 && spend(st)) {
    let kind: 'missing' | 'link' | 'other' = 'missing';
    try {
      const s = lstatSync(out, { throwIfNoEntry: false });
      kind = s === undefined ? 'missing' : s.isSymbolicLink() ? 'link' : 'other';
    } catch {
      kind = 'missing';
    }
    if (kind === 'missing') st.missing.add(out);
    else if (kind === 'link') {
      try {
        out = realpathSync.native(out);
      } catch {
        // A dangling link: follow its text lexically.
        try {
          out = realish(st, normPath(posix.resolve(parent, readlinkSync(out))), depth + 1);
        } catch {
          // keep `out`
        }
      }
    }
  } else {
    st.missing.add(out);
  }
  st.realCache.set(p, out);
  return out;
}

/** Raw-text check, ignoring the spans that are exempt (an allowed latch program path, an inner script). */
function rawTouchCheck(st: State, text: string, exempt: readonly Span[]): void {
  let t = text;
  if (exempt.length > 0) {
    const spans = [...exempt].sort((a, b) => a[0] - b[0]);
    let out = '';
    let pos = 0;
    for (const [s, e] of spans) {
      if (s < pos) continue;
      out += t.slice(pos, s) + ' ';
      pos = e;
    }
    t = out + t.slice(pos);
  }
  for (const n of st.needles) if (t.includes(n.text)) touch(st, n.reason);
}

/** Does the absolute path p reach target t (inside it; or, for recursive readers, an ancestor of it)? */
function reaches(st: State, p: string, t: Target, recursive: boolean, skipsHidden = false): boolean {
  const below = (dir: string, target: string): boolean => {
    if (!isInside(target, dir)) return false;
    if (!skipsHidden) return true;
    const rest = target.slice(dir === '/' ? 1 : dir.length + 1);
    return !rest.split('/').some((x) => x.startsWith('.'));
  };
  if (isInside(p, t.path) || (recursive && below(p, t.path))) return true;
  const r = realish(st, p);
  if (isInside(r, t.path) || (recursive && below(r, t.path))) return true;
  if (t.real !== null && (isInside(r, t.real) || (recursive && below(r, t.real)))) return true;
  return false;
}

/**
 * `rel` resolved physically from `base`, the way the kernel does: each component's symlink is
 * followed before a later `..` applies (`link/../x` is the link target's parent's x, not ./x).
 */
function physical(st: State, base: string, rel: string): string {
  let cur = rel.startsWith('/') ? '/' : realish(st, base);
  for (const comp of rel.split('/')) {
    if (comp === '' || comp === '.') continue;
    if (comp === '..') cur = posix.dirname(cur);
    else cur = realish(st, cur === '/' ? '/' + comp : cur + '/' + comp);
  }
  return cur;
}

/** Does the physical (already resolved) path r reach target t? */
function reachesReal(r: string, t: Target, recursive: boolean, skipsHidden: boolean): boolean {
  const below = (dir: string, target: string): boolean => {
    if (!isInside(target, dir)) return false;
    if (!skipsHidden) return true;
    const rest = target.slice(dir === '/' ? 1 : dir.length + 1);
    return !rest.split('/').some((x) => x.startsWith('.'));
  };
  if (isInside(r, t.path) || (recursive && below(r, t.path))) return true;
  return t.real !== null && (isInside(r, t.real) || (recursive && below(r, t.real)));
}

/**
 * Expand a glob pattern (split into segments, `..` kept) from the given directories on the file
 * system, physically (`..` after a symlink goes to the target's parent), bounded by the budget;
 * null when the budget ran out.
 */
function expandGlob(st: State, starts: readonly string[], segs: readonly string[]): string[] | null {
  let cur: string[] = [...starts];
  for (const seg of segs) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      cur = cur.map((d) => posix.dirname(realish(st, d)));
      continue;
    }
    const lit = literalSegment(seg);
    const next: string[] = [];
    for (const dir of cur) {
      if (lit !== null) {
        next.push(dir === '/' ? '/' + lit : dir + '/' + lit);
        continue;
      }
      if (!spend(st)) return null;
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        names = [];
      }
      // As bash (without dotglob): a name starting with `.` matches only a pattern starting with `.`,
      // and a pattern starting with `.` also matches `.` and `..`.
      const dotPattern = seg.startsWith('.') || seg.startsWith('\\.');
      if (dotPattern) names.push('.', '..');
      for (const name of names) {
        if (name.startsWith('.') && !dotPattern) continue;
        if (segmentMatches(seg, name)) {
          next.push(dir === '/' ? '/' + name : dir + '/' + name);
          if (next.length > 2000) return null;
        }
      }
    }
    cur = next;
    if (cur.length === 0) break;
  }
  return cur;
}

interface PathCheckOptions {
  /** The program reads directories recursively: an ancestor of a protected path counts. */
  recursive?: boolean;
  /** The recursive reader skips hidden entries (rg without --hidden/-u): only paths without a `.name` component below the directory count. */
  skipsHidden?: boolean;
}

/**
 * `/proc/self/cwd/x` is the command's working directory, not the classifier's; `/proc/.../root`
 * is `/`; descriptors (`/proc/.../fd/N`, `/dev/fd/N` above 2) cannot be resolved: null.
 */
function procRewrite(st: State, c: string): string | null {
  if (c.startsWith('/dev/fd/') || c === '/dev/fd') {
    const n = c.slice('/dev/fd/'.length);
    return n === '0' || n === '1' || n === '2' ? c : null;
  }
  if (!c.startsWith('/proc/')) return c;
  const parts = normPath(c).split('/');
  // ['', 'proc', pid, what, ...rest]
  const what = parts[3];
  if (what === undefined) return c;
  const rest = parts.slice(4).join('/');
  const pid = parts[2];
  if (what === 'cwd') {
    if ((pid !== 'self' && pid !== 'thread-self') || !st.cwdKnown || st.cwds.length !== 1) return null;
    return rest.length > 0 ? `${st.cwds[0]!.path}/${rest}` : st.cwds[0]!.path;
  }
  if (what === 'root') return '/' + rest;
  if (what === 'fd' || what === 'map_files' || what === 'fdinfo' || what === 'exe' || what === 'task') return null;
  return c;
}

/**
 * A hard link to a protected file has another name: `ln ~/.local/state/latch/latch.db x` made while
 * mutable, then `cat x`. A regular file with more than one link is compared by device and inode with
 * the protected files (and the files directly inside a protected directory).
 */
function hardLinkTarget(st: State, path: string): Target | null {
  let s;
  try {
    s = statSync(path);
  } catch {
    return null;
  }
  if (!s.isFile() || s.nlink < 2) return null;
  if (st.protectedInodes === null) {
    const m = new Map<string, Target>();
    const add = (p: string, t: Target): void => {
      try {
        const x = statSync(p);
        if (x.isFile()) m.set(`${x.dev}:${x.ino}`, t);
        else if (x.isDirectory()) {
          for (const name of readdirSync(p).slice(0, 256)) {
            try {
              const y = statSync(`${p}/${name}`);
              if (y.isFile()) m.set(`${y.dev}:${y.ino}`, t);
            } catch {
              // gone meanwhile
            }
          }
        }
      } catch {
        // absent: nothing to link to
      }
    };
    for (const t of st.targets) add(t.path, t);
    st.protectedInodes = m;
  }
  return st.protectedInodes.get(`${s.dev}:${s.ino}`) ?? null;
}

/** Word-level check: the dequoted word (after `~`, `..`, `cd`, globs and symlinks) reaches a protected path. */
function wordTouchCheck(st: State, w: Word, opts: PathCheckOptions = {}): void {
  const targets = st.targets;
  if (targets.length === 0) return;
  const recursive = opts.recursive === true;

  const value = w.tilde ? expandTilde(w.value, st.home) : w.value;
  // An option word (`-la`, `--stat`) is not a path unless it carries one (`-f../x`, `--file=x`).
  const optionLike = value.startsWith('-') && !value.includes('/') && !value.includes('=');
  const candidates = optionLike ? [] : [value];
  const eq = value.indexOf('=');
  if (eq >= 0) candidates.push(expandTilde(value.slice(eq + 1), st.home));
  // An option with its value attached: `-f../x`, `-C/dir`.
  if (value.startsWith('-') && !value.startsWith('--') && value.length > 2) candidates.push(expandTilde(value.slice(2), st.home));

  const hits = new Set<Target>();
  for (const c of candidates) {
    if (c.length === 0) continue;
    let abs: string[];
    if (c.startsWith('/')) abs = [normPath(c)];
    else if (st.cwdKnown) abs = st.cwds.map((cwd) => posix.resolve(cwd.path, c));
    else {
      abs = [];
      if (c === '..' || c.startsWith('../') || c.includes('/../') || c.endsWith('/..')) {
        deny(st, `the relative path \`${short(c, 60)}\` cannot be checked without the working directory: use an absolute path`);
      }
    }
    // `/proc/self/cwd/../x` is resolved by the kernel from the cwd, not lexically.
    if (c.startsWith('/proc/') && c.split('/').includes('..')) {
      deny(st, `\`${short(c, 60)}\` climbs out of a /proc path with \`..\`, which cannot be checked: name the file itself`);
      continue;
    }
    const rewritten: string[] = [];
    for (const a of abs) {
      const r = procRewrite(st, a);
      if (r === null) deny(st, `\`${short(c, 60)}\` names a file through a process (/proc, /dev/fd), which cannot be checked: name the file itself`);
      else rewritten.push(r);
    }
    abs = rewritten;
    // The kernel's reading of the same text (symlinks before `..`), when it is not a /proc path.
    const phys: string[] = [];
    if (abs.length > 0 && !abs.some((a) => a.startsWith('/proc/') || a.startsWith('/dev/fd'))) {
      if (c.startsWith('/')) phys.push(physical(st, '/', c));
      else if (st.cwdKnown) for (const cwd of st.cwds) phys.push(physical(st, cwd.path, c));
    }
    for (const t of targets) {
      if (hits.has(t)) continue;
      if (c.includes(t.path)) hits.add(t);
      else if (abs.some((p) => reaches(st, p, t, recursive, opts.skipsHidden === true))) hits.add(t);
      else if (phys.some((p) => reachesReal(p, t, recursive, opts.skipsHidden === true))) hits.add(t);
    }
    for (const p of [...abs, ...phys]) {
      const t = hardLinkTarget(st, p);
      if (t) hits.add(t);
    }
  }
  const patterns: string[] = [];
  if (w.glob) {
    let pattern = w.pattern;
    if (w.tilde && st.home !== null) pattern = escapeGlob(st.home) + pattern.slice(1);
    patterns.push(pattern);
    // `if=~/x*`: bash expands `~` after the `=` of a word that looks like an assignment.
    const eqp = w.pattern.indexOf('=');
    if (eqp > 0 && !w.pattern.slice(0, eqp).includes('\\')) {
      let after = w.pattern.slice(eqp + 1);
      if ((after === '~' || after.startsWith('~/')) && st.home !== null) after = escapeGlob(st.home) + after.slice(1);
      patterns.push(after);
    }
  }
  for (const pattern of patterns) {
    const rel = patternSegments(pattern);
    const bases: string[][] = pattern.startsWith('/') ? [[]] : st.cwds.map((cwd) => cwd.segs);
    for (const base of bases) {
      const segs = resolveSegments(base, rel);
      if (segs[0] === 'proc' || (segs[0] === 'dev' && segs[1] !== undefined && segs[1] !== 'null' && literalSegment(segs[1]) === null) || (segs[0] === 'dev' && segs[1] === 'fd')) {
        deny(st, `the glob \`${short(w.value, 60)}\` reaches /proc or /dev, which cannot be checked: name the file`);
        continue;
      }
      for (const t of targets) if (!hits.has(t) && (globReaches(segs, t.segs) || (recursive && globReaches(t.segs, segs)))) hits.add(t);
      const matches = expandGlob(st, [pattern.startsWith('/') ? '/' : '/' + base.map((x) => literalSegment(x) ?? x).join('/')], rel);
      if (matches === null) {
        deny(st, `the glob \`${short(w.value, 60)}\` matches too many files to check: name the files`);
        continue;
      }
      for (const m of matches) {
        for (const t of targets) if (!hits.has(t) && reaches(st, m, t, recursive, opts.skipsHidden === true)) hits.add(t);
        const linked = hardLinkTarget(st, m);
        if (linked) hits.add(linked);
      }
    }
  }
  for (const t of hits) touch(st, `\`${short(w.value, 60)}\`${recursive ? ' (searched recursively)' : ''}: ${t.reason}`);
}

/** The implicit `.` of a recursive reader without a path argument. */
function cwdTouchCheck(st: State, what: string, skipsHidden: boolean): void {
  for (const cwd of st.cwds) {
    for (const t of st.targets) {
      if (reaches(st, cwd.path, t, true, skipsHidden)) touch(st, `${what} searches the working directory ${cwd.path} recursively: ${t.reason} (name the files or subdirectories to search; rg without --hidden skips dot-directories)`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Latch itself

interface LatchInvocation {
  /** The words that launch latch (`/abs/latch`, `node /abs/latch.cjs`, `npx latch`...). */
  prog: Word[];
  args: Word[];
  /** Launched as the installed executable (exact absolute path), the only accepted form. */
  installed: boolean;
}

const LATCH_FILE_NAMES: ReadonlySet<string> = new Set(['latch', 'latch.cjs', 'latch.js', 'latch.mjs']);
const NODE_LIKE: ReadonlySet<string> = new Set(['node', 'nodejs', 'bun', 'deno', 'tsx', 'ts-node']);
const PACKAGE_RUNNERS: ReadonlySet<string> = new Set(['npx', 'bunx', 'pnpx', 'npm', 'pnpm', 'yarn']);

function isLatchProgramName(st: State, v: string): boolean {
  if (LATCH_FILE_NAMES.has(posix.basename(v))) return true;
  return st.latchBin !== null && v.length > 0 && normPath(expandTilde(v, st.home)) === st.latchBin;
}

function isLatchPackageName(v: string): boolean {
  return v === 'latch' || v === 'agent-latch' || v.startsWith('agent-latch@') || v.startsWith('latch@');
}

function matchLatchInvocation(st: State, argv: readonly Word[]): LatchInvocation | null {
  const w0 = argv[0]!;
  if (st.latchBin !== null && w0.value === st.latchBin && !w0.glob && !w0.tilde) {
    return { prog: [w0], args: argv.slice(1), installed: true };
  }
  if (isLatchProgramName(st, w0.value)) return { prog: [w0], args: argv.slice(1), installed: false };
  const b0 = posix.basename(w0.value);
  if (NODE_LIKE.has(b0)) {
    let j = 1;
    while (j < argv.length && argv[j]!.value.startsWith('-')) j++;
    const w = argv[j];
    if (w === undefined || !isLatchProgramName(st, w.value)) return null;
    const nodeOk = b0 === 'node' && (w0.value === 'node' || TRUSTED_BIN_DIRS.has(posix.dirname(w0.value))) && !w0.glob;
    const fileOk = st.latchBin !== null && /\.(c|m)?js$/.test(st.latchBin) && w.value === st.latchBin && !w.glob && !w.tilde;
    return { prog: argv.slice(0, j + 1), args: argv.slice(j + 1), installed: j === 1 && nodeOk && fileOk };
  }
  if (PACKAGE_RUNNERS.has(b0)) {
    for (let j = 1; j < Math.min(argv.length, 5); j++) {
      if (isLatchPackageName(argv[j]!.value)) return { prog: argv.slice(0, j + 1), args: argv.slice(j + 1), installed: false };
    }
  }
  return null;
}

/**
 * The read-only forms of the installed latch. `doctor` is not one: it starts `codex app-server`
 * (which writes into $CODEX_HOME) and may run commands a project's hooks file names.
 */
function latchSubcommand(args: readonly string[]): { readOnly: boolean; label: string } {
  const label = args.length === 0 ? '(no subcommand)' : short(args.slice(0, 2).join(' '), 40);
  const sub = args[0];
  if (sub === undefined) return { readOnly: false, label };
  if (args.length === 1 && (sub === '--help' || sub === '-h' || sub === '--version')) return { readOnly: true, label };
  switch (sub) {
    case 'status':
    case 'log':
      return { readOnly: latchOptionsOk(args.slice(1), ['--cwd', '--session'], ['--json'], 0), label };
    case 'blame':
      return { readOnly: latchOptionsOk(args.slice(1), ['--cwd'], ['--json'], 1), label };
    case 'brief':
      return { readOnly: briefReadOnly(args.slice(1)), label };
    default:
      return { readOnly: false, label };
  }
}

function latchOptionsOk(rest: readonly string[], withValue: readonly string[], flags: readonly string[], positionals: number): boolean {
  let seen = 0;
  const used = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    if (withValue.includes(name)) {
      if (used.has(name)) return false;
      used.add(name);
      const v = eq > 0 && a.startsWith('--') ? a.slice(eq + 1) : rest[++i];
      if (v === undefined || v.length === 0 || v.startsWith('-')) return false;
    } else if (flags.includes(a)) {
      if (used.has(a)) return false;
      used.add(a);
    } else if (a.startsWith('-')) {
      return false;
    } else {
      seen++;
    }
  }
  return seen === positionals;
}

/** `latch brief show [--json]` or `latch brief --page N`, each with optional --session ID / --cwd DIR. */
function briefReadOnly(rest: readonly string[]): boolean {
  let show = false;
  let page = false;
  let json = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const inline = a.startsWith('--') && eq > 0 ? a.slice(eq + 1) : undefined;
    const value = (): string | undefined => (inline !== undefined ? inline : rest[++i]);
    if (a === 'show' && !show && !page && i === 0) show = true;
    else if (name === '--page' && !page && !show) {
      const v = value();
      if (v === undefined || !isAllDigits(v)) return false;
      page = true;
    } else if (name === '--session' || name === '--cwd') {
      const v = value();
      if (v === undefined || v.length === 0 || v.startsWith('-')) return false;
    } else if (a === '--json' && !json) json = true;
    else return false;
  }
  return (show || page) && !(page && json);
}

function splitPieces(text: string): string[] {
  const pieces: string[] = [];
  let cur = '';
  for (const ch of text) {
    if (' \t\r\n;&|()<>\'"`{}$'.includes(ch)) {
      if (cur) pieces.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur) pieces.push(cur);
  return pieces;
}

function isLatchPiece(st: State, p: string): boolean {
  return isLatchProgramName(st, p) || (p !== 'latch' && isLatchPackageName(p));
}

/**
 * `env latch resume`, `timeout 5 latch verify`, `zsh -c 'latch setup'`: latch behind a launcher.
 * Flags a known mutating subcommand anywhere, and any non-read-only form when latch is the first
 * program-like argument of the launcher (so `find . -name latch` stays quiet).
 */
function scanLauncher(st: State, launcher: string, args: readonly Word[]): void {
  const pieces = args.flatMap((w) => splitPieces(w.value));
  let firstProgram = -1;
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    if (firstProgram < 0 && !p.startsWith('-') && !p.includes('=') && !isAllDigits(p)) firstProgram = i;
    if (!isLatchPiece(st, p)) continue;
    const next = pieces[i + 1];
    const mutating = next !== undefined && (LATCH_MUTATING_SUBCOMMANDS.has(next) || (next === 'brief' && pieces[i + 2] === 'set'));
    if (mutating || i === firstProgram) {
      touch(st, `\`${short(launcher, 30)}\` runs latch (\`latch ${latchSubcommand(pieces.slice(i + 1)).label}\`); only a human may run latch that way`);
      return;
    }
  }
}

/** Unparseable text: still spot the obvious `latch resume ...` and friends. */
function fallbackLatchScan(st: State, text: string): void {
  const pieces = splitPieces(text);
  for (let i = 0; i < pieces.length; i++) {
    if (!isLatchPiece(st, pieces[i]!)) continue;
    const next = pieces[i + 1];
    if (next === undefined) continue;
    if (LATCH_MUTATING_SUBCOMMANDS.has(next) || (next === 'brief' && pieces[i + 2] === 'set')) {
      touch(st, `\`latch ${next}\` changes Latch state; only a human may run it`);
    }
  }
}

function handleLatch(st: State, inv: LatchInvocation, exempt: Set<Word>): void {
  const spelled = short(inv.prog.map((w) => w.value).join(' '), 60);
  if (!inv.installed) {
    const msg =
      st.latchBin === null
        ? `\`${spelled}\` runs a program named latch, and the installed Latch executable is not known here: no latch invocation is allowed`
        : `\`${spelled}\` could run another program named latch: the agent may run Latch only as the installed executable, spelled exactly \`${st.latchBin} status\` (or \`brief --page N\`, \`brief show\`, \`log\`, \`blame PATH\`)`;
    deny(st, msg);
    touch(st, msg);
    return;
  }
  const globbed = inv.args.find((w) => w.glob);
  if (globbed !== undefined) {
    const msg = `\`latch\` with the glob \`${short(globbed.value, 40)}\` is not allowed: name the argument`;
    deny(st, msg);
    touch(st, msg);
    return;
  }
  const sub = latchSubcommand(inv.args.map((w) => w.value));
  if (!sub.readOnly) {
    const msg =
      inv.args[0]?.value === 'doctor'
        ? '`latch doctor` starts processes and may write to the Codex home; only a human may run it'
        : `\`latch ${sub.label}\` is not one of the agent's read forms (status, log, blame PATH, brief --page N, brief show; options --cwd, --session, --json): it may change Latch state, and only a human may run it`;
    deny(st, msg);
    touch(st, msg);
    return;
  }
  for (const w of inv.prog) exempt.add(w);
}

// ---------------------------------------------------------------------------------------------
// Per-command checks. Each returns a reason when the invocation is not read-only, else null.
// A check may mark the call as a recursive read (an ancestor of a protected path then counts).

interface CheckCx {
  st: State;
  /** Set by the check: the program reads directories recursively. */
  recursive: boolean;
  /** Set by the check: no path operand, so the program searches the working directory. */
  implicitCwd: boolean;
  /** Set by the check: the recursion skips hidden files and directories. */
  skipsHidden: boolean;
  /** Set by the check: the words that are searched recursively (null: every argument). */
  recursivePaths: Word[] | null;
}

/**
 * Path operands of a grep-like program: the words that are not options, option values, or the
 * pattern (the first operand unless -e/-f gave one). null when an option is not understood
 * (the caller then assumes the working directory is searched, too).
 */
function grepOperands(args: readonly Word[], shortWithValue: string, longWithValue: readonly string[]): Word[] | null {
  const operands: Word[] = [];
  let patternGiven = false;
  let unknown = false;
  let afterDashDash = false;
  for (let k = 0; k < args.length; k++) {
    const w = args[k]!;
    const a = w.value;
    if (afterDashDash || !a.startsWith('-') || a === '-') {
      operands.push(w);
      continue;
    }
    if (a === '--') {
      afterDashDash = true;
      continue;
    }
    if (a.startsWith('--')) {
      const name = longName(a) ?? '';
      if (name === 'regexp' || name === 'file') patternGiven = true;
      if (!a.includes('=') && longWithValue.includes(name)) k++;
      else if (!a.includes('=') && longWithValue.some((x) => x.startsWith(name))) unknown = true;
      continue;
    }
    for (let i = 1; i < a.length; i++) {
      const ch = a[i]!;
      if (ch === 'e' || ch === 'f') patternGiven = true;
      if (shortWithValue.includes(ch)) {
        if (i === a.length - 1) k++;
        break;
      }
    }
  }
  if (unknown) return null;
  return patternGiven ? operands : operands.slice(1);
}

const GREP_LONG_WITH_VALUE = [
  'regexp', 'file', 'max-count', 'after-context', 'before-context', 'context', 'directories', 'devices', 'include', 'exclude',
  'exclude-dir', 'exclude-from', 'label', 'binary-files', 'group-separator',
];
const RG_LONG_WITH_VALUE = [
  'regexp', 'file', 'glob', 'iglob', 'type', 'type-not', 'type-add', 'type-clear', 'after-context', 'before-context', 'context',
  'encoding', 'threads', 'max-columns', 'max-count', 'replace', 'max-depth', 'max-filesize', 'sort', 'sortr', 'path-separator',
  'colors', 'color', 'context-separator', 'field-context-separator', 'field-match-separator', 'ignore-file', 'pre', 'pre-glob',
  'engine', 'dfa-size-limit', 'regex-size-limit', 'hyperlink-format', 'generate', 'maxdepth', 'hostname-bin', 'hyperlink',
];

type Check = (args: readonly Word[], cx: CheckCx) => string | null;

/** Programs with no option that writes files or runs programs: every option is fine. */
const always: Check = () => null;

/** Options that read a list of file names from a file, which cannot be checked. */
function filesFromReason(prog: string, args: readonly Word[], names: readonly string[]): string | null {
  for (const w of optionArea(args)) {
    if (isLongOption(w.value, names)) return `\`${prog} ${short(w.value, 30)}\` reads file names from a file, which cannot be checked: name the files`;
  }
  return null;
}

const checkWcDu =
  (prog: string): Check =>
  (args) =>
    filesFromReason(prog, args, ['files0-from']);

const checkChecksum =
  (prog: string): Check =>
  (args) => {
    for (const w of optionArea(args)) {
      if (isLongOption(w.value, ['check']) || shortClusterHas(w.value, 'c', '')) {
        return `\`${prog} -c\` reads the files a checksum list names, which cannot be checked: hash the files by name`;
      }
    }
    return null;
  };

const FIND_NO_ARG: ReadonlySet<string> = new Set([
  '-print', '-print0', '-ls', '-prune', '-quit', '-true', '-false', '-empty', '-readable', '-writable', '-executable',
  '-nouser', '-nogroup', '-depth', '-d', '-xdev', '-mount', '-noleaf', '-daystart', '-follow', '-ignore_readdir_race',
  '-noignore_readdir_race', '-not', '-a', '-o', '-and', '-or', '!', '(', ')', ',',
]);
const FIND_ONE_ARG: ReadonlySet<string> = new Set([
  '-name', '-iname', '-path', '-ipath', '-wholename', '-iwholename', '-regex', '-iregex', '-regextype', '-type', '-xtype',
  '-size', '-mtime', '-mmin', '-atime', '-amin', '-ctime', '-cmin', '-newer', '-anewer', '-cnewer', '-used', '-perm',
  '-user', '-group', '-uid', '-gid', '-links', '-inum', '-samefile', '-lname', '-ilname', '-maxdepth', '-mindepth',
  '-fstype', '-printf',
]);

/** find: start points, then only tests and the actions -print, -print0, -ls, -printf (to stdout). */
const checkFind: Check = (args) => {
  let k = 0;
  while (k < args.length && ['-H', '-L', '-P'].includes(args[k]!.value)) k++;
  while (k < args.length) {
    const w = args[k]!;
    const a = w.value;
    if (a.startsWith('-') || a === '!' || a === '(' || a === ')' || a === ',') break;
    if (mayExpandToOption(w)) return globOptionReason('find', w);
    k++;
  }
  for (; k < args.length; k++) {
    const w = args[k]!;
    const a = w.value;
    if (w.glob) return `the unquoted glob \`${short(a, 40)}\` in a find expression is expanded by the shell: quote it ('${short(a, 40)}')`;
    if (FIND_NO_ARG.has(a)) continue;
    if (FIND_ONE_ARG.has(a) || /^-newer[aBcmt][aBcmt]$/.test(a)) {
      const v = args[k + 1];
      if (v === undefined) return `\`find ${a}\` needs an argument`;
      if (v.glob) return `the unquoted glob \`${short(v.value, 40)}\` after \`find ${a}\` is expanded by the shell: quote it ('${short(v.value, 40)}')`;
      k++;
      continue;
    }
    if (['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'].includes(a)) {
      return `\`find ${a}\` can run commands, delete or write files; only tests and -print, -print0, -ls, -printf are allowed`;
    }
    return `\`find ${short(a, 30)}\` is not on find's read-only list (tests such as -name, -type, -path, -mtime, and the actions -print, -print0, -ls, -printf)`;
  }
  return null;
};

const checkSort: Check = (args) => {
  for (const w of optionArea(args)) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason('sort', w);
    if (isLongOption(a, ['output'])) return `\`sort ${short(a, 30)}\` writes a file; sort to stdout instead`;
    if (isLongOption(a, ['compress-program'])) return `\`sort ${short(a, 30)}\` runs a program`;
    if (isLongOption(a, ['temporary-directory'])) return `\`sort ${short(a, 30)}\` writes temporary files`;
    if (isLongOption(a, ['files0-from'])) return `\`sort ${short(a, 30)}\` reads file names from a file, which cannot be checked: name the files`;
    if (shortClusterHas(a, 'o', 'ktST')) return `\`sort ${short(a, 30)}\` writes a file; sort to stdout instead`;
    if (shortClusterHas(a, 'T', 'ktSo')) return `\`sort ${short(a, 30)}\` writes temporary files`;
  }
  return null;
};

/** grep: never -R (follows symlinks); -r makes it a recursive read. */
const checkGrep =
  (prog: string): Check =>
  (args, cx) => {
    const area = optionArea(args);
    for (let k = 0; k < area.length; k++) {
      const w = area[k]!;
      const a = w.value;
      if (mayExpandToOption(w)) return globOptionReason(prog, w);
      if (isLongOption(a, ['dereference-recursive']) || shortClusterHas(a, 'R', 'efmABCdD')) {
        return `\`${prog} -R\` follows symbolic links while recursing: use \`${prog} -r\``;
      }
      if (isLongOption(a, ['recursive']) || shortClusterHas(a, 'r', 'efmABCdD') || a === '--directories=recurse' || (a === '-d' && area[k + 1]?.value === 'recurse') || a === '-drecurse') {
        cx.recursive = true;
      }
    }
    if (cx.recursive) {
      const ops = grepOperands(args, 'efmABCdD', GREP_LONG_WITH_VALUE);
      cx.implicitCwd = ops === null || ops.length === 0;
      cx.recursivePaths = ops;
    }
    return null;
  };

/** rg: recursive by nature; no preprocessors, decompressors or symlink following. */
const checkRg: Check = (args, cx) => {
  cx.recursive = true;
  cx.skipsHidden = true;
  const files = args.some((w) => w.value === '--files');
  const ops = grepOperands(args, 'efgtTABCEjMmrd', RG_LONG_WITH_VALUE);
  cx.implicitCwd = ops === null || (files ? ops.length + 1 : ops.length) === 0;
  // With --files every operand is a path (grepOperands took the first one for the pattern).
  cx.recursivePaths = ops === null || files ? null : ops;
  for (const w of optionArea(args)) {
    const a = w.value;
    if (a === '--hidden' || a === '--no-ignore-dot' || /^-[a-zA-Z.]*[u.]/.test(a) || a === '--unrestricted') cx.skipsHidden = false;
    if (mayExpandToOption(w)) return globOptionReason('rg', w);
    if (isLongOption(a, ['pre', 'pre-glob', 'hostname-bin'])) return `\`rg ${short(a, 30)}\` runs external programs`;
    if (isLongOption(a, ['search-zip']) || shortClusterHas(a, 'z', 'efgtTABCEjMmrd')) return '`rg -z` runs decompression programs: search the files without -z';
    if (isLongOption(a, ['follow']) || shortClusterHas(a, 'L', 'efgtTABCEjMmrd')) return '`rg -L` follows symbolic links: search without -L';
  }
  return null;
};

/** diff -r follows symbolic links unless --no-dereference. */
const checkDiff: Check = (args, cx) => {
  let recursive = false;
  let noDeref = false;
  for (const w of optionArea(args)) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason('diff', w);
    if (isLongOption(a, ['paginate']) || shortClusterHas(a, 'l', 'CDFILSWxX')) return '`diff -l` pipes the output through `pr`: drop -l';
    if (isLongOption(a, ['recursive']) || shortClusterHas(a, 'r', 'CDFILSWxX')) recursive = true;
    if (a === '--no-dereference') noDeref = true;
  }
  if (recursive) {
    cx.recursive = true;
    if (!noDeref) return '`diff -r` follows symbolic links: add --no-dereference (`diff -r --no-dereference A B`)';
  }
  return null;
};

const checkTree: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('tree', w);
    const a = w.value;
    if (a.startsWith('-') && !a.startsWith('--') && (a.includes('o') || a.includes('R'))) return `\`tree ${short(a, 30)}\` can write output files`;
    if (isLongOption(a, ['output', 'fromfile'])) return `\`tree ${short(a, 30)}\` is not allowed (writes a file or reads names from one)`;
  }
  return null;
};

const checkFile: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('file', w);
    const a = w.value;
    if (isLongOption(a, ['compile']) || shortClusterHas(a, 'C', 'emfFP')) return `\`file ${short(a, 30)}\` writes a compiled magic file`;
    if (isLongOption(a, ['files-from']) || shortClusterHas(a, 'f', 'emFP')) return `\`file ${short(a, 30)}\` reads file names from a file, which cannot be checked: name the files`;
    if (isLongOption(a, ['uncompress', 'uncompress-noreport']) || shortClusterHas(a, 'z', 'emfFP') || shortClusterHas(a, 'Z', 'emfFP')) {
      return `\`file ${short(a, 30)}\` runs external decompressors (found through PATH): not while latched`;
    }
  }
  return null;
};

const checkPrintf: Check = (args) => {
  const first = args[0];
  if (first === undefined) return null;
  if (mayExpandToOption(first)) return globOptionReason('printf', first);
  if (first.value.startsWith('-v')) return '`printf -v` assigns a shell variable: print to stdout instead';
  return null;
};

const checkUniq: Check = (args) => {
  let positional = 0;
  let afterDashDash = false;
  for (let k = 0; k < args.length; k++) {
    const w = args[k]!;
    const a = w.value;
    if (!afterDashDash) {
      if (a === '--') {
        afterDashDash = true;
        continue;
      }
      if (mayExpandToOption(w)) return globOptionReason('uniq', w);
      if (a.startsWith('--')) {
        const n = longName(a) ?? '';
        if (!a.includes('=') && n.length > 0 && ['skip-fields', 'skip-chars', 'check-chars'].some((x) => x.startsWith(n))) k++;
        continue;
      }
      if (a.startsWith('-') && a.length > 1) {
        for (let i = 1; i < a.length; i++) {
          if ('fsw'.includes(a[i]!)) {
            if (i === a.length - 1) k++;
            break;
          }
        }
        continue;
      }
    }
    positional++;
    if (w.glob) return `\`uniq ${short(a, 30)}\`: a glob may expand to two files, and uniq writes the second`;
  }
  return positional > 1 ? '`uniq INPUT OUTPUT` writes the output file: use `uniq INPUT`' : null;
};

// sed --------------------------------------------------------------------------------------------

const SED_HELP = "sed is allowed only to print lines: options -n -E -r -s -z -u --posix, and scripts of addresses (N, $, /re/, N,M, N~S, +N) with the commands p, =, l, q, Q, d and { } (e.g. `sed -n '10,20p' FILE`)";

/** Parse a sed script of the allowed subset; a reason when it is anything else. */
function sedScriptReason(script: string): string | null {
  const n = script.length;
  let i = 0;
  let depth = 0;
  const skipBlank = (): void => {
    while (i < n && (script[i] === ' ' || script[i] === '\t')) i++;
  };
  const digits = (): boolean => {
    const s = i;
    while (i < n && script[i]! >= '0' && script[i]! <= '9') i++;
    return i > s;
  };
  const regex = (): string | null => {
    // at '/'
    i++;
    while (i < n && script[i] !== '/') {
      if (script[i] === '\n') return 'a newline inside a sed regular expression';
      if (script[i] === '\\') i++;
      i++;
    }
    if (i >= n) return 'an unterminated sed regular expression';
    i++;
    while (i < n && (script[i] === 'I' || script[i] === 'M')) i++;
    return null;
  };
  const address = (second: boolean): string | null | 'none' => {
    const c = script[i];
    if (c === undefined) return 'none';
    if (c >= '0' && c <= '9') {
      digits();
      if (script[i] === '~') {
        i++;
        if (!digits()) return 'a malformed `first~step` address';
      }
      return null;
    }
    if (c === '$') {
      i++;
      return null;
    }
    if (c === '/') return regex();
    if (c === '\\') return 'custom regex delimiters (`\\cREc`) are not supported: use /re/';
    if (second && (c === '+' || c === '~')) {
      i++;
      if (!digits()) return 'a malformed address';
      return null;
    }
    return 'none';
  };
  for (;;) {
    while (i < n && (script[i] === ' ' || script[i] === '\t' || script[i] === '\n' || script[i] === ';')) i++;
    if (i >= n) break;
    if (script[i] === '#') {
      while (i < n && script[i] !== '\n') i++;
      continue;
    }
    const a1 = address(false);
    if (a1 !== null && a1 !== 'none') return a1;
    if (a1 === null) {
      skipBlank();
      if (script[i] === ',') {
        i++;
        skipBlank();
        const a2 = address(true);
        if (a2 === 'none') return 'a missing second address after `,`';
        if (a2 !== null) return a2;
      }
    }
    skipBlank();
    while (script[i] === '!') {
      i++;
      skipBlank();
    }
    const c = script[i];
    if (c === undefined) return 'an address without a command';
    i++;
    if (c === '{') {
      depth++;
      continue;
    }
    if (c === '}') {
      if (--depth < 0) return 'an unmatched `}`';
    } else if (c === 'p' || c === '=' || c === 'd') {
      // no argument
    } else if (c === 'l' || c === 'q' || c === 'Q') {
      skipBlank();
      digits();
    } else {
      return `the sed command \`${c}\` is not allowed (\`w\`, \`W\`, \`r\`, \`e\`, \`s///w\`, \`s///e\` write files or run commands)`;
    }
    skipBlank();
    const t = script[i];
    if (t !== undefined && t !== ';' && t !== '\n' && t !== '}' && t !== '#') return `unexpected text after the sed command \`${c}\``;
  }
  if (depth !== 0) return 'an unmatched `{`';
  return null;
}

const checkSed: Check = (args) => {
  const scripts: Word[] = [];
  let scriptFromOption = false;
  const operands: Word[] = [];
  let afterDashDash = false;
  for (let k = 0; k < args.length; k++) {
    const w = args[k]!;
    const a = w.value;
    if (!afterDashDash && a === '--') {
      afterDashDash = true;
      continue;
    }
    if (!afterDashDash && a.startsWith('-') && a.length > 1) {
      if (mayExpandToOption(w)) return globOptionReason('sed', w);
      if (a === '-e' || a === '--expression') {
        const s = args[k + 1];
        if (s === undefined) return '`sed -e` needs a script';
        scripts.push(s);
        scriptFromOption = true;
        k++;
        continue;
      }
      if (a.startsWith('--expression=')) {
        scripts.push({ ...w, value: a.slice('--expression='.length) });
        scriptFromOption = true;
        continue;
      }
      const cluster = /^-([nErszu]*)e(.*)$/.exec(a);
      if (cluster !== null) {
        // `-ne SCRIPT`, `-neSCRIPT`, `-eSCRIPT`
        if (cluster[2]!.length > 0) scripts.push({ ...w, value: cluster[2]! });
        else {
          const s = args[k + 1];
          if (s === undefined) return '`sed -e` needs a script';
          scripts.push(s);
          k++;
        }
        scriptFromOption = true;
        continue;
      }
      if (['--quiet', '--silent', '--regexp-extended', '--separate', '--null-data', '--unbuffered', '--posix', '--sandbox', '--debug'].includes(a)) continue;
      if (/^-[nErszu]+$/.test(a)) continue;
      if (a.startsWith('--line-length=') || /^-l[0-9]+$/.test(a)) continue;
      if (a === '-l') {
        k++;
        continue;
      }
      if (a.startsWith('-i') || isLongOption(a, ['in-place'])) return '`sed -i` edits files in place: print with `sed -n` instead';
      if (a.startsWith('-f') || isLongOption(a, ['file'])) return '`sed -f` runs a script from a file, which cannot be checked: give the script inline';
      return `\`sed ${short(a, 30)}\` is not allowed; ${SED_HELP}`;
    }
    operands.push(w);
  }
  if (!scriptFromOption) {
    const s = operands.shift();
    if (s === undefined) return '`sed` needs a script';
    scripts.push(s);
  }
  for (const s of scripts) {
    if (s.nonAscii) return 'the sed script contains a non-ASCII character: write it in ASCII';
    const r = sedScriptReason(s.value);
    if (r !== null) return `${r}; ${SED_HELP}`;
  }
  for (const w of operands) if (mayExpandToOption(w)) return globOptionReason('sed', w);
  return null;
};

// awk --------------------------------------------------------------------------------------------

/**
 * Substrings refused anywhere in an awk program (strings included, so a regex or string cannot
 * hide them): every way awk runs a command, writes or opens a file, or reads a file chosen at
 * run time.
 */
const AWK_FORBIDDEN: readonly string[] = [
  'system', 'getline', 'close', 'fflush', 'ENVIRON', 'PROCINFO', 'ARGV', 'ARGC', 'SYMTAB', 'FUNCTAB', '|', '>', '@', '`',
];
const AWK_HELP = "awk is allowed only with -F and -v and an inline program that prints to stdout: no system, getline, close, fflush, ENVIRON, PROCINFO, ARGV, ARGC, `|`, `>` or `@` (compare with `<` instead of `>`)";

const checkAwk: Check = (args) => {
  let k = 0;
  let program: Word | undefined;
  for (; k < args.length; k++) {
    const w = args[k]!;
    const a = w.value;
    if (a === '--') {
      k++;
      break;
    }
    if (!a.startsWith('-') || a === '-') break;
    if (w.glob) return globOptionReason('awk', w);
    if (a === '-F' || a === '-v') {
      if (k + 1 >= args.length) return `\`awk ${a}\` needs an argument`;
      k++;
      continue;
    }
    if ((a.startsWith('-F') || a.startsWith('-v')) && a.length > 2) continue;
    if (a.startsWith('--field-separator=') || a.startsWith('--assign=') || a === '--sandbox' || a === '-S') continue;
    if (a.startsWith('-f') || isLongOption(a, ['file', 'exec', 'include', 'load', 'source'])) return `\`awk ${short(a, 30)}\` runs a program from a file or a library, which cannot be checked; ${AWK_HELP}`;
    return `\`awk ${short(a, 30)}\` is not allowed; ${AWK_HELP}`;
  }
  program = args[k];
  if (program === undefined) return '`awk` needs a program';
  if (program.nonAscii) return 'the awk program contains a non-ASCII character: write it in ASCII';
  for (const f of AWK_FORBIDDEN) {
    if (program.value.includes(f)) return `the awk program contains \`${f}\`; ${AWK_HELP}`;
  }
  for (const w of args.slice(k + 1)) if (mayExpandToOption(w)) return globOptionReason('awk', w);
  return null;
};

// git --------------------------------------------------------------------------------------------
//
// Even read subcommands run programs taken from configuration the agent may have armed while it
// could still write (verified against git 2.39 in test/unit/readonly-git.test.ts):
//   - a pager (core.pager, pager.<cmd>), whose `!cmd` runs a shell on a terminal  → --no-pager
//   - core.fsmonitor, run by everything that reads the index                      → -c core.fsmonitor=false
//   - hooks: post-index-change fires when status/diff refresh the index            → --no-optional-locks
//     (status then does not write the index), -c diff.autoRefreshIndex=false (diff writes it
//     regardless of --no-optional-locks otherwise), and -c core.hooksPath=/dev/null
//   - diff.external, diff.<driver>.command (.gitattributes diff=<driver>)         → --no-ext-diff
//   - diff.<driver>.textconv, applied by diff, log -p, show and blame              → --no-textconv
//   - gpg.program & co., run to verify signatures by log.showSignature, %G? formats,
//     format.pretty or a pretty.<alias>                                            → -c gpg.program=/dev/null
//     -c gpg.ssh.program=/dev/null -c gpg.x509.program=/dev/null (/dev/null cannot be executed, so git
//     reports the signature unverified; `false` would be run, and git could die of SIGPIPE writing to it)
//   - filter.<driver>.clean, run on changed work-tree files by status, diff, ls-files -m and
//     blame: no option disables it in git 2.39, so the configuration files are read and the work-
//     tree subcommands are refused while any of them mentions `filter` or `include`
//   - submodules: status/diff/log/show may run git inside them with their own configuration:
//     refused in a repository with a .gitmodules file.
//   - trace2.* in the system or global configuration (which -c cannot override) makes every git
//     call append to a file of the agent's choosing: git is refused while one mentions trace2 (or
//     includes other files).
// Global options that relocate the repository or the configuration (--git-dir, --work-tree,
// --exec-path, --config-env, -c with anything else, --namespace, -p/--paginate) are refused.
//
// The accepted spelling (gitSpelling; the global options in any order, -C DIR allowed):
//   git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null SUB ...
//   log, show: also -c gpg.program=/dev/null -c gpg.ssh.program=/dev/null -c gpg.x509.program=/dev/null
//   diff:      also -c diff.autoRefreshIndex=false
//   right after SUB: `--no-ext-diff --no-textconv` for diff/log/show, `--no-textconv` for blame
//   (anywhere else they could be another option's value: `log -S --no-ext-diff`).
// SUB is one of status, diff, log, show, rev-parse, ls-files, branch (listing forms), blame, grep
// (without -O); never --help, --output, --ext-diff, --textconv, --no-index, --recurse-submodules.

const GIT_BASE_PREFIX = ['--no-pager', '--no-optional-locks', '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null'];
const GIT_GPG_PREFIX = ['-c', 'gpg.program=/dev/null', '-c', 'gpg.ssh.program=/dev/null', '-c', 'gpg.x509.program=/dev/null'];
/** The `-c` overrides accepted (key case-insensitive, value exact): only ones that switch something off. */
const GIT_SAFE_OVERRIDES: ReadonlyMap<string, string> = new Map([
  ['core.fsmonitor', 'false'],
  ['core.hookspath', '/dev/null'],
  ['gpg.program', '/dev/null'],
  ['gpg.ssh.program', '/dev/null'],
  ['gpg.x509.program', '/dev/null'],
  ['log.showsignature', 'false'],
  ['diff.autorefreshindex', 'false'],
  ['color.ui', 'never'],
]);
const GIT_HARMLESS_GLOBALS: ReadonlySet<string> = new Set([
  '--literal-pathspecs', '--glob-pathspecs', '--noglob-pathspecs', '--icase-pathspecs', '--no-replace-objects',
]);
const GIT_SUBCOMMANDS: ReadonlySet<string> = new Set(['status', 'diff', 'log', 'show', 'rev-parse', 'ls-files', 'branch', 'blame', 'grep']);
const GIT_WORKTREE_SUBCOMMANDS: ReadonlySet<string> = new Set(['status', 'diff', 'ls-files', 'blame', 'grep']);
const GIT_SUBMODULE_SUBCOMMANDS: ReadonlySet<string> = new Set(['status', 'diff', 'log', 'show']);

function gitSpelling(sub: string): string {
  const prefix = [...GIT_BASE_PREFIX, ...(sub === 'log' || sub === 'show' ? GIT_GPG_PREFIX : []), ...(sub === 'diff' ? ['-c', 'diff.autoRefreshIndex=false'] : [])].join(' ');
  const after = sub === 'diff' || sub === 'log' || sub === 'show' ? ' --no-ext-diff --no-textconv' : sub === 'blame' ? ' --no-textconv' : '';
  return `git ${prefix} ${sub}${after}`;
}

/** The spelling a held read needs (its environment supplies the rest). */
function gitHeldSpelling(sub: string): string {
  const after = sub === 'diff' || sub === 'log' || sub === 'show' ? ' --no-ext-diff --no-textconv' : sub === 'blame' ? ' --no-textconv' : '';
  return `git --no-pager ${sub}${after}`;
}

/** `git log` options that only list commits (no patch, stat or diff of any kind). */
const GIT_LOG_LISTING = /^(--oneline|--graph|--all|--decorate(=\w+)?|--no-decorate|--abbrev-commit|--no-abbrev-commit|--reverse|--first-parent|--no-merges|--merges|--date-order|--topo-order|--author-date-order|--max-count=\d+|-n\d*|-\d+|--skip=\d+|--since=[^\s]+|--until=[^\s]+|--after=[^\s]+|--before=[^\s]+|--author=.+|--committer=.+|--grep=.+|--date=\w[\w-]*|--format=[^\s]*|--pretty=[^\s]*|--no-color|--color=never|--branches|--tags|--remotes|-z|--no-walk)$/;

const GIT_WHY = 'git runs programs from repository configuration (pager, fsmonitor, hooks, external diff, textconv, gpg) even for reads';

function gitStatusReason(rest: readonly Word[]): string | null {
  const flags = new Set([
    '-s', '--short', '-b', '--branch', '--show-stash', '--porcelain', '--long', '-v', '-vv', '--verbose', '-u', '-z',
    '--null', '--no-column', '--ahead-behind', '--no-ahead-behind', '--renames', '--no-renames', '--find-renames', '--ignored',
    '--untracked-files',
  ]);
  for (const w of optionArea(rest)) {
    const a = w.value;
    if (!a.startsWith('-')) continue;
    const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (flags.has(name)) continue;
    if (/^-[sbvz]+$/.test(a) || /^-u(no|normal|all)$/.test(a)) continue;
    if (name === '--ignore-submodules') continue;
    return `\`git status ${short(a, 30)}\` is not on the allowed list (-s, -b, --porcelain, -u, --ignored, -z, --renames...)`;
  }
  return null;
}

function gitBranchReason(rest: readonly Word[]): string | null {
  const flags = new Set(['-a', '--all', '-r', '--remotes', '-v', '-vv', '--verbose', '--show-current', '--no-color', '--color=never', '--no-column', '-i', '--ignore-case']);
  const withValue = new Set(['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', '--sort']);
  let list = false;
  let positional = 0;
  for (let k = 0; k < rest.length; k++) {
    const a = rest[k]!.value;
    if (a === '--list' || a === '-l') {
      list = true;
      continue;
    }
    if (flags.has(a) || /^-[arvl]{1,6}$/.test(a)) {
      if (a.includes('l') && a.startsWith('-') && !a.startsWith('--')) list = true;
      continue;
    }
    const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (withValue.has(name)) {
      if (!a.includes('=')) k++;
      continue;
    }
    if (a.startsWith('-')) return `\`git branch ${short(a, 30)}\` is not a listing option (use --list, --show-current, -a, -r, -v)`;
    positional++;
  }
  if (positional > 0 && !list) return '`git branch NAME` creates a branch: list with `git branch --list PATTERN`';
  return null;
}

function exists(st: State, p: string): 'dir' | 'file' | null {
  if (!spend(st)) return null;
  try {
    const s = statSync(p, { throwIfNoEntry: false });
    if (s === undefined) return null;
    return s.isDirectory() ? 'dir' : 'file';
  } catch {
    return null;
  }
}

/** The repository (work tree root, git dir, common dir) containing dir, if any. */
function findRepo(st: State, dir: string): { root: string; gitDir: string; commonDir: string } | null {
  let d = dir;
  for (let k = 0; k < 128; k++) {
    const dotgit = d === '/' ? '/.git' : d + '/.git';
    const kind = exists(st, dotgit);
    if (kind === 'dir' || kind === 'file') {
      let gitDir = dotgit;
      if (kind === 'file') {
        try {
          const m = /^gitdir: *(.+?)\s*$/m.exec(readFileSync(dotgit, 'utf8'));
          if (m === null) return null;
          gitDir = posix.resolve(d, m[1]!);
        } catch {
          return null;
        }
      }
      let commonDir = gitDir;
      if (exists(st, gitDir + '/commondir') === 'file') {
        try {
          const c = readFileSync(gitDir + '/commondir', 'utf8').trim();
          if (c.length > 0) commonDir = posix.resolve(gitDir, c);
        } catch {
          commonDir = gitDir;
        }
      }
      return { root: d, gitDir, commonDir };
    }
    if (d === '/') return null;
    d = posix.dirname(d);
  }
  return null;
}

/**
 * Why the configuration git would read from dir makes a work-tree read unsafe, or null: any
 * mention of `filter` (clean/smudge/process drivers) or `include` (which could bring one in).
 */
function readConfig(st: State, f: string, sub: string): { text: string } | { reason: string } | null {
  if (exists(st, f) !== 'file') return null;
  try {
    return { text: readFileSync(f, 'utf8').toLowerCase() };
  } catch {
    return { reason: `the git configuration ${f} cannot be read, so \`git ${sub}\` cannot be checked` };
  }
}

function gitConfigReason(st: State, dirs: readonly string[], sub: string): string | null {
  const files = new Set<string>();
  const env = process.env;
  if (env.GIT_CONFIG_SYSTEM && env.GIT_CONFIG_SYSTEM.length > 0) files.add(env.GIT_CONFIG_SYSTEM);
  else files.add('/etc/gitconfig').add('/usr/local/etc/gitconfig');
  if (env.GIT_CONFIG_GLOBAL && env.GIT_CONFIG_GLOBAL.length > 0) files.add(env.GIT_CONFIG_GLOBAL);
  if (st.home !== null) files.add(st.home + '/.gitconfig');
  const xdg = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : st.home !== null ? st.home + '/.config' : null;
  if (xdg !== null) files.add(xdg + '/git/config');
  // trace2.* is read only from the system and global files, and -c cannot override it: a
  // trace2.eventTarget armed there makes every git call write (append) to that file.
  for (const f of files) {
    const c = readConfig(st, f, sub);
    if (c === null) continue;
    if ('reason' in c) return c.reason;
    if (c.text.includes('trace2')) {
      return `the git configuration ${f} sets trace2 options, which make every git call write a trace file and cannot be overridden with -c: git is not allowed while latched (read files with cat, grep, rg)`;
    }
    if (c.text.includes('include')) {
      return `the git configuration ${f} includes other files (include/includeIf), which cannot be checked for options that run programs or write files: git is not allowed while latched (read files with cat, grep, rg)`;
    }
  }
  for (const dir of dirs) {
    const repo = findRepo(st, dir);
    if (repo === null) continue;
    files.add(repo.commonDir + '/config');
    files.add(repo.gitDir + '/config.worktree');
    if (GIT_SUBMODULE_SUBCOMMANDS.has(sub) && exists(st, repo.root + '/.gitmodules') !== null) {
      return `this repository has submodules (${repo.root}/.gitmodules), and \`git ${sub}\` may run git inside them with their own configuration: read with \`git --no-pager ls-files\`, \`git --no-pager rev-parse\` or plain \`cat\` instead`;
    }
  }
  if (!GIT_WORKTREE_SUBCOMMANDS.has(sub)) return null;
  for (const f of files) {
    const c = readConfig(st, f, sub);
    if (c === null) continue;
    if ('reason' in c) return c.reason;
    const lower = c.text;
    if (lower.includes('filter')) {
      return `the git configuration ${f} mentions \`filter\` (a clean/smudge filter driver, which \`git ${sub}\` runs on changed work-tree files and no option turns off): read committed content with \`${gitSpelling('show')} REV:PATH\`, or the files with cat`;
    }
    if (lower.includes('include')) {
      return `the git configuration ${f} includes other files (include/includeIf), which cannot be checked for filter drivers \`git ${sub}\` would run: read committed content with \`${gitSpelling('show')} REV:PATH\`, or the files with cat`;
    }
  }
  return null;
}

const checkGit: Check = (args, cx) => {
  const st = cx.st;
  let i = 0;
  const globals = new Set<string>();
  const overrides = new Set<string>();
  const cDirs: Word[] = [];
  while (i < args.length) {
    const w = args[i]!;
    const a = w.value;
    if (a === '--no-pager' || a === '--no-optional-locks') {
      globals.add(a);
      i++;
    } else if (GIT_HARMLESS_GLOBALS.has(a)) {
      i++;
    } else if (a === '-c') {
      const kv = args[i + 1];
      if (kv === undefined) return '`git -c` needs KEY=VALUE';
      const eq = kv.value.indexOf('=');
      const key = eq < 0 ? kv.value.toLowerCase() : kv.value.slice(0, eq).toLowerCase();
      const val = eq < 0 ? null : kv.value.slice(eq + 1);
      if (kv.glob || val === null || GIT_SAFE_OVERRIDES.get(key) !== val) {
        return `\`git -c ${short(kv.value, 40)}\` is not allowed: -c may only switch things off (${[...GIT_SAFE_OVERRIDES].map(([k, v]) => `${k}=${v}`).join(', ')})`;
      }
      overrides.add(key);
      i += 2;
    } else if (a === '-C') {
      const dir = args[i + 1];
      if (dir === undefined) return '`git -C` needs a directory';
      if (dir.glob) return '`git -C` with a glob is not allowed: name the directory';
      cDirs.push(dir);
      i += 2;
    } else if (a.startsWith('-')) {
      return `the git option \`${short(a, 40)}\` is not allowed (it could relocate the repository or its configuration); allowed before the subcommand: --no-pager, --no-optional-locks, -C DIR and the -c overrides that switch things off`;
    } else {
      break;
    }
  }
  const subWord = args[i];
  if (subWord === undefined) return `\`git\` needs a subcommand: ${[...GIT_SUBCOMMANDS].join(', ')}`;
  const sub = subWord.value;
  if (subWord.glob || !GIT_SUBCOMMANDS.has(sub)) {
    return `\`git ${short(sub, 30)}\` is not on the read-only list (${[...GIT_SUBCOMMANDS].join(', ')}, each as \`${gitSpelling('SUB')}\`)`;
  }
  const rest = args.slice(i + 1);
  const area = optionArea(rest);

  // The required safety spelling.
  const missing: string[] = [];
  // With the held-read environment the -c switches and --no-optional-locks come from GIT_SAFE_CONFIG.
  const hardened = st.gitEnvHardened;
  if (!globals.has('--no-pager')) missing.push('--no-pager');
  if (!hardened) {
    if (!globals.has('--no-optional-locks')) missing.push('--no-optional-locks');
    if (!overrides.has('core.fsmonitor')) missing.push('-c core.fsmonitor=false');
    if (!overrides.has('core.hookspath')) missing.push('-c core.hooksPath=/dev/null');
    if (sub === 'log' || sub === 'show') {
      for (const k of ['gpg.program', 'gpg.ssh.program', 'gpg.x509.program']) if (!overrides.has(k)) missing.push(`-c ${k}=/dev/null`);
    }
    if (sub === 'diff' && !overrides.has('diff.autorefreshindex')) missing.push('-c diff.autoRefreshIndex=false');
  }
  // The safety flags must come right after the subcommand: anywhere else they could be the value
  // of another option (`git log -S --no-ext-diff` searches for the string "--no-ext-diff").
  const lead = new Set<string>();
  for (const w of rest) {
    if (w.value !== '--no-ext-diff' && w.value !== '--no-textconv') break;
    lead.add(w.value);
  }
  const has = (flag: string): boolean => lead.has(flag);
  // A `git log` whose every option is a plain listing one produces no diff: no external diff or
  // textconv can run (only with the held-read environment, which also switches off signatures).
  const plainLog = hardened && sub === 'log' && area.every((w) => !w.value.startsWith('-') || GIT_LOG_LISTING.test(w.value));
  if ((sub === 'diff' || (sub === 'log' && !plainLog) || sub === 'show') && !has('--no-ext-diff')) missing.push(`--no-ext-diff (right after ${sub})`);
  if ((sub === 'diff' || (sub === 'log' && !plainLog) || sub === 'show' || sub === 'blame') && !has('--no-textconv')) missing.push(`--no-textconv (right after ${sub})`);
  if (missing.length > 0) {
    return `${GIT_WHY}; while latched \`git ${sub}\` needs ${missing.join(', ')}: use \`${hardened ? gitHeldSpelling(sub) : gitSpelling(sub)} ...\``;
  }

  for (const w of area) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason(`git ${sub}`, w);
    if (w.nonAscii && a.startsWith('-')) return `the git option \`${short(a, 30)}\` contains a non-ASCII character`;
    if (a === '--text') continue;
    if (isLongOption(a, ['output'])) return `\`git ${sub} ${short(a, 30)}\` writes a file: read the output instead`;
    if (isLongOption(a, ['remerge-diff'])) return `\`git ${sub} --remerge-diff\` writes temporary objects into .git: not while latched`;
    if (isLongOption(a, ['ext-diff', 'textconv'])) return `\`git ${sub} ${short(a, 30)}\` runs configured programs: use --no-ext-diff --no-textconv`;
    if (isLongOption(a, ['help']) || a === '-h') return `\`git ${sub} --help\` opens a pager or a browser: not while latched`;
    if (isLongOption(a, ['recurse-submodules'])) return `\`git ${sub} ${short(a, 30)}\` runs git inside submodules with their own configuration`;
    if (a.startsWith('--submodule') && a !== '--submodule=short') return `\`git ${sub} ${short(a, 30)}\` may run git inside submodules: use --submodule=short or leave it out`;
    if (a === '--no-index') return `\`git ${sub} --no-index\` is not allowed: compare files with \`diff\``;
  }
  let reason: string | null = null;
  switch (sub) {
    case 'status':
      reason = gitStatusReason(rest);
      break;
    case 'branch':
      reason = gitBranchReason(rest);
      break;
    case 'grep':
      for (const w of area) {
        if (isLongOption(w.value, ['open-files-in-pager']) || shortClusterHas(w.value, 'O', 'efABCm')) {
          reason = '`git grep -O` opens the files in a program: not while latched';
        }
      }
      break;
    case 'blame':
      for (const w of area) if (isLongOption(w.value, ['contents'])) reason = '`git blame --contents` is not allowed';
      break;
    default:
      break;
  }
  if (reason !== null) return reason;

  // Where git will run, for the configuration check.
  let dirs: string[] | null = st.cwdKnown ? st.cwds.map((c) => c.path) : null;
  for (const d of cDirs) {
    const v = d.tilde ? expandTilde(d.value, st.home) : d.value;
    if (v.startsWith('/')) dirs = [normPath(v)];
    else if (dirs !== null) dirs = dirs.map((x) => posix.resolve(x, v));
  }
  if (dirs === null) {
    if (GIT_WORKTREE_SUBCOMMANDS.has(sub) || GIT_SUBMODULE_SUBCOMMANDS.has(sub)) {
      return `the working directory is not known, so the repository's configuration cannot be checked for \`git ${sub}\`: use \`git -C /absolute/repo ...\``;
    }
    return null;
  }
  // git finds the repository from the physical directory.
  return gitConfigReason(st, dirs.map((d) => realish(st, d)), sub);
};

// ---------------------------------------------------------------------------------------------

const CHECKS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ...[
    'ls', 'cat', 'head', 'tail', 'pwd', 'echo', 'true', 'false', 'stat', 'df', 'which', 'type', 'basename',
    'dirname', 'realpath', 'readlink', 'cmp', 'nl', 'cut', 'tr', 'jq',
  ].map((n): [string, Check] => [n, always]),
  ...['md5sum', 'sha1sum', 'sha224sum', 'sha256sum', 'sha384sum', 'sha512sum', 'b2sum', 'cksum'].map((n): [string, Check] => [n, checkChecksum(n)]),
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
  deny(st, `the redirection \`${r.fd ?? ''}${r.op} ${short(v, 60)}\` writes a file; output may only go to /dev/null (or 2>&1, >&2)`);
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
  else if (st.cwdKnown) st.pendingCwds.push(...st.cwds.map((c) => (physicalCd ? physical(st, c.path, v) : posix.resolve(c.path, v))));
  else st.pendingCwdUnknown = true;
}

function handleShell(st: State, name: string, args: readonly Word[], depth: number, exempt: Set<Word>): void {
  let i = 0;
  let sawC = false;
  while (i < args.length) {
    const a = args[i]!.value;
    if (a === '--login' || (/^-[a-z]+$/.test(a) && a.includes('l'))) {
      // A login shell reads ~/.profile & co, which the agent may have armed while it was mutable.
      deny(st, `\`${name} -l\` (a login shell) reads startup files the agent may have written: use \`${name} -c '<script>'\``);
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
    deny(st, `the program name \`${short(name, 40)}\` contains a non-ASCII character (it could be a look-alike): write it in ASCII`);
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
    deny(st, `\`${short(name, 60)}\` is run by path; only programs in /bin and /usr/bin (or by bare name) may run while latched`);
    return;
  }
  if (SHELL_KEYWORDS.has(name)) {
    deny(st, `the shell keyword \`${name}\` is not supported: run plain commands joined with |, &&, || or ;`);
    return;
  }
  if (SHELL_BUILTINS.has(name)) {
    deny(st, `the shell builtin \`${name}\` can change how later commands run (options, aliases, traps, variables): it is not allowed while latched`);
    return;
  }
  for (const w of args) {
    if (w.nonAscii && w.value.startsWith('-')) {
      deny(st, `the option \`${short(w.value, 40)}\` contains a non-ASCII character (it could be a look-alike): write options in ASCII`);
      return;
    }
    if (startsWithDashLookalike(w.value)) {
      deny(st, `the argument \`${short(w.value, 40)}\` starts with a dash look-alike (not ASCII \`-\`): write options in ASCII`);
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
    deny(st, `\`${short(base, 40)}\` is not on the read-only allowlist (${[...CHECKS.keys()].filter((k) => !k.endsWith('sum')).join(', ')}, sh -c, cd)`);
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
      deny(st, `the environment assignment \`${short(words[k]!.value, 40)}\` is not allowed: it can change what a program runs`);
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
