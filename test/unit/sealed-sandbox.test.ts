// Latch's sealed read-only sandbox (src/agents/shared/bwrap.ts), for real on this machine: a held read
// the hook runs in it can neither see nor change what it hides (Latch's home, the agent's registration,
// a protected file), whatever program it runs, and what it does not hide reads as outside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bwrapSandbox, hideOptions } from '../../src/agents/shared/bwrap.js';
import { tmpDir } from '../helpers/git.js';

const BWRAP = '/usr/bin/bwrap';
const HELPER = path.resolve('node_modules/@anthropic-ai/sandbox-runtime/vendor/seccomp/x64/apply-seccomp');

function cannotRun(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `Linux x64 only (${process.platform})`;
  if (!existsSync(BWRAP)) return 'bubblewrap is not installed (/usr/bin/bwrap; CI installs it with apt-get)';
  if (!existsSync(HELPER)) return `the seccomp helper is not installed (${HELPER})`;
  const r = spawnSync(BWRAP, ['--unshare-all', '--ro-bind', '/', '/', '/bin/true'], { encoding: 'utf8' });
  return r.status === 0 ? false : `bubblewrap cannot create namespaces here: ${(r.stderr ?? '').trim()}`;
}
const SKIP = cannotRun();
const CANARY = 'canary-7f3a91';

const spawn = (bin: string, args: string[], env: NodeJS.ProcessEnv) => {
  const r = spawnSync(bin, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return { status: r.status, stderr: r.stderr ?? '' };
};

test('hideOptions: outermost first, nothing under a hidden directory, files as /dev/null, missing paths skipped', () => {
  const d = tmpDir('latch-hide-');
  mkdirSync(path.join(d, 'home/.codex'), { recursive: true });
  writeFileSync(path.join(d, 'home/.codex/hooks.json'), '{}');
  writeFileSync(path.join(d, 'home/.bashrc'), '');
  symlinkSync(path.join(d, 'home/.bashrc'), path.join(d, 'link'));
  const codex = path.join(d, 'home/.codex');
  const opts = hideOptions([
    path.join(codex, 'hooks.json'),
    codex,
    path.join(d, 'link'),
    path.join(d, 'home/.bashrc'),
    path.join(d, 'nothing-here'),
    '/',
  ]);
  assert.deepEqual(opts, [
    '--tmpfs',
    codex,
    '--remount-ro',
    codex,
    '--ro-bind',
    '/dev/null',
    path.join(d, 'home/.bashrc'),
  ]);
});

test('a sealed read sees none of what is hidden, changes nothing, and reads the rest as outside', {
  skip: SKIP,
}, () => {
  const latchHome = tmpDir('latch-sealed-home-');
  const home = tmpDir('latch-sealed-user-');
  const work = tmpDir('latch-sealed-work-');
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  const sb = bwrapSandbox(latchHome, env, spawn);
  if (!sb.ok) assert.fail(`no sealed sandbox: ${sb.why}`);
  assert.equal(sb.sealed, true);
  // Secrets in Latch's home and the agent's registration; a registration file inside a hidden directory.
  writeFileSync(path.join(latchHome, 'secret'), `${CANARY}\n`);
  mkdirSync(path.join(home, '.codex'));
  writeFileSync(path.join(home, '.codex/hooks.json'), `{"k":"${CANARY}"}\n`);
  writeFileSync(path.join(home, '.bashrc'), `# ${CANARY}\n`);
  writeFileSync(path.join(work, 'code.txt'), 'visible text\n');
  symlinkSync(path.join(latchHome, 'secret'), path.join(work, 'via-link'));
  const hide = [latchHome, path.join(home, '.codex'), path.join(home, '.codex/hooks.json'), path.join(home, '.bashrc')];
  const run = (command: string) => {
    const p = sb.argv(command, env, hide);
    const r = spawnSync(p.file, p.args, { cwd: work, env: p.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  };
  const reads = [
    `cat ${latchHome}/secret`,
    'cat via-link',
    `grep -rn ${CANARY} ${home} ${latchHome} . 2>&1`,
    `ls -la ${latchHome} ${home}/.codex`,
    `cat ${home}/.codex/hooks.json ${home}/.bashrc`,
    `find ${home} ${latchHome} -type f -exec cat {} +`,
    `python3 -c "import os; print(open('${latchHome}/secret').read())"`,
  ];
  for (const command of reads) {
    const r = run(command);
    assert.doesNotMatch(r.out, new RegExp(CANARY), `${command} saw a hidden file: ${r.out}`);
  }
  // What is not hidden reads as it does outside; the read-only bind holds for the hidden paths too.
  const visible = run('cat code.txt; ls');
  assert.equal(visible.status, 0, visible.out);
  assert.equal(visible.out, 'visible text\ncode.txt\nvia-link\n');
  const write = run(`echo x > ${latchHome}/secret; echo y > ${home}/.codex/new; echo z > code.txt`);
  assert.notEqual(write.status, 0);
  assert.equal(readFileSync(path.join(latchHome, 'secret'), 'utf8'), `${CANARY}\n`);
  assert.equal(existsSync(path.join(home, '.codex/new')), false);
  assert.equal(readFileSync(path.join(work, 'code.txt'), 'utf8'), 'visible text\n');
});
