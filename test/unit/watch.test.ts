// The workspace watcher (src/watch/daemon.ts, a real process from dist/latch.cjs) and the observations
// it lets skip (src/tree/tree.ts with a watch hint): every hinted observation must report exactly
// what a full observation of the same tree reports, while stat-ing only what changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { CLOSE_REASON, isAlive } from '../../src/ledger/ledger.js';
import { procStat } from '../../src/base/proc.js';
import { MIGRATIONS } from '../../src/store/schema.js';
import { openStore, type Db } from '../../src/store/store.js';
import { observeTree, type TreeObservation } from '../../src/tree/observe-tree.js';
import { snapshotTree } from '../../src/tree/snapshot.js';
import { syncWatcher, WATCHER_NODE_FLAG } from '../../src/watch/client.js';
import { cliMain } from '../../src/cli.js';
import { EXIT } from '../../src/base/errors.js';
import { git, tmpDir } from '../helpers/git.js';
import { bash, payload, sandbox } from '../helpers/workspace.js';

const LATCH = path.resolve('dist', 'latch.cjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Watchers still running when this file ends are killed: children by their handle (only while they
// run), others (started by a hook) only while their pid still names the same process (pids wrap).
const children: ChildProcess[] = [];
const detached: { pid: number; start: string }[] = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of detached) if (isAlive(d)) process.kill(d.pid, 'SIGKILL');
});

function write(root: string, rel: string, content: string): void {
  const p = path.join(root, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
}

interface WatchRow {
  instance: string;
  pid: number;
  pid_start: string;
  state: string;
  reason: string | null;
}

function watcherRow(db: Db, root: string): WatchRow | undefined {
  return db.prepare('SELECT instance, pid, pid_start, state, reason FROM watchers WHERE workspace = ?').get(root) as
    | WatchRow
    | undefined;
}

async function waitFor<T>(what: string, fn: () => T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A store in a fresh LATCH_HOME, and a watcher process for root (ready when this resolves). */
async function watched(
  root: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ home: string; db: Db; child: ChildProcess }> {
  const home = path.join(tmpDir('latch-watch-home-'), 'state');
  const db = openStore(home, { create: true });
  const child = startWatcher(home, root, env);
  await waitFor('the watcher to be ready', () => watcherRow(db, root)?.state === 'ready');
  return { home, db, child };
}

function startWatcher(home: string, root: string, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, [LATCH, '__watch', root], {
    env: { ...process.env, LATCH_HOME: home, ...env },
    stdio: 'ignore',
  });
  children.push(child);
  return child;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

function memoryDb(): Database.Database {
  const db = new Database(':memory:');
  for (const m of MIGRATIONS) db.exec(m);
  return db;
}

function inTx<T>(db: Db, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    return fn();
  } finally {
    db.exec('COMMIT');
  }
}

/** Syncs with the watcher and observes with its journal (what a Close does). */
function hinted(db: Db, home: string, root: string, full = false): TreeObservation {
  const sync = syncWatcher(db, home, root);
  return inTx(db, () => observeTree(root, db, { watch: sync && { ...sync, full } }));
}

function plain(db: Db, root: string): TreeObservation {
  return inTx(db, () => observeTree(root, db));
}

const summary = (o: TreeObservation): string[] => o.delta.map((d) => `${d.change} ${d.path}`);

function makeRepo(): string {
  const root = tmpDir('latch-watch-');
  git(root, 'init', '-q', '-b', 'main');
  write(root, 'a/one.txt', 'one\n');
  write(root, 'a/two.txt', 'two\n');
  write(root, 'b/c/three.txt', 'three\n');
  write(root, 'b/c/d/four.txt', 'four\n');
  write(root, '.gitignore', '*.log\nbuild/\n');
  write(root, 'build/out.bin', 'ignored\n');
  write(root, 'keep.log', 'ignored log\n');
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'init');
  write(root, 'notes.md', 'untracked, not ignored\n');
  return root;
}

type Step = { name: string; change: (root: string) => void };

const STEPS: Step[] = [
  { name: 'content change', change: (r) => write(r, 'a/one.txt', 'ONE!\n') },
  { name: 'same-size rewrite', change: (r) => write(r, 'a/two.txt', 'TWO\n') },
  { name: 'chmod +x', change: (r) => chmodSync(path.join(r, 'a/one.txt'), 0o755) },
  { name: 'new file in an existing directory', change: (r) => write(r, 'b/c/new.txt', 'new\n') },
  { name: 'file renamed', change: (r) => renameSync(path.join(r, 'a/two.txt'), path.join(r, 'a/deux.txt')) },
  { name: 'file deleted', change: (r) => unlinkSync(path.join(r, 'b/c/new.txt')) },
  {
    name: 'new directory tree written at once',
    change: (r) => (write(r, 'n/m/o/p.txt', 'p\n'), write(r, 'n/m/q.txt', 'q\n')),
  },
  { name: 'a file in the new tree changes (its watch exists now)', change: (r) => write(r, 'n/m/o/p.txt', 'P!\n') },
  { name: 'directory renamed', change: (r) => renameSync(path.join(r, 'b'), path.join(r, 'bee')) },
  { name: 'a file below the renamed directory changes', change: (r) => write(r, 'bee/c/d/four.txt', 'FOUR\n') },
  { name: 'directory removed', change: (r) => rmSync(path.join(r, 'n'), { recursive: true }) },
  {
    name: 'directory replaced by a symlink',
    change: (r) => (rmSync(path.join(r, 'bee/c/d'), { recursive: true }), symlinkSync('..', path.join(r, 'bee/c/d'))),
  },
  {
    name: 'file replaced by a directory',
    change: (r) => (unlinkSync(path.join(r, 'notes.md')), write(r, 'notes.md/inner.txt', 'i\n')),
  },
  {
    name: '.gitignore edited: an ignored file appears',
    change: (r) => writeFileSync(path.join(r, '.gitignore'), 'build/\n'),
  },
  { name: 'nested .gitignore hides a file', change: (r) => write(r, 'notes.md/.gitignore', 'inner.txt\n') },
  { name: 'git add -f of an ignored file', change: (r) => git(r, 'add', '-f', 'build/out.bin') },
  { name: 'write inside an ignored directory', change: (r) => write(r, 'build/more.bin', 'm\n') },
  { name: '.git/info/exclude edited', change: (r) => write(r, '.git/info/exclude', 'keep.log\n') },
  {
    name: 'a hard link to a tracked file is added',
    change: (r) => linkSync(path.join(r, 'a/one.txt'), path.join(r, 'bee/alias.txt')),
  },
  { name: 'nothing', change: () => undefined },
];

/** Applies each step, then observes with the journal and without: same deltas, same entries. */
function checkSteps(root: string, home: string, db: Db, steps: Step[]): void {
  const full = memoryDb();
  // First sync: no position yet, so everything is stat'ed and the position is taken.
  const first = hinted(db, home, root);
  assert.equal(first.mode, 'full');
  plain(full, root);
  const idle = hinted(db, home, root);
  assert.equal(idle.mode, 'hinted');
  assert.deepEqual(summary(idle), []);
  assert.equal(idle.statted, 0, "nothing changed: nothing stat'ed");
  for (const step of steps) {
    step.change(root);
    const a = hinted(db, home, root);
    const b = plain(full, root);
    assert.equal(a.mode, 'hinted', step.name);
    assert.deepEqual(summary(a), summary(b), step.name);
    const fresh = snapshotTree(root);
    assert.deepEqual(a.snapshot.entries, fresh.entries, step.name);
    assert.equal(a.snapshot.files, fresh.files, step.name);
    if (!a.listingReused) continue;
    // Stat'ed: what the step touched (at most 3 paths here) and the listed paths with no cached entry
    // (tracked files gone from disk are listed by git and looked at every time).
    const listed = new Set(
      git(root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard').split('\0').filter(Boolean),
    ).size;
    assert.ok(a.statted <= 3 + (listed - fresh.files), `${step.name}: ${a.statted} of ${listed} paths stat'ed`);
  }
}

test('watcher: every hinted observation equals a full one, and stats only what changed', async () => {
  const root = makeRepo();
  const { home, db, child } = await watched(root);
  checkSteps(root, home, db, STEPS);
  child.kill('SIGTERM');
  assert.equal(await exited(child), 0);
  assert.equal(watcherRow(db, root), undefined, 'a stopped watcher removes its row');
});

test('watcher: ignored directories are not watched until they hold something the listing needs', async () => {
  const root = makeRepo();
  write(root, '.gitignore', '*.log\nbuild/\nnode_modules/\n');
  for (let i = 0; i < 40; i++) write(root, `node_modules/pkg${i}/lib/index.js`, `module.exports = ${i};\n`);
  git(root, 'add', '.gitignore');
  const { home, db, child } = await watched(root);
  const dirs = () => (db.prepare('SELECT dirs FROM watchers WHERE workspace = ?').get(root) as { dirs: number }).dirs;
  const watchedAtStart = dirs();
  assert.ok(watchedAtStart < 20, `${watchedAtStart} directories watched (node_modules alone has 81)`);
  checkSteps(root, home, db, [
    { name: 'write inside the ignored tree', change: (r) => write(r, 'node_modules/pkg1/lib/index.js', 'changed\n') },
    { name: 'a new ignored directory tree', change: (r) => write(r, 'build/deep/er/x.bin', 'x\n') },
    {
      name: 'git add -f of a file in the ignored tree',
      change: (r) => git(r, 'add', '-f', 'node_modules/pkg2/lib/index.js'),
    },
    {
      name: 'that tracked file is edited (its directory is watched now)',
      change: (r) => write(r, 'node_modules/pkg2/lib/index.js', 'edited\n'),
    },
    { name: 'the ignore rule goes: the tree appears', change: (r) => write(r, '.gitignore', '*.log\n') },
    {
      name: 'a file in the no longer ignored tree is edited',
      change: (r) => write(r, 'node_modules/pkg3/lib/index.js', 'edited too\n'),
    },
  ]);
  assert.ok(dirs() > 81, 'the unignored tree is watched');
  child.kill('SIGTERM');
  await exited(child);
});

/** Random edits to a small tree, observed with the watcher's journal and without: the same deltas. */
test('watcher: property: random edits, hinted deltas equal full deltas', async () => {
  const names = ['a', 'b', 'c'];
  const rel = fc.tuple(
    fc.constantFrom(...names),
    fc.option(fc.constantFrom(...names), { nil: undefined }),
    fc.constantFrom('x.txt', 'y.txt', 'z'),
  );
  const op = fc.oneof(
    fc.record({ kind: fc.constant('write' as const), at: rel, text: fc.string({ maxLength: 6 }) }),
    fc.record({ kind: fc.constant('rm' as const), at: rel }),
    fc.record({ kind: fc.constant('rmdir' as const), dir: fc.constantFrom(...names) }),
    fc.record({ kind: fc.constant('mvdir' as const), from: fc.constantFrom(...names), to: fc.constantFrom(...names) }),
    fc.record({ kind: fc.constant('chmod' as const), at: rel }),
  );
  type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;
  const toPath = (t: [string, string | undefined, string]) => (t[1] ? `${t[0]}/${t[1]}/${t[2]}` : `${t[0]}/${t[2]}`);
  const apply = (root: string, o: Op): void => {
    try {
      switch (o.kind) {
        case 'write':
          write(root, toPath(o.at), o.text);
          break;
        case 'rm':
          rmSync(path.join(root, toPath(o.at)), { recursive: true, force: true, maxRetries: 5 });
          break;
        case 'rmdir':
          rmSync(path.join(root, o.dir), { recursive: true, force: true, maxRetries: 5 });
          break;
        case 'mvdir':
          if (o.from !== o.to) {
            rmSync(path.join(root, o.to), { recursive: true, force: true, maxRetries: 5 });
            renameSync(path.join(root, o.from), path.join(root, o.to));
          }
          break;
        case 'chmod':
          chmodSync(path.join(root, toPath(o.at)), 0o755);
          break;
      }
    } catch {
      /* the path is not there (or is a directory / a file in the way): the op is a no-op */
    }
  };
  let hintedRuns = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 5 }),
      fc.boolean(),
      async (batches, isGit) => {
        const root = tmpDir('latch-watch-prop-');
        if (isGit) git(root, 'init', '-q');
        write(root, 'a/x.txt', 'start\n');
        const { home, db, child } = await watched(root);
        const full = memoryDb();
        try {
          hinted(db, home, root);
          inTx(full, () => observeTree(root, full, { isGit }));
          for (const batch of batches) {
            for (const o of batch) apply(root, o);
            const a = hinted(db, home, root);
            const b = inTx(full, () => observeTree(root, full, { isGit }));
            if (a.mode === 'hinted') hintedRuns++;
            assert.deepEqual(summary(a), summary(b));
            assert.equal(a.snapshot.sha256, snapshotTree(root, { isGit }).sha256);
          }
        } finally {
          child.kill('SIGTERM');
          await exited(child);
          db.close();
        }
      },
    ),
    { numRuns: Number(process.env.LATCH_WATCH_RUNS ?? 12) },
  );
  assert.ok(hintedRuns > 0, 'some observations were hinted');
});

test('watcher: one per workspace; it exits when the workspace goes away', async () => {
  const root = makeRepo();
  const { db, child } = await watched(root);
  const before = watcherRow(db, root)!;
  const second = startWatcher(path.dirname(db.name), root);
  assert.equal(await exited(second), 0, 'a second watcher for the same workspace leaves at once');
  assert.equal(watcherRow(db, root)!.instance, before.instance);
  rmSync(root, { recursive: true, force: true, maxRetries: 5 });
  assert.equal(await exited(child), 0);
  assert.equal(watcherRow(db, root), undefined);
});

test('watcher: too many directories: unavailable, hooks observe everything and do not restart it at once', async () => {
  const root = makeRepo();
  const home = path.join(tmpDir('latch-watch-home-'), 'state');
  const db = openStore(home, { create: true });
  const child = startWatcher(home, root, { LATCH_WATCH_MAX_DIRS: '2' });
  assert.equal(await exited(child), 0);
  const row = watcherRow(db, root)!;
  assert.equal(row.state, 'unavailable');
  assert.match(row.reason ?? '', /more than 2 directories/);
  assert.equal(syncWatcher(db, home, root), null);
  await sleep(300);
  assert.equal(watcherRow(db, root)!.pid, row.pid, 'no new watcher was started');
  assert.equal(hinted(db, home, root).mode, 'full');
});

test('watcher: past the bound while watching (a new tree, an ignore rule gone): it gives up and its process ends', async () => {
  for (const grow of [
    (root: string) => {
      for (let i = 0; i < 40; i++) mkdirSync(path.join(root, 'grown', `d${i}`, 'sub'), { recursive: true });
    },
    // node_modules/p*/ are no longer ignored (one holds a tracked file, so each is ignored on its own)
    (root: string) => (git(root, 'add', '-f', 'node_modules/p2/lib/x.js'), write(root, '.gitignore', '*.log\n')),
  ]) {
    const root = makeRepo();
    for (let i = 0; i < 40; i++) write(root, `node_modules/p${i}/lib/x.js`, 'x\n');
    write(root, '.gitignore', '*.log\nbuild/\nnode_modules/\n');
    const { db, child } = await watched(root, { LATCH_WATCH_MAX_DIRS: '30' });
    grow(root);
    assert.equal(await Promise.race([exited(child), sleep(15_000).then(() => 'still running')]), 0);
    const row = watcherRow(db, root)!;
    assert.equal(row.state, 'unavailable');
    assert.match(row.reason ?? '', /more than 30 directories/);
  }
});

test('watcher: started for a workspace that is already gone, it leaves without writing to the store', async () => {
  // A hook may start a watcher for a temp workspace that is removed before the watcher runs.
  const root = makeRepo();
  const home = path.join(tmpDir('latch-watch-home-'), 'state');
  const db = openStore(home, { create: true });
  rmSync(root, { recursive: true, force: true });
  // data_version changes when another connection commits to the database.
  const version = () => db.pragma('data_version', { simple: true }) as number;
  const before = version();
  const child = startWatcher(home, root);
  assert.equal(await Promise.race([exited(child), sleep(15_000).then(() => 'still running')]), 1);
  assert.equal(version(), before, 'the watcher committed nothing to the store');
  assert.equal(watcherRow(db, root), undefined);
  db.close();
});

test('watcher: killed -> the next sync starts a new one; its first observation is full, then hinted', async () => {
  const root = makeRepo();
  const { home, db, child } = await watched(root);
  hinted(db, home, root);
  assert.equal(hinted(db, home, root).mode, 'hinted');
  const old = watcherRow(db, root)!;
  child.kill('SIGKILL');
  await exited(child);
  write(root, 'a/one.txt', 'changed while no watcher ran\n');
  assert.equal(syncWatcher(db, home, root), null, 'a dead watcher is not synced with');
  const fresh = await waitFor('a new watcher', () => {
    const r = watcherRow(db, root);
    return r && r.instance !== old.instance && r.state === 'ready' ? r : undefined;
  });
  detached.push({ pid: fresh.pid, start: fresh.pid_start });
  const o = hinted(db, home, root);
  assert.equal(o.mode, 'full', "another instance: everything is stat'ed");
  assert.deepEqual(summary(o), ['modified a/one.txt']);
  write(root, 'a/two.txt', 'and now\n');
  const o2 = hinted(db, home, root);
  assert.equal(o2.mode, 'hinted');
  assert.deepEqual(summary(o2), ['modified a/two.txt']);
  process.kill(fresh.pid, 'SIGTERM');
});

test('watcher: one that does not answer is given up after the timeout; the observation is full', async () => {
  const root = makeRepo();
  const { home, db, child } = await watched(root);
  hinted(db, home, root);
  child.kill('SIGSTOP');
  try {
    write(root, 'a/one.txt', 'while stopped\n');
    const t0 = Date.now();
    assert.equal(syncWatcher(db, home, root), null);
    assert.ok(Date.now() - t0 >= 1_500, 'waited for the answer first');
    const o = hinted(db, home, root); // no sync -> full
    assert.equal(o.mode, 'full');
    assert.deepEqual(summary(o), ['modified a/one.txt']);
  } finally {
    child.kill('SIGCONT');
  }
  child.kill('SIGTERM');
  await exited(child);
});

test('watcher: a journal entry that says coverage was lost makes the next observation full', async () => {
  const root = makeRepo();
  const { home, db, child } = await watched(root);
  hinted(db, home, root);
  const row = db.prepare('SELECT instance, flushed_seq FROM watchers WHERE workspace = ?').get(root) as {
    instance: string;
    flushed_seq: number;
  };
  write(root, 'a/one.txt', 'x\n');
  // What the watcher writes when a watch fails or its pending set overflows (its next flush has this seq).
  db.prepare('INSERT INTO watch_journal (workspace, instance, seq, path, kind) VALUES (?, ?, ?, NULL, ?)').run(
    root,
    row.instance,
    row.flushed_seq + 1,
    'r',
  );
  const o = hinted(db, home, root);
  assert.equal(o.mode, 'full');
  assert.deepEqual(summary(o), ['modified a/one.txt']);
  child.kill('SIGTERM');
  await exited(child);
});

/** One hook as a real process (dist/latch.cjs), as Codex runs it. */
function hookProcess(env: NodeJS.ProcessEnv, p: Record<string, unknown>): string {
  const r = spawnSync(process.execPath, [LATCH, 'hook', 'codex'], { input: JSON.stringify(p), env, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('hooks: a Close is observed by the ready watcher, without it (or when it stalls) by the hook; all attribute the change to the call', async () => {
  const sb = sandbox();
  try {
    const closes: string[] = [];
    const step = (name: string, file: string) => {
      const pre = bash(sb, `echo ${name} > ${file}`, { tool_use_id: name });
      assert.equal(hookProcess(sb.env, pre), '', 'allowed');
      writeFileSync(path.join(sb.work, file), `${name}\n`);
      hookProcess(sb.env, payload('post-tool-use-bash', sb, { tool_use_id: name, tool_input: pre.tool_input }));
      const db = openStore(sb.home, { create: false });
      try {
        const a = db.prepare('SELECT state, end_reason FROM attempts WHERE id = ?').get(`S/${name}`) as {
          state: string;
          end_reason: string;
        };
        const c = db
          .prepare('SELECT attribution, attempt_id FROM changes WHERE path = ? ORDER BY id DESC')
          .get(file) as { attribution: string; attempt_id: string | null };
        assert.equal(a.state, 'closed');
        closes.push(a.end_reason);
        assert.ok(c.attribution === 'attempt' || c.attribution === 'unknown', `${name}: ${c.attribution}`);
        if (c.attribution === 'attempt') assert.equal(c.attempt_id, `S/${name}`);
      } finally {
        db.close();
      }
    };
    const db = openStore(sb.home, { create: false });
    step('call_1', 'one.txt'); // the first tracked call takes the baseline and starts the watcher
    const w = await waitFor('the watcher', () => {
      const r = watcherRow(db, sb.work);
      return r?.state === 'ready' ? r : undefined;
    });
    detached.push({ pid: w.pid, start: w.pid_start });
    // Started by the hook with a small young generation (its private memory, docs/benchmarks.md),
    // which makes V8 reject the hooks' code caches: it must not write its own over them.
    assert.ok(readFileSync(`/proc/${w.pid}/cmdline`, 'utf8').split('\0').includes(WATCHER_NODE_FLAG));
    assert.ok(readFileSync(`/proc/${w.pid}/environ`, 'utf8').split('\0').includes('LATCH_WRITE_CODE_CACHE=0'));
    step('call_2', 'two.txt');
    const t3 = Date.now();
    step('call_3', 'three.txt');
    // The same call with a watcher that answers, under whatever load the machine has now.
    const answered = Date.now() - t3;
    // A watcher that does not answer: the hook waits out one request (5 s), not a second sync too
    // (that would be 10 s more than an answered call; the line is drawn half-way, at 7.5 s).
    process.kill(w.pid, 'SIGSTOP');
    const t0 = Date.now();
    step('call_4', 'four.txt');
    const waited = Date.now() - t0;
    process.kill(w.pid, 'SIGCONT');
    assert.ok(
      waited >= 5_000 && waited < answered + 7_500,
      `the stalled watcher cost ${waited} ms (an answered call ${answered} ms)`,
    );
    process.kill(w.pid, 'SIGKILL');
    step('call_5', 'five.txt');
    db.close();
    // The first Close races the watcher the first hook started: under load it may already be ready.
    // Either way the change is the call's; the stalled and killed cases below show the hook's own path.
    assert.ok(
      ([CLOSE_REASON.hook, CLOSE_REASON.watcher] as string[]).includes(closes[0]!),
      `first close: ${closes[0]}`,
    );
    assert.deepEqual(closes.slice(1, 3), [CLOSE_REASON.watcher, CLOSE_REASON.watcher]);
    assert.equal(closes[3], CLOSE_REASON.hook, 'watcher stalled: the hook observed');
    assert.equal(closes[4], CLOSE_REASON.hook, 'watcher killed: the hook observed');
  } finally {
    sb.cleanup();
  }
});

test('latch watch: lists the watchers (text and --json), stops them; a wrong action is a usage error', async () => {
  const root = makeRepo();
  const { home, db, child } = await watched(root);
  let out = '';
  let err = '';
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (err += t),
    env: { ...process.env, LATCH_HOME: home },
    cwd: root,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  };
  assert.equal(await cliMain(['watch', '--json'], io), 0);
  const list = (JSON.parse(out) as { watchers: { workspace: string; alive: boolean; state: string }[] }).watchers;
  assert.deepEqual(
    list.map((w) => [w.workspace, w.alive, w.state]),
    [[root, true, 'ready']],
  );
  out = '';
  assert.equal(await cliMain(['watch'], io), 0);
  assert.match(out, /ready; pid \d+; \d+ directories watched/);
  out = '';
  assert.equal(await cliMain(['watch', 'stop'], io), 0);
  assert.match(out, /Stopped the watcher of/);
  assert.equal(await exited(child), 0);
  assert.equal(watcherRow(db, root), undefined);
  assert.equal(await cliMain(['watch', 'restart'], io), EXIT.usage);
  assert.match(err, /usage: latch watch/);
});

test('isAlive: a process that exited but was not reaped yet (a zombie) is not alive', () => {
  // The event loop is blocked below, so Node cannot reap the child: it stays a zombie meanwhile (as a
  // detached watcher does under a PID 1 that never reaps).
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  const me = { pid: child.pid!, start: 'unknown' };
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let zombie = false;
  for (let i = 0; i < 200 && !zombie; i++) {
    Atomics.wait(sleeper, 0, 0, 10);
    zombie = procStat(child.pid!)?.state === 'Z';
  }
  assert.ok(zombie, 'the child became a zombie');
  assert.equal(isAlive(me), false);
  assert.equal(isAlive({ pid: process.pid, start: 'unknown' }), true);
});
