// `latch demo`: a real Codex session over a loopback fake model crosses an auto-compaction; Latch
// checkpoints, latches, denies the post-compaction writes, and a verify restores authority.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codexCommandFor, codexVersion, resolveCodex, type CodexCommand } from '../agents/codex/app-server.js';
import { resolveCodexBin, runCodex, writeCodexConfig } from '../agents/codex/driver.js';
import { ExitError, EXIT } from '../base/errors.js';
import { snapshotTree } from '../tree/snapshot.js';
import { itemText, startFakeModel, type FakeStep } from '../agents/codex/fake-model.js';
import type { Io } from './io.js';
import { setupCodex } from './setup.js';
import { status } from './status.js';
import { verify } from './verify.js';

export interface DemoOptions {
  keep?: boolean;
  json?: boolean;
  /** Where to build the demo (a fresh temp dir by default). */
  dir?: string;
}

const PATCH = '*** Begin Patch\n*** Add File: notes.md\n+# Notes written after compaction\n*** End Patch\n';

/** The scripted model: two writes, a large context that forces auto-compaction, then writes that must be denied. */
function script(): FakeStep[] {
  return [
    { items: [{ type: 'bash', cmd: 'echo "step 1: parsed the config" > progress.txt' }], inputTokens: 200 },
    // The reported context size passes the auto-compaction limit: Codex compacts before the next request.
    { items: [{ type: 'bash', cmd: 'echo "step 2: wrote the tests" >> progress.txt' }], inputTokens: 50_000 },
    {
      items: [
        { type: 'bash', cmd: 'cat progress.txt' },
        { type: 'bash', cmd: 'echo "step 1: parsed the config (again)" > progress.txt' },
        { type: 'patch', patch: PATCH },
      ],
    },
    { items: [{ type: 'message', text: 'My writes were blocked by Latch; waiting for a human to verify.' }] },
    // After `latch verify --yes`, the resumed session writes again.
    { items: [{ type: 'bash', cmd: 'echo "step 3: verified, continuing" >> progress.txt' }] },
    { items: [{ type: 'message', text: 'Step 3 done.' }] },
  ];
}

function capture(io: Io): { io: Io; text: () => string } {
  let buf = '';
  return { io: { ...io, out: (t) => (buf += t), err: (t) => (buf += t), interactive: false }, text: () => buf };
}

/** The Codex the demo drives; pinned and tested: 0.171.0 (the package's devDependency). */
const DEMO_CODEX = '0.171.0';

/** What the demo needs besides Latch: git and the real Codex CLI. Checked before anything is created. */
async function demoCodex(io: Io): Promise<{ path: string; version: string | null }> {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new ExitError(
      EXIT.failure,
      'the demo builds a git workspace and needs `git` on the PATH; install git and run it again',
    );
  }
  // The pinned devDependency beside Latch first (a checkout's `npm run demo`), else `codex` on the PATH.
  let codex: CodexCommand | null;
  try {
    codex = codexCommandFor(resolveCodexBin(), 'node_modules');
  } catch {
    codex = resolveCodex(io.env);
  }
  if (!codex) {
    throw new ExitError(
      EXIT.failure,
      `the demo drives the real Codex CLI, which is not installed here (no \`codex\` on the PATH, no @openai/codex beside Latch). ` +
        `Install it: \`npm i -g @openai/codex@${DEMO_CODEX}\` (the release the demo is tested with), then run \`latch demo\` again. ` +
        'Nothing leaves the machine: the model is a loopback fake.',
    );
  }
  const home = mkdtempSync(join(tmpdir(), 'latch-demo-codex-'));
  try {
    const v = await codexVersion(codex, { env: io.env, codexHome: home, cwd: home, timeoutMs: 20_000 });
    if (!v.version)
      throw new ExitError(
        EXIT.failure,
        `cannot run Codex at ${codex.path} (${v.error ?? 'no version'}); reinstall it: \`npm i -g @openai/codex@${DEMO_CODEX}\``,
      );
    return { path: codex.path, version: v.version };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export async function demo(io: Io, opts: DemoOptions): Promise<number> {
  const codex = await demoCodex(io);
  const base = opts.dir ?? mkdtempSync(join(tmpdir(), 'latch-demo-'));
  const work = join(base, 'work');
  const codexHome = join(base, 'codex-home');
  const latchHome = join(base, 'latch-state');
  mkdirSync(work, { recursive: true });
  const env = { ...io.env, LATCH_HOME: latchHome };
  const sub: Io = { ...io, env, cwd: work };
  const say = (t: string) => {
    if (!opts.json) io.out(t + '\n');
  };
  const fake = await startFakeModel({ steps: script(), summary: 'Summary: progress.txt has steps 1 and 2.' });
  try {
    git(work, ['init', '-q', '-b', 'main']);
    writeFileSync(join(work, 'README.md'), '# demo project\n');
    git(work, ['add', '.']);
    git(work, ['-c', 'user.name=demo', '-c', 'user.email=demo@example.invalid', 'commit', '-qm', 'init']);

    say(`Latch demo in ${base}`);
    say(
      `Codex ${codex.version} at ${codex.path}${codex.version === DEMO_CODEX ? '' : ` (the demo is tested with ${DEMO_CODEX}; other releases may tell a different story)`}`,
    );
    say('1. Install Latch into a fresh CODEX_HOME and point Codex at a loopback fake model.');
    writeCodexConfig(codexHome, { baseUrl: fake.url, autoCompactTokenLimit: 10_000 });
    const setup = capture(sub);
    await setupCodex(setup.io, { codexHome });

    say('2. Run a real `codex exec`: two writes, an auto-compaction, then three more calls.');
    const first = await runCodex({
      codexBin: codex.path,
      codexHome,
      cwd: work,
      prompt: 'Work through the task in progress.txt.',
      env: { LATCH_HOME: latchHome },
      timeoutMs: 120_000,
    });
    if (first.code !== 0 || first.timedOut) {
      io.err(
        `codex exec failed (exit ${first.code}${first.timedOut ? ', timed out' : ''}):\n${first.stderr.slice(-2000)}\n`,
      );
      return EXIT.failure;
    }
    const compactions = fake.requests.filter((r) => r.isCompaction).length;
    const st = capture(sub);
    await status(st.io, { cwd: work, json: true });
    const statusJson = JSON.parse(st.text()) as {
      sessions: {
        session_id: string;
        state: string;
        denials: number;
        checkpoints: { id: string; observed_via: string[]; tree: { sha256: string; files: number } }[];
        reason: string | null;
      }[];
    };
    const session = statusJson.sessions[0];
    const cp = session?.checkpoints[0];
    const now = snapshotTree(work);
    const modelSaw = fake.requests
      .flatMap((r) => (r.body?.input ?? []) as unknown[])
      .map(itemText)
      .filter((t) => t.includes('Latch blocked'));
    say(`   compactions requested by Codex: ${compactions}`);
    say(`   session ${session?.session_id}: ${session?.state}`);
    say(`   checkpoint ${cp?.id} observed via ${cp?.observed_via.join(' + ')}`);
    say(
      `   tree at checkpoint ${cp?.tree.sha256.slice(0, 16)}… (${cp?.tree.files} files); now ${now.sha256.slice(0, 16)}… (${now.files} files): ${cp?.tree.sha256 === now.sha256 ? 'EQUAL' : 'DIFFERENT'}`,
    );
    say(
      `   denied after compaction: ${session?.denials ?? 0} call(s) (the read-only \`cat\` ran); the model received ${new Set(modelSaw).size} denial message(s), e.g.:`,
    );
    if (modelSaw[0]) say(`     "${modelSaw[0].slice(0, 220).replace(/\s+/g, ' ')}…"`);
    const briefDelivered = modelSawAll(fake).some((t) => t.includes('<<<LATCH-BRIEF'));
    say(`   task brief re-delivered to the model after the compaction: ${briefDelivered ? 'yes' : 'no'}`);
    say(`   progress.txt is still: ${JSON.stringify(readFileSync(join(work, 'progress.txt'), 'utf8'))}`);

    say('3. A human runs `latch verify --yes`:');
    const ver = capture(sub);
    const verifyCode = await verify(ver.io, { cwd: work, yes: true });
    for (const line of ver.text().trimEnd().split('\n')) say(`   ${line}`);

    say('4. The session resumes (`codex exec resume`) and may write again:');
    const second = await runCodex({
      codexBin: codex.path,
      codexHome,
      cwd: work,
      prompt: 'Continue.',
      resumeThreadId: first.threadId,
      env: { LATCH_HOME: latchHome },
      timeoutMs: 120_000,
    });
    const progress = readFileSync(join(work, 'progress.txt'), 'utf8');
    say(`   resume exit ${second.code}; progress.txt now:\n${progress.replace(/^/gm, '     ')}`);
    const ok =
      compactions >= 1 &&
      session?.state === 'latched' &&
      cp?.tree.sha256 === now.sha256 &&
      verifyCode === 0 &&
      progress.includes('step 3');
    if (opts.json) {
      io.out(
        JSON.stringify(
          {
            ok,
            dir: base,
            compactions,
            status: statusJson,
            tree_now: { sha256: now.sha256, files: now.files },
            verify_exit: verifyCode,
            denials_seen_by_model: modelSaw.length,
            progress,
          },
          null,
          2,
        ) + '\n',
      );
    } else {
      say(
        ok
          ? '\nThe latch held across the compaction and was released only by verification.'
          : '\nDemo did NOT behave as expected (see above).',
      );
      if (opts.keep) say(`Kept ${base} (LATCH_HOME=${latchHome} latch status --cwd ${work}).`);
    }
    return ok ? EXIT.ok : EXIT.failure;
  } finally {
    await fake.close();
    if (!opts.keep && !opts.dir) rmSync(base, { recursive: true, force: true });
  }
}

function modelSawAll(fake: { requests: { body?: { input?: unknown[] } }[] }): string[] {
  return fake.requests.flatMap((r) => (r.body?.input ?? []) as unknown[]).map(itemText);
}

function git(cwd: string, args: string[]): void {
  execFileSync('git', args, { cwd, stdio: 'ignore' });
}
