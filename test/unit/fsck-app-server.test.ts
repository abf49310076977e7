// `latch doctor STREAM` on a captured `codex app-server` stream of a latched run (the IDE path):
// test/fixtures/doctor/app-server-latched.jsonl is every line the real app-server (0.169.0) wrote
// in test/helpers/app-server-scenario.ts, with its rollout and its Latch store beside it
// (scripts/capture-doctor-fixtures.ts app-server-latched). The stream reads clean; the store's
// evidence is compared only with the files it describes; real damage is still found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { fsckFile, type FsckReport } from '../../src/agents/codex/fsck/fsck.js';
import { callIdOfRun, commandOfItem } from '../../src/agents/codex/fsck/analyser.js';
import { openStore } from '../../src/store/store.js';

const DIR = join('test', 'fixtures', 'doctor');
const STREAM = join(DIR, 'app-server-latched.jsonl');
const ROLLOUT = join(DIR, 'app-server-latched.rollout.jsonl');
const STORE = join(DIR, 'app-server-latched.store.db');
const LINES = readFileSync(STREAM, 'utf8').trimEnd().split('\n');
const MSGS = LINES.map((l) => JSON.parse(l) as { method?: string; params?: any });
const THREAD: string = MSGS.find((m) => m.method === 'thread/started')!.params.thread.id;
/** The PreToolUse runs that blocked, in stream order: their call ids. */
const BLOCKED = MSGS.filter((m) => m.method === 'hook/completed' && m.params.run.status === 'blocked').map(
  (m) => callIdOfRun(m.params.run.id, m.params.run.sourcePath)!,
);
/** Whether this release is qualified is another check than the stream's. */
const ALLOW = ['0.169.0'];

const created: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'latch-fsck-as-'));
  created.push(d);
  return d;
}
test.after(() => {
  for (const p of created) rmSync(p, { recursive: true, force: true, maxRetries: 5 });
});

/** A LATCH_HOME holding the captured store; `rollout` (if given) becomes the session's and checkpoint's transcript. */
function storeHome(opts: { rollout?: string; edit?: (db: Database.Database) => void } = {}): string {
  const home = join(tmp(), 'latch');
  mkdirSync(home, { mode: 0o700 });
  copyFileSync(STORE, join(home, 'latch.db'));
  chmodSync(join(home, 'latch.db'), 0o600);
  const db = openStore(home, { create: false });
  try {
    if (opts.rollout) {
      db.prepare('UPDATE sessions SET transcript_path = ?').run(opts.rollout);
      db.prepare('UPDATE checkpoints SET transcript_path = ?').run(opts.rollout);
    }
    opts.edit?.(db);
  } finally {
    db.close();
  }
  return home;
}

function rolloutCopy(edit?: (text: string) => string): string {
  const p = join(tmp(), 'rollout.jsonl');
  const text = readFileSync(ROLLOUT, 'utf8');
  writeFileSync(p, edit ? edit(text) : text);
  return p;
}

function streamFile(lines: string[], trailingNewline = true): string {
  const p = join(tmp(), 'stream.jsonl');
  writeFileSync(p, lines.join('\n') + (trailingNewline ? '\n' : ''));
  return p;
}

const codes = (r: FsckReport) => r.findings.map((f) => f.code).sort();

test('the fixture is a real latched run: trusted hooks ran, two PreToolUse runs blocked after the compaction', () => {
  assert.equal(BLOCKED.length, 2);
  assert.ok(BLOCKED.every((id) => /^call_/.test(id)));
  const runs = MSGS.filter((m) => m.method === 'hook/completed').map((m) => m.params.run.eventName as string);
  for (const ev of ['sessionStart', 'preToolUse', 'postToolUse', 'preCompact', 'postCompact', 'stop'])
    assert.ok(runs.includes(ev), ev);
  assert.ok(MSGS.some((m) => m.method === 'item/completed' && m.params.item.type === 'contextCompaction'));
});

test('the stream alone: no finding; the blocked calls are present, blocked by the PreToolUse hook, with its entries', async () => {
  const r = await fsckFile(STREAM, { latchHome: null, allowlist: ALLOW });
  assert.equal(r.format, 'app-server');
  assert.deepEqual(r.findings, [], JSON.stringify(r.findings));
  assert.equal(r.exit_code, 0);
  assert.equal(r.sessions[0]!.session_id, THREAD);
  assert.equal(r.compactions.length, 1);
  assert.equal(r.compactions[0]!.trigger, 'auto');
  assert.equal(r.hook_blocked_outputs, 2);
  const hr = r.hook_runs!;
  assert.equal(hr.started, hr.completed);
  assert.equal(hr.by_event_status['preToolUse:blocked'], 2);
  assert.equal(hr.by_event_status['preCompact:completed'], 1);
  assert.equal(hr.by_event_status['postCompact:completed'], 1);
  // Blocked calls: no item in the stream, only the hook run whose id ends with the call id.
  const blocked = r.attempts_after_compaction.list.filter((a) => a.outcome === 'blocked');
  assert.deepEqual(
    blocked.map((a) => a.call_id),
    BLOCKED,
  );
  for (const a of blocked) {
    assert.equal(a.kind, 'unknown');
    assert.match(a.summary, /blocked before it started/);
    assert.match(a.detail!, /^Latch blocked this call/);
    assert.equal(a.hook!.event, 'preToolUse');
    assert.equal(a.hook!.status, 'blocked');
    assert.ok(a.hook!.entries.some((e) => e.kind === 'feedback' && e.text.startsWith('Latch blocked this call')));
  }
  // The read after the compaction ran, rewritten by Latch; reported as the model's command.
  const read = r.attempts_after_compaction.list.find((a) => a.outcome === 'ran')!;
  assert.equal(read.summary, 'cat a.txt');
  assert.equal(read.read_only, true);
  assert.deepEqual(r.compactions[0]!.attempts_after, {
    total: 3,
    ran: 1,
    failed: 0,
    blocked: 2,
    unknown: 0,
    no_output: 0,
  });
  // The hook runs with output: the trip's warning, the brief delivered at SessionStart, the two blocks.
  assert.ok(
    hr.runs.some(
      (x) =>
        x.event === 'sessionStart' &&
        x.entries.some((e) => e.kind === 'context' && e.text.includes('mutation authority')),
    ),
  );
});

test('with the store of that run and its rollout: no finding; prefix compared with the rollout, denials with the blocked runs', async () => {
  const rollout = rolloutCopy();
  const r = await fsckFile(STREAM, { latchHome: storeHome({ rollout }), allowlist: ALLOW });
  assert.deepEqual(r.findings, [], JSON.stringify(r.findings));
  assert.equal(r.exit_code, 0);
  const st = r.store!;
  assert.equal(st.status, 'checked');
  assert.equal(st.session_id, THREAD);
  assert.equal(st.state, 'latched');
  assert.match(st.detail, /app-server stream/);
  assert.equal(st.checkpoints!.length, 1);
  assert.equal(st.checkpoints![0]!.compared_file, rollout);
  assert.equal(st.checkpoints![0]!.prefix, 'same');
  assert.deepEqual(st.denials, {
    store: 2,
    transcript_blocked_by_latch: 2,
    transcript_blocked_other: 0,
    missing_in_transcript: [],
    missing_in_store: [],
  });
  assert.equal(st.stream_window!.denials_outside, 0);
  assert.equal(st.stream_window!.compactions_before, 0);
  assert.equal(st.compactions![0]!.in_transcript, true);
  assert.equal(r.compactions[0]!.trigger_source, 'store');
  // The store names the blocked calls' tools and commands.
  const blocked = r.attempts_after_compaction.list.filter((a) => a.outcome === 'blocked');
  assert.deepEqual(
    blocked.map((a) => [a.tool, a.kind, a.summary]),
    [
      ['Bash', 'shell', 'echo after > a.txt'],
      ['apply_patch', 'patch', 'add c.txt'],
    ],
  );
  assert.deepEqual(r.tool_calls.by_name, { exec_command: 3, Bash: 1, apply_patch: 1 });
});

test('with the store as captured (its rollout gone): the prefix is not checked, and the stream is never hashed in its place', async () => {
  const r = await fsckFile(STREAM, { latchHome: storeHome(), allowlist: ALLOW });
  assert.deepEqual(r.findings, [], JSON.stringify(r.findings));
  assert.equal(r.store!.checkpoints![0]!.prefix, 'not_checked');
  assert.equal(r.store!.checkpoints![0]!.compared_file, null);
  assert.equal(r.store!.checkpoints![0]!.prefix_now_sha256, null);
});

test('a rewritten rollout is caught from the stream too, naming the rollout', async () => {
  const rollout = rolloutCopy((t) => t.replace('echo step1 > a.txt', 'echo HACKS > a.txt'));
  const r = await fsckFile(STREAM, { latchHome: storeHome({ rollout }), allowlist: ALLOW });
  assert.deepEqual(codes(r), ['prefix_rewritten']);
  assert.equal(r.store!.checkpoints![0]!.prefix, 'rewritten');
  assert.ok(r.findings[0]!.message.includes(rollout));
  const short = rolloutCopy((t) => t.slice(0, 1000));
  const s = await fsckFile(STREAM, { latchHome: storeHome({ rollout: short }), allowlist: ALLOW });
  assert.deepEqual(codes(s), ['prefix_rewritten']);
  assert.equal(s.store!.checkpoints![0]!.prefix, 'shorter');
});

test('damage: a truncated last line is reported, with the turn it leaves open', async () => {
  const last = LINES[LINES.length - 1]!;
  assert.match(last, /"method":"turn\/completed"/);
  const f = streamFile([...LINES.slice(0, -1), last.slice(0, Math.floor(last.length / 2))], false);
  const r = await fsckFile(f, { latchHome: null, allowlist: ALLOW });
  assert.deepEqual(codes(r), ['missing_completion', 'truncated_last_line']);
  assert.equal(r.truncated_last_line!.line, LINES.length);
  const mc = r.findings.find((f) => f.code === 'missing_completion')!;
  assert.match(mc.message, /1 turn\(s\)/);
  assert.equal(mc.lines.length, 1);
  assert.match(LINES[mc.lines[0]! - 1]!, /"method":"turn\/started"/);
});

test('damage: a missing hook completion is reported, and the denial it held is then missing from the stream', async () => {
  const i = MSGS.findIndex((m) => m.method === 'hook/completed' && m.params.run.status === 'blocked');
  const f = streamFile(LINES.filter((_, k) => k !== i));
  const alone = await fsckFile(f, { latchHome: null, allowlist: ALLOW });
  assert.deepEqual(codes(alone), ['missing_completion']);
  assert.match(alone.findings[0]!.message, /1 hook run\(s\)/);
  assert.equal(alone.hook_blocked_outputs, 1);
  const r = await fsckFile(f, { latchHome: storeHome({ rollout: rolloutCopy() }), allowlist: ALLOW });
  assert.deepEqual(codes(r), ['denial_not_in_transcript', 'missing_completion']);
  assert.deepEqual(r.store!.denials!.missing_in_transcript, [BLOCKED[0]]);
  assert.match(
    r.findings.find((x) => x.code === 'denial_not_in_transcript')!.message,
    /no blocked PreToolUse run in it/,
  );
});

test('damage: a lost start (hook/started, item/started) is a completion without a start', async () => {
  const h = MSGS.findIndex((m) => m.method === 'hook/started');
  const it = MSGS.findIndex((m) => m.method === 'item/started' && m.params.item.type === 'commandExecution');
  const r = await fsckFile(streamFile(LINES.filter((_, k) => k !== h && k !== it)), {
    latchHome: null,
    allowlist: ALLOW,
  });
  assert.deepEqual(codes(r), ['completion_without_start']);
  assert.equal(r.findings[0]!.count, 2);
});

test('damage: a garbage line in a stream is a parse error', async () => {
  const r = await fsckFile(
    streamFile([...LINES.slice(0, 20), '{"method":"hook/completed","params":', ...LINES.slice(20)]),
    { latchHome: null, allowlist: ALLOW },
  );
  assert.deepEqual(codes(r), ['parse_error']);
  assert.deepEqual(r.findings[0]!.lines, [21]);
});

test('store records outside the time the stream covers are not compared with it; one inside it is', async () => {
  const outside = storeHome({
    rollout: rolloutCopy(),
    edit: (db) => {
      db.prepare(
        "INSERT INTO denials (session_id, at, turn_id, tool_name, tool_use_id, summary, reasons_json) VALUES (?, '2000-01-01T00:00:00.000Z', NULL, 'Bash', 'call_before', 'Bash: x', '[]')",
      ).run(THREAD);
    },
  });
  const a = await fsckFile(STREAM, { latchHome: outside, allowlist: ALLOW });
  assert.deepEqual(a.findings, [], JSON.stringify(a.findings));
  assert.equal(a.store!.stream_window!.denials_outside, 1);
  const firstAt = new Date(
    MSGS.map((m) => (m as { emittedAtMs?: number }).emittedAtMs).find((x) => typeof x === 'number')! + 100,
  ).toISOString();
  const inside = storeHome({
    rollout: rolloutCopy(),
    edit: (db) => {
      db.prepare(
        "INSERT INTO denials (session_id, at, turn_id, tool_name, tool_use_id, summary, reasons_json) VALUES (?, ?, NULL, 'Bash', 'call_ghost', 'Bash: x', '[]')",
      ).run(THREAD, firstAt);
    },
  });
  const b = await fsckFile(STREAM, { latchHome: inside, allowlist: ALLOW });
  assert.deepEqual(codes(b), ['denial_not_in_transcript']);
  assert.deepEqual(b.store!.denials!.missing_in_transcript, ['call_ghost']);
  // A compaction the store saw before the stream began is not expected in it.
  const earlier = storeHome({
    rollout: rolloutCopy(),
    edit: (db) => {
      db.exec('PRAGMA foreign_keys = OFF');
      db.prepare('UPDATE compactions SET seq = 2').run();
      db.prepare('UPDATE checkpoints SET compaction_seq = 2').run();
      db.prepare(
        "INSERT INTO compactions (session_id, seq, trigger, observed_via, first_seen_at) VALUES (?, 1, 'auto', '[\"pre_compact\"]', '2000-01-01T00:00:00.000Z')",
      ).run(THREAD);
    },
  });
  const c = await fsckFile(STREAM, { latchHome: earlier, allowlist: ALLOW });
  assert.ok(!codes(c).includes('transcript_missing_compaction'), codes(c).join());
  assert.ok(!codes(c).includes('store_missing_compaction'), codes(c).join());
  assert.equal(c.store!.stream_window!.compactions_before, 1);
});

test('callIdOfRun and commandOfItem', () => {
  assert.equal(callIdOfRun('pre-tool-use:0:/h/hooks.json:call_1_8', '/h/hooks.json'), 'call_1_8');
  assert.equal(callIdOfRun('pre-tool-use:0:/a:b/hooks.json:call:x', '/a:b/hooks.json'), 'call:x');
  assert.equal(callIdOfRun('pre-tool-use:0:/h/hooks.json:call_2', null), 'call_2');
  assert.equal(callIdOfRun(null, null), null);
  assert.equal(
    commandOfItem({ command: "/bin/bash -lc 'ls'", commandActions: [{ type: 'listFiles', command: 'ls' }] }),
    'ls',
  );
  const held =
    "CODEX_HOME='/s/home' exec '/bin/codex' sandbox -- /usr/bin/env -u BASH_ENV -u ENV PAGER=cat /bin/bash --noprofile --norc -c 'grep '\\''a b'\\'' f'";
  assert.equal(commandOfItem({ commandActions: [{ type: 'unknown', command: held }] }), "grep 'a b' f");
  assert.equal(commandOfItem({ command: 'x', commandActions: [] }), 'x');
});

test('transcriptDoctor renders a stream: the hook runs, the blocked calls, the transcript the prefix was compared with', async () => {
  const { transcriptDoctor } = await import('../../src/agents/codex/fsck/command.js');
  const rollout = rolloutCopy();
  const home = storeHome({ rollout });
  let out = '';
  const io = {
    out: (t: string) => (out += t),
    err: () => undefined,
    env: { LATCH_HOME: home },
    cwd: process.cwd(),
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  };
  const code = await transcriptDoctor(io, { file: STREAM });
  assert.equal(code, (await fsckFile(STREAM, { latchHome: home })).exit_code);
  assert.match(out, /codex app-server JSON-RPC stream/);
  assert.match(out, /calls blocked by a hook: 2/);
  assert.match(out, /hook runs: (\d+) started, \1 completed \(.*preToolUse:blocked 2/);
  assert.match(out, /Bash: echo after > a\.txt → BLOCKED by hook: Latch blocked this call/);
  assert.match(out, /apply_patch: add c\.txt → BLOCKED by hook: Latch blocked this call/);
  assert.ok(out.includes(`bytes: same (of ${rollout})`), out);
  assert.match(out, /denials: 2 in the store; 2 call\(s\) blocked by Latch in the file/);
  assert.doesNotMatch(out, /ERROR|WARN /);
});

test('a call blocked by another hook is counted apart; a failed hook run is a warning with its entries listed', async () => {
  const i = MSGS.findIndex((m) => m.method === 'hook/completed' && m.params.run.status === 'blocked');
  const other = JSON.parse(LINES[i]!);
  other.params.run.entries = [{ kind: 'feedback', text: 'policy-bot: no writes on Fridays' }];
  other.params.run.statusMessage = 'policy-bot';
  const j = MSGS.findIndex((m) => m.method === 'hook/completed' && m.params.run.eventName === 'stop');
  const failed = JSON.parse(LINES[j]!);
  failed.params.run.status = 'failed';
  failed.params.run.entries = [{ kind: 'error', text: 'hook exited with code 1' }];
  const lines = [...LINES];
  lines[i] = JSON.stringify(other);
  lines[j] = JSON.stringify(failed);
  const r = await fsckFile(streamFile(lines), { latchHome: null, allowlist: ALLOW });
  assert.deepEqual(codes(r), ['hook_failed']);
  assert.equal(r.findings[0]!.severity, 'warning');
  assert.deepEqual(r.findings[0]!.lines, [j + 1]);
  assert.equal(r.hook_blocked_outputs, 2);
  const blocked = r.attempts_after_compaction.list.filter((a) => a.outcome === 'blocked');
  assert.equal(blocked[0]!.detail, 'policy-bot: no writes on Fridays');
  assert.ok(r.hook_runs!.runs.some((x) => x.status === 'failed' && x.entries[0]!.text === 'hook exited with code 1'));
  // With the store, the call Latch denied is now shown as blocked by another hook: a denial without a Latch block.
  const s = await fsckFile(streamFile(lines), { latchHome: storeHome({ rollout: rolloutCopy() }), allowlist: ALLOW });
  assert.equal(s.store!.denials!.transcript_blocked_other, 1);
  assert.deepEqual(s.store!.denials!.missing_in_transcript, [BLOCKED[0]]);
});
