// Decides whether a Bash command string (Codex `tool_input.command`) is read-only, and whether it
// would touch Latch's own state. Conservative by construction: anything that is not understood
// is "not read-only", with a human-readable reason. Never throws.

import { homedir } from 'node:os';
import { posix } from 'node:path';
import { parseCommandList, type Redirection, type SimpleCommand, type Word } from './shell-words.js';

export interface CommandVerdict {
  /** Every part is on the read-only allowlist and nothing writes. */
  readOnly: boolean;
  /** Would change (or read) Latch's own state: always denied, latched or not. */
  touchesLatch: boolean;
  /** Human-readable reasons for every "not read-only" and "touches Latch" finding. */
  reasons: string[];
}

export interface ClassifyContext {
  /** Latch's state directory (absolute). */
  latchHome: string;
  /** Path of the Latch executable, if known. */
  latchBin?: string;
  /** Home directory used for `~` expansion; defaults to os.homedir(). */
  home?: string;
}

const MAX_COMMAND_LENGTH = 64 * 1024;
const MAX_SHELL_DEPTH = 3;
const MAX_TRACKED_CWDS = 32;

const TRUSTED_BIN_DIRS: ReadonlySet<string> = new Set(['/bin', '/usr/bin', '/usr/local/bin']);
const SAFE_OUTPUT_TARGETS: ReadonlySet<string> = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);

/** Programs that run another program given in their arguments: used only to spot `latch` behind them. */
const LAUNCHERS: ReadonlySet<string> = new Set([
  'env', 'xargs', 'timeout', 'nohup', 'exec', 'command', 'builtin', 'sudo', 'doas', 'su', 'runuser',
  'nice', 'ionice', 'stdbuf', 'time', 'watch', 'setsid', 'flock', 'chroot', 'strace', 'ltrace',
  'unbuffer', 'script', 'parallel', 'find', 'npx', 'npm', 'pnpm', 'yarn', 'bunx', 'bun', 'node',
  'deno', 'tsx', 'ts-node', 'bash', 'sh', 'dash', 'zsh', 'ksh', 'fish', 'busybox', 'eval', 'source', '.',
]);

/** Latch subcommands that change state; used when the command could not be parsed. */
const LATCH_MUTATING_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'verify', 'resume', 'setup', 'uninstall', 'exec', 'hook', 'demo',
]);
/** Flags that must not appear on otherwise read-only latch subcommands. */
const LATCH_WRITE_FLAGS: ReadonlySet<string> = new Set([
  '--fix', '--repair', '--yes', '-y', '--force', '-f', '--write', '--reset', '--clear', '--prune',
  '--delete', '--set', '--apply',
]);
const LATCH_HELP: ReadonlySet<string> = new Set(['--help', '-h', 'help', '--version']);

type Span = [number, number];

interface Target {
  path: string;
  /** The path split into glob-pattern segments. */
  segs: string[];
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
  /** Latch's own paths, for the word-level checks. */
  targets: Target[];
  /** Absolute directories the commands may be running in (learned from `cd`). */
  cwds: Cwd[];
  pendingCwds: string[];
  deny: string[];
  touch: string[];
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
  return `glob \`${short(w.value)}\` could expand to an option of \`${cmd}\` (write ./${short(w.value)} instead)`;
}

// ---------------------------------------------------------------------------------------------
// Glob matching against protected paths (for `cat ~/.local/state/lat*/latch.db`)

type GlobItem = { k: 'lit'; c: string } | { k: 'any' } | { k: 'star' };

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
      // A bracket expression matches one character; treat it as "any" (over-approximation).
      let j = i + 1;
      if (pat[j] === '!' || pat[j] === '^') j++;
      if (pat[j] === ']') j++;
      while (j < pat.length && pat[j] !== ']') j++;
      if (j < pat.length) {
        items.push({ k: 'any' });
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
    if (it !== undefined && (it.k === 'any' || (it.k === 'lit' && it.c === text[si]))) {
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
  const lb = typeof ctx?.latchBin === 'string' && ctx.latchBin.length > 0 ? normPath(expandTilde(ctx.latchBin, home)) : null;
  const needles: State['needles'] = [
    { text: 'LATCH_HOME=', reason: 'sets LATCH_HOME' },
    { text: '$LATCH_HOME', reason: 'mentions $LATCH_HOME' },
    { text: '${LATCH_HOME', reason: 'mentions ${LATCH_HOME}' },
  ];
  const addPath = (p: string, reason: string): void => {
    needles.push({ text: p, reason });
    if (home !== null && home !== '/' && p.startsWith(home + '/')) {
      const rest = p.slice(home.length);
      needles.push({ text: '~' + rest, reason }, { text: '$HOME' + rest, reason }, { text: '${HOME}' + rest, reason });
    }
  };
  if (lh !== null) addPath(lh, `mentions the Latch home directory ${lh}`);
  if (lh !== null && lh.endsWith('/latch')) {
    // The default home is ${XDG_STATE_HOME:-~/.local/state}/latch.
    for (const text of ['XDG_STATE_HOME/latch', 'XDG_STATE_HOME}/latch', '/.local/state}/latch']) {
      needles.push({ text, reason: `mentions the Latch home directory ${lh}` });
    }
  }
  if (lb !== null) addPath(lb, `mentions the Latch executable ${lb}`);
  const targets: Target[] = [];
  const addTarget = (path: string, reason: string): void => {
    targets.push({ path, segs: path.split('/').filter((x) => x.length > 0), reason });
  };
  if (lh !== null) addTarget(lh, `refers to the Latch home directory ${lh}`);
  if (lb !== null) addTarget(lb, `refers to the Latch executable ${lb}`);
  return { home, latchHome: lh, latchBin: lb, needles, targets, cwds: [], pendingCwds: [], deny: [], touch: [] };
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
  return { readOnly: st.deny.length === 0, touchesLatch: st.touch.length > 0, reasons };
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

/** Word-level check: the dequoted word (after `~`, `..`, `cd` and glob resolution) reaches Latch's files. */
function wordTouchCheck(st: State, w: Word): void {
  const targets = st.targets;
  if (targets.length === 0) return;

  const value = w.tilde ? expandTilde(w.value, st.home) : w.value;
  const candidates = [value];
  const eq = value.indexOf('=');
  if (eq >= 0) candidates.push(expandTilde(value.slice(eq + 1), st.home));

  for (const t of targets) {
    let hit = false;
    for (const c of candidates) {
      if (c.includes(t.path)) hit = true;
      else if (c.startsWith('/')) hit = isInside(normPath(c), t.path);
      else if (c.length > 0) hit = st.cwds.some((cwd) => isInside(posix.resolve(cwd.path, c), t.path));
      if (hit) break;
    }
    if (!hit && w.glob) {
      let pattern = w.pattern;
      if (w.tilde && st.home !== null) pattern = escapeGlob(st.home) + pattern.slice(1);
      const rel = patternSegments(pattern);
      if (pattern.startsWith('/')) hit = globReaches(resolveSegments([], rel), t.segs);
      else hit = st.cwds.some((cwd) => globReaches(resolveSegments(cwd.segs, rel), t.segs));
    }
    if (hit) touch(st, t.reason);
  }
}

// ---------------------------------------------------------------------------------------------
// Latch itself

interface LatchInvocation {
  /** The words that launch latch (`latch`, `npx latch`, `node /x/latch.cjs`). */
  prog: Word[];
  args: Word[];
  /** Launched in one of the plain, allowed forms. */
  strict: boolean;
}

function isLatchProgramName(st: State, v: string): boolean {
  const b = posix.basename(v);
  if (b === 'latch' || b === 'latch.cjs') return true;
  return st.latchBin !== null && v.length > 0 && normPath(expandTilde(v, st.home)) === st.latchBin;
}

function isLatchPackageName(v: string): boolean {
  return v === 'latch' || v === 'agent-latch' || v.startsWith('agent-latch@');
}

function matchLatchInvocation(st: State, argv: readonly Word[]): LatchInvocation | null {
  const w0 = argv[0]!;
  if (isLatchProgramName(st, w0.value)) return { prog: [w0], args: argv.slice(1), strict: !w0.glob };
  const b0 = posix.basename(w0.value);
  if (b0 !== 'npx' && b0 !== 'node') return null;
  const launcherTrusted = !w0.glob && (!w0.value.includes('/') || TRUSTED_BIN_DIRS.has(posix.dirname(w0.value)));
  let j = 1;
  while (j < argv.length && argv[j]!.value.startsWith('-')) j++;
  const w = argv[j];
  if (w === undefined) return null;
  const matches = b0 === 'npx' ? isLatchPackageName(w.value) : isLatchProgramName(st, w.value);
  if (!matches) return null;
  return { prog: argv.slice(0, j + 1), args: argv.slice(j + 1), strict: j === 1 && launcherTrusted && !w.glob };
}

/** Is `latch <args>` one of the read-only forms? */
function latchSubcommand(args: readonly string[]): { readOnly: boolean; label: string } {
  const label = args.length === 0 ? '(no subcommand)' : short(args.slice(0, 2).join(' '), 40);
  const sub = args[0];
  if (sub === undefined) return { readOnly: false, label };
  if (args.length === 1 && LATCH_HELP.has(sub)) return { readOnly: true, label };
  switch (sub) {
    case 'status':
    case 'log':
    case 'doctor':
    case 'blame': {
      for (const a of args.slice(1)) {
        const eq = a.indexOf('=');
        const name = eq < 0 ? a : a.slice(0, eq);
        if (LATCH_WRITE_FLAGS.has(name)) return { readOnly: false, label: `${sub} ${short(a, 30)}` };
      }
      return { readOnly: true, label };
    }
    case 'brief':
      return { readOnly: briefReadOnly(args.slice(1)), label };
    default:
      return { readOnly: false, label };
  }
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
    if (a === 'show' && !show && !page) show = true;
    else if (name === '--page' && !page && !show) {
      const v = value();
      if (v === undefined || !isAllDigits(v)) return false;
      page = true;
    } else if (name === '--session' || name === '--cwd') {
      const v = value();
      if (v === undefined || v.startsWith('-')) return false;
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
    const sub = latchSubcommand(pieces.slice(i + 1));
    if (mutating || (i === firstProgram && !sub.readOnly)) {
      touch(st, `\`${short(launcher, 30)}\` runs \`latch ${sub.label}\`, which changes Latch state`);
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
      touch(st, `\`latch ${next}\` changes Latch state`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Per-command checks. Each returns a reason when the invocation is not read-only, else null.

type Check = (args: readonly Word[]) => string | null;

const always: Check = () => null;

const checkFind: Check = (args) => {
  const banned = new Set(['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls']);
  for (const w of args) {
    if (banned.has(w.value)) return `\`find ${w.value}\` can run commands, delete or write files`;
    if (mayExpandToOption(w)) return globOptionReason('find', w);
  }
  return null;
};

const checkSort: Check = (args) => {
  for (const w of optionArea(args)) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason('sort', w);
    if (isLongOption(a, ['output'])) return `\`sort ${short(a, 30)}\` writes a file`;
    if (isLongOption(a, ['compress-program'])) return `\`sort ${short(a, 30)}\` runs a program`;
    if (shortClusterHas(a, 'o', 'ktST')) return `\`sort ${short(a, 30)}\` writes a file`;
  }
  return null;
};

const checkRg: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('rg', w);
    if (isLongOption(w.value, ['pre', 'pre-glob', 'hostname-bin'])) return `\`rg ${short(w.value, 30)}\` runs external programs`;
  }
  return null;
};

const checkTree: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('tree', w);
    const a = w.value;
    if (a.startsWith('-') && !a.startsWith('--') && (a.includes('o') || a.includes('R'))) {
      return `\`tree ${short(a, 30)}\` can write output files`;
    }
  }
  return null;
};

const checkFile: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('file', w);
    const a = w.value;
    if (isLongOption(a, ['compile']) || (a.startsWith('-') && !a.startsWith('--') && a.includes('C'))) {
      return `\`file ${short(a, 30)}\` writes a compiled magic file`;
    }
  }
  return null;
};

const checkPrintf: Check = (args) => {
  const first = args[0];
  if (first === undefined) return null;
  if (mayExpandToOption(first)) return globOptionReason('printf', first);
  if (first.value.startsWith('-v')) return '`printf -v` assigns a shell variable';
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
  return positional > 1 ? '`uniq INPUT OUTPUT` writes the output file' : null;
};

const checkSet: Check = (args) => {
  let expectOptionName = false;
  for (const w of args) {
    const a = w.value;
    if (w.glob) return `\`set ${short(a, 30)}\` is not allowed`;
    if (expectOptionName) {
      expectOptionName = false;
      if (/^[a-z-]{1,32}$/.test(a)) continue;
    } else if (/^[-+][a-zA-Z]{1,16}$/.test(a)) {
      expectOptionName = a.endsWith('o');
      continue;
    }
    return `\`set ${short(a, 30)}\` is only allowed with shell options`;
  }
  return null;
};

// git --------------------------------------------------------------------------------------------

const GIT_READ_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'status', 'diff', 'log', 'show', 'rev-parse', 'ls-files', 'blame', 'describe',
  'ls-tree', 'cat-file', 'merge-base', 'grep', 'branch', 'remote', 'config',
]);

function checkGitBranch(rest: readonly Word[]): string | null {
  const flags = new Set(['-a', '--all', '-r', '--remotes', '-v', '-vv', '--verbose', '--list', '-l', '--show-current', '--no-color', '--no-column']);
  for (const w of rest) {
    const a = w.value;
    if (flags.has(a)) continue;
    if (/^-[arvl]{1,6}$/.test(a)) continue;
    if (a.startsWith('-')) return `\`git branch ${short(a, 30)}\` is not a listing flag`;
    return `\`git branch\` with an argument (\`${short(a, 30)}\`) can create or change branches`;
  }
  return null;
}

function checkGitConfig(rest: readonly Word[]): string | null {
  const modifiers = new Set([
    '--global', '--system', '--local', '--worktree', '--show-origin', '--show-scope', '--name-only',
    '-z', '--null', '--includes', '--no-includes', '--bool', '--int', '--bool-or-int', '--path', '--expiry-date',
  ]);
  const withValue = new Set(['--type', '--default', '--file', '-f', '--blob', '--value', '--url']);
  const readActions = new Map<string, number>([['--get', 2], ['--get-all', 2], ['--get-regexp', 2], ['--list', 0], ['-l', 0]]);
  let args = rest;
  let action: string | null = null;
  let maxPositional = 0;
  const first = rest[0]?.value;
  if (first === 'get' || first === 'list') {
    action = first;
    maxPositional = first === 'get' ? 1 : 0;
    args = rest.slice(1);
    modifiers.add('--all').add('--regexp');
  }
  let positional = 0;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!.value;
    if (args[k]!.glob) return `\`git config ${short(a, 30)}\`: globs are not allowed`;
    if (modifiers.has(a)) continue;
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    if (withValue.has(name)) {
      if (eq < 0) k++;
      continue;
    }
    if (action === null && readActions.has(a)) {
      action = a;
      maxPositional = readActions.get(a)!;
      continue;
    }
    if (a.startsWith('-')) return `\`git config ${short(a, 30)}\` is not a read-only form`;
    positional++;
  }
  if (action === null) return '`git config` is only allowed with --get, --get-all, --get-regexp, --list, `get` or `list`';
  if (positional > maxPositional) return '`git config` with these arguments can change configuration';
  return null;
}

const checkGit: Check = (args) => {
  let i = 0;
  while (i < args.length) {
    const a = args[i]!.value;
    if (a === '--no-pager') {
      i++;
    } else if (a === '-C') {
      const dir = args[i + 1];
      if (dir === undefined) return '`git -C` needs a directory';
      if (dir.glob) return '`git -C` with a glob is not allowed';
      i += 2;
    } else if (a.startsWith('-')) {
      return `git global option \`${short(a, 40)}\` is not allowed (only -C and --no-pager)`;
    } else {
      break;
    }
  }
  const subWord = args[i];
  if (subWord === undefined) return '`git` without a subcommand is not allowed';
  const sub = subWord.value;
  if (subWord.glob || !GIT_READ_SUBCOMMANDS.has(sub)) return `\`git ${short(sub, 30)}\` is not on the read-only allowlist`;
  const rest = args.slice(i + 1);
  for (const w of optionArea(rest)) {
    if (mayExpandToOption(w)) return globOptionReason(`git ${sub}`, w);
    if (isLongOption(w.value, ['output', 'ext-diff'])) return `\`git ${sub} ${short(w.value, 30)}\` is not allowed (writes a file or runs an external diff)`;
  }
  switch (sub) {
    case 'branch':
      return checkGitBranch(rest);
    case 'remote':
      if (rest.length === 0 || (rest.length === 1 && (rest[0]!.value === '-v' || rest[0]!.value === '--verbose'))) return null;
      return '`git remote` is only allowed as `git remote` or `git remote -v`';
    case 'config':
      return checkGitConfig(rest);
    case 'grep':
      for (const w of optionArea(rest)) {
        if (isLongOption(w.value, ['open-files-in-pager']) || shortClusterHas(w.value, 'O', 'efABCm')) {
          return '`git grep -O` opens files in a program';
        }
      }
      return null;
    default:
      return null;
  }
};

const CHECKS: ReadonlyMap<string, Check> = new Map<string, Check>([
  ...[
    'ls', 'cat', 'head', 'tail', 'wc', 'pwd', 'echo', 'true', 'false', 'stat', 'du', 'df', 'which',
    'type', 'basename', 'dirname', 'realpath', 'readlink', 'diff', 'cmp', 'nl', 'grep', 'egrep',
    'fgrep', 'cut', 'tr', 'jq', 'md5sum', 'sha1sum', 'sha224sum', 'sha256sum', 'sha384sum',
    'sha512sum', 'b2sum', 'cksum',
  ].map((n): [string, Check] => [n, always]),
  ['find', checkFind],
  ['sort', checkSort],
  ['rg', checkRg],
  ['tree', checkTree],
  ['file', checkFile],
  ['printf', checkPrintf],
  ['uniq', checkUniq],
  ['set', checkSet],
  ['git', checkGit],
]);

// ---------------------------------------------------------------------------------------------
// Walking the parsed command

function checkRedirection(st: State, r: Redirection): void {
  const t = r.target;
  const v = t.value;
  const isFd = v === '-' || isAllDigits(v) || (v.endsWith('-') && isAllDigits(v.slice(0, -1)));
  switch (r.op) {
    case '<':
      return;
    case '<&':
      if (isFd && !t.glob) return;
      deny(st, `input duplication \`<&${short(v, 30)}\` is not supported`);
      return;
    case '<>':
      deny(st, `read-write redirection: <> ${short(v, 60)}`);
      return;
    case '>&':
      if (isFd && !t.glob) return;
      break;
    default:
      break;
  }
  if (!t.glob && !t.tilde && SAFE_OUTPUT_TARGETS.has(v)) return;
  deny(st, `redirection to a file: ${r.fd ?? ''}${r.op} ${short(v, 60)}`);
}

function isAssignment(w: Word): boolean {
  const v = w.value;
  if (v.length === 0 || !/^[A-Za-z_]/.test(v)) return false;
  let i = 1;
  while (i < v.length && /[A-Za-z0-9_]/.test(v[i]!)) i++;
  return v[i] === '=' || (v[i] === '+' && v[i + 1] === '=');
}

function handleCd(st: State, args: readonly Word[]): void {
  let target: Word | null = null;
  let sawPositional = false;
  for (const w of args) {
    if (!sawPositional && ['-L', '-P', '-e', '-@', '--'].includes(w.value)) continue;
    sawPositional = true;
    target ??= w;
  }
  let dirs: string[] = [];
  if (target === null) {
    if (st.home !== null) dirs = [st.home];
  } else if (!target.glob && target.value !== '-') {
    const v = target.tilde ? expandTilde(target.value, st.home) : target.value;
    if (v.startsWith('/')) dirs = [normPath(v)];
    else dirs = st.cwds.map((c) => posix.resolve(c.path, v));
  }
  st.pendingCwds.push(...dirs);
}

function handleShell(st: State, name: string, args: readonly Word[], depth: number, exempt: Set<Word>): void {
  let i = 0;
  let sawC = false;
  while (i < args.length) {
    const a = args[i]!.value;
    if (a === '--login') {
      i++;
    } else if (/^-[lceux]{1,8}$/.test(a)) {
      if (a.includes('c')) sawC = true;
      i++;
    } else {
      break;
    }
  }
  const script = args[i];
  if (!sawC || script === undefined || i !== args.length - 1) {
    deny(st, `\`${name}\` is only allowed as \`${name} -c '<script>'\` with a single script argument`);
    scanLauncher(st, name, args);
    return;
  }
  if (script.glob || script.tilde) {
    deny(st, `\`${name} -c\` with an unquoted glob or ~ as the script is not allowed`);
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

function handleLatch(st: State, inv: LatchInvocation, exempt: Set<Word>): void {
  const sub = latchSubcommand(inv.args.map((w) => w.value));
  const globbed = inv.args.find(mayExpandToOption);
  if (globbed !== undefined) {
    const msg = globOptionReason('latch', globbed);
    deny(st, msg);
    touch(st, msg);
    return;
  }
  if (!sub.readOnly) {
    const msg = `\`latch ${sub.label}\` changes Latch state`;
    deny(st, msg);
    touch(st, msg);
    return;
  }
  if (!inv.strict) {
    deny(st, 'latch is only allowed as `latch ...`, `npx latch ...` or `node <path>/latch.cjs ...` without launcher options');
    return;
  }
  // The launcher words are exempt from the "mentions the latch home" checks only when they are
  // the configured executable or an absolute path inside the latch home (an installed shim).
  for (const w of inv.prog) {
    const v = normPath(expandTilde(w.value, st.home));
    const mentions = st.needles.some((n) => w.value.includes(n.text));
    if (v === st.latchBin || (v.startsWith('/') && st.latchHome !== null && isInside(v, st.latchHome)) || !mentions) exempt.add(w);
  }
}

function analyzeArgv(st: State, argv: readonly Word[], depth: number, exempt: Set<Word>): void {
  const w0 = argv[0]!;
  const args = argv.slice(1);
  const inv = matchLatchInvocation(st, argv);
  if (inv !== null) {
    handleLatch(st, inv, exempt);
    return;
  }
  const name = w0.value;
  const base = posix.basename(name);
  if (LAUNCHERS.has(base) && base !== 'bash' && base !== 'sh') scanLauncher(st, base, args);
  if (w0.glob) {
    deny(st, `command name \`${short(name, 40)}\` contains a glob`);
    return;
  }
  if (name.includes('/') && (w0.tilde || !TRUSTED_BIN_DIRS.has(posix.normalize(posix.dirname(name))))) {
    deny(st, `\`${short(name, 60)}\` is run by path; only /bin, /usr/bin and /usr/local/bin are trusted`);
    return;
  }
  if (name === '{' || name === '}') {
    deny(st, 'brace groups `{ ...; }` are not supported');
    return;
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
    deny(st, `\`${short(base, 40)}\` is not on the read-only allowlist`);
    return;
  }
  const reason = check(args);
  if (reason !== null) deny(st, reason);
}

function classifySimple(st: State, cmd: SimpleCommand, depth: number, spans: Span[]): void {
  for (const r of cmd.redirections) checkRedirection(st, r);
  const words = cmd.words;
  const exempt = new Set<Word>();
  if (words.length === 0) {
    deny(st, 'redirection without a command');
  } else {
    let k = 0;
    while (k < words.length && isAssignment(words[k]!)) {
      deny(st, `environment assignment \`${short(words[k]!.value, 40)}\` is not allowed`);
      k++;
    }
    if (k < words.length) analyzeArgv(st, words.slice(k), depth, exempt);
  }
  for (const w of words) {
    if (exempt.has(w)) spans.push([w.start, w.end]);
    else wordTouchCheck(st, w);
  }
  for (const r of cmd.redirections) wordTouchCheck(st, r.target);
  if (st.pendingCwds.length > 0) {
    for (const d of st.pendingCwds) {
      if (st.cwds.length < MAX_TRACKED_CWDS && !st.cwds.some((c) => c.path === d)) {
        st.cwds.push({ path: d, segs: patternSegments(escapeGlob(d)).filter((x) => x.length > 0) });
      }
    }
    st.pendingCwds = [];
  }
}

function classifyScript(st: State, text: string, depth: number): void {
  const parsed = parseCommandList(text);
  if (!parsed.ok) {
    deny(st, parsed.reason);
    rawTouchCheck(st, text, []);
    fallbackLatchScan(st, text);
    return;
  }
  if (parsed.commands.length === 0) {
    deny(st, 'empty command');
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
      deny(st, 'command is not a string');
      return verdict(st);
    }
    if (command.length > MAX_COMMAND_LENGTH) {
      deny(st, `command is longer than ${MAX_COMMAND_LENGTH} characters`);
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
    return { readOnly: false, touchesLatch, reasons: ['internal error while classifying the command'] };
  }
}
