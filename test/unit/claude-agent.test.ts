// The Claude Code agent's core (src/agents/claude/): payloads, replies, tools, the transcript scan,
// the tool-output rule and the brief's capture, on payloads and transcripts captured from the real
// Claude Code 2.1.332 (test/fixtures/claude/README.md), and the hook path end to end in-process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { claude } from '../../src/agents/claude/index.js';
import { claudeDeny, claudeReply, parseClaudePayload } from '../../src/agents/claude/hooks.js';
import { classifyTool } from '../../src/agents/claude/tools.js';
import {
  claudeRegistrationPaths,
  findClaudeTranscript,
  scanClaudeTranscript,
} from '../../src/agents/claude/transcript.js';
import { claudeToolOutput, encodeToolResult } from '../../src/agents/claude/outputs.js';
import { captureFromTranscript } from '../../src/agents/claude/capture.js';
import { claudeSlow } from '../../src/agents/claude/slow.js';
import { EMPTY_SCAN, type ScanState } from '../../src/session/transcript.js';
import { pageRead } from '../../src/continuity/page-read.js';
import type { Decision } from '../../src/guard/events.js';
import { runHook } from '../../src/hook.js';
import { openStore } from '../../src/store/store.js';
import { sandbox, type Sandbox } from '../helpers/workspace.js';

const FIX = join('test', 'fixtures', 'claude');
const TRANSCRIPT = join(FIX, 'compacting-transcript.jsonl');
const FORK = join(FIX, 'fork-transcript.jsonl');

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

function parsed(p: unknown) {
  const r = parseClaudePayload(JSON.stringify(p));
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Claude Code 2.1.332's hook output schema (the binary's zod object for command-hook JSON output,
// transcribed), strict here so that Latch's replies use only keys Claude Code knows.

const HookSpecific = v.variant('hookEventName', [
  v.strictObject({
    hookEventName: v.literal('PreToolUse'),
    permissionDecision: v.optional(v.picklist(['allow', 'deny', 'ask', 'defer'])),
    permissionDecisionReason: v.optional(v.string()),
    updatedInput: v.optional(v.record(v.string(), v.unknown())),
    additionalContext: v.optional(v.string()),
  }),
  v.strictObject({
    hookEventName: v.literal('SessionStart'),
    additionalContext: v.optional(v.string()),
    initialUserMessage: v.optional(v.string()),
    sessionTitle: v.optional(v.string()),
    watchPaths: v.optional(v.array(v.string())),
    reloadSkills: v.optional(v.boolean()),
  }),
  v.strictObject({ hookEventName: v.literal('PostToolUse'), additionalContext: v.optional(v.string()) }),
  v.strictObject({ hookEventName: v.literal('PostToolUseFailure'), additionalContext: v.optional(v.string()) }),
  v.strictObject({ hookEventName: v.literal('Stop'), additionalContext: v.optional(v.string()) }),
  v.strictObject({ hookEventName: v.literal('SubagentStop'), additionalContext: v.optional(v.string()) }),
  v.strictObject({ hookEventName: v.literal('UserPromptSubmit'), additionalContext: v.optional(v.string()) }),
]);

const HookOutput = v.strictObject({
  continue: v.optional(v.boolean()),
  suppressOutput: v.optional(v.boolean()),
  stopReason: v.optional(v.string()),
  decision: v.optional(v.picklist(['approve', 'block'])),
  reason: v.optional(v.string()),
  systemMessage: v.optional(v.string()),
  hookSpecificOutput: v.optional(HookSpecific),
});

/** Asserts that a reply is empty or valid Claude Code output for `event`; returns the parsed JSON. */
function assertClaudeReply(event: string, stdout: string | null): Record<string, unknown> | null {
  if (stdout === null) return null;
  const data = JSON.parse(stdout) as Record<string, unknown>;
  const r = v.safeParse(HookOutput, data);
  assert.ok(r.success, `${event} reply violates Claude Code's schema: ${stdout}`);
  const hso = data.hookSpecificOutput as { hookEventName?: string } | undefined;
  if (hso) assert.equal(hso.hookEventName, event, 'hookSpecificOutput names the event it answers');
  // Never a reply that blocks a turn or compaction.
  assert.equal(data.decision, undefined);
  assert.equal(data.continue, undefined);
  return data;
}

const decision = (over: Partial<Decision>): Decision => ({
  verdict: 'observe',
  reasons: [],
  message: null,
  state: 'mutable',
  ...over,
});

// ---------------------------------------------------------------------------------------------
// Payloads

test('every captured 2.1.332 payload parses, with the event Latch needs', () => {
  const names = readdirSync(FIX)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5));
  const expected: Record<string, unknown> = {
    'session-start-startup': { type: 'session_start', source: 'startup' },
    'session-start-compact': { type: 'session_start', source: 'compact' },
    'session-start-resume': { type: 'session_start', source: 'resume' },
    'session-start-fork': { type: 'session_start', source: 'fork' },
    'pre-compact-auto': { type: 'pre_compact', trigger: 'auto' },
    'pre-compact-manual': { type: 'pre_compact', trigger: 'manual' },
    'post-compact-auto': { type: 'post_compact', trigger: 'auto' },
    'post-compact-manual': { type: 'post_compact', trigger: 'manual' },
    stop: { type: 'turn_end', kind: 'stop' },
    'subagent-stop': { type: 'turn_end', kind: 'subagent_stop' },
    'subagent-stop-compact': { type: 'turn_end', kind: 'subagent_stop' },
    'session-end': { type: 'turn_end', kind: 'session_end' },
    'user-prompt-submit': null,
    'subagent-start': null,
  };
  assert.ok(names.length >= 27, `all fixtures present (${names.length})`);
  for (const name of names) {
    const r = parsed(fixture(name));
    if (name in expected) assert.deepEqual(r.event, expected[name], name);
    else if (name.startsWith('pre-tool-use')) assert.equal(r.event?.type, 'pre_tool', name);
    else if (name.startsWith('post-tool-use')) assert.equal(r.event?.type, 'post_tool', name);
    else assert.fail(`no expectation for fixture ${name}`);
    assert.equal(r.obs.cwd, '/home/u/proj');
  }
});

test('observation: prompt_id stands in for the turn id; agent_id marks a sub-agent call', () => {
  const pre = parsed(fixture('pre-tool-use-bash'));
  assert.deepEqual(pre.obs, {
    sessionId: 'b518aeac-5ba0-4fde-b760-74eb64550278',
    turnId: 'e76c9d09-3a15-449b-a8a9-3f507d4c0850',
    cwd: '/home/u/proj',
    transcriptPath: '/home/u/.claude/projects/-home-u-proj/b518aeac-5ba0-4fde-b760-74eb64550278.jsonl',
    model: null,
    permissionMode: 'bypassPermissions',
    agentId: null,
  });
  assert.deepEqual(pre.event, {
    type: 'pre_tool',
    call: {
      name: 'Bash',
      kind: 'shell',
      command: 'cat somefile',
      mcpServer: null,
      toolUseId: 'toolu_01cat',
      input: { command: 'cat somefile', description: 'Read somefile' },
    },
  });
  // SessionStart(startup) has no prompt_id: no turn.
  assert.equal(parsed(fixture('session-start-startup')).obs.turnId, null);
  assert.equal(parsed(fixture('session-start-compact')).obs.model, 'claude-opus-5-5');
  const sub = parsed(fixture('pre-tool-use-bash-subagent'));
  assert.equal(sub.obs.agentId, 'a3011407ad6b97ce3');
  assert.equal(sub.obs.transcriptPath, parsed(fixture('pre-tool-use-mcp')).obs.transcriptPath, 'root transcript');
  assert.equal(parsed(fixture('subagent-stop-compact')).obs.agentId, 'a8df1f9c4e50e689c');
});

test('a failed call (PostToolUseFailure) closes like PostToolUse: the command ran', () => {
  const r = parsed(fixture('post-tool-use-failure-bash'));
  assert.equal(r.event?.type, 'post_tool');
  assert.equal(r.event?.type === 'post_tool' && r.event.call.toolUseId, 'toolu_02fail');
});

test('the reference’s verbatim PreToolUse shape parses', () => {
  const text =
    '{"session_id":"8278e8fb-…","transcript_path":"/home/u/.claude/projects/-home-u-proj/8278e8fb-….jsonl","cwd":"/home/u/proj",' +
    '"prompt_id":"53ef377e-…","permission_mode":"bypassPermissions","effort":{"level":"medium"},' +
    '"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo one > a.txt","description":"write a"},' +
    '"tool_use_id":"toolu_…"}';
  const r = parseClaudePayload(text);
  assert.ok(r.ok);
  assert.equal(r.obs.turnId, '53ef377e-…');
  assert.equal(r.event?.type === 'pre_tool' && r.event.call.command, 'echo one > a.txt');
  const pc = parseClaudePayload(
    '{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"PreCompact","trigger":"auto","custom_instructions":null}',
  );
  assert.ok(pc.ok);
  assert.deepEqual(pc.event, { type: 'pre_compact', trigger: 'auto' });
});

test('unknown fields are tolerated; a SessionStart source Latch does not know is `unknown`', () => {
  const p = { ...fixture('pre-tool-use-write'), brand_new_field: { x: 1 } };
  assert.equal(parsed(p).event?.type, 'pre_tool');
  const s = parsed({ ...fixture('session-start-startup'), source: 'teleport' });
  assert.deepEqual(s.event, { type: 'session_start', source: 'unknown', raw: 'teleport' });
  assert.deepEqual(parsed({ ...fixture('session-start-startup'), source: 'clear' }).event, {
    type: 'session_start',
    source: 'clear',
  });
  assert.deepEqual(parsed({ ...fixture('stop'), hook_event_name: 'StopFailure' }).event, {
    type: 'turn_end',
    kind: 'interrupt',
  });
  for (const ev of ['Notification', 'PermissionDenied', 'PostToolBatch', 'CwdChanged'])
    assert.equal(parsed({ ...fixture('stop'), hook_event_name: ev }).event, null, ev);
});

test('invalid payloads are refused with the event and tool named when they can be', () => {
  const bad = parseClaudePayload(JSON.stringify({ ...fixture('pre-tool-use-bash'), tool_name: 7 }));
  assert.ok(!bad.ok);
  assert.equal(bad.eventName, 'PreToolUse');
  assert.match(bad.error, /tool_name/);
  const noSession = parseClaudePayload(JSON.stringify({ ...fixture('pre-tool-use-write'), session_id: '' }));
  assert.ok(!noSession.ok);
  assert.equal(noSession.toolName, 'Write');
  const notJson = parseClaudePayload('{"hook_event_name":"PreToolUse"');
  assert.ok(!notJson.ok);
  assert.match(notJson.error, /not JSON/);
  assert.equal(parseClaudePayload(JSON.stringify({ ...fixture('stop'), hook_event_name: 'Nope' })).ok, false);
});

// ---------------------------------------------------------------------------------------------
// Replies

test('deny: exit 0, permissionDecision deny with the reason, systemMessage for the human', () => {
  const d = claudeDeny('latched: run latch verify', 'Latch denied Bash');
  assert.equal(d.exitCode, 0);
  const out = assertClaudeReply('PreToolUse', d.stdout);
  assert.deepEqual(out, {
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: 'latched: run latch verify',
    },
    systemMessage: 'Latch denied Bash',
  });
  assert.equal(JSON.parse(claudeDeny('r').stdout!).systemMessage, undefined);
});

test('replies for every event are valid Claude Code output (and never block a turn)', () => {
  const deny = claudeReply('PreToolUse', decision({ verdict: 'deny', message: 'no', notice: 'told' }));
  assert.deepEqual(assertClaudeReply('PreToolUse', deny.stdout), {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'no' },
    systemMessage: 'told',
  });
  assert.equal(claudeReply('PreToolUse', decision({ verdict: 'allow' })).stdout, null);
  // A held read: the FULL original tool_input with only the command replaced.
  const input = { command: 'WRAPPED', description: 'Read somefile', timeout: 5000 };
  const held = claudeReply('PreToolUse', decision({ verdict: 'allow', updatedInput: input }));
  assert.deepEqual(assertClaudeReply('PreToolUse', held.stdout), {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow', updatedInput: input },
  });
  const start = claudeReply('SessionStart', decision({ message: 'brief', notice: 'n' }));
  assert.deepEqual(assertClaudeReply('SessionStart', start.stdout), {
    hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'brief' },
    systemMessage: 'n',
  });
  assert.equal(claudeReply('SessionStart', decision({})).stdout, null);
  for (const ev of ['PreCompact', 'PostCompact', 'Stop', 'SubagentStop', 'PostToolUse', 'PostToolUseFailure']) {
    const r = claudeReply(ev, decision({ notice: 'latched', message: 'ignored' }));
    assert.equal(r.exitCode, 0);
    assert.deepEqual(assertClaudeReply(ev, r.stdout), { systemMessage: 'latched' }, ev);
    assert.equal(claudeReply(ev, decision({ message: 'x' })).stdout, null, ev);
  }
});

// ---------------------------------------------------------------------------------------------
// Tools

test('tool classification table', () => {
  const table: [string, unknown, string | null, Partial<ReturnType<typeof classifyTool>>][] = [
    ['Bash', { command: 'ls' }, 'shell', { command: 'ls' }],
    ['Write', { file_path: '/w/a.txt', content: 'x' }, 'patch', { paths: ['/w/a.txt'], summary: 'write /w/a.txt' }],
    [
      'Edit',
      { file_path: 'a.txt', old_string: 'a', new_string: 'b' },
      'patch',
      { paths: ['a.txt'], summary: 'edit a.txt' },
    ],
    ['MultiEdit', { file_path: '/w/m.txt', edits: [] }, 'patch', { paths: ['/w/m.txt'], summary: 'edit /w/m.txt' }],
    [
      'NotebookEdit',
      { notebook_path: '/w/n.ipynb', new_source: '' },
      'patch',
      { paths: ['/w/n.ipynb'], summary: 'edit notebook /w/n.ipynb' },
    ],
    ['Write', {}, 'patch', { paths: [], summary: 'write (no path)' }],
    ['Agent', { description: 'Write sub.txt', prompt: 'p', subagent_type: 'general-purpose' }, 'agent', {}],
    ['Task', { prompt: 'p' }, 'agent', {}],
    ['mcp__w__write_file', { path: 'x' }, 'mcp', { mcpServer: 'w' }],
    ['mcp__my__server__tool', {}, 'mcp', { mcpServer: null }], // ambiguous: names no read-only server
    ['Read', { file_path: '/w/a' }, null, {}],
    ['Glob', {}, null, {}],
    ['Grep', {}, null, {}],
    ['LS', {}, null, {}],
    ['ListAgents', {}, null, {}],
    ['ToolSearch', {}, null, {}],
    ['TodoWrite', {}, null, {}],
    // The web tools change no file but reach the network: denied while held (test/unit/claude-network.test.ts).
    ['WebSearch', { query: 'q' }, 'network', { command: 'q' }],
    ['WebFetch', { url: 'https://x.invalid/', prompt: 'p' }, 'network', { command: 'https://x.invalid/' }],
    ['Monitor', { command: 'echo hi > m.txt' }, 'unknown', { command: 'echo hi > m.txt' }],
    ['EnterWorktree', {}, 'unknown', {}],
    ['SendMessage', {}, 'unknown', {}],
    ['CronCreate', {}, 'unknown', {}],
    ['ScheduleWakeup', {}, 'unknown', {}],
    ['Workflow', {}, 'unknown', {}],
    ['Skill', {}, 'unknown', {}],
    ['ReportFindings', {}, 'unknown', {}],
    ['toString', {}, 'unknown', {}],
  ];
  for (const [name, input, kind, more] of table) {
    const c = classifyTool(name, input, 'toolu_x');
    assert.equal(c.kind, kind, name);
    assert.equal(c.toolUseId, 'toolu_x');
    for (const [k, val] of Object.entries(more)) assert.deepEqual(c[k as keyof typeof c], val, `${name}.${k}`);
  }
  // The hook's fail-closed path asks with no input: the read-only tools stay read-only.
  assert.equal(classifyTool('Read', null, null).kind, null);
  assert.equal(classifyTool('Bash', null, null).kind, 'shell');
  // A Bash call keeps its whole input (a held read rewrites only the command).
  const input = { command: 'cat a', description: 'd', run_in_background: false };
  assert.deepEqual(classifyTool('Bash', input).input, input);
});

// ---------------------------------------------------------------------------------------------
// The transcript scan

/** Byte offsets just past each line of a file. */
function lineEnds(buf: Buffer): number[] {
  const out: number[] = [];
  for (let i = buf.indexOf(0x0a); i >= 0; i = buf.indexOf(0x0a, i + 1)) out.push(i + 1);
  return out;
}

/** The byte offset just past the line holding `needle`, for every such line. */
function endsOf(buf: Buffer, needle: string): number[] {
  const ends = lineEnds(buf);
  const out: number[] = [];
  let start = 0;
  for (const end of ends) {
    if (buf.subarray(start, end).includes(needle)) out.push(end);
    start = end;
  }
  return out;
}

test('scan of a real compacting transcript: each compact_boundary, tool results, the brief read, meta', () => {
  const buf = readFileSync(TRANSCRIPT);
  const r = scanClaudeTranscript(TRANSCRIPT, EMPTY_SCAN);
  const boundaries = endsOf(buf, '"subtype":"compact_boundary"');
  assert.equal(boundaries.length, 2, 'auto + manual compaction');
  assert.deepEqual(r.compactions, [
    // `at`: the boundary line's own timestamp (a boundary written after a restore trips again);
    // `boundaryId`: its uuid; `atHead`: false, the session's own compactions follow its conversation.
    {
      index: 1,
      endOffset: boundaries[0],
      via: 'compact_boundary',
      summaryKind: null,
      at: '2026-12-01T15:35:44.593Z',
      boundaryId: 'cb77875a-17ce-467b-ba98-85a82308ab0e',
      atHead: false,
    },
    {
      index: 2,
      endOffset: boundaries[1],
      via: 'compact_boundary',
      summaryKind: null,
      at: '2026-12-01T15:35:57.271Z',
      boundaryId: '8650f2eb-e18e-4cb6-b1b2-0161f364e6e0',
      atHead: false,
    },
  ]);
  assert.equal(r.state.offset, buf.length);
  assert.equal(r.state.compactions, 2);
  assert.equal(r.state.group, null);
  assert.equal(r.reset, null);
  assert.equal(r.badLines, 0);
  assert.equal(r.turnContext, null);
  assert.deepEqual(r.outputs, [
    'toolu_01cat',
    'toolu_02fail',
    'toolu_03page',
    'toolu_04write',
    'toolu_05edit',
    'toolu_06a',
    'toolu_07b',
    'toolu_08c',
  ]);
  assert.deepEqual(r.meta, {
    id: 'b518aeac-5ba0-4fde-b760-74eb64550278',
    cliVersion: '2.1.332',
    cwd: '/home/u/proj',
    forkedFrom: null,
  });
  assert.equal(r.briefOutputs.length, 1);
  const b = r.briefOutputs[0]!;
  assert.equal(b.callId, 'toolu_03page');
  assert.equal(b.compactionsBefore, 0);
  assert.equal(b.endOffset, endsOf(buf, '"tool_use_id":"toolu_03page","type":"tool_result"')[0]);
  // The page the model read is a complete read by the one page-read rule.
  const body = 'Task: finish the widget.\nLine two of the page.';
  const sha = createHash('sha256').update(body, 'utf8').digest('hex');
  const read = pageRead(b.output, { session: 'S', version: 1, pages: [{ n: 1, sha256: sha }] }, claudeToolOutput);
  assert.deepEqual(read, { ok: true, page: 1, reasons: [] });
  const stale = pageRead(b.output, { session: 'S', version: 2, pages: [{ n: 1, sha256: sha }] }, claudeToolOutput);
  assert.equal(stale.ok, false);
});

test('a fork starts with a copy of its parent’s boundary: its first scan finds it (every boundary counts)', () => {
  const r = scanClaudeTranscript(FORK, EMPTY_SCAN);
  assert.equal(r.compactions.length, 1);
  assert.equal(r.compactions[0]!.endOffset, endsOf(readFileSync(FORK), '"subtype":"compact_boundary"')[0]);
  // The copy keeps the parent's latest boundary uuid, and opens the file (only metadata before it).
  assert.equal(r.compactions[0]!.boundaryId, '8650f2eb-e18e-4cb6-b1b2-0161f364e6e0');
  assert.equal(r.compactions[0]!.atHead, true);
  assert.deepEqual(r.meta, {
    id: '3a6c6dfe-ca5e-47d0-b9a8-6e05f180aaba',
    cliVersion: '2.1.332',
    cwd: '/home/u/proj',
    forkedFrom: null,
  });
  // The copied boundary has the parent's uuid: still one more compaction, never deduplicated.
  const parentUuid = /"subtype":"compact_boundary".*?"uuid":"([^"]+)"/.exec(readFileSync(FORK, 'utf8'))![1]!;
  assert.ok(readFileSync(TRANSCRIPT, 'utf8').includes(`"uuid":"${parentUuid}"`));
  const sb = sandbox({ git: false, store: false });
  try {
    const twice = join(sb.base, 'twice.jsonl');
    writeFileSync(twice, Buffer.concat([readFileSync(FORK), readFileSync(FORK)]));
    const both = scanClaudeTranscript(twice, EMPTY_SCAN).compactions;
    assert.equal(both.length, 2);
    // Only the first opens the file: the second follows conversation records.
    assert.deepEqual(
      both.map((c) => [c.boundaryId, c.atHead]),
      [
        [parentUuid, true],
        [parentUuid, false],
      ],
    );
  } finally {
    sb.cleanup();
  }
});

test('incremental scan across appends (cut anywhere) finds what one scan finds, once', () => {
  const buf = readFileSync(TRANSCRIPT);
  const whole = scanClaudeTranscript(TRANSCRIPT, EMPTY_SCAN);
  const sb = sandbox({ git: false, store: false });
  try {
    const path = join(sb.base, 't.jsonl');
    // Cut points: inside lines, on line ends, inside the boundary lines and the page result.
    const ends = lineEnds(buf);
    const cuts = new Set<number>([1, 17, 4096, 65_536, 65_537, buf.length - 1]);
    for (const e of [...endsOf(buf, 'compact_boundary'), ...endsOf(buf, 'toolu_03page')]) {
      cuts.add(e - 1);
      cuts.add(e);
      cuts.add(e - 200);
    }
    for (let i = 0; i < ends.length; i += 7) cuts.add(ends[i]! + 3);
    const points = [...cuts].filter((c) => c > 0 && c < buf.length).sort((a, b) => a - b);
    writeFileSync(path, '');
    let state: ScanState = EMPTY_SCAN;
    const compactions: number[] = [];
    const outputs: string[] = [];
    const reads: string[] = [];
    let at = 0;
    for (const cut of [...points, buf.length]) {
      appendFileSync(path, buf.subarray(at, cut));
      at = cut;
      const r = scanClaudeTranscript(path, state);
      assert.equal(r.reset, null);
      // Whole lines only: the offset is always at a line end (or where it was).
      assert.ok(r.state.offset === 0 || buf[r.state.offset - 1] === 0x0a);
      compactions.push(...r.compactions.map((c) => c.endOffset));
      outputs.push(...r.outputs);
      reads.push(...r.briefOutputs.map((o) => o.callId!));
      state = r.state;
    }
    assert.deepEqual(
      compactions,
      whole.compactions.map((c) => c.endOffset),
    );
    assert.deepEqual(outputs, whole.outputs);
    assert.deepEqual(reads, ['toolu_03page']);
    assert.equal(state.offset, buf.length);
    assert.equal(state.compactions, 2);
  } finally {
    sb.cleanup();
  }
});

test('a replaced or shrunk transcript is rescanned; only compactions beyond the count are new', () => {
  const buf = readFileSync(TRANSCRIPT);
  const sb = sandbox({ git: false, store: false });
  try {
    const path = join(sb.base, 't.jsonl');
    writeFileSync(path, buf);
    const first = scanClaudeTranscript(path, EMPTY_SCAN);
    // Replaced by a copy (new inode) that holds one more boundary (a fork-like copy appended).
    const next = join(sb.base, 'next.jsonl');
    writeFileSync(next, Buffer.concat([buf, readFileSync(FORK)]));
    renameSync(next, path);
    const again = scanClaudeTranscript(path, first.state);
    assert.match(again.reset ?? '', /replaced/);
    assert.deepEqual(
      again.compactions.map((c) => c.index),
      [3],
    );
    // Shrunk below the stored offset.
    writeFileSync(path, buf.subarray(0, 1000));
    const shrunk = scanClaudeTranscript(path, { ...again.state, dev: again.state.dev, ino: again.state.ino });
    assert.match(shrunk.reset ?? '', /shrank|replaced/);
    assert.equal(shrunk.state.compactions, 3, 'the count never goes down');
  } finally {
    sb.cleanup();
  }
});

test('an unreadable line with a boundary’s bytes counts as a compaction (fail closed); other bad lines do not', () => {
  const sb = sandbox({ git: false, store: false });
  try {
    const path = join(sb.base, 't.jsonl');
    writeFileSync(
      path,
      '{"parentUuid":null,"type":"system","subtype":"compact_boundary","content":"Conv\n' +
        '{"parentUuid":"x","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"\n' +
        '{"type":"brand-new-record","sessionId":"s"}\n' +
        '{"parentUuid":"y","type":"user","message":{"role":"user","content":"mentions \\"subtype\\":\\"compact_boundary\\" in text"}}\n',
    );
    const r = scanClaudeTranscript(path, EMPTY_SCAN);
    assert.equal(r.compactions.length, 1);
    assert.equal(r.badLines, 2);
    assert.deepEqual(r.outputs, []);
  } finally {
    sb.cleanup();
  }
});

test('find, inheritedEnd and the registration paths', () => {
  const sb = sandbox({ git: false, store: false });
  try {
    const dir = join(sb.base, 'projects', '-home-u-proj');
    mkdirSync(dir, { recursive: true });
    const near = join(dir, 'aaa.jsonl');
    writeFileSync(near, '');
    writeFileSync(join(dir, 'bbb.jsonl'), '');
    assert.equal(findClaudeTranscript(near, 'bbb'), join(dir, 'bbb.jsonl'));
    assert.equal(findClaudeTranscript(near, 'ccc'), null);
    assert.equal(findClaudeTranscript(near, '../projects/-home-u-proj/bbb'), null);
    assert.equal(claude.transcript.find(near, 'bbb'), join(dir, 'bbb.jsonl'));
    assert.equal(claude.transcript.inheritedEnd(near), null);
  } finally {
    sb.cleanup();
  }
  const paths = claudeRegistrationPaths({ CLAUDE_CONFIG_DIR: '/cfg', HOME: '/home/u' }, '/home/u/proj').map(
    (p) => p.path,
  );
  for (const p of ['/cfg/settings.json', '/cfg/settings.local.json', '/home/u/proj/.claude', '/cfg/shell-snapshots'])
    assert.ok(paths.includes(p), p);
  const home = claudeRegistrationPaths({ HOME: '/home/u' }, '/p').map((p) => p.path);
  assert.ok(home.includes('/home/u/.claude/settings.json'));
  assert.ok(home.includes('/home/u/.claude/shell-snapshots'));
});

// ---------------------------------------------------------------------------------------------
// Tool outputs (the agent's half of the page-read rule)

function realResults(): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of [join(FIX, 'tool-results.jsonl'), TRANSCRIPT]) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes('"type":"tool_result"') || !line.startsWith('{"parentUuid"')) continue;
      const o = JSON.parse(line) as {
        type: string;
        message: { content: Record<string, unknown>[] };
        toolUseResult: unknown;
      };
      if (o.type !== 'user') continue;
      const block = o.message.content[0]!;
      out.set(block.tool_use_id as string, encodeToolResult(block, o.toolUseResult));
    }
  }
  return out;
}

test('toolOutput on real 2.1.332 results: only a whole, successful Bash output is complete', () => {
  const r = realResults();
  const out = (id: string) => claudeToolOutput(r.get(id)!);
  assert.deepEqual(out('toolu_01cat'), { ok: true, body: 'hello from somefile' });
  assert.deepEqual(out('toolu_par1'), { ok: true, body: 'p1' });
  assert.deepEqual(out('toolu_stderr0'), { ok: true, body: 'out-line\nerr-line' });
  // 28,892 characters: under Claude Code's limit, shown whole.
  const long = out('toolu_s6000');
  assert.ok(long.ok);
  assert.ok(long.body.endsWith('\n5999\n6000'));
  const problems = (id: string) => {
    const o = out(id);
    assert.equal(o.ok, false, id);
    return o.ok ? [] : o.problems;
  };
  assert.ok(problems('toolu_02fail').some((p) => /is_error: true: Exit code 2/.test(p)));
  assert.ok(problems('toolu_timeout').some((p) => /is_error: true: Exit code 143/.test(p)));
  assert.deepEqual(problems('toolu_denied'), ['the call was denied by a PreToolUse hook (no command ran)']);
  assert.ok(
    problems('toolu_s8000').some((p) => /preview/.test(p)),
    'persisted-output preview',
  );
  assert.ok(problems('toolu_bg').some((p) => /background/.test(p)));
  assert.deepEqual(problems('toolu_04write'), ['not a Bash command output']);
  assert.deepEqual(problems('toolu_05edit'), ['not a Bash command output']);
  // The brief page read as the scan records it.
  assert.equal(out('toolu_03page').ok, true);
});

test('toolOutput refuses what is not the scan’s envelope, and marks every truncation form', () => {
  const raw = claudeToolOutput('<<<LATCH-BRIEF session=S version=1 page=1/1 sha256=x>>>');
  assert.deepEqual(raw, {
    ok: false,
    body: null,
    problems: ['not a Claude Code tool result as Latch’s transcript scan records it'],
  });
  assert.equal(claudeToolOutput('{"format":"other"}').ok, false);
  const bash = { stdout: 'x', stderr: '', interrupted: false, isImage: false, noOutputExpected: false };
  const env = (content: unknown, record: unknown = bash, isError = false) =>
    claudeToolOutput(encodeToolResult({ type: 'tool_result', tool_use_id: 't', content, is_error: isError }, record));
  assert.deepEqual(
    env([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ]),
    { ok: true, body: 'a\nb' },
  );
  assert.equal(env([{ type: 'image', source: {} }]).ok, false);
  assert.equal(env('a\n\n... [1234 characters truncated] ...\n\nb').ok, false);
  assert.equal(env('<truncated-output>x</truncated-output>').ok, false);
  assert.equal(env('x', { ...bash, interrupted: true }).ok, false);
  assert.equal(env('x', { ...bash, isImage: true }).ok, false);
  assert.equal(env('x', null).ok, false, 'no toolUseResult (several results on one line)');
  assert.equal(env('x', 'Error: something').ok, false);
  assert.equal(env('x', bash, true).ok, false);
  assert.equal(env(null).ok, false);
});

// ---------------------------------------------------------------------------------------------
// Capture and the slow parts

test('capture from the real transcript: the user’s requests, the last assistant text, never the summary', () => {
  const c = captureFromTranscript(TRANSCRIPT);
  assert.deepEqual(c.requests, [
    'Please write notes.txt about the widget, then create a.txt and b.txt.',
    'Now also add c.txt.',
  ]);
  assert.equal(c.requestCount, 2, 'no tool result, summary, slash command or its output is a request');
  assert.equal(c.lastAssistant, 'c.txt added.');
  assert.equal(c.sessionId, 'b518aeac-5ba0-4fde-b760-74eb64550278');
  assert.equal(c.cwd, '/home/u/proj');
  assert.equal(c.forkedFrom, null);
  assert.equal(c.plan, null);
  assert.equal(c.goal, null);
  assert.equal(c.badLines, 0);
  assert.equal(c.skippedLines, 0);
  const f = captureFromTranscript(FORK);
  assert.deepEqual(f.requests, ['Fork: check the files.']);
  assert.equal(f.lastAssistant, 'The fork sees the files.');
  assert.doesNotMatch(JSON.stringify(f), /SUMMARY/);
});

test('capture: TodoWrite is the plan; long lines are skipped; a partial last line is ignored', () => {
  const sb = sandbox({ git: false, store: false });
  try {
    const path = join(sb.base, 't.jsonl');
    const line = (o: unknown) => JSON.stringify(o) + '\n';
    writeFileSync(
      path,
      readFileSync(TRANSCRIPT, 'utf8') +
        line({
          parentUuid: 'p',
          isSidechain: false,
          type: 'assistant',
          message: {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Planning.' },
              {
                type: 'tool_use',
                id: 'toolu_t',
                name: 'TodoWrite',
                input: {
                  todos: [
                    { content: 'write d.txt', status: 'in_progress', activeForm: 'Writing d.txt' },
                    { content: 'check', status: 'pending' },
                  ],
                },
              },
            ],
          },
        }) +
        line({ parentUuid: 'q', type: 'user', message: { role: 'user', content: 'x'.repeat(5000) } }) +
        line({
          parentUuid: 'r',
          type: 'user',
          isSidechain: true,
          message: { role: 'user', content: 'a sub-agent prompt' },
        }) +
        '{"parentUuid":"s","type":"user","message":{"role":"user","content":"not finished',
    );
    const c = captureFromTranscript(path, { maxLineBytes: 4096 });
    assert.deepEqual(c.plan, {
      explanation: null,
      steps: [
        { step: 'write d.txt', status: 'in_progress' },
        { step: 'check', status: 'pending' },
      ],
    });
    assert.equal(c.lastAssistant, 'Planning.');
    // The API snapshot lines and the 5,000-byte request are longer than 4 KiB.
    assert.ok(c.skippedLines >= 2);
    assert.deepEqual(c.requests, [
      'Please write notes.txt about the widget, then create a.txt and b.txt.',
      'Now also add c.txt.',
    ]);
  } finally {
    sb.cleanup();
  }
});

test('slow parts: resume is never native for Claude Code, with the reason', async () => {
  const slow = await claude.slow();
  assert.equal(slow, claudeSlow);
  const q = slow.qualifyResume(
    {
      transcriptPath: TRANSCRIPT,
      recorded: null,
      expected: {
        session_id: 's',
        cwd: '/w',
        model: null,
        approval_policy: null,
        sandbox_policy: null,
        permission_profile: null,
      },
      payload: { session_id: 's', cwd: '/w', model: null, permission_mode: null },
      currentBrief: null,
      lastCompactionOffset: null,
    },
    '/nonexistent',
  );
  assert.deepEqual(q, {
    decision: 'full',
    checks: [
      {
        name: 'writer',
        ok: false,
        reason: 'Latch does not qualify Claude Code transcripts for native resume: every resume gets the full brief',
      },
    ],
  });
  assert.equal(slow.capture, captureFromTranscript);
  assert.equal(slow.toolOutput, claudeToolOutput);
});

// ---------------------------------------------------------------------------------------------
// The hook path end to end, in-process (runHook with the Claude agent and a temp LATCH_HOME)

interface ClaudeSandbox extends Sandbox {
  claudeTranscript: string;
}

function claudeSandbox(): ClaudeSandbox {
  const sb = sandbox();
  const config = join(sb.base, 'claude-config');
  const dir = join(config, 'projects', '-home-u-proj');
  mkdirSync(dir, { recursive: true });
  const claudeTranscript = join(dir, 'S.jsonl');
  // Claude Code's shell snapshots live in the test's own config directory (a held read empties them).
  return { ...sb, claudeTranscript, env: { ...sb.env, CLAUDE_CONFIG_DIR: config, LATCH_CONTAIN: 'list' } };
}

function payload(name: string, sb: ClaudeSandbox, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...fixture(name), session_id: 'S', cwd: sb.work, transcript_path: sb.claudeTranscript, ...over };
}

function tool(sb: ClaudeSandbox, name: string, input: Record<string, unknown>): Record<string, unknown> {
  return payload('pre-tool-use-bash', sb, {
    tool_name: name,
    tool_input: input,
    tool_use_id: 'toolu_' + Math.random().toString(16).slice(2),
  });
}

async function hook(sb: ClaudeSandbox, p: Record<string, unknown>) {
  const event = String(p.hook_event_name);
  const r = await runHook(claude, JSON.stringify(p), event, sb.env);
  const out = assertClaudeReply(event, r.stdout);
  const hso = out?.hookSpecificOutput as
    | {
        permissionDecision?: string;
        permissionDecisionReason?: string;
        additionalContext?: string;
        updatedInput?: Record<string, unknown>;
      }
    | undefined;
  return {
    ...r,
    out,
    denied: hso?.permissionDecision === 'deny',
    reason: hso?.permissionDecisionReason ?? '',
    context: hso?.additionalContext ?? '',
    updatedInput: hso?.permissionDecision === 'allow' ? (hso.updatedInput ?? null) : null,
  };
}

test('runHook(claude): compaction latches; Bash writes, Write and every tracked kind are denied; reads run', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  const buf = readFileSync(TRANSCRIPT);
  const [firstBoundary, secondBoundary] = endsOf(buf, '"subtype":"compact_boundary"') as [number, number];
  const boundaryStart = buf.lastIndexOf(0x0a, firstBoundary - 2) + 1;
  // The transcript as it is before the compaction.
  writeFileSync(sb.claudeTranscript, buf.subarray(0, boundaryStart));
  writeFileSync(join(sb.work, 'somefile'), 'hello\n');

  assert.equal((await hook(sb, payload('session-start-startup', sb))).stdout, null);
  const before = await hook(sb, tool(sb, 'Bash', { command: 'echo one > one.txt', description: 'write one' }));
  assert.equal(before.stdout, null, 'mutable: a write is allowed silently');
  const write = await hook(sb, tool(sb, 'Write', { file_path: join(sb.work, 'w.txt'), content: 'w\n' }));
  assert.equal(write.stdout, null);

  await hook(sb, payload('pre-compact-auto', sb));
  // SessionStart(compact) comes before PostCompact in 2.1.332; the transcript has no boundary yet.
  const start = await hook(sb, payload('session-start-compact', sb));
  assert.match(start.context, /latch/i, 'the brief and status reach the model');
  const post = await hook(sb, payload('post-compact-auto', sb));
  assert.equal(post.exitCode, 0);
  assert.ok(post.out === null || Object.keys(post.out).every((k) => k === 'systemMessage'));

  const bash = await hook(sb, tool(sb, 'Bash', { command: 'echo two > two.txt', description: 'write two' }));
  assert.ok(bash.denied, 'post-compaction Bash write denied');
  assert.equal(bash.exitCode, 0);
  assert.match(bash.reason, /latched/);
  assert.match(bash.reason, /latch verify/);
  const denied: [string, Record<string, unknown>][] = [
    ['Write', { file_path: join(sb.work, 'x.txt'), content: 'x' }],
    ['Edit', { file_path: join(sb.work, 'somefile'), old_string: 'hello', new_string: 'bye' }],
    ['MultiEdit', { file_path: join(sb.work, 'somefile'), edits: [] }],
    ['NotebookEdit', { notebook_path: join(sb.work, 'n.ipynb'), new_source: '' }],
    ['mcp__w__write_file', { path: 'mcp.txt', content: 'hi\n' }],
    ['Agent', { description: 'd', prompt: 'p', subagent_type: 'general-purpose' }],
    ['Task', { description: 'd', prompt: 'p' }],
    ['Monitor', { command: 'echo hi > m.txt' }],
  ];
  for (const [name, input] of denied) {
    const r = await hook(sb, tool(sb, name, input));
    assert.ok(r.denied, `${name} denied while latched`);
    assert.equal(r.exitCode, 0);
  }
  const read = await hook(sb, tool(sb, 'Read', { file_path: join(sb.work, 'somefile') }));
  assert.equal(read.stdout, null, 'Read allowed');
  assert.equal(read.denied, false);
  const cat = await hook(sb, tool(sb, 'Bash', { command: 'cat somefile', description: 'Read somefile' }));
  assert.equal(cat.denied, false, cat.reason);
  assert.ok(cat.updatedInput, 'a held read runs rewritten');
  assert.equal(cat.updatedInput.description, 'Read somefile', 'the full tool_input, command replaced');
  assert.notEqual(cat.updatedInput.command, 'cat somefile');
  assert.equal(claude.isRewrittenRead(String(cat.updatedInput.command)), true);

  // The boundary reaches the file later: the same compaction, not a second one.
  appendFileSync(sb.claudeTranscript, buf.subarray(boundaryStart, secondBoundary - 1));
  assert.ok((await hook(sb, tool(sb, 'Bash', { command: 'touch b' }))).denied);
  await hook(sb, payload('stop', sb));
  // A resumed process: still latched, and the full brief is delivered (never native for Claude Code).
  const resume = await hook(sb, payload('session-start-resume', sb));
  assert.ok(resume.context.length > 0, 'the resume gets the brief');
  assert.ok((await hook(sb, tool(sb, 'Write', { file_path: join(sb.work, 'y.txt'), content: 'y' }))).denied);
  const db = openStore(sb.home, { create: false });
  try {
    const one = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    assert.equal(one('SELECT COUNT(*) n FROM compactions'), 1);
    assert.equal(one("SELECT COUNT(*) n FROM transitions WHERE event LIKE 'compaction:%'"), 1);
    assert.equal(one('SELECT COUNT(*) n FROM checkpoints'), 1);
    const row = db.prepare("SELECT state, agent FROM sessions WHERE session_id = 'S'").get() as {
      state: string;
      agent: string;
    };
    assert.deepEqual(row, { state: 'latched', agent: 'claude' });
    const via = JSON.parse(
      (db.prepare("SELECT observed_via v FROM compactions WHERE session_id = 'S'").get() as { v: string }).v,
    ) as string[];
    assert.deepEqual(new Set(via), new Set(['pre_compact', 'session_start', 'post_compact', 'transcript']));
    const q = db.prepare("SELECT decision, checks_json FROM resume_decisions WHERE session_id = 'S'").get() as {
      decision: string;
      checks_json: string;
    };
    assert.equal(q.decision, 'full');
    assert.match(q.checks_json, /does not qualify Claude Code transcripts/);
  } finally {
    db.close();
  }
});

test('runHook(claude): a fork of a compacted session Latch never saw starts latched (its copied boundary trips it)', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  // SessionStart(fork) runs before Claude Code writes the fork's file.
  assert.equal((await hook(sb, payload('session-start-fork', sb))).stdout, null);
  writeFileSync(sb.claudeTranscript, readFileSync(FORK));
  const r = await hook(sb, tool(sb, 'Bash', { command: 'echo x > x.txt' }));
  assert.ok(r.denied, 'the fork’s first tracked call is denied');
  assert.match(r.reason, /latched/);
  // No session holds the compaction it copies: nobody verified it (test/unit/claude-fork.test.ts).
  const db = openStore(sb.home, { create: false });
  try {
    const row = db.prepare("SELECT state_reason FROM sessions WHERE session_id = 'S'").get() as {
      state_reason: string;
    };
    assert.match(row.state_reason, /no session Latch knows holds that compaction/);
  } finally {
    db.close();
  }
});

test('runHook(claude): a failing Bash call is closed by PostToolUseFailure', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  writeFileSync(sb.claudeTranscript, '');
  const pre = tool(sb, 'Bash', { command: 'echo x > x.txt; exit 3', description: 'fail' });
  assert.equal((await hook(sb, pre)).stdout, null);
  writeFileSync(join(sb.work, 'x.txt'), 'x\n');
  const fail = {
    ...payload('post-tool-use-failure-bash', sb),
    tool_input: pre.tool_input,
    tool_use_id: pre.tool_use_id,
  };
  assert.equal((await hook(sb, fail)).stdout, null);
  const db = openStore(sb.home, { create: false });
  try {
    const a = db.prepare('SELECT state FROM attempts WHERE tool_use_id = ?').get(pre.tool_use_id) as {
      state: string;
    };
    assert.equal(a.state, 'closed');
  } finally {
    db.close();
  }
});

test('runHook(claude): a compaction hook whose transcript cannot be read still counts (the brief holds the ledger’s facts); nothing wedges', async (t) => {
  const sb = claudeSandbox();
  t.after(sb.cleanup);
  // No transcript file at all (gone, or never written): the brief capture cannot read it.
  assert.equal((await hook(sb, payload('session-start-startup', sb))).stdout, null);
  await hook(sb, payload('pre-compact-auto', sb));
  const db = openStore(sb.home, { create: false });
  try {
    const n = db.prepare('SELECT COUNT(*) AS n FROM compactions WHERE session_id = ?').get('S') as { n: number };
    assert.equal(n.n, 1, 'the PreCompact was counted, not rolled back by the failed capture');
    const brief = db.prepare('SELECT COUNT(*) AS n FROM briefs WHERE session_id = ?').get('S') as { n: number };
    assert.equal(brief.n, 1, 'a brief of the ledger’s facts was recorded');
  } finally {
    db.close();
  }
  // The next call is decided, not an internal error (PreCompact alone does not latch).
  const next = await hook(sb, tool(sb, 'Bash', { command: 'echo one > one.txt', description: 'write one' }));
  assert.equal(next.denied, false, next.reason);
  const start = await hook(sb, payload('session-start-compact', sb));
  assert.doesNotMatch(start.stdout ?? '', /internal error/);
  const after = await hook(sb, tool(sb, 'Bash', { command: 'echo two > two.txt', description: 'write two' }));
  assert.ok(after.denied, 'SessionStart(compact) latches as ever');
  assert.doesNotMatch(after.reason, /internal error/);
});
