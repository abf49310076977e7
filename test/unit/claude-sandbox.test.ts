// Claude Code's read-only sandbox for held reads, for real on this machine: bubblewrap + the seccomp
// helper of the pinned @anthropic-ai/sandbox-runtime. Every wrapped command runs the way Claude Code
// runs a Bash call (`bash -c "… eval '<command>' …"`), with its messaging socket variables set and
// something on stdin. Reads work; writes, the network, unix sockets and new namespaces do not; the
// probe is remembered; a tampered helper is refused; the shell snapshots are emptied before a held read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn as spawnAsync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  claudeReadSandbox,
  claudeReadsReport,
  isClaudeRewrittenRead,
  prepareClaudeHeldRead,
} from '../../src/agents/claude/sandbox.js';
import { shellQuote, wrapClassifierOnly } from '../../src/guard/read-shell.js';
import { git, tmpDir } from '../helpers/git.js';

const BWRAP = '/usr/bin/bwrap';
const RUNTIME = path.resolve('node_modules/@anthropic-ai/sandbox-runtime');
const HELPER = path.join(RUNTIME, 'vendor/seccomp/x64/apply-seccomp');
const CODEX = path.resolve('node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');

/** Why the real sandbox cannot run on this machine, or false. */
function cannotRun(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return `bubblewrap + seccomp is Linux x64 only (${process.platform}/${process.arch})`;
  if (!existsSync(BWRAP)) return 'bubblewrap is not installed (/usr/bin/bwrap; CI installs it with apt-get)';
  if (!existsSync(HELPER)) return `the seccomp helper is not installed (${HELPER})`;
  const r = spawnSync(BWRAP, ['--unshare-all', '--ro-bind', '/', '/', '/bin/true'], { encoding: 'utf8' });
  if (r.status !== 0) return `bubblewrap cannot create namespaces here: ${(r.stderr ?? '').trim()}`;
  return false;
}
const SKIP = cannotRun();
/** An environment in which no Codex binary is found. */
const BARE: NodeJS.ProcessEnv = { ...process.env, PATH: '/usr/bin:/bin', LATCH_CODEX_BIN: '' };

let spawned = 0;
const spawn = (bin: string, args: string[], env: NodeJS.ProcessEnv) => {
  spawned++;
  const r = spawnSync(bin, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return { status: r.status, stderr: r.stderr ?? '' };
};

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `line` the way Claude Code runs a Bash call's command, with its variables and a stdin. */
function claudeShell(line: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawnAsync('/bin/bash', ['-c', `eval ${shellQuote(line)} && pwd -P >| /dev/null`], {
      cwd,
      env: {
        ...env,
        CLAUDE_CODE_MESSAGING_SOCKET: env.CLAUDE_CODE_MESSAGING_SOCKET ?? '/nonexistent.sock',
        CLAUDE_CODE_MESSAGING_TOKEN: 'token-from-claude',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (status) => resolve({ status, stdout, stderr }));
    p.stdin.on('error', () => {});
    p.stdin.end('stdin-from-claude\n');
  });
}

/** Every file under `dir` (not .git) with its content: what must stay exactly as it was. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const n of readdirSync(d).sort()) {
      const p = path.join(d, n);
      const st = statSync(p, { throwIfNoEntry: false });
      if (n === '.git') continue;
      if (st?.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = st?.isFile() ? readFileSync(p, 'utf8') : '<other>';
    }
  };
  walk(dir);
  return out;
}

interface World {
  latchHome: string;
  home: string;
  work: string;
  env: NodeJS.ProcessEnv;
  wrap(command: string): string;
  run(command: string, extra?: NodeJS.ProcessEnv): Promise<Run>;
}

let world: World | null = null;
function setup(): World {
  if (world) return world;
  const latchHome = tmpDir('latch-csb-home-');
  const home = tmpDir('latch-csb-user-');
  const work = tmpDir('latch-csb-work-');
  writeFileSync(path.join(home, '.bashrc'), 'echo from-bashrc\n');
  git(work, 'init', '-q', '.');
  writeFileSync(path.join(work, 'a.txt'), "it's here\n");
  git(work, 'add', 'a.txt');
  git(work, 'commit', '-q', '-m', 'first');
  writeFileSync(path.join(work, 'a.txt'), "it's here\nchanged\n");
  symlinkSync(path.join(home, '.bashrc'), path.join(work, 'link'));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  const st = claudeReadSandbox(latchHome, env, spawn);
  if (!st.ok) assert.fail(`no sandbox: ${st.why}`);
  assert.match(st.where, /^bubblewrap \(\/usr\/bin\/bwrap\) \+ seccomp \(@anthropic-ai\/sandbox-runtime@0\.0\.83/);
  world = {
    latchHome,
    home,
    work,
    env,
    wrap: st.wrap,
    run: (command, extra = {}) => claudeShell(st.wrap(command), work, { ...env, ...extra }),
  };
  return world;
}

test('reads run inside: cat, ls, git status and log in a repository; stdin is empty; the exit status comes through', {
  skip: SKIP,
}, async () => {
  const w = setup();
  const cat = await w.run('cat a.txt | tr a-z A-Z');
  assert.equal(cat.status, 0, cat.stderr);
  assert.equal(cat.stdout, "IT'S HERE\nCHANGED\n");
  const ls = await w.run('ls');
  assert.deepEqual(ls.stdout.trim().split('\n'), ['a.txt', 'link']);
  const status = await w.run('git --no-pager status --short; git --no-pager log --oneline | wc -l');
  assert.equal(status.status, 0, status.stderr);
  assert.equal(status.stdout, ' M a.txt\n?? link\n1\n');
  // Claude Code's stdin (a socket) does not reach the read, nor its messaging variables, nor a startup file.
  const quiet = await w.run(
    'cat; echo "[${CLAUDE_CODE_MESSAGING_SOCKET-unset}][${CLAUDE_CODE_MESSAGING_TOKEN-unset}]"',
  );
  assert.equal(quiet.stdout, '[unset][unset]\n');
  const exit = await w.run('echo out; echo err >&2; exit 7');
  assert.deepEqual([exit.status, exit.stdout, exit.stderr], [7, 'out\n', 'err\n']);
  // Every wrap is recognised as a held read; anything added to one is not.
  const line = w.wrap('git --no-pager status');
  assert.equal(isClaudeRewrittenRead(line), true);
});

test('writes fail everywhere: the cwd, /tmp, $HOME, $LATCH_HOME, /proc/self/fd, symlinks; nothing changes', {
  skip: SKIP,
}, async () => {
  const w = setup();
  const before = { work: contents(w.work), home: contents(w.home), latch: contents(w.latchHome) };
  const tmpTarget = `/tmp/latch-csb-escape-${process.pid}`;
  const attempts = [
    'echo x > new.txt',
    'echo x >> a.txt',
    ': > a.txt',
    'rm a.txt',
    'mv a.txt b.txt',
    'mkdir d',
    'ln a.txt hard',
    'ln -s a.txt soft',
    'echo x > link',
    'echo x >> link',
    'git add a.txt',
    'git -c user.name=x -c user.email=x@x commit -qam x',
    'git init -q again',
    `touch ${tmpTarget}`,
    `echo x > ${shellQuote(path.join(w.home, '.bashrc'))}`,
    `echo x > ${shellQuote(path.join(w.home, 'new'))}`,
    `echo x > ${shellQuote(path.join(w.latchHome, 'owned'))}`,
    `echo '{}' > ${shellQuote(path.join(w.latchHome, 'sandbox', 'claude-probe.json'))}`,
    'exec 3<a.txt; echo x > /proc/self/fd/3',
    'exec 3<a.txt; echo x >> /proc/$$/fd/3',
    `echo x > /proc/self/root${path.join(w.work, 'a.txt')}`,
    `echo x > /proc/1/cwd/a.txt`,
    'mount -o remount,rw / && echo x > a.txt',
    `mount -t tmpfs none ${shellQuote(w.work)} && echo mounted`,
    'umount -l / && echo x > a.txt',
  ];
  for (const a of attempts) {
    const r = await w.run(a);
    assert.notEqual(r.status, 0, `${a} succeeded: ${r.stdout}`);
  }
  assert.deepEqual(
    { work: contents(w.work), home: contents(w.home), latch: contents(w.latchHome) },
    before,
    'a file changed',
  );
  assert.equal(existsSync(tmpTarget), false);
  // /dev is the sandbox's own: its /dev/shm is a private tmpfs, gone with the read.
  const shm = await w.run('echo x > /dev/shm/latch-csb-shm && cat /dev/shm/latch-csb-shm');
  assert.equal(shm.stdout, 'x\n');
  assert.equal(existsSync('/dev/shm/latch-csb-shm'), false);
  assert.equal(git(w.work, 'status', '--short'), 'M a.txt\n?? link');
});

test('no network: a TCP connect to a 127.0.0.1 listener outside fails', { skip: SKIP }, async () => {
  const w = setup();
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  try {
    const r = await w.run(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected >&3 && echo connected`);
    assert.notEqual(r.status, 0);
    assert.doesNotMatch(r.stdout, /connected/);
    const dns = await w.run('getent hosts registry.npmjs.org');
    assert.notEqual(dns.status, 0, dns.stdout);
  } finally {
    await new Promise((r) => server.close(r));
  }
  assert.equal(connections, 0);
});

test('no unix socket to a listener outside (plain bubblewrap without the helper would connect)', {
  skip: SKIP,
}, async () => {
  const w = setup();
  const dir = tmpDir('latch-csb-sock-');
  const sock = path.join(dir, 'cc.sock');
  const got: string[] = [];
  const server = net.createServer((s) => s.on('data', (d) => got.push(String(d))));
  await new Promise<void>((r) => server.listen(sock, r));
  const connect = `${shellQuote(process.execPath)} -e ${shellQuote(
    `const s = require('net').connect(${JSON.stringify(sock)}); s.on('connect', () => { s.end('escaped'); console.log('connected'); }); s.on('error', (e) => { console.log(e.code); process.exit(3); });`,
  )}`;
  try {
    const r = await w.run(connect, { CLAUDE_CODE_MESSAGING_SOCKET: sock });
    assert.equal(r.status, 3, r.stdout + r.stderr);
    assert.match(r.stdout, /EPERM|EACCES/);
    // The control: the same line without the seccomp helper connects (the leak the helper closes).
    const line = w.wrap(connect);
    const plain = line.replace(/ -- '[^']*apply-seccomp' /, ' -- ');
    assert.notEqual(plain, line);
    const leak = await claudeShell(plain, w.work, w.env);
    assert.match(leak.stdout, /connected/, leak.stderr);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(got, ['escaped']);
  } finally {
    await new Promise((r) => server.close(r));
  }
});

test('no new user namespace inside (nested namespaces would let a read unmount the read-only binds)', {
  skip: SKIP || (!existsSync('/usr/bin/unshare') && 'no /usr/bin/unshare'),
}, async () => {
  const w = setup();
  for (const a of [
    'unshare -Ur true',
    'unshare -Urm sh -c "mount -t tmpfs none /mnt && echo mounted"',
    'unshare -m true',
  ]) {
    const r = await w.run(a);
    assert.notEqual(r.status, 0, `${a}: ${r.stdout}`);
    assert.doesNotMatch(r.stdout, /mounted/);
  }
  const max = await w.run('cat /proc/sys/user/max_user_namespaces');
  assert.equal(max.stdout.trim(), '0');
});

test('the probe is written once and reused; a changed binary identity probes again', { skip: SKIP }, () => {
  const latchHome = tmpDir('latch-csb-probe-');
  spawned = 0;
  const first = claudeReadSandbox(latchHome, process.env, spawn);
  assert.equal(first.ok, true, first.ok ? '' : first.why);
  assert.equal(spawned, 2, 'the probe runs `true`, then the write');
  const file = path.join(latchHome, 'sandbox', 'claude-probe.json');
  const rec = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(rec.ok, true);
  assert.equal(rec.bwrap.path, BWRAP);
  assert.equal(rec.helper.path, HELPER);
  assert.deepEqual(readdirSync(path.join(latchHome, 'sandbox')), ['claude-probe.json'], 'the probe target is gone');
  spawned = 0;
  assert.equal(claudeReadSandbox(latchHome, process.env, spawn).ok, true);
  assert.equal(spawned, 0, 'reused');
  // The record is what is believed for the same identity (a forged "ok: false" only turns the sandbox off).
  writeFileSync(file, JSON.stringify({ ...rec, ok: false, why: 'recorded failure' }));
  assert.deepEqual(claudeReadSandbox(latchHome, BARE, spawn), {
    ok: false,
    why: 'recorded failure; no Codex binary to lend its sandbox either',
  });
  // Another identity (as after an upgrade of bubblewrap): probed again.
  writeFileSync(file, JSON.stringify({ ...rec, ok: false, bwrap: { ...rec.bwrap, ino: rec.bwrap.ino + 1 } }));
  spawned = 0;
  assert.equal(claudeReadSandbox(latchHome, process.env, spawn).ok, true);
  assert.equal(spawned, 2);
  assert.equal(claudeReadsReport(latchHome, process.env).guard, 'sandbox');
});

test('a probe that fails is remembered as no sandbox, with the reason', { skip: SKIP }, () => {
  const latchHome = tmpDir('latch-csb-fail-');
  const failing = () => ({ status: 1, stderr: 'bwrap: No permissions to create new namespace' });
  const st = claudeReadSandbox(latchHome, BARE, failing);
  assert.equal(st.ok, false);
  assert.match(st.ok ? '' : st.why, /does not run here \(exit 1: bwrap: No permissions/);
  assert.equal(claudeReadsReport(latchHome, BARE).guard, 'classifier_only');
});

test('the helper is pinned: a tampered copy or another release is refused, even with Codex at hand', {
  skip: SKIP,
}, () => {
  const latchHome = tmpDir('latch-csb-pin-');
  const copy = (version: string, tamper: boolean) => {
    const dir = tmpDir('latch-csb-rt-');
    const pkg = JSON.parse(readFileSync(path.join(RUNTIME, 'package.json'), 'utf8'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...pkg, version }));
    const helper = path.join(dir, 'vendor/seccomp/x64/apply-seccomp');
    mkdirSync(path.dirname(helper), { recursive: true });
    copyFileSync(HELPER, helper);
    if (tamper) writeFileSync(helper, Buffer.concat([readFileSync(HELPER), Buffer.from('\0')]));
    chmodSync(helper, 0o755);
    return dir;
  };
  const env = { ...process.env, LATCH_CODEX_BIN: CODEX };
  // The untampered copy is accepted (the seam is sound).
  assert.equal(claudeReadSandbox(latchHome, env, spawn, { runtime: copy('0.0.83', false) }).ok, true);
  const tampered = copy('0.0.83', true);
  const t = claudeReadSandbox(latchHome, env, spawn, { runtime: tampered });
  assert.equal(t.ok, false);
  assert.match(
    t.ok ? '' : t.why,
    /has SHA-256 [0-9a-f]{64}, not the one recorded for @anthropic-ai\/sandbox-runtime@0\.0\.83/,
  );
  assert.match(claudeReadsReport(latchHome, env, { runtime: tampered }).detail, /SHA-256/);
  const other = claudeReadSandbox(latchHome, env, spawn, { runtime: copy('0.0.84', false) });
  assert.equal(other.ok, false);
  assert.match(other.ok ? '' : other.why, /is 0\.0\.84 .*not the pinned 0\.0\.83/);
});

test('LATCH_SANDBOX=off: classifier only, and the report says so', () => {
  const latchHome = tmpDir('latch-csb-off-');
  assert.deepEqual(claudeReadSandbox(latchHome, { LATCH_SANDBOX: 'off' }, spawn), {
    ok: false,
    why: 'LATCH_SANDBOX=off',
  });
  assert.equal(claudeReadsReport(latchHome, { LATCH_SANDBOX: 'off' }).guard, 'classifier_only');
});

test('without bubblewrap: Codex lends its sandbox when it is given, else no sandbox with the reason', {
  skip: SKIP || (!existsSync(CODEX) && 'no codex binary in node_modules'),
}, async () => {
  const latchHome = tmpDir('latch-csb-codex-');
  const work = tmpDir('latch-csb-cwork-');
  writeFileSync(path.join(work, 'f.txt'), 'hello\n');
  const noBwrap = { bwrap: path.join(work, 'no-bwrap') };
  const none = claudeReadSandbox(latchHome, BARE, spawn, noBwrap);
  assert.deepEqual(none, {
    ok: false,
    why: 'bubblewrap (bwrap) is not installed; no Codex binary to lend its sandbox either',
  });
  const missingHelper = claudeReadSandbox(latchHome, BARE, spawn, {
    runtime: work,
  });
  assert.match(missingHelper.ok ? '' : missingHelper.why, /not installed \(no package\.json/);
  const st = claudeReadSandbox(latchHome, { ...process.env, LATCH_CODEX_BIN: CODEX }, spawn, noBwrap);
  assert.equal(st.ok, true, st.ok ? '' : st.why);
  if (!st.ok) return;
  assert.match(st.where, /sandbox` \(bubblewrap \(bwrap\) is not installed\)$/);
  const line = st.wrap('cat f.txt; cat; echo "[${CLAUDE_CODE_MESSAGING_SOCKET-unset}]"');
  assert.equal(isClaudeRewrittenRead(line), true);
  const read = await claudeShell(line, work, process.env);
  assert.equal(read.status, 0, read.stderr);
  assert.equal(read.stdout, 'hello\n[unset]\n');
  for (const a of ['echo x > g.txt', 'echo x >> f.txt', `echo x > ${shellQuote(path.join(latchHome, 'owned'))}`]) {
    const r = await claudeShell(st.wrap(a), work, process.env);
    assert.notEqual(r.status, 0, a);
  }
  assert.deepEqual(readdirSync(work), ['f.txt']);
  assert.equal(readFileSync(path.join(work, 'f.txt'), 'utf8'), 'hello\n');
  assert.equal(existsSync(path.join(latchHome, 'owned')), false);
  const exit = await claudeShell(st.wrap('exit 5'), work, process.env);
  assert.equal(exit.status, 5);
});

test('isClaudeRewrittenRead: what the wrap writes and the clean shell, nothing else', () => {
  const sample = [
    "\\builtin exec '/usr/bin/bwrap' --new-session --die-with-parent --unshare-all --unshare-user --cap-drop ALL",
    '--ro-bind / / --dev /dev --proc /proc --setenv SRT_ALLOW_NESTED_USERNS 0 --unsetenv SRT_OBSERVE_SOCK',
    '--unsetenv SRT_ENCODED_CMD --unsetenv CLAUDE_CODE_MESSAGING_SOCKET --unsetenv CLAUDE_CODE_MESSAGING_TOKEN --',
    "'/x/vendor/seccomp/x64/apply-seccomp'",
  ].join(' ');
  const w = SKIP ? null : setup();
  const lines = w ? [w.wrap("cat 'a b.txt' | grep -c x"), w.wrap("echo '\\''; exit 3")] : [];
  for (const line of lines) {
    assert.equal(isClaudeRewrittenRead(line), true, line);
    for (const bad of [
      `${line}; touch x`,
      `${line} && touch x`,
      line.replace('--ro-bind / /', '--bind / /'),
      line.replace(' --unshare-all', ''),
      line.replace('--setenv SRT_ALLOW_NESTED_USERNS 0 ', '--setenv SRT_ALLOW_NESTED_USERNS 1 '),
      line.replace(' </dev/null', ''),
      `touch x; ${line}`,
    ])
      if (bad !== line) assert.equal(isClaudeRewrittenRead(bad), false, bad);
  }
  assert.equal(isClaudeRewrittenRead(wrapClassifierOnly('cat a.txt', '/usr/bin:/bin')), true);
  assert.equal(isClaudeRewrittenRead(`${sample} /usr/bin/env cat </dev/null`), false);
  for (const plain of ['cat a.txt', 'exec cat a.txt', '\\builtin exec /usr/bin/bwrap --bind / / cat </dev/null'])
    assert.equal(isClaudeRewrittenRead(plain), false, plain);
  const codexLine =
    "\\builtin unset -v CLAUDE_CODE_MESSAGING_SOCKET CLAUDE_CODE_MESSAGING_TOKEN; CODEX_HOME='/h' exec '/c' sandbox -- /usr/bin/env -u BASH_ENV -u ENV /bin/bash --noprofile --norc -c 'cat f' </dev/null";
  assert.equal(isClaudeRewrittenRead(codexLine), true);
  assert.equal(isClaudeRewrittenRead(codexLine.replace(' </dev/null', '')), false);
});

test('prepareClaudeHeldRead empties every shell snapshot, through no symlink', () => {
  const config = tmpDir('latch-csb-cfg-');
  const env = { CLAUDE_CONFIG_DIR: config, HOME: '/nonexistent' };
  assert.equal(prepareClaudeHeldRead(env), null, 'no snapshot directory: nothing to do');
  const dir = path.join(config, 'shell-snapshots');
  mkdirSync(dir);
  assert.equal(prepareClaudeHeldRead(env), null);
  const a = path.join(dir, 'snapshot-bash-1-aaaa.sh');
  const b = path.join(dir, 'snapshot-bash-2-bbbb.sh');
  writeFileSync(a, 'echo PWNED >> /tmp/pwned\nalias ls=rm\n');
  writeFileSync(b, '');
  assert.equal(prepareClaudeHeldRead(env), null);
  assert.equal(readFileSync(a, 'utf8'), '');
  assert.equal(readFileSync(b, 'utf8'), '');
  // Sourcing an emptied snapshot runs nothing.
  const sourced = spawnSync('/bin/bash', ['-c', `source ${shellQuote(a)} 2>/dev/null || true && echo ok`], {
    encoding: 'utf8',
  });
  assert.equal(sourced.stdout, 'ok\n');

  // ~/.claude when CLAUDE_CONFIG_DIR is not set.
  const home = tmpDir('latch-csb-hm-');
  mkdirSync(path.join(home, '.claude', 'shell-snapshots'), { recursive: true });
  const h = path.join(home, '.claude', 'shell-snapshots', 'snapshot-zsh-1.sh');
  writeFileSync(h, 'evil\n');
  assert.equal(prepareClaudeHeldRead({ HOME: home }), null);
  assert.equal(readFileSync(h, 'utf8'), '');
});

test('prepareClaudeHeldRead refuses a FIFO, a symlink, a hard link or a linked directory planted there', () => {
  const outside = tmpDir('latch-csb-out-');
  const victim = path.join(outside, 'precious.txt');
  writeFileSync(victim, 'keep me\n');
  const plant = (what: (dir: string) => void) => {
    const config = tmpDir('latch-csb-plant-');
    const dir = path.join(config, 'shell-snapshots');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'snapshot-bash-0.sh'), 'echo planted\n');
    what(dir);
    return prepareClaudeHeldRead({ CLAUDE_CONFIG_DIR: config });
  };
  const fifo = plant((dir) => {
    const r = spawnSync('mkfifo', [path.join(dir, 'snapshot-bash-9.sh')]);
    assert.equal(r.status, 0);
  });
  assert.match(fifo ?? '', /snapshot-bash-9\.sh is not a regular file/);
  const link = plant((dir) => symlinkSync(victim, path.join(dir, 'snapshot-bash-9.sh')));
  assert.match(link ?? '', /snapshot-bash-9\.sh is a symbolic link/);
  const hard = plant((dir) => linkSync(victim, path.join(dir, 'snapshot-bash-9.sh')));
  assert.match(hard ?? '', /snapshot-bash-9\.sh has 2 hard links/);
  const sub = plant((dir) => mkdirSync(path.join(dir, 'sub')));
  assert.match(sub ?? '', /sub is not a regular file/);
  assert.equal(readFileSync(victim, 'utf8'), 'keep me\n');
  // The directory itself a symlink: Latch would empty every file of the directory it names.
  const config = tmpDir('latch-csb-dirlink-');
  symlinkSync(outside, path.join(config, 'shell-snapshots'));
  assert.match(prepareClaudeHeldRead({ CLAUDE_CONFIG_DIR: config }) ?? '', /the directory is a symbolic link/);
  assert.equal(readFileSync(victim, 'utf8'), 'keep me\n');
  // Every message says why it matters.
  assert.match(fifo ?? '', /run before every Bash call, outside the sandbox/);
});
