import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { TREE_CACHE_SQL } from '../../src/store/schema.js';
import type { StatCacheEntry } from '../../src/tree/hash.js';
import {
  GITLINK_SHA256,
  canonicalListing,
  compareUtf8,
  decodeListing,
  diffTrees,
  encodeListing,
  type TreeEntry,
} from '../../src/tree/listing.js';
import { MemoryStatCache, snapshotTree, type StatCache } from '../../src/tree/snapshot.js';
import { git, tmpDir as tmpDirIn } from '../helpers/git.js';
import { snapshotPaths, SqliteStatCache } from '../helpers/tree-cache.js';

const tmpDir = (): string => tmpDirIn('latch-tree-');

function initRepo(dir = tmpDir()): string {
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'commit.gpgsign', 'false');
  return dir;
}

function write(root: string, rel: string, content: string | Buffer): void {
  const p = path.join(root, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
}

function sha256(s: string | Buffer): string {
  return createHash('sha256').update(s).digest('hex');
}

const HOUR_AGO = () => new Date(Date.now() - 3600_000);

/** Set every file's mtime well into the past so cached entries are not racily clean. */
function ageAll(root: string, entries: TreeEntry[]): void {
  const t = HOUR_AGO();
  for (const e of entries) {
    const p = path.join(root, e.path);
    if (e.mode === 120000) continue; // utimes follows symlinks; the link itself keeps its mtime
    if (e.mode === 160000) continue;
    utimesSync(p, t, t);
  }
}

function paths(entries: TreeEntry[]): string[] {
  return entries.map((e) => e.path);
}

const FILES: [string, string][] = [
  ['README.md', '# hi\n'],
  ['src/a.ts', 'export const a = 1;\n'],
  ['src/b/c.ts', 'export const c = 3;\n'],
  ['src/b/d.json', '{"d":4}\n'],
  ['z.txt', ''],
  ['ünïcødé/文件.txt', 'unicode\n'],
];

function build(root: string, order: [string, string][]): void {
  for (const [rel, content] of order) write(root, rel, content);
}

// ---------------------------------------------------------------------------

test('digest is stable across runs and independent of creation order (git and non-git)', () => {
  const r1 = initRepo();
  const r2 = initRepo();
  const p1 = tmpDir();
  const p2 = tmpDir();
  build(r1, FILES);
  build(r2, [...FILES].reverse());
  build(p1, [...FILES].reverse());
  build(p2, [FILES[3]!, FILES[0]!, FILES[5]!, FILES[1]!, FILES[4]!, FILES[2]!]);

  const a = snapshotTree(r1);
  const b = snapshotTree(r2);
  const c = snapshotTree(p1);
  const d = snapshotTree(p2);
  assert.equal(a.files, FILES.length);
  assert.equal(a.sha256, snapshotTree(r1).sha256);
  assert.equal(a.sha256, b.sha256);
  assert.equal(a.sha256, c.sha256);
  assert.equal(a.sha256, d.sha256);
  assert.match(a.sha256, /^[0-9a-f]{64}$/);

  // The digest is the sha256 of the canonical listing.
  assert.equal(a.sha256, sha256(canonicalListing(a.entries)));
  const readme = a.entries.find((e) => e.path === 'README.md')!;
  assert.deepEqual(readme, { path: 'README.md', mode: 100644, size: 5, sha256: sha256('# hi\n') });
  assert.ok(canonicalListing(a.entries).includes(`100644 5 ${sha256('# hi\n')}\tREADME.md\n`));

  // Entries are sorted by UTF-8 byte order.
  const sorted = [...paths(a.entries)].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.deepEqual(paths(a.entries), sorted);

  // Committing does not change the working-tree digest.
  git(r1, 'add', '-A');
  git(r1, 'commit', '-q', '-m', 'init');
  assert.equal(snapshotTree(r1).sha256, a.sha256);
});

test('content, mode, symlink target, add and delete change the digest and diffTrees reports them', () => {
  for (const useGit of [true, false]) {
    const root = useGit ? initRepo() : tmpDir();
    build(root, FILES);
    symlinkSync('src/a.ts', path.join(root, 'link'));
    const cache = new MemoryStatCache();
    const s0 = snapshotTree(root, { cache });
    const link = s0.entries.find((e) => e.path === 'link')!;
    assert.deepEqual(link, { path: 'link', mode: 120000, size: 8, sha256: sha256('src/a.ts') });
    const seen = new Set([s0.sha256]);
    let prev = s0;
    const step = (mutate: () => void, check: (d: ReturnType<typeof diffTrees>) => void): void => {
      mutate();
      const next = snapshotTree(root, { cache });
      assert.ok(!seen.has(next.sha256), `digest must change (git=${useGit})`);
      seen.add(next.sha256);
      // The cached result must equal an uncached one.
      assert.equal(next.sha256, snapshotTree(root).sha256);
      check(diffTrees(prev.entries, next.entries));
      prev = next;
    };

    // content (same size)
    step(
      () => writeFileSync(path.join(root, 'src/a.ts'), 'export const a = 2;\n'),
      (d) => {
        assert.deepEqual(d.added, []);
        assert.deepEqual(d.removed, []);
        assert.equal(d.modified.length, 1);
        assert.equal(d.modified[0]!.after.path, 'src/a.ts');
        assert.equal(d.modified[0]!.after.sha256, sha256('export const a = 2;\n'));
      },
    );
    // mode
    step(
      () => chmodSync(path.join(root, 'src/b/c.ts'), 0o755),
      (d) => {
        assert.equal(d.modified.length, 1);
        assert.equal(d.modified[0]!.before.mode, 100644);
        assert.equal(d.modified[0]!.after.mode, 100755);
        assert.equal(d.modified[0]!.after.sha256, d.modified[0]!.before.sha256);
      },
    );
    // symlink target
    step(
      () => {
        unlinkSync(path.join(root, 'link'));
        symlinkSync('src/b/c.ts', path.join(root, 'link'));
      },
      (d) => {
        assert.equal(d.modified.length, 1);
        assert.deepEqual(d.modified[0]!.after, { path: 'link', mode: 120000, size: 10, sha256: sha256('src/b/c.ts') });
      },
    );
    // add
    step(
      () => write(root, 'src/new/file.txt', 'new'),
      (d) => {
        assert.deepEqual(paths(d.added), ['src/new/file.txt']);
        assert.deepEqual(d.removed, []);
        assert.deepEqual(d.modified, []);
      },
    );
    // delete
    step(
      () => unlinkSync(path.join(root, 'README.md')),
      (d) => {
        assert.deepEqual(paths(d.removed), ['README.md']);
        assert.deepEqual(d.added, []);
        assert.deepEqual(d.modified, []);
      },
    );
    // file replaced by symlink with the same path
    step(
      () => {
        unlinkSync(path.join(root, 'z.txt'));
        symlinkSync('nowhere', path.join(root, 'z.txt'));
      },
      (d) => {
        assert.equal(d.modified.length, 1);
        assert.equal(d.modified[0]!.after.mode, 120000);
      },
    );
  }
});

test('git: ignored files excluded, untracked-not-ignored included, tracked-but-ignored kept', () => {
  const root = initRepo();
  write(root, '.gitignore', 'build/\n*.log\n!keep.log\n');
  write(root, 'tracked.log', 'tracked before the rule applied');
  git(root, 'add', '-f', 'tracked.log');
  write(root, 'src/index.ts', 'x');
  write(root, 'build/out.js', 'ignored');
  write(root, 'debug.log', 'ignored');
  write(root, 'keep.log', 'kept');
  write(root, 'notes/todo.md', 'untracked');
  write(root, 'sub/.gitignore', 'secret.txt\n');
  write(root, 'sub/secret.txt', 'ignored by nested .gitignore');
  write(root, 'sub/public.txt', 'ok');
  const s = snapshotTree(root);
  assert.deepEqual(paths(s.entries), [
    '.gitignore',
    'keep.log',
    'notes/todo.md',
    'src/index.ts',
    'sub/.gitignore',
    'sub/public.txt',
    'tracked.log',
  ]);
  assert.ok(!paths(s.entries).some((p) => p.startsWith('.git/')));

  // isGit:false on the same directory walks everything except .git
  const all = snapshotTree(root, { isGit: false });
  assert.ok(paths(all.entries).includes('build/out.js'));
  assert.ok(paths(all.entries).includes('debug.log'));
  assert.ok(!paths(all.entries).some((p) => p === '.git' || p.startsWith('.git/')));
});

test('git: tracked files deleted from disk are skipped; staged-and-modified files use the disk content', () => {
  const root = initRepo();
  write(root, 'a', 'a');
  write(root, 'b', 'b');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'x');
  unlinkSync(path.join(root, 'a'));
  write(root, 'b', 'bb');
  const s = snapshotTree(root);
  assert.deepEqual(s.entries, [{ path: 'b', mode: 100644, size: 2, sha256: sha256('bb') }]);
});

test('git: works in an empty repository and from a subdirectory root', () => {
  const root = initRepo();
  write(root, 'x/y.txt', 'y');
  write(root, 'x/z.txt', 'z');
  write(root, 'top.txt', 't');
  assert.deepEqual(paths(snapshotTree(root).entries), ['top.txt', 'x/y.txt', 'x/z.txt']);
  // A subdirectory root lists paths relative to that subdirectory.
  assert.deepEqual(paths(snapshotTree(path.join(root, 'x')).entries), ['y.txt', 'z.txt']);
});

test('git: nested repositories and gitlinks are recorded as mode 160000 without content hash', () => {
  const root = initRepo();
  write(root, 'a.txt', 'a');
  // untracked nested repository -> `git ls-files --others` reports "nested/"
  const nested = path.join(root, 'nested');
  mkdirSync(nested);
  initRepo(nested);
  write(nested, 'inner.txt', 'inner');
  // a gitlink in the index (what a submodule looks like), directory present on disk
  const sub = path.join(root, 'vendor', 'sub');
  mkdirSync(sub, { recursive: true });
  initRepo(sub);
  write(sub, 'lib.txt', 'lib');
  git(sub, 'add', '-A');
  git(sub, 'commit', '-q', '-m', 'sub');
  const subHead = git(sub, 'rev-parse', 'HEAD');
  git(root, 'update-index', '--add', '--cacheinfo', `160000,${subHead},vendor/sub`);

  const s = snapshotTree(root);
  assert.deepEqual(s.entries, [
    { path: 'a.txt', mode: 100644, size: 1, sha256: sha256('a') },
    { path: 'nested', mode: 160000, size: 0, sha256: GITLINK_SHA256 },
    { path: 'vendor/sub', mode: 160000, size: 0, sha256: GITLINK_SHA256 },
  ]);
  // Content inside the nested repositories does not influence the digest.
  write(nested, 'inner.txt', 'changed');
  write(sub, 'lib.txt', 'changed');
  assert.equal(snapshotTree(root).sha256, s.sha256);
  // ... but removing one does.
  rmSync(nested, { recursive: true, force: true, maxRetries: 5 });
  assert.notEqual(snapshotTree(root).sha256, s.sha256);
});

test('git: a tracked directory replaced by a symlink is not followed', () => {
  const outside = tmpDir();
  write(outside, 'b.txt', 'outside content');
  const root = initRepo();
  write(root, 'a/b.txt', 'inside');
  write(root, 'keep.txt', 'k');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'x');
  rmSync(path.join(root, 'a'), { recursive: true });
  symlinkSync(outside, path.join(root, 'a'));
  const s = snapshotTree(root);
  assert.deepEqual(
    s.entries.map((e) => [e.path, e.mode]),
    [
      ['a', 120000],
      ['keep.txt', 100644],
    ],
  );
  assert.deepEqual(
    snapshotPaths(root, ['a/b.txt', 'keep.txt']).map((e) => e.path),
    ['keep.txt'],
  );
});

test('non-git: .git excluded, symlinked directories recorded as links and not followed, empty dirs ignored', () => {
  const outside = tmpDir();
  write(outside, 'secret.txt', 'outside');
  const root = tmpDir();
  write(root, 'a/b/c.txt', 'c');
  write(root, '.git/config', 'not a real repo');
  write(root, 'deep/.git/HEAD', 'nested git dir');
  write(root, 'deep/file', 'f');
  mkdirSync(path.join(root, 'empty/dir'), { recursive: true });
  symlinkSync(outside, path.join(root, 'outlink'));
  symlinkSync('a', path.join(root, 'inlink'));
  const s = snapshotTree(root, { isGit: false });
  assert.deepEqual(paths(s.entries), ['a/b/c.txt', 'deep/file', 'inlink', 'outlink']);
  const outlink = s.entries.find((e) => e.path === 'outlink')!;
  assert.equal(outlink.mode, 120000);
  assert.equal(outlink.sha256, sha256(outside));
});

test('executable bit follows the owner-execute bit only', () => {
  const root = tmpDir();
  write(root, 'u', 'x');
  write(root, 'g', 'x');
  chmodSync(path.join(root, 'u'), 0o744);
  chmodSync(path.join(root, 'g'), 0o654);
  const s = snapshotTree(root, { isGit: false });
  assert.deepEqual(
    s.entries.map((e) => [e.path, e.mode]),
    [
      ['g', 100644],
      ['u', 100755],
    ],
  );
});

test('large files are stream-hashed correctly', () => {
  const root = tmpDir();
  const big = randomBytes(3 * 1024 * 1024 + 17);
  write(root, 'big.bin', big);
  write(root, 'exact.bin', Buffer.alloc(1024 * 1024, 7));
  const s = snapshotTree(root, { isGit: false });
  assert.deepEqual(s.entries[0], { path: 'big.bin', mode: 100644, size: big.length, sha256: sha256(big) });
  assert.equal(s.entries[1]!.sha256, sha256(readFileSync(path.join(root, 'exact.bin'))));
});

// ---------------------------------------------------------------------------
// Stat cache

for (const kind of ['memory', 'sqlite'] as const) {
  test(`stat cache (${kind}): repeat snapshot of an unchanged, aged tree hashes nothing`, () => {
    const root = initRepo();
    build(root, FILES);
    symlinkSync('README.md', path.join(root, 'lnk'));
    const db = kind === 'sqlite' ? new Database(':memory:') : undefined;
    db?.exec(TREE_CACHE_SQL);
    const cache: StatCache = db ? new SqliteStatCache(db) : new MemoryStatCache();

    const uncached = snapshotTree(root);
    ageAll(root, uncached.entries);
    const soon = new Date(Date.now() + 5000);
    lutimesSync(path.join(root, 'lnk'), soon, soon); // deterministic: the link is racily clean
    const first = snapshotTree(root, { cache });
    assert.equal(first.stats.hashed, FILES.length + 1);
    assert.equal(first.stats.reused, 0);

    // The symlink's mtime is not older than its cache stamp, so it is re-hashed on the next run.
    const second = snapshotTree(root, { cache });
    assert.equal(second.sha256, first.sha256);
    assert.equal(second.stats.hashed, 1);
    assert.equal(second.stats.racy, 1);
    assert.equal(second.stats.reused, FILES.length);

    // Once the link's cache entry is stamped after its mtime (>= 1 s later) it is reused too;
    // simulate the passage of time by moving its cachedAt forward via the store.
    if (db) {
      db.prepare("UPDATE tree_cache SET cached_at_ns = '99999999999999999999' WHERE path = 'lnk'").run();
    } else {
      const m = cache.load(path.resolve(root));
      const e = m.get('lnk')!;
      cache.save(path.resolve(root), [{ ...e, cachedAtNs: '99999999999999999999' }], []);
    }
    const third = snapshotTree(root, { cache });
    assert.deepEqual(third.stats, { hashed: 0, reused: FILES.length + 1, racy: 0 });
    assert.equal(third.sha256, first.sha256);
    assert.deepEqual(third.entries, uncached.entries);

    // Deleted files disappear from the cache.
    unlinkSync(path.join(root, 'z.txt'));
    const fourth = snapshotTree(root, { cache });
    assert.equal(fourth.stats.hashed, 0);
    assert.ok(!cache.load(path.resolve(root)).has('z.txt'));
    assert.equal(cache.load(path.resolve(root)).size, FILES.length);
    db?.close();
  });
}

test('stat cache: files with a recent mtime are racily clean and re-hashed, then become clean', () => {
  const root = tmpDir();
  write(root, 'f', 'aaaa');
  const recent = new Date(Date.now() + 2000); // "just written" (+ slack so a slow machine cannot age it)
  utimesSync(path.join(root, 'f'), recent, recent);
  const cache = new MemoryStatCache();
  const first = snapshotTree(root, { cache, isGit: false });
  assert.equal(first.stats.hashed, 1);
  // mtime >= cachedAt, so the next run must not trust the stat.
  const second = snapshotTree(root, { cache, isGit: false });
  assert.deepEqual(second.stats, { hashed: 1, reused: 0, racy: 1 });
  // Age the file: mtime changes (and ctime), rehash once, then clean.
  const t = HOUR_AGO();
  utimesSync(path.join(root, 'f'), t, t);
  const third = snapshotTree(root, { cache, isGit: false });
  assert.deepEqual(third.stats, { hashed: 1, reused: 0, racy: 0 });
  const fourth = snapshotTree(root, { cache, isGit: false });
  assert.deepEqual(fourth.stats, { hashed: 0, reused: 1, racy: 0 });
});

test('stat cache: same-size change with the same mtime as a racy entry is detected', () => {
  const root = tmpDir();
  const f = path.join(root, 'f');
  write(root, 'f', 'aaaa');
  const stamp = new Date(Math.floor(Date.now() / 1000) * 1000 + 5000); // a few seconds in the future: racy
  utimesSync(f, stamp, stamp);
  const cache = new MemoryStatCache();
  const first = snapshotTree(root, { cache, isGit: false });
  writeFileSync(f, 'bbbb');
  utimesSync(f, stamp, stamp);
  assert.equal(lstatSync(f, { bigint: true }).mtimeNs, BigInt(stamp.getTime()) * 1_000_000n);
  const second = snapshotTree(root, { cache, isGit: false });
  assert.equal(second.entries[0]!.sha256, sha256('bbbb'));
  assert.notEqual(second.sha256, first.sha256);
  assert.deepEqual(
    diffTrees(first.entries, second.entries).modified.map((m) => m.after.path),
    ['f'],
  );
});

test('stat cache: a fully matching stat is trusted unless racy (isolated with a forged cache entry)', () => {
  // The kernel changes ctime on every write, so a change with an identical stat
  // cannot be produced from userspace; forge the cache instead: an entry whose
  // stat matches the file exactly but whose hash is wrong.
  const root = path.resolve(tmpDir());
  const f = path.join(root, 'f');
  write(root, 'f', 'real');
  const old = HOUR_AGO();
  utimesSync(f, old, old);
  const st = lstatSync(f, { bigint: true });
  const forged = (cachedAtNs: bigint): StatCacheEntry => ({
    path: 'f',
    dev: st.dev.toString(),
    ino: st.ino.toString(),
    size: Number(st.size),
    mtimeNs: st.mtimeNs.toString(),
    ctimeNs: st.ctimeNs.toString(),
    mode: 100644,
    sha256: sha256('stale'),
    cachedAtNs: cachedAtNs.toString(),
  });

  // Cached after the mtime: trusted without reading (proves no read happens).
  const c1 = new MemoryStatCache();
  c1.save(root, [forged(st.mtimeNs + 1n)], []);
  const s1 = snapshotTree(root, { cache: c1, isGit: false });
  assert.deepEqual(s1.stats, { hashed: 0, reused: 1, racy: 0 });
  assert.equal(s1.entries[0]!.sha256, sha256('stale'));

  // Cached at exactly the mtime (or before): racily clean -> re-hashed -> real content.
  for (const at of [st.mtimeNs, st.mtimeNs - 1n]) {
    const c2 = new MemoryStatCache();
    c2.save(root, [forged(at)], []);
    const s2 = snapshotTree(root, { cache: c2, isGit: false });
    assert.deepEqual(s2.stats, { hashed: 1, reused: 0, racy: 1 });
    assert.equal(s2.entries[0]!.sha256, sha256('real'));
    // The re-hash refreshed the cache entry; the file is old, so it is now clean.
    const s3 = snapshotTree(root, { cache: c2, isGit: false });
    assert.deepEqual(s3.stats, { hashed: 0, reused: 1, racy: 0 });
    assert.equal(s3.entries[0]!.sha256, sha256('real'));
  }

  // Any stat field differing forces a re-hash.
  for (const patch of [{ size: 5 }, { ino: '1' }, { dev: '1' }, { ctimeNs: '1' }, { mtimeNs: '1' }, { mode: 100755 }]) {
    const c3 = new MemoryStatCache();
    c3.save(root, [{ ...forged(st.mtimeNs + 1n), ...patch }], []);
    const s = snapshotTree(root, { cache: c3, isGit: false });
    assert.equal(s.stats.hashed, 1, JSON.stringify(patch));
    assert.equal(s.stats.racy, 0);
    assert.equal(s.entries[0]!.sha256, sha256('real'));
  }
});

test('SqliteStatCache: round trip, per-root isolation, removal, loadPaths', () => {
  const db = new Database(':memory:');
  db.exec(TREE_CACHE_SQL);
  const c = new SqliteStatCache(db);
  const e = (p: string, sha = 'a'.repeat(64)): StatCacheEntry => ({
    path: p,
    dev: '18446744073709551615',
    ino: '123456789012345678',
    size: 42,
    mtimeNs: '1700000000123456789',
    ctimeNs: '1700000000987654321',
    mode: 100755,
    sha256: sha,
    cachedAtNs: '1700000001000000000',
  });
  c.save('/r1', [e('a'), e('b/c'), e('d')], []);
  c.save('/r2', [e('a', 'b'.repeat(64))], []);
  const m1 = c.load('/r1');
  assert.deepEqual([...m1.keys()].sort(), ['a', 'b/c', 'd']);
  assert.deepEqual(m1.get('b/c'), e('b/c'));
  assert.equal(c.load('/r2').get('a')!.sha256, 'b'.repeat(64));
  c.save('/r1', [e('a', 'c'.repeat(64))], ['d']);
  assert.deepEqual([...c.load('/r1').keys()].sort(), ['a', 'b/c']);
  assert.equal(c.load('/r1').get('a')!.sha256, 'c'.repeat(64));
  assert.deepEqual([...c.loadPaths('/r1', ['a', 'zzz']).keys()], ['a']);
  assert.equal(c.load('/nope').size, 0);
  db.close();
});

test('SqliteStatCache.save is atomic (one transaction)', () => {
  const db = new Database(':memory:');
  db.exec(TREE_CACHE_SQL);
  const c = new SqliteStatCache(db);
  const good: StatCacheEntry = {
    path: 'ok',
    dev: '1',
    ino: '2',
    size: 1,
    mtimeNs: '3',
    ctimeNs: '4',
    mode: 100644,
    sha256: 'a'.repeat(64),
    cachedAtNs: '5',
  };
  const bad = { ...good, path: 'bad', sha256: null } as unknown as StatCacheEntry; // violates NOT NULL
  assert.throws(() => c.save('/r', [good, bad], []));
  assert.equal(c.load('/r').size, 0);
  db.close();
});

// ---------------------------------------------------------------------------
// snapshotPaths

test('snapshotPaths returns entries for just the given paths, omitting missing ones', () => {
  const root = initRepo();
  build(root, FILES);
  symlinkSync('README.md', path.join(root, 'lnk'));
  const full = snapshotTree(root);
  const byPath = new Map(full.entries.map((e) => [e.path, e]));
  const cache = new MemoryStatCache();
  const got = snapshotPaths(
    root,
    ['src/b/c.ts', 'missing.txt', 'README.md', 'lnk', './README.md', 'src/b', '../etc/passwd'],
    cache,
  );
  assert.deepEqual(got, [
    byPath.get('README.md'),
    byPath.get('lnk'),
    { path: 'src/b', mode: 160000, size: 0, sha256: GITLINK_SHA256 },
    byPath.get('src/b/c.ts'),
  ]);

  // Uses and maintains the cache for those paths only.
  ageAll(root, full.entries);
  snapshotPaths(root, ['README.md', 'src/a.ts'], cache);
  const rootAbs = path.resolve(root);
  assert.deepEqual([...cache.load(rootAbs).keys()].sort(), ['README.md', 'lnk', 'src/a.ts', 'src/b/c.ts']);
  const again = snapshotTree(root, { cache });
  assert.equal(again.sha256, snapshotTree(root).sha256);
  assert.ok(again.stats.reused >= 2);

  unlinkSync(path.join(root, 'README.md'));
  assert.deepEqual(snapshotPaths(root, ['README.md'], cache), []);
  assert.ok(!cache.load(rootAbs).has('README.md'));
});

// ---------------------------------------------------------------------------
// Listing encoding, ordering, diff (property based)

const pathSeg = fc.oneof(
  fc.string({ minLength: 1, maxLength: 8 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }),
  fc.constantFrom('"', '"q', 'a\nb', 'tab\there', 'back\\slash', ' sp ', '\u0000', 'é', '😀', '\uffff'),
);
const arbPath = fc
  .array(pathSeg, { minLength: 1, maxLength: 4 })
  .map((segs) => segs.join('/'))
  .filter((p) => p.length > 0);
const arbEntry = fc
  .record({
    path: arbPath,
    mode: fc.constantFrom<number>(100644, 100755, 120000, 160000),
    size: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
    sha256: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex')),
  })
  .map((e): TreeEntry => ({ ...e }));
const arbEntries = fc.uniqueArray(arbEntry, { selector: (e) => e.path, maxLength: 40 });

function byteSorted(entries: TreeEntry[]): TreeEntry[] {
  return [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
}

test('encodeListing/decodeListing round-trip (property)', () => {
  fc.assert(
    fc.property(arbEntries, (entries) => {
      const buf = encodeListing(entries);
      assert.ok(Buffer.isBuffer(buf));
      const back = decodeListing(buf);
      assert.deepEqual(back, byteSorted(entries));
      // Canonical: re-encoding is byte-identical, input order does not matter.
      assert.deepEqual(encodeListing(back), buf);
      assert.deepEqual(encodeListing([...entries].reverse()), buf);
    }),
    { numRuns: 300 },
  );
});

test('compareUtf8 agrees with UTF-8 byte order (property)', () => {
  const s = fc.string({ unit: 'binary', maxLength: 6 });
  fc.assert(
    fc.property(s, s, (a, b) => {
      const want = Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const got = Math.sign(compareUtf8(a, b));
      // Lone surrogates encode to U+FFFD, so only well-formed strings are comparable byte-wise.
      if (Buffer.from(a).toString() !== a || Buffer.from(b).toString() !== b) return;
      assert.equal(got, want);
    }),
    { numRuns: 2000 },
  );
  assert.ok(compareUtf8('\uffff', '😀') < 0);
  assert.ok(compareUtf8('a/b', 'a.b') > 0); // '/' (0x2f) sorts after '.' (0x2e)
});

test('diffTrees: applying the diff to before yields after (property)', () => {
  fc.assert(
    fc.property(arbEntries, arbEntries, (before, after) => {
      const d = diffTrees(before, after);
      const m = new Map(before.map((e) => [e.path, e]));
      for (const r of d.removed) assert.ok(m.delete(r.path));
      for (const x of d.modified) {
        assert.deepEqual(m.get(x.before.path), x.before);
        m.set(x.after.path, x.after);
      }
      for (const a of d.added) {
        assert.ok(!m.has(a.path));
        m.set(a.path, a);
      }
      assert.deepEqual(byteSorted([...m.values()]), byteSorted(after));
      if (d.added.length + d.removed.length + d.modified.length === 0) {
        assert.equal(encodeListing(before).equals(encodeListing(after)), true);
      }
    }),
    { numRuns: 300 },
  );
});

test('decodeListing rejects malformed input', () => {
  assert.throws(() => decodeListing(deflateSync(Buffer.from('garbage\n'))));
  assert.throws(() => decodeListing(deflateSync(Buffer.from(`100644 1 ${'a'.repeat(64)}\tno-newline`))));
  assert.deepEqual(decodeListing(encodeListing([])), []);
});
