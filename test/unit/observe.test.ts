// observeTree / observeWorkspace: the compact observation state, the delta, and the rules that let an
// observation reuse the previous `git ls-files` listing (src/tree/tree.ts, "Observations").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, renameSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../src/store/schema.js';
import { observeTree, type TreeObservation } from '../../src/tree/observe-tree.js';
import { snapshotTree } from '../../src/tree/snapshot.js';
import { SqliteStatCache } from '../helpers/tree-cache.js';
import { attribute, observeWorkspace } from '../../src/ledger/observe.js';
import { awaitFileClock, nowNs } from '../../src/ledger/ledger.js';
import { git, tmpDir as tmpDirIn } from '../helpers/git.js';

const tmpDir = (): string => tmpDirIn('latch-observe-');

function write(root: string, rel: string, content: string): void {
  const p = path.join(root, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
}

function openDb(): Database.Database {
  const db = new Database(':memory:');
  for (const m of MIGRATIONS) db.exec(m);
  return db;
}

function observe(db: Database.Database, root: string, isGit?: boolean): TreeObservation {
  db.exec('BEGIN IMMEDIATE');
  try {
    return observeTree(root, db, { isGit });
  } finally {
    db.exec('COMMIT');
  }
}

function summary(o: TreeObservation): string[] {
  return o.delta.map((d) => `${d.change} ${d.path}`);
}

/** A committed repository with some structure, an ignore file, an ignored dir and an empty untracked dir. */
function makeRepo(): string {
  const root = tmpDir();
  git(root, 'init', '-q', '-b', 'main');
  write(root, 'a/one.txt', 'one\n');
  write(root, 'a/two.txt', 'two\n');
  write(root, 'b/c/three.txt', 'three\n');
  write(root, '.gitignore', '*.log\nbuild/\n');
  write(root, 'build/out.bin', 'ignored\n');
  write(root, 'keep.log', 'ignored log\n');
  mkdirSync(path.join(root, 'empty', 'deeper'), { recursive: true });
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'init');
  write(root, 'notes.md', 'untracked, not ignored\n');
  return root;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every check: the observation matches a from-scratch snapshotTree (entries and digest). */
function assertSameAsSnapshot(o: TreeObservation, root: string): void {
  const fresh = snapshotTree(root);
  assert.deepEqual(o.snapshot.entries, fresh.entries);
  assert.equal(o.snapshot.sha256, fresh.sha256);
  assert.equal(o.snapshot.files, fresh.files);
}

type Scenario = { name: string; change: (root: string) => void; expect: string[] };

const SCENARIOS: Scenario[] = [
  {
    name: 'content change (listing still valid)',
    change: (r) => write(r, 'a/one.txt', 'ONE!\n'),
    expect: ['modified a/one.txt'],
  },
  {
    name: 'new file in an existing directory',
    change: (r) => write(r, 'b/c/new.txt', 'new\n'),
    expect: ['added b/c/new.txt'],
  },
  {
    name: 'new file in an empty untracked nested directory',
    change: (r) => write(r, 'empty/deeper/x.txt', 'x\n'),
    expect: ['added empty/deeper/x.txt'],
  },
  {
    name: 'file renamed within a directory',
    change: (r) => renameSync(path.join(r, 'a/one.txt'), path.join(r, 'a/uno.txt')),
    expect: ['added a/uno.txt', 'removed a/one.txt'],
  },
  {
    name: 'file moved across directories',
    change: (r) => renameSync(path.join(r, 'a/two.txt'), path.join(r, 'b/c/two.txt')),
    expect: ['added b/c/two.txt', 'removed a/two.txt'],
  },
  { name: 'file deleted', change: (r) => unlinkSync(path.join(r, 'b/c/three.txt')), expect: ['removed b/c/three.txt'] },
  {
    name: '.gitignore edited: an ignored file becomes visible',
    change: (r) => writeFileSync(path.join(r, '.gitignore'), 'build/\n'),
    expect: ['modified .gitignore', 'added keep.log'],
  },
  {
    name: 'new untracked file two levels down',
    change: (r) => write(r, 'b/c/scratch.tmp', 'scratch\n'),
    expect: ['added b/c/scratch.tmp'],
  },
  {
    name: 'git add -f of an ignored file',
    change: (r) => git(r, 'add', '-f', 'build/out.bin'),
    expect: ['added build/out.bin'],
  },
  {
    name: 'new file inside an ignored directory stays invisible',
    change: (r) => write(r, 'build/more.bin', 'm\n'),
    expect: [],
  },
  {
    name: '.git/info/exclude edited',
    change: (r) => writeFileSync(path.join(r, '.git', 'info', 'exclude'), 'notes.md\n'),
    expect: ['removed notes.md'],
  },
];

test('observeTree: every invalidation of the reused listing is detected, and results equal snapshotTree', async () => {
  const repos = SCENARIOS.map(() => makeRepo());
  const dbs = SCENARIOS.map(() => openDb());
  for (let i = 0; i < repos.length; i++) {
    const first = observe(dbs[i]!, repos[i]!);
    assert.equal(first.beforeCount, 0);
    assert.equal(first.listingReused, false);
    assertSameAsSnapshot(first, repos[i]!);
  }
  // The listing's validators must be older than its stamp (whole seconds) before it can be reused.
  await sleep(1100);
  for (let i = 0; i < repos.length; i++) {
    const o = observe(dbs[i]!, repos[i]!);
    assert.deepEqual(summary(o), [], SCENARIOS[i]!.name);
    // The first re-observation lists again (the stamp was too recent); the next may reuse.
    const o2 = observe(dbs[i]!, repos[i]!);
    assert.equal(o2.listingReused, true, `${SCENARIOS[i]!.name}: listing reused when nothing changed`);
    assert.deepEqual(o2.snapshot.stats, { hashed: 0, reused: o2.snapshot.files, racy: 0 });
  }
  for (let i = 0; i < repos.length; i++) {
    const s = SCENARIOS[i]!;
    s.change(repos[i]!);
    const o = observe(dbs[i]!, repos[i]!);
    assert.deepEqual(summary(o), s.expect, s.name);
    assertSameAsSnapshot(o, repos[i]!);
    const again = observe(dbs[i]!, repos[i]!);
    assert.deepEqual(summary(again), [], `${s.name}: recorded once`);
  }
});

test('observeTree: a nested .gitignore that appears hides an untracked file', async () => {
  const root = makeRepo();
  write(root, 'b/c/scratch.tmp', 'scratch\n');
  const db = openDb();
  observe(db, root);
  await sleep(1100);
  observe(db, root);
  assert.equal(observe(db, root).listingReused, true);
  write(root, 'b/.gitignore', '*.tmp\n');
  const o = observe(db, root);
  assert.deepEqual(summary(o), ['added b/.gitignore', 'removed b/c/scratch.tmp']);
  assertSameAsSnapshot(o, root);
});

test('observeTree: a same-size rewrite with an identical stat is caught by the racy-clean rule', () => {
  const root = makeRepo();
  const db = openDb();
  const file = path.join(root, 'a', 'one.txt');
  const future = new Date(Math.floor(Date.now() / 1000) * 1000 + 5000); // not older than any stamp: racy
  utimesSync(file, future, future);
  observe(db, root);
  // Rewrite with the same size and restore the mtime; then forge the stored ctime so that the whole
  // stat matches (a filesystem whose ctime did not move): only the racy rule can catch it now.
  writeFileSync(file, 'ONE\n');
  utimesSync(file, future, future);
  const st = lstatSync(file);
  const rows = db.prepare('SELECT bytes FROM tree_state_pages WHERE root = ? ORDER BY page').all(root) as {
    bytes: Buffer;
  }[];
  const buf = Buffer.concat(rows.map((r) => r.bytes));
  const n = buf.readUInt32LE(4);
  const textOff = 16 + n * 7 * 8 + n * 32;
  const paths = buf.toString('utf8', textOff).split('\0');
  const i = paths.indexOf('a/one.txt');
  assert.ok(i >= 0);
  const slot = 16 + i * 7 * 8;
  assert.equal(buf.readDoubleLE(slot + 3 * 8), st.mtimeMs);
  buf.writeDoubleLE(st.ctimeMs, slot + 4 * 8);
  for (let k = 0; k < rows.length; k++) {
    db.prepare('UPDATE tree_state_pages SET bytes = ? WHERE root = ? AND page = ?').run(
      buf.subarray(k * 32768, (k + 1) * 32768),
      root,
      k,
    );
  }
  const o = observe(db, root);
  assert.deepEqual(summary(o), ['modified a/one.txt']);
  assert.ok(o.snapshot.stats.racy >= 1);
});

test('observeTree: the legacy tree_cache rows are the "before" side once, then dropped', () => {
  const root = makeRepo();
  const db = openDb();
  snapshotTree(root, { cache: new SqliteStatCache(db) });
  write(root, 'a/one.txt', 'changed\n');
  const o = observe(db, root);
  assert.deepEqual(summary(o), ['modified a/one.txt']);
  assert.ok(o.beforeCount > 0);
  assert.equal((db.prepare('SELECT count(*) AS n FROM tree_cache').get() as { n: number }).n, 0);
  assert.deepEqual(summary(observe(db, root)), []);
});

test('observeTree: outside git, every observation walks the tree (no listing reuse)', () => {
  const root = tmpDir();
  write(root, 'x/y.txt', 'y\n');
  const db = openDb();
  observe(db, root, false);
  write(root, 'x/z.txt', 'z\n');
  const o = observe(db, root, false);
  assert.deepEqual(summary(o), ['added x/z.txt']);
  assert.equal(o.listingReused, false);
  assertSameAsSnapshot(o, root);
});

test('observeWorkspace: records the delta; tree_sha256 only when computed, never stale', () => {
  const root = makeRepo();
  const db = openDb();
  const now = new Date().toISOString();
  db.exec('BEGIN IMMEDIATE');
  const first = observeWorkspace(db, root, 'stop', now);
  db.exec('COMMIT');
  assert.equal(first.changes.length, 0);
  write(root, 'a/one.txt', 'different\n');
  db.exec('BEGIN IMMEDIATE');
  const second = observeWorkspace(db, root, 'close', now);
  db.exec('COMMIT');
  assert.deepEqual(
    second.changes.map((c) => `${c.change} ${c.path} ${c.attribution}`),
    ['modified a/one.txt outside'],
  );
  let ws = db.prepare('SELECT tree_sha256, tree_files FROM workspaces WHERE workspace = ?').get(root) as {
    tree_sha256: string | null;
    tree_files: number;
  };
  assert.equal(ws.tree_sha256, null);
  assert.equal(second.snapshot.sha256, snapshotTree(root).sha256); // lazily computed, exact
  db.exec('BEGIN IMMEDIATE');
  const third = observeWorkspace(db, root, 'verify', now);
  db.exec('COMMIT');
  ws = db.prepare('SELECT tree_sha256, tree_files FROM workspaces WHERE workspace = ?').get(root) as {
    tree_sha256: string | null;
    tree_files: number;
  };
  assert.equal(ws.tree_sha256, snapshotTree(root).sha256);
  assert.equal(ws.tree_files, third.snapshot.files);
  const recorded = db.prepare('SELECT count(*) AS n FROM changes WHERE workspace = ?').get(root) as { n: number };
  assert.equal(recorded.n, 1);
});

test('awaitFileClock: a file written right after a Start is stamped after it (else its change would be "unknown")', () => {
  const home = tmpDirIn('latch-clock-');
  const work = tmpDirIn('latch-clock-work-');
  // File timestamps come from a coarse clock: a file written right after nowNs() is usually stamped
  // before it. Measured here too, so that the check below is not one that passes anyway.
  let lagging = 0;
  let late = 0;
  for (let i = 0; i < 300; i++) {
    const plain = nowNs();
    writeFileSync(path.join(work, `plain-${i}`), 'x');
    if (lstatSync(path.join(work, `plain-${i}`), { bigint: true }).ctimeNs <= plain) lagging++;
    const start = nowNs();
    awaitFileClock(home, start);
    writeFileSync(path.join(work, `after-${i}`), 'x');
    if (lstatSync(path.join(work, `after-${i}`), { bigint: true }).ctimeNs <= start) late++;
  }
  assert.equal(late, 0, 'every file written after awaitFileClock is stamped after the Start');
  assert.ok(lagging > 0, 'without it, files written right after nowNs() are stamped before it (a coarse clock)');
  // A change stamped after the Start is inside the attempt's window: attributed to it, not "unknown".
  const start = nowNs();
  awaitFileClock(home, start);
  writeFileSync(path.join(work, 'p.txt'), 'patched\n');
  const t = lstatSync(path.join(work, 'p.txt'), { bigint: true }).ctimeNs;
  assert.equal(attribute(t, [{ id: 'a', session_id: 's', start, end: null }]).attribution, 'attempt');
});

test("awaitFileClock: a symlink in the clock file's place is not followed (its target keeps its times)", () => {
  const home = tmpDirIn('latch-clock-');
  const work = tmpDirIn('latch-clock-work-');
  const target = path.join(work, 'precious.txt');
  writeFileSync(target, 'keep me\n');
  const before = lstatSync(target, { bigint: true });
  symlinkSync(target, path.join(home, 'clock'));
  awaitFileClock(home, nowNs(), 5);
  const after = lstatSync(target, { bigint: true });
  assert.equal(after.mtimeNs, before.mtimeNs);
  assert.equal(after.ctimeNs, before.ctimeNs);
  assert.equal(after.size, before.size);
});
