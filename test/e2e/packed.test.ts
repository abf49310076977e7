// Installed, not cloned: `npm pack` the package, `npm install -g --prefix <scratch>` the tarball, and run
// `latch` from there (no checkout, no devDependencies: no @openai/codex). Every command works or says
// exactly what it needs, and nothing it prints names the checkout that built the package.
//
// better-sqlite3 builds its native addon in its install script (a prebuilt download, else a compile:
// the download is unreachable here and the compile takes minutes on two cores). The install runs with
// --ignore-scripts, which is also what a user gets when npm does not run dependency scripts: first
// Latch must say what it needs, then the addon built for this same better-sqlite3 and Node (the
// checkout's) is put in place, or compiled by `npm rebuild` when the versions differ.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeCacheNames } from '../../src/base/code-cache.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
};

/** npm's environment, without what `npm test` passes down (a prefix, a global flag) that would redirect the install. */
function npmEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^npm_/i.test(k) && !/^npm_config_(cache|registry|userconfig)$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeout?: number; input?: string },
): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, {
    cwd: opts.cwd,
    env: opts.env,
    encoding: 'utf8',
    timeout: opts.timeout ?? 60_000,
    input: opts.input ?? '',
  });
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** Nothing a user sees may name the checkout, and no unexpected error may show as a stack trace. */
function clean(what: string, r: SpawnSyncReturns<string>): string {
  const all = `${r.stdout}\n${r.stderr}`;
  assert.ok(!all.includes(ROOT), `${what} names the build checkout ${ROOT}:\n${all}`);
  assert.doesNotMatch(all, /^\s+at .+:\d+:\d+\)?$/m, `${what} printed a stack trace:\n${all}`);
  assert.doesNotMatch(all, /unexpected error|This is a bug in Latch/, `${what}: an error no command handled:\n${all}`);
  return all;
}

test('the packed package, installed into a scratch prefix: --help, setup, status, doctor work; demo and --trust say what they need', {
  timeout: 900_000,
}, async (t) => {
  assert.ok(existsSync(join(ROOT, 'dist', 'latch.cjs')), 'run `npm run build` first');
  const base = mkdtempSync(join(tmpdir(), 'latch-packed-'));
  t.after(() => rmSync(base, { recursive: true, force: true, maxRetries: 5 }));
  const prefix = join(base, 'prefix');
  const home = join(base, 'home');
  const work = join(base, 'work');
  const codexHome = join(base, 'codex-home');
  const latchHome = join(base, 'latch-state');
  for (const d of [home, work]) mkdirSync(d);
  spawnSync('git', ['init', '-q'], { cwd: work });

  // 1. npm pack: what the tarball holds.
  const packed = run('npm', ['pack', '--json', '--pack-destination', base], { cwd: ROOT, env: npmEnv() });
  assert.equal(packed.status, 0, packed.stderr);
  const info = (JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[])[0]!;
  const files = info.files.map((f) => f.path);
  const tarball = join(base, info.filename);
  for (const f of [
    'package.json',
    PKG.bin.latch!,
    'dist/latch.cjs',
    'dist/main.cjs',
    'dist/cli.cjs',
    'dist/slow.cjs',
    'dist/observer.cjs',
  ])
    assert.ok(files.includes(f), `${f} is packed`);
  for (const f of codeCacheNames())
    assert.ok(
      files.includes(`dist/${f}`),
      `dist/${f} is packed (setup records it; one written later reads as a change)`,
    );
  // Data the code reads at run time ships too (e.g. data/qualified/*.json, data/hook-schemas).
  if (existsSync(join(ROOT, 'data')))
    for (const p of walk(join(ROOT, 'data')))
      assert.ok(files.includes(relative(ROOT, p)), `${relative(ROOT, p)} is packed`);
  assert.ok(
    !files.some((f) => /^(src|test|scripts|node_modules)\//.test(f)),
    `no sources or tests: ${files.join(', ')}`,
  );

  // Text files in the tarball (bundles, source maps with their sourcesContent, data) name no build path.
  const unpacked = join(base, 'unpacked');
  mkdirSync(unpacked);
  const tar = run('tar', ['-xzf', tarball, '-C', unpacked], { cwd: base, env: process.env });
  assert.equal(tar.status, 0, tar.stderr);
  // (Checked last, so that one leak does not hide what the commands do.)
  const leaks = walk(unpacked)
    .filter((x) => !x.endsWith('.v8cache') && readFileSync(x, 'utf8').includes(ROOT))
    .map((x) => relative(unpacked, x));
  for (const m of walk(unpacked).filter((x) => x.endsWith('.map'))) {
    const map = JSON.parse(readFileSync(m, 'utf8')) as { sources: string[] };
    assert.ok(
      map.sources.every((s) => !s.startsWith('/')),
      `${relative(unpacked, m)}: absolute source paths`,
    );
  }

  // 2. npm install -g --prefix: from the tarball; its dependencies from the registry (or npm's cache).
  const t0 = Date.now();
  const inst = run(
    'npm',
    ['install', '-g', '--prefix', prefix, tarball, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'],
    { cwd: base, env: npmEnv(), timeout: 300_000 },
  );
  assert.equal(inst.status, 0, `${inst.stdout}\n${inst.stderr}`);
  t.diagnostic(`npm install -g of the tarball: ${Date.now() - t0} ms`);
  const pkgDir = join(prefix, 'lib', 'node_modules', PKG.name);
  const latchBin = join(prefix, 'bin', 'latch');
  assert.ok(existsSync(latchBin), 'the latch bin is linked into <prefix>/bin');
  assert.ok(!existsSync(join(pkgDir, 'node_modules', '@openai', 'codex')), 'devDependencies are not installed');

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !/^(CODEX_|LATCH_|XDG_STATE_HOME$|npm_)/i.test(k)) e[k] = v;
    // No `codex` anywhere: only the prefix's bin, node, and the system.
    return {
      ...e,
      PATH: [join(prefix, 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
      HOME: home,
      LATCH_HOME: latchHome,
      CODEX_HOME: codexHome,
      ...extra,
    };
  };
  const latch = (args: string[], extra: Record<string, string> = {}) =>
    run(latchBin, args, { cwd: work, env: env(extra) });

  // 3. Without the SQLite addon (install scripts not run): --help works, the rest says what it needs.
  const help = latch(['--help']);
  assert.equal(help.status, 0, help.stderr);
  clean('latch --help', help);
  assert.match(help.stdout, /latch setup codex \[--codex-home DIR\] \[--project DIR\] \[--trust\] \[--dry-run\]/);
  assert.equal(latch(['--version']).stdout.trim(), PKG.version);
  const addon = join(pkgDir, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(addon)) {
    const su = latch(['setup', 'codex', '--codex-home', codexHome]);
    assert.equal(su.status, 1);
    const text = clean('latch setup without the addon', su);
    assert.match(text, /better-sqlite3, whose native addon was not built/);
    assert.ok(text.includes(`\`npm rebuild better-sqlite3\` in ${pkgDir}`), text);
    assert.equal(
      existsSync(join(codexHome, 'hooks.json')),
      false,
      'no handler is installed without a usable store (it would deny every call)',
    );
    const st = latch(['status']);
    assert.equal(st.status, 1);
    assert.match(clean('latch status without the addon', st), /better-sqlite3, whose native addon was not built/);

    const mine = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')).version;
    const theirs = JSON.parse(
      readFileSync(join(pkgDir, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8'),
    ).version;
    if (mine === theirs) {
      mkdirSync(dirname(addon), { recursive: true });
      copyFileSync(join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'), addon);
    } else {
      t.diagnostic(`better-sqlite3 ${theirs} (the checkout has ${mine}): compiling its addon with npm rebuild`);
      const rb = run('npm', ['rebuild', 'better-sqlite3'], { cwd: pkgDir, env: npmEnv(), timeout: 800_000 });
      assert.equal(rb.status, 0, rb.stderr);
    }
  }

  // 4. setup, status, doctor from the installed package.
  const setup = latch(['setup', 'codex', '--codex-home', codexHome]);
  assert.equal(setup.status, 0, setup.stderr);
  clean('latch setup codex', setup);
  const hooks = readFileSync(join(codexHome, 'hooks.json'), 'utf8');
  assert.ok(hooks.includes(join(pkgDir, 'dist', 'latch.cjs')), 'the handlers run the installed entry');
  assert.ok(setup.stdout.includes(`Run \`latch setup codex --codex-home ${codexHome} --trust\``), setup.stdout);

  const status = latch(['status']);
  assert.equal(status.status, 0, status.stderr);
  assert.match(clean('latch status', status), /Registration: ok: unchanged since `latch setup codex`/);

  const doctor = latch(['doctor']);
  const dtext = clean('latch doctor', doctor);
  assert.equal(doctor.status, 0, dtext);
  assert.match(dtext, /\[ok\] {3}hooks installed \(user\)/);
  assert.ok(dtext.includes(`entry ${join(pkgDir, 'dist', 'latch.cjs')}`), dtext);
  assert.match(dtext, /tracked tool denied with no store \(fails closed\)/);
  assert.match(dtext, /\[ok\] {3}store:/);
  assert.match(dtext, /\[ok\] {3}registration: ok/);
  assert.match(
    dtext,
    /\[warn\] hooks trusted: 9 of 9 Latch handlers not trusted \(codex was not found on PATH or in node_modules\)/,
  );
  assert.match(dtext, /fix: install Codex \(npm i -g @openai\/codex\), then run `latch setup codex --trust`/);

  // 5. What needs Codex says so, and writes nothing.
  const cfgBefore = existsSync(join(codexHome, 'config.toml'))
    ? readFileSync(join(codexHome, 'config.toml'), 'utf8')
    : null;
  const trust = latch(['setup', 'codex', '--trust']);
  assert.equal(trust.status, 1);
  assert.match(
    clean('latch setup codex --trust without codex', trust),
    /no `codex` was found on the PATH or in node_modules: install Codex \(`npm i -g @openai\/codex`\)/,
  );
  assert.equal(
    existsSync(join(codexHome, 'config.toml')) ? readFileSync(join(codexHome, 'config.toml'), 'utf8') : null,
    cfgBefore,
  );
  const demo = latch(['demo']);
  assert.equal(demo.status, 1);
  assert.match(
    clean('latch demo without codex', demo),
    /latch demo: the demo drives the real Codex CLI, which is not installed here .*Install it: `npm i -g @openai\/codex@0\.171\.0`/,
  );

  // A failing system call is one line (no stack), and an internal error would be too.
  const rep = latch(['report', '--html', join(base, 'missing-dir', 'r.html')]);
  assert.equal(rep.status, 1);
  assert.match(
    clean('latch report into a missing directory', rep),
    /^latch report: ENOENT: no such file or directory/m,
  );

  // 6. With a Codex on the PATH (a global install's `codex` launcher), --trust records its hashes.
  const codexBin = join(base, 'codex-bin');
  mkdirSync(codexBin);
  const launcher = JSON.parse(readFileSync(join(ROOT, 'node_modules', '@openai', 'codex', 'package.json'), 'utf8')).bin
    .codex as string;
  symlinkSync(join(ROOT, 'node_modules', '@openai', 'codex', launcher), join(codexBin, 'codex'));
  const withCodex = { PATH: [join(prefix, 'bin'), codexBin, dirname(process.execPath), '/usr/bin', '/bin'].join(':') };
  writeFileSync(join(codexHome, 'config.toml'), 'model = "gpt-5.5"\n');
  const trusted = latch(['setup', 'codex', '--trust'], withCodex);
  assert.equal(trusted.status, 0, trusted.stderr);
  assert.match(clean('latch setup codex --trust', trusted), /Codex trusts all 9 Latch handlers/);
  assert.ok(readFileSync(join(codexHome, 'config.toml'), 'utf8').startsWith('model = "gpt-5.5"\n\n[hooks.state.'));
  const doctor2 = latch(['doctor'], withCodex);
  assert.equal(doctor2.status, 0, doctor2.stdout);
  assert.match(clean('latch doctor (trusted)', doctor2), /\[ok\] {3}hooks trusted: all 9 Latch handlers are trusted/);
  assert.match(doctor2.stdout, /\[ok\] {3}registration: ok/);

  assert.deepEqual(leaks, [], `packed files that contain the build checkout's path ${ROOT}`);
});
