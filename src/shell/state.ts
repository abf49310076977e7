// The read-only classifier's shared vocabulary (readonly.ts is its entry point): the verdict and
// context types, the per-classification State with its findings (deny, touch, verdict), the
// file-system budget and symlink resolution (spend, realish, physical), and the small option and
// path helpers every check uses. It imports only glob.ts and words.ts, so that checks.ts, git.ts,
// latch-guard.ts and readonly.ts can all import it without importing one another in a circle.

import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import type { Word } from './words.js';
import { patternSegments } from './glob.js';

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
   * GIT_CONFIG_COUNT, every `-c` switch of GIT_SAFE_CONFIG in git.ts): git then needs only `--no-pager`
   * and, where a diff is produced, `--no-ext-diff --no-textconv` right after the subcommand.
   */
  gitEnvHardened?: boolean;
  /**
   * The command runs inside a kernel read-only sandbox (a held read the hook runs: src/guard/decide.ts
   * sandboxedReplay): a recursive reader that passes over a protected path reads it there and can
   * change nothing, so only naming a protected path (or one inside it) touches Latch.
   */
  sandboxed?: boolean;
}

/** File-system lookups (realpath, readdir, config reads) allowed per classification. */
const FS_BUDGET = 4000;

/** Absolute program paths accepted for allowlisted programs (not /usr/local/bin: often user-writable). */
export const TRUSTED_BIN_DIRS: ReadonlySet<string> = new Set(['/bin', '/usr/bin']);

export type Span = [number, number];

export interface Target {
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

export interface State {
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
  /** ClassifyContext.sandboxed. */
  sandboxed: boolean;
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

export function short(s: string, max = 80): string {
  const oneLine = s.replace(/\s+/g, ' ');
  return oneLine.length > max ? oneLine.slice(0, max - 1) + '…' : oneLine;
}

export function normPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

export function expandTilde(v: string, home: string | null): string {
  if (home === null) return v;
  if (v === '~') return home;
  if (v.startsWith('~/')) return home + v.slice(1);
  return v;
}

export function isInside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === '/' ? '/' : dir + '/');
}

export function escapeGlob(s: string): string {
  let out = '';
  for (const ch of s) out += '*?[]\\'.includes(ch) ? '\\' + ch : ch;
  return out;
}

export function isAllDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (const ch of s) if (ch < '0' || ch > '9') return false;
  return true;
}

/** `--name=value` → `name`; anything that is not a long option → null. */
export function longName(a: string): string | null {
  if (!a.startsWith('--') || a.length === 2) return null;
  const eq = a.indexOf('=');
  return eq < 0 ? a.slice(2) : a.slice(2, eq);
}

/** True if `a` is one of the long options `names`, or an abbreviation of one (getopt_long style). */
export function isLongOption(a: string, names: readonly string[]): boolean {
  const n = longName(a);
  if (n === null || n.length === 0) return false;
  return names.some((x) => x === n || x.startsWith(n));
}

/**
 * True if the short-option cluster `a` (e.g. `-uo`) contains one of `letters` as an option
 * letter. Scanning stops at the first letter that takes an argument (the rest is that argument).
 */
export function shortClusterHas(a: string, letters: string, takesArgument: string): boolean {
  if (!a.startsWith('-') || a.startsWith('--') || a.length < 2) return false;
  for (let i = 1; i < a.length; i++) {
    const ch = a[i]!;
    if (letters.includes(ch)) return true;
    if (takesArgument.includes(ch)) return false;
  }
  return false;
}

/** Words before a `--` end-of-options marker. */
export function optionArea(args: readonly Word[]): Word[] {
  const out: Word[] = [];
  for (const w of args) {
    if (w.value === '--') break;
    out.push(w);
  }
  return out;
}

/** An unquoted glob that could expand to a file name starting with `-` (option injection). */
export function mayExpandToOption(w: Word): boolean {
  if (!w.glob) return false;
  const c = w.pattern[0];
  return c === '*' || c === '?' || c === '[' || c === '-';
}

export function globOptionReason(cmd: string, w: Word): string {
  return `the glob \`${short(w.value)}\` could expand to a file name that \`${cmd}\` reads as an option: write ./${short(w.value)} instead`;
}

/** Characters that look like an ASCII hyphen-minus. */
export function startsWithDashLookalike(v: string): boolean {
  const c = v.charCodeAt(0);
  return (
    (c >= 0x2010 && c <= 0x2015) ||
    c === 0x2212 ||
    c === 0xfe58 ||
    c === 0xfe63 ||
    c === 0xff0d ||
    c === 0x2043 ||
    c === 0x2e3a ||
    c === 0x2e3b
  );
}

// ---------------------------------------------------------------------------------------------
// State and findings

export function makeState(ctx: ClassifyContext | undefined): State {
  let home: string | null = null;
  try {
    const h = typeof ctx?.home === 'string' && ctx.home.length > 0 ? ctx.home : homedir();
    home = h.startsWith('/') ? normPath(h) : null;
  } catch {
    home = null;
  }
  const lh =
    typeof ctx?.latchHome === 'string' && ctx.latchHome.length > 0 ? normPath(expandTilde(ctx.latchHome, home)) : null;
  const lbRaw =
    typeof ctx?.latchBin === 'string' && ctx.latchBin.length > 0 ? normPath(expandTilde(ctx.latchBin, home)) : null;
  const lb = lbRaw !== null && lbRaw.startsWith('/') ? lbRaw : null;
  const st: State = {
    home,
    latchHome: lh,
    latchBin: lb,
    needles: [
      {
        text: 'LATCH_HOME=',
        reason: 'the command sets LATCH_HOME, the variable naming the Latch home directory; the agent may not use it',
      },
      {
        text: '$LATCH_HOME',
        reason: 'the command mentions $LATCH_HOME, the Latch home directory; the agent may neither read nor change it',
      },
      {
        text: '${LATCH_HOME',
        reason:
          'the command mentions ${LATCH_HOME}, the Latch home directory; the agent may neither read nor change it',
      },
    ],
    targets: [],
    cwds: [],
    cwdKnown: false,
    gitEnvHardened: ctx?.gitEnvHardened === true,
    sandboxed: ctx?.sandboxed === true,
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
      st.needles.push(
        { text: '~' + rest, reason },
        { text: '$HOME' + rest, reason },
        { text: '${HOME}' + rest, reason },
      );
    }
  };
  const addTarget = (path: string, reason: string): void => {
    const real = realish(st, path);
    st.targets.push({
      path,
      segs: path.split('/').filter((x) => x.length > 0),
      real: real !== path ? real : null,
      reason,
    });
  };
  if (lh !== null) {
    addPath(lh, 'the Latch home directory');
    addTarget(lh, `it reaches the Latch home directory ${lh}, which the agent may neither read nor change`);
    if (lh.endsWith('/latch')) {
      // The default home is ${XDG_STATE_HOME:-~/.local/state}/latch.
      const reason = `the command mentions the Latch home directory ${lh}, which the agent may neither read nor change`;
      for (const text of ['XDG_STATE_HOME/latch', 'XDG_STATE_HOME}/latch', '/.local/state}/latch'])
        st.needles.push({ text, reason });
    }
  }
  if (lb !== null) {
    addPath(lb, 'the Latch executable');
    addTarget(
      lb,
      `it reaches the Latch executable ${lb}, which the agent may neither read nor change (it may only run it, as \`${lb} status\` and the other read forms)`,
    );
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

export function deny(st: State, reason: string): void {
  st.deny.push(reason);
}

export function touch(st: State, reason: string): void {
  st.touch.push(reason);
}

export function verdict(st: State): CommandVerdict {
  const reasons: string[] = [];
  const seen = new Set<string>();
  for (const r of [...st.deny, ...st.touch]) {
    if (!seen.has(r)) {
      seen.add(r);
      reasons.push(r);
    }
  }
  return {
    readOnly: st.deny.length === 0,
    touchesLatch: st.touch.length > 0,
    reasons,
    touchReasons: [...new Set(st.touch)],
  };
}

export function spend(st: State): boolean {
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
export function realish(st: State, p: string, depth = 0): string {
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

/**
 * `rel` resolved physically from `base`, the way the kernel does: each component's symlink is
 * followed before a later `..` applies (`link/../x` is the link target's parent's x, not ./x).
 */
export function physical(st: State, base: string, rel: string): string {
  let cur = rel.startsWith('/') ? '/' : realish(st, base);
  for (const comp of rel.split('/')) {
    if (comp === '' || comp === '.') continue;
    if (comp === '..') cur = posix.dirname(cur);
    else cur = realish(st, cur === '/' ? '/' + comp : cur + '/' + comp);
  }
  return cur;
}
