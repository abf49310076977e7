// Generates a large, realistic Codex 0.169 rollout for benchmarks, written streaming.
// Every line is a real line shape taken from test/fixtures/doctor/hooked-session.jsonl (captured
// from the real Codex 0.169.0) with its ids, ordinals, timestamps, commands and outputs varied:
// turns (task_started, turn_context, world_state, user message), tool cycles (function_call
// exec_command / custom_tool_call apply_patch, token_usage_record, item_completed, outputs,
// token_count), assistant messages, and an occasional local compaction (summary message,
// compacted with replacement_history, world_state, turn_context, item_completed ContextCompaction).
// Run: node --import tsx scripts/gen-rollout.ts OUT.jsonl [--mb 1024] [--seed 1]
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'test',
  'fixtures',
  'doctor',
  'hooked-session.jsonl',
);

type Line = { timestamp: string; ordinal: number; type: string; payload: any };

export interface GenOptions {
  /** Target size in bytes (the file ends at the first turn boundary past it). Default 1 GiB. */
  bytes?: number;
  seed?: number;
  /** Roughly one compaction per this many bytes. Default 48 MiB. */
  compactEvery?: number;
}

export interface GenResult {
  bytes: number;
  lines: number;
  compactions: number;
  toolCalls: number;
}

function templates() {
  const lines = readFileSync(FIXTURE, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
  const pick = (name: string, pred: (l: Line) => boolean): Line => {
    const l = lines.find(pred);
    if (!l) throw new Error(`fixture ${FIXTURE} has no ${name} line`);
    return l;
  };
  const pt = (l: Line) => l.payload?.type;
  return {
    session_meta: pick('session_meta', (l) => l.type === 'session_meta'),
    task_started: pick('task_started', (l) => l.type === 'event_msg' && pt(l) === 'task_started'),
    task_complete: pick('task_complete', (l) => l.type === 'event_msg' && pt(l) === 'task_complete'),
    developer: pick(
      'developer message',
      (l) => l.type === 'response_item' && pt(l) === 'message' && l.payload.role === 'developer',
    ),
    world_state: pick('world_state', (l) => l.type === 'world_state'),
    turn_context: pick('turn_context', (l) => l.type === 'turn_context'),
    settings: pick('thread_settings_applied', (l) => l.type === 'event_msg' && pt(l) === 'thread_settings_applied'),
    user: pick(
      'user message',
      (l) =>
        l.type === 'response_item' &&
        pt(l) === 'message' &&
        l.payload.role === 'user' &&
        !JSON.stringify(l.payload).includes('environment_context'),
    ),
    user_item: pick(
      'item_completed UserMessage',
      (l) => l.type === 'event_msg' && l.payload.item?.type === 'UserMessage',
    ),
    function_call: pick('function_call', (l) => l.type === 'response_item' && pt(l) === 'function_call'),
    function_call_output: pick(
      'function_call_output',
      (l) =>
        l.type === 'response_item' && pt(l) === 'function_call_output' && l.payload.output.includes('Process exited'),
    ),
    custom_tool_call: pick('custom_tool_call', (l) => l.type === 'response_item' && pt(l) === 'custom_tool_call'),
    custom_tool_call_output: pick(
      'custom_tool_call_output',
      (l) => l.type === 'response_item' && pt(l) === 'custom_tool_call_output',
    ),
    token_usage_record: pick('token_usage_record', (l) => l.type === 'token_usage_record'),
    exec_item: pick(
      'item_completed CommandExecution',
      (l) => l.type === 'event_msg' && l.payload.item?.type === 'CommandExecution',
    ),
    token_count: pick('token_count', (l) => l.type === 'event_msg' && pt(l) === 'token_count'),
    assistant: pick(
      'assistant message',
      (l) => l.type === 'response_item' && pt(l) === 'message' && l.payload.role === 'assistant',
    ),
    agent_item: pick(
      'item_completed AgentMessage',
      (l) => l.type === 'event_msg' && l.payload.item?.type === 'AgentMessage',
    ),
    compacted: pick('compacted', (l) => l.type === 'compacted'),
    compaction_item: pick(
      'item_completed ContextCompaction',
      (l) => l.type === 'event_msg' && l.payload.item?.type === 'ContextCompaction',
    ),
    blocked_output: pick(
      'blocked output',
      (l) =>
        l.type === 'response_item' &&
        /_call_output$/.test(pt(l)) &&
        String(l.payload.output).startsWith('Command blocked'),
    ),
  };
}

/** xorshift32: deterministic and fast. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

const WORDS = (
  'src test lib index main util config build dist node_modules package json yaml toml readme docs api server client handler ' +
  'request response error warning info debug trace function const let return import export async await promise buffer stream ' +
  'file path line column offset byte chunk read write open close sync flush commit branch merge rebase diff patch hunk status'
).split(' ');

const COMMANDS = [
  'ls -la',
  'cat src/index.ts',
  'rg -n "TODO" src',
  'git status --short',
  'git diff --stat',
  'npm test -- --grep parser',
  'sed -n 1,80p src/core/parser.ts',
  'echo "done" >> progress.txt',
  'mkdir -p build && cp -r src build/',
  'node scripts/check.js',
  'python3 -m pytest -q tests/test_io.py',
  'rm -f tmp/cache.json',
];

export function generateRollout(out: string, opts: GenOptions = {}): GenResult {
  const target = opts.bytes ?? 1 << 30;
  const compactEvery = opts.compactEvery ?? 48 << 20;
  const r = rng(opts.seed ?? 1);
  const T = templates();
  const pool = Array.from({ length: 20000 }, () => {
    const n = 3 + Math.floor(r() * 12);
    return Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
  });
  const text = (lines: number) => Array.from({ length: lines }, () => pool[Math.floor(r() * pool.length)]).join('\n');

  const fd = openSync(out, 'w');
  let pending: string[] = [];
  let pendingBytes = 0;
  let bytes = 0;
  let lines = 0;
  let ordinal = 0;
  let clock = Date.parse('2026-11-29T09:00:00.000Z');
  let compactions = 0;
  let toolCalls = 0;
  let sinceCompaction = 0;
  const flush = () => {
    if (pending.length === 0) return;
    writeSync(fd, pending.join(''));
    pending = [];
    pendingBytes = 0;
  };
  const emit = (t: Line, payload: any) => {
    clock += 1 + Math.floor(r() * 40);
    const s =
      JSON.stringify({ timestamp: new Date(clock).toISOString(), ordinal: ordinal++, type: t.type, payload }) + '\n';
    pending.push(s);
    pendingBytes += s.length;
    bytes += Buffer.byteLength(s);
    sinceCompaction += s.length;
    lines++;
    if (pendingBytes > 4 << 20) flush();
  };
  const uuid = () => {
    const h = () =>
      Math.floor(r() * 0x10000)
        .toString(16)
        .padStart(4, '0');
    return `01a2${h()}-${h()}-7${h().slice(1)}-${h()}-${h()}${h()}${h()}`;
  };
  const threadId = uuid();
  const clone = (t: Line) => structuredClone(t.payload);

  try {
    const meta = clone(T.session_meta);
    meta.id = meta.session_id = threadId;
    emit(T.session_meta, meta);
    let turnNo = 0;
    let callNo = 0;
    let latched = false;
    while (bytes < target) {
      const turnId = uuid();
      turnNo++;
      const ts = clone(T.task_started);
      ts.turn_id = turnId;
      if (ts.turn_attribution) ts.turn_attribution.turn_id = ts.turn_attribution.root_turn_id = turnId;
      emit(T.task_started, ts);
      if (turnNo === 1) emit(T.developer, clone(T.developer));
      const ws = clone(T.world_state);
      emit(T.world_state, ws);
      const tc = clone(T.turn_context);
      tc.turn_id = tc.root_turn_id = turnId;
      emit(T.turn_context, tc);
      emit(T.settings, clone(T.settings));
      const u = clone(T.user);
      u.content = [{ type: 'input_text', text: `Turn ${turnNo}: ${pool[Math.floor(r() * pool.length)]}` }];
      emit(T.user, u);
      emit(T.user_item, { ...clone(T.user_item), turn_id: turnId });
      const cycles = 5 + Math.floor(r() * 25);
      for (let c = 0; c < cycles; c++) {
        const callId = `call_${++callNo}`;
        toolCalls++;
        const patch = r() < 0.15;
        if (patch) {
          const p = clone(T.custom_tool_call);
          p.call_id = callId;
          p.id = `ctc_${uuid()}`;
          p.input = `*** Begin Patch\n*** Update File: src/${WORDS[Math.floor(r() * WORDS.length)]}.ts\n@@\n-${text(2)}\n+${text(3)}\n*** End Patch\n`;
          emit(T.custom_tool_call, p);
        } else {
          const p = clone(T.function_call);
          p.call_id = callId;
          p.id = `fc_${uuid()}`;
          p.arguments = JSON.stringify({ cmd: COMMANDS[Math.floor(r() * COMMANDS.length)] });
          emit(T.function_call, p);
        }
        const tu = clone(T.token_usage_record);
        tu.turn_id = turnId;
        emit(T.token_usage_record, tu);
        // Output: mostly a few lines, sometimes a big dump (logs, file contents).
        const big = r() < 0.08;
        const outText = text(big ? 200 + Math.floor(r() * 600) : 1 + Math.floor(r() * 25));
        const blocked = latched && r() < 0.7;
        if (!patch) {
          const item = clone(T.exec_item);
          item.turn_id = turnId;
          item.item.id = callId;
          item.item.aggregated_output = blocked ? '' : outText;
          emit(T.exec_item, item);
        }
        const exit = r() < 0.1 ? 1 : 0;
        const o = clone(patch ? T.custom_tool_call_output : T.function_call_output);
        o.call_id = callId;
        o.output = blocked
          ? clone(T.blocked_output).output
          : patch
            ? `Exit code: ${exit}\nWall time: 0 seconds\nOutput:\n${exit ? 'error: hunk failed' : 'Success. Updated the following files:\nM src/x.ts'}\n`
            : `Chunk ID: ${Math.floor(r() * 0xffffff).toString(16)}\nWall time: 0.0${Math.floor(r() * 999)} seconds\nProcess exited with code ${exit}\nOriginal token count: ${outText.length >> 2}\nOutput:\n${outText}\n`;
        emit(patch ? T.custom_tool_call_output : T.function_call_output, o);
        emit(T.token_count, clone(T.token_count));
        if (sinceCompaction > compactEvery && bytes < target) {
          // A local auto-compaction mid-turn, in 0.169's order.
          sinceCompaction = 0;
          compactions++;
          const a = clone(T.assistant);
          a.content = [{ type: 'output_text', text: `Summary: ${text(4)}` }];
          emit(T.assistant, a);
          emit(T.token_usage_record, clone(T.token_usage_record));
          emit(T.token_count, clone(T.token_count));
          const cp = clone(T.compacted);
          cp.window_number = compactions;
          cp.previous_window_id = cp.window_id;
          cp.window_id = uuid();
          // replacement history grows a little with each window (realistic sizes: tens to hundreds of KB)
          const extra = Array.from({ length: 20 + Math.floor(r() * 80) }, () => ({
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: text(10) }],
          }));
          cp.replacement_history = [...cp.replacement_history, ...extra];
          emit(T.compacted, cp);
          emit(T.world_state, clone(T.world_state));
          emit(T.turn_context, tc);
          emit(T.settings, clone(T.settings));
          emit(T.token_count, clone(T.token_count));
          const ci = clone(T.compaction_item);
          ci.turn_id = turnId;
          ci.item.id = uuid();
          emit(T.compaction_item, ci);
          latched = true;
        }
      }
      const a = clone(T.assistant);
      a.content = [{ type: 'output_text', text: text(2) }];
      emit(T.agent_item, clone(T.agent_item));
      emit(T.assistant, a);
      emit(T.token_usage_record, clone(T.token_usage_record));
      emit(T.token_count, clone(T.token_count));
      const done = clone(T.task_complete);
      done.turn_id = turnId;
      emit(T.task_complete, done);
      if (latched && r() < 0.3) latched = false; // a verify between turns
    }
    flush();
  } finally {
    closeSync(fd);
  }
  return { bytes, lines, compactions, toolCalls };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const out = args.find((a) => !a.startsWith('--'));
  const opt = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  if (!out) {
    console.error(
      'usage: node --import tsx scripts/gen-rollout.ts OUT.jsonl [--mb 1024] [--seed 1] [--compact-every-mb 48]',
    );
    process.exit(2);
  }
  const mb = opt('mb') ?? 1024;
  const ce = opt('compact-every-mb');
  const t0 = Date.now();
  const res = generateRollout(out, {
    bytes: Math.round(mb * 1024 * 1024),
    seed: opt('seed'),
    compactEvery: ce ? ce * 1024 * 1024 : undefined,
  });
  console.log(JSON.stringify({ out, ...res, seconds: (Date.now() - t0) / 1000 }));
}
