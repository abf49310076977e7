// `latch qualify codex` on the real pinned Codex (0.171.0) (node_modules) and on deliberately broken stand-ins:
// a wrapper named `codex` that drops the PreCompact hooks from the config before running the real
// binary, and one that hides the hooks file (so no deny can happen). Each stand-in must be refused
// (exit 1) with the failing checks named, and must not become qualified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { resolveCodexBin } from '../../src/agents/codex/driver.js';
import type { QualificationRecord } from '../../src/agents/codex/qualification.js';
import { LATCH } from '../helpers/e2e.js';

/** The Codex release the tests pin (package.json devDependencies). */
const PINNED = (JSON.parse(readFileSync('package.json', 'utf8')) as { devDependencies: Record<string, string> })
  .devDependencies['@openai/codex']!;

const T = { timeout: 400_000 };
const base = mkdtempSync(join(tmpdir(), 'latch-qualify-e2e-'));
test.after(() => rmSync(base, { recursive: true, force: true, maxRetries: 5 }));

function qualify(
  name: string,
  codex: string,
): { code: number; rec: QualificationRecord & { record_path: string }; stderr: string; home: string } {
  const home = join(base, name, 'latch');
  const r = spawnSync(process.execPath, [LATCH, 'qualify', 'codex', '--codex', codex, '--json'], {
    env: { ...process.env, LATCH_HOME: home },
    encoding: 'utf8',
    timeout: 380_000,
  });
  assert.ok(r.stdout.trim().startsWith('{'), `no JSON record (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  return { code: r.status ?? -1, rec: JSON.parse(r.stdout), stderr: r.stderr, home };
}

/** A wrapper script named `codex` that runs `prelude` (sh) and then the real pinned launcher. */
function wrapper(name: string, prelude: string): string {
  const dir = join(base, name, 'bin');
  mkdirSync(dir, { recursive: true });
  const p = join(dir, 'codex');
  writeFileSync(
    p,
    `#!/bin/sh\n${prelude}\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(resolveCodexBin())} "$@"\n`,
  );
  chmodSync(p, 0o755);
  return p;
}

const failed = (rec: QualificationRecord) => rec.checks.filter((c) => !c.ok).map((c) => c.name);

test('the real pinned Codex (0.171.0) passes every check; the record is written and qualifies it', T, () => {
  const { code, rec, stderr, home } = qualify('real', resolveCodexBin());
  assert.equal(code, 0, `failed: ${failed(rec).join(', ')}\n${stderr.slice(-1500)}`);
  assert.equal(rec.version, PINNED);
  assert.equal(rec.qualified, true);
  assert.match(rec.binary.sha256, /^[0-9a-f]{64}$/);
  assert.ok(rec.checks.length >= 16 && rec.checks.every((c) => c.ok && c.evidence.length > 20));
  const file = join(home, 'qualified', `${PINNED}.json`);
  assert.equal(rec.record_path, file);
  const onDisk = JSON.parse(readFileSync(file, 'utf8')) as QualificationRecord;
  assert.equal(onDisk.qualified, true);
  assert.equal(onDisk.binary.sha256, rec.binary.sha256);
  // The same binary as the shipped record.
  const shipped = JSON.parse(
    readFileSync(resolve('data', 'qualified', `${PINNED}.json`), 'utf8'),
  ) as QualificationRecord;
  assert.equal(shipped.binary.sha256, rec.binary.sha256);
  assert.ok(rec.duration_ms < 180_000, `the run took ${rec.duration_ms} ms`);
});

test('a stand-in that drops PreCompact from the hooks is refused: hook-order and compaction-seen fail', T, () => {
  const p = wrapper(
    'no-precompact',
    `case "$CODEX_HOME" in */latch-qualify-*/codex-home) ${JSON.stringify(process.execPath)} -e 'const fs=require("fs");const f=process.env.CODEX_HOME+"/hooks.json";const h=JSON.parse(fs.readFileSync(f,"utf8"));delete h.hooks.PreCompact;fs.writeFileSync(f,JSON.stringify(h))';; esac`,
  );
  const { code, rec, stderr, home } = qualify('no-precompact', p);
  assert.equal(code, 1, stderr.slice(-1500));
  assert.equal(rec.qualified, false);
  const names = failed(rec);
  for (const n of ['hook-order', 'compaction-seen']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  assert.match(
    rec.checks.find((c) => c.name === 'hook-order')!.evidence,
    /missing or out of order: [^;]*PreCompact\(auto\)/,
  );
  assert.match(stderr, /failed check\(s\): .*compaction-seen/);
  // written, but not qualifying: the machine's list is still only what the package shipped
  const onDisk = JSON.parse(readFileSync(join(home, 'qualified', `${PINNED}.json`), 'utf8')) as QualificationRecord;
  assert.equal(onDisk.qualified, false);
  const st = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('./src/agents/codex/qualification.ts').then(m=>console.log(JSON.stringify(m.versionStatus(${JSON.stringify(PINNED)}, ${JSON.stringify(home)}))))`,
    ],
    { encoding: 'utf8' },
  );
  const status = JSON.parse(st.stdout) as {
    qualified: boolean;
    by: { source: string };
    rejected: { problem: string }[];
  };
  assert.equal(status.by.source, 'package', 'still qualified by the shipped record, not by this run');
  assert.match(status.rejected[0]!.problem, /failed check\(s\)/);
});

test(
  'a stand-in whose deny is ignored (the hooks file hidden) is refused: deny-bash and deny-apply-patch fail',
  T,
  () => {
    const p = wrapper(
      'no-hooks',
      'case "$CODEX_HOME" in */latch-qualify-*/codex-home) [ -f "$CODEX_HOME/hooks.json" ] && mv "$CODEX_HOME/hooks.json" "$CODEX_HOME/hooks.json.hidden";; esac',
    );
    const { code, rec } = qualify('no-hooks', p);
    assert.equal(code, 1);
    const names = failed(rec);
    for (const n of ['deny-bash', 'deny-apply-patch', 'hook-payloads', 'latch-across-resume'])
      assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
    assert.match(rec.checks.find((c) => c.name === 'deny-bash')!.evidence, /denied\.txt WRITTEN/);
  },
);

/**
 * A stand-in launcher whose `codex exec` never finishes for the first `times` runs, then runs the real
 * launcher. Laid out as an npm package beside the real platform package, so that `latch qualify` finds
 * the real native binary behind it (its hook schemas, its sha256) as it does behind the real launcher.
 */
function stalling(name: string, times: number): string {
  const dir = join(base, name);
  const count = join(dir, 'stalls');
  const pkg = join(dir, 'node_modules', '@openai', 'codex');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), '{"name":"@openai/codex","bin":{"codex":"bin/codex.js"}}\n');
  const platform = join(dirname(resolveCodexBin()), '..', '..', 'codex-linux-x64');
  symlinkSync(realpathSync(platform), join(dir, 'node_modules', '@openai', 'codex-linux-x64'));
  const launcher = join(pkg, 'bin', 'codex.js');
  writeFileSync(
    launcher,
    `const fs = require('fs');
const count = ${JSON.stringify(count)};
if (process.argv.includes('exec')) {
  const n = Number(fs.existsSync(count) ? fs.readFileSync(count, 'utf8') : 0);
  if (n < ${times}) {
    fs.writeFileSync(count, String(n + 1));
    setInterval(() => {}, 1000); // a run that never finishes
    return;
  }
}
const r = require('child_process').spawnSync(process.execPath, [${JSON.stringify(resolveCodexBin())}, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
`,
  );
  return launcher;
}

test(
  'a run that keeps timing out is inconclusive (exit 75): retried once, nothing recorded, no check called failed',
  T,
  () => {
    const p = stalling('always-stalls', 99);
    const home = join(base, 'always-stalls', 'latch');
    const r = spawnSync(
      process.execPath,
      [LATCH, 'qualify', 'codex', '--codex', p, '--timeout', '3', '--retries', '1', '--json'],
      { env: { ...process.env, LATCH_HOME: home }, encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(r.status, 75, r.stderr.slice(-1500));
    const rec = JSON.parse(r.stdout) as QualificationRecord & { record_path: string | null };
    assert.equal(rec.inconclusive, true);
    assert.equal(rec.qualified, false);
    assert.equal(rec.record_path, null);
    assert.ok(
      rec.checks.every((c) => c.ok || c.inconclusive),
      'no check failed on evidence',
    );
    assert.match(
      rec.checks.find((c) => c.inconclusive)!.evidence,
      /^inconclusive: codex \(run\) did not finish within 3 s/,
    );
    assert.match(r.stderr, /running it again \(1 of 1\)/);
    assert.match(r.stderr, /inconclusive after 2 run\(s\)/);
    assert.equal(readFileSync(join(base, 'always-stalls', 'stalls'), 'utf8').trim(), '2', 'two runs');
    assert.ok(!existsSync(join(home, 'qualified', `${PINNED}.json`)), 'nothing recorded');
  },
);

test('a run that timed out once is run again and its verdict is the second run’s', T, () => {
  const p = stalling('stalls-once', 1);
  const home = join(base, 'stalls-once', 'latch');
  const r = spawnSync(process.execPath, [LATCH, 'qualify', 'codex', '--codex', p, '--timeout', '60', '--json'], {
    env: { ...process.env, LATCH_HOME: home },
    encoding: 'utf8',
    timeout: 380_000,
  });
  assert.equal(r.status, 0, r.stderr.slice(-1500));
  const rec = JSON.parse(r.stdout) as QualificationRecord;
  assert.equal(rec.qualified, true);
  assert.equal(rec.inconclusive, undefined);
  assert.match(r.stderr, /inconclusive \(codex \(run\) did not finish within 60 s\); running it again \(1 of 1\)/);
  assert.equal(
    (JSON.parse(readFileSync(join(home, 'qualified', `${PINNED}.json`), 'utf8')) as QualificationRecord).qualified,
    true,
  );
});
