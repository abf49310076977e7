// The git spelling the classifier accepts while latched, verified against a real git: a scratch
// repository is armed the way an agent could arm it while it could still write (core.fsmonitor,
// a post-index-change hook, diff.external, a diff driver with a command and a textconv via
// .gitattributes, core.pager and pager.<cmd>, an alias, gpg.program with log.showSignature,
// format.pretty and a pretty alias using %G?, a signed commit), then every accepted command is
// run (also on a terminal, through script(1)) and nothing may fire or change. The unsafe
// spellings are run too, as a control that the arming works, and must be refused.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  mkdtempSync,
  mkdirSync,
  writeFileSync,
  readdirSync,
  readFileSync,
  rmSync,
  chmodSync,
  statSync,
  realpathSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classifyCommand, type ClassifyContext } from '../../src/shell/readonly.js';

// Test isolation for the classifier's configuration check (it reads the system and XDG files).
process.env.GIT_CONFIG_SYSTEM = '/dev/null';
process.env.XDG_CONFIG_HOME = '/nonexistent-xdg';

const hasGit = spawnSync('git', ['--version']).status === 0;
const hasScript = spawnSync('script', ['--version']).status === 0;

const G = 'git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null';
const GL = `${G} -c gpg.program=/dev/null -c gpg.ssh.program=/dev/null -c gpg.x509.program=/dev/null`;
const GD = `${G} -c diff.autoRefreshIndex=false`;

let root = '';
let repo = '';
let filterRepo = '';
let subRepo = '';
let markers = '';
let home = '';

function sh(cwd: string, cmd: string, env: NodeJS.ProcessEnv = {}): { status: number | null; out: string } {
  const r = spawnSync('bash', ['-c', cmd], {
    cwd,
    env: {
      ...process.env,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_DATE: '1700000000 +0000',
      GIT_COMMITTER_DATE: '1700000000 +0000',
      ...env,
    },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20_000,
  });
  return { status: r.status, out: (r.stdout ?? '') + (r.stderr ?? '') };
}

/** Run on a pseudo-terminal, so that git would start a pager if it were allowed to. */
function onTty(cwd: string, cmd: string): void {
  if (!hasScript) {
    sh(cwd, cmd);
    return;
  }
  spawnSync('script', ['-qec', cmd, '/dev/null'], {
    cwd,
    env: { ...process.env, HOME: home, GIT_CONFIG_NOSYSTEM: '1', TERM: 'xterm', PAGER: 'less', LESS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 20_000,
  });
}

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile())
        out.set(p, createHash('sha256').update(readFileSync(p)).digest('hex') + ':' + statSync(p).mtimeMs);
      else out.set(p, 'other');
    }
  };
  walk(dir);
  return out;
}

function clearMarkers(): void {
  for (const f of readdirSync(markers)) rmSync(join(markers, f));
}

function fired(): string[] {
  return readdirSync(markers).sort();
}

function ctxFor(cwd: string): ClassifyContext {
  return { latchHome: join(root, 'state', 'latch'), home, cwd };
}

/** Touch the tracked files so git must look at their content (racy / stat-dirty). */
function dirty(dir: string): void {
  sh(dir, 'touch -d "2001-01-01" a.txt b.bin 2>/dev/null; true');
}

before(() => {
  if (!hasGit) return;
  root = realpathSync(mkdtempSync(join(tmpdir(), 'latch-ro-git-')));
  home = join(root, 'home');
  markers = join(root, 'markers');
  mkdirSync(home);
  mkdirSync(markers);
  repo = join(root, 'repo');
  mkdirSync(repo);
  const hook = (name: string): string => {
    const p = join(root, `prog-${name}`);
    writeFileSync(p, `#!/bin/sh\ntouch ${join(markers, name)}\ncat "$@" 2>/dev/null\nexit 0\n`);
    chmodSync(p, 0o755);
    return p;
  };
  const init = (dir: string): void => {
    sh(dir, 'git init -q . && git config user.email a@b && git config user.name n');
    writeFileSync(join(dir, 'a.txt'), 'hello\n');
    writeFileSync(join(dir, 'b.bin'), 'bin\n');
    writeFileSync(join(dir, '.gitattributes'), '*.bin diff=evil\n');
    sh(dir, 'git add -A && git commit -qm one && echo world >> a.txt && echo more >> b.bin');
  };
  init(repo);
  // Arm everything an agent could arm while mutable.
  const cfg: Array<[string, string]> = [
    ['core.fsmonitor', hook('fsmonitor')],
    ['diff.external', hook('external')],
    ['diff.evil.command', hook('diffcmd')],
    ['diff.evil.textconv', hook('textconv')],
    ['core.pager', hook('pager')],
    ['pager.log', hook('pagerlog')],
    ['pager.status', hook('pagerstatus')],
    ['alias.st', `!${hook('alias')}`],
    ['gpg.program', hook('gpg')],
    ['gpg.ssh.program', hook('gpgssh')],
    ['gpg.x509.program', hook('gpgsm')],
    ['gpg.ssh.allowedSignersFile', '/dev/null'],
    ['log.showSignature', 'true'],
    ['format.pretty', '%G? %s'],
    ['pretty.evil', '%G?'],
    ['core.editor', hook('editor')],
  ];
  for (const [k, v] of cfg) sh(repo, `git config ${k} '${v}'`);
  mkdirSync(join(repo, '.git', 'hooks'), { recursive: true });
  for (const h of ['post-index-change', 'post-checkout', 'pre-commit', 'reference-transaction']) {
    writeFileSync(join(repo, '.git', 'hooks', h), `#!/bin/sh\ntouch ${join(markers, 'hook-' + h)}\n`);
    chmodSync(join(repo, '.git', 'hooks', h), 0o755);
  }
  // Signed commits (OpenPGP and SSH armour): verification runs gpg.program / gpg.ssh.program.
  for (const [ref, armour] of [
    ['signed', 'PGP SIGNATURE'],
    ['sshsigned', 'SSH SIGNATURE'],
  ] as const) {
    sh(
      repo,
      `t=$(git rev-parse HEAD^{tree}); p=$(git rev-parse HEAD); ` +
        `c=$(printf 'tree %s\\nparent %s\\nauthor n <a@b> 1700000000 +0000\\ncommitter n <a@b> 1700000000 +0000\\ngpgsig -----BEGIN ${armour}-----\\n \\n iQEzBAABCAAdFiEE\\n -----END ${armour}-----\\n\\nsigned\\n' $t $p | git hash-object -t commit -w --stdin); ` +
        `git -c core.hooksPath=/dev/null update-ref refs/heads/${ref} $c`,
    );
  }
  // A repository with a clean filter driver, and one with a submodule.
  filterRepo = join(root, 'filtered');
  mkdirSync(filterRepo);
  init(filterRepo);
  writeFileSync(join(filterRepo, '.gitattributes'), '*.txt filter=evil\n');
  sh(filterRepo, `git config filter.evil.clean '${hook('clean')}'`);
  subRepo = join(root, 'withsub');
  mkdirSync(subRepo);
  init(subRepo);
  writeFileSync(join(subRepo, '.gitmodules'), '[submodule "x"]\n\tpath = x\n\turl = ./x\n');
  clearMarkers();
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Accepted spellings: classified read-only in the armed repository, and nothing fires or changes. */
const ACCEPTED: string[] = [
  `${G} status`,
  `${G} status --short`,
  `${G} status -sb --porcelain=v2 -uall`,
  `${GD} diff --no-ext-diff --no-textconv`,
  `${GD} diff --no-ext-diff --no-textconv --stat`,
  `${GD} diff --no-ext-diff --no-textconv HEAD`,
  `${GD} diff --no-ext-diff --no-textconv --cached`,
  `${GD} diff --no-ext-diff --no-textconv -- b.bin`,
  `${GL} log --no-ext-diff --no-textconv -p`,
  `${GL} log --no-ext-diff --no-textconv signed -1`,
  `${GL} log --no-ext-diff --no-textconv sshsigned -1`,
  `${GL} log --no-ext-diff --no-textconv --show-signature signed -1`,
  `${GL} log --no-ext-diff --no-textconv --format='%G?' signed -1`,
  `${GL} log --no-ext-diff --no-textconv --pretty=evil signed -1`,
  `${GL} log --no-ext-diff --no-textconv --oneline -n 5`,
  `${GL} show --no-ext-diff --no-textconv`,
  `${GL} show --no-ext-diff --no-textconv signed`,
  `${GL} show --no-ext-diff --no-textconv HEAD:a.txt`,
  `${G} blame --no-textconv a.txt`,
  `${G} blame --no-textconv b.bin`,
  `${G} grep -n hello`,
  `${G} grep -n more`,
  `${G} ls-files`,
  `${G} ls-files -m`,
  `${G} rev-parse HEAD`,
  `${G} rev-parse --show-toplevel`,
  `${G} branch`,
  `${G} branch --list 'sig*'`,
  `${G} branch --show-current`,
  `${G} branch -avv`,
];

/** Unsafe spellings: refused by the classifier; run as a control, each fires something. */
const CONTROLS: Array<[string, string]> = [
  ['git status', 'fsmonitor'],
  ['git --no-pager status', 'fsmonitor'],
  ['git --no-pager -c core.fsmonitor=false status', 'hook-post-index-change'],
  ['git --no-pager -c core.fsmonitor=false -c core.hooksPath=/dev/null diff', 'external'],
  [`${G} diff --no-ext-diff b.bin`, 'textconv'],
  [`${G} log -p --no-ext-diff --no-textconv signed -1`, 'gpg'],
  [`${G} log --no-ext-diff --no-textconv sshsigned -1`, 'gpgssh'],
  [`${G} blame b.bin`, 'textconv'],
  [`${G} grep --textconv more`, 'textconv'],
  ['git st', 'alias'],
  [`${GL} log --ext-diff -p --no-textconv`, 'external'],
];

describe('git: the accepted spelling against an armed repository', { skip: !hasGit }, () => {
  for (const cmd of ACCEPTED) {
    test(cmd.replace(G, 'G').replace(GL.slice(G.length), ' GPG'), () => {
      const v = classifyCommand(cmd, ctxFor(repo));
      assert.deepEqual(
        v,
        { readOnly: true, touchesLatch: false, reasons: [], touchReasons: [] },
        JSON.stringify(v.reasons),
      );
      dirty(repo);
      clearMarkers();
      const before = snapshot(repo);
      const r = sh(repo, cmd);
      assert.equal(r.status, 0, r.out);
      onTty(repo, cmd);
      assert.deepEqual(fired(), [], `fired: ${fired().join(', ')}`);
      assert.deepEqual(snapshot(repo), before, 'the repository changed');
    });
  }

  for (const [cmd, marker] of CONTROLS) {
    test(`control: ${cmd} fires ${marker} and is refused`, () => {
      const v = classifyCommand(cmd, ctxFor(repo));
      assert.equal(v.readOnly, false);
      assert.ok(v.reasons.length > 0);
      dirty(repo);
      clearMarkers();
      sh(repo, cmd);
      assert.ok(fired().includes(marker), `expected ${marker} to fire, fired: ${fired().join(', ')}`);
      clearMarkers();
    });
  }

  test('a pager on a terminal is started without --no-pager (control), never with it', { skip: !hasScript }, () => {
    clearMarkers();
    onTty(repo, 'git -c core.fsmonitor=false -c core.hooksPath=/dev/null log -1 --oneline');
    assert.ok(fired().includes('pagerlog'), `fired: ${fired().join(', ')}`);
    clearMarkers();
    onTty(repo, `${GL} log --no-ext-diff --no-textconv -1 --oneline`);
    assert.deepEqual(fired(), []);
  });

  test('the deny reason spells the accepted form', () => {
    const v = classifyCommand('git log -p', ctxFor(repo));
    assert.ok(
      v.reasons.some((r) => r.includes(`use \`${GL} log --no-ext-diff --no-textconv ...\``)),
      JSON.stringify(v.reasons),
    );
    const s = classifyCommand('git status', ctxFor(repo));
    assert.ok(
      s.reasons.some((r) => r.includes(`use \`${G} status ...\``)),
      JSON.stringify(s.reasons),
    );
  });
});

describe('git: configuration no option can neutralise', { skip: !hasGit }, () => {
  test('a clean filter driver fires on status/diff/ls-files/blame even with every option (control)', () => {
    writeFileSync(join(filterRepo, 'a.txt'), 'hellp\n'); // same size: git must hash the content
    sh(filterRepo, 'touch -d "2001-01-01" a.txt');
    clearMarkers();
    sh(filterRepo, `${G} status`);
    assert.ok(fired().includes('clean'), `fired: ${fired().join(', ')}`);
    clearMarkers();
  });

  for (const cmd of [
    `${G} status`,
    `${GD} diff --no-ext-diff --no-textconv`,
    `${G} ls-files -m`,
    `${G} blame --no-textconv a.txt`,
    `${G} grep x`,
  ]) {
    test(`refused where a filter is configured: ${cmd.replace(G, 'G')}`, () => {
      const v = classifyCommand(cmd, ctxFor(filterRepo));
      assert.equal(v.readOnly, false);
      assert.ok(
        v.reasons.some((r) => r.includes('filter')),
        JSON.stringify(v.reasons),
      );
    });
  }

  test('log/show (committed content only) stay allowed there', () => {
    const v = classifyCommand(`${GL} show --no-ext-diff --no-textconv HEAD:a.txt`, ctxFor(filterRepo));
    assert.equal(v.readOnly, true, JSON.stringify(v.reasons));
  });

  test('an include in the configuration is refused too (it could bring a filter in)', () => {
    sh(subRepo, `git config include.path ${join(root, 'other.cfg')}`);
    const v = classifyCommand(`${G} status`, ctxFor(join(root, 'withsub')));
    assert.equal(v.readOnly, false);
  });

  test('repositories with submodules: status/diff/log/show refused, ls-files allowed', () => {
    sh(subRepo, 'git config --unset include.path');
    for (const cmd of [`${G} status`, `${GL} log --no-ext-diff --no-textconv`]) {
      const v = classifyCommand(cmd, ctxFor(subRepo));
      assert.equal(v.readOnly, false, cmd);
      assert.ok(
        v.reasons.some((r) => r.includes('submodules')),
        JSON.stringify(v.reasons),
      );
    }
    assert.equal(classifyCommand(`${G} ls-files`, ctxFor(subRepo)).readOnly, true);
  });

  test('trace2 in the global configuration writes a file even with -c (control); every git call is refused then', () => {
    const target = join(root, 'trace2.json');
    sh(repo, `git config --global trace2.eventTarget ${target}`);
    sh(repo, `${G} -c trace2.eventTarget= rev-parse HEAD`);
    assert.ok(readdirSync(root).includes('trace2.json'), 'git wrote the trace file despite -c');
    rmSync(target);
    for (const cmd of [`${G} rev-parse HEAD`, `${G} status`, `${GL} log --no-ext-diff --no-textconv -1`]) {
      const v = classifyCommand(cmd, ctxFor(repo));
      assert.equal(v.readOnly, false, cmd);
      assert.ok(
        v.reasons.some((r) => r.includes('trace2')),
        JSON.stringify(v.reasons),
      );
    }
    sh(repo, 'git config --global --unset trace2.eventTarget');
    sh(repo, `git config --global include.path ${join(root, 'x.cfg')}`);
    assert.ok(classifyCommand(`${G} rev-parse HEAD`, ctxFor(repo)).reasons.some((r) => r.includes('include')));
    rmSync(join(home, '.gitconfig'));
    assert.equal(classifyCommand(`${G} rev-parse HEAD`, ctxFor(repo)).readOnly, true);
  });

  test('-C resolves against the working directory; without one the work-tree reads are refused', () => {
    assert.equal(classifyCommand(`git -C filtered ${G.slice(4)} status`, ctxFor(root)).readOnly, false);
    assert.equal(classifyCommand(`git -C repo ${G.slice(4)} status`, ctxFor(root)).readOnly, true);
    const v = classifyCommand(`${G} status`, { latchHome: join(root, 'state', 'latch'), home });
    assert.equal(v.readOnly, false);
    assert.ok(v.reasons.some((r) => r.includes('working directory is not known')));
    assert.equal(
      classifyCommand(`git -C ${repo} ${G.slice(4)} status`, { latchHome: join(root, 'state', 'latch'), home })
        .readOnly,
      true,
    );
  });
});
