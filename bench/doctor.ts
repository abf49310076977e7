// `latch doctor FILE` on a large generated rollout, measured in the same run against
//   - `wc -l FILE`                                 goal: doctor / wc <= 4
//   - `jq -c 'select(.type=="compacted")' FILE`    goal: jq / doctor >= 5 (skipped when jq is missing)
//   - peak RSS of the doctor process               goal: < 200 MB
// Size: BENCH_DOCTOR_MB (default 1024). The file is generated once under BENCH_DOCTOR_DIR (default
// $TMPDIR/latch-bench) by scripts/gen-rollout.ts and reused while its size matches.
// The doctor is the real command, `node dist/latch.cjs doctor FILE --json` (build first: `npm run
// bench` does), with an empty LATCH_HOME. Its peak RSS is read by /usr/bin/time -v, and reported by
// itself through a small runner bundle of src/agents/codex/fsck/command.ts. Prints one JSON line.
// Run: node --import tsx bench/doctor.ts
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { generateRollout } from '../scripts/gen-rollout.js';
import { scrubNodeStartEnv } from './env.js';

// The doctor runs without the variables that make a bare Node start do more (bench/env.ts).
scrubNodeStartEnv();

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LATCH = join(root, 'dist', 'latch.cjs');
const MB = Number(process.env.BENCH_DOCTOR_MB ?? 1024);
const RUNS = Number(process.env.BENCH_DOCTOR_RUNS ?? 3);
const dir = process.env.BENCH_DOCTOR_DIR ?? join(tmpdir(), 'latch-bench');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Wall seconds of one run; stdout discarded unless asked. */
function timed(
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): { s: number; status: number | null; stdout: string; stderr: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { s, status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function bundleRunner(): Promise<string> {
  // Inside node_modules so the bundle resolves better-sqlite3 (native) like dist/cli.cjs does.
  const outDir = join(root, 'node_modules', '.cache', 'latch-bench');
  mkdirSync(outDir, { recursive: true });
  const entry = join(outDir, 'doctor-entry.ts');
  writeFileSync(
    entry,
    `import { transcriptDoctor } from ${JSON.stringify(join(root, 'src', 'agents', 'codex', 'fsck', 'command.ts'))};
import { processIo } from ${JSON.stringify(join(root, 'src', 'commands', 'io.ts'))};
const args = process.argv.slice(2);
transcriptDoctor(processIo(), { file: args[0]!, json: args.includes('--json'), progress: false }).then((code) => {
  process.stderr.write(JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS }) + '\\n');
  process.exitCode = code;
});
`,
  );
  const out = join(outDir, 'doctor.cjs');
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'warning',
    external: ['better-sqlite3'],
    define: { 'import.meta.url': '__bench_import_meta_url' },
    banner: { js: "const __bench_import_meta_url = require('url').pathToFileURL(__filename).href;" },
  });
  return out;
}

async function main(): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `rollout-${MB}mb.jsonl`);
  const want = Math.round(MB * 1024 * 1024);
  if (!existsSync(file) || Math.abs(statSync(file).size - want) > want * 0.05 + (2 << 20)) {
    const t0 = Date.now();
    const g = generateRollout(file, { bytes: want });
    process.stderr.write(`generated ${file}: ${JSON.stringify(g)} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  const bytes = statSync(file).size;
  if (!existsSync(LATCH)) throw new Error(`${LATCH} is missing: run npm run build first`);
  const runner = await bundleRunner();
  const home = mkdtempSync(join(tmpdir(), 'latch-bench-home-'));
  const env = { ...process.env, LATCH_HOME: home };
  try {
    // Warm the page cache so every tool reads from memory.
    timed('cat', [file]);
    const wc: number[] = [];
    const doc: number[] = [];
    let rssKb = 0;
    let report: { lines: number; compactions: unknown[]; exit_code: number } | null = null;
    for (let i = 0; i < RUNS; i++) {
      const w = timed('wc', ['-l', file]);
      if (w.status !== 0) throw new Error(`wc failed: ${w.stderr}`);
      wc.push(w.s);
      const d = timed(process.execPath, [LATCH, 'doctor', file, '--json'], env);
      if (d.status !== 0 && d.status !== 1) throw new Error(`doctor exited ${d.status}: ${d.stderr.slice(-2000)}`);
      doc.push(d.s);
      report = JSON.parse(d.stdout);
    }
    // The doctor's own account of its peak RSS (the same analysis, run from the runner bundle).
    const self = timed(process.execPath, [runner, file, '--json'], env);
    const m = /\{"maxRssKb":(\d+)\}/.exec(self.stderr);
    if (m) rssKb = Number(m[1]);
    // Peak RSS as the kernel saw it, when GNU time is there (includes everything node mapped).
    let timeRssKb: number | null = null;
    if (existsSync('/usr/bin/time')) {
      const t = spawnSync('/usr/bin/time', ['-v', process.execPath, LATCH, 'doctor', file, '--json'], {
        env,
        encoding: 'utf8',
        maxBuffer: 64 << 20,
      });
      const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(t.stderr);
      if (m) timeRssKb = Number(m[1]);
    }
    let jq: { seconds: number | null; note: string | null } = { seconds: null, note: null };
    if (!have('jq')) jq = { seconds: null, note: 'jq is not installed: the jq ratio was skipped' };
    else {
      const j = timed('jq', ['-c', 'select(.type=="compacted")', file]);
      jq =
        j.status === 0
          ? { seconds: j.s, note: null }
          : { seconds: null, note: `jq exited ${j.status}: ${j.stderr.slice(0, 200)}` };
    }
    const wcS = median(wc);
    const docS = median(doc);
    const peakMb = Math.max(rssKb, timeRssKb ?? 0) / 1024;
    const result = {
      bench: 'latch doctor FILE --json (node dist/latch.cjs)',
      file,
      bytes,
      lines: report?.lines ?? null,
      compactions: report?.compactions.length ?? null,
      doctor_exit: report?.exit_code ?? null,
      runs: RUNS,
      doctor_s: round(docS),
      wc_l_s: round(wcS),
      doctor_over_wc: round(docS / wcS),
      jq_s: jq.seconds === null ? null : round(jq.seconds),
      jq_over_doctor: jq.seconds === null ? null : round(jq.seconds / docS),
      jq_note: jq.note,
      doctor_throughput_mb_s: round(bytes / (1 << 20) / docS),
      doctor_peak_rss_mb: round(peakMb),
      doctor_max_rss_self_mb: round(rssKb / 1024),
      doctor_max_rss_time_v_mb: timeRssKb === null ? null : round(timeRssKb / 1024),
      goals: {
        wc_ratio_le_4: docS / wcS <= 4,
        jq_5x_faster: jq.seconds === null ? null : jq.seconds / docS >= 5,
        rss_lt_200mb: peakMb < 200,
      },
    };
    console.log(JSON.stringify(result));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
