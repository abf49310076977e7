// Regenerates test/fixtures/doctor/ from the REAL Codex 0.169.0 (node_modules) over the loopback fake
// model, with Latch's hooks installed by the real `latch setup codex` (dist/latch.cjs):
//   hooked-session.jsonl         a session that auto-compacts, gets its post-compaction writes denied,
//                                is verified by `latch verify --yes`, then resumed and writes again
//   store.db                     the Latch store of that run (compacted: page_size 512, no WAL)
//   app-server.jsonl             what `codex app-server` wrote on stdout for thread/start, turn/start,
//                                thread/compact/start and a second turn
//   damaged/*.jsonl.zst          hand-made damaged copies of hooked-session.jsonl (zstd, to stay small)
// Run: npm run build && node --import tsx scripts/capture-doctor-fixtures.ts
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { OFFLINE_FLAGS, codexChildEnv } from '../src/codex/app-server.js';
import { resolveCodexBin, writeCodexConfig } from '../src/codex/driver.js';
import { startFakeModel, type FakeStep } from '../src/fake-model/server.js';
import { BIG, PATCH, findRollout, setupEnv } from '../test/helpers/e2e.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'test', 'fixtures', 'doctor');

async function hookedSession(): Promise<void> {
  const env = await setupEnv([
    /* 0 */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: 200 },
    // The reported context passes the auto-compaction limit: Codex compacts before the next request.
    /* 1 */ { items: [{ type: 'bash', cmd: 'echo step2 >> a.txt' }], inputTokens: BIG },
    /* 2 */ { items: [{ type: 'bash', cmd: 'cat a.txt' }, { type: 'bash', cmd: 'echo again > a.txt' }, { type: 'patch', patch: PATCH('c.txt') }] },
    /* 3 */ { items: [{ type: 'message', text: 'my writes were blocked' }] },
    // after `latch verify --yes`, the resumed session may write again
    /* 4 */ { items: [{ type: 'bash', cmd: 'echo verified > e.txt' }] },
    /* 5 */ { items: [{ type: 'message', text: 'done' }] },
  ]);
  try {
    const first = await env.codex('do the task');
    if (first.code !== 0 || !first.threadId) throw new Error(`codex exec failed (${first.code}): ${first.stderr.slice(-2000)}`);
    if (!env.fake.requests.some((r) => r.isCompaction)) throw new Error('Codex did not compact');
    const v = env.latch(['verify', '--yes']);
    if (v.code !== 0) throw new Error(`latch verify failed (${v.code}): ${v.stdout}${v.stderr}`);
    const second = await env.codex('continue', { resume: first.threadId });
    if (second.code !== 0) throw new Error(`codex exec resume failed (${second.code}): ${second.stderr.slice(-2000)}`);
    const rollout = findRollout(env.codexHome, first.threadId);
    if (!rollout) throw new Error('no rollout file');
    copyFileSync(rollout, join(outDir, 'hooked-session.jsonl'));

    // The store, made small: checkpoint the WAL into a copy, drop the stat cache, shrink the pages.
    const src = new Database(join(env.latchHome, 'latch.db'), { readonly: true });
    const tmp = join(env.base, 'store-copy.db');
    src.exec(`VACUUM INTO '${tmp.replace(/'/g, "''")}'`);
    src.close();
    const db = new Database(tmp);
    db.pragma('journal_mode = DELETE');
    db.exec('DELETE FROM tree_cache');
    db.pragma('page_size = 512');
    db.exec('VACUUM');
    db.close();
    copyFileSync(tmp, join(outDir, 'store.db'));
    console.log(`hooked session ${first.threadId}: rollout ${rollout}`);
  } finally {
    await env.cleanup();
  }
}

/** Drives `codex app-server` over stdio and keeps every line it writes. */
async function appServer(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'latch-appserver-'));
  const work = join(base, 'work');
  const codexHome = join(base, 'codex-home');
  mkdirSync(work, { recursive: true });
  const steps: FakeStep[] = [
    { items: [{ type: 'bash', cmd: 'echo one > one.txt' }], inputTokens: 300 },
    { items: [{ type: 'message', text: 'wrote one.txt' }] },
    { items: [{ type: 'bash', cmd: 'echo two > two.txt' }] },
    { items: [{ type: 'message', text: 'wrote two.txt' }] },
  ];
  const fake = await startFakeModel({ steps, summary: 'Summary: one.txt written.' });
  writeCodexConfig(codexHome, { baseUrl: fake.url });
  const bin = resolveCodexBin();
  const child = spawn(process.execPath, [bin, 'app-server', ...OFFLINE_FLAGS], {
    cwd: work,
    env: codexChildEnv(process.env, codexHome),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: string[] = [];
  const waiters: { pred: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  let buf = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      lines.push(line);
      let msg: any;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      for (const w of [...waiters]) {
        if (w.pred(msg)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    }
  });
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, 120_000);
  const wait = (pred: (m: any) => boolean, what: string) =>
    new Promise<any>((resolve, reject) => {
      waiters.push({ pred, resolve });
      child.once('close', () => reject(new Error(`app-server exited while waiting for ${what}: ${stderr.slice(-1500)}`)));
    });
  let nextId = 1;
  const request = async (method: string, params: unknown) => {
    const id = nextId++;
    child.stdin.write(JSON.stringify({ id, method, params }) + '\n');
    const reply = await wait((m) => m.id === id && !('method' in m), method);
    if (reply.error) throw new Error(`${method} failed: ${JSON.stringify(reply.error)}`);
    return reply.result;
  };
  try {
    await request('initialize', { clientInfo: { name: 'latch-fixtures', title: 'Latch fixtures', version: '0' } });
    child.stdin.write(JSON.stringify({ method: 'initialized' }) + '\n');
    const started = await request('thread/start', { cwd: work, approvalPolicy: 'never', sandbox: 'danger-full-access' });
    const threadId: string = started.thread.id;
    const turnDone = () => wait((m) => m.method === 'turn/completed', 'turn/completed');
    let done = turnDone();
    await request('turn/start', { threadId, input: [{ type: 'text', text: 'Write one.txt.', text_elements: [] }] });
    await done;
    const compacted = wait((m) => m.method === 'item/completed' && m.params?.item?.type === 'contextCompaction', 'contextCompaction');
    done = turnDone();
    await request('thread/compact/start', { threadId });
    await compacted;
    await done;
    done = turnDone();
    await request('turn/start', { threadId, input: [{ type: 'text', text: 'Write two.txt.', text_elements: [] }] });
    await done;
    writeFileSync(join(outDir, 'app-server.jsonl'), lines.join('\n') + '\n');
    console.log(`app-server: ${lines.length} lines captured`);
  } finally {
    clearTimeout(timer);
    child.stdin.end();
    await new Promise((r) => setTimeout(r, 500));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already exited */
    }
    await fake.close();
    rmSync(base, { recursive: true, force: true });
  }
}

/** Hand-made damaged copies of the real session, zstd-compressed (the analyser reads .jsonl.zst). */
function damagedCopies(): void {
  const dir = join(outDir, 'damaged');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const text = readFileSync(join(outDir, 'hooked-session.jsonl'), 'utf8');
  const lines = text.split('\n').slice(0, -1);
  const write = (name: string, body: string) => {
    const plain = join(dir, name);
    writeFileSync(plain, body);
    const r = spawnSync('zstd', ['-q', '--ultra', '-22', '--rm', '-f', plain, '-o', `${plain}.zst`]);
    if (r.status !== 0) throw new Error(`zstd failed: ${r.stderr}`);
  };
  // 1. the last line cut in the middle (a crash while Codex was writing)
  const last = lines[lines.length - 1]!;
  write('truncated-last-line.jsonl', [...lines.slice(0, -1), last.slice(0, Math.floor(last.length / 2))].join('\n'));
  // 2. a garbage line in the middle
  const g = [...lines];
  g.splice(5, 0, 'this line is not JSON {"type":"compacted"');
  write('garbage-line.jsonl', g.join('\n') + '\n');
  // 3. an unknown record type
  const u = [...lines];
  const sample = JSON.parse(lines[4]!) as { timestamp: string };
  u.splice(8, 0, JSON.stringify({ timestamp: sample.timestamp, type: 'memory_snapshot', payload: { note: 'a record type Latch does not know' } }));
  write('unknown-record-type.jsonl', u.join('\n') + '\n');
  // 4. a rewritten prefix: an early command is changed in place (same length), the rest kept
  const idx = lines.findIndex((l) => l.includes('echo step1 > a.txt'));
  if (idx < 0) throw new Error('no step1 line to rewrite');
  const p = [...lines];
  p[idx] = p[idx]!.split('echo step1 > a.txt').join('echo HACKS > a.txt');
  write('rewritten-prefix.jsonl', p.join('\n') + '\n');
  // 5. no session_meta
  write('missing-session-meta.jsonl', lines.filter((l) => !l.includes('"type":"session_meta"')).join('\n') + '\n');
  console.log(`damaged copies in ${dir}`);
}

async function main(): Promise<void> {
  if (!existsSync(join(root, 'dist', 'latch.cjs'))) throw new Error('run `npm run build` first');
  mkdirSync(outDir, { recursive: true });
  const only = process.argv[2];
  if (!only || only === 'session') await hookedSession();
  if (!only || only === 'app-server') await appServer();
  if (!only || only === 'damaged' || only === 'session') damagedCopies();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
