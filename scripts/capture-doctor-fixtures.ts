// Regenerates test/fixtures/doctor/ from the REAL Codex 0.169.0 (node_modules) over the loopback fake
// model, with Latch's hooks installed by the real `latch setup codex` (dist/latch.cjs):
//   hooked-session.jsonl         a session that auto-compacts, gets its post-compaction writes denied,
//                                is verified by `latch verify --yes`, then resumed and writes again
//   store.db                     the Latch store of that run (compacted: page_size 512, no WAL)
//   app-server.jsonl             what `codex app-server` wrote on stdout for thread/start, turn/start,
//                                thread/compact/start and a second turn (no Latch hooks)
//   app-server-latched.jsonl     every line `codex app-server` wrote in the IDE-path scenario
//                                (test/helpers/app-server-scenario.ts): Latch's hooks installed and
//                                trusted through the app-server, one turn that auto-compacts between
//                                its writes, the post-compaction write denied
//   app-server-latched.rollout.jsonl   that thread's rollout (what the checkpoint hashed)
//   app-server-latched.store.db        the Latch store of that run (compacted like store.db)
//   The committed app-server-latched fixtures name the checkout by a path relative to the repo,
//   `./././././/` (the capturing machine's checkout rewritten to a spelling of the same length, so
//   byte offsets hold; the store's prefix and transcript-record hashes were recomputed for the
//   rewritten rollout). Do the same after a new capture.
//   damaged/*.jsonl.zst          hand-made damaged copies of hooked-session.jsonl (zstd, to stay small)
// Run: npm run build && node --import tsx scripts/capture-doctor-fixtures.ts [session|app-server|app-server-latched|damaged]
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { AppServerSession, codexCommandFor } from '../src/agents/codex/app-server.js';
import { resolveCodexBin, writeCodexConfig } from '../src/agents/codex/driver.js';
import { startFakeModel, type FakeStep } from '../src/agents/codex/fake-model.js';
import { BIG, PATCH, findRollout, setupEnv } from '../test/helpers/e2e.js';
import { runLatchedAppServer } from '../test/helpers/app-server-scenario.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** LATCH_FIXTURES_OUT writes the captures elsewhere (to compare a new capture with the committed one). */
const outDir = process.env.LATCH_FIXTURES_OUT ?? join(root, 'test', 'fixtures', 'doctor');

async function hookedSession(): Promise<void> {
  const env = await setupEnv([
    /* 0 */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: 200 },
    // The reported context passes the auto-compaction limit: Codex compacts before the next request.
    /* 1 */ { items: [{ type: 'bash', cmd: 'echo step2 >> a.txt' }], inputTokens: BIG },
    /* 2 */ {
      items: [
        { type: 'bash', cmd: 'cat a.txt' },
        { type: 'bash', cmd: 'echo again > a.txt' },
        { type: 'patch', patch: PATCH('c.txt') },
      ],
    },
    /* 3 */ { items: [{ type: 'message', text: 'my writes were blocked' }] },
    // after `latch verify --yes`, the resumed session may write again
    /* 4 */ { items: [{ type: 'bash', cmd: 'echo verified > e.txt' }] },
    /* 5 */ { items: [{ type: 'message', text: 'done' }] },
  ]);
  try {
    const first = await env.codex('do the task');
    if (first.code !== 0 || !first.threadId)
      throw new Error(`codex exec failed (${first.code}): ${first.stderr.slice(-2000)}`);
    if (!env.fake.requests.some((r) => r.isCompaction)) throw new Error('Codex did not compact');
    const v = env.latch(['verify', '--yes']);
    if (v.code !== 0) throw new Error(`latch verify failed (${v.code}): ${v.stdout}${v.stderr}`);
    const second = await env.codex('continue', { resume: first.threadId });
    if (second.code !== 0) throw new Error(`codex exec resume failed (${second.code}): ${second.stderr.slice(-2000)}`);
    const rollout = findRollout(env.codexHome, first.threadId);
    if (!rollout) throw new Error('no rollout file');
    copyFileSync(rollout, join(outDir, 'hooked-session.jsonl'));

    smallStore(env.latchHome, env.base, join(outDir, 'store.db'));
    console.log(`hooked session ${first.threadId}: rollout ${rollout}`);
  } finally {
    await env.cleanup();
  }
}

/** The store, made small: checkpoint the WAL into a copy, drop the stat cache, shrink the pages. */
function smallStore(latchHome: string, scratch: string, out: string): void {
  const src = new Database(join(latchHome, 'latch.db'), { readonly: true });
  const tmp = join(scratch, 'store-copy.db');
  rmSync(tmp, { force: true });
  src.exec(`VACUUM INTO '${tmp.replace(/'/g, "''")}'`);
  src.close();
  const db = new Database(tmp);
  db.pragma('journal_mode = DELETE');
  db.exec('DELETE FROM tree_cache');
  db.pragma('page_size = 512');
  db.exec('VACUUM');
  db.close();
  copyFileSync(tmp, out);
}

/** The IDE path with Latch: the raw stream, the thread's rollout and the store of that run. */
async function appServerLatched(): Promise<void> {
  const run = await runLatchedAppServer();
  try {
    if (run.env.file('a.txt') !== 'step1\nstep2\n')
      throw new Error(`the post-compaction write was not denied: a.txt = ${JSON.stringify(run.env.file('a.txt'))}`);
    if (!run.rollout) throw new Error('no rollout file for the thread');
    writeFileSync(join(outDir, 'app-server-latched.jsonl'), run.stream);
    copyFileSync(run.rollout, join(outDir, 'app-server-latched.rollout.jsonl'));
    smallStore(run.env.latchHome, run.env.base, join(outDir, 'app-server-latched.store.db'));
    console.log(`app-server (latched) ${run.threadId}: ${run.stream.split('\n').length - 1} lines captured`);
  } finally {
    await run.env.cleanup();
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
  let s: AppServerSession | null = null;
  try {
    s = await AppServerSession.start(codexCommandFor(resolveCodexBin(), 'node_modules'), {
      env: process.env,
      codexHome,
      cwd: work,
      clientName: 'latch-fixtures',
      timeoutMs: 120_000,
    });
    const session = s;
    const started = await session.request('thread/start', {
      cwd: work,
      approvalPolicy: 'never',
      sandbox: 'danger-full-access',
    });
    const threadId: string = started.thread.id;
    const turn = async (method: string, params: unknown, also?: (m: Record<string, unknown>) => boolean) => {
      const from = session.mark();
      await session.request(method, params);
      if (also) await session.waitFor(also, 'contextCompaction', { from });
      await session.waitFor((m) => m.method === 'turn/completed', 'turn/completed', { from });
    };
    await turn('turn/start', { threadId, input: [{ type: 'text', text: 'Write one.txt.', text_elements: [] }] });
    await turn(
      'thread/compact/start',
      { threadId },
      (m) =>
        m.method === 'item/completed' && (m.params as { item?: { type?: string } })?.item?.type === 'contextCompaction',
    );
    await turn('turn/start', { threadId, input: [{ type: 'text', text: 'Write two.txt.', text_elements: [] }] });
    await session.close(500);
    writeFileSync(join(outDir, 'app-server.jsonl'), session.stream());
    console.log(`app-server: ${session.lines.length} lines captured`);
  } finally {
    await s?.close(500);
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
  u.splice(
    8,
    0,
    JSON.stringify({
      timestamp: sample.timestamp,
      type: 'memory_snapshot',
      payload: { note: 'a record type Latch does not know' },
    }),
  );
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
  if (!only || only === 'app-server-latched') await appServerLatched();
  if (!only || only === 'damaged' || only === 'session') damagedCopies();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
