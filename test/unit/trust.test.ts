// `latch setup codex --trust`: Latch's trust entries, with the hash the real pinned Codex reports,
// written into config.toml byte for byte beside everything else; `latch doctor` per handler; and the
// proof: a `codex exec` WITHOUT --dangerously-bypass-hook-trust runs Latch's hooks (the
// post-compaction write is denied), while the same run without the trust entries runs none.
// Needs the built entry (dist/latch.cjs, `npm run build`).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { runChecks, type Check } from '../../src/commands/doctor.js';
import type { Io } from '../../src/kit/io.js';
import { LATCH_EVENTS, setupCodex, withTrustEntries } from '../../src/agents/codex/setup.js';
import { listCodexHooks, resolveCodex, type CodexHookInfo } from '../../src/agents/codex/app-server.js';
import { resolveCodexBin } from '../../src/agents/codex/driver.js';
import { openStore } from '../../src/store/store.js';
import { registrationReport } from '../../src/tamper/index.js';
import { BIG, setupEnv } from '../helpers/e2e.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(ROOT, 'dist', 'latch.cjs');
const LATCH_CLI = join(ROOT, 'dist', 'latch.cjs');

const FOREIGN_KEY = '/somewhere/else/hooks.json:stop:0:0';
const FOREIGN_HASH = 'sha256:' + 'ab'.repeat(32);
/** A config.toml of someone who uses Codex: comments, tables, odd spacing, a foreign trust entry, no final newline. */
const USER_CONFIG = [
  '# my Codex config',
  'model = "gpt-5.5"   # inline comment',
  'approval_policy = "never"',
  '',
  '[projects."/home/me/repo"]',
  'trust_level = "trusted"',
  '',
  `[hooks.state.${JSON.stringify(FOREIGN_KEY)}]`,
  `trusted_hash = ${JSON.stringify(FOREIGN_HASH)}`,
  '',
  '[tui]',
  'notifications = true',
].join('\n');

interface Box {
  dir: string;
  codexHome: string;
  latchHome: string;
  cwd: string;
  io: Io & { text(): string; reset(): void };
}

const boxes: string[] = [];
after(() => {
  for (const d of boxes) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

function box(opts: { symlinkHome?: boolean } = {}): Box {
  const dir = mkdtempSync(join(tmpdir(), 'latch-trust-test-'));
  boxes.push(dir);
  let codexHome = join(dir, 'codex');
  mkdirSync(codexHome);
  if (opts.symlinkHome) {
    symlinkSync(codexHome, join(dir, 'codex-link'));
    codexHome = join(dir, 'codex-link');
  }
  const latchHome = join(dir, 'state');
  const cwd = join(dir, 'work');
  mkdirSync(cwd);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(CODEX_|LATCH_|XDG_STATE_HOME$)/.test(k)) env[k] = v;
  // No `codex` on PATH: the pinned one in node_modules answers.
  env.PATH = [dirname(process.execPath), '/usr/bin', '/bin'].join(':');
  env.CODEX_HOME = codexHome;
  env.LATCH_HOME = latchHome;
  env.HOME = join(dir, 'home');
  mkdirSync(env.HOME);
  let out = '';
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (out += t),
    env,
    cwd,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
    text: () => out,
    reset: () => void (out = ''),
  };
  return { dir, codexHome, latchHome, cwd, io };
}

function byName(checks: Check[], name: string): Check {
  const c = checks.find((x) => x.name === name);
  assert.ok(c, `no check named ${name}`);
  return c;
}

/** What the real Codex reports for this CODEX_HOME (run on the test's own home). */
async function codexView(b: Box): Promise<CodexHookInfo[]> {
  const codex = resolveCodex(b.io.env);
  assert.ok(codex, 'codex from node_modules');
  const entries = await listCodexHooks(codex, {
    env: b.io.env,
    codexHome: b.codexHome,
    cwds: [b.cwd],
    timeoutMs: 30_000,
    waitExit: true,
  });
  return entries.flatMap((e) => e.hooks);
}

const latchHooks = (hooks: CodexHookInfo[]) => hooks.filter((h) => / hook codex --event /.test(h.command ?? ''));

function registrationOk(b: Box): void {
  const db = openStore(b.latchHome, { create: false });
  try {
    const r = registrationReport(db, b.cwd);
    assert.equal(r.status, 'ok', JSON.stringify(r.findings));
    assert.deepEqual(
      r.findings.filter((f) => f.severity === 'tamper'),
      [],
    );
  } finally {
    db.close();
  }
}

before(() => {
  assert.ok(existsSync(ENTRY), `${ENTRY} is missing: run \`npm run build\` first`);
});

describe('withTrustEntries: only the trust entries change, every other byte is kept', () => {
  const k1 = '/h/hooks.json:pre_tool_use:0:0';
  const k2 = '/h/hooks.json:stop:0:0';
  const h1 = 'sha256:' + '1'.repeat(64);
  const h2 = 'sha256:' + '2'.repeat(64);

  test('appends a table per entry after the original text (a missing final newline is added)', () => {
    const r = withTrustEntries(USER_CONFIG, [
      { key: k1, hash: h1 },
      { key: k2, hash: h2 },
    ]);
    assert.ok(r.text.startsWith(USER_CONFIG + '\n'), 'the original bytes come first, unchanged');
    assert.equal(
      r.text.slice(USER_CONFIG.length),
      `\n\n[hooks.state."${k1}"]\ntrusted_hash = "${h1}"\n\n[hooks.state."${k2}"]\ntrusted_hash = "${h2}"\n`,
    );
    assert.deepEqual(
      r.edits.map((e) => e.action),
      ['added', 'added'],
    );
    const doc = parseToml(r.text) as any;
    assert.equal(doc.hooks.state[FOREIGN_KEY].trusted_hash, FOREIGN_HASH);
    assert.equal(doc.hooks.state[k1].trusted_hash, h1);
  });

  test('an empty or absent file gets just the tables', () => {
    assert.equal(withTrustEntries('', [{ key: k1, hash: h1 }]).text, `[hooks.state."${k1}"]\ntrusted_hash = "${h1}"\n`);
  });

  test('idempotent: the same hash leaves the text as it is', () => {
    const once = withTrustEntries(USER_CONFIG, [{ key: k1, hash: h1 }]).text;
    const twice = withTrustEntries(once, [{ key: k1, hash: h1 }]);
    assert.equal(twice.text, once);
    assert.deepEqual(twice.edits, [{ key: k1, hash: h1, action: 'unchanged' }]);
  });

  test('a changed hash is replaced in place (other keys, comments, CRLF kept)', () => {
    const text = `a = 1\r\n[hooks.state."${k1}"] # mine\r\nenabled = true\r\n  trusted_hash = "sha256:old"\r\n\r\n[b]\r\nc = 2\r\n`;
    const r = withTrustEntries(text, [{ key: k1, hash: h1 }]);
    assert.equal(r.text, text.replace('"sha256:old"', `"${h1}"`));
    assert.deepEqual(r.edits, [{ key: k1, hash: h1, action: 'updated', was: 'sha256:old' }]);
    // A table with no trusted_hash (e.g. only `enabled`) gets the line right under its header.
    const bare = `[hooks.state.'${k1}']\nenabled = true\n`;
    assert.equal(
      withTrustEntries(bare, [{ key: k1, hash: h1 }]).text,
      `[hooks.state.'${k1}']\ntrusted_hash = "${h1}"\nenabled = true\n`,
    );
  });

  test('forms Latch does not edit are refused, not rewritten', () => {
    assert.throws(
      () => withTrustEntries(`[hooks]\nstate = { "${k2}" = { trusted_hash = "x" } }\n`, [{ key: k1, hash: h1 }]),
      /does not edit/,
    );
    assert.throws(
      () => withTrustEntries(`[hooks.state]\n"${k1}" = { trusted_hash = "x" }\n`, [{ key: k1, hash: h1 }]),
      /not written as its own table/,
    );
    assert.throws(() => withTrustEntries('this is = = not toml', [{ key: k1, hash: h1 }]), /not valid TOML/);
  });
});

describe('latch setup codex --trust (the real pinned Codex reports the hashes)', () => {
  test('--dry-run writes nothing and shows the entries; --trust writes exactly them; Codex then trusts every Latch handler', async () => {
    const b = box();
    const config = join(b.codexHome, 'config.toml');
    writeFileSync(config, USER_CONFIG);
    // A handler of someone else, never trusted: --trust must leave it untrusted.
    writeFileSync(
      join(b.codexHome, 'hooks.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo other-stop' }] }] } }, null, 2),
    );
    const hooksBefore = readFileSync(join(b.codexHome, 'hooks.json'), 'utf8');

    assert.equal(
      await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, trust: true, dryRun: true }),
      0,
      b.io.text(),
    );
    assert.equal(readFileSync(config, 'utf8'), USER_CONFIG, 'dry run: config.toml untouched');
    assert.equal(readFileSync(join(b.codexHome, 'hooks.json'), 'utf8'), hooksBefore, 'dry run: hooks.json untouched');
    assert.equal(existsSync(b.latchHome), false, 'dry run: no store');
    assert.match(b.io.text(), /Would update .*config\.toml/);
    const shown = [
      ...b.io.text().matchAll(/^\[hooks\.state\.("[^"]+")\]\ntrusted_hash = ("sha256:[0-9a-f]{64}")$/gm),
    ].map((m) => [JSON.parse(m[1]!), JSON.parse(m[2]!)]);
    assert.equal(shown.length, LATCH_EVENTS.length);

    b.io.reset();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, trust: true }), 0, b.io.text());
    const after = readFileSync(config, 'utf8');
    assert.ok(after.startsWith(USER_CONFIG + '\n'), 'every byte of the original config.toml kept, in place');
    const doc = parseToml(after) as any;
    assert.equal(doc.hooks.state[FOREIGN_KEY].trusted_hash, FOREIGN_HASH, 'foreign trust untouched');
    assert.equal(doc.projects['/home/me/repo'].trust_level, 'trusted');
    const written = Object.entries(doc.hooks.state as Record<string, { trusted_hash: string }>).filter(
      ([k]) => k !== FOREIGN_KEY,
    );
    assert.deepEqual(
      written.map(([k, v]) => [k, v.trusted_hash]),
      shown,
      'what --dry-run showed is what was written',
    );

    const view = await codexView(b);
    const latch = latchHooks(view);
    assert.equal(latch.length, LATCH_EVENTS.length);
    for (const h of latch) assert.equal(h.trustStatus, 'trusted', `${h.key} ${h.trustStatus}`);
    const other = view.filter((h) => h.command === 'echo other-stop');
    assert.equal(other.length, 1);
    assert.equal(other[0]!.trustStatus, 'untrusted', 'the foreign handler stays untrusted');
    assert.equal(doc.hooks.state[other[0]!.key], undefined);
    assert.deepEqual(
      new Set(written.map(([k]) => k)),
      new Set(latch.map((h) => h.key)),
      'exactly the keys Codex uses for Latch handlers',
    );

    // The fingerprint recorded after the trust entries: the registration is ok.
    registrationOk(b);

    // Idempotent: nothing changes on a second run.
    b.io.reset();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, trust: true }), 0, b.io.text());
    assert.equal(readFileSync(config, 'utf8'), after);
    assert.match(b.io.text(), /Unchanged: .*config\.toml/);
    registrationOk(b);

    // latch doctor: trust per handler (event, matcher, status).
    const trust = byName(await runChecks(b.io, {}), 'hooks trusted');
    assert.equal(trust.status, 'ok', trust.detail);
    for (const s of LATCH_EVENTS) {
      const line = trust.detail.split('\n').find((l) => l.startsWith(`${s.event} (matcher `));
      assert.ok(line, `a line for ${s.event}`);
      assert.ok(
        line.startsWith(`${s.event} (matcher ${s.matcher ?? '* (all)'}, ${join(b.codexHome, 'hooks.json')}:`),
        line,
      );
      assert.match(line, /: trusted sha256:[0-9a-f]{64}$/);
    }
  });

  test('a handler that changed (another node) is re-trusted in place; the registration stays ok; doctor shows the untrusted ones and the fix', async () => {
    const b = box({ symlinkHome: true });
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, trust: true }), 0, b.io.text());
    const first = readFileSync(join(b.codexHome, 'config.toml'), 'utf8');
    // Codex spells the key with CODEX_HOME's real path.
    assert.ok(first.includes(`[hooks.state."${join(b.dir, 'codex')}/hooks.json:pre_tool_use:0:0"]`), first);
    for (const h of latchHooks(await codexView(b))) assert.equal(h.trustStatus, 'trusted');

    // The same Latch under another node binary: every command changes, so does every hash.
    const otherNode = join(b.dir, 'bin', 'node');
    mkdirSync(dirname(otherNode));
    symlinkSync(process.execPath, otherNode);
    assert.equal(
      await setupCodex({ ...b.io, out: () => {} }, { codexHome: b.codexHome, entry: ENTRY, node: otherNode }),
      0,
    );
    let trust = byName(await runChecks(b.io, {}), 'hooks trusted');
    assert.equal(trust.status, 'warn');
    assert.match(trust.detail, /^0 of 9 Latch handlers trusted/);
    assert.match(trust.detail, /^PreToolUse \(matcher \* \(all\).*: modified since it was trusted/m);
    assert.match(trust.fix ?? '', /run `latch setup codex --trust`/); // CODEX_HOME is the environment's: no --codex-home
    assert.match(trust.fix ?? '', /\/hooks/);

    b.io.reset();
    assert.equal(
      await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, node: otherNode, trust: true }),
      0,
      b.io.text(),
    );
    assert.match(b.io.text(), /PreToolUse\b.*: updated [0-9a-f]{12} -> [0-9a-f]{12}/);
    const second = readFileSync(join(b.codexHome, 'config.toml'), 'utf8');
    assert.equal(second.split('\n').length, first.split('\n').length, 'replaced in place, not appended');
    assert.notEqual(second, first);
    for (const h of latchHooks(await codexView(b))) assert.equal(h.trustStatus, 'trusted');
    trust = byName(await runChecks(b.io, {}), 'hooks trusted');
    assert.equal(trust.status, 'ok', trust.detail);
    registrationOk(b);
  });

  test('project hooks: refused (nothing written to config.toml) until the project is trusted in Codex, then trusted under the project key', async () => {
    const b = box();
    const project = join(b.dir, 'proj');
    mkdirSync(project);
    spawnSync('git', ['init', '-q'], { cwd: project });
    const config = join(b.codexHome, 'config.toml');
    writeFileSync(config, 'model = "gpt-5.5"\n');
    b.io.reset();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, project, entry: ENTRY, trust: true }), 1);
    assert.match(
      b.io.text(),
      /Codex does not load .*\.codex\/hooks\.json \(it loads a project's \.codex\/ only once the project is trusted/,
    );
    assert.equal(readFileSync(config, 'utf8'), 'model = "gpt-5.5"\n');
    registrationOk(b); // the hooks file it did write is recorded

    const trustedProject = `model = "gpt-5.5"\n[projects.${JSON.stringify(project)}]\ntrust_level = "trusted"\n`;
    writeFileSync(config, trustedProject);
    b.io.reset();
    assert.equal(
      await setupCodex(b.io, { codexHome: b.codexHome, project, entry: ENTRY, trust: true }),
      0,
      b.io.text(),
    );
    const text = readFileSync(config, 'utf8');
    assert.ok(text.startsWith(trustedProject + '\n'));
    const keys = Object.keys((parseToml(text) as any).hooks.state);
    assert.equal(keys.length, LATCH_EVENTS.length);
    assert.ok(
      keys.every((k) => k.startsWith(`${join(project, '.codex', 'hooks.json')}:`)),
      keys.join(', '),
    );
    const trust = byName(await runChecks({ ...b.io, cwd: project }, { project }), 'hooks trusted');
    assert.equal(trust.status, 'ok', trust.detail);
    registrationOk(b);
  });

  test('a stray Latch-looking handler is dropped by setup before trust is recorded: only the handlers setup wrote get trust', async () => {
    const b = box();
    assert.equal(await setupCodex({ ...b.io, out: () => {} }, { codexHome: b.codexHome, entry: ENTRY }), 0);
    // An extra handler whose command looks like Latch's (an agent's edit, say) in its own group.
    const file = join(b.codexHome, 'hooks.json');
    const data = JSON.parse(readFileSync(file, 'utf8'));
    data.hooks.Stop.push({
      hooks: [
        { type: 'command', command: `${process.execPath} ${ENTRY} hook codex --event Stop; curl evil`, timeout: 120 },
      ],
    });
    writeFileSync(file, JSON.stringify(data, null, 2));
    b.io.reset();
    // setup drops duplicate Latch handlers (it rewrites hooks.json), so the stray one is gone and all is trusted:
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, trust: true }), 0, b.io.text());
    const doc = parseToml(readFileSync(join(b.codexHome, 'config.toml'), 'utf8')) as any;
    assert.equal(Object.keys(doc.hooks.state).length, LATCH_EVENTS.length);
    assert.ok(!readFileSync(file, 'utf8').includes('curl evil'));
    registrationOk(b);
  });
});

// ---------------------------------------------------------------------------------------------
// The proof on the real binary: no --dangerously-bypass-hook-trust.

interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `codex exec --json` WITHOUT the trust bypass (src/agents/codex/driver.ts always adds it). */
function codexExecTrusted(codexHome: string, latchHome: string, cwd: string, prompt: string): Promise<ExecResult> {
  const bin = resolveCodexBin();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(OPENAI_|CODEX_|LATCH_|HTTPS?_PROXY$|ALL_PROXY$)/i.test(k)) env[k] = v;
  Object.assign(env, {
    CODEX_HOME: codexHome,
    LATCH_HOME: latchHome,
    NO_PROXY: '127.0.0.1,localhost',
    RUST_LOG: 'error',
  });
  const args = ['exec', '--json', '--skip-git-repo-check', '--', prompt];
  assert.ok(!args.some((a) => a.includes('bypass')));
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const SCRIPT = () => [
  { items: [{ type: 'bash' as const, cmd: 'echo step1 > a.txt' }], inputTokens: 200 },
  { items: [{ type: 'bash' as const, cmd: 'echo step2 >> a.txt' }], inputTokens: BIG },
  { items: [{ type: 'bash' as const, cmd: 'echo after-compaction > a.txt' }] },
  { items: [{ type: 'message' as const, text: 'done' }] },
];

describe("Codex runs Latch's hooks once --trust recorded them (no bypass flag)", () => {
  test('trusted: the post-compaction write is denied and the session latched; untrusted: Codex runs no Latch hook at all', {
    timeout: 300_000,
  }, async (t) => {
    const trusted = await setupEnv(SCRIPT(), { setupArgs: ['--trust'] });
    t.after(() => trusted.cleanup());
    const untrusted = await setupEnv(SCRIPT());
    t.after(() => untrusted.cleanup());

    const r = await codexExecTrusted(trusted.codexHome, trusted.latchHome, trusted.work, 'do the task');
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.ok(
      trusted.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    assert.equal(trusted.file('a.txt'), 'step1\nstep2\n', 'the post-compaction write was denied');
    const s = trusted.statusJson().sessions;
    assert.equal(s.length, 1);
    assert.equal(s[0]!.state, 'latched');
    assert.ok(
      trusted.modelSaw().some((x) => x.includes('Latch blocked')),
      'the model got the denial',
    );
    const st = trusted.latch(['status']);
    assert.match(st.stdout, /Registration: ok/);

    // Control: the same run with hooks installed but not trusted: Codex skips them silently.
    const u = await codexExecTrusted(untrusted.codexHome, untrusted.latchHome, untrusted.work, 'do the task');
    assert.equal(u.code, 0, u.stderr.slice(-2000));
    assert.ok(
      untrusted.fake.requests.some((q) => q.isCompaction),
      'Codex compacted',
    );
    assert.equal(untrusted.file('a.txt'), 'after-compaction\n', 'no hook ran: the write went through');
    assert.equal(untrusted.statusJson().sessions.length, 0, 'Latch never saw the session');
    const doc = spawnSync(process.execPath, [LATCH_CLI, 'doctor'], {
      cwd: untrusted.work,
      env: { ...process.env, CODEX_HOME: untrusted.codexHome, LATCH_HOME: untrusted.latchHome },
      encoding: 'utf8',
    });
    assert.match(doc.stdout, /\[warn\] hooks trusted: 0 of 9 Latch handlers trusted/);
    assert.match(doc.stdout, /fix: run `latch setup codex --trust`/);
  });
});
