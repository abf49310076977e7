// Tree snapshot benchmark: first (cold stat cache) vs repeat (warm stat cache) snapshot
// of a 50,000-file git repository, using the SQLite-backed stat cache.
//
//   node --import tsx bench/tree.ts [files] [runs]
//
// Prints one JSON line: {"files":…,"firstMs":…,"repeatMs":…,"repeatHashed":…}
// (medians over `runs`; the OS page cache is warm in both cases). A breakdown goes to stderr.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { TREE_CACHE_SQL } from '../src/store/schema.js';
import { listGitPaths } from '../src/tree/enumerate.js';
import { snapshotTree } from '../src/tree/snapshot.js';
import { SqliteStatCache } from '../test/helpers/tree-cache.js';

const FILES = Number(process.argv[2] ?? 50_000);
const RUNS = Number(process.argv[3] ?? 5);

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.invalid',
};

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, env: GIT_ENV, stdio: ['ignore', 'ignore', 'inherit'], maxBuffer: 1 << 30 });
}

/** Deterministic PRNG (mulberry32) so every run builds the same tree. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A monorepo-like layout: packages/<pkg>/{src,test}/<dir>/<subdir>/file.ts, with
 * 5-40 files per leaf directory and 100 B - 6 KiB per file; about 5 % of the files
 * are left untracked and a few ignored build outputs exist (excluded from the snapshot).
 */
function buildTree(root: string, n: number): { made: string[]; deferred: [string, string][] } {
  const rand = rng(42);
  const made: string[] = [];
  const deferred: [string, string][] = []; // written after the commit: untracked files
  const exts = ['ts', 'ts', 'ts', 'tsx', 'json', 'md', 'css', 'js'];
  let pkg = 0;
  while (made.length < n) {
    const pkgDir = `packages/pkg-${String(pkg++).padStart(3, '0')}`;
    for (const part of ['src', 'test']) {
      const dirs = 2 + Math.floor(rand() * 6);
      for (let d = 0; d < dirs && made.length < n; d++) {
        const subdirs = 1 + Math.floor(rand() * 4);
        for (let s = 0; s < subdirs && made.length < n; s++) {
          const dir = `${pkgDir}/${part}/mod${d}/sub${s}`;
          mkdirSync(path.join(root, dir), { recursive: true });
          const files = 5 + Math.floor(rand() * 36);
          for (let f = 0; f < files && made.length < n; f++) {
            const ext = exts[Math.floor(rand() * exts.length)]!;
            const rel = `${dir}/file_${f}.${ext}`;
            const size = 100 + Math.floor(rand() * rand() * 6000);
            const line = `// ${rel} generated content line ${f}\n`;
            const content = line.repeat(Math.ceil(size / line.length)).slice(0, size);
            if (made.length % 20 === 0) deferred.push([rel, content]);
            else writeFileSync(path.join(root, rel), content);
            made.push(rel);
          }
        }
      }
    }
  }
  writeFileSync(path.join(root, '.gitignore'), 'dist/\n*.log\n');
  mkdirSync(path.join(root, 'dist'), { recursive: true });
  for (let i = 0; i < 200; i++) writeFileSync(path.join(root, 'dist', `out${i}.js`), 'ignored');
  return { made, deferred };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'latch-bench-tree-'));
try {
  const root = path.join(tmp, 'repo');
  mkdirSync(root);
  git(root, 'init', '-q', '-b', 'main');
  const t0 = process.hrtime.bigint();
  const { made, deferred } = buildTree(root, FILES);
  // Track ~95 % of the files, leave the rest untracked-but-not-ignored.
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'bench tree', '--no-verify');
  for (const [rel, content] of deferred) writeFileSync(path.join(root, rel), content);
  // Files in a real workspace are mostly older than the last snapshot: age them so the
  // repeat run measures the steady state rather than the racily-clean window.
  const past = new Date(Date.now() - 3600_000);
  for (const rel of made) utimesSync(path.join(root, rel), past, past);
  process.stderr.write(`built ${made.length} files in ${ms(t0).toFixed(0)} ms\n`);

  const firstMs: number[] = [];
  const repeatMs: number[] = [];
  const loadMs: number[] = [];
  let repeatHashed = 0;
  let files = 0;
  let digest = '';
  for (let run = 0; run < RUNS; run++) {
    const dbPath = path.join(tmp, `cache-${run}.db`);
    const db = new Database(dbPath);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(TREE_CACHE_SQL);
    const cache = new SqliteStatCache(db);

    let t = process.hrtime.bigint();
    const first = snapshotTree(root, { cache, isGit: true });
    firstMs.push(ms(t));

    t = process.hrtime.bigint();
    const repeat = snapshotTree(root, { cache, isGit: true });
    repeatMs.push(ms(t));

    t = process.hrtime.bigint();
    cache.load(path.resolve(root));
    loadMs.push(ms(t));

    if (first.sha256 !== repeat.sha256) throw new Error('digest mismatch between first and repeat snapshot');
    if (digest && digest !== first.sha256) throw new Error('digest differs between runs');
    digest = first.sha256;
    files = repeat.files;
    repeatHashed = Math.max(repeatHashed, repeat.stats.hashed);
    db.close();
  }
  let t = process.hrtime.bigint();
  const lsCount = listGitPaths(root).length;
  const lsMs = ms(t);
  t = process.hrtime.bigint();
  snapshotTree(root, { isGit: true });
  const uncachedMs = ms(t);
  process.stderr.write(
    `breakdown: git ls-files ${lsMs.toFixed(1)} ms (${lsCount} paths), cache load ${median(loadMs).toFixed(1)} ms, ` +
      `uncached snapshot without SQLite ${uncachedMs.toFixed(0)} ms; first runs ${firstMs.map((x) => x.toFixed(0)).join(',')}; ` +
      `repeat runs ${repeatMs.map((x) => x.toFixed(0)).join(',')}\n`,
  );
  console.log(
    JSON.stringify({
      files,
      firstMs: Math.round(median(firstMs)),
      repeatMs: Math.round(median(repeatMs)),
      repeatHashed,
    }),
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
