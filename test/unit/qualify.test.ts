import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  copyFileSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  QUALIFIED_VERSIONS,
  qualifyResume,
  type QualifyDecision,
  type QualifyInput,
  type RecordedTranscript,
} from '../../src/agents/codex/qualify.js';
import { QUALIFY_CHECKS, type Identity, type QualifyOptions } from '../../src/continuity/qualify.js';
import { parsePages, type BriefDigest } from '../../src/continuity/page-read.js';
import { approxTokens, isTruncatedOutput, outputTruncation } from '../../src/agents/codex/outputs.js';

// ---------------------------------------------------------------------------------------------
// The real 0.169 rollout and lines in its shapes.

const REAL = join('test', 'fixtures', 'rollouts', 'auto-compaction.jsonl');
const FORK = join('test', 'fixtures', 'rollouts', 'fork-of-compacted.jsonl');
const REAL_BYTES = readFileSync(REAL);
const REAL_LINES = REAL_BYTES.toString('utf8').split('\n').filter(Boolean);
const SESSION = '01a22688-8615-7ef2-aa8c-b2ef65102b46';
const CWD = '/tmp/latch-capture-0rpQVF/work';
const TURN = '01a22688-88ce-7d01-97fe-427e5909444b';

const EXPECTED: Identity = {
  session_id: SESSION,
  cwd: CWD,
  model: 'gpt-5.5',
  approval_policy: 'never',
  sandbox_policy: { type: 'danger-full-access' },
  permission_profile: { type: 'disabled' },
};

/** Byte offset just past the fixture's (only) compaction: its item_completed{ContextCompaction} line. */
const COMPACTION_END = (() => {
  let off = 0;
  let end = -1;
  for (const l of REAL_LINES) {
    off += Buffer.byteLength(l) + 1;
    const o = JSON.parse(l) as { type: string; payload: { type?: string; item?: { type?: string } } };
    if (o.type === 'compacted' || (o.type === 'event_msg' && o.payload.item?.type === 'ContextCompaction')) end = off;
  }
  return end;
})();

const LATEST_TURN_CONTEXT = (() => {
  const l = [...REAL_LINES].reverse().find((x) => JSON.parse(x).type === 'turn_context')!;
  return JSON.parse(l).payload as Record<string, unknown>;
})();

let ordinal = 56;
function rec(type: string, payload: unknown, metadata?: unknown): string {
  const o: Record<string, unknown> = { timestamp: '2026-11-29T09:00:13.000Z', ordinal: ordinal++, type, payload };
  if (metadata) o.metadata = metadata;
  return JSON.stringify(o) + '\n';
}
const passthrough = { turn_id: TURN };
const meta = { history_sequence: 30, sampled_through_sequence: 29, client_authored: false };

function functionCall(callId: string, cmd: string): string {
  return rec(
    'response_item',
    {
      type: 'function_call',
      id: `fc_${callId}`,
      name: 'exec_command',
      arguments: JSON.stringify({ cmd }),
      call_id: callId,
      internal_chat_message_metadata_passthrough: passthrough,
    },
    meta,
  );
}
function functionCallOutput(callId: string, output: string, type = 'function_call_output'): string {
  const prefix = type === 'function_call_output' ? 'fco' : 'ctco';
  return rec(
    'response_item',
    {
      type,
      id: `${prefix}_${callId}`,
      call_id: callId,
      output,
      internal_chat_message_metadata_passthrough: passthrough,
    },
    { ...meta, fallback_token_limit_override: 12000 },
  );
}
function execOutput(text: string, o: { exit?: number | null; original?: number; running?: boolean } = {}): string {
  const head = ['Chunk ID: 5e1f0a', 'Wall time: 0.0100 seconds'];
  if (o.running) head.push('Process running with session ID 4242');
  else head.push(`Process exited with code ${o.exit ?? 0}`);
  head.push(`Original token count: ${o.original ?? approxTokens(text)}`);
  return `${head.join('\n')}\nOutput:\n${text}`;
}
function assistant(text: string): string {
  return rec('response_item', {
    type: 'message',
    id: `msg_${ordinal}`,
    role: 'assistant',
    content: [{ type: 'output_text', text }],
    internal_chat_message_metadata_passthrough: passthrough,
  });
}
function taskComplete(): string {
  return rec('event_msg', {
    type: 'task_complete',
    root_turn_id: TURN,
    turn_id: TURN,
    last_agent_message: 'ok',
    started_at: 1795942812,
    completed_at: 1795942812,
    duration_ms: 10,
    time_to_first_token_ms: 5,
  });
}
function threadSettings(): string {
  return rec('event_msg', {
    type: 'thread_settings_applied',
    thread_id: SESSION,
    thread_settings: { model: 'gpt-5.5', approval_policy: 'never', permission_profile: { type: 'disabled' }, cwd: CWD },
  });
}
function turnContext(changes: Record<string, unknown> = {}): string {
  return rec('turn_context', { ...LATEST_TURN_CONTEXT, ...changes });
}
/** A second local compaction in the 0.169 order (summary, compacted, world_state, turn_context, item_completed). */
function compaction(id: string): string[] {
  return [
    rec(
      'response_item',
      { type: 'message', id: `msg_${id}`, role: 'assistant', content: [{ type: 'output_text', text: 'Summary 2' }] },
      { ...meta, compaction_output: true },
    ),
    rec('compacted', {
      message: 'Another language model started to solve this problem ...\nSummary 2',
      replacement_history: [],
      window_number: 2,
    }),
    rec('world_state', { full: true, state: {} }),
    turnContext(),
    rec('event_msg', {
      type: 'item_completed',
      thread_id: SESSION,
      turn_id: TURN,
      item: { type: 'ContextCompaction', id },
      started_at_ms: 1,
      completed_at_ms: 2,
    }),
  ];
}

// ---------------------------------------------------------------------------------------------
// Brief pages.

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

interface PageSpec {
  session?: string;
  version?: number;
  n: number;
  total: number;
  body: string;
  digest?: string;
}
function pageText(p: PageSpec): string {
  const v = p.version ?? 3;
  return `<<<LATCH-BRIEF session=${p.session ?? SESSION} version=${v} page=${p.n}/${p.total} sha256=${p.digest ?? sha(p.body)}>>>\n${p.body}\n<<<END-LATCH-BRIEF page=${p.n}/${p.total} version=${v}>>>\n`;
}
const BODY1 = '# Task brief\nGoal: make the tests pass.\nDo not touch vendor/ — ünïcödé ok.\n';
const BODY2 = 'Page two: constraints.\n- keep the API\n';
const BRIEF1: BriefDigest = { session: SESSION, version: 3, pages: [{ n: 1, sha256: sha(BODY1) }] };
const BRIEF2: BriefDigest = {
  session: SESSION,
  version: 3,
  pages: [
    { n: 1, sha256: sha(BODY1) },
    { n: 2, sha256: sha(BODY2) },
  ],
};

let callSeq = 0;
/** The model ran `latch brief --page n` and Codex recorded the call and its output. */
function read(output: string, type = 'function_call_output'): string[] {
  const id = `call_brief_${++callSeq}`;
  return [functionCall(id, 'latch brief --page 1'), functionCallOutput(id, output, type)];
}
const goodRead = (n = 1, total = 1, body = n === 1 ? BODY1 : BODY2) => read(execOutput(pageText({ n, total, body })));

// ---------------------------------------------------------------------------------------------
// The matrix.

interface Ctx {
  dir: string;
  file: string;
  recorded: RecordedTranscript;
}
interface Row {
  name: string;
  /** The rollout before Latch recorded it (default: the real fixture). */
  base?: Buffer;
  /** Lines appended before recording (default: a good read of page 1, an answer, task_complete). */
  prefix?: string[];
  /** Lines appended after recording, by the resume (default: thread_settings_applied). */
  tail?: string[];
  /** Raw bytes appended after the tail (e.g. a partial line). */
  raw?: string;
  /** Changes to the file after the tail was written. */
  mutate?: (c: Ctx) => void;
  input?: (i: QualifyInput, c: Ctx) => QualifyInput;
  opts?: QualifyOptions;
  decision: 'native' | 'full';
  /** Exactly the checks that fail, with a substring (or pattern) of each one's reason. */
  fails?: Record<string, string | RegExp>;
  /** Substrings of passing checks' reasons. */
  notes?: Record<string, string | RegExp>;
}

const defaultPrefix = () => [...goodRead(), assistant('brief read'), taskComplete()];
/** The fixture with its first (session_meta) line's payload changed. */
function withMeta(change: (payload: Record<string, unknown>) => void): Buffer {
  const [first, ...rest] = REAL_BYTES.toString('utf8').split('\n');
  const o = JSON.parse(first!) as { payload: Record<string, unknown> };
  change(o.payload);
  return Buffer.from([JSON.stringify(o), ...rest].join('\n'));
}
const withVersion = (v: string) => withMeta((p) => (p.cli_version = v));
const withForkedFrom = () => withMeta((p) => (p.forked_from_id = '01a22688-0000-7000-8000-000000000000'));

const FORK_BYTES = readFileSync(FORK);
const FORK_META = JSON.parse(FORK_BYTES.toString('utf8').split('\n')[0]!).payload as { id: string };

const rows: Row[] = [
  { name: 'all good: qualified writer, untouched prefix, complete read after the compaction', decision: 'native' },
  {
    name: 'all good, the read is in the tail (after the recorded position)',
    prefix: [assistant('before')],
    tail: [threadSettings(), ...goodRead()],
    decision: 'native',
    notes: { 'complete-read': 'page 1/1 at offset' },
  },
  {
    name: 'all good with a custom_tool_call_output read',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1 })), 'custom_tool_call_output'),
    decision: 'native',
  },
  {
    name: 'two-page brief, both pages read',
    prefix: [...goodRead(1, 2), ...goodRead(2, 2)],
    input: (i) => ({ ...i, currentBrief: BRIEF2 }),
    decision: 'native',
  },
  {
    name: 'two-page brief, page 2 never read',
    prefix: [...goodRead(1, 2)],
    input: (i) => ({ ...i, currentBrief: BRIEF2 }),
    decision: 'full',
    fails: { 'complete-read': 'page 2/2: no complete successful read after the latest compaction' },
  },
  {
    name: 'writer 0.168.9',
    base: withVersion('0.168.9'),
    decision: 'full',
    fails: { writer: 'cli_version 0.168.9 is not on the qualified list [' },
  },
  {
    name: 'writer 0.169.1',
    base: withVersion('0.169.1'),
    decision: 'full',
    fails: { writer: 'cli_version 0.169.1 is not on the qualified list' },
  },
  {
    name: 'writer 0.170.0',
    base: withVersion('0.170.0'),
    decision: 'full',
    fails: { writer: 'cli_version 0.170.0 is not on the qualified list' },
  },
  {
    name: 'writer 0.169.0-alpha.1 (no semver ranges)',
    base: withVersion('0.169.0-alpha.1'),
    decision: 'full',
    fails: { writer: 'not on the qualified list' },
  },
  {
    name: 'replaced file (new inode, same content)',
    mutate: (c) => {
      const copy = join(c.dir, 'copy.jsonl');
      copyFileSync(c.file, copy);
      renameSync(copy, c.file);
    },
    decision: 'full',
    fails: { file: 'replaced: device/inode' },
    notes: { 'append-only': 'unchanged' },
  },
  {
    name: 'truncated below the recorded size',
    mutate: (c) => truncateSync(c.file, c.recorded.size - 10),
    decision: 'full',
    fails: { 'append-only': 'file is shorter', tail: 'not evaluated: file is shorter' },
  },
  {
    name: 'one byte rewritten in the prefix',
    mutate: (c) => {
      const buf = readFileSync(c.file);
      const at = buf.indexOf('first run done');
      assert.ok(at > 0);
      buf[at + 13] = 'a'.charCodeAt(0);
      writeFileSync(c.file, buf); // same inode
    },
    decision: 'full',
    fails: { 'append-only': 'recorded prefix [0, ' },
  },
  {
    name: 'symlinked transcript path',
    input: (i, c) => {
      const link = join(c.dir, 'link.jsonl');
      symlinkSync(c.file, link);
      return { ...i, transcriptPath: link };
    },
    decision: 'full',
    fails: { file: 'is a symbolic link' },
  },
  {
    name: 'not owned by the current user (injected uid)',
    opts: { uid: 4242 },
    decision: 'full',
    fails: { file: 'not by the current user (uid 4242)' },
  },
  {
    name: 'never recorded',
    input: (i) => ({ ...i, recorded: null }),
    decision: 'full',
    fails: { file: 'never recorded', 'append-only': 'never recorded' },
  },
  {
    name: 'cwd changed in the latest turn_context',
    tail: [turnContext({ cwd: '/elsewhere' })],
    decision: 'full',
    fails: { identity: 'cwd "/elsewhere" != expected' },
  },
  {
    name: 'model changed in the latest turn_context',
    tail: [turnContext({ model: 'gpt-4.1' })],
    decision: 'full',
    fails: { identity: 'model "gpt-4.1" != expected "gpt-5.5"' },
  },
  {
    name: 'sandbox changed in the latest turn_context',
    tail: [turnContext({ sandbox_policy: { type: 'workspace-write', network_access: false } })],
    decision: 'full',
    fails: { identity: 'sandbox_policy' },
  },
  {
    name: 'approval policy changed',
    tail: [turnContext({ approval_policy: 'on-request' })],
    decision: 'full',
    fails: { identity: 'approval_policy "on-request"' },
  },
  {
    name: 'permission profile changed',
    tail: [turnContext({ permission_profile: { type: 'enabled' } })],
    decision: 'full',
    fails: { identity: 'permission_profile' },
  },
  {
    name: 'an earlier turn_context differs but the latest matches',
    prefix: [turnContext({ cwd: '/elsewhere' }), ...defaultPrefix(), turnContext()],
    decision: 'native',
  },
  {
    name: 'expected sandbox differs from the latest turn_context',
    input: (i) => ({ ...i, expected: { ...i.expected, sandbox_policy: { type: 'read-only' } } }),
    decision: 'full',
    fails: { identity: 'sandbox_policy {"type":"danger-full-access"} != expected {"type":"read-only"}' },
  },
  {
    name: 'key order inside the sandbox/permission objects does not matter',
    tail: [turnContext({ sandbox_policy: { network_access: false, type: 'workspace-write' } })],
    input: (i) => ({
      ...i,
      expected: { ...i.expected, sandbox_policy: { type: 'workspace-write', network_access: false } },
    }),
    decision: 'native',
  },
  {
    name: 'hook payload cwd differs',
    input: (i) => ({ ...i, payload: { ...i.payload, cwd: '/other' } }),
    decision: 'full',
    fails: { identity: 'hook payload cwd "/other"' },
  },
  {
    name: 'hook payload model differs',
    input: (i) => ({ ...i, payload: { ...i.payload, model: 'o3' } }),
    decision: 'full',
    fails: { identity: 'hook payload model "o3"' },
  },
  {
    name: 'hook payload session differs',
    input: (i) => ({ ...i, payload: { ...i.payload, session_id: 'other' } }),
    decision: 'full',
    fails: { identity: 'hook payload session_id "other"' },
  },
  {
    name: 'a second session_meta appended',
    tail: [rec('session_meta', { id: 'other', session_id: 'other', cli_version: '0.169.0', cwd: CWD })],
    decision: 'full',
    fails: { identity: 'another session_meta line at offset' },
  },
  {
    name: 'unknown record type in the tail',
    tail: [rec('rollout_checkpoint', { x: 1 })],
    decision: 'full',
    fails: { tail: 'unknown record type "rollout_checkpoint"' },
  },
  {
    name: 'non-JSON line in the tail',
    raw: '{"type":"event_msg", oops\n',
    decision: 'full',
    fails: { tail: 'is not JSON' },
  },
  {
    name: 'partial last line is ignored, and said so',
    raw: '{"timestamp":"2026-11-29T09:00:14.000Z","ordinal":99,"type":"event_msg","payload":{"type":"tok',
    decision: 'native',
    notes: { tail: 'ignored a partial last line' },
  },
  {
    name: 'a read in the partial last line does not count',
    prefix: [assistant('nothing read')],
    tail: [functionCall('call_p', 'latch brief --page 1')],
    raw: functionCallOutput('call_p', execOutput(pageText({ n: 1, total: 1, body: BODY1 }))).trimEnd(),
    decision: 'full',
    fails: { 'complete-read': 'page 1/1: no complete successful read' },
    notes: { tail: 'partial last line' },
  },
  {
    name: 'a partial last line that may be a turn_context makes the identity unknown',
    raw: turnContext().slice(0, 200),
    decision: 'full',
    fails: { identity: 'partial last line at offset' },
    notes: { tail: 'partial last line' },
  },
  {
    name: 'a partial last line that may be a compaction invalidates earlier reads',
    raw: compaction('cc-p')[1]!.slice(0, 120),
    decision: 'full',
    fails: { 'complete-read': 'before the latest compaction' },
  },
  {
    name: 'recorded position inside a line',
    input: (i, c) => {
      const size = c.recorded.size - 5;
      return { ...i, recorded: { ...c.recorded, size, sha256: sha(readFileSync(c.file).subarray(0, size)) } };
    },
    decision: 'full',
    fails: { tail: 'is inside a line' },
  },
  {
    name: 'failed read: isError wrapper around a valid page',
    prefix: read(
      `{"isError": true, "content": ${JSON.stringify(execOutput(pageText({ n: 1, total: 1, body: BODY1 })))}}`,
    ),
    decision: 'full',
    fails: { 'complete-read': 'the output is an error result (isError: true)' },
  },
  {
    name: 'failed read: blocked by PreToolUse',
    prefix: read(
      `Command blocked by PreToolUse hook: latched. Command: latch brief --page 1\n${pageText({ n: 1, total: 1, body: BODY1 })}`,
    ),
    decision: 'full',
    fails: { 'complete-read': 'the call was denied by a PreToolUse hook' },
  },
  {
    name: 'failed read: non-zero exit',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1 }), { exit: 1 })),
    decision: 'full',
    fails: { 'complete-read': 'the command exited with code 1' },
  },
  {
    name: 'failed read: still running',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1 }), { running: true })),
    decision: 'full',
    fails: { 'complete-read': 'the command had not finished (still running)' },
  },
  {
    name: 'failed read: truncated output (original token count above what was shown)',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1 }), { original: 5000 })),
    decision: 'full',
    fails: { 'complete-read': 'truncated (original token count 5000 >' },
  },
  {
    name: 'failed read: truncation marker in the output',
    prefix: read(
      execOutput(
        pageText({ n: 1, total: 1, body: `# Task brief\nGoal…\n…120 tokens truncated…\nend\n` }).replace(
          /sha256=[0-9a-f]{64}/,
          `sha256=${sha(BODY1)}`,
        ),
      ),
    ),
    decision: 'full',
    fails: { 'complete-read': /truncated \(marker line/ },
  },
  {
    name: 'failed read: Codex truncation warning in front of the page (count consistent)',
    prefix: (() => {
      const text = `Warning: truncated output (original token count: 900)\nTotal output lines: 9\n\n${pageText({ n: 1, total: 1, body: BODY1 })}`;
      return read(execOutput(text, { original: approxTokens(text) }));
    })(),
    decision: 'full',
    fails: { 'complete-read': 'truncated ("Warning: truncated output")' },
  },
  {
    name: 'failed read: wrong digest (a page of another text)',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: 'some other brief\n' }))),
    decision: 'full',
    fails: { 'complete-read': 'digest' },
  },
  {
    name: 'failed read: body edited under the right header digest',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1.replace('tests', 'TESTS'), digest: sha(BODY1) }))),
    decision: 'full',
    fails: { 'complete-read': 'the body does not match its sha256' },
  },
  {
    name: 'failed read: page of an older brief version',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1, version: 2 }))),
    decision: 'full',
    fails: { 'complete-read': 'the page is of version 2; the current version is 3' },
  },
  {
    name: 'failed read: page of another session',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1, session: 'someone-else' }))),
    decision: 'full',
    fails: { 'complete-read': 'the page belongs to session someone-else' },
  },
  {
    name: 'failed read: two page blocks in one output',
    prefix: read(execOutput(pageText({ n: 1, total: 1, body: BODY1 }).repeat(2))),
    decision: 'full',
    fails: { 'complete-read': '2 page blocks in one output' },
  },
  {
    name: 'a failed read followed by a good one is fine',
    prefix: [...read(execOutput(pageText({ n: 1, total: 1, body: BODY1 }), { exit: 1 })), ...goodRead()],
    decision: 'native',
  },
  {
    name: 'read before a second compaction (in the prefix; Latch had not seen it)',
    prefix: [...goodRead(), ...compaction('cc-2'), assistant('after compaction 2')],
    decision: 'full',
    fails: { 'complete-read': '1 brief read(s) before the latest compaction' },
  },
  {
    name: 'read before a second compaction that is in the tail',
    tail: [...compaction('cc-3')],
    decision: 'full',
    fails: { 'complete-read': 'before the latest compaction' },
  },
  {
    name: 'read before lastCompactionOffset given by Latch',
    prefix: [...goodRead(), assistant('x')],
    input: (i, c) => ({ ...i, lastCompactionOffset: c.recorded.size - 1 }),
    decision: 'full',
    fails: { 'complete-read': 'before the latest compaction' },
  },
  {
    name: 'read again after the second compaction',
    prefix: [...goodRead(), ...compaction('cc-4'), ...goodRead()],
    decision: 'native',
  },
  {
    name: 'no brief and no compaction since the recorded position',
    prefix: [assistant('no brief')],
    input: (i) => ({ ...i, currentBrief: null }),
    decision: 'native',
    notes: { 'complete-read': 'no brief, and no compaction since the recorded position' },
  },
  {
    name: 'no brief but a compaction since the recorded position',
    tail: [...compaction('cc-5')],
    input: (i) => ({ ...i, currentBrief: null }),
    decision: 'full',
    fails: { 'complete-read': 'no brief, but a compaction happened since the recorded position' },
  },
  {
    name: 'fork: session_meta has forked_from_id',
    base: withForkedFrom(),
    decision: 'full',
    fails: { fork: 'fork: session_meta.forked_from_id' },
  },
  {
    name: 'fork: the real fork rollout (history_base, no compacted line of its own)',
    base: FORK_BYTES,
    input: (i) => ({
      ...i,
      lastCompactionOffset: null,
      expected: { ...i.expected, session_id: FORK_META.id },
      payload: { ...i.payload, session_id: FORK_META.id },
      currentBrief: { ...BRIEF1, session: SESSION },
    }),
    decision: 'full',
    fails: { fork: /^fork: session_meta\.forked_from_id "01a22688-8615/ },
  },
];

function buildAndRun(row: Row): { d: QualifyDecision; ctx: Ctx } {
  const dir = mkdtempSync(join(tmpdir(), 'latch-qualify-'));
  const file = join(dir, 'rollout-2026-11-29T09-00-11-x.jsonl');
  writeFileSync(file, row.base ?? REAL_BYTES);
  appendFileSync(file, (row.prefix ?? defaultPrefix()).join(''));
  const bytes = readFileSync(file);
  const st = statSync(file, { bigint: true });
  const recorded: RecordedTranscript = {
    path: file,
    realpath: realpathSync(file),
    dev: String(st.dev),
    ino: String(st.ino),
    uid: Number(st.uid),
    size: bytes.length,
    sha256: sha(bytes),
  };
  appendFileSync(file, (row.tail ?? [threadSettings()]).join('') + (row.raw ?? ''));
  const ctx: Ctx = { dir, file, recorded };
  row.mutate?.(ctx);
  const base: QualifyInput = {
    transcriptPath: file,
    recorded,
    expected: EXPECTED,
    payload: { session_id: SESSION, cwd: CWD, model: 'gpt-5.5', permission_mode: 'bypassPermissions' },
    qualifiedVersions: QUALIFIED_VERSIONS,
    currentBrief: BRIEF1,
    lastCompactionOffset: row.base === FORK_BYTES ? null : COMPACTION_END,
  };
  const input = row.input ? row.input(base, ctx) : base;
  return { d: qualifyResume(input, row.opts), ctx };
}

const matches = (reason: string, want: string | RegExp) =>
  typeof want === 'string' ? reason.includes(want) : want.test(reason);

for (const row of rows) {
  test(`qualify: ${row.name} → ${row.decision}`, () => {
    const { d, ctx } = buildAndRun(row);
    try {
      const dump = JSON.stringify(d, null, 2);
      assert.deepEqual(
        d.checks.map((c) => c.name),
        [...QUALIFY_CHECKS],
        'every check is reported, in order',
      );
      for (const c of d.checks) assert.ok(c.reason.length > 0, `check ${c.name} has a reason`);
      assert.equal(d.decision, row.decision, dump);
      const failing = d.checks.filter((c) => !c.ok).map((c) => c.name);
      assert.deepEqual(failing.sort(), Object.keys(row.fails ?? {}).sort(), dump);
      for (const [name, want] of Object.entries({ ...(row.fails ?? {}), ...(row.notes ?? {}) })) {
        const c = d.checks.find((x) => x.name === name)!;
        assert.ok(
          matches(c.reason, want),
          `check ${name}: reason ${JSON.stringify(c.reason)} should contain ${String(want)}`,
        );
      }
    } finally {
      rmSync(ctx.dir, { recursive: true, force: true, maxRetries: 5 });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Single cases and properties.

test('qualify: a missing transcript reports every check, all failing', () => {
  const d = qualifyResume({
    transcriptPath: join(tmpdir(), 'latch-qualify-does-not-exist.jsonl'),
    recorded: null,
    expected: EXPECTED,
    payload: { session_id: SESSION, cwd: CWD, model: 'gpt-5.5', permission_mode: null },
    qualifiedVersions: QUALIFIED_VERSIONS,
    currentBrief: BRIEF1,
    lastCompactionOffset: null,
  });
  assert.equal(d.decision, 'full');
  assert.deepEqual(
    d.checks.map((c) => [c.name, c.ok]),
    QUALIFY_CHECKS.map((n) => [n, false]),
  );
  assert.match(d.checks.find((c) => c.name === 'identity')!.reason, /^not evaluated: cannot open/);
});

test('qualify: a directory at the transcript path is not a regular file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'latch-qualify-'));
  try {
    const d = qualifyResume({
      transcriptPath: dir,
      recorded: { path: dir, realpath: realpathSync(dir), dev: '0', ino: '0', uid: 0, size: 0, sha256: sha('') },
      expected: EXPECTED,
      payload: { session_id: SESSION, cwd: CWD, model: 'gpt-5.5', permission_mode: null },
      qualifiedVersions: QUALIFIED_VERSIONS,
      currentBrief: BRIEF1,
      lastCompactionOffset: null,
    });
    assert.equal(d.decision, 'full');
    assert.match(d.checks[0]!.reason, /not a regular file/);
  } finally {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  }
});

test('qualify: small read chunks give the same decision and reasons (lines split across chunks)', () => {
  for (const row of [
    rows[0]!,
    rows.find((r) => r.name.startsWith('two-page brief, page 2'))!,
    rows.find((r) => r.name.startsWith('one byte'))!,
  ]) {
    const big = buildAndRun(row);
    const small = buildAndRun({ ...row, opts: { ...row.opts, chunkSize: 4096 } });
    const strip = (d: QualifyDecision) => d.checks.map((c) => [c.name, c.ok]);
    assert.deepEqual(strip(small.d), strip(big.d));
    rmSync(big.ctx.dir, { recursive: true, force: true, maxRetries: 5 });
    rmSync(small.ctx.dir, { recursive: true, force: true, maxRetries: 5 });
  }
});

test('qualify: any single byte changed in the recorded prefix is never native', () => {
  const dir = mkdtempSync(join(tmpdir(), 'latch-qualify-'));
  const file = join(dir, 'r.jsonl');
  const original = Buffer.concat([REAL_BYTES, Buffer.from(defaultPrefix().join(''))]);
  writeFileSync(file, original);
  const st = statSync(file, { bigint: true });
  const recorded: RecordedTranscript = {
    path: file,
    realpath: realpathSync(file),
    dev: String(st.dev),
    ino: String(st.ino),
    uid: Number(st.uid),
    size: original.length,
    sha256: sha(original),
  };
  const input: QualifyInput = {
    transcriptPath: file,
    recorded,
    expected: EXPECTED,
    payload: { session_id: SESSION, cwd: CWD, model: 'gpt-5.5', permission_mode: null },
    qualifiedVersions: QUALIFIED_VERSIONS,
    currentBrief: BRIEF1,
    lastCompactionOffset: COMPACTION_END,
  };
  assert.equal(qualifyResume(input).decision, 'native');
  try {
    fc.assert(
      fc.property(fc.nat({ max: original.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, delta) => {
        const buf = Buffer.from(original);
        buf[at] = (buf[at]! + delta) & 0xff;
        writeFileSync(file, buf);
        const d = qualifyResume(input);
        assert.equal(d.decision, 'full');
        assert.equal(d.checks.find((c) => c.name === 'append-only')!.ok, false);
      }),
      { numRuns: 40 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  }
});

test('page blocks: any body round-trips; a changed digest is refused', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.nat({ max: 9 }), (body, v) => {
      fc.pre(!body.includes('LATCH-BRIEF ') && !body.includes('\r'));
      // Lone surrogates do not survive UTF-8; the brief is UTF-8 text.
      fc.pre(Buffer.from(body, 'utf8').toString('utf8') === body);
      const text = pageText({ n: 1, total: 1, body, version: v });
      const [r, ...more] = parsePages(text);
      assert.ok(r && more.length === 0, JSON.stringify(parsePages(text)));
      assert.equal(r.body, body);
      assert.equal(r.sha256, sha(body));
      assert.equal(r.bodyOk, true);
      assert.equal(r.version, v);
      const bad = parsePages(pageText({ n: 1, total: 1, body, version: v, digest: sha(body + 'x') }));
      assert.equal(bad[0]?.bodyOk, false);
    }),
    { numRuns: 300 },
  );
});

test('truncation predicate: original count above the shown estimate, or a "tokens truncated" line', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), fc.integer({ min: 1, max: 100 }), (text, extra) => {
      fc.pre(!/tokens? truncated/i.test(text));
      assert.equal(isTruncatedOutput(execOutput(text)), false);
      assert.equal(isTruncatedOutput(execOutput(text, { original: approxTokens(text) + extra })), true);
    }),
  );
  // The 0.169 shapes (docs/codex-notes.md): header warning, bytes omitted, mid-line marker.
  const warned = `Warning: truncated output (original token count: 62300)\nTotal output lines: 50000\n\n1\n2\n42…62234 tokens truncated…671\n50000\n`;
  assert.equal(
    outputTruncation(execOutput(warned, { original: approxTokens(warned) })),
    'truncated ("Warning: truncated output")',
  );
  assert.match(outputTruncation('x\n... 1290000 bytes omitted ...\ny') ?? '', /bytes omitted/);
  assert.match(
    outputTruncation('Total output lines: 400\n\nhead\n42…1234 tokens truncated…671\ntail') ?? '',
    /marker line/,
  );
  // Codex's own counts: `seq 1 2000` (8,893 bytes) = 2,224 tokens, 30,000 "a"s + newline = 7,501.
  assert.equal(approxTokens(Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join('')), 2224);
  assert.equal(approxTokens('a'.repeat(30000) + '\n'), 7501);
  assert.equal(isTruncatedOutput('x\n[5 token truncated]\n'), true);
  // The real fixture's outputs are complete.
  assert.equal(
    isTruncatedOutput(
      'Chunk ID: dda0cf\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello\n',
    ),
    false,
  );
});
