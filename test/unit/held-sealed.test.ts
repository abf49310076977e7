// The held-read rules inside a sealed sandbox (src/guard/held.ts heldShell) and the writes a command
// states plainly (src/shell/writes.ts): inside, the classifier keeps Latch's files and commands out by
// name and refuses stated writes with a reason; any other command runs. Without a sealed sandbox the
// strict allowlist decides alone. Examples, then properties over generated commands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { admittedWhileHeld, heldShell } from '../../src/guard/held.js';
import type { ClassifyContext } from '../../src/shell/readonly.js';
import { statedWrite } from '../../src/shell/writes.js';

process.env.GIT_CONFIG_SYSTEM = '/dev/null';
process.env.XDG_CONFIG_HOME = '/nonexistent-xdg';

const HOME = '/nonexistent-home/u';
const LATCH_HOME = `${HOME}/.local/state/latch`;
const LATCH_BIN = '/nonexistent-opt/agent-latch/dist/latch.cjs';
const CWD = `${HOME}/work/proj`;
const ctx: ClassifyContext = {
  latchHome: LATCH_HOME,
  latchBin: LATCH_BIN,
  home: HOME,
  cwd: CWD,
  protectedPaths: [
    { path: `${HOME}/.codex`, reason: 'the Codex registration' },
    { path: `${CWD}/.latch.toml`, reason: 'the project policy' },
    { path: `${HOME}/.bashrc`, reason: 'a shell startup file' },
  ],
};
const RUNS = Number(process.env.FC_RUNS ?? 300);
const SEALED = { wrap: (c: string) => `SANDBOX ${c}`, sealed: true };
const UNSEALED = { wrap: (c: string) => `SANDBOX ${c}`, sealed: false };

/** Reads agents type that the strict allowlist refuses (git without --no-pager, grep -r at the root, …). */
const SEALED_ONLY = [
  'git status',
  'git status --short',
  'git diff',
  'git --no-pager diff --stat',
  'git log -p -2',
  'git show HEAD --stat',
  'git blame README.md',
  'git rev-parse HEAD',
  'git ls-files',
  'git remote -v',
  'git describe --always',
  'grep -rn needle .',
  'python3 -c "print(1)"',
  'od -c a.bin | head',
  'find . -name "*.py" -exec grep -l foo {} +',
  'ls | xargs wc -l',
  "awk 'NR >= 10' a.txt",
  'df -h',
  // A glob at the root, where .latch.toml is protected (absent here, hidden inside): from the read corpus.
  'ls -d */ | grep "java"',
  'wc -l *',
];

/** Writes a command states plainly, and the word the refusal names. */
const STATED: [string, RegExp][] = [
  ['echo x > a.txt', /> a\.txt/],
  ['cat a >> b', />> b/],
  ['rm -rf build', /`rm`/],
  ['mv a b', /`mv`/],
  ['sed -i s/a/b/ f.py', /sed -i/],
  ['perl -pi -e s/a/b/ f', /perl -i/],
  ['sort -o out.txt in.txt', /sort -o/],
  ['find . -name "*.pyc" -delete', /find -delete/],
  ['find . -type f -exec rm {} +', /find -exec rm/],
  ['git add -A', /git add/],
  ['git commit -m x', /git commit/],
  ['git -C sub checkout main', /git checkout/],
  ['git branch new-feature', /git branch new-feature/],
  ['git stash', /git stash/],
  ['xargs rm < list', /`rm`/],
  ['sudo -u bob touch x', /`touch`/],
  ['timeout 5 tee log', /`tee`/],
  ['env A=1 chmod +x run.sh', /`chmod`/],
  ["bash -c 'echo hi > x'", /> x/],
  ['ls && rm x', /`rm`/],
];

test('sealed: the reads agents type run in the sandbox; unsealed, the strict allowlist still refuses them', () => {
  for (const c of SEALED_ONLY) {
    const s = heldShell(c, ctx, SEALED);
    assert.ok(s.allow, `${c}: ${s.allow ? '' : s.reasons.join('; ')}`);
    assert.equal(s.command, `SANDBOX ${c}`);
    assert.equal(s.sandboxed, true);
    assert.equal(admittedWhileHeld(c, ctx), true, c);
  }
  // Without a sealed sandbox these stay refused: the claim above is not vacuous.
  const strict = SEALED_ONLY.filter((c) => heldShell(c, ctx, UNSEALED).allow);
  assert.ok(strict.length <= 3, `the strict allowlist admits ${strict.join(', ')}`);
});

test('sealed: a stated write is refused with what it writes, before anything runs', () => {
  for (const [c, why] of STATED) {
    assert.match(statedWrite(c) ?? '', why, c);
    const s = heldShell(c, ctx, SEALED);
    assert.equal(s.allow, false, c);
    if (!s.allow) assert.match(s.reasons.join(' '), why, c);
    assert.equal(admittedWhileHeld(c, ctx), false, c);
  }
});

test('sealed: Latch’s files and commands stay out by name; a recursive read passes over them', () => {
  for (const c of [
    `cat ${LATCH_HOME}/latch.db`,
    `ls ${HOME}/.codex`,
    `cat ${HOME}/.bashrc`,
    'cat .latch.toml',
    `sqlite3 ${LATCH_HOME}/latch.db .dump`,
    `node ${LATCH_BIN} verify --yes`,
  ]) {
    const s = heldShell(c, ctx, SEALED);
    assert.equal(s.allow, false, c);
  }
  // At the workspace root a recursive grep would reach .latch.toml: inside, that file is hidden.
  assert.equal(heldShell('grep -rn needle .', ctx, SEALED).allow, true);
  assert.equal(heldShell('grep -rn needle .', ctx, UNSEALED).allow, false);
});

test('statedWrite: plain reads state no write', () => {
  for (const c of [
    'cat a.txt',
    'ls -la 2>/dev/null',
    'grep -rn x . > /dev/null',
    'git status',
    'git branch -a',
    'git branch',
    'git tag',
    'git stash list',
    'git remote -v',
    'git config --get user.name',
    'find . -name x -exec cat {} +',
    'sed -n 1,5p f',
    'sort a.txt',
    "bash -c 'cat x'",
    'echo hi >&2',
  ])
    assert.equal(statedWrite(c), null, c);
});

// Properties: wrapping, chaining and redirecting keep a stated write stated; the sealed rules admit
// everything the strict rules admit.

const read = fc.constantFrom('cat a.txt', 'ls -la', 'grep -n x f', 'git status', 'wc -l f', 'head -5 f', 'pwd');
const write = fc.constantFrom(...STATED.map(([c]) => c).filter((c) => !c.startsWith('bash -c')));
const file = fc.stringMatching(/^[a-z][a-z0-9_.]{0,10}$/);

test('property: a write stays stated after a read, behind a launcher, in bash -c, or as a redirection', () => {
  fc.assert(
    fc.property(read, write, file, fc.constantFrom(' && ', '; ', ' || ', ' | '), (r, w, f, sep) => {
      assert.notEqual(statedWrite(`${r}${sep}${w}`), null, `${r}${sep}${w}`);
      assert.notEqual(statedWrite(`nohup ${w}`), null, `nohup ${w}`);
      assert.notEqual(statedWrite(`bash -c '${w.replace(/'/g, `'\\''`)}'`), null, w);
      assert.notEqual(statedWrite(`${r} > ${f}`), null, `${r} > ${f}`);
      assert.equal(heldShell(`${r}${sep}${w}`, ctx, SEALED).allow, false);
    }),
    { numRuns: RUNS },
  );
});

test('property: whatever the strict rules admit, the sealed rules admit', () => {
  const word = fc.constantFrom(
    'a.txt',
    '-n',
    '-la',
    'x',
    '.',
    '|',
    '&&',
    'wc',
    'grep',
    'git',
    'status',
    '-r',
    '2>/dev/null',
  );
  const cmd = fc
    .tuple(fc.constantFrom('cat', 'ls', 'grep', 'git', 'find', 'sed', 'echo', 'head'), fc.array(word, { maxLength: 6 }))
    .map(([p, ws]) => [p, ...ws].join(' '));
  fc.assert(
    fc.property(cmd, (c) => {
      if (heldShell(c, ctx, UNSEALED).allow) assert.equal(heldShell(c, ctx, SEALED).allow, true, c);
    }),
    { numRuns: RUNS * 3 },
  );
});
