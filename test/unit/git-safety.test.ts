// Latch's own git calls run with Latch's authority, outside any sandbox: programs the agent may have
// armed in the repository's config (fsmonitor, hooks, filter drivers, pager, external diff) must not
// run. Each case arms one in a real repository and checks that its marker file stays absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gitState, workspaceRoot } from '../../src/base/git.js';
import { listGitPaths } from '../../src/tree/enumerate.js';
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
  assert.ok(
    MARKS.some((k) => existsSync(path.join(marks, k))),
    'plain git status ran an armed program',
  );
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

test('a held git read (the held-read environment + the spelling the classifier accepts) runs none of them', async () => {
  const { classifyCommand } = await import('../../src/shell/readonly.js');
  const { wrapClassifierOnly } = await import('../../src/guard/read-shell.js');
  const { repo, marks } = armedRepo();
  // Arm what the held spelling leaves to the environment: hooks on index refresh, signatures, pagers.
  git(repo, 'config', 'core.hooksPath', path.join(repo, '.git', 'hooks'));
  writeFileSync(
    path.join(repo, '.git', 'hooks', 'post-index-change'),
    `#!/bin/sh\ntouch ${path.join(marks, 'hook')}\n`,
    { mode: 0o755 },
  );
  git(repo, 'config', 'log.showSignature', 'true');
  git(repo, 'config', 'gpg.program', `${path.join(marks, 'gpg')}`);
  git(repo, 'config', 'pager.log', `touch ${path.join(marks, 'pagerlog')}; cat`);
  git(repo, 'config', '--unset', 'filter.evil.clean');
  git(repo, 'config', '--unset', 'filter.evil.smudge');
  git(repo, 'config', '--unset', 'filter.evil.process');
  const held = [
    'git --no-pager status',
    'git --no-pager log --oneline',
    'git --no-pager log --no-ext-diff --no-textconv -p',
    'git --no-pager diff --no-ext-diff --no-textconv',
    'git --no-pager show --no-ext-diff --no-textconv',
  ];
  for (const cmd of held) {
    const v = classifyCommand(cmd, { latchHome: '/nonexistent/latch', cwd: repo, gitEnvHardened: true });
    assert.equal(v.readOnly, true, `${cmd}: ${v.reasons.join('; ')}`);
    const r = spawnSync('/bin/bash', ['-c', wrapClassifierOnly(cmd)], { cwd: repo, encoding: 'utf8' });
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
  }
  for (const k of [...MARKS, 'hook', 'gpg', 'pagerlog'])
    assert.equal(existsSync(path.join(marks, k)), false, `${k} ran`);
  // The oracle: the same reads without the held-read environment do fire the armed programs.
  for (const cmd of ['git --no-pager status', 'git log --oneline'])
    spawnSync('/bin/bash', ['-c', cmd], { cwd: repo, stdio: 'ignore' });
  assert.ok(
    ['fsmonitor', 'hook', 'gpg', 'pagerlog'].some((k) => existsSync(path.join(marks, k))),
    'unwrapped, an armed program ran',
  );
});
