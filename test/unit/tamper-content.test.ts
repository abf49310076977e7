// The kept bytes of tamper evidence (src/tamper/check.ts verifyContent): on tmpfs no stat
// identity is trusted, and each hook compares a fingerprinted file with the bytes the store keeps for
// its recorded sha256 (registration_content) instead of hashing it. The cases a hostile agent would
// try, on tmpfs, with real writes through a shared memory map (test/helpers/mmap.ts): each change is
// still noticed. (From an adversarial review of the change; none of them found a hole.)
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { openStore, type Db } from '../../src/store/store.js';
import { checkRegistration, recordRegistration, type Finding } from '../../src/tamper/index.js';
import { hasPython, mapper, tmpfsDir } from '../helpers/mmap.js';

const shm = tmpfsDir;
const skip = (!hasPython && 'no python3 with mmap') || (!shm && 'no tmpfs at /dev/shm');

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

interface TBox {
  home: string;
  state: string;
  entry: string;
  work: string;
}

/** A Claude Code registration with everything (HOME, install, state) on tmpfs. */
function tbox(files: Record<string, string | Buffer>): TBox {
  const dir = mkdtempSync(join(shm!, 'latch-review-'));
  dirs.push(dir);
  const home = join(dir, 'home');
  const dist = join(dir, 'pkg', 'dist');
  const state = join(dir, 'state');
  const work = join(dir, 'work');
  for (const d of [home, dist, state, work, join(home, '.claude')]) mkdirSync(d, { recursive: true });
  for (const n of ['latch.cjs', 'main.cjs']) writeFileSync(join(dist, n), `// ${n}\n`);
  const entry = join(dist, 'latch.cjs');
  writeFileSync(
    join(home, '.claude', 'settings.json'),
    JSON.stringify({
      hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: `x ${entry} hook claude --event PreToolUse` }] }] },
    }),
  );
  for (const [n, c] of Object.entries(files)) writeFileSync(join(home, n), c);
  const b = { home, state, entry, work };
  const db = openStore(state, { create: true });
  try {
    record(db, b);
  } finally {
    db.close();
  }
  return b;
}

/** `latch setup claude`'s recording for the box (again: a re-record accepts the files as they are). */
function record(db: Db, b: TBox): void {
  recordRegistration(
    db,
    {
      kind: 'user',
      hooksFile: join(b.home, '.claude', 'settings.json'),
      configFiles: [],
      project: null,
      node: process.execPath,
      entry: b.entry,
      home: b.home,
      pathVar: '/nonexistent',
      version: 'test',
    },
    new Date().toISOString(),
  );
}

function withDb<T>(b: TBox, fn: (db: Db) => T): T {
  const db = openStore(b.state, { create: false });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const check = (b: TBox) =>
  withDb(b, (db) => checkRegistration(db, { workspace: b.work, now: new Date().toISOString() }));
const codes = (fs: Finding[]) => fs.filter((f) => f.severity === 'tamper').map((f) => `${f.code}@${f.path}`);
const kept = (b: TBox) =>
  withDb(b, (db) =>
    db.prepare('SELECT sha256, length(bytes) AS n FROM registration_content ORDER BY sha256').all(),
  ) as {
    sha256: string;
    n: number;
  }[];
const statOf = (p: string) => {
  const st = statSync(p, { bigint: true });
  return `${st.mtimeNs}:${st.ctimeNs}:${st.size}`;
};

/** Learn the bytes (first hook), then check that the next hook compares without escalating. */
function settle(b: TBox): void {
  const first = check(b);
  assert.equal(first.status, 'ok', JSON.stringify(first.findings));
  const second = check(b);
  assert.equal(second.status, 'ok');
  assert.equal(second.escalated, false, 'kept bytes equal: nothing escalates');
}

/** Read-fault then overwrite `from` with `to` (same length) through a shared map: no stat moves on tmpfs. */
async function mapWrite(path: string, from: string, to: string): Promise<void> {
  assert.equal(from.length, to.length);
  const text = readFileSync(path, 'latin1');
  const at = text.indexOf(from);
  assert.ok(at >= 0);
  const before = statOf(path);
  const m = await mapper(path);
  try {
    await m.send('r');
    await m.send(`w ${at} ${to}`);
  } finally {
    m.close();
  }
  assert.equal(statOf(path), before, 'the write moved no stat (the attack is real)');
  assert.ok(readFileSync(path, 'latin1').includes(to));
}

describe('kept bytes on tmpfs', { skip }, () => {
  test('two rows with one sha256 (same bytes): one kept row serves both; a map write to either is noticed', async () => {
    const rc = 'alias ll="ls -l" # xxxxxxxx\n';
    const b = tbox({ '.bashrc': rc, '.bash_profile': rc });
    settle(b);
    assert.equal(kept(b).filter((k) => k.n === rc.length).length, 1, 'one content row for both files');
    await mapWrite(join(b.home, '.bash_profile'), 'xxxxxxxx', 'curl|sh;');
    const r = check(b);
    assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
    assert.deepEqual(codes(r.findings), [`file_changed@${join(b.home, '.bash_profile')}`]);
    // The untouched twin still compares equal (its kept bytes were not replaced or dropped).
    assert.equal(check(b).cached, true);
  });

  test('a file over 256 KiB is not kept, and is still re-hashed: a map write is noticed', async () => {
    const big = `export SAFE=xxxxxxxx\n# ${'a'.repeat(300 * 1024)}\n`; // the target on page 0 (the mapper's read fault)
    const b = tbox({ '.bashrc': big });
    settle(b);
    assert.ok(
      kept(b).every((k) => k.n <= 256 * 1024),
      'nothing over 256 KiB kept',
    );
    await mapWrite(join(b.home, '.bashrc'), 'xxxxxxxx', 'ddddddd1');
    const r = check(b);
    assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
    assert.deepEqual(codes(r.findings), [`file_changed@${join(b.home, '.bashrc')}`]);
  });

  test('a symlinked rc file: a map write to its target is noticed', async () => {
    const b = tbox({ 'real-rc': 'export SAFE=xxxxxxxx\n' });
    symlinkSync(join(b.home, 'real-rc'), join(b.home, '.zshrc'));
    // Re-record so the symlink is in the fingerprint.
    withDb(b, (db) => record(db, b));
    settle(b);
    await mapWrite(join(b.home, 'real-rc'), 'xxxxxxxx', 'ddddddd1');
    const r = check(b);
    assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
    assert.deepEqual(codes(r.findings), [`file_changed@${join(b.home, '.zshrc')}`]);
  });

  test('an empty rc file is kept as an empty blob (no NOT NULL failure, no error on every hook)', () => {
    const b = tbox({ '.profile': '' });
    settle(b);
    assert.ok(kept(b).some((k) => k.n === 0));
  });

  test('the hooks file itself (settings.json): a map write turning the handler off is noticed', async () => {
    const b = tbox({});
    settle(b);
    const s = join(b.home, '.claude', 'settings.json');
    await mapWrite(s, 'PreToolUse"', 'PreToolUsX"');
    const r = check(b);
    assert.equal(r.status, 'tampered', JSON.stringify(r.findings));
  });

  test('re-recording drops the kept bytes no fingerprint names any more', async () => {
    const b = tbox({ '.bashrc': 'export A=1\n' });
    settle(b);
    const before = kept(b).map((k) => k.sha256);
    writeFileSync(join(b.home, '.bashrc'), 'export A=2\n');
    withDb(b, (db) => record(db, b));
    const after = kept(b).map((k) => k.sha256);
    const gone = before.filter((h) => !after.includes(h));
    assert.ok(gone.length >= 1, 'the old .bashrc bytes were dropped');
    settle(b);
  });
});

// A FIFO renamed over a fingerprinted file between the hook's lstat and its read: a blocking open
// would hold the hook until its agent's timeout, which lets the call through. A swapper flips the path
// between a file and a FIFO with no writer while a child reads it in a loop; it must never block.
test('a FIFO swapped in between the stat and the read does not block the read', {
  skip: !hasPython && 'no python3',
}, async () => {
  const dir = mkdtempSync(join(shm ?? tmpdir(), 'latch-fifo-'));
  dirs.push(dir);
  const target = join(dir, '.bashrc');
  writeFileSync(target, 'export A=1\n');
  writeFileSync(join(dir, 'go'), '');
  const swapper = spawn('python3', [
    '-c',
    [
      'import os, sys',
      'd = sys.argv[1]; t = os.path.join(d, ".bashrc"); go = os.path.join(d, "go"); tmp = os.path.join(d, "tmp")',
      'while os.path.exists(go):',
      '    os.mkfifo(tmp); os.rename(tmp, t)',
      '    with open(tmp, "w") as f: f.write("export A=1\\n")',
      '    os.rename(tmp, t)',
    ].join('\n'),
    dir,
  ]);
  const script = `
    const { readNow } = await import(${JSON.stringify(new URL('../../src/tamper/fingerprint.ts', import.meta.url).href)});
    const kinds = {};
    // At least 3000 reads, and on until both shapes were seen (a busy machine can leave the swapper
    // descheduled with the FIFO in place for all of the first 3000), for at most 20 s.
    const end = Date.now() + 20_000;
    for (let i = 0; i < 3000 || ((!kinds.file || !kinds.other) && Date.now() < end); i++) {
      const n = readNow(${JSON.stringify(target)}, { hash: i % 2 === 0 });
      kinds[n.kind] = (kinds[n.kind] ?? 0) + 1;
    }
    process.stdout.write(JSON.stringify(kinds));`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  rmSync(join(dir, 'go'), { force: true });
  swapper.kill();
  assert.equal(child.signal, null, 'the reading loop blocked (killed at the timeout)');
  assert.equal(child.status, 0, child.stderr);
  const kinds = JSON.parse(child.stdout) as Record<string, number>;
  assert.ok((kinds.file ?? 0) > 0, JSON.stringify(kinds));
});
