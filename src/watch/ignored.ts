// The directories of a git work tree a watcher may leave unwatched: git's ignore rules match them and
// they hold no tracked file (so nothing below them can be in the listing an observation stats).
import { spawnSync } from 'node:child_process';
import { safeGitEnv } from '../base/git.js';

const MAX_BUFFER = 64 * 1024 * 1024;

function git(root: string, args: string[], input?: string): { status: number | null; stdout: string } {
  const r = spawnSync('git', ['-C', root, ...args], {
    input,
    encoding: 'utf8',
    maxBuffer: MAX_BUFFER,
    stdio: ['pipe', 'pipe', 'ignore'],
    env: safeGitEnv(),
  });
  return { status: r.error ? null : r.status, stdout: r.stdout ?? '' };
}

/**
 * Ignored directories ('/'-separated, relative), or null when git cannot tell (then nothing is
 * skipped). `ls-files --others --ignored --directory` names the directories whose content is all
 * ignored or untracked (it never collapses one holding a tracked file); `check-ignore` keeps those a
 * rule matches (an untracked directory that merely contains ignored ones is watched: a new file in it
 * would not be ignored).
 */
export function ignoredDirs(root: string): Set<string> | null {
  const listed = git(root, ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  if (listed.status !== 0) return null;
  const candidates = listed.stdout.split('\0').filter((p) => p.endsWith('/'));
  if (candidates.length === 0) return new Set();
  const checked = git(root, ['check-ignore', '-z', '--stdin'], candidates.join('\0') + '\0');
  if (checked.status === 1) return new Set(); // none matched
  if (checked.status !== 0) return null;
  return new Set(
    checked.stdout
      .split('\0')
      .filter(Boolean)
      .map((p) => p.replace(/\/$/, '')),
  );
}
