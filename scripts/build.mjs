// Bundles the hook entry (dist/latch.cjs) and the CLI (dist/cli.cjs, loaded lazily by the entry)
// as CommonJS for a fast start. better-sqlite3 stays external: it carries a native addon.
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  external: ['better-sqlite3', './cli.cjs'],
  logLevel: 'warning',
  legalComments: 'none',
  // ESM sources use import.meta.url; in the CommonJS bundle it is the bundle's own file URL.
  define: { __LATCH_VERSION__: JSON.stringify(version), 'import.meta.url': '__latch_import_meta_url' },
  banner: { js: "const __latch_import_meta_url = require('url').pathToFileURL(__filename).href;" },
};

// The hook bundle loads the slow path (checkpoints, git, TOML) from its own file on first use.
const lazySlow = {
  name: 'lazy-slow',
  setup(b) {
    b.onResolve({ filter: /\/slow\.js$/ }, () => ({ path: './slow.cjs', external: true }));
  },
};

await Promise.all([
  build({ ...common, entryPoints: ['src/main.ts'], outfile: 'dist/latch.cjs', plugins: [lazySlow] }),
  build({ ...common, entryPoints: ['src/core/slow.ts'], outfile: 'dist/slow.cjs' }),
  build({ ...common, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.cjs' }),
]);
