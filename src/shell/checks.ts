// Per-command checks of the read-only allowlist (the table naming the programs, CHECKS, and the walk
// that calls them are in readonly.ts; git's rules are in git.ts). Each returns a reason when the
// invocation is not read-only, else null. A check may mark the call as a recursive read (an
// ancestor of a protected path then counts).

import type { Word } from './words.js';
import {
  type State,
  short,
  longName,
  isLongOption,
  shortClusterHas,
  optionArea,
  mayExpandToOption,
  globOptionReason,
} from './state.js';

export interface CheckCx {
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
  'regexp',
  'file',
  'max-count',
  'after-context',
  'before-context',
  'context',
  'directories',
  'devices',
  'include',
  'exclude',
  'exclude-dir',
  'exclude-from',
  'label',
  'binary-files',
  'group-separator',
];
const RG_LONG_WITH_VALUE = [
  'regexp',
  'file',
  'glob',
  'iglob',
  'type',
  'type-not',
  'type-add',
  'type-clear',
  'after-context',
  'before-context',
  'context',
  'encoding',
  'threads',
  'max-columns',
  'max-count',
  'replace',
  'max-depth',
  'max-filesize',
  'sort',
  'sortr',
  'path-separator',
  'colors',
  'color',
  'context-separator',
  'field-context-separator',
  'field-match-separator',
  'ignore-file',
  'pre',
  'pre-glob',
  'engine',
  'dfa-size-limit',
  'regex-size-limit',
  'hyperlink-format',
  'generate',
  'maxdepth',
  'hostname-bin',
  'hyperlink',
];

export type Check = (args: readonly Word[], cx: CheckCx) => string | null;

/** Programs with no option that writes files or runs programs: every option is fine. */
export const always: Check = () => null;

/** Options that read a list of file names from a file, which cannot be checked. */
function filesFromReason(prog: string, args: readonly Word[], names: readonly string[]): string | null {
  for (const w of optionArea(args)) {
    if (isLongOption(w.value, names))
      return `\`${prog} ${short(w.value, 30)}\` reads file names from a file, which cannot be checked: name the files`;
  }
  return null;
}

export const checkWcDu =
  (prog: string): Check =>
  (args) =>
    filesFromReason(prog, args, ['files0-from']);

export const checkChecksum =
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
  '-print',
  '-print0',
  '-ls',
  '-prune',
  '-quit',
  '-true',
  '-false',
  '-empty',
  '-readable',
  '-writable',
  '-executable',
  '-nouser',
  '-nogroup',
  '-depth',
  '-d',
  '-xdev',
  '-mount',
  '-noleaf',
  '-daystart',
  '-follow',
  '-ignore_readdir_race',
  '-noignore_readdir_race',
  '-not',
  '-a',
  '-o',
  '-and',
  '-or',
  '!',
  '(',
  ')',
  ',',
]);
const FIND_ONE_ARG: ReadonlySet<string> = new Set([
  '-name',
  '-iname',
  '-path',
  '-ipath',
  '-wholename',
  '-iwholename',
  '-regex',
  '-iregex',
  '-regextype',
  '-type',
  '-xtype',
  '-size',
  '-mtime',
  '-mmin',
  '-atime',
  '-amin',
  '-ctime',
  '-cmin',
  '-newer',
  '-anewer',
  '-cnewer',
  '-used',
  '-perm',
  '-user',
  '-group',
  '-uid',
  '-gid',
  '-links',
  '-inum',
  '-samefile',
  '-lname',
  '-ilname',
  '-maxdepth',
  '-mindepth',
  '-fstype',
  '-printf',
]);

/** find: start points, then only tests and the actions -print, -print0, -ls, -printf (to stdout). */
export const checkFind: Check = (args) => {
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
    if (w.glob)
      return `the unquoted glob \`${short(a, 40)}\` in a find expression is expanded by the shell: quote it ('${short(a, 40)}')`;
    if (FIND_NO_ARG.has(a)) continue;
    if (FIND_ONE_ARG.has(a) || /^-newer[aBcmt][aBcmt]$/.test(a)) {
      const v = args[k + 1];
      if (v === undefined) return `\`find ${a}\` needs an argument`;
      if (v.glob)
        return `the unquoted glob \`${short(v.value, 40)}\` after \`find ${a}\` is expanded by the shell: quote it ('${short(v.value, 40)}')`;
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

export const checkSort: Check = (args) => {
  for (const w of optionArea(args)) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason('sort', w);
    if (isLongOption(a, ['output'])) return `\`sort ${short(a, 30)}\` writes a file; sort to stdout instead`;
    if (isLongOption(a, ['compress-program'])) return `\`sort ${short(a, 30)}\` runs a program`;
    if (isLongOption(a, ['temporary-directory'])) return `\`sort ${short(a, 30)}\` writes temporary files`;
    if (isLongOption(a, ['files0-from']))
      return `\`sort ${short(a, 30)}\` reads file names from a file, which cannot be checked: name the files`;
    if (shortClusterHas(a, 'o', 'ktST')) return `\`sort ${short(a, 30)}\` writes a file; sort to stdout instead`;
    if (shortClusterHas(a, 'T', 'ktSo')) return `\`sort ${short(a, 30)}\` writes temporary files`;
  }
  return null;
};

/** grep: never -R (follows symlinks); -r makes it a recursive read. */
export const checkGrep =
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
      if (
        isLongOption(a, ['recursive']) ||
        shortClusterHas(a, 'r', 'efmABCdD') ||
        a === '--directories=recurse' ||
        (a === '-d' && area[k + 1]?.value === 'recurse') ||
        a === '-drecurse'
      ) {
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
export const checkRg: Check = (args, cx) => {
  cx.recursive = true;
  cx.skipsHidden = true;
  const files = args.some((w) => w.value === '--files');
  const ops = grepOperands(args, 'efgtTABCEjMmrd', RG_LONG_WITH_VALUE);
  cx.implicitCwd = ops === null || (files ? ops.length + 1 : ops.length) === 0;
  // With --files every operand is a path (grepOperands took the first one for the pattern).
  cx.recursivePaths = ops === null || files ? null : ops;
  for (const w of optionArea(args)) {
    const a = w.value;
    if (a === '--hidden' || a === '--no-ignore-dot' || /^-[a-zA-Z.]*[u.]/.test(a) || a === '--unrestricted')
      cx.skipsHidden = false;
    if (mayExpandToOption(w)) return globOptionReason('rg', w);
    if (isLongOption(a, ['pre', 'pre-glob', 'hostname-bin'])) return `\`rg ${short(a, 30)}\` runs external programs`;
    if (isLongOption(a, ['search-zip']) || shortClusterHas(a, 'z', 'efgtTABCEjMmrd'))
      return '`rg -z` runs decompression programs: search the files without -z';
    if (isLongOption(a, ['follow']) || shortClusterHas(a, 'L', 'efgtTABCEjMmrd'))
      return '`rg -L` follows symbolic links: search without -L';
  }
  return null;
};

/** diff -r follows symbolic links unless --no-dereference. */
export const checkDiff: Check = (args, cx) => {
  let recursive = false;
  let noDeref = false;
  for (const w of optionArea(args)) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason('diff', w);
    if (isLongOption(a, ['paginate']) || shortClusterHas(a, 'l', 'CDFILSWxX'))
      return '`diff -l` pipes the output through `pr`: drop -l';
    if (isLongOption(a, ['recursive']) || shortClusterHas(a, 'r', 'CDFILSWxX')) recursive = true;
    if (a === '--no-dereference') noDeref = true;
  }
  if (recursive) {
    cx.recursive = true;
    if (!noDeref) return '`diff -r` follows symbolic links: add --no-dereference (`diff -r --no-dereference A B`)';
  }
  return null;
};

export const checkTree: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('tree', w);
    const a = w.value;
    if (a.startsWith('-') && !a.startsWith('--') && (a.includes('o') || a.includes('R')))
      return `\`tree ${short(a, 30)}\` can write output files`;
    if (isLongOption(a, ['output', 'fromfile']))
      return `\`tree ${short(a, 30)}\` is not allowed (writes a file or reads names from one)`;
  }
  return null;
};

export const checkFile: Check = (args) => {
  for (const w of optionArea(args)) {
    if (mayExpandToOption(w)) return globOptionReason('file', w);
    const a = w.value;
    if (isLongOption(a, ['compile']) || shortClusterHas(a, 'C', 'emfFP'))
      return `\`file ${short(a, 30)}\` writes a compiled magic file`;
    if (isLongOption(a, ['files-from']) || shortClusterHas(a, 'f', 'emFP'))
      return `\`file ${short(a, 30)}\` reads file names from a file, which cannot be checked: name the files`;
    if (
      isLongOption(a, ['uncompress', 'uncompress-noreport']) ||
      shortClusterHas(a, 'z', 'emfFP') ||
      shortClusterHas(a, 'Z', 'emfFP')
    ) {
      return `\`file ${short(a, 30)}\` runs external decompressors (found through PATH): not while latched`;
    }
  }
  return null;
};

export const checkPrintf: Check = (args) => {
  const first = args[0];
  if (first === undefined) return null;
  if (mayExpandToOption(first)) return globOptionReason('printf', first);
  if (first.value.startsWith('-v')) return '`printf -v` assigns a shell variable: print to stdout instead';
  return null;
};

export const checkUniq: Check = (args) => {
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
        if (
          !a.includes('=') &&
          n.length > 0 &&
          ['skip-fields', 'skip-chars', 'check-chars'].some((x) => x.startsWith(n))
        )
          k++;
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

const SED_HELP =
  "sed is allowed only to print lines: options -n -E -r -s -z -u --posix, and scripts of addresses (N, $, /re/, N,M, N~S, +N) with the commands p, =, l, q, Q, d and { } (e.g. `sed -n '10,20p' FILE`)";

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
    if (t !== undefined && t !== ';' && t !== '\n' && t !== '}' && t !== '#')
      return `unexpected text after the sed command \`${c}\``;
  }
  if (depth !== 0) return 'an unmatched `{`';
  return null;
}

export const checkSed: Check = (args) => {
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
      if (
        [
          '--quiet',
          '--silent',
          '--regexp-extended',
          '--separate',
          '--null-data',
          '--unbuffered',
          '--posix',
          '--sandbox',
          '--debug',
        ].includes(a)
      )
        continue;
      if (/^-[nErszu]+$/.test(a)) continue;
      if (a.startsWith('--line-length=') || /^-l[0-9]+$/.test(a)) continue;
      if (a === '-l') {
        k++;
        continue;
      }
      if (a.startsWith('-i') || isLongOption(a, ['in-place']))
        return '`sed -i` edits files in place: print with `sed -n` instead';
      if (a.startsWith('-f') || isLongOption(a, ['file']))
        return '`sed -f` runs a script from a file, which cannot be checked: give the script inline';
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
  'system',
  'getline',
  'close',
  'fflush',
  'ENVIRON',
  'PROCINFO',
  'ARGV',
  'ARGC',
  'SYMTAB',
  'FUNCTAB',
  '|',
  '>',
  '@',
  '`',
];
const AWK_HELP =
  'awk is allowed only with -F and -v and an inline program that prints to stdout: no system, getline, close, fflush, ENVIRON, PROCINFO, ARGV, ARGC, `|`, `>` or `@` (compare with `<` instead of `>`)';

export const checkAwk: Check = (args) => {
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
    if (a.startsWith('-f') || isLongOption(a, ['file', 'exec', 'include', 'load', 'source']))
      return `\`awk ${short(a, 30)}\` runs a program from a file or a library, which cannot be checked; ${AWK_HELP}`;
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
