import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, realpathSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gitState, isInsideWorkTree, workspaceRoot } from '../../src/base/git.js';
import { git, tmpDir as tmpDirIn } from '../helpers/git.js';

const tmpDir = (): string => tmpDirIn('latch-git-');

function initRepo(): string {
  const d = tmpDir();
  git(d, 'init', '-q', '-b', 'main');
  git(d, 'config', 'commit.gpgsign', 'false');
  return d;
}

function commitFile(repo: string, name: string, content: string): string {
  writeFileSync(path.join(repo, name), content);
  git(repo, 'add', name);
  git(repo, 'commit', '-q', '-m', `add ${name}`);
  return git(repo, 'rev-parse', 'HEAD');
}

function sha256(s: string | Buffer): string {
  return createHash('sha256').update(s).digest('hex');
}

test('workspaceRoot returns the realpath of the git top-level from a subdirectory', () => {
  const repo = initRepo();
  mkdirSync(path.join(repo, 'a', 'b'), { recursive: true });
  assert.equal(workspaceRoot(path.join(repo, 'a', 'b')), realpathSync(repo));
  assert.equal(workspaceRoot(repo), realpathSync(repo));
});

test('workspaceRoot resolves symlinks, inside and outside git', () => {
  const base = tmpDir();
  const repo = initRepo();
  const link = path.join(base, 'link-to-repo');
  symlinkSync(repo, link);
  assert.equal(workspaceRoot(link), realpathSync(repo));

  const plain = path.join(base, 'plain');
  mkdirSync(path.join(plain, 'sub'), { recursive: true });
  const plainLink = path.join(base, 'plain-link');
  symlinkSync(plain, plainLink);
  assert.equal(workspaceRoot(path.join(plainLink, 'sub')), realpathSync(path.join(plain, 'sub')));
});

test('gitState: repository with commits on a branch', () => {
  const repo = initRepo();
  const head = commitFile(repo, 'a.txt', 'hello\n');
  const s = gitState(repo);
  assert.equal(s.isRepo, true);
  assert.equal(s.head, head);
  assert.match(s.head ?? '', /^[0-9a-f]{40}$/);
  assert.equal(s.branch, 'main');
  // clean tree: porcelain output is empty
  assert.equal(s.statusSha256, sha256(''));

  // status fingerprint follows the porcelain output exactly
  writeFileSync(path.join(repo, 'a.txt'), 'changed\n');
  writeFileSync(path.join(repo, 'new.txt'), 'new\n');
  const s2 = gitState(repo);
  const porcelain = execFileSync('git', ['status', '--porcelain=v1', '-z', '--untracked-files=all'], { cwd: repo });
  assert.equal(s2.statusSha256, sha256(porcelain));
  assert.notEqual(s2.statusSha256, s.statusSha256);
  assert.equal(s2.head, head);

  // untracked files inside new directories are listed individually (--untracked-files=all)
  mkdirSync(path.join(repo, 'dir'));
  writeFileSync(path.join(repo, 'dir', 'x'), 'x');
  const s3 = gitState(repo);
  assert.notEqual(s3.statusSha256, s2.statusSha256);
  writeFileSync(path.join(repo, 'dir', 'y'), 'y');
  assert.notEqual(gitState(repo).statusSha256, s3.statusSha256);

  // another branch
  git(repo, 'checkout', '-q', '-b', 'feature/x');
  assert.equal(gitState(repo).branch, 'feature/x');
});

test('gitState from a subdirectory reports the same repository state', () => {
  const repo = initRepo();
  commitFile(repo, 'a.txt', 'a');
  mkdirSync(path.join(repo, 'sub'));
  writeFileSync(path.join(repo, 'sub', 'u.txt'), 'u');
  assert.deepEqual(gitState(path.join(repo, 'sub')), gitState(repo));
});

test('gitState: detached HEAD has branch null', () => {
  const repo = initRepo();
  const first = commitFile(repo, 'a.txt', '1');
  commitFile(repo, 'a.txt', '2');
  git(repo, 'checkout', '-q', '--detach', first);
  const s = gitState(repo);
  assert.equal(s.isRepo, true);
  assert.equal(s.head, first);
  assert.equal(s.branch, null);
  assert.equal(s.statusSha256, sha256(''));
});

test('gitState: empty repository (no commits)', () => {
  const repo = initRepo();
  const s = gitState(repo);
  assert.equal(s.isRepo, true);
  assert.equal(s.head, null);
  assert.equal(s.branch, 'main'); // unborn branch is still a branch
  assert.equal(s.statusSha256, sha256(''));
  writeFileSync(path.join(repo, 'f'), 'x');
  const s2 = gitState(repo);
  assert.equal(s2.head, null);
  assert.notEqual(s2.statusSha256, s.statusSha256);
});

test('gitState: non-repository directory', () => {
  const d = tmpDir();
  if (isInsideWorkTree(os.tmpdir())) return; // tmpdir itself inside a repo: cannot test (never the case in CI)
  writeFileSync(path.join(d, 'f'), 'x');
  assert.deepEqual(gitState(d), { isRepo: false, head: null, branch: null, statusSha256: null });
  assert.equal(isInsideWorkTree(d), false);
});

test('gitState: inside the .git directory is not a work tree', () => {
  const repo = initRepo();
  commitFile(repo, 'a', 'a');
  assert.equal(gitState(path.join(repo, '.git')).isRepo, false);
});

test('gitState does not rewrite the index (GIT_OPTIONAL_LOCKS=0)', () => {
  const repo = initRepo();
  commitFile(repo, 'a.txt', 'same');
  // Make the index stat info stale: bump the mtime without changing content.
  const future = new Date(Date.now() + 60_000);
  utimesSync(path.join(repo, 'a.txt'), future, future);
  const idx = path.join(repo, '.git', 'index');
  const before = statSync(idx, { bigint: true });
  const s = gitState(repo);
  assert.equal(s.statusSha256, sha256('')); // content unchanged => clean
  const afterSt = statSync(idx, { bigint: true });
  assert.equal(afterSt.mtimeNs, before.mtimeNs);
  assert.equal(afterSt.ino, before.ino);
});
