// Bundles Latch as CommonJS for a fast start:
//   dist/latch.cjs  the process entry (src/loader.ts): runs main.cjs from a V8 code cache
//   dist/main.cjs   the hook path and the CLI switch (src/main.ts)
//   dist/slow.cjs   what only a trip or a session's first sight needs (checkpoints, git, TOML)
//   dist/observer.cjs  what a Close or a turn's end needs (workspace observation, watcher client)
//   dist/cli.cjs    the commands, loaded only for `latch <command>`
// then writes the code caches (dist/*.cjs.v8cache) by running the hook. better-sqlite3's JS is bundled; its
// native addon is loaded by path from node_modules (src/core/store.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  external: ['./cli.cjs', './main.cjs'],
  logLevel: 'warning',
  legalComments: 'none',
  // ESM sources use import.meta.url; in the CommonJS bundle it is the bundle's own file URL.
  define: { __LATCH_VERSION__: JSON.stringify(version), 'import.meta.url': '__latch_import_meta_url' },
  banner: { js: "const __latch_import_meta_url = require('url').pathToFileURL(__filename).href;" },
};

// The hook bundle loads the slow path from its own file on first use, through require() (the code
// cache runs main.cjs in a vm.Script, where a dynamic import() would need a loader callback).
const lazySlow = {
  name: 'lazy-slow',
  setup(b) {
    b.onResolve({ filter: /\/slow\.js$/ }, () => ({ path: './slow.cjs', external: true }));
    b.onResolve({ filter: /\/observer\.js$/ }, () => ({ path: './observer.cjs', external: true }));
  },
};

rmSync('dist', { recursive: true, force: true });
await Promise.all([
  build({ ...common, entryPoints: ['src/loader.ts'], outfile: 'dist/latch.cjs', sourcemap: false, banner: {} }),
  build({ ...common, entryPoints: ['src/main.ts'], outfile: 'dist/main.cjs', plugins: [lazySlow], supported: { 'dynamic-import': false } }),
  build({ ...common, entryPoints: ['src/core/slow.ts'], outfile: 'dist/slow.cjs' }),
  build({ ...common, entryPoints: ['src/core/observer.ts'], outfile: 'dist/observer.cjs' }),
  build({ ...common, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.cjs' }),
]);

// Warm the code cache with a representative PreToolUse (a session's first call and a later one).
rmSync('dist/main.cjs.v8cache', { force: true });
rmSync('dist/slow.cjs.v8cache', { force: true });
rmSync('dist/observer.cjs.v8cache', { force: true });
const tmp = mkdtempSync(join(tmpdir(), 'latch-build-'));
try {
  const transcript = join(tmp, 'rollout.jsonl');
  writeFileSync(transcript, JSON.stringify({ type: 'session_meta', payload: { id: 'warm', cli_version: '0.0.0' } }) + '\n');
  const env = { ...process.env, LATCH_HOME: join(tmp, 'state') };
  spawnSync(process.execPath, ['dist/latch.cjs', 'setup', 'codex', '--codex-home', join(tmp, 'codex')], { stdio: 'ignore', env: { ...env, LATCH_WRITE_CODE_CACHE: '0' } });
  const payload = JSON.stringify({
    session_id: 'warm', turn_id: 't', transcript_path: transcript, cwd: tmp, hook_event_name: 'PreToolUse', model: 'm',
    permission_mode: 'default', tool_name: 'Bash', tool_input: { command: 'ls -la && echo hi > a.txt' }, tool_use_id: 'c',
  });
  // A session's first PreToolUse loads dist/slow.cjs: it writes that file's cache.
  spawnSync(process.execPath, ['dist/latch.cjs', 'hook', 'codex', '--event', 'PreToolUse'], { input: payload, env: { ...env, LATCH_WRITE_CODE_CACHE: '1' } });
  // A PostToolUse (a Close: observes the workspace) writes dist/observer.cjs.v8cache (and a main.cjs
  // cache the PreToolUse below then replaces with one warmed by the hot path).
  const post = payload.replace('"PreToolUse"', '"PostToolUse"').replace('"tool_use_id"', '"tool_response":"","tool_use_id"');
  const p = spawnSync(process.execPath, ['dist/latch.cjs', 'hook', 'codex', '--event', 'PostToolUse'], { input: post, env: { ...env, LATCH_WRITE_CODE_CACHE: '1' } });
  if (p.status !== 0) throw new Error(`code-cache warm-up (PostToolUse) failed: ${p.stderr}`);
  const next = payload.replace('"tool_use_id":"c"', '"tool_use_id":"d"');
  const r = spawnSync(process.execPath, ['dist/latch.cjs', 'hook', 'codex', '--event', 'PreToolUse'], { input: next, env: { ...env, LATCH_WRITE_CODE_CACHE: '1' } });
  if (r.status !== 0) throw new Error(`code-cache warm-up failed: ${r.stderr}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
