// `latch doctor` led by Claude Code, after the shared checks: what guards reads while a session is held
// (bubblewrap + the pinned seccomp helper as the hooks' probe found them, Codex's sandbox lent, or the
// classifier alone, with the fix) and the registration fingerprint `latch setup claude` records (ok after
// setup, the change named after an edit of the settings file, a warning without a store).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { claudeDoctor } from '../../src/agents/claude/doctor.js';
import { claudeReadSandbox } from '../../src/agents/claude/sandbox.js';
import { setupClaude, TESTED_CLAUDE_VERSION } from '../../src/agents/claude/setup.js';
import { mergeLatchHooks } from '../../src/agents/codex/setup.js';
import { doctor, runChecks, type Check } from '../../src/commands/doctor.js';
import type { Io } from '../../src/kit/io.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(ROOT, 'dist', 'latch.cjs');
const READS = 'claude reads while held';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A directory with a fake `claude` printing the tested version, for PATH (no real binary runs). */
function fakeClaudeDir(): string {
  const bin = tempDir('latch-cdoc-bin-');
  writeFileSync(join(bin, 'claude'), `#!/bin/sh\necho '${TESTED_CLAUDE_VERSION} (Claude Code)'\n`);
  chmodSync(join(bin, 'claude'), 0o755);
  return bin;
}

interface Box {
  dir: string;
  settings: string;
  latchHome: string;
  managed: string;
  io: Io & { text(): string; reset(): void };
}

/** The system directories the tests' PATH holds (besides a fake `claude`; setup writes node's absolute path). */
const SYSTEM_PATH = ['/usr/bin', '/bin'];
/** A Codex there would lend its sandbox where bubblewrap is missing: the cases without a sandbox need none. */
const CODEX_ON_PATH = SYSTEM_PATH.some((d) => existsSync(join(d, 'codex'))) && 'a codex in /usr/bin or /bin';

/**
 * A CLAUDE_CONFIG_DIR, HOME, CODEX_HOME and LATCH_HOME of the test's own. The PATH holds the system
 * directories and a fake `claude` only (no Codex, unless the system has one: CODEX_ON_PATH).
 */
function box(extraEnv: NodeJS.ProcessEnv = {}): Box {
  const dir = tempDir('latch-cdoc-');
  mkdirSync(join(dir, 'home'));
  mkdirSync(join(dir, 'work'));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(CLAUDE_|CODEX_|LATCH_|XDG_STATE_HOME$)/.test(k)) env[k] = v;
  Object.assign(env, {
    HOME: join(dir, 'home'),
    CLAUDE_CONFIG_DIR: join(dir, 'claude'),
    CODEX_HOME: join(dir, 'codex'),
    LATCH_HOME: join(dir, 'state'),
    PATH: [fakeClaudeDir(), ...SYSTEM_PATH].join(':'),
    ...extraEnv,
  });
  let out = '';
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (out += t),
    env,
    cwd: join(dir, 'work'),
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
    text: () => out,
    reset: () => void (out = ''),
  };
  return {
    dir,
    settings: join(dir, 'claude', 'settings.json'),
    latchHome: join(dir, 'state'),
    managed: join(dir, 'none.json'),
    io,
  };
}

async function setup(b: Box): Promise<void> {
  // The running node and the default entry: what this doctor's installation check expects.
  assert.equal(await setupClaude({ ...b.io, out: () => {} }, {}), 0);
}

function byName(checks: Check[], name: string): Check {
  const c = checks.find((x) => x.name === name);
  assert.ok(c, `no check ${name}: ${checks.map((x) => x.name).join(', ')}`);
  return c;
}

/** Why the real bubblewrap + seccomp sandbox cannot be probed here, or false. */
function cannotSandbox(): string | false {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `Linux x64 only (${process.platform})`;
  if (!existsSync('/usr/bin/bwrap')) return 'bubblewrap is not installed (/usr/bin/bwrap)';
  if (!existsSync(join(ROOT, 'node_modules/@anthropic-ai/sandbox-runtime/vendor/seccomp/x64/apply-seccomp')))
    return 'sandbox-runtime is not installed';
  const r = spawnSync('/usr/bin/bwrap', ['--unshare-all', '--ro-bind', '/', '/', '/bin/true'], { encoding: 'utf8' });
  return r.status === 0 ? false : `bubblewrap cannot create namespaces here: ${(r.stderr ?? '').trim()}`;
}
const NO_SANDBOX = cannotSandbox();
const realSpawn = (bin: string, args: string[], env: NodeJS.ProcessEnv) => {
  const r = spawnSync(bin, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return { status: r.status, stderr: r.stderr ?? '' };
};

describe('latch doctor led by Claude Code: after the shared checks', () => {
  test('the order mirrors Codex: its checks, store, watchers, reads while held, registration', async () => {
    const b = box();
    await setup(b);
    const names = (await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed })).map((c) => c.name);
    assert.deepEqual(names, [
      'claude hooks installed (user)',
      'claude hooks enabled',
      'claude hook command',
      'claude version',
      'store',
      'watchers',
      'resident hooks',
      'containment',
      READS,
      'registration',
    ]);
    // Claude Code alone has Latch: it leads without --agent, with the same checks.
    const led = (await runChecks(b.io, { claudeManagedSettings: b.managed })).map((c) => c.name);
    assert.deepEqual(led, names);
  });
});

describe('latch doctor: Claude Code reads while held', () => {
  test('LATCH_SANDBOX=off: the classifier alone guards held reads; a warning, fixed by unsetting it', async () => {
    const b = box({ LATCH_SANDBOX: 'off' });
    await setup(b);
    const reads = byName(await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed }), READS);
    assert.equal(reads.status, 'warn');
    assert.match(reads.detail, /LATCH_SANDBOX=off: reads while held are guarded by the classifier only/);
    assert.match(reads.fix ?? '', /leave LATCH_SANDBOX unset/);
  });

  test('no bubblewrap and no Codex to lend its sandbox: a warning whose fix installs bubblewrap', {
    skip: process.platform !== 'linux' || process.arch !== 'x64' ? 'Linux x64 only' : CODEX_ON_PATH,
  }, async () => {
    const b = box();
    const part = claudeDoctor(b.io, {
      timeoutMs: 5000,
      managedSettings: b.managed,
      sandboxPaths: { bwrap: join(b.dir, 'no-such', 'bwrap') },
    });
    const reads = byName(await part.afterShared(), READS);
    assert.equal(reads.status, 'warn', reads.detail);
    assert.match(reads.detail, /bubblewrap \(bwrap\) is not installed; no Codex binary to lend its sandbox/);
    assert.match(reads.fix ?? '', /install bubblewrap/);
  });

  test('another sandbox-runtime than the pinned one: a warning whose fix reinstalls Latch', {
    skip: process.platform !== 'linux' || process.arch !== 'x64' ? 'Linux x64 only' : false,
  }, async () => {
    const b = box();
    const runtime = join(b.dir, 'runtime');
    mkdirSync(runtime);
    writeFileSync(join(runtime, 'package.json'), JSON.stringify({ version: '0.0.1' }));
    const bwrap = join(b.dir, 'bwrap');
    writeFileSync(bwrap, '#!/bin/sh\nexit 1\n');
    chmodSync(bwrap, 0o755);
    const part = claudeDoctor(b.io, { timeoutMs: 5000, managedSettings: b.managed, sandboxPaths: { bwrap, runtime } });
    const reads = byName(await part.afterShared(), READS);
    assert.equal(reads.status, 'warn', reads.detail);
    assert.match(reads.detail, /is 0\.0\.1 in .*, not the pinned/);
    assert.match(reads.fix ?? '', /reinstall Latch/);
  });

  test('bubblewrap + the pinned helper: not probed yet is ok; probed by a hook, the sandbox is named', {
    skip: NO_SANDBOX,
  }, async () => {
    const b = box();
    const reads = async () =>
      byName(await claudeDoctor(b.io, { timeoutMs: 5000, managedSettings: b.managed }).afterShared(), READS);
    let r = await reads();
    assert.equal(r.status, 'ok', r.detail);
    assert.match(r.detail, /installed but not probed yet/);
    // What a hook does at the first held read: the probe, remembered under $LATCH_HOME/sandbox.
    mkdirSync(b.latchHome, { mode: 0o700 });
    assert.equal(claudeReadSandbox(b.latchHome, b.io.env, realSpawn).ok, true);
    assert.ok(existsSync(join(b.latchHome, 'sandbox', 'claude-probe.json')));
    r = await reads();
    assert.equal(r.status, 'ok', r.detail);
    assert.match(r.detail, /reads while held run inside bubblewrap \(\/usr\/bin\/bwrap\) \+ seccomp/);
    assert.equal(r.fix, undefined);
  });

  test('a probe that failed (no user namespaces): a warning naming the probe record to remove', {
    skip: NO_SANDBOX || CODEX_ON_PATH,
  }, async () => {
    const b = box();
    mkdirSync(b.latchHome, { mode: 0o700 });
    const failing = () => ({ status: 1, stderr: 'bwrap: No permissions to create new namespace' });
    assert.equal(claudeReadSandbox(b.latchHome, b.io.env, failing).ok, false);
    const r = byName(await claudeDoctor(b.io, { timeoutMs: 5000, managedSettings: b.managed }).afterShared(), READS);
    assert.equal(r.status, 'warn', r.detail);
    assert.match(r.detail, /does not run here \(exit 1: bwrap: No permissions/);
    assert.match(r.fix ?? '', /user namespaces/);
    assert.ok((r.fix ?? '').includes(join(b.latchHome, 'sandbox', 'claude-probe.json')), r.fix);
  });
});

describe('latch doctor: the registration Claude Code setup records', () => {
  test('ok after `latch setup claude`; an edit of the settings file fails it, naming the file and the setup to re-run', async () => {
    const b = box();
    await setup(b);
    let reg = byName(await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed }), 'registration');
    assert.equal(reg.status, 'ok', reg.detail);
    assert.match(reg.detail, /^ok: unchanged since/);
    assert.equal(reg.fix, undefined);

    // Another hook added next to Latch's: the settings file Latch recorded changed.
    const s = JSON.parse(readFileSync(b.settings, 'utf8'));
    s.hooks.PreToolUse.unshift({ hooks: [{ type: 'command', command: 'true' }] });
    writeFileSync(b.settings, JSON.stringify(s, null, 2));
    reg = byName(await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed }), 'registration');
    assert.equal(reg.status, 'fail', reg.detail);
    assert.match(reg.detail, /^CHANGED since/);
    assert.ok(reg.detail.includes(b.settings), reg.detail);
    assert.ok(
      reg.findings?.some((f) => f.severity === 'tamper'),
      JSON.stringify(reg.findings),
    );
    assert.match(reg.fix ?? '', /re-run `latch setup claude`/);
    assert.doesNotMatch(reg.fix ?? '', /latch setup codex/);

    // `latch doctor --json`: the registration summary a Claude-led report carries.
    b.io.reset();
    assert.equal(await doctor(b.io, { agent: 'claude', json: true, claudeManagedSettings: b.managed }), 1);
    const report = JSON.parse(b.io.text()) as { ok: boolean; registration: { status: string; findings: unknown[] } };
    assert.equal(report.ok, false);
    assert.equal(report.registration.status, 'changed');
    assert.ok(report.registration.findings.length > 0);

    // Setup again records the file as it is now: ok again.
    await setup(b);
    reg = byName(await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed }), 'registration');
    assert.equal(reg.status, 'ok', reg.detail);
  });

  test('no store yet: a warning whose fix is `latch setup claude`', async () => {
    const b = box();
    const reg = byName(await runChecks(b.io, { agent: 'claude', claudeManagedSettings: b.managed }), 'registration');
    assert.equal(reg.status, 'warn');
    assert.match(reg.detail, /cannot compare the registration fingerprint: no store yet/);
    assert.equal(reg.fix, 'latch setup claude');
  });
});

describe('latch doctor: Codex leads, Claude Code installed too', () => {
  test("Claude Code's reads while held follow its checks; the registration is checked once (the leader's)", async () => {
    const b = box({ LATCH_SANDBOX: 'off' });
    await setup(b);
    mkdirSync(join(b.dir, 'codex'));
    writeFileSync(
      join(b.dir, 'codex', 'hooks.json'),
      JSON.stringify(mergeLatchHooks({}, process.execPath, ENTRY).file, null, 2),
    );
    const names = (await runChecks(b.io, { timeoutMs: 5000, claudeManagedSettings: b.managed })).map((c) => c.name);
    assert.equal(names[0], 'hooks installed (user)');
    assert.equal(names.filter((n) => n === 'registration').length, 1, names.join(', '));
    assert.equal(names.filter((n) => n === 'reads while held').length, 1, names.join(', '));
    assert.deepEqual(names.slice(names.indexOf('claude hooks installed (user)')), [
      'claude hooks installed (user)',
      'claude hooks enabled',
      'claude hook command',
      'claude version',
      READS,
    ]);
    assert.ok(names.indexOf('registration') < names.indexOf('claude hooks installed (user)'), names.join(', '));
  });
});
