// Bundles Latch as CommonJS for a fast start:
//   dist/latch.cjs  the process entry (src/loader.ts): runs main.cjs from a V8 code cache
//   dist/main.cjs   the hook path and the CLI switch (src/main.ts)
//   dist/slow.cjs   what only a trip or a session's first sight needs (checkpoints, git, TOML)
//   dist/observer.cjs  what a Close or a turn's end needs (workspace observation, watcher client)
//   dist/cli.cjs    the commands, loaded only for `latch <command>`
// then writes the code caches (dist/*.cjs.v8cache) by running the hook and `latch doctor`. better-sqlite3's JS is bundled; its
// native addon is loaded by path from node_modules (src/store/store.ts).
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
  // ESM sources use import.meta.url; in the CommonJS bundle it is the bundle's own file URL, made
  // when first read (the URL machinery costs a hook ~0.5 ms it mostly does not need).
  // import.meta.dirname and .filename (Node >= 20.11) are the bundle's own, with no URL at all.
  define: {
    __LATCH_VERSION__: JSON.stringify(version),
    'import.meta.url': '__latch_import_meta.url',
    'import.meta.dirname': '__dirname',
    'import.meta.filename': '__filename',
  },
  banner: {
    js: "const __latch_import_meta = { get url() { return require('url').pathToFileURL(__filename).href; } };",
  },
};

// The hook bundle loads the slow path from its own file on first use, through require() (the code
// cache runs main.cjs in a vm.Script, where a dynamic import() would need a loader callback).
const lazySlow = {
  name: 'lazy-slow',
  setup(b) {
    b.onResolve({ filter: /\/slow\.js$/ }, () => ({ path: './slow.cjs', external: true }));
    b.onResolve({ filter: /\/observer\.js$/ }, () => ({ path: './observer.cjs', external: true }));
    // An agent's commands part (setup, uninstall, doctor checks) lives in the commands' bundle.
    b.onResolve({ filter: /^\.\/commands\.js$/ }, (a) =>
      /[\\/]src[\\/]agents[\\/][^\\/]+$/.test(a.resolveDir) ? { path: './cli.cjs', external: true } : undefined,
    );
  },
};

rmSync('dist', { recursive: true, force: true });
await Promise.all([
  build({ ...common, entryPoints: ['src/loader.ts'], outfile: 'dist/latch.cjs', sourcemap: false, banner: {} }),
  build({
    ...common,
    entryPoints: ['src/main.ts'],
    outfile: 'dist/main.cjs',
    plugins: [lazySlow],
    supported: { 'dynamic-import': false },
  }),
  build({ ...common, entryPoints: ['src/slow.ts'], outfile: 'dist/slow.cjs' }),
  build({ ...common, entryPoints: ['src/ledger/observer.ts'], outfile: 'dist/observer.cjs' }),
  build({ ...common, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.cjs' }),
]);

// Warm the code caches with representative hooks: a session's first PreToolUse (dist/slow.cjs), a
// Close synced with the workspace watcher (dist/observer.cjs), then a later PreToolUse of each agent
// (dist/main.cjs, one cache per agent: src/base/code-cache.ts).
for (const n of readdirSync('dist')) if (n.endsWith('.v8cache')) rmSync(join('dist', n));
const tmp = mkdtempSync(join(tmpdir(), 'latch-build-'));
try {
  const work = join(tmp, 'work');
  mkdirSync(work);
  spawnSync('git', ['init', '-q'], { cwd: work });
  writeFileSync(join(work, 'a.txt'), 'a\n');
  const transcript = join(tmp, 'rollout.jsonl');
  writeFileSync(
    transcript,
    JSON.stringify({ type: 'session_meta', payload: { id: 'warm', cli_version: '0.0.0' } }) + '\n',
  );
  // Every hook runs in its own process here (a resident hook would answer the PreToolUse without main.cjs).
  const env = { ...process.env, LATCH_HOME: join(tmp, 'state'), LATCH_RESIDENT: 'off' };
  const latch = (args, input, write, ok = [0], extra = {}) => {
    const r = spawnSync(process.execPath, ['dist/latch.cjs', ...args], {
      input,
      encoding: 'utf8',
      env: { ...env, ...extra, LATCH_WRITE_CODE_CACHE: write },
    });
    if (!ok.includes(r.status)) throw new Error(`code-cache warm-up (${args.join(' ')}) failed: ${r.stderr}`);
    return r.stdout;
  };
  latch(['setup', 'codex', '--codex-home', join(tmp, 'codex')], '', '0');
  const pre = (id) =>
    JSON.stringify({
      session_id: 'warm',
      turn_id: 't',
      transcript_path: transcript,
      cwd: work,
      hook_event_name: 'PreToolUse',
      model: 'm',
      permission_mode: 'default',
      tool_name: 'Bash',
      tool_input: { command: 'ls -la && echo hi > a.txt' },
      tool_use_id: id,
    });
  const post = (id) =>
    pre(id).replace('"PreToolUse"', '"PostToolUse"').replace('"tool_use_id"', '"tool_response":"","tool_use_id"');
  const hook = (event, input, write) => latch(['hook', 'codex', '--event', event], input, write);
  hook('PreToolUse', pre('c'), '1'); // first sight: slow.cjs; the baseline observation starts a watcher
  for (let i = 0; i < 100; i++) {
    const list = JSON.parse(latch(['watch', 'status', '--cwd', work, '--json'], '', '0')).watchers;
    if (list.some((w) => w.state === 'ready')) break;
    spawnSync('sleep', ['0.05']);
  }
  hook('PostToolUse', post('c'), '0'); // the first synced Close stats everything and takes a position
  hook('PreToolUse', pre('d'), '0');
  writeFileSync(join(work, 'a.txt'), 'hi\n');
  hook('PostToolUse', post('d'), '1'); // a Close that stats only the journal: observer.cjs
  // The commands' bundle, warmed by `latch doctor FILE` on a real session (its analyser is the
  // command's hot code); main.cjs's cache is written again by the hook after it.
  latch(['doctor', 'test/fixtures/doctor/hooked-session.jsonl', '--json'], '', '1', [0, 1, 3]);
  hook('PreToolUse', pre('e'), '1'); // the hot path: main.cjs, with Codex's own cache (src/base/code-cache.ts)
  latch(['watch', 'stop', '--cwd', work], '', '0');
  // Claude Code's hook path gets a cache of its own, warmed the same way.
  const claudeEnv = { CLAUDE_CONFIG_DIR: join(tmp, 'claude') };
  const claudeTranscript = join(tmp, 'claude-session.jsonl');
  const claudeLine = (n) =>
    `${JSON.stringify({
      type: 'assistant',
      sessionId: 'warm-claude',
      version: '0.0.0',
      cwd: work,
      message: { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${n}`, name: 'Bash', input: {} }] },
    })}\n`;
  writeFileSync(claudeTranscript, claudeLine(0));
  const claudePre = (n) => {
    appendFileSync(claudeTranscript, claudeLine(n));
    return JSON.stringify({
      session_id: 'warm-claude',
      transcript_path: claudeTranscript,
      cwd: work,
      prompt_id: 'p',
      permission_mode: 'default',
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_input: { command: 'ls -la && echo hi > a.txt', description: 'warm' },
      tool_use_id: `toolu_${n}`,
    });
  };
  // Each run adds what it compiled to the cache it loaded: first sight, a Close, the hot path.
  latch(['setup', 'claude'], '', '0', [0], claudeEnv);
  latch(['hook', 'claude', '--event', 'PreToolUse'], claudePre(1), '1', [0], claudeEnv);
  writeFileSync(join(work, 'a.txt'), 'claude\n');
  const claudePost = claudePre(1)
    .replace('"PreToolUse"', '"PostToolUse"')
    .replace('"tool_use_id"', '"tool_response":{"stdout":"","stderr":""},"tool_use_id"');
  latch(['hook', 'claude', '--event', 'PostToolUse'], claudePost, '1', [0], claudeEnv);
  latch(['hook', 'claude', '--event', 'PreToolUse'], claudePre(2), '1', [0], claudeEnv);
  latch(['watch', 'stop', '--cwd', work], '', '0');
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
