import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { homedir, tmpdir } from 'node:os';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { classifyCommand, type ClassifyContext } from '../../src/shell/readonly.js';
import { parseCommandList } from '../../src/shell/words.js';

const HOME = '/home/tester';
const LATCH_HOME = `${HOME}/.local/state/latch`;
const LATCH_BIN = '/opt/agent-latch/bin/latch.cjs';
// Test isolation: the git configuration check reads the system and XDG configuration files.
process.env.GIT_CONFIG_SYSTEM = '/dev/null';
process.env.XDG_CONFIG_HOME = '/nonexistent-xdg';
/** An empty working directory (not inside a repository). */
const CWD = realpathSync(mkdtempSync(join(tmpdir(), 'latch-ro-')));
after(() => rmSync(CWD, { recursive: true, force: true }));
const ctx: ClassifyContext = { latchHome: LATCH_HOME, latchBin: LATCH_BIN, home: HOME, cwd: CWD };
/** The git spelling accepted while latched (see readonly-git.test.ts). */
const G = 'git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null';
const GL = `${G} -c gpg.program=/dev/null -c gpg.ssh.program=/dev/null -c gpg.x509.program=/dev/null`;
const GD = `${G} -c diff.autoRefreshIndex=false`;
const L = LATCH_BIN;

// [command, readOnly, touchesLatch, reason substring (optional)]
type Row = [string, boolean, boolean, string?];

const rows: Row[] = [
  // plain read-only commands and lists
  ['ls', true, false],
  [`ls -la && ${G} status`, true, false],
  // Changed by issue 10: plain `git status` runs core.fsmonitor and hooks; the safe spelling is required.
  ['ls -la && git status', false, false, 'needs --no-pager'],
  ['pwd; ls -1 src', true, false],
  ['cat README.md | head -n 20', true, false],
  ['cat a b | wc -l', true, false],
  ['tail -n 50 log.txt |& head', true, false],
  ['grep -rn "TODO" src', true, false],
  ['egrep -i "a|b" file.txt', true, false],
  ['rg -n foo src --glob "*.ts"', true, false],
  ['find . -name "*.ts" -type f', true, false],
  ['find src -maxdepth 2 -print', true, false],
  ['sort -u names.txt', true, false],
  ['sort -t o -k 2 x', true, false],
  ['uniq -c counts.txt', true, false],
  ['uniq -f 2 in.txt', true, false],
  ['cut -d, -f1 data.csv | sort | uniq -c', true, false],
  ['tr a-z A-Z < in.txt', true, false],
  ['jq ".name" package.json', true, false],
  ['stat -c %s file; du -sh .; df -h', true, false],
  ['tree -L 2 src', true, false],
  ['which node && type ls', true, false],
  ['basename /a/b.txt; dirname /a/b.txt; realpath .; readlink -f x', true, false],
  ['diff -u a.txt b.txt || cmp a b', true, false],
  ['sha256sum sums.txt; md5sum x', true, false],
  // Changed: -c reads the files a list names (not checkable).
  ['sha256sum -c sums.txt', false, false, 'checksum list'],
  ['nl -ba file.txt', true, false],
  ['printf "%s\\n" hello', true, false],
  ['echo hi', true, false],
  ['true && false || true', true, false],
  ['file README.md', true, false],
  ["echo 'a > b'", true, false],
  ['echo "a > b; rm -rf /"', true, false],
  ["echo 'costs $5 and $(nothing)'", true, false],
  ['cat a\\ b', true, false],
  ['ls *.ts src/*.md', true, false],
  ['ls # just a comment; rm x', true, false],
  ['ls \\\n  -la', true, false],
  ['ls &', true, false],
  ['ls;', true, false],
  [`ls\n\n${G} status\n`, true, false],
  ['cd src && ls', true, false],
  ['cd', true, false],
  ['/bin/ls -la', true, false],
  [`/usr/bin/${G.slice(4)} status`.replace('/usr/bin/--', '/usr/bin/git --'), true, false],
  ['/usr/local/bin/cat x', false, false, 'run by path'],
  // Changed by issue 10: `set` (set -k, set -o keyword) changes how later words are read.
  ['set -euo pipefail; ls', false, false, 'shell builtin `set`'],
  // redirections
  ['ls 2>/dev/null', true, false],
  ['ls 2>&1 | head', true, false],
  ['ls >/dev/null 2>&1', true, false],
  ['ls &>/dev/null', true, false],
  ['echo warn >&2', true, false],
  ['wc -l < input.txt', true, false],
  ['echo hi > a.txt', false, false, 'the redirection `> a.txt` writes a file'],
  ['cat a >> b', false, false, 'the redirection `>> b` writes a file'],
  ['ls >| out', false, false, 'writes a file'],
  ['ls &> out.log', false, false, 'writes a file'],
  ['ls 2> err.log', false, false, 'the redirection `2> err.log` writes a file'],
  ['ls >& out.log', false, false, 'writes a file'],
  ['cat <> f', false, false, 'read-write redirection'],
  ['> truncated', false, false, 'redirection'],
  ['echo hi>a.txt', false, false, 'writes a file'],
  // unsupported syntax
  ['cat "$(whoami)"', false, false, 'command substitution $(...) is not allowed'],
  ['cat `whoami`', false, false, 'command substitution `...`'],
  ['echo $HOME', false, false, 'variable expansion $HOME'],
  ['echo "${PATH}"', false, false, 'parameter expansion'],
  ['echo $((1+2))', false, false, 'arithmetic expansion'],
  ['diff <(ls a) <(ls b)', false, false, 'process substitution'],
  // Changed: heredocs are understood now (an unquoted delimiter may not expand anything).
  ['cat <<EOF\nhi\nEOF', true, false],
  ['cat <<EOF\nhi $USER\nEOF', false, false, 'quote the delimiter'],
  ['(cd x && ls)', false, false, 'subshells'],
  ['{ ls; }', false, false, 'shell keyword `{`'],
  ['f() { rm x; }', false, false, 'function definitions'],
  ['echo {a,b}', false, false, 'brace expansion'],
  ["echo 'unterminated", false, false, 'unterminated single quote'],
  ['echo "unterminated', false, false, 'unterminated double quote'],
  ['eval ls', false, false, 'shell builtin `eval`'],
  ['FOO=bar ls', false, false, 'environment assignment'],
  ['ls && ', false, false, 'syntax error'],
  ['', false, false, 'the command is empty'],
  // not on the allowlist / mutating options
  ['ls; rm -rf /', false, false, '`rm` is not on the read-only allowlist'],
  ['true && tee x', false, false, '`tee` is not on the read-only allowlist'],
  ['sed -i s/a/b/ f', false, false, '`sed -i` edits files in place'],
  ['less README.md', false, false, 'not on the read-only allowlist'],
  ['python3 -c "print(1)"', false, false, '`python3` is not on the read-only allowlist'],
  ['ls | xargs rm', false, false, '`xargs`'],
  ['./ls', false, false, 'run by path'],
  ['/tmp/bin/cat x', false, false, 'run by path'],
  ['find . -delete', false, false, 'find -delete'],
  ['find . -name x -exec rm {} ;', false, false, 'find -exec'],
  ['find . -fprint out', false, false, 'find -fprint'],
  ['find * -name x', false, false, 'reads as an option'],
  ['rg --pre cat x', false, false, 'runs external programs'],
  ['rg --pre=cat x', false, false, 'runs external programs'],
  ['sort -o f x', false, false, 'writes a file'],
  ['sort -uo f x', false, false, 'writes a file'],
  ['sort --output=f x', false, false, 'writes a file'],
  ['sort --out=f x', false, false, 'writes a file'],
  ['sort --compress-program=sh x', false, false, 'runs a program'],
  ['sort *.txt', false, false, 'reads as an option'],
  ['uniq in.txt out.txt', false, false, 'writes the output file'],
  ['uniq *.txt', false, false, 'reads as an option'],
  ['uniq ./*.txt', false, false, 'uniq writes the second'],
  ['tree -o out.txt', false, false, 'write output files'],
  ['file -C -m magic', false, false, 'compiled magic'],
  ['printf -v x hi', false, false, 'printf -v'],
  // git (issue 10: only the safe spelling; see readonly-git.test.ts for the experiments)
  [`${GL} log --no-ext-diff --no-textconv --oneline -n 20`, true, false],
  [`${GD} diff --no-ext-diff --no-textconv HEAD~1 -- src`, true, false],
  [`${GL} show --no-ext-diff --no-textconv HEAD:package.json`, true, false],
  [`${GL} log --no-ext-diff --no-textconv -p`, true, false],
  [`git -C /tmp/repo ${G.slice(4)} status --short`, true, false],
  [`${G} rev-parse --abbrev-ref HEAD && ${G} ls-files`, true, false],
  [`${G} blame --no-textconv -L 1,10 src/a.ts`, true, false],
  [`${G} branch`, true, false],
  [`${G} branch -avv`, true, false],
  [`${G} branch --show-current`, true, false],
  [`${G} branch --list "feat*"`, true, false],
  [`${G} grep -n foo -- src`, true, false],
  ['git log --oneline -n 20', false, false, 'needs --no-pager'],
  ['git diff HEAD~1 -- src', false, false, 'needs --no-pager'],
  ['git show HEAD:package.json', false, false, 'needs --no-pager'],
  ['git --no-pager log -p', false, false, '-c core.fsmonitor=false'],
  [`${G} log -p --no-ext-diff --no-textconv`, false, false, '-c gpg.program=/dev/null'],
  [`${GL} log -p --no-textconv`, false, false, '--no-ext-diff (right after log)'],
  [`${G} blame -L 1,10 src/a.ts`, false, false, '--no-textconv (right after blame)'],
  ['git describe --tags', false, false, 'not on the read-only list'],
  ['git remote -v', false, false, 'not on the read-only list'],
  ['git config --get user.name', false, false, 'not on the read-only list'],
  ['git -c core.pager=sh log', false, false, '`git -c core.pager=sh` is not allowed'],
  ['git --git-dir=/x status', false, false, 'the git option `--git-dir=/x` is not allowed'],
  ['git --exec-path=/tmp log', false, false, 'is not allowed'],
  [`${GD} diff --no-ext-diff --no-textconv --output=x`, false, false, 'writes a file'],
  [`${GL} log --no-ext-diff --no-textconv --output x`, false, false, 'writes a file'],
  [`${GD} diff --no-ext-diff --no-textconv --ext-diff`, false, false, 'runs configured programs'],
  [`${G} branch new-feature`, false, false, 'creates a branch'],
  [`${G} branch -D old`, false, false, 'not a listing option'],
  ['git commit -m x', false, false, '`git commit` is not on the read-only list'],
  ['git push', false, false, 'not on the read-only list'],
  ['git checkout -- .', false, false, 'not on the read-only list'],
  ['git stash', false, false, 'not on the read-only list'],
  ['git', false, false, 'needs a subcommand'],
  [`${G} grep -O foo`, false, false, 'git grep -O'],
  // nested shells
  [`bash -c 'ls && ${G} status'`, true, false],
  // A login shell reads startup files the agent may have armed while mutable.
  [`bash -lc 'ls && ${G} status'`, false, false, 'login shell'],
  ['sh -c "cat a | wc -l"', true, false],
  ["bash -c 'ls && rm x'", false, false, '`rm` is not on the read-only allowlist'],
  ["bash -c 'ls && rm x'", false, false, '`rm`'],
  ["bash -c 'echo hi > out'", false, false, 'writes a file'],
  ['bash script.sh', false, false, 'only allowed as'],
  ["bash -c 'ls' extra", false, false, 'only allowed as'],
  ['echo rm x | bash', false, false, 'only allowed as'],
  [`bash -c "bash -c 'bash -c \\"bash -c ls\\"'"`, false, false, 'nested'],
  // latch itself (issue 10: only the installed executable, exact absolute path; every other
  // spelling is touchesLatch, and `latch doctor` is no longer a read form)
  [`${L} status`, true, false],
  [`${L} status --json`, true, false],
  [`${L} log`, true, false],
  [`${L} blame src/a.ts`, true, false],
  [`${L} brief --page 2`, true, false],
  [`${L} brief --page 2 --session abc`, true, false],
  [`${L} brief show`, true, false],
  [`node ${L} status`, true, false],
  [`/usr/bin/node ${L} brief --page 1`, true, false],
  [`${L} doctor`, false, true, '`latch doctor` starts processes'],
  ['latch status', false, true, 'installed executable'],
  ['latch log', false, true, 'installed executable'],
  ['latch brief --page 2', false, true, 'installed executable'],
  ['npx latch status', false, true, 'installed executable'],
  ['node ./node_modules/agent-latch/bin/latch.cjs log', false, true, 'installed executable'],
  ['./node_modules/.bin/latch status', false, true, 'installed executable'],
  ['./latch status', false, true, 'installed executable'],
  ['node x/latch.cjs status', false, true, 'installed executable'],
  [`node --require x ${L} status`, false, true],
  [`/tmp/node ${L} status`, false, true, 'installed executable'],
  [`${L} verify --yes`, false, true, "not one of the agent's read forms"],
  [`${L} resume`, false, true, 'only a human may run it'],
  ['latch verify --yes', false, true],
  ['npx latch resume', false, true],
  [`${L} setup`, false, true],
  [`${L} uninstall`, false, true],
  [`${L} exec -- rm x`, false, true],
  [`${L} brief set "new brief"`, false, true],
  [`${L} hook`, false, true],
  [`${L} demo`, false, true],
  [`${L} frobnicate`, false, true],
  [`${L}`, false, true],
  [`${L} doctor --fix`, false, true],
  [`${L} doctor --repair`, false, true, '`latch doctor --repair` replaces Latch'],
  [`${L} doctor --repair --json`, false, true, '`latch doctor --repair` replaces Latch'],
  [`ls && ${L} resume`, false, true],
  [`bash -lc '${L} resume'`, false, true],
  ['ls && latch resume', false, true],
  ["bash -lc 'latch resume'", false, true],
  ['env latch resume', false, true, 'runs latch'],
  ['timeout 5 latch verify', false, true, 'runs latch'],
  ['latch resume $(id)', false, true, 'changes Latch state'],
  ['npx --yes latch status', false, true, 'installed executable'],
  // latch home / binary mentions
  [`cat ${LATCH_HOME}/latch.db`, true, true, 'Latch home directory'],
  ['cat ~/.local/state/latch/latch.db', true, true, 'Latch home directory'],
  [`ls ${LATCH_HOME}/`, true, true, 'Latch home directory'],
  ['ls "/home/tester/.local/state/lat"\'ch\'', true, true, 'Latch home directory'],
  ['cat ~/.local/state/lat*/latch.db', true, true, 'Latch home directory'],
  ['ls /home/tester/.local/state/*', true, true, 'Latch home directory'],
  ['cat /home/tester/.local/./state//latch/x', true, true, 'Latch home directory'],
  ['cd ~/.local/state && cat latch/latch.db', true, true, 'Latch home directory'],
  [`rm -rf ${LATCH_HOME}`, false, true, 'Latch home directory'],
  ['cat $LATCH_HOME/latch.db', false, true, '$LATCH_HOME'],
  ['cat ${LATCH_HOME}/latch.db', false, true, '${LATCH_HOME}'],
  ['LATCH_HOME=/tmp/x latch status', false, true, 'LATCH_HOME'],
  ['cat $HOME/.local/state/latch/latch.db', false, true, 'Latch home directory'],
  ['rm -rf "$XDG_STATE_HOME/latch"', false, true, 'Latch home directory'],
  ['ls ${XDG_STATE_HOME:-~/.local/state}/latch', false, true, 'Latch home directory'],
  [`echo x > ${LATCH_HOME}/flag`, false, true, 'Latch home directory'],
  [`cat ${LATCH_BIN}`, true, true, 'Latch executable'],
  [`cp evil.js ${LATCH_BIN}`, false, true, 'Latch executable'],
  ['ls /home/tester/.local/state', true, false],
  ['ls /home/*', true, false],
  ['grep -rn latch src', true, false],
  ['find . -name latch', true, false],
];

describe('classifyCommand: table', () => {
  for (const [command, readOnly, touchesLatch, reason] of rows) {
    test(JSON.stringify(command), () => {
      const v = classifyCommand(command, ctx);
      assert.equal(v.readOnly, readOnly, `readOnly; reasons: ${JSON.stringify(v.reasons)}`);
      assert.equal(v.touchesLatch, touchesLatch, `touchesLatch; reasons: ${JSON.stringify(v.reasons)}`);
      if (!readOnly || touchesLatch) assert.ok(v.reasons.length > 0, 'a reason is given');
      if (readOnly && !touchesLatch) assert.deepEqual(v.reasons, []);
      if (reason !== undefined) {
        assert.ok(
          v.reasons.some((r) => r.includes(reason)),
          `expected a reason containing ${JSON.stringify(reason)}, got ${JSON.stringify(v.reasons)}`,
        );
      }
    });
  }
});

describe('classifyCommand: context handling', () => {
  test('~ expands with the real home directory when ctx.home is not given', () => {
    const home = homedir();
    const v = classifyCommand('cat ~/.local/state/latch/latch.db', { latchHome: `${home}/.local/state/latch` });
    assert.equal(v.touchesLatch, true);
    assert.equal(v.readOnly, true);
  });

  test('latchHome given with a trailing slash', () => {
    const v = classifyCommand(`cat ${LATCH_HOME}/latch.db`, { latchHome: `${LATCH_HOME}/`, home: HOME });
    assert.equal(v.touchesLatch, true);
    assert.equal(classifyCommand(`ls ${LATCH_HOME}`, { latchHome: `${LATCH_HOME}/`, home: HOME }).touchesLatch, true);
  });

  test('an empty latchHome only disables the path checks', () => {
    assert.deepEqual(classifyCommand('ls -la', { latchHome: '' }), {
      readOnly: true,
      touchesLatch: false,
      reasons: [],
      touchReasons: [],
    });
    assert.equal(classifyCommand('rm x', { latchHome: '' }).readOnly, false);
    assert.equal(classifyCommand('latch resume', { latchHome: '' }).touchesLatch, true);
  });

  test('the allowed invocation may live inside the latch home', () => {
    const bin = `${LATCH_HOME}/bin/latch`;
    const c = { latchHome: LATCH_HOME, latchBin: bin, home: HOME };
    assert.deepEqual(classifyCommand(`${bin} status`, c), {
      readOnly: true,
      touchesLatch: false,
      reasons: [],
      touchReasons: [],
    });
    assert.deepEqual(classifyCommand(`bash -c '${bin} status'`, c), {
      readOnly: true,
      touchesLatch: false,
      reasons: [],
      touchReasons: [],
    });
    assert.equal(classifyCommand(`${bin} status ${LATCH_HOME}/x`, c).touchesLatch, true);
    assert.equal(classifyCommand(`${bin} resume`, c).touchesLatch, true);
  });

  test('never throws on odd inputs and context', () => {
    const odd: unknown[] = [undefined, null, 42, {}, 'ls'];
    for (const c of odd) {
      const v = classifyCommand(c as string, ctx);
      assert.equal(typeof v.readOnly, 'boolean');
    }
    assert.equal(classifyCommand('ls', undefined as unknown as ClassifyContext).readOnly, true);
    assert.equal(classifyCommand('x'.repeat(100_000), ctx).readOnly, false);
  });
});

describe('parseCommandList', () => {
  test('splits lists and keeps redirections apart from words', () => {
    const r = parseCommandList('ls -la \'a b\' 2>&1 | head -n1 && echo "x"y');
    assert.ok(r.ok);
    assert.deepEqual(
      r.commands.map((c) => c.words.map((w) => w.value)),
      [
        ['ls', '-la', 'a b'],
        ['head', '-n1'],
        ['echo', 'xy'],
      ],
    );
    assert.deepEqual(r.ops, ['|', '&&']);
    assert.deepEqual(
      r.commands[0]!.redirections.map((x) => [x.fd, x.op, x.target.value]),
      [['2', '>&', '1']],
    );
  });

  test('quoted glob characters are not globs', () => {
    const r = parseCommandList("ls '*.ts' *.md");
    assert.ok(r.ok);
    const [q, g] = r.commands[0]!.words.slice(1);
    assert.equal(q!.glob, false);
    assert.equal(g!.glob, true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const SAFE_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789._';
const safeName = fc
  .array(fc.constantFrom(...SAFE_CHARS.split('')), { minLength: 1, maxLength: 8 })
  .map((cs) => cs.join(''));
const safePath = fc.oneof(
  safeName,
  fc.tuple(safeName, safeName).map(([a, b]) => `${a}/${b}`),
  safeName.map((a) => `./${a}`),
  safeName.map((a) => `src/*.${a}`),
);
/** Anything inside single quotes is literal: shell metacharacters there must not matter. */
const singleQuoted = fc.string({ maxLength: 20 }).map((s) => `'${s.replace(/'/g, '')}'`);
const doubleQuoted = fc.string({ maxLength: 20 }).map((s) => `"${s.replace(/["$`\\!]/g, '')}"`);
const num = fc.integer({ min: 1, max: 200 }).map(String);

function cmd(parts: fc.Arbitrary<string>[]): fc.Arbitrary<string> {
  return fc.tuple(...parts).map((xs) => xs.filter((x) => x.length > 0).join(' '));
}
const opt = (a: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.option(a, { nil: '' });
const paths = fc.array(safePath, { maxLength: 3 }).map((xs) => xs.join(' '));
const safeRedirect = fc.constantFrom('', '', '', ' 2>/dev/null', ' 2>&1', ' >/dev/null', ' <input.txt', ' >&2');

const safeCommand: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      cmd([fc.constant('ls'), opt(fc.constantFrom('-la', '-1', '-R', '-lah')), paths]),
      cmd([fc.constant('cat'), paths]),
      cmd([fc.constantFrom('head', 'tail'), fc.constant('-n'), num, paths]),
      cmd([fc.constant('wc'), opt(fc.constantFrom('-l', '-c', '-w')), paths]),
      cmd([
        fc.constant('echo'),
        fc.array(fc.oneof(safeName, singleQuoted, doubleQuoted), { maxLength: 3 }).map((x) => x.join(' ')),
      ]),
      cmd([
        fc.constantFrom('grep', 'egrep', 'fgrep'),
        opt(fc.constantFrom('-rn', '-i', '-c')),
        fc.oneof(singleQuoted, safeName),
        paths,
      ]),
      // A pattern that starts with '-' is an option to rg, quoted or not (`rg '-L'` follows links).
      cmd([
        fc.constant('rg'),
        opt(fc.constantFrom('-n', '-i', '--hidden', '-l')),
        fc.oneof(singleQuoted, safeName).filter((p) => !p.replace(/^'/, '').startsWith('-')),
        paths,
      ]),
      cmd([
        fc.constant('find'),
        safePath,
        opt(fc.constantFrom('-type f', '-maxdepth 2', '-print')),
        opt(safeName.map((n) => `-name '*.${n}'`)),
      ]),
      cmd([fc.constant('sort'), opt(fc.constantFrom('-u', '-n', '-r', '-k 2', '-t , -k 1')), paths]),
      cmd([fc.constant('uniq'), opt(fc.constantFrom('-c', '-d', '-f 1')), opt(safeName)]),
      cmd([fc.constant('cut'), fc.constantFrom('-d, -f1', '-c1-5', '-f2'), paths]),
      cmd([fc.constant('tr'), fc.constantFrom('a-z A-Z', '-d x', "'\\n' ' '")]),
      cmd([fc.constant('jq'), fc.oneof(singleQuoted, fc.constant('.')), paths]),
      cmd([
        fc.constantFrom(
          'pwd',
          'true',
          'false',
          'df -h',
          `${G} status`,
          `${G} branch`,
          `${L} status`,
          `${L} log`,
          `${L} brief show`,
          `${L} brief --page 1`,
        ),
      ]),
      cmd([
        fc.constant('sed'),
        fc.constantFrom("-n '1,5p'", "-n '$p'", "-ne '/x/p'", "-n '2~3p;10q'", "-E -n '/a|b/,+2p'"),
        paths,
      ]),
      cmd([
        fc.constant('awk'),
        fc.constantFrom("'{print $1}'", "-F: '{print $2, NF}'", "'NR < 5'", "-v n=3 '$3 == n {c++} END {print c}'"),
        paths,
      ]),
      cmd([
        fc.constantFrom(
          'stat',
          'du -sh',
          'file',
          'realpath',
          'basename',
          'dirname',
          'sha256sum',
          'nl',
          'readlink -f',
          'tree -L 2',
          'which',
        ),
        safePath,
      ]),
      cmd([fc.constant('diff'), safePath, safePath]),
      cmd([fc.constant('cd'), safePath.filter((x) => !x.includes('*'))]),
      cmd([fc.constant('printf'), fc.constant("'%s\\n'"), safeName]),
      cmd([
        fc.constant('git'),
        opt(fc.constantFrom('-C sub', `-C ${CWD}`)),
        fc.constant(GL.slice(4)),
        fc.constantFrom(
          'log --no-ext-diff --no-textconv --oneline -n 5',
          '-c diff.autoRefreshIndex=false diff --no-ext-diff --no-textconv --stat',
          'show --no-ext-diff --no-textconv HEAD',
          'rev-parse HEAD',
          'ls-files',
          'blame --no-textconv x.ts',
          'branch -a',
          '-c diff.autoRefreshIndex=false diff --no-ext-diff --no-textconv -- src',
          'status -s',
        ),
      ]),
    ),
    safeRedirect,
  )
  .map(([c, r]) => c + r);

const operator = fc.constantFrom(' && ', ' || ', ' ; ', ' | ', ' |& ', ' & ', '\n', ';', '&&', '|');

function joinCommands(cmds: string[], ops: string[]): string {
  let out = cmds[0] ?? '';
  for (let i = 1; i < cmds.length; i++) out += ops[(i - 1) % ops.length]! + cmds[i]!;
  return out;
}

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const commandList = fc.record({
  cmds: fc.array(safeCommand, { minLength: 1, maxLength: 5 }),
  ops: fc.array(operator, { minLength: 1, maxLength: 4 }),
  wrap: fc.constantFrom('none', 'none', 'bash -c', 'sh -c'),
});

function render(l: { cmds: string[]; ops: string[]; wrap: string }): string {
  const s = joinCommands(l.cmds, l.ops);
  return l.wrap === 'none' ? s : `${l.wrap} ${shQuote(s)}`;
}

const MUTATIONS: Array<(c: string) => string> = [
  (c) => `${c} > out.txt`,
  (c) => `${c} >> log.txt`,
  (c) => `${c} 2>err.txt`,
  (c) => `${c} &>all.txt`,
  (c) => `${c} $(whoami)`,
  (c) => `${c} "$(id -u)"`,
  (c) => `${c} \`id\``,
  (c) => `${c} $USER`,
  (c) => `FOO=1 ${c}`,
  () => 'rm -rf build',
  () => 'mv a b',
  () => 'cp a b',
  () => 'tee x',
  () => 'touch x',
  () => 'python -c 1',
  () => 'find . -delete',
  () => 'find . -name x -exec rm {} +',
  () => 'sed -i s/a/b/ f',
  () => 'sort -o f x',
  () => 'git commit -am x',
  () => 'git -c core.pager=sh log',
  () => 'latch resume',
  () => 'latch status',
  () => 'git status',
  () => 'git --no-pager log -p',
  () => 'set -k',
  () => 'set -o keyword',
  () => 'shopt -s expand_aliases',
  () => 'alias ls=rm',
  () => 'export GIT_DIR=/x',
  (c) => `${c}\0`,
  (c) => `${c} -delete\0`,
  (c) => `${c}\r`,
  (c) => `${c} \u202e`,
  (c) => `ｃａｔ x; ${c}`,
  (c) => `${c} \u2010delete`,
  () => 'find . -delete',
  () => "sed -n '1w out' f",
  () => 'awk \'{system("id")}\' f',
  () => 'awk \'{print > "x"}\' f',
  () => 'rg --pre sh x',
  () => 'ls > out',
  () => 'cat <> f',
  () => 'ls >| x',
  () => 'eval ls',
  () => 'source x',
  () => 'exec ls',
  () => 'node -e 0',
  () => 'python3 -c 1',
  () => 'env ls',
  () => 'xargs ls',
];

describe('classifyCommand: properties', () => {
  test('never throws, always answers with booleans and reasons (arbitrary strings)', () => {
    const check = (s: string): void => {
      const v = classifyCommand(s, ctx);
      assert.equal(typeof v.readOnly, 'boolean');
      assert.equal(typeof v.touchesLatch, 'boolean');
      assert.ok(Array.isArray(v.reasons));
      if (!v.readOnly || v.touchesLatch) assert.ok(v.reasons.length > 0);
    };
    fc.assert(fc.property(fc.string({ maxLength: 200 }), check), { numRuns: 500 });
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), check), { numRuns: 500 });
    const shellish = fc
      .array(fc.constantFrom(...'ls cat -|&;<>\'"\\$`(){}[]*?~#=\n 2 / . dev null latch a'.split('')), {
        maxLength: 60,
      })
      .map((cs) => cs.join(''));
    fc.assert(fc.property(shellish, check), { numRuns: 2000 });
  });

  test('lists of allowlisted commands with safe arguments are read-only', () => {
    fc.assert(
      fc.property(commandList, (l) => {
        const s = render(l);
        const v = classifyCommand(s, ctx);
        assert.equal(v.readOnly, true, `${JSON.stringify(s)} -> ${JSON.stringify(v.reasons)}`);
        assert.equal(v.touchesLatch, false, `${JSON.stringify(s)} -> ${JSON.stringify(v.reasons)}`);
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 1000) },
    );
  });

  test('inserting a mutating construct makes the list not read-only', () => {
    fc.assert(
      fc.property(
        commandList,
        fc.nat(),
        fc.integer({ min: 0, max: MUTATIONS.length - 1 }),
        fc.boolean(),
        (l, at, which, insert) => {
          const cmds = [...l.cmds];
          const idx = at % cmds.length;
          const mutate = MUTATIONS[which]!;
          if (insert) cmds.splice(idx, 0, mutate('ls'));
          else cmds[idx] = mutate(cmds[idx]!);
          const s = render({ ...l, cmds });
          const v = classifyCommand(s, ctx);
          assert.equal(v.readOnly, false, JSON.stringify(s));
          assert.ok(v.reasons.length > 0);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 1000) },
    );
  });

  test('mentioning the latch home anywhere sets touchesLatch', () => {
    // Without latch invocations in the base command: the one documented exception is the program
    // path of an allowed `<path>/latch status` invocation (that path may live in the latch home).
    const noLatch = commandList.filter((l) => !l.cmds.some((c) => c.includes('latch')));
    const mention = fc.constantFrom(
      LATCH_HOME,
      `${LATCH_HOME}/`,
      `${LATCH_HOME}/latch.db`,
      '~/.local/state/latch',
      '$HOME/.local/state/latch/x',
      '$LATCH_HOME',
      '${LATCH_HOME}',
      'LATCH_HOME=/tmp/y',
    );
    fc.assert(
      fc.property(noLatch, mention, fc.nat(), (l, m, at) => {
        const s = render(l);
        const pos = at % (s.length + 1);
        const mutated = s.slice(0, pos) + m + s.slice(pos);
        const v = classifyCommand(mutated, ctx);
        assert.equal(v.touchesLatch, true, JSON.stringify(mutated));
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 1000) },
    );
    // As a plain argument of a generated command, too.
    fc.assert(
      fc.property(
        noLatch,
        fc.nat(),
        fc.constantFrom(`${LATCH_HOME}/latch.db`, `'${LATCH_HOME}'`, `"${LATCH_HOME}/"`),
        (l, at, m) => {
          const cmds = [...l.cmds];
          const idx = at % cmds.length;
          cmds[idx] = `cat ${m}`;
          const v = classifyCommand(render({ ...l, cmds }), ctx);
          assert.equal(v.touchesLatch, true);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('is fast on long adversarial input', () => {
    const inputs = [
      '['.repeat(5000) + '*'.repeat(5000),
      `ls ${'/*'.repeat(3000)}`,
      `cat ${'a*'.repeat(2000)}/${'?'.repeat(2000)}`,
      `bash -c ${shQuote('bash -c ' + shQuote('ls '.repeat(5000)))}`,
      "'".repeat(60000),
      'ls | '.repeat(10000) + 'ls',
    ];
    // A guard against runaway (exponential) work, not a speed goal (that is bench/): these take
    // ~0.2-2 s on this 2-core VM depending on load; a blowup would take minutes.
    const t0 = Date.now();
    for (const s of inputs) classifyCommand(s, ctx);
    assert.ok(Date.now() - t0 < 20_000, `took ${Date.now() - t0}ms`);
  });
});

test('latch brief reads may name the session and the workspace; set never counts as read-only', () => {
  const bin = '/opt/agent-latch/dist/latch.cjs';
  const ctx = { latchHome: '/home/u/.local/state/latch', latchBin: bin };
  for (const c of [
    `${bin} brief --page 2 --session 01a2-bc`,
    `node ${bin} brief --page=1 --cwd /w`,
    `${bin} brief show --json --session s`,
  ]) {
    assert.equal(classifyCommand(c, ctx).readOnly, true, c);
  }
  for (const c of [
    `${bin} brief set --file x`,
    `${bin} brief --page 1 --json`,
    `${bin} brief --page x`,
    `${bin} brief --page 1 --session`,
    `${bin} brief --page 1 --bogus`,
  ]) {
    assert.equal(classifyCommand(c, ctx).readOnly, false, c);
  }
  // Without the installed path, no spelling of latch is allowed (touchesLatch).
  assert.equal(classifyCommand('latch brief --page 2', { latchHome: '/home/u/.local/state/latch' }).touchesLatch, true);
});
