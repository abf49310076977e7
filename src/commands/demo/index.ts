// `latch demo [codex|claude|all]`: a real agent session over a loopback fake model crosses an
// auto-compaction; Latch checkpoints, latches, denies the post-compaction writes, and a verify restores
// authority. `all` (the default) tells the Codex story, then Claude Code's (src/commands/demo/claude.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codexCommandFor, codexVersion, resolveCodex, type CodexCommand } from '../../agents/codex/app-server.js';
import { resolveCodexBin, runCodex, writeCodexConfig } from '../../agents/codex/driver.js';
import { ExitError, EXIT, isLatchError } from '../../base/errors.js';
import { itemText, startFakeModel, type FakeStep } from '../../agents/codex/fake-model.js';
import { claudeDemoPart, demoClaude } from './claude.js';
import type { Io } from '../../kit/io.js';
import { setupCodex } from '../../agents/codex/setup.js';
import {
  capture,
  conclusion,
  type DemoOptions as PartOptions,
  type DemoPart,
  demoStatus,
  initDemoWorkspace,
  quoteDenial,
  requireGit,
  sessionStory,
  teller,
  verifyStep,
} from './shared.js';

export type DemoAgent = 'codex' | 'claude' | 'all';

export interface DemoOptions extends PartOptions {
  /** Which agent's story (default `all`: Codex, then Claude Code). */
  agent?: DemoAgent;
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

/** The Codex the demo drives; pinned and tested: 0.171.0 (the package's devDependency). */
const DEMO_CODEX = '0.171.0';

/** What the demo needs besides Latch: git and the real Codex CLI. Checked before anything is created. */
async function demoCodex(io: Io): Promise<{ path: string; version: string | null }> {
  requireGit();
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

/** The Codex story, on a Codex the caller found (demoCodex). */
async function codexDemoPart(
  io: Io,
  opts: PartOptions,
  codex: { path: string; version: string | null },
): Promise<DemoPart> {
  const base = opts.dir ?? mkdtempSync(join(tmpdir(), 'latch-demo-'));
  const work = join(base, 'work');
  const codexHome = join(base, 'codex-home');
  const latchHome = join(base, 'latch-state');
  mkdirSync(work, { recursive: true });
  const env = { ...io.env, LATCH_HOME: latchHome };
  const sub: Io = { ...io, env, cwd: work };
  const say = teller(io, opts);
  const fake = await startFakeModel({ steps: script(), summary: 'Summary: progress.txt has steps 1 and 2.' });
  try {
    initDemoWorkspace(work);

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
      return { ok: false, json: { ok: false, dir: base, error: `codex exec failed (exit ${first.code})` } };
    }
    const compactions = fake.requests.filter((r) => r.isCompaction).length;
    const statusJson = await demoStatus(sub, work, opts.commands);
    const session = statusJson.sessions[0];
    const modelSaw = fake.requests
      .flatMap((r) => (r.body?.input ?? []) as unknown[])
      .map(itemText)
      .filter((t) => t.includes('Latch blocked'));
    say(`   compactions requested by Codex: ${compactions}`);
    const { equal, now } = sessionStory(say, session, work);
    say(
      `   denied after compaction: ${session?.denials ?? 0} call(s) (the read-only \`cat\` ran); the model received ${new Set(modelSaw).size} denial message(s), e.g.:`,
    );
    quoteDenial(say, modelSaw[0]);
    const briefDelivered = modelSawAll(fake).some((t) => t.includes('<<<LATCH-BRIEF'));
    say(`   task brief re-delivered to the model after the compaction: ${briefDelivered ? 'yes' : 'no'}`);
    say(`   progress.txt is still: ${JSON.stringify(readFileSync(join(work, 'progress.txt'), 'utf8'))}`);

    const verifyCode = await verifyStep(say, sub, work, 3, opts.commands);

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
      compactions >= 1 && session?.state === 'latched' && equal && verifyCode === 0 && progress.includes('step 3');
    conclusion(say, ok, opts, base, `LATCH_HOME=${latchHome} latch status --cwd ${work}`);
    return {
      ok,
      json: {
        ok,
        dir: base,
        compactions,
        status: statusJson,
        tree_now: now,
        verify_exit: verifyCode,
        denials_seen_by_model: modelSaw.length,
        progress,
      },
    };
  } finally {
    await fake.close();
    if (!opts.keep && !opts.dir) rmSync(base, { recursive: true, force: true });
  }
}

/** The agent named in a missing-binary message, and that message, when its part cannot run. */
interface Skipped {
  agent: 'codex' | 'claude';
  message: string;
}

/**
 * `latch demo codex|claude` tells one story (an agent that is not installed: exit 1 with what to
 * install). `latch demo` / `latch demo all` tells both, Codex first; an agent that is not installed is
 * named with what to install and its part skipped, the other part still runs, and the exit is 1.
 * With --json, `all` prints the Codex part's fields at the top level (as `latch demo --json` did before
 * Claude Code), `ok` for both, and each part's outcome under `codex` and `claude`.
 */
export async function demo(io: Io, opts: DemoOptions): Promise<number> {
  const agent = opts.agent ?? 'all';
  const partOpts = (name: 'codex' | 'claude'): PartOptions => ({
    ...opts,
    dir: opts.dir && agent === 'all' ? join(opts.dir, name) : opts.dir,
  });
  const finishOne = (part: DemoPart): number => {
    if (opts.json) io.out(JSON.stringify(part.json, null, 2) + '\n');
    return part.ok ? EXIT.ok : EXIT.failure;
  };
  if (agent === 'codex') {
    const codex = await demoCodex(io);
    return finishOne(await codexDemoPart(io, partOpts('codex'), codex));
  }
  if (agent === 'claude') {
    requireGit();
    const claude = await demoClaude(io);
    return finishOne(await claudeDemoPart(io, partOpts('claude'), claude));
  }

  // Both: every prerequisite is checked before anything is created.
  requireGit();
  const skipped: Skipped[] = [];
  const found = async <T>(name: 'codex' | 'claude', find: () => Promise<T>): Promise<T | null> => {
    try {
      return await find();
    } catch (err) {
      if (!isLatchError(err, 'E_EXIT')) throw err;
      io.err(`latch demo: ${err.message}\n`);
      skipped.push({ agent: name, message: err.message });
      return null;
    }
  };
  const codex = await found('codex', () => demoCodex(io));
  const claude = await found('claude', () => demoClaude(io));
  const say = teller(io, opts);
  const codexPart = codex ? await codexDemoPart(io, partOpts('codex'), codex) : null;
  if (codexPart && claude) say('');
  const claudePart = claude ? await claudeDemoPart(io, partOpts('claude'), claude) : null;
  const ok = skipped.length === 0 && codexPart?.ok === true && claudePart?.ok === true;
  const outcome = (part: DemoPart | null, name: 'codex' | 'claude') =>
    part ? { ok: part.ok } : { ok: false, skipped: skipped.find((s) => s.agent === name)?.message ?? 'not run' };
  if (opts.json) {
    io.out(
      JSON.stringify(
        {
          ...(codexPart?.json ?? {}),
          ok,
          codex: outcome(codexPart, 'codex'),
          claude: claudePart ? claudePart.json : outcome(null, 'claude'),
        },
        null,
        2,
      ) + '\n',
    );
  } else {
    const line = (part: DemoPart | null) =>
      part ? (part.ok ? 'the latch held' : 'did NOT behave as expected') : 'not installed, skipped (see above)';
    say(`\nCodex: ${line(codexPart)}. Claude Code: ${line(claudePart)}.`);
  }
  return ok ? EXIT.ok : EXIT.failure;
}

function modelSawAll(fake: { requests: { body?: { input?: unknown[] } }[] }): string[] {
  return fake.requests.flatMap((r) => (r.body?.input ?? []) as unknown[]).map(itemText);
}
