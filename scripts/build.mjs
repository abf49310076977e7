// Bundles the CLI and the hook into one CommonJS file (dist/latch.cjs) for a fast start.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/latch.cjs',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  external: ['better-sqlite3'],
  logLevel: 'warning',
  legalComments: 'none',
});
