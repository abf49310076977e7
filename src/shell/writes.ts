// The writes a command states plainly, for a held read that runs inside the kernel read-only sandbox.
//
// There the sandbox, not this file, keeps every write out (read-only file system, no network, no unix
// socket, its own pid namespace): a command that writes anyway fails with EROFS. This file only lets
// Latch refuse the obvious writes up front, with a reason the agent can act on (`rm` while held),
// instead of running them to an error. It is not a gate: what it misses, the sandbox stops. Without a
// sandbox the strict allowlist (readonly.ts) decides alone.
import { posix } from 'node:path';
import { parseCommandList, type SimpleCommand, type Word } from './words.js';

/** Programs whose purpose is to change files (or the system). */
const WRITERS: ReadonlySet<string> = new Set([
  'rm',
  'rmdir',
  'mv',
  'cp',
  'ln',
  'mkdir',
  'touch',
  'chmod',
  'chown',
  'chgrp',
  'truncate',
  'dd',
  'tee',
  'install',
  'patch',
  'shred',
  'unlink',
  'mkfifo',
  'mknod',
  'rsync',
  'kill',
  'pkill',
  'killall',
]);

/** Launchers: the program they run is the next word that is not an option or an assignment. */
const LAUNCHERS: ReadonlySet<string> = new Set([
  'env',
  'sudo',
  'nice',
  'nohup',
  'timeout',
  'time',
  'command',
  'exec',
  'stdbuf',
  'xargs',
]);

/** git subcommands that change the repository, the work tree or the remote. */
const GIT_WRITES: ReadonlySet<string> = new Set([
  'add',
  'am',
  'apply',
  'checkout',
  'cherry-pick',
  'clean',
  'clone',
  'commit',
  'fetch',
  'gc',
  'init',
  'merge',
  'mv',
  'prune',
  'pull',
  'push',
  'rebase',
  'reset',
  'restore',
  'revert',
  'rm',
  'switch',
  'update-index',
  'update-ref',
]);

/** git subcommands that only list unless given other words (a name creates, -d deletes). */
const GIT_LISTING: Readonly<Record<string, (args: string[]) => boolean>> = {
  branch: (a) =>
    a.some((x) =>
      /^(-[arl]+|--list|--all|--remotes|--contains|--merged|--no-merged|--points-at|--show-current)$/.test(x),
    ) ||
    a.every(
      (x) =>
        x.startsWith('-') &&
        !/^(-[dDmMcCfu]+|--delete|--move|--copy|--force|--set-upstream-to.*|--unset-upstream|--edit-description|--track.*)$/.test(
          x,
        ),
    ),
  tag: (a) =>
    a.length === 0 || a.some((x) => /^(-l|--list|--contains|--points-at|--merged|--no-merged|-n\d*)$/.test(x)),
  stash: (a) => a[0] === 'list' || a[0] === 'show',
  remote: (a) => a.length === 0 || a[0] === '-v' || a[0] === 'show' || a[0] === 'get-url',
  config: (a) => a.some((x) => /^(--get|--get-all|--get-regexp|--list|-l)$/.test(x)),
  worktree: (a) => a[0] === 'list',
  submodule: (a) => a.length === 0 || a[0] === 'status' || a[0] === 'summary',
  notes: (a) => a.length === 0 || a[0] === 'list' || a[0] === 'show',
};

/** git's global options that take a value as the next word. */
const GIT_VALUE_GLOBALS: ReadonlySet<string> = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace']);

function gitWrite(args: string[]): string | null {
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) i += GIT_VALUE_GLOBALS.has(args[i]!) ? 2 : 1;
  const sub = args[i];
  if (sub === undefined) return null;
  const rest = args.slice(i + 1);
  if (GIT_WRITES.has(sub)) return `git ${sub}`;
  const listing = GIT_LISTING[sub];
  if (listing && !listing(rest)) return `git ${sub} ${rest.join(' ')}`.trim();
  return null;
}

/** Why this one program call writes, as the agent would name it; null when it states no write. */
function programWrite(words: string[]): string | null {
  let i = 0;
  while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!)) i++;
  for (let hops = 0; hops < 4 && i < words.length; hops++) {
    const name = posix.basename(words[i]!);
    const args = words.slice(i + 1);
    if (WRITERS.has(name)) return name;
    if (name === 'git') return gitWrite(args);
    if (name === 'sed' && args.some((a) => /^-[a-zA-Z]*i|^--in-place/.test(a))) return 'sed -i';
    if (name === 'perl' && args.some((a) => /^-[a-zA-Z]*i/.test(a))) return 'perl -i';
    if (name === 'sort' && args.some((a) => /^-[a-zA-Z]*o|^--output/.test(a))) return 'sort -o';
    if (name === 'find') {
      const action = args.find((a) => /^-(delete|fprint|fprint0|fprintf|fls)$/.test(a));
      if (action) return `find ${action}`;
      for (let k = 0; k < args.length; k++)
        if (/^-(exec|execdir|ok|okdir)$/.test(args[k]!)) {
          const inner = programWrite(args.slice(k + 1));
          if (inner) return `find -exec ${inner}`;
        }
      return null;
    }
    if (!LAUNCHERS.has(name)) return null;
    // The launched program: past the launcher's options (and their values, for the usual ones).
    i++;
    while (i < words.length && (words[i]!.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!))) {
      if (/^-(u|n|I|s|k|d|L|P|i|o|e)$/.test(words[i]!) && name !== 'env') i++;
      i++;
    }
    if (name === 'timeout' && i < words.length && /^\d/.test(words[i]!)) i++;
  }
  return null;
}

const WRITING_REDIRECTIONS = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);

function redirectionWrite(c: SimpleCommand): string | null {
  for (const r of c.redirections) {
    if (!WRITING_REDIRECTIONS.has(r.op)) continue;
    const v = r.target.value;
    if (v === '/dev/null' || v === '/dev/stdout' || v === '/dev/stderr') continue;
    return `the redirection \`${r.op} ${v.length > 40 ? `${v.slice(0, 39)}…` : v}\``;
  }
  return null;
}

/**
 * The first write the command states plainly (a writing redirection, a program that changes files, a
 * git subcommand that changes the repository), named for the agent; null when it states none or when
 * the command cannot be parsed (the sandbox then answers for it).
 */
export function statedWrite(command: string): string | null {
  const parsed = parseCommandList(command);
  if (!parsed.ok) return null;
  for (const c of parsed.commands) {
    const r = redirectionWrite(c);
    if (r) return r;
    const p = programWrite(c.words.map((w: Word) => w.value));
    if (p) return `\`${p}\``;
    // `bash -c '<script>'`: the script's own writes.
    const w0 = c.words[0] ? posix.basename(c.words[0].value) : '';
    if ((w0 === 'bash' || w0 === 'sh') && c.words.length >= 3 && c.words[c.words.length - 2]?.value === '-c') {
      const inner = statedWrite(c.words[c.words.length - 1]!.value);
      if (inner) return inner;
    }
  }
  return null;
}
