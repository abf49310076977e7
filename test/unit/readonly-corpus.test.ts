// An adversarial corpus for the read-only classifier (issue 10), by category, with an oracle:
// every command the classifier lets through while latched (readOnly and not touchesLatch) is
// run for real, with bash, in a scratch copy of a workspace armed the way an agent could arm it
// while it could still write, and nothing may change (every file's content and mtime under the
// scratch root, and no marker file from an armed program).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync, rmSync, chmodSync, lstatSync, symlinkSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classifyCommand, type ClassifyContext } from '../../src/shell/readonly.js';

process.env.GIT_CONFIG_SYSTEM = '/dev/null';
process.env.XDG_CONFIG_HOME = '/nonexistent-xdg';

const ROOT = realpathSync(mkdtempSync(join(tmpdir(), 'latch-corpus-')));
const HOME = join(ROOT, 'home');
const WS = join(ROOT, 'ws');
const MARKERS = join(ROOT, 'markers');
const LATCH_HOME = join(HOME, '.local', 'state', 'latch');
const INSTALL = join(ROOT, 'opt', 'agent-latch');
const LATCH_BIN = join(INSTALL, 'bin', 'latch.cjs');
const CODEX = join(HOME, '.codex');
const ctx: ClassifyContext = {
  latchHome: LATCH_HOME,
  latchBin: LATCH_BIN,
  home: HOME,
  cwd: WS,
  protectedPaths: [
    { path: join(CODEX, 'hooks.json'), reason: 'the Codex hook registration' },
    { path: join(CODEX, 'config.toml'), reason: 'the Codex configuration (hook trust entries)' },
    { path: join(WS, '.codex'), reason: "the project's Codex configuration" },
    { path: INSTALL, reason: "Latch's installed files" },
    { path: join(HOME, '.bash_profile'), reason: 'a shell startup file' },
  ],
};
const G = 'git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null';
const GL = `${G} -c gpg.program=/dev/null -c gpg.ssh.program=/dev/null -c gpg.x509.program=/dev/null`;
const GD = `${G} -c diff.autoRefreshIndex=false`;
const L = LATCH_BIN;

// Expectations: ro = allowed while latched; no = refused while latched (not read-only, or touches
// Latch); touch = touchesLatch (refused in every state).
type Expect = 'ro' | 'no' | 'touch';
interface Case {
  cat: string;
  cmd: string;
  expect: Expect;
  /** Do not run it in the oracle (never ends, e.g. tail -f). */
  noRun?: boolean;
}
const cases: Case[] = [];
const add = (cat: string, expect: Expect, cmds: readonly string[], noRun = false): void => {
  for (const cmd of cmds) cases.push({ cat, cmd, expect, noRun });
};

function marker(name: string): string {
  return join(MARKERS, name);
}
const M = marker('x');

// ---------------------------------------------------------------------------------------------
// Shell parsing: builtins, keywords, substitutions, expansions, quoting, redirections

add('shell', 'no', [
  'set -k', 'set -k; ls', 'set -o keyword; ls', 'set -o keyword', `set -k; ${G} status GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch ${M}'`,
  'set -euo pipefail; ls', 'set +o posix; ls', 'set -- a b', 'set', 'set -x', 'shopt -s expand_aliases; ls', 'shopt -s extglob',
  'enable -n echo; echo x', 'enable -f x.so y', "alias ls='touch x'; ls", 'unalias ls', "trap 'touch x' EXIT; ls", 'trap - EXIT',
  'export GIT_DIR=/tmp; ls', 'export PATH=/tmp', 'declare -x X=1; ls', 'typeset -x X=1', 'readonly X=1', 'local X=1', 'unset PATH; ls',
  'hash -p /tmp/evil ls; ls', 'command ls', 'builtin cd /', 'exec ls', 'exec >/dev/null', 'source x', '. ./x', 'eval ls', 'eval "touch x"',
  'coproc ls', 'function f { ls; }', 'f() { ls; }; f', 'let x=1', 'read x', 'mapfile x', 'readarray x', 'getopts a x', 'shift', 'umask 0',
  'ulimit -c 0', 'kill 1', 'wait', 'jobs', 'fg', 'bg', 'disown', 'pushd /', 'popd', 'dirs', 'history', 'fc -l', 'bind -x', 'complete -C x y',
  'caller', 'times', 'logout', 'exit 0', 'return', 'break', 'continue', 'test -f x', '[ -f x ]', '[[ -f x ]]', 'if true; then ls; fi',
  'for x in a; do ls; done', 'while false; do ls; done', 'until true; do ls; done', 'case x in x) ls;; esac', 'select x in a; do ls; done',
  '! ls', 'time ls', '{ ls; }', '(ls)', 'ls; (rm x)', 'ls $(touch x)', 'ls `touch x`', 'cat "$(touch x)"', 'cat <(touch x)', 'ls >(touch x)',
  'echo ${x:=y}', 'echo ${x=y}', 'echo $((x=1))', 'echo $[1]', "echo $'\\x41'", 'echo $"x"', 'ls ~root', 'ls ~+', 'ls ~-', 'ls ~root/x',
  'echo {a,b}', 'echo {1..3}', 'x=1 ls', 'PATH=/tmp ls', 'GIT_DIR=/x git status', 'LD_PRELOAD=/x ls', 'BASH_ENV=x bash -c ls',
  'NODE_OPTIONS=--require=x ls', 'ls $HOME', 'ls "$HOME"', 'ls $1', 'ls $@', 'ls $*', 'ls $$', 'ls $!', 'ls $?', 'ls $#', 'ls $-', 'ls $_',
  'ls ${#x}', 'ls ${!x}', 'ls "${x}"', 'arr[0]=1 ls', 'x+=1 ls', "echo 'unterminated", 'echo "unterminated', 'ls \\', 'ls &&', '&& ls',
  '| ls', 'ls ||', 'ls ;; ls', 'ls ;& ls', '', ' ', '\n', '# only a comment', 'ls > ', 'cat <<', 'cat <<EOF', 'cat <<EOF\nx',
  'cat <<EOF\n$(touch x)\nEOF', 'cat <<EOF\n`touch x`\nEOF', 'cat <<EOF\n${x:=1}\nEOF', 'cat <<-EOF\n\t$x\n\tEOF', 'bash <<EOF\nls\nEOF',
  'sh <<EOF\ntouch x\nEOF', "bash <<'EOF'\nls\nEOF", 'cat <<< "$(id)"', 'cat <<< $x',
]);
add('shell', 'ro', [
  'ls', 'ls -la', 'ls; ls', 'ls && ls || ls', 'ls | cat | wc -l', 'ls |& cat', 'ls &', 'ls\nls', 'ls # comment', "echo 'a > b; rm x'",
  'echo "a > b; rm x"', "echo '$(touch x)'", "echo '`touch x`'", 'echo \\$HOME', "echo 'costs $5'", 'echo "costs $ 5"', 'cat a\\ b.txt',
  'ls *.txt', 'ls src/*', 'ls src/*.ts', 'ls -d .[g]*', 'ls ~', 'ls ~/', 'cat <<EOF\nhello\nEOF', "cat <<'EOF'\n$(touch x) `id` ${x:=1}\nEOF",
  'cat <<"EOF"\n$x\nEOF', 'cat <<-EOF\n\thello\n\tEOF', 'cat <<< hello', "cat <<< 'a b'", 'wc -l <<EOF\na\nb\nEOF\necho done',
  'cat < a.txt', 'wc -l < a.txt', 'ls 2>/dev/null', 'ls >/dev/null 2>&1', 'ls &>/dev/null', 'ls &>>/dev/null', 'ls 2>&1 | cat',
  'echo x >&2', 'ls 2>&-', 'ls 1>&2', 'cat 0<a.txt', 'cat <&0', 'ls 3>&1', "cat 'école.txt' 2>/dev/null; true", "grep 'naïve' a.txt; true",
  'echo "héllo wörld"', "echo '日本語'", 'echo "emoji 😀"', 'true', 'false || true', 'pwd', 'cd src && ls', 'cd && ls', 'cd /tmp && pwd',
]);
add('redirect', 'no', [
  'ls > out', 'ls >> out', 'ls >| out', 'cat <> a.txt', 'ls &> out', 'ls &>> out', 'ls 2> err', 'ls 2>> err', 'ls >& out', 'ls 1>out',
  'ls 3>out', 'ls >out', 'echo x>a.txt', 'ls > /dev/tcp/127.0.0.1/9', 'ls > /dev/stdout', 'ls > /dev/stderr', 'ls > /dev/fd/1', 'ls > /proc/self/fd/1',
  'ls > /dev/null/../../tmp/x', 'ls > ~/x', 'ls > *', 'ls > "/dev/null "', 'ls 2>&1 >out', 'ls <&a.txt', 'ls >&-x', '> x', '>> x', '< a.txt',
  `ls > ${LATCH_HOME}/x`, 'ls > .codex/hooks.json', 'ls > ./out', 'cat < /dev/tcp/127.0.0.1/9', 'cat </dev/udp/127.0.0.1/9', 'cat < /dev/tcp/x/1 2>/dev/null',
]);

// ---------------------------------------------------------------------------------------------
// Forbidden characters and look-alikes

const BAD_CHARS = ['\0', '\r', '\x01', '\x07', '\x08', '\x1b', '\x7f', '\x85', '\x9b', '\u200b', '\u200d', '\u200e', '\u202e', '\u2066', '\u2069', '\u2028', '\u2029', '\ufeff', '\u00ad', '\ud800', '\udfff', '\u061c'];
for (const c of BAD_CHARS) {
  add('chars', 'no', [`ls${c}`, `ls ${c}`, `find . -delete${c}`, `find . -name x -delete${c} -print`, `cat 'a${c}b'`, `echo "${c}"`, `${c}ls`, `ls # ${c}`, `cat <<'EOF'\n${c}\nEOF`]);
}
add('chars', 'no', [
  'ｌｓ', 'сat a.txt', 'ls；touch x', 'ls ｜ sh', 'ls ＞ x', 'find . ‐delete', 'find . −delete', 'find . –delete', 'find . —delete', 'find . ﹣delete',
  'find . －delete', "find . '‐delete'", "ls '‐la'", "'ｌｓ'", '"сat" a.txt', "'ls' '－la'", "sort '−o' x", 'ls\u00a0-la', 'ls\u2003-la', 'cat a.txt\u3000x',
  "grep -e 'x' '−r'", "rg '‐‐pre' sh", 'git status ‐‐no-pager', "cat é", 'echo \\é', "find . -name 'x' -ｄｅｌｅｔｅ", "awk 'BEGIN{ｓystem(1)}'", "sed -n '1ｐ' a.txt",
  "rg -n 'x' --pre=ｓh", "ls '--colorｘ'",
]);

// ---------------------------------------------------------------------------------------------
// GTFOBins-style file-write and command payloads for every admitted program

add('gtfobins', 'no', [
  // cat / head / tail / nl / cut / tr / wc
  'cat a.txt > b.txt', 'cat > x <<EOF\nhi\nEOF', 'head -c 10 a.txt > x', 'tail -n 1 a.txt >> x', 'nl a.txt > x', 'cut -c1 a.txt > x', 'tr a b < a.txt > x',
  'wc --files0-from=list', 'wc --files0-from list', 'du --files0-from=list', 'du --files0', 'wc --files0=x',
  // echo / printf
  'echo x > y', 'printf x > y', 'printf -v PATH /tmp', 'printf -vX 1', 'printf * x', 'echo x >| y',
  // find
  'find . -exec touch x \\;', 'find . -execdir sh -c id \\;', 'find . -ok rm {} \\;', 'find . -okdir rm {} \\;', 'find . -delete', 'find . -name x -delete',
  'find . -fprint out', 'find . -fprint0 out', 'find . -fprintf out %p', 'find . -fls out', 'find * -name x', 'find -- -delete', 'find . -D exec',
  'find . -files0-from x', 'find . -name x -o -exec sh -c id \\;', 'find . -name *.txt', 'find . -newerXY x', 'find . -printf', 'find . -name',
  'find -H . -exec id \\;', 'find . \\( -name x -exec id \\; \\)', "find . -name x '-exec' id ';'", 'find . -execdir', 'find . -quit -delete',
  // sort / uniq
  'sort -o out a.txt', 'sort -oout a.txt', 'sort -uo out a.txt', 'sort --output=out a.txt', 'sort --out=x a.txt', 'sort --output x',
  'sort --compress-program=sh a.txt', 'sort --compress=sh a.txt', 'sort -T /tmp a.txt', 'sort --temporary-directory=/tmp a.txt', 'sort --files0-from=x',
  'sort *', 'uniq a.txt out', 'uniq -c a.txt out', 'uniq ./*.txt', 'uniq -- a.txt out', 'uniq *.txt',
  // rg / grep
  'rg --pre sh x', 'rg --pre=sh x', 'rg --pre-glob "*" --pre sh x', 'rg --hostname-bin=sh x', 'rg -z x', 'rg --search-zip x', 'rg -L x', 'rg --follow x',
  'rg -nz x', 'rg -nL x', 'rg x *', 'grep -R x .', 'grep -rR x .', 'grep --dereference-recursive x .', 'grep -nR x', 'grep x *', 'egrep -R x .',
  'fgrep -R x .', 'rg --pr sh x',
  // diff / cmp
  'diff -l a.txt b.txt', 'diff --paginate a.txt b.txt', 'diff -r src src', 'diff --recursive src src', 'diff -rl src src', 'diff * x', 'cmp a.txt b.txt > x',
  // tree / file / stat / ls / du / df
  'tree -o out', 'tree -R -H x', 'tree -Ro x', 'tree --output=x', 'tree --fromfile x', 'tree *', 'file -C -m magic', 'file --compile', 'file -f list',
  'file --files-from list', 'file *', 'stat a.txt > x', 'ls > x', 'du -sh . > x', 'df > x',
  // checksums
  'sha256sum -c sums', 'md5sum --check sums', 'sha1sum -c x', 'b2sum -c x', 'cksum a.txt > x', 'sha512sum -bc x',
  // sed
  'sed -i s/a/b/ a.txt', 'sed -i.bak 1d a.txt', 'sed --in-place 1d a.txt', 'sed --in-place=.b 1d a.txt', "sed -n 1p a.txt -i", 'sed -ni 1p a.txt',
  'sed -f script a.txt', 'sed --file=script a.txt', "sed 'w out' a.txt", "sed -n '1w out' a.txt", "sed -n '/x/w out' a.txt", "sed 'W out' a.txt",
  "sed 'e id' a.txt", "sed '1e touch x' a.txt", "sed 's/a/b/w out' a.txt", "sed 's/a/id/e' a.txt", "sed 'r /etc/passwd' a.txt", "sed 'R x' a.txt",
  "sed 'y/a/b/' a.txt", "sed 's/a/b/' a.txt", "sed -n '/x/{p;w out\n}' a.txt", "sed -n '\\cxcp' a.txt", "sed '$!N' a.txt", "sed 'a foo' a.txt",
  "sed 'i foo' a.txt", "sed 'c foo' a.txt", "sed ':a;ba' a.txt", "sed 'F' a.txt", "sed 'z' a.txt", "sed 'v' a.txt", "sed -n 'p;e id' a.txt",
  "sed -n '1p' --follow-symlinks a.txt", "sed -s -i 1d a.txt", "sed -z -i 1d a.txt", "sed -E -i 1d a.txt", "sed -e '1p' -e 'w x' a.txt",
  "sed --expression='w x' a.txt", "sed -ne 'w x' a.txt", "sed -n '1p w x' a.txt", "sed -n '{p' a.txt", "sed -n 'p}' a.txt", "sed -n '1,p' a.txt",
  "sed -n '/x' a.txt", "sed -n 1p *", 'sed', "sed -n '1p' 'a.txt' > x", "sed -n '/[/]w x/p' a.txt", "sed -n '/\\//w x' a.txt",
  // awk
  "awk 'BEGIN{system(\"touch x\")}'", "awk '{system($0)}' a.txt", "awk 'BEGIN{\"id\" | getline x; print x}'", "awk 'BEGIN{getline < \"/etc/passwd\"}'",
  "awk '{print > \"out\"}' a.txt", "awk '{print >> \"out\"}' a.txt", "awk '{print | \"sh\"}' a.txt", "awk '{printf \"x\" > \"out\"}' a.txt",
  "awk '{close(\"x\")}' a.txt", "awk '{fflush(\"x\")}' a.txt", "awk 'BEGIN{print ENVIRON[\"HOME\"]}'", "awk 'BEGIN{PROCINFO[\"sorted_in\"]=\"x\"}'",
  "awk 'BEGIN{f=\"system\"; @f(\"id\")}'", "awk '@load \"filefuncs\"'", "awk '@include \"x\"'", 'awk -f prog.awk a.txt', 'awk -E prog.awk',
  "awk -i inplace '{print}' a.txt", "awk --include=inplace '{print}' a.txt", "awk -l filefuncs '{print}'", "awk --load=x '{print}'", "awk --exec=x",
  "awk -W exec x", "awk -d '{print}' a.txt", "awk --dump-variables=x '{print}' a.txt", "awk -p '{print}' a.txt", "awk --profile=x '{print}' a.txt",
  "awk -o '{print}' a.txt", "awk --pretty-print=x '{print}'", "awk -D '{print}'", "awk 'BEGIN{ARGV[1]=\"/etc/passwd\"} {print}' a.txt",
  "awk 'BEGIN{ARGC=3}'", "awk '/\"/{system(\"id\")}/\"/' a.txt", "awk '{print $1 > $2}' a.txt", "awk '$1 > 3' a.txt", "awk 'BEGIN{print SYMTAB[\"x\"]}'",
  "awk 'BEGIN{print FUNCTAB[\"x\"]}'", 'awk', "awk '{print}' *", "awk --source='BEGIN{system(1)}'", "awk -e 'BEGIN{}'",
  "awk '{print \"a\" \"b\" > \"/dev/stderr\"}'", 'awk -F', "awk 'BEGIN{while((\"ls\"|getline l)>0) print l}'", "awk 'BEGIN { cmd = \"id\"; cmd | getline }'",
  // jq / misc
  'jq . a.json > x', 'jq -n 1 >| x', 'basename x > y', 'realpath . > x', 'readlink x > y', 'which ls > x', 'type ls > x', 'dirname x > y',
]);
add('gtfobins', 'ro', [
  'cat a.txt', 'cat -A a.txt', 'head -n 2 a.txt', 'head -c 3 a.txt', 'tail -n 1 a.txt', 'tail -c 4 a.txt', 'nl -ba a.txt', 'cut -c1-3 a.txt',
  'tr a-z A-Z < a.txt', 'wc -l a.txt', 'echo hi', "printf '%s\\n' hi", 'find . -name "*.txt" -type f', 'find . -maxdepth 1 -print0', 'find . -ls',
  "find . -printf '%p %s\\n'", 'find -L . -name x', 'find . \\( -name a.txt -o -name b.txt \\) -print', 'find . ! -name x -newer a.txt',
  'find . -path ./src -prune -o -print', "find . -name '-delete'", 'find src -mindepth 1 -maxdepth 2 -type d', 'find . -newermt 2000-01-01 -quit',
  'sort a.txt', 'sort -u -k 1 a.txt', 'sort -t : -k 2 a.txt', 'sort -r a.txt', 'uniq -c a.txt', 'uniq a.txt', 'rg -n hello', 'rg -n hello a.txt',
  'rg -l hello src', 'rg -n x .', 'rg -e hello -g "*.txt"', 'grep -rn hello src', 'grep -n hello a.txt', 'grep -c x a.txt b.txt', 'egrep "a|b" a.txt',
  'fgrep -r x src', 'rg --files', 'rg -g "*.ts" x', 'diff a.txt b.txt', 'diff -u a.txt b.txt', 'diff -r --no-dereference src src', 'cmp a.txt a.txt', 'tree -L 1', 'tree -a src',
  'file a.txt', 'file -m /dev/null a.txt', 'stat a.txt', 'stat -c %s a.txt', 'ls -la src', 'du -sh src', 'df -h .', 'sha256sum a.txt', 'md5sum a.txt b.txt',
  'cksum a.txt', 'b2sum a.txt', "sed -n '1p' a.txt", "sed -n '$p' a.txt", "sed -n '/hello/p' a.txt", "sed -n '1,/x/p' a.txt", "sed '2q' a.txt",
  "sed -n '1~2p' a.txt", "sed -n '/a/,+3p' a.txt", "sed -n 'l' a.txt", "sed -n '=' a.txt", "sed '1d' a.txt", "sed -n '/x/!p' a.txt",
  "sed -n '/hello/{p;q}' a.txt", "sed -ne '1p' -e '2p' a.txt", "sed -E -n '/h(e|a)llo/p' a.txt", "sed -n '0,/hello/p' a.txt", "sed -n -- '1p' a.txt",
  "sed -n '1p # comment' a.txt", "sed -n --posix '1p' a.txt", "awk '{print $1}' a.txt", "awk -F: '{print $1}' a.txt", "awk 'NR==1' a.txt",
  "awk '$1 < 3' a.txt", "awk -v x=1 '{print x, $0}' a.txt", "awk 'END{print NR}' a.txt", "awk '{s+=length($0)} END{print s}' a.txt",
  "awk '/hello/ {c++} END {print c+0}' a.txt", "awk -- '{print}' - < a.txt", "awk 'BEGIN{printf \"%d\\n\", 3}'", 'jq . a.json', 'jq -r .x a.json', "jq -n '1+1'",
  'basename /a/b', 'dirname /a/b', 'realpath a.txt', 'readlink -f a.txt', 'which ls', 'type ls', 'pwd', 'tail -f a.txt',
]);
// Never-ending but read-only: classified, not run.
for (const c of cases) if (c.cmd === 'tail -f a.txt') c.noRun = true;

// ---------------------------------------------------------------------------------------------
// Launchers, interpreters, pagers and everything else that runs code or writes

const RUNNERS = [
  'python', 'python3', 'perl', 'ruby', 'node', 'nodejs', 'deno', 'bun', 'php', 'lua', 'tclsh', 'irb', 'gawk', 'mawk', 'nawk', 'busybox', 'env', 'xargs',
  'nice', 'nohup', 'timeout 5', 'stdbuf -o0', 'setsid', 'flock x', 'watch', 'strace', 'ltrace', 'script -c', 'unbuffer', 'parallel', 'sudo', 'su -c', 'doas',
  'chroot /', 'runuser', 'ionice', 'taskset 1', 'tar', 'zip', 'unzip', 'gzip', 'bzip2', 'xz', 'less', 'more', 'most', 'pg', 'man', 'vim', 'vi', 'nvim',
  'view', 'emacs', 'nano', 'ed', 'ex', 'tee', 'dd', 'cp', 'mv', 'rm', 'ln', 'touch', 'mkdir', 'rmdir', 'chmod', 'chown', 'truncate', 'install', 'rsync',
  'curl', 'wget', 'nc', 'socat', 'ssh', 'scp', 'make', 'npm', 'npx', 'pnpm', 'yarn', 'pip', 'cargo', 'go', 'gcc', 'cc', 'tsc', 'tsx', 'ts-node', 'zsh',
  'dash', 'ksh', 'fish', 'csh', 'tcsh', 'sqlite3', 'mysql', 'psql', 'openssl', 'gpg', 'ssh-keygen', 'crontab', 'at', 'systemd-run', 'sdiff', 'diff3',
  'patch', 'split', 'csplit', 'shuf', 'iconv', 'base64', 'xxd', 'od', 'hexdump', 'strings', 'column', 'paste', 'join', 'comm', 'expand', 'fold', 'fmt',
  'pr', 'rev', 'tac', 'look', 'yes', 'seq', 'date', 'sleep', 'id', 'whoami', 'uname', 'hostname', 'ps', 'top', 'kill', 'pkill', 'printenv', 'mktemp',
  'mkfifo', 'mknod', 'sync', 'shred', 'link', 'unlink', 'git-upload-pack', 'git-receive-pack', 'codex', 'latch-x', 'rg2', 'cat2', 'bat', 'fd', 'ag',
];
for (const r of RUNNERS) add('runners', 'no', [`${r} -c 'touch ${M}'`, `${r} a.txt`, `ls | ${r}`, `${r}`]);
add('runners', 'no', [
  "bash -c 'touch x'", "sh -c 'ls > x'", "sh -c 'ls' extra", 'bash script.sh', 'bash -x -c ls', 'bash --rcfile x -c ls', 'bash -i -c ls', 'bash -c',
  'bash -s < x', 'echo ls | bash', 'echo ls | sh', "bash -c 'set -k; ls'", "bash -lc 'eval ls'", `bash -c "bash -c 'bash -c \\"bash -c ls\\"'"`,
  "sh -c \"$(echo ls)\"", 'sh -c *', "bash -c 'ls' -- x", 'bash -o posix -c ls', 'bash --norc -c ls', 'bash -O extglob -c ls', 'bash -c ~',
  '/tmp/ls', './ls', 'bin/cat a.txt', '~/bin/cat', '/usr/local/bin/cat a.txt', '/opt/bin/cat', '/bin/../tmp/cat', 'l*', '/bin/l?', 'c[a]t a.txt',
]);
add('runners', 'ro', ["bash -c 'ls'", "sh -c 'cat a.txt | wc -l'", "bash -c 'ls && pwd'", "bash -c 'bash -c ls'", '/bin/ls', '/usr/bin/cat a.txt', "bash -ec 'ls'"]);
add('pagers', 'no', [
  'less a.txt', 'more a.txt', 'most a.txt', 'pg a.txt', 'man ls', 'man -P sh ls', 'git help log', 'git log --help', 'git --help', 'git -h', `${G} help log`,
  `${GL} log --no-ext-diff --no-textconv --help`, `${G} status -h`, `${G} grep -O x`, `${G} grep --open-files-in-pager x`, `${G} grep -Ovim x`, 'git -p log',
  'git --paginate log', 'view a.txt', 'vim -R a.txt',
]);

// ---------------------------------------------------------------------------------------------
// git: options and configuration-driven execution

add('git', 'no', [
  'git status', 'git diff', 'git log', 'git log -p', 'git show', 'git blame a.txt', 'git grep x', 'git ls-files', 'git rev-parse HEAD', 'git branch',
  'git --no-pager status', 'git --no-pager log -p', 'git --no-pager -c core.fsmonitor=false status', `${G} log`, `${G} log -p --no-ext-diff --no-textconv`,
  `${GL} log -p -S --no-ext-diff --no-textconv`, `${GL} log -p -G --no-textconv --no-ext-diff`, `${GD} diff -S --no-ext-diff --no-textconv`,
  `${GD} diff --no-textconv -S --no-ext-diff`, `${G} blame -L --no-textconv a.txt`, `${GL} log --no-ext-diff -p --no-textconv`,
  `${GL} log -p`, `${GL} log -p --no-ext-diff`, `${GL} log -p --no-textconv`, `${G} diff`, `${G} diff --no-ext-diff`, `${G} diff --no-textconv`,
  `${G} show --no-ext-diff --no-textconv`, `${G} blame a.txt`, `${G} diff --no-ext-diff --no-textconv --ext-diff`, `${G} diff --no-ext-diff --no-textconv --textconv`,
  `${G} diff --no-ext-diff --no-textconv --ext`, `${G} diff --no-ext-diff --no-textconv --output=x`, `${G} diff --no-ext-diff --no-textconv --out x`,
  `${G} diff --no-ext-diff --no-textconv -o x`.replace(' -o x', ' --outpu=x'), `${GL} log --no-ext-diff --no-textconv --output=x`,
  `${G} diff --no-ext-diff --no-textconv --no-index a.txt b.txt`, `${G} diff --no-ext-diff --no-textconv --submodule=diff`, `${G} grep --recurse-submodules x`,
  `${G} ls-files --recurse-submodules`, `${G} blame --no-textconv --textconv a.txt`, `${G} blame --no-textconv --contents x a.txt`, `${G} grep --textconv x`,
  `${G} status --porcelain > x`, `${G} branch newb`, `${G} branch -d x`, `${G} branch -m x`, `${G} branch -c x`, `${G} branch --set-upstream-to=x`,
  `${G} branch --edit-description`, `${G} branch -f x`, `${G} status --column`, `${G} status -uall --bogus`, `${G} diff --no-ext-diff --no-textconv *`,
  'git -c core.pager=cat log', 'git -c core.fsmonitor=true status', 'git -c core.fsmonitor=/tmp/x status', 'git -c core.hooksPath=/tmp status',
  'git -c alias.x=!id x', 'git -c diff.external=/x diff', 'git -c core.sshCommand=x status', 'git -c include.path=/x status', 'git -ccore.fsmonitor=false status',
  `git --config-env=core.pager=X ${G.slice(4)} log`, `git --exec-path=/tmp ${G.slice(4)} status`, `git --git-dir=/tmp/x ${G.slice(4)} status`,
  `git --work-tree=/tmp ${G.slice(4)} status`, `git --namespace=x ${G.slice(4)} status`, `git --bare ${G.slice(4)} status`, `git --super-prefix=x ${G.slice(4)} status`,
  `git --list-cmds=main ${G.slice(4)} status`, `git --html-path`, 'git --version', `${G} -c color.ui=always status`, `${G} -c gpg.program=/tmp/x log`,
  `${G} commit -m x`, `${G} add .`, `${G} checkout .`, `${G} switch x`, `${G} reset --hard`, `${G} stash`, `${G} clean -fd`, `${G} restore .`, `${G} rm x`,
  `${G} mv a b`, `${G} tag x`, `${G} fetch`, `${G} pull`, `${G} push`, `${G} merge x`, `${G} rebase x`, `${G} cherry-pick x`, `${G} revert x`, `${G} am`,
  `${G} apply x`, `${G} config x y`, `${G} config --get x`, `${G} remote -v`, `${G} describe`, `${G} cat-file -p HEAD`, `${G} cat-file --textconv HEAD:a.txt`,
  `${G} ls-tree HEAD`, `${G} difftool`, `${G} mergetool`, `${G} submodule update`, `${G} worktree add x`, `${G} gc`, `${G} fsck`, `${G} notes add`,
  `${G} update-index --refresh`, `${G} update-ref x y`, `${G} filter-branch`, `${G} archive HEAD -o x`, `${G} bundle create x`, `${G} format-patch -1`,
  `${G} st`, `${G} l*`, 'git', `${G}`, `git -C ${LATCH_HOME} ${G.slice(4)} status`, `git -C * ${G.slice(4)} status`, `${G} diff --no-ext-diff --no-textconv -- ${LATCH_HOME}`,
]);
add('git', 'ro', [
  `${G} status`, `${G} status --short`, `${G} status -sb`, `${G} status --porcelain=v2 -uall`, `${G} status --ignored`, `${GD} diff --no-ext-diff --no-textconv`,
  `${GD} diff --no-ext-diff --no-textconv --stat HEAD`, `${GD} diff --no-ext-diff --no-textconv --cached`, `${GD} diff --no-textconv --no-ext-diff --text`,
  `${GL} log --no-ext-diff --no-textconv --oneline`, `${GL} log --no-ext-diff --no-textconv -p -1`, `${GL} log --no-ext-diff --no-textconv --format='%H %s'`,
  `${GL} log --no-ext-diff --no-textconv --show-signature -1`, `${GL} show --no-ext-diff --no-textconv`, `${GL} show --no-ext-diff --no-textconv HEAD:a.txt`,
  `${GL} show --no-ext-diff --no-textconv --stat`, `${G} blame --no-textconv a.txt`, `${G} grep -n hello`, `${G} ls-files`, `${G} ls-files -m`,
  `${G} rev-parse HEAD`, `${G} rev-parse --show-toplevel`, `${G} branch`, `${G} branch --list`, `${G} branch --show-current`, `${G} branch -a -v`,
  `git -C . ${G.slice(4)} status`, `git -C ${WS} ${G.slice(4)} status`, `${G} -c color.ui=never status`, `${G} -c log.showSignature=false status`,
  `git --no-optional-locks --no-pager -c core.hooksPath=/dev/null -c core.fsmonitor=false status`, `${G} --literal-pathspecs status`,
  `${GL} log --no-ext-diff --no-textconv --submodule=short -p -1`, `${GD} diff --no-ext-diff --no-textconv -- a.txt`,
]);

// ---------------------------------------------------------------------------------------------
// latch in every spelling

add('latch', 'ro', [
  `${L} status`, `${L} status --json`, `${L} status --session s1`, `${L} status --cwd ${WS}`, `${L} log`, `${L} log --json`, `${L} blame a.txt`,
  `${L} blame a.txt --json`, `${L} brief --page 1`, `${L} brief --page=2 --session abc`, `${L} brief show`, `${L} brief show --json`, `${L} --version`,
  `${L} --help`, `node ${L} status`, `node ${L} brief --page 1 --session s`, `/usr/bin/node ${L} log`, `"${L}" status`, `'${L}' status`, `${L} status 2>&1`,
  `${L} status | cat`, `bash -c '${L} status'`,
]);
// A login shell reads startup files the agent may have armed while mutable.
add('runners', 'no', ["bash -lc 'ls && pwd'", "sh -lc 'cat a.txt'", "bash --login -c 'ls'"]);
add('latch', 'touch', [
  'latch status', 'latch', 'latch brief --page 1', './latch status', './latch.cjs status', 'bin/latch status', `${INSTALL}/bin/../bin/latch.cjs status`,
  'node latch.cjs status', 'node ./latch.cjs status', 'node x/latch.cjs status', 'node dist/latch.cjs brief --page 1', 'nodejs latch.cjs status',
  `node --require ./x ${L} status`, `node -r x ${L} status`, `node --inspect ${L} status`, `/tmp/node ${L} status`, `./node ${L} status`, `bun ${L} status`,
  `deno run ${L} status`, `tsx ${L} status`, 'npx latch status', 'npx agent-latch status', 'npx --yes agent-latch@latest status', 'npx -y latch verify',
  'npm exec latch status', 'npm x latch status', 'pnpm exec latch status', 'pnpm dlx agent-latch status', 'yarn latch status', 'bunx latch status',
  'pnpx latch status', 'node_modules/.bin/latch status', '~/.local/bin/latch status', `${L} verify`, `${L} verify --yes --accept-changes`, `${L} resume`,
  `${L} resume --yes`, `${L} setup codex`, `${L} uninstall codex`, `${L} exec -- ls`, `${L} hook codex --event PreToolUse`, `${L} demo`, `${L} doctor`,
  `${L} doctor --json`, `${L} doctor x.jsonl`, `${L} report`, `${L} export agent-trace`, `${L} watch stop`, `${L} __watch /`, `${L} brief set --file x`,
  `${L} brief --page 1 --json`, `${L} brief --page x`, `${L} brief --page 1 --session`, `${L} status --bogus`, `${L} status extra`, `${L} blame`,
  `${L} blame a b`, `${L} log --cwd`, `${L} status --json --json`, `${L} status *`, `${L} frobnicate`, `${L} status ${LATCH_HOME}`, `${L} status --cwd ${LATCH_HOME}`,
  `ls && ${L} resume`, `bash -lc '${L} verify --yes'`, `bash -c 'latch status'`, 'env latch resume', 'timeout 5 latch verify', 'nohup latch verify &',
  'xargs latch resume', 'find . -exec latch resume \\;', "sh -c 'latch resume'", 'latch resume $(id)', 'latch verify "$(id)"', `cat ${L}`, `ls ${INSTALL}`,
  `cp x ${L}`, `sed -n 1p ${L}`, `${L}x status`, `LATCH_HOME=/tmp ${L} status`,
]);

// ---------------------------------------------------------------------------------------------
// Store and registration paths: absolute, relative, ~, globs, symlinks, cd, option values

const PROTECTED_SPELLINGS = [
  `${LATCH_HOME}/latch.db`, `${LATCH_HOME}`, `${LATCH_HOME}/`, `${LATCH_HOME}/./latch.db`, `${LATCH_HOME}//latch.db`, '~/.local/state/latch/latch.db',
  '~/.local/state/latch', '../home/.local/state/latch/latch.db', '../home/.local/state/latch', './../home/.local/state/latch/x', 'src/../../home/.local/state/latch',
  '~/.local/state/lat*/latch.db', '~/.local/state/*/latch.db', '~/.local/*/latch', `${HOME}/.local/stat?/latch/latch.db`, `${HOME}/.local/state/[l]atch`,
  '../*/.local/state/latch/latch.db', 'link-state/latch.db', 'link-state', 'link-db', 'link-parent/state/latch/latch.db', 'lin*/latch.db', 'link-codex/hooks.json',
  '"link-db"', "'link-state'/latch.db", `"${LATCH_HOME}"/latch.db`, `'${HOME}/.local/state/lat'ch/latch.db`, `${CODEX}/hooks.json`, `${CODEX}/config.toml`,
  '~/.codex/hooks.json', '~/.codex/config.toml', '~/.codex/*.json', '.codex/hooks.json', '.codex', './.codex/config.toml', '.cod*/hooks.json', `${WS}/.codex`,
  `${L}`, `${INSTALL}/bin`, `${INSTALL}`, '../opt/agent-latch/bin/latch.cjs', '../opt/*/bin/latch.cjs', '~/.bash_profile', '../home/.bash_profile',
  '/proc/self/cwd/link-db', `/proc/self/root${LATCH_HOME}/latch.db`,
  // `..` after a symlink: the kernel applies it to the link's target (link-parent -> ~/.local).
  'link-parent/../.local/state/latch/latch.db', 'link-parent/../.codex/hooks.json', 'link-parent/../.local/state/*/latch.db',
  'link-parent/../.cod*/hooks.json', `${WS}/link-parent/../.local/state/latch`, 'link-codex/../.local/state/latch/latch.db',
];
const READERS = [
  'cat', 'head -n 1', 'tail -n 1', 'wc -c', 'ls -la', 'stat', 'grep -n x', 'rg -n x', "sed -n '1p'", "awk '{print}'", 'jq .', 'file', 'sort', 'uniq',
  'diff a.txt', 'cmp a.txt', 'nl', 'cut -c1', 'md5sum', 'sha256sum', 'du -s', 'tree', 'realpath', 'readlink -f', 'find', 'basename', 'echo',
  'rm -rf', 'cp a.txt', 'mv a.txt', 'touch', 'chmod 777', 'ln -s x', 'truncate -s 0', 'sqlite3', 'tee', 'dd of=x if=', 'vim', 'python3',
];
for (const r of READERS) {
  for (const p of PROTECTED_SPELLINGS) {
    const cmd = r === 'dd of=x if=' ? `${r}${p}` : `${r} ${p}`;
    add('paths', 'touch', [cmd]);
  }
}
add('paths', 'touch', [
  `cat < ${LATCH_HOME}/latch.db`, 'wc -l < link-db', 'cat < ~/.codex/hooks.json', `cd ${LATCH_HOME} && cat latch.db`, 'cd ~/.local/state && cat latch/latch.db',
  'cd .. && cat home/.local/state/latch/latch.db', 'cd -P link-parent/.. && cat .local/state/latch/latch.db', 'cd link-parent && cat ../.local/state/latch/latch.db', 'cd link-state && ls', 'cd ../home && ls .local/state/latch', 'cd ~ && ls .codex', `grep -f${LATCH_HOME}/latch.db x`,
  'grep -f../home/.local/state/latch/latch.db x', `jq --rawfile x ${LATCH_HOME}/latch.db -n 1`, `rg --ignore-file=${CODEX}/hooks.json x`,
  `sort --random-source=${LATCH_HOME}/latch.db a.txt`, `diff --from-file=${LATCH_HOME}/latch.db a.txt`, `${G} -C ${LATCH_HOME} status`,
  'rg x ..', 'rg x /', 'grep -r x ~', 'grep -rn x ..', 'grep -r x /', 'grep -r x ~/.local/state',
  'rg -uuu x ~/.local', 'rg x ~/.local', 'rg --hidden x ~', 'rg -u x ../home', 'diff -r --no-dereference ~ /tmp', 'rg x ~/.codex', 'grep -r x .codex', 'rg x ../opt', 'rg x link-parent',
  'cat $HOME/.local/state/latch/latch.db', 'cat ${HOME}/.local/state/latch/latch.db', 'cat $LATCH_HOME/latch.db', 'cat ${LATCH_HOME}/latch.db',
  'LATCH_HOME=/tmp/x ls', 'cat "$XDG_STATE_HOME/latch/latch.db"', 'ls ${XDG_STATE_HOME:-~/.local/state}/latch', 'cat $HOME/.codex/hooks.json',
  `bash -c 'cat ${LATCH_HOME}/latch.db'`, "bash -lc 'cd ~/.local/state/latch && ls'", `echo x > ${LATCH_HOME}/x`, 'echo x > ~/.codex/hooks.json',
  'ls > .codex/hooks.json', `find ${LATCH_HOME} -name x`, `find ~/.local/state -path '*latch*'`.replace("'*latch*'", 'x') + ` ${LATCH_HOME}`,
]);
// Not protected: near misses stay allowed.
add('paths', 'ro', [
  'cat a.txt', 'ls ~/.local/state', `ls ${HOME}/.local`, 'ls ..', 'ls ../home', 'cat ../home/notes.txt', 'ls ~', 'ls ~/.codex-other', 'grep -rn latch src',
  'find . -name latch', 'rg -n latch.db src', 'ls link-other', 'cat link-other/a.txt', "echo 'latch status'", 'ls /tmp', 'ls -la /', 'find ~ -maxdepth 1 -name x',
  'find / -maxdepth 0', 'ls ../opt', 'du -sh ..', 'tree -L 1 ..', 'rg x ~', 'rg x ../home', 'ls -d .[!c]*', 'ls -d .[a-b]*',
]);

// ---------------------------------------------------------------------------------------------
// Two-stage: armed while mutable (files created in the scratch workspace), fired by a read

add('two-stage', 'touch', ['./latch status', 'node ./latch.cjs status', 'node bin2/latch.cjs status', 'latch.cjs status', './latch.cjs brief --page 1']);
add('two-stage', 'no', ['./evil', 'bash ./evil', 'sh evil', '. ./evil', 'source evil', 'node evil.js', 'python3 evil.py', 'cat fifo | sh', `${G} st`, 'make']);
// Reading a FIFO only reads: allowed (not run: it blocks).
add('two-stage', 'ro', ['cat fifo &'], true);
// A symlink into the store inside the workspace makes a plain glob reach it.
add('two-stage', 'touch', ['ls ./*', 'ls -d .[a-z]*', 'cat ./*/latch.db', 'ls *', 'grep -r x .', 'grep -r x', 'rg --hidden x', 'rg -uu x .', 'rg -. x']);

// ---------------------------------------------------------------------------------------------

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = lstatSync(p);
      if (e.isDirectory()) {
        out.set(p, `dir:${st.mode}`);
        walk(p);
      } else if (e.isFile()) out.set(p, `${createHash('sha256').update(readFileSync(p)).digest('hex')}:${st.mtimeMs}:${st.mode}`);
      else out.set(p, `other:${st.mode}`);
    }
  };
  walk(dir);
  return out;
}

function diffSnap(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) out.push(`changed or removed: ${k}`);
  for (const k of b.keys()) if (!a.has(k)) out.push(`created: ${k}`);
  return out;
}

before(() => {
  for (const d of [HOME, WS, MARKERS, LATCH_HOME, join(INSTALL, 'bin'), CODEX, join(WS, '.codex'), join(WS, 'src'), join(WS, 'bin2'), join(ROOT, 'other')]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(join(LATCH_HOME, 'latch.db'), 'SQLite format 3\0 secret');
  writeFileSync(LATCH_BIN, '#!/bin/sh\necho "latch (test double) $*"\n');
  chmodSync(LATCH_BIN, 0o755);
  writeFileSync(join(CODEX, 'hooks.json'), '{}');
  writeFileSync(join(CODEX, 'config.toml'), '');
  writeFileSync(join(WS, '.codex', 'hooks.json'), '{}');
  writeFileSync(join(HOME, '.bash_profile'), '');
  writeFileSync(join(HOME, 'notes.txt'), 'notes\n');
  writeFileSync(join(WS, 'a.txt'), 'hello\nworld\n');
  writeFileSync(join(WS, 'b.txt'), 'hello\nthere\n');
  writeFileSync(join(WS, 'a.json'), '{"x": 1}\n');
  writeFileSync(join(WS, 'src', 'x.ts'), 'export const latch = 1;\n');
  writeFileSync(join(ROOT, 'other', 'a.txt'), 'other\n');
  symlinkSync(LATCH_HOME, join(WS, 'link-state'));
  symlinkSync(join(LATCH_HOME, 'latch.db'), join(WS, 'link-db'));
  symlinkSync(join(HOME, '.local'), join(WS, 'link-parent'));
  symlinkSync(CODEX, join(WS, 'link-codex'));
  symlinkSync(join(ROOT, 'other'), join(WS, 'link-other'));
  // Armed while mutable: programs named latch, scripts, and a git repository with every
  // configuration-driven program pointing at a marker.
  for (const f of ['latch', 'latch.cjs', join('bin2', 'latch.cjs'), 'evil', 'evil.js', 'evil.py', 'Makefile']) {
    writeFileSync(join(WS, f), `#!/bin/sh\ntouch ${marker('armed-' + f.replace('/', '_'))}\n`);
    chmodSync(join(WS, f), 0o755);
  }
  const prog = (name: string): string => {
    const p = join(ROOT, `prog-${name}`);
    writeFileSync(p, `#!/bin/sh\ntouch ${marker(name)}\ncat "$@" 2>/dev/null\nexit 0\n`);
    chmodSync(p, 0o755);
    return p;
  };
  const git = (args: string): void => {
    spawnSync('bash', ['-c', `git ${args}`], { cwd: WS, env: { ...process.env, HOME, GIT_CONFIG_NOSYSTEM: '1' }, stdio: 'ignore' });
  };
  git('init -q .');
  git('config user.email a@b && git config user.name n');
  writeFileSync(join(WS, '.gitattributes'), '*.txt diff=evil\n');
  git('add -A && git commit -qm one');
  writeFileSync(join(WS, 'a.txt'), 'hello\nwörld\n');
  for (const [k, v] of [
    ['core.fsmonitor', prog('fsmonitor')], ['diff.external', prog('external')], ['diff.evil.command', prog('diffcmd')], ['diff.evil.textconv', prog('textconv')],
    ['core.pager', prog('pager')], ['pager.status', prog('pager-status')], ['alias.st', `!${prog('alias')}`], ['gpg.program', prog('gpg')],
    ['log.showSignature', 'true'], ['format.pretty', '%G? %s'], ['core.editor', prog('editor')],
  ]) {
    git(`config ${k} '${v}'`);
  }
  for (const h of ['post-index-change', 'reference-transaction', 'post-checkout']) {
    writeFileSync(join(WS, '.git', 'hooks', h), `#!/bin/sh\ntouch ${marker('hook-' + h)}\n`);
    chmodSync(join(WS, '.git', 'hooks', h), 0o755);
  }
  spawnSync('mkfifo', [join(WS, 'fifo')]);
});

after(() => {
  rmSync(ROOT, { recursive: true, force: true });
});

function check(c: Case): void {
  const v = classifyCommand(c.cmd, ctx);
  const allowedLatched = v.readOnly && !v.touchesLatch;
  const msg = `${JSON.stringify(c.cmd)} -> ${JSON.stringify(v)}`;
  if (c.expect === 'ro') {
    assert.ok(allowedLatched, msg);
    assert.deepEqual(v.reasons, [], msg);
  } else if (c.expect === 'touch') {
    assert.equal(v.touchesLatch, true, msg);
    assert.equal(v.readOnly && !v.touchesLatch, false, msg);
  } else {
    assert.equal(allowedLatched, false, msg);
  }
  if (!allowedLatched) {
    assert.ok(v.reasons.length > 0, msg);
    for (const r of v.reasons) assert.ok(r.length > 15 && !r.includes('undefined') && !r.includes('[object'), `reason ${JSON.stringify(r)}`);
  }
}

describe('corpus: decisions', () => {
  const cats = [...new Set(cases.map((c) => c.cat))];
  for (const cat of cats) {
    test(`${cat} (${cases.filter((c) => c.cat === cat).length} cases)`, () => {
      const failures: string[] = [];
      for (const c of cases.filter((x) => x.cat === cat)) {
        try {
          check(c);
        } catch (err) {
          failures.push((err as Error).message.split('\n')[0]!);
        }
      }
      assert.deepEqual(failures, []);
    });
  }

  test('the corpus is large', () => {
    assert.ok(cases.length >= 1500, `${cases.length} cases`);
  });
});

describe('corpus: oracle', () => {
  test('every command allowed while latched runs in the armed scratch workspace and changes nothing', (t) => {
    const allowed = cases.filter((c) => {
      const v = classifyCommand(c.cmd, ctx);
      return v.readOnly && !v.touchesLatch && !c.noRun;
    });
    assert.ok(allowed.length > 150, `${allowed.length} allowed`);
    t.diagnostic(`${cases.length} cases; ${allowed.length} allowed while latched, each run by the oracle`);
    const problems: string[] = [];
    for (const c of allowed) {
      for (const f of readdirSync(MARKERS)) rmSync(join(MARKERS, f));
      // Make tracked files stat-dirty so git must look at them.
      spawnSync('touch', ['-d', '2001-01-01', join(WS, 'a.txt'), join(WS, 'b.txt')]);
      const before = snapshot(ROOT);
      const r = spawnSync('bash', ['-c', c.cmd], {
        cwd: WS,
        env: { PATH: process.env.PATH, HOME, GIT_CONFIG_NOSYSTEM: '1', LANG: 'C.UTF-8' },
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 5000,
        encoding: 'utf8',
      });
      const changed = diffSnap(before, snapshot(ROOT));
      const fired = readdirSync(MARKERS);
      if (changed.length > 0 || fired.length > 0) problems.push(`${JSON.stringify(c.cmd)}: ${[...changed, ...fired.map((f) => `fired ${f}`)].join('; ')} (${r.stderr?.slice(0, 200)})`);
    }
    assert.deepEqual(problems, []);
  });
});
