// Runs node's test runner over test/<suite>/**/*.test.ts (Node 20 has no --test glob support).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const suites = process.argv.slice(2);
const roots = (suites.length ? suites : ['unit', 'e2e']).map((s) => join('test', s));

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const files = roots.flatMap(collect);
if (files.length === 0) {
  console.error('no test files found under', roots.join(', '));
  process.exit(1);
}
// Workspace watchers and resident hooks started by the tests' hooks leave soon after their temp
// workspace or Latch home goes away; the idle bounds make sure none outlives the run by long.
// fc-report: a failing property test says what its assertion found (test/helpers/fc-report.ts).
const preload = ['--import', 'tsx', '--import', './test/helpers/fc-report.ts'];
const r = spawnSync(process.execPath, [...preload, '--test', '--test-concurrency=2', ...files], {
  stdio: 'inherit',
  env: {
    ...process.env,
    LATCH_WATCH_IDLE_MS: process.env.LATCH_WATCH_IDLE_MS ?? '20000',
    LATCH_RESIDENT_IDLE_MS: process.env.LATCH_RESIDENT_IDLE_MS ?? '20000',
  },
});
process.exit(r.status ?? 1);
