// The IDE path: the real `codex app-server` (0.171.0, node_modules) over the loopback fake model,
// with Latch's hooks installed by the real `latch setup codex` and trusted the way an IDE client
// trusts them (`hooks/list` → `config/batchWrite` of each handler's `currentHash`; no bypass flag).
// One turn whose fake-model steps write, pass the auto-compaction limit, then try a read and two
// writes after the compaction. Used by test/e2e/app-server.test.ts and
// scripts/capture-doctor-fixtures.ts (which saves the raw stream as a doctor fixture).
import {
  AppServerSession,
  codexCommandFor,
  type AppServerMessage,
  type CodexHookInfo,
} from '../../src/agents/codex/app-server.js';
import { findRollout, resolveCodexBin } from '../../src/agents/codex/driver.js';
import type { FakeStep } from '../../src/agents/codex/fake-model.js';
import { BIG, PATCH, setupEnv, type Env } from './e2e.js';

export const APP_SERVER_STEPS: FakeStep[] = [
  /* 0 */ { items: [{ type: 'bash', cmd: 'echo step1 > a.txt' }], inputTokens: 200 },
  // The reported context passes the auto-compaction limit: Codex compacts before the next request.
  /* 1 */ { items: [{ type: 'bash', cmd: 'echo step2 >> a.txt' }], inputTokens: BIG },
  /* 2 */ {
    items: [
      { type: 'bash', cmd: 'cat a.txt' },
      { type: 'bash', cmd: 'echo after > a.txt' },
      { type: 'patch', patch: PATCH('c.txt') },
    ],
  },
  /* 3 */ { items: [{ type: 'message', text: 'my writes were blocked' }] },
];

export interface AppServerRun {
  env: Env;
  threadId: string;
  /** Every line the app-server wrote on stdout, each with its newline: the raw stream. */
  stream: string;
  messages: AppServerMessage[];
  /** What `hooks/list` reported before and after the trust writes. */
  hooksBefore: CodexHookInfo[];
  hooksAfter: CodexHookInfo[];
  /** The requests sent, in order (initialize and the `initialized` notification first). */
  sent: string[];
  rollout: string | undefined;
  serverRequests: AppServerMessage[];
  stderr: string;
}

/** Runs the scenario; the caller owns `env` (call env.cleanup()). */
export async function runLatchedAppServer(): Promise<AppServerRun> {
  const env = await setupEnv(APP_SERVER_STEPS);
  const sent = ['initialize', 'initialized'];
  let s: AppServerSession | null = null;
  try {
    s = await AppServerSession.start(codexCommandFor(resolveCodexBin(), 'node_modules'), {
      env: process.env,
      codexHome: env.codexHome,
      cwd: env.work,
      extraEnv: { LATCH_HOME: env.latchHome },
      clientName: 'latch-e2e',
      timeoutMs: 240_000,
    });
    const request = (method: string, params: unknown) => {
      sent.push(method);
      return s!.request(method, params);
    };
    // Trust exactly the hooks `latch setup` installed, with the hash Codex computes for each.
    const listed = await request('hooks/list', { cwds: [env.work] });
    const hooksBefore: CodexHookInfo[] = listed.data[0].hooks;
    const ours = hooksBefore.filter((h) => h.sourcePath === `${env.codexHome}/hooks.json`);
    if (ours.length === 0)
      throw new Error(`hooks/list shows no hook from ${env.codexHome}/hooks.json: ${JSON.stringify(listed)}`);
    await request('config/batchWrite', {
      edits: ours.map((h) => ({
        keyPath: 'hooks.state',
        mergeStrategy: 'upsert',
        value: { [h.key]: { trusted_hash: h.currentHash } },
      })),
      reloadUserConfig: true,
    });
    const hooksAfter: CodexHookInfo[] = (await request('hooks/list', { cwds: [env.work] })).data[0].hooks;

    const started = await request('thread/start', {
      cwd: env.work,
      approvalPolicy: 'never',
      sandbox: 'danger-full-access',
    });
    const threadId: string = started.thread.id;
    const from = s.mark();
    await request('turn/start', { threadId, input: [{ type: 'text', text: 'do the task', text_elements: [] }] });
    await s.waitFor((m) => m.method === 'turn/completed', 'turn/completed', { from, timeoutMs: 180_000 });
    await s.close();
    return {
      env,
      threadId,
      stream: s.stream(),
      messages: s.messages,
      hooksBefore,
      hooksAfter,
      sent,
      rollout: findRollout(env.codexHome, threadId),
      serverRequests: s.serverRequests,
      stderr: s.stderr,
    };
  } catch (err) {
    if (s) await s.close().catch(() => undefined);
    await env.cleanup();
    throw new Error(`${(err as Error).message}\n--- app-server stderr ---\n${s?.stderr.slice(-3000) ?? ''}`);
  }
}

/** The `hook/started` / `hook/completed` notifications of a run, as (method, eventName, status, id). */
export function hookNotifications(
  messages: AppServerMessage[],
): { method: string; event: string; status: string; id: string; entries: { kind: string; text: string }[] }[] {
  return messages
    .filter((m) => m.method === 'hook/started' || m.method === 'hook/completed')
    .map((m) => {
      const run = (
        m.params as {
          run: { eventName: string; status: string; id: string; entries: { kind: string; text: string }[] };
        }
      ).run;
      return { method: m.method as string, event: run.eventName, status: run.status, id: run.id, entries: run.entries };
    });
}
