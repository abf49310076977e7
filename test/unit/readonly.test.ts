import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import fc from 'fast-check';
import { classifyCommand, type ClassifyContext } from '../../src/core/readonly.js';
import { parseCommandList } from '../../src/core/shell-words.js';

const HOME = '/home/tester';
const LATCH_HOME = `${HOME}/.local/state/latch`;
const LATCH_BIN = '/opt/agent-latch/bin/latch.cjs';
const ctx: ClassifyContext = { latchHome: LATCH_HOME, latchBin: LATCH_BIN, home: HOME };

// [command, readOnly, touchesLatch, reason substring (optional)]
type Row = [string, boolean, boolean, string?];

const rows: Row[] = [
  // plain read-only commands and lists
  ['ls', true, false],
  ['ls -la && git status', true, false],
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
  ['sha256sum -c sums.txt; md5sum x', true, false],
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
  ['ls\n\ngit status\n', true, false],
  ['cd src && ls', true, false],
  ['cd', true, false],
  ['/bin/ls -la', true, false],
  ['/usr/bin/git status', true, false],
  ['set -euo pipefail; ls', true, false],
  // redirections
  ['ls 2>/dev/null', true, false],
  ['ls 2>&1 | head', true, false],
  ['ls >/dev/null 2>&1', true, false],
  ['ls &>/dev/null', true, false],
  ['echo warn >&2', true, false],
  ['wc -l < input.txt', true, false],
  ['echo hi > a.txt', false, false, 'redirection to a file: > a.txt'],
  ['cat a >> b', false, false, 'redirection to a file: >> b'],
  ['ls >| out', false, false, 'redirection to a file'],
  ['ls &> out.log', false, false, 'redirection to a file'],
  ['ls 2> err.log', false, false, 'redirection to a file: 2> err.log'],
  ['ls >& out.log', false, false, 'redirection to a file'],
  ['cat <> f', false, false, 'read-write redirection'],
  ['> truncated', false, false, 'redirection'],
  ['echo hi>a.txt', false, false, 'redirection to a file'],
  // unsupported syntax
  ['cat "$(whoami)"', false, false, 'command substitution $(...) is not allowed'],
  ['cat `whoami`', false, false, 'command substitution `...`'],
  ['echo $HOME', false, false, 'variable expansion $HOME'],
  ['echo "${PATH}"', false, false, 'parameter expansion'],
  ['echo $((1+2))', false, false, 'arithmetic expansion'],
  ['diff <(ls a) <(ls b)', false, false, 'process substitution'],
  ['cat <<EOF\nhi\nEOF', false, false, 'heredoc'],
  ['(cd x && ls)', false, false, 'subshells'],
  ['{ ls; }', false, false, 'brace groups'],
  ['f() { rm x; }', false, false, 'function definitions'],
  ['echo {a,b}', false, false, 'brace expansion'],
  ["echo 'unterminated", false, false, 'unterminated single quote'],
  ['echo "unterminated', false, false, 'unterminated double quote'],
  ['eval ls', false, false, '`eval` is not on the read-only allowlist'],
  ['FOO=bar ls', false, false, 'environment assignment'],
  ['ls && ', false, false, 'syntax error'],
  ['', false, false, 'empty command'],
  // not on the allowlist / mutating options
  ['ls; rm -rf /', false, false, '`rm` is not on the read-only allowlist'],
  ['true && tee x', false, false, '`tee` is not on the read-only allowlist'],
  ['sed -i s/a/b/ f', false, false, '`sed` is not on the read-only allowlist'],
  ['less README.md', false, false, 'not on the read-only allowlist'],
  ['python3 -c "print(1)"', false, false, '`python3` is not on the read-only allowlist'],
  ['ls | xargs rm', false, false, '`xargs`'],
  ['./ls', false, false, 'run by path'],
  ['/tmp/bin/cat x', false, false, 'run by path'],
  ['find . -delete', false, false, 'find -delete'],
  ['find . -name x -exec rm {} ;', false, false, 'find -exec'],
  ['find . -fprint out', false, false, 'find -fprint'],
  ['find * -name x', false, false, 'could expand to an option'],
  ['rg --pre cat x', false, false, 'runs external programs'],
  ['rg --pre=cat x', false, false, 'runs external programs'],
  ['sort -o f x', false, false, 'writes a file'],
  ['sort -uo f x', false, false, 'writes a file'],
  ['sort --output=f x', false, false, 'writes a file'],
  ['sort --out=f x', false, false, 'writes a file'],
  ['sort --compress-program=sh x', false, false, 'runs a program'],
  ['sort *.txt', false, false, 'could expand to an option'],
  ['uniq in.txt out.txt', false, false, 'writes the output file'],
  ['uniq *.txt', false, false, 'could expand'],
  ['uniq ./*.txt', false, false, 'uniq writes the second'],
  ['tree -o out.txt', false, false, 'write output files'],
  ['file -C -m magic', false, false, 'compiled magic'],
  ['printf -v x hi', false, false, 'printf -v'],
  // git
  ['git log --oneline -n 20', true, false],
  ['git diff HEAD~1 -- src', true, false],
  ['git show HEAD:package.json', true, false],
  ['git --no-pager log -p', true, false],
  ['git -C /tmp/repo status --short', true, false],
  ['git rev-parse --abbrev-ref HEAD && git ls-files', true, false],
  ['git blame -L 1,10 src/a.ts', true, false],
  ['git describe --tags', true, false],
  ['git branch', true, false],
  ['git branch -avv', true, false],
  ['git branch --show-current', true, false],
  ['git remote -v', true, false],
  ['git config --get user.name', true, false],
  ['git config --list --show-origin', true, false],
  ['git config get user.email', true, false],
  ['git -c core.pager=sh log', false, false, 'git global option `-c`'],
  ['git --git-dir=/x status', false, false, 'git global option'],
  ['git --exec-path=/tmp log', false, false, 'git global option'],
  ['git diff --output=x', false, false, 'not allowed'],
  ['git log --output x', false, false, 'not allowed'],
  ['git diff --ext-diff', false, false, 'not allowed'],
  ['git branch new-feature', false, false, 'with an argument'],
  ['git branch -D old', false, false, 'not a listing flag'],
  ['git branch --list "feat*"', false, false, 'with an argument'],
  ['git remote add origin x', false, false, 'git remote'],
  ['git config user.name me', false, false, 'git config'],
  ['git config --unset user.name', false, false, 'not a read-only form'],
  ['git commit -m x', false, false, '`git commit` is not on the read-only allowlist'],
  ['git push', false, false, 'not on the read-only allowlist'],
  ['git checkout -- .', false, false, 'not on the read-only allowlist'],
  ['git stash', false, false, 'not on the read-only allowlist'],
  ['git', false, false, 'without a subcommand'],
  ['git grep -O foo', false, false, 'git grep -O'],
  // nested shells
  ["bash -lc 'ls && git status'", true, false],
  ['sh -c "cat a | wc -l"', true, false],
  ["bash -c 'ls && rm x'", false, false, '`rm` is not on the read-only allowlist'],
  ["bash -lc 'ls && rm x'", false, false, '`rm`'],
  ["bash -lc 'echo hi > out'", false, false, 'redirection to a file'],
  ['bash script.sh', false, false, 'only allowed as'],
  ["bash -c 'ls' extra", false, false, 'only allowed as'],
  ['echo rm x | bash', false, false, 'only allowed as'],
  [`bash -c "bash -c 'bash -c \\"bash -c ls\\"'"`, false, false, 'nested'],
  // latch itself
  ['latch status', true, false],
  ['latch log', true, false],
  ['latch blame src/a.ts', true, false],
  ['latch brief --page 2', true, false],
  ['latch brief show', true, false],
  ['latch doctor', true, false],
  ['npx latch status', true, false],
  [`node ${LATCH_BIN} status`, true, false],
  ['node ./node_modules/agent-latch/bin/latch.cjs log', true, false],
  ['./node_modules/.bin/latch status', true, false],
  ['latch verify --yes', false, true, '`latch verify --yes` changes Latch state'],
  ['npx latch resume', false, true, '`latch resume` changes Latch state'],
  ['latch setup', false, true, 'changes Latch state'],
  ['latch uninstall', false, true, 'changes Latch state'],
  ['latch exec -- rm x', false, true, 'changes Latch state'],
  ['latch brief set "new brief"', false, true, 'changes Latch state'],
  ['latch hook', false, true, 'changes Latch state'],
  ['latch demo', false, true, 'changes Latch state'],
  ['latch frobnicate', false, true, 'changes Latch state'],
  ['latch', false, true, 'changes Latch state'],
  ['latch doctor --fix', false, true, 'changes Latch state'],
  ['ls && latch resume', false, true, 'changes Latch state'],
  ["bash -lc 'latch resume'", false, true, 'changes Latch state'],
  ['env latch resume', false, true, 'runs `latch resume`'],
  ['timeout 5 latch verify', false, true, 'runs `latch verify`'],
  ['latch resume $(id)', false, true, 'changes Latch state'],
  ['npx --yes latch status', false, false, 'without launcher options'],
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
        assert.ok(v.reasons.some((r) => r.includes(reason)), `expected a reason containing ${JSON.stringify(reason)}, got ${JSON.stringify(v.reasons)}`);
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
    assert.deepEqual(classifyCommand('ls -la', { latchHome: '' }), { readOnly: true, touchesLatch: false, reasons: [] });
    assert.equal(classifyCommand('rm x', { latchHome: '' }).readOnly, false);
    assert.equal(classifyCommand('latch resume', { latchHome: '' }).touchesLatch, true);
  });

  test('the allowed invocation may live inside the latch home', () => {
    const bin = `${LATCH_HOME}/bin/latch`;
    const c = { latchHome: LATCH_HOME, latchBin: bin, home: HOME };
    assert.deepEqual(classifyCommand(`${bin} status`, c), { readOnly: true, touchesLatch: false, reasons: [] });
    assert.deepEqual(classifyCommand(`bash -lc '${bin} status'`, c), { readOnly: true, touchesLatch: false, reasons: [] });
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
    const r = parseCommandList("ls -la 'a b' 2>&1 | head -n1 && echo \"x\"y");
    assert.ok(r.ok);
    assert.deepEqual(
      r.commands.map((c) => c.words.map((w) => w.value)),
      [['ls', '-la', 'a b'], ['head', '-n1'], ['echo', 'xy']],
    );
    assert.deepEqual(r.ops, ['|', '&&']);
    assert.deepEqual(r.commands[0]!.redirections.map((x) => [x.fd, x.op, x.target.value]), [['2', '>&', '1']]);
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
const singleQuoted = fc
  .string({ maxLength: 20 })
  .map((s) => `'${s.replace(/'/g, '')}'`);
const doubleQuoted = fc
  .string({ maxLength: 20 })
  .map((s) => `"${s.replace(/["$`\\!]/g, '')}"`);
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
      cmd([fc.constant('echo'), fc.array(fc.oneof(safeName, singleQuoted, doubleQuoted), { maxLength: 3 }).map((x) => x.join(' '))]),
      cmd([fc.constantFrom('grep', 'egrep', 'fgrep'), opt(fc.constantFrom('-rn', '-i', '-c')), fc.oneof(singleQuoted, safeName), paths]),
      cmd([fc.constant('rg'), opt(fc.constantFrom('-n', '-i', '--hidden', '-l')), fc.oneof(singleQuoted, safeName), paths]),
      cmd([fc.constant('find'), safePath, opt(fc.constantFrom('-type f', '-maxdepth 2', '-print')), opt(safeName.map((n) => `-name '*.${n}'`))]),
      cmd([fc.constant('sort'), opt(fc.constantFrom('-u', '-n', '-r', '-k 2', '-t , -k 1')), paths]),
      cmd([fc.constant('uniq'), opt(fc.constantFrom('-c', '-d', '-f 1')), opt(safeName)]),
      cmd([fc.constant('cut'), fc.constantFrom('-d, -f1', '-c1-5', '-f2'), paths]),
      cmd([fc.constant('tr'), fc.constantFrom('a-z A-Z', '-d x', "'\\n' ' '")]),
      cmd([fc.constant('jq'), fc.oneof(singleQuoted, fc.constant('.')), paths]),
      cmd([fc.constantFrom('pwd', 'true', 'false', 'df -h', 'git status', 'git branch', 'git remote -v', 'latch status', 'latch log', 'latch brief show')]),
      cmd([fc.constantFrom('stat', 'du -sh', 'file', 'realpath', 'basename', 'dirname', 'sha256sum', 'nl', 'readlink -f', 'tree -L 2', 'which'), safePath]),
      cmd([fc.constant('diff'), safePath, safePath]),
      cmd([fc.constant('cd'), safePath]),
      cmd([fc.constant('printf'), fc.constant("'%s\\n'"), safeName]),
      cmd([fc.constant('git'), opt(fc.constantFrom('--no-pager', '-C sub')), fc.constantFrom('log --oneline -n 5', 'diff --stat', 'show HEAD', 'rev-parse HEAD', 'ls-files', 'describe --tags', 'blame x.ts', 'branch -a', 'config --get user.name', 'diff -- src')]),
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
  wrap: fc.constantFrom('none', 'none', 'bash -lc', 'sh -c'),
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
      .array(fc.constantFrom(...'ls cat -|&;<>\'"\\$`(){}[]*?~#=\n 2 / . dev null latch a'.split('')), { maxLength: 60 })
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
      fc.property(noLatch, fc.nat(), fc.constantFrom(`${LATCH_HOME}/latch.db`, `'${LATCH_HOME}'`, `"${LATCH_HOME}/"`), (l, at, m) => {
        const cmds = [...l.cmds];
        const idx = at % cmds.length;
        cmds[idx] = `cat ${m}`;
        const v = classifyCommand(render({ ...l, cmds }), ctx);
        assert.equal(v.touchesLatch, true);
      }),
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
    const t0 = Date.now();
    for (const s of inputs) classifyCommand(s, ctx);
    assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0}ms`);
  });
});

test('latch brief reads may name the session and the workspace; set never counts as read-only', () => {
  const ctx = { latchHome: '/home/u/.local/state/latch' };
  for (const c of ['latch brief --page 2 --session 01a2-bc', 'node /opt/agent-latch/dist/latch.cjs brief --page=1 --cwd /w', 'latch brief show --json --session s']) {
    assert.equal(classifyCommand(c, ctx).readOnly, true, c);
  }
  for (const c of ['latch brief set --file x', 'latch brief --page 1 --json', 'latch brief --page x', 'latch brief --page 1 --session', 'latch brief --page 1 --bogus']) {
    assert.equal(classifyCommand(c, ctx).readOnly, false, c);
  }
});
