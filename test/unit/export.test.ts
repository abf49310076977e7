// `latch export agent-trace`: records produced as in hook.test.ts (real payloads through runCodexHook),
// exported, and validated against the Agent Trace v0.1.0 JSON Schema (test/fixtures/agent-trace).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { changedLineIndices, exportAgentTrace, type TraceRecord } from '../../src/commands/export.js';
import type { Io } from '../../src/kit/io.js';
import { ExitError } from '../../src/base/errors.js';
import { openStore } from '../../src/store/store.js';
import { runCodexHook } from '../../src/hook.js';
import { assertValidReply } from '../helpers/schemas.js';
import { bash, payload, sandbox, type Sandbox } from '../helpers/workspace.js';

const schema = JSON.parse(readFileSync(join('test', 'fixtures', 'agent-trace', 'trace-record.schema.json'), 'utf8'));
const ajv = new Ajv2020.default({ strict: true, allErrors: true });
addFormats.default(ajv);
const validate = ajv.compile(schema);

const SID = '01a22688-8615-7ef2-aa8c-b2ef65102b46';
/** Clear of the attribution's 20 ms window-edge margin (src/ledger/observe.ts EDGE_NS). */
const GAP = 60;

function assertValidTrace(data: unknown): TraceRecord {
  assert.ok(
    validate(data),
    `violates the Agent Trace schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(data, null, 2)}`,
  );
  return data as TraceRecord;
}

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = assertValidReply(String(p.hook_event_name), r.stdout) as {
    hookSpecificOutput?: { permissionDecision?: string };
  } | null;
  assert.notEqual(parsed?.hookSpecificOutput?.permissionDecision, 'deny', `denied: ${r.stdout}`);
  return r;
}

/** One Bash call that writes files while its attempt is live: Pre, write, Post. */
async function agentWrites(sb: Sandbox, sid: string, files: Record<string, string>) {
  const id = 'call_' + Math.random().toString(16).slice(2);
  const command = Object.keys(files)
    .map((f) => `write ${f}`)
    .join('; ');
  await hook(sb, bash(sb, command, { session_id: sid, tool_use_id: id }));
  await sleep(GAP);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(sb.work, f), text);
  await sleep(GAP);
  await hook(sb, payload('post-tool-use-bash', sb, { session_id: sid, tool_use_id: id, tool_input: { command } }));
}

async function exported(sb: Sandbox, opts: { cwd?: string; session?: string } = {}): Promise<TraceRecord> {
  let out = '';
  const io: Io = {
    out: (t) => void (out += t),
    err: () => {},
    env: sb.env,
    cwd: sb.work,
    interactive: false,
    ask: async () => assert.fail('no questions'),
    now: () => new Date().toISOString(),
  };
  assert.equal(await exportAgentTrace(io, opts), 0);
  return assertValidTrace(JSON.parse(out));
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const fileOf = (r: TraceRecord, path: string) => {
  const f = r.files.find((x) => x.path === path);
  assert.ok(f, `${path} in ${JSON.stringify(r.files.map((x) => x.path))}`);
  return f!;
};

test('the fixture is the spec schema and rejects what the spec rejects', () => {
  assert.equal(schema.$id, 'https://agent-trace.dev/schemas/v1/trace-record.json');
  const minimal = {
    version: '0.1.0',
    id: '550e8400-e29b-41d4-a716-446655440000',
    timestamp: '2026-01-25T10:00:00Z',
    files: [
      {
        path: 'src/app.ts',
        conversations: [{ contributor: { type: 'ai' }, ranges: [{ start_line: 1, end_line: 50 }] }],
      },
    ],
  };
  assert.ok(validate(minimal), ajv.errorsText(validate.errors));
  assert.equal(validate({ ...minimal, id: 'not-a-uuid' }), false);
  assert.equal(
    validate({ ...minimal, files: [{ path: 'a', conversations: [{ url: 'no scheme', ranges: [] }] }] }),
    false,
  );
  assert.equal(
    validate({ ...minimal, files: [{ path: 'a', conversations: [{ contributor: { type: 'robot' }, ranges: [] }] }] }),
    false,
  );
});

test('attempt changes -> ai in the session conversation; a hand edit -> human; ranges from the recorded hashes', async (t) => {
  const sb = sandbox();
  t.after(sb.cleanup);
  await hook(sb, payload('session-start-startup', sb, { session_id: SID }));
  await agentWrites(sb, SID, { 'hello.txt': 'hello\nworld\n' });
  await agentWrites(sb, SID, { 'README.md': '# test\nadded by the agent\n' });
  await hook(sb, payload('stop', sb, { session_id: SID }));
  await sleep(GAP);
  writeFileSync(join(sb.work, 'hand.txt'), 'typed by a human\n');
  await hook(sb, payload('stop', sb, { session_id: SID })); // the next observation records it

  const r = await exported(sb);
  assert.equal(r.version, '0.1.0');
  assert.deepEqual(r.vcs, {
    type: 'git',
    revision: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: sb.work }).toString().trim(),
  });
  assert.deepEqual(r.tool, { name: 'codex', version: '0.169.0' });
  assert.deepEqual(
    r.files.map((f) => f.path),
    ['README.md', 'hand.txt', 'hello.txt'],
  );

  const conversation = {
    url: `urn:uuid:${SID}`,
    contributor: { type: 'ai', model_id: 'gpt-5.5' },
    related: [{ type: 'transcript', url: pathToFileURL(sb.transcript).href }],
  };
  // Added by an attempt, unchanged since: the whole file, hashed as recorded.
  assert.deepEqual(fileOf(r, 'hello.txt').conversations, [
    { ...conversation, ranges: [{ start_line: 1, end_line: 2, content_hash: `sha256:${sha('hello\nworld\n')}` }] },
  ]);
  // Modified by an attempt, before-content = HEAD's blob: the line the diff marks inserted.
  assert.deepEqual(fileOf(r, 'README.md').conversations, [
    {
      ...conversation,
      ranges: [{ start_line: 2, end_line: 2, content_hash: `sha256:${sha('added by the agent\n')}` }],
    },
  ]);
  // No attempt live: human, no conversation url.
  assert.deepEqual(fileOf(r, 'hand.txt').conversations, [
    {
      contributor: { type: 'human' },
      ranges: [{ start_line: 1, end_line: 1, content_hash: `sha256:${sha('typed by a human\n')}` }],
    },
  ]);
  const meta = r.metadata['agent-latch'] as {
    sessions: { session_id: string; conversation_url: string }[];
    git: { dirty: boolean };
  };
  assert.deepEqual(
    meta.sessions.map((s) => [s.session_id, s.conversation_url]),
    [[SID, `urn:uuid:${SID}`]],
  );
  assert.equal(meta.git.dirty, true);

  // --session: only what the session's attempts did.
  const only = await exported(sb, { session: SID });
  assert.deepEqual(
    only.files.map((f) => f.path),
    ['README.md', 'hello.txt'],
  );
  await assert.rejects(exported(sb, { session: 'nope' }), ExitError);

  // A human then edits an agent file: the agent's conversation stays, without provable lines; the hand
  // edit owns the current lines (the diff against HEAD cannot apply: hello.txt is not in HEAD).
  await sleep(GAP);
  writeFileSync(join(sb.work, 'hello.txt'), 'hello\nthere\n');
  const unobserved = await exported(sb);
  assert.deepEqual(
    fileOf(unobserved, 'hello.txt').conversations.map((c) => [c.contributor.type, c.ranges]),
    [['ai', []]],
    'changed since Latch last looked: no ranges',
  );
  await hook(sb, payload('stop', sb, { session_id: SID }));
  const after = await exported(sb);
  assert.deepEqual(
    fileOf(after, 'hello.txt').conversations.map((c) => [c.contributor.type, c.url ?? null, c.ranges.length]),
    [
      ['ai', `urn:uuid:${SID}`, 0],
      ['human', null, 0],
    ],
  );
});

test('no git, a non-UUID session, contended calls of one session, a removal', async (t) => {
  const sb = sandbox({ git: false });
  t.after(sb.cleanup);
  writeFileSync(join(sb.work, 'old.txt'), 'old\n');
  await hook(sb, payload('session-start-startup', sb));
  // Two calls of session S live at once: contended, but both are S's: S's conversation.
  const a = 'call_a';
  const b = 'call_b';
  await hook(sb, bash(sb, 'write par.txt', { tool_use_id: a }));
  await hook(sb, bash(sb, 'rm old.txt', { tool_use_id: b }));
  await sleep(GAP);
  writeFileSync(join(sb.work, 'par.txt'), 'x\n');
  execFileSync('rm', [join(sb.work, 'old.txt')]);
  await sleep(GAP);
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: a }));
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: b }));
  await hook(sb, payload('stop', sb));

  const db = openStore(sb.home, { create: false });
  const recorded = db.prepare('SELECT path, change, attribution, session_id FROM changes ORDER BY path').all();
  db.close();
  assert.deepEqual(
    recorded.map((c) => ({ ...(c as object) })),
    [
      { path: 'old.txt', change: 'removed', attribution: 'contended', session_id: 'S' },
      { path: 'par.txt', change: 'added', attribution: 'contended', session_id: 'S' },
    ],
  );

  const r = await exported(sb);
  assert.equal(r.vcs, undefined, 'no repository: no vcs');
  const conv = { url: pathToFileURL(sb.transcript).href, contributor: { type: 'ai', model_id: 'gpt-5.5' } };
  assert.deepEqual(fileOf(r, 'par.txt').conversations, [
    { ...conv, ranges: [{ start_line: 1, end_line: 1, content_hash: `sha256:${sha('x\n')}` }] },
  ]);
  assert.deepEqual(
    fileOf(r, 'old.txt').conversations,
    [{ ...conv, ranges: [] }],
    'a removal contributed, but has no lines',
  );
});

test('changedLineIndices: inserted and replaced lines of the new file', () => {
  assert.deepEqual(changedLineIndices(['a', 'b', 'c'], ['a', 'b', 'c']), []);
  assert.deepEqual(changedLineIndices(['a', 'c'], ['a', 'b', 'c']), [1]);
  assert.deepEqual(changedLineIndices(['a', 'b', 'c'], ['a', 'B', 'c', 'd']), [1, 3]);
  assert.deepEqual(changedLineIndices([], ['x', 'y']), [0, 1]);
  assert.deepEqual(changedLineIndices(['x', 'y'], []), []);
  assert.deepEqual(changedLineIndices(['p', 'q', 'r', 's'], ['q', 'p', 's', 'r']), [1, 3]);
});
