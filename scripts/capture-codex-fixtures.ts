// Regenerates test/fixtures/codex-payloads/*.json and test/fixtures/rollouts/*.jsonl from the real
// Codex binary (node_modules) driven over the loopback fake model.
// Run: node --import tsx scripts/capture-codex-fixtures.ts
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeModel, type FakeStep } from '../src/agents/codex/fake-model.js';
import { findRollout, runCodex, writeCodexConfig, writeHooksJson } from '../src/agents/codex/driver.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const payloadDir = join(root, 'test', 'fixtures', 'codex-payloads');
const rolloutDir = join(root, 'test', 'fixtures', 'rollouts');
const EVENTS = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'PreCompact',
  'PostCompact',
  'Stop',
  'SessionEnd',
];

const addPatch = '*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n';
const failingPatch = '*** Begin Patch\n*** Update File: does-not-exist.txt\n@@\n-old\n+new\n*** End Patch\n';
const steps: FakeStep[] = [
  // run 1 (startup): Bash, apply_patch; the second response reports enough tokens to auto-compact.
  { items: [{ type: 'bash', cmd: 'echo hello > hello.txt' }] },
  { items: [{ type: 'patch', patch: addPatch }], inputTokens: 5000 },
  // after compaction: parallel Bash + failing apply_patch in one response
  {
    items: [
      { type: 'bash', cmd: 'cat hello.txt' },
      { type: 'patch', patch: failingPatch },
    ],
  },
  { items: [{ type: 'message', text: 'first run done' }] },
  // run 2 (resume)
  { items: [{ type: 'bash', cmd: 'echo resumed >> hello.txt' }] },
  { items: [{ type: 'message', text: 'resume done' }] },
  // run 3 (fork)
  { items: [{ type: 'message', text: 'fork done' }] },
];

function readPayloads(dir: string): any[] {
  // One file per hook invocation, named <ns timestamp>-<pid>.json
  return readdirSync(dir)
    .sort()
    .map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')));
}

async function main() {
  const base = mkdtempSync(join(tmpdir(), 'latch-capture-'));
  const home = join(base, 'home');
  const cwd = join(base, 'work');
  const logDir = join(base, 'payloads');
  mkdirSync(cwd, { recursive: true });
  mkdirSync(logDir, { recursive: true });
  const hook = join(base, 'log-hook.sh');
  writeFileSync(hook, `#!/bin/sh\ncat > "${logDir}/$(date +%s%N)-$$.json"\n`);
  chmodSync(hook, 0o755);

  const fake = await startFakeModel({ steps, summary: 'Summary: hello.txt written, notes.txt added.' });
  try {
    writeCodexConfig(home, { baseUrl: fake.url, autoCompactTokenLimit: 1000 });
    writeHooksJson(
      home,
      Object.fromEntries(EVENTS.map((e) => [e, [{ matcher: '*', hooks: [{ type: 'command', command: hook }] }]])),
    );

    const run1 = await runCodex({ codexHome: home, cwd, prompt: 'Write hello.txt and notes.txt.' });
    if (run1.code !== 0 || !run1.threadId) throw new Error(`run 1 failed (${run1.code}): ${run1.stderr}`);
    const rollout1 = findRollout(home, run1.threadId);
    if (!rollout1) throw new Error('no rollout for run 1');

    const run2 = await runCodex({ codexHome: home, cwd, prompt: 'Continue.', resumeThreadId: run1.threadId });
    if (run2.code !== 0) throw new Error(`resume failed (${run2.code}): ${run2.stderr}`);
    const run3 = await runCodex({ codexHome: home, cwd, prompt: 'Try another way.', forkThreadId: run1.threadId });
    if (run3.code !== 0 || !run3.threadId) throw new Error(`fork failed (${run3.code}): ${run3.stderr}`);
    const rollout3 = findRollout(home, run3.threadId);
    if (!rollout3) throw new Error('no rollout for the fork');
    // Copied after all runs: the parent holds run 1 (with the auto-compaction) plus the resumed
    // turn, and the fork's session_meta.history_base points into exactly this file.
    mkdirSync(rolloutDir, { recursive: true });
    copyFileSync(rollout1, join(rolloutDir, 'auto-compaction.jsonl'));
    copyFileSync(rollout3, join(rolloutDir, 'fork-of-compacted.jsonl'));

    const payloads = readPayloads(logDir);
    const pick = (name: string, pred: (p: any) => boolean) => {
      const p = payloads.find(pred);
      if (!p) throw new Error(`no payload captured for ${name}`);
      writeFileSync(join(payloadDir, `${name}.json`), JSON.stringify(p, null, 2) + '\n');
      return name;
    };
    const ev = (e: string) => (p: any) => p.hook_event_name === e;
    const tool = (e: string, t: string, input?: string) => (p: any) =>
      p.hook_event_name === e &&
      p.tool_name === t &&
      (input === undefined || String(p.tool_input?.command).includes(input));
    rmSync(payloadDir, { recursive: true, force: true });
    mkdirSync(payloadDir, { recursive: true });
    const written = [
      pick('session-start-startup', (p) => ev('SessionStart')(p) && p.source === 'startup'),
      pick('session-start-compact', (p) => ev('SessionStart')(p) && p.source === 'compact'),
      pick('session-start-resume', (p) => ev('SessionStart')(p) && p.source === 'resume'),
      pick('session-start-fork', (p) => ev('SessionStart')(p) && p.source === 'fork'),
      pick('user-prompt-submit', ev('UserPromptSubmit')),
      pick('pre-tool-use-bash', tool('PreToolUse', 'Bash')),
      pick('post-tool-use-bash', tool('PostToolUse', 'Bash')),
      pick('pre-tool-use-apply-patch', tool('PreToolUse', 'apply_patch', 'Add File')),
      pick('post-tool-use-apply-patch', tool('PostToolUse', 'apply_patch', 'Add File')),
      pick('pre-tool-use-apply-patch-failing', tool('PreToolUse', 'apply_patch', 'does-not-exist')),
      pick('pre-compact-auto', ev('PreCompact')),
      pick('post-compact-auto', ev('PostCompact')),
      pick('stop', ev('Stop')),
      pick('session-end', ev('SessionEnd')),
    ];
    if (payloads.some(tool('PostToolUse', 'apply_patch', 'does-not-exist')))
      console.warn('note: the failing apply_patch DID get PostToolUse');
    console.log(`captured ${payloads.length} hook payloads; wrote ${written.length} fixtures to ${payloadDir}`);
    console.log(`rollouts: ${rolloutDir}/auto-compaction.jsonl, fork-of-compacted.jsonl`);
  } finally {
    await fake.close();
    rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
