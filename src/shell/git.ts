// git's rules for the read-only classifier (readonly.ts): the spelling a read subcommand must use,
// the options refused, and the check of the configuration git would read (checkGit); and
// GIT_SAFE_CONFIG, the same switches for a held read to set through git's environment.

import { readFileSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import type { Word } from './words.js';
import {
  type State,
  short,
  normPath,
  expandTilde,
  isLongOption,
  shortClusterHas,
  optionArea,
  mayExpandToOption,
  globOptionReason,
  spend,
  realish,
} from './state.js';
import type { Check } from './checks.js';

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
  ...['status', 'diff', 'log', 'show', 'branch', 'blame', 'grep'].map((c): readonly [string, string] => [
    `pager.${c}`,
    'false',
  ]),
];

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

const GIT_BASE_PREFIX = [
  '--no-pager',
  '--no-optional-locks',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.hooksPath=/dev/null',
];
const GIT_GPG_PREFIX = [
  '-c',
  'gpg.program=/dev/null',
  '-c',
  'gpg.ssh.program=/dev/null',
  '-c',
  'gpg.x509.program=/dev/null',
];
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
  '--literal-pathspecs',
  '--glob-pathspecs',
  '--noglob-pathspecs',
  '--icase-pathspecs',
  '--no-replace-objects',
]);
const GIT_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'status',
  'diff',
  'log',
  'show',
  'rev-parse',
  'ls-files',
  'branch',
  'blame',
  'grep',
]);
const GIT_WORKTREE_SUBCOMMANDS: ReadonlySet<string> = new Set(['status', 'diff', 'ls-files', 'blame', 'grep']);
const GIT_SUBMODULE_SUBCOMMANDS: ReadonlySet<string> = new Set(['status', 'diff', 'log', 'show']);

function gitSpelling(sub: string): string {
  const prefix = [
    ...GIT_BASE_PREFIX,
    ...(sub === 'log' || sub === 'show' ? GIT_GPG_PREFIX : []),
    ...(sub === 'diff' ? ['-c', 'diff.autoRefreshIndex=false'] : []),
  ].join(' ');
  const after =
    sub === 'diff' || sub === 'log' || sub === 'show'
      ? ' --no-ext-diff --no-textconv'
      : sub === 'blame'
        ? ' --no-textconv'
        : '';
  return `git ${prefix} ${sub}${after}`;
}

/** The spelling a held read needs (its environment supplies the rest). */
function gitHeldSpelling(sub: string): string {
  const after =
    sub === 'diff' || sub === 'log' || sub === 'show'
      ? ' --no-ext-diff --no-textconv'
      : sub === 'blame'
        ? ' --no-textconv'
        : '';
  return `git --no-pager ${sub}${after}`;
}

/** `git log` options that only list commits (no patch, stat or diff of any kind). */
const GIT_LOG_LISTING =
  /^(--oneline|--graph|--all|--decorate(=\w+)?|--no-decorate|--abbrev-commit|--no-abbrev-commit|--reverse|--first-parent|--no-merges|--merges|--date-order|--topo-order|--author-date-order|--max-count=\d+|-n\d*|-\d+|--skip=\d+|--since=[^\s]+|--until=[^\s]+|--after=[^\s]+|--before=[^\s]+|--author=.+|--committer=.+|--grep=.+|--date=\w[\w-]*|--format=[^\s]*|--pretty=[^\s]*|--no-color|--color=never|--branches|--tags|--remotes|-z|--no-walk)$/;

const GIT_WHY =
  'git runs programs from repository configuration (pager, fsmonitor, hooks, external diff, textconv, gpg) even for reads';

function gitStatusReason(rest: readonly Word[]): string | null {
  const flags = new Set([
    '-s',
    '--short',
    '-b',
    '--branch',
    '--show-stash',
    '--porcelain',
    '--long',
    '-v',
    '-vv',
    '--verbose',
    '-u',
    '-z',
    '--null',
    '--no-column',
    '--ahead-behind',
    '--no-ahead-behind',
    '--renames',
    '--no-renames',
    '--find-renames',
    '--ignored',
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
  const flags = new Set([
    '-a',
    '--all',
    '-r',
    '--remotes',
    '-v',
    '-vv',
    '--verbose',
    '--show-current',
    '--no-color',
    '--color=never',
    '--no-column',
    '-i',
    '--ignore-case',
  ]);
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
    if (a.startsWith('-'))
      return `\`git branch ${short(a, 30)}\` is not a listing option (use --list, --show-current, -a, -r, -v)`;
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
  const xdg =
    env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/')
      ? env.XDG_CONFIG_HOME
      : st.home !== null
        ? st.home + '/.config'
        : null;
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

export const checkGit: Check = (args, cx) => {
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
      for (const k of ['gpg.program', 'gpg.ssh.program', 'gpg.x509.program'])
        if (!overrides.has(k)) missing.push(`-c ${k}=/dev/null`);
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
  const plainLog =
    hardened && sub === 'log' && area.every((w) => !w.value.startsWith('-') || GIT_LOG_LISTING.test(w.value));
  if ((sub === 'diff' || (sub === 'log' && !plainLog) || sub === 'show') && !has('--no-ext-diff'))
    missing.push(`--no-ext-diff (right after ${sub})`);
  if ((sub === 'diff' || (sub === 'log' && !plainLog) || sub === 'show' || sub === 'blame') && !has('--no-textconv'))
    missing.push(`--no-textconv (right after ${sub})`);
  if (missing.length > 0) {
    return `${GIT_WHY}; while latched \`git ${sub}\` needs ${missing.join(', ')}: use \`${hardened ? gitHeldSpelling(sub) : gitSpelling(sub)} ...\``;
  }

  for (const w of area) {
    const a = w.value;
    if (mayExpandToOption(w)) return globOptionReason(`git ${sub}`, w);
    if (w.nonAscii && a.startsWith('-')) return `the git option \`${short(a, 30)}\` contains a non-ASCII character`;
    if (a === '--text') continue;
    if (isLongOption(a, ['output'])) return `\`git ${sub} ${short(a, 30)}\` writes a file: read the output instead`;
    if (isLongOption(a, ['remerge-diff']))
      return `\`git ${sub} --remerge-diff\` writes temporary objects into .git: not while latched`;
    if (isLongOption(a, ['ext-diff', 'textconv']))
      return `\`git ${sub} ${short(a, 30)}\` runs configured programs: use --no-ext-diff --no-textconv`;
    if (isLongOption(a, ['help']) || a === '-h')
      return `\`git ${sub} --help\` opens a pager or a browser: not while latched`;
    if (isLongOption(a, ['recurse-submodules']))
      return `\`git ${sub} ${short(a, 30)}\` runs git inside submodules with their own configuration`;
    if (a.startsWith('--submodule') && a !== '--submodule=short')
      return `\`git ${sub} ${short(a, 30)}\` may run git inside submodules: use --submodule=short or leave it out`;
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
  return gitConfigReason(
    st,
    dirs.map((d) => realish(st, d)),
    sub,
  );
};
