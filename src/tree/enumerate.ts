// Which paths make up a workspace tree, and when the last listing of them can be reused: the git
// listing (listGitPaths: `git ls-files`), the plain recursive walk outside git (listAllPaths), and the
// validators that let observeTree (observe-tree.ts) skip `git ls-files` when none of its inputs can
// have changed (the index, the work tree's directories, the ignore rules, the git config files, the
// environment). Also configFiles, which the workspace watcher (src/watch/daemon.ts) watches too.
//
// Which files
//   - Inside a git work tree: `git ls-files -z --cached --others --exclude-standard`
//     (tracked files plus untracked-but-not-ignored files), deduplicated.
//     Entries that no longer exist on disk are skipped, and so are paths below a
//     directory that has been replaced by a symlink (git's leading-symlink rule:
//     nothing outside the tree is ever read through a symlinked directory).
//   - Outside git: every file under root, recursively. Any entry named `.git`
//     is excluded; symlinks (to files or directories) are recorded as links and
//     never followed. Empty directories are not recorded (as in git).
//   - Files that are neither regular files, symlinks nor directories (FIFOs,
//     sockets, devices) are skipped.

import { lstatSync, readdirSync, readFileSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { checkDeadline } from '../base/deadline.js';
import { runGit } from '../base/git.js';

// ---------------------------------------------------------------------------
// Enumeration

/** Relative paths (deduplicated, '/'-separated, no trailing slash) git tracks or would track under root. */
export function listGitPaths(root: string): string[] {
  const r = runGit(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (r.status !== 0) throw new Error(`git ls-files failed in ${root}: ${r.stderr.trim()}`);
  const text = r.stdout.toString('utf8');
  const out: string[] = [];
  const seen = new Set<string>();
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\0', start);
    if (end < 0) end = text.length;
    let p = text.slice(start, end);
    start = end + 1;
    if (p.endsWith('/')) p = p.slice(0, -1); // untracked nested repository reported as "dir/"
    if (p === '' || seen.has(p)) continue; // tracked files appear once per conflict stage
    seen.add(p);
    out.push(p);
  }
  return out;
}

/** Relative paths of all non-directory entries under root (excluding `.git`), without following symlinks. */
export function listAllPaths(root: string): string[] {
  const out: string[] = [];
  const stack: string[] = [''];
  while (stack.length > 0) {
    checkDeadline('listing the workspace');
    const rel = stack.pop()!;
    const abs = rel === '' ? root : root + path.sep + rel;
    let dirents: Dirent[];
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue; // vanished meanwhile
      throw err;
    }
    for (const d of dirents) {
      const name = d.name;
      if (name === '.git') continue;
      const childRel = rel === '' ? name : rel + '/' + name;
      if (d.isDirectory()) stack.push(childRel);
      else if (d.isFile() || d.isSymbolicLink()) out.push(childRel);
      else if (!d.isFIFO() && !d.isSocket() && !d.isBlockDevice() && !d.isCharacterDevice()) {
        // Unknown dirent type (some filesystems): decide with lstat.
        try {
          const st = lstatSync(root + path.sep + childRel);
          if (st.isDirectory()) stack.push(childRel);
          else if (st.isFile() || st.isSymbolicLink()) out.push(childRel);
        } catch {
          // vanished
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Listing reuse (git only): `git ls-files --cached --others --exclude-standard` is skipped and the
// stored listing reused when NONE of its inputs can have changed since it was taken:
//   - the index: <root>/.git/index (ino, size, mtime, ctime, or absence; git replaces it by rename);
//   - the work tree's directories: every directory reachable from the root without following
//     symlinks, not entering `.git` nor a directory that contains a `.git` entry (nested repository):
//     (ino, mtime, ctime). Any entry created, removed or renamed in a directory changes its mtime and
//     ctime; restoring an mtime (touch -d, tar) still changes the ctime.
//   - the ignore rules: every `.gitignore` in those directories (created/removed: its directory's
//     mtime; edited: its stat), <root>/.git/info/exclude, the default global excludes file
//     ($XDG_CONFIG_HOME/git/ignore or ~/.config/git/ignore), the config files .git/config,
//     ~/.gitconfig, $XDG_CONFIG_HOME/git/config (or ~/.config/git/config) and /etc/gitconfig;
//   - the environment: HOME, XDG_CONFIG_HOME and every GIT_* variable;
//   - <root>/.git is still a directory with the same inode.
// Each of these is stat'ed BEFORE git runs; a recorded mtime or ctime not older than the listing's
// stamp (same rule and stamp as file entries) makes the listing non-reusable (a change in the same
// timestamp tick after git read it would be invisible). The listing is never reused when:
// <root>/.git is not a directory (worktrees, submodules: `.git` file), a config file mentions
// excludesFile or include/includeIf (the excludes file could be anywhere), the walk exceeds
// MAX_WATCH_DIRS directories (e.g. an ignored node_modules: the walk cannot tell ignored directories
// apart; it is retried when the root directory changes), or the caller says isGit: false.
// Limits: a system config outside /etc/gitconfig (another prefix) that sets core.excludesFile is not
// watched; a change that restores a watched file's or directory's ino, size, mtime AND ctime exactly
// is not seen (ctime cannot be set from user space). When the listing is reused, the isGit
// detection (`git rev-parse`) is skipped too: a valid listing implies <root> is a git top level.

/** Directories the listing validator may watch; beyond this, git ls-files runs on every observation. */
export const MAX_WATCH_DIRS = 4096;

export interface ListingState {
  v: 1;
  /** Stamp (ms) taken before anything was stat'ed; validators must be older. */
  stamp: number;
  env: string;
  /** Set when the walk exceeded MAX_WATCH_DIRS: [ino, mtimeMs, ctimeMs] of the root, to retry when it changes. */
  over?: [number, number, number];
  /** [relative dir ('' = root), ino, mtimeMs, ctimeMs] */
  dirs?: [string, number, number, number][];
  /** [absolute path, ino, size, mtimeMs, ctimeMs] or [absolute path] when absent; ino only (size -1) for .git */
  files?: ([string, number, number, number, number] | [string])[];
  /** The paths were listed without git (every file under the root). */
  nogit?: true;
}

export function envFingerprint(): string {
  const keys = Object.keys(process.env)
    .filter((k) => k.startsWith('GIT_') || k === 'HOME' || k === 'XDG_CONFIG_HOME')
    .sort();
  return JSON.stringify(keys.map((k) => [k, process.env[k]]));
}

/** The git config files and the default global excludes file the listing depends on (outside the work tree). */
export function configFiles(gitDir: string): { configs: string[]; globalIgnore: string } {
  const home = process.env.HOME ?? '';
  const xdg = process.env.XDG_CONFIG_HOME || (home ? path.join(home, '.config') : '');
  const configs = [path.join(gitDir, 'config'), '/etc/gitconfig'];
  if (home) configs.push(path.join(home, '.gitconfig'));
  if (xdg) configs.push(path.join(xdg, 'git', 'config'));
  return { configs, globalIgnore: xdg ? path.join(xdg, 'git', 'ignore') : '' };
}

function statFile(abs: string): [string, number, number, number, number] | [string] {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  return st ? [abs, st.ino, st.size, st.mtimeMs, st.ctimeMs] : [abs];
}

const EXCLUDES_IN_CONFIG = /excludesfile|\[\s*include/i;

/**
 * The validators outside the work tree's directories: .git, its index and info/exclude, the config
 * files and the global excludes file. null: the listing can never be reused.
 */
export function gitValidators(root: string, stamp: number): ListingState | null {
  const gitDir = path.join(root, '.git');
  const g = lstatSync(gitDir, { throwIfNoEntry: false });
  if (!g || !g.isDirectory()) return null;
  const { configs, globalIgnore } = configFiles(gitDir);
  const files: ([string, number, number, number, number] | [string])[] = [[gitDir, g.ino, -1, 0, 0]];
  for (const f of [
    path.join(gitDir, 'index'),
    path.join(gitDir, 'info', 'exclude'),
    ...configs,
    ...(globalIgnore ? [globalIgnore] : []),
  ]) {
    files.push(statFile(f));
  }
  for (const c of configs) {
    let text: string;
    try {
      text = readFileSync(c, 'utf8');
    } catch {
      continue;
    }
    if (EXCLUDES_IN_CONFIG.test(text)) return null;
  }
  return { v: 1, stamp, env: envFingerprint(), files };
}

/**
 * The validators of a git listing about to be taken (call BEFORE running git ls-files). null: the
 * listing can never be reused (see the header of this section).
 */
export function captureListing(root: string, stamp: number, prev: ListingState | null): ListingState | null {
  const base = gitValidators(root, stamp);
  if (!base) return null;
  const { env, files } = base as { env: string; files: ([string, number, number, number, number] | [string])[] };
  const rootSt = lstatSync(root);
  if (
    prev?.over &&
    prev.env === env &&
    prev.over[0] === rootSt.ino &&
    prev.over[1] === rootSt.mtimeMs &&
    prev.over[2] === rootSt.ctimeMs
  ) {
    return prev; // still too big to watch; not reusable (see validListing)
  }
  const dirs: [string, number, number, number][] = [];
  const stack: string[] = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const abs = rel === '' ? root : root + path.sep + rel;
    const st = rel === '' ? rootSt : lstatSync(abs, { throwIfNoEntry: false });
    if (!st || !st.isDirectory()) return null; // changed under us: list without a validator
    if (dirs.length >= MAX_WATCH_DIRS) return { v: 1, stamp, env, over: [rootSt.ino, rootSt.mtimeMs, rootSt.ctimeMs] };
    dirs.push([rel, st.ino, st.mtimeMs, st.ctimeMs]);
    let dirents: Dirent[];
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch {
      return null;
    }
    const children: string[] = [];
    let nested = false;
    for (const d of dirents) {
      const name = d.name;
      if (name === '.git') {
        nested = rel !== '';
        continue;
      }
      const childRel = rel === '' ? name : rel + '/' + name;
      if (name === '.gitignore') files.push(statFile(abs + path.sep + name));
      let isDir = d.isDirectory();
      if (
        !isDir &&
        !d.isFile() &&
        !d.isSymbolicLink() &&
        !d.isFIFO() &&
        !d.isSocket() &&
        !d.isBlockDevice() &&
        !d.isCharacterDevice()
      ) {
        isDir = lstatSync(abs + path.sep + name, { throwIfNoEntry: false })?.isDirectory() ?? false;
      }
      if (isDir) children.push(childRel);
    }
    if (!nested) for (const c of children) stack.push(c);
  }
  return { v: 1, stamp, env, dirs, files };
}

function sameFile(rec: [string, number, number, number, number] | [string]): boolean {
  const st = lstatSync(rec[0], { throwIfNoEntry: false });
  if (rec.length === 1) return st === undefined;
  if (!st || st.ino !== rec[1]) return false;
  if (rec[2] === -1) return st.isDirectory(); // .git: inode only
  return st.size === rec[2] && st.mtimeMs === rec[3] && st.ctimeMs === rec[4];
}

/** The validator files still as recorded (and none racily so). */
function filesHold(l: ListingState): boolean {
  for (const f of l.files ?? []) {
    if (f.length === 5 && f[2] !== -1 && (f[3] >= l.stamp || f[4] >= l.stamp)) return false; // racy
    if (!sameFile(f)) return false;
  }
  return true;
}

/**
 * With a watcher journal that shows no entry, ignore-file or git-metadata change since the state was
 * taken: may its listing be reused? The directories need no check (an entry change in any of them
 * is journaled); the files outside the tree (config, global excludes) and the environment do.
 */
export function listingHoldsForWatch(l: ListingState, isGit: boolean | undefined): boolean {
  if (l.env !== envFingerprint()) return false;
  if (l.nogit) return isGit !== true;
  return isGit !== false && l.files !== undefined && filesHold(l);
}

/** True when the listing stored with these validators is still what git ls-files would print. */
export function validListing(root: string, l: ListingState): boolean {
  if (!l.dirs || !l.files || l.env !== envFingerprint()) return false;
  if (!filesHold(l)) return false;
  for (const d of l.dirs) {
    if (d[2] >= l.stamp || d[3] >= l.stamp) return false; // racy
    const st = lstatSync(d[0] === '' ? root : root + path.sep + d[0], { throwIfNoEntry: false });
    if (!st || !st.isDirectory() || st.ino !== d[1] || st.mtimeMs !== d[2] || st.ctimeMs !== d[3]) return false;
  }
  return true;
}
