// Latch's own git calls run with Latch's authority, outside any sandbox: programs the agent may have
// armed in the repository's config (fsmonitor, hooks, filter drivers, pager, external diff) must not
// run. Each case arms one in a real repository and checks that its marker file stays absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gitState, workspaceRoot } from '../../src/core/git.js';
import { listGitPaths } from '../../src/core/tree.js';
import { ignoredDirs } from '../../src/watch/ignored.js';
import { git, tmpDir } from '../helpers/git.js';

function armedRepo(): { repo: string; marks: string } {
  const repo = tmpDir('latch-gitsafe-');
  const marks = tmpDir('latch-gitsafe-marks-');
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, '.gitattributes'), '*.txt filter=evil diff=evil\n');
  writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  git(repo, 'add', '.');
  git(repo, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'init');
  const m = (name: string) => `touch ${path.join(marks, name)}`;
  git(repo, 'config', 'core.fsmonitor', `${m('fsmonitor')}; false`);
  git(repo, 'config', 'filter.evil.clean', `${m('clean')}; cat`);
  git(repo, 'config', 'filter.evil.smudge', `${m('smudge')}; cat`);
  git(repo, 'config', 'filter.evil.process', m('process'));
  git(repo, 'config', 'diff.evil.textconv', `${m('textconv')}; cat`);
  git(repo, 'config', 'diff.external', m('external'));
  git(repo, 'config', 'core.pager', m('pager'));
  git(repo, 'config', 'core.hooksPath', path.join(repo, 'hooks'));
  // A racily clean entry: the same size and mtime as the index, so status must read (and filter) it.
  writeFileSync(path.join(repo, 'a.txt'), 'b\n');
  return { repo, marks };
}

const MARKS = ['fsmonitor', 'clean', 'smudge', 'process', 'textconv', 'external', 'pager'];

test('the armed repository really fires its traps for a plain git (the oracle works)', () => {
  const { repo, marks } = armedRepo();
  spawnSync('git', ['status', '--porcelain'], { cwd: repo, stdio: 'ignore' });
  assert.ok(MARKS.some((k) => existsSync(path.join(marks, k))), 'plain git status ran an armed program');
});

test('gitState, workspaceRoot, the tree listing and the watcher’s ignore query run none of them', () => {
  const { repo, marks } = armedRepo();
  workspaceRoot(repo);
  const st = gitState(repo);
  assert.equal(st.isRepo, true);
  assert.ok(st.statusSha256);
  assert.ok(listGitPaths(repo).includes('a.txt'));
  ignoredDirs(repo);
  for (const k of MARKS) assert.equal(existsSync(path.join(marks, k)), false, `${k} ran`);
});
