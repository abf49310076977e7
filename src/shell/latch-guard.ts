// What makes a command touch Latch's own state (`touchesLatch`), for the read-only classifier
// (readonly.ts): the path rules (a word, glob, hard link or recursive search that reaches the Latch
// home, the executable or a protected path, and the raw-text needles such as $LATCH_HOME), and the
// latch rules (any way of running latch other than the installed executable's read forms, also
// behind a launcher or in text that does not parse). Findings go to State through touch() and
// deny() (state.ts).

import { readdirSync, statSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import type { Word } from './words.js';
import { segmentMatches, patternSegments, resolveSegments, globReaches, literalSegment } from './glob.js';
import {
  TRUSTED_BIN_DIRS,
  type Span,
  type Target,
  type State,
  short,
  normPath,
  expandTilde,
  isInside,
  escapeGlob,
  isAllDigits,
  deny,
  touch,
  spend,
  realish,
  physical,
} from './state.js';

// ---------------------------------------------------------------------------------------------
// Reaching protected paths

/** Raw-text check, ignoring the spans that are exempt (an allowed latch program path, an inner script). */
export function rawTouchCheck(st: State, text: string, exempt: readonly Span[]): void {
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
  let s: Stats;
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
export function wordTouchCheck(st: State, w: Word, opts: PathCheckOptions = {}): void {
  const targets = st.targets;
  if (targets.length === 0) return;
  // Inside the read-only sandbox a recursive reader may pass over a protected path: it can only read it.
  const recursive = opts.recursive === true && !st.sandboxed;

  const value = w.tilde ? expandTilde(w.value, st.home) : w.value;
  // An option word (`-la`, `--stat`) is not a path unless it carries one (`-f../x`, `--file=x`).
  const optionLike = value.startsWith('-') && !value.includes('/') && !value.includes('=');
  const candidates = optionLike ? [] : [value];
  const eq = value.indexOf('=');
  if (eq >= 0) candidates.push(expandTilde(value.slice(eq + 1), st.home));
  // An option with its value attached: `-f../x`, `-C/dir`.
  if (value.startsWith('-') && !value.startsWith('--') && value.length > 2)
    candidates.push(expandTilde(value.slice(2), st.home));

  const hits = new Set<Target>();
  for (const c of candidates) {
    if (c.length === 0) continue;
    let abs: string[];
    if (c.startsWith('/')) abs = [normPath(c)];
    else if (st.cwdKnown) abs = st.cwds.map((cwd) => posix.resolve(cwd.path, c));
    else {
      abs = [];
      if (c === '..' || c.startsWith('../') || c.includes('/../') || c.endsWith('/..')) {
        deny(
          st,
          `the relative path \`${short(c, 60)}\` cannot be checked without the working directory: use an absolute path`,
        );
      }
    }
    // `/proc/self/cwd/../x` is resolved by the kernel from the cwd, not lexically.
    if (c.startsWith('/proc/') && c.split('/').includes('..')) {
      deny(
        st,
        `\`${short(c, 60)}\` climbs out of a /proc path with \`..\`, which cannot be checked: name the file itself`,
      );
      continue;
    }
    const rewritten: string[] = [];
    for (const a of abs) {
      const r = procRewrite(st, a);
      if (r === null)
        deny(
          st,
          `\`${short(c, 60)}\` names a file through a process (/proc, /dev/fd), which cannot be checked: name the file itself`,
        );
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
    // Each name once, and none the resolution above found missing (its stat would fail the same way).
    for (const p of new Set([...abs, ...phys])) {
      if (st.missing.has(p)) continue;
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
      if (
        segs[0] === 'proc' ||
        (segs[0] === 'dev' && segs[1] !== undefined && segs[1] !== 'null' && literalSegment(segs[1]) === null) ||
        (segs[0] === 'dev' && segs[1] === 'fd')
      ) {
        deny(st, `the glob \`${short(w.value, 60)}\` reaches /proc or /dev, which cannot be checked: name the file`);
        continue;
      }
      // Outside the sealed sandbox a pattern that could match a protected path is refused whether or not
      // it does today. Inside, a protected path is hidden: what the glob matches now is what counts
      // (`ls -d */` at a root whose .latch.toml is absent, or a file `*/` cannot match, reads).
      if (!st.sandboxed)
        for (const t of targets)
          if (!hits.has(t) && (globReaches(segs, t.segs) || (recursive && globReaches(t.segs, segs)))) hits.add(t);
      const matches = expandGlob(
        st,
        [pattern.startsWith('/') ? '/' : '/' + base.map((x) => literalSegment(x) ?? x).join('/')],
        rel,
      );
      if (matches === null) {
        deny(st, `the glob \`${short(w.value, 60)}\` matches too many files to check: name the files`);
        continue;
      }
      for (const m of matches) {
        for (const t of targets)
          if (!hits.has(t) && reaches(st, m, t, recursive, opts.skipsHidden === true)) hits.add(t);
        const linked = hardLinkTarget(st, m);
        if (linked) hits.add(linked);
      }
    }
  }
  for (const t of hits)
    touch(st, `\`${short(w.value, 60)}\`${recursive ? ' (searched recursively)' : ''}: ${t.reason}`);
}

/** The implicit `.` of a recursive reader without a path argument. */
export function cwdTouchCheck(st: State, what: string, skipsHidden: boolean): void {
  if (st.sandboxed) return;
  for (const cwd of st.cwds) {
    for (const t of st.targets) {
      if (reaches(st, cwd.path, t, true, skipsHidden))
        touch(
          st,
          `${what} searches the working directory ${cwd.path} recursively: ${t.reason} (name the files or subdirectories to search; rg without --hidden skips dot-directories)`,
        );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Latch itself

/** Latch subcommands that change state; used when the command could not be parsed. */
const LATCH_MUTATING_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'verify',
  'resume',
  'setup',
  'uninstall',
  'exec',
  'hook',
  'demo',
  'doctor',
  'watch',
  '__watch',
  '__serve',
  'report',
  'export',
]);

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

export function matchLatchInvocation(st: State, argv: readonly Word[]): LatchInvocation | null {
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
    const fileOk =
      st.latchBin !== null && /\.(c|m)?js$/.test(st.latchBin) && w.value === st.latchBin && !w.glob && !w.tilde;
    return { prog: argv.slice(0, j + 1), args: argv.slice(j + 1), installed: j === 1 && nodeOk && fileOk };
  }
  if (PACKAGE_RUNNERS.has(b0)) {
    for (let j = 1; j < Math.min(argv.length, 5); j++) {
      if (isLatchPackageName(argv[j]!.value))
        return { prog: argv.slice(0, j + 1), args: argv.slice(j + 1), installed: false };
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

function latchOptionsOk(
  rest: readonly string[],
  withValue: readonly string[],
  flags: readonly string[],
  positionals: number,
): boolean {
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
export function scanLauncher(st: State, launcher: string, args: readonly Word[]): void {
  const pieces = args.flatMap((w) => splitPieces(w.value));
  let firstProgram = -1;
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    if (firstProgram < 0 && !p.startsWith('-') && !p.includes('=') && !isAllDigits(p)) firstProgram = i;
    if (!isLatchPiece(st, p)) continue;
    const next = pieces[i + 1];
    const mutating =
      next !== undefined && (LATCH_MUTATING_SUBCOMMANDS.has(next) || (next === 'brief' && pieces[i + 2] === 'set'));
    if (mutating || i === firstProgram) {
      touch(
        st,
        `\`${short(launcher, 30)}\` runs latch (\`latch ${latchSubcommand(pieces.slice(i + 1)).label}\`); only a human may run latch that way`,
      );
      return;
    }
  }
}

/** Unparseable text: still spot the obvious `latch resume ...` and friends. */
export function fallbackLatchScan(st: State, text: string): void {
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

export function handleLatch(st: State, inv: LatchInvocation, exempt: Set<Word>): void {
  const spelled = short(inv.prog.map((w) => w.value).join(' '), 60);
  if (!inv.installed) {
    const msg =
      st.latchBin === null
        ? `\`${spelled}\` runs a program named latch, and the installed Latch executable is not known here: no latch invocation is allowed`
        : `\`${spelled}\` could run another program named latch than the installed executable: run Latch's reads as plain \`latch status\`, \`latch brief --page N\`, \`latch brief show\`, \`latch log\` or \`latch blame PATH\` (the hook runs the installed Latch for them)`;
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
    const doctor = inv.args[0]?.value === 'doctor';
    const msg =
      doctor && inv.args.some((w) => w.value === '--repair' || w.value.startsWith('--repair='))
        ? "`latch doctor --repair` replaces Latch's store (it moves the store aside and starts a fresh one); only a human may run it"
        : doctor
          ? '`latch doctor` starts processes and may write to the Codex home; only a human may run it'
          : `\`latch ${sub.label}\` is not one of the agent's read forms (status, log, blame PATH, brief --page N, brief show; options --cwd, --session, --json): it may change Latch state, and only a human may run it`;
    deny(st, msg);
    touch(st, msg);
    return;
  }
  for (const w of inv.prog) exempt.add(w);
}
