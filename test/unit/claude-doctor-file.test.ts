// `latch doctor FILE` on a Claude Code transcript (src/agents/claude/doctor-file.ts): the real 2.1.332
// fixtures (test/fixtures/claude/), damaged copies, a Latch store built by running the in-process hook
// sequence over the same transcript (the cross-check finds nothing false; a deleted denial or a denied
// call shown as run is found), the format sniffing that routes `latch doctor FILE`, and `latch report`
// on that store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claude } from '../../src/agents/claude/index.js';
import {
  claudeTranscriptDoctor,
  doctorClaudeFile,
  renderClaudeReport,
  sniffTranscriptFormat,
  type ClaudeDoctorReport,
} from '../../src/agents/claude/doctor-file.js';
import { cliMain } from '../../src/cli.js';
import type { Io } from '../../src/kit/io.js';
import { report } from '../../src/commands/report/index.js';
import { runHook } from '../../src/hook.js';
import { openStore } from '../../src/store/store.js';
import { sandbox, type Sandbox } from '../helpers/workspace.js';

const FIX = join('test', 'fixtures', 'claude');
const TRANSCRIPT = join(FIX, 'compacting-transcript.jsonl');
const FORK = join(FIX, 'fork-transcript.jsonl');
const SID = 'b518aeac-5ba0-4fde-b760-74eb64550278';

const created: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'latch-claude-doctor-'));
  created.push(d);
  return d;
}
test.after(() => {
  for (const d of created) rmSync(d, { recursive: true, force: true });
});

const codes = (r: ClaudeDoctorReport) => r.findings.map((f) => f.code).sort();
const fixtureLines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n');

function capture(env: NodeJS.ProcessEnv, cwd = process.cwd()): { io: Io; out(): string; err(): string } {
  let out = '';
  let err = '';
  const io: Io = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    env,
    cwd,
    interactive: false,
    ask: async () => assert.fail('no question expected'),
    now: () => new Date().toISOString(),
  };
  return { io, out: () => out, err: () => err };
}

test('a healthy compacting transcript (no store): exit 0, its compactions and the calls after them', () => {
  const r = doctorClaudeFile(TRANSCRIPT, { latchHome: null });
  assert.deepEqual(r.findings, [], renderClaudeReport(r));
  assert.equal(r.exit_code, 0);
  assert.equal(r.format, 'claude-transcript');
  assert.equal(r.qualification.applies, false);
  assert.equal(r.lines, fixtureLines(TRANSCRIPT).length);
  assert.equal(r.bytes, readFileSync(TRANSCRIPT).length);
  assert.deepEqual(
    r.sessions.map((s) => s.session_id),
    [SID],
  );
  assert.deepEqual(Object.keys(r.writer.versions), ['2.1.332']);
  assert.equal(r.records.system, 4);
  assert.deepEqual(r.system_subtypes, { compact_boundary: 2, stop_hook_summary: 2 });
  assert.deepEqual(r.bad_lines, []);

  assert.equal(r.compactions.length, 2);
  const [auto, manual] = r.compactions as [ClaudeDoctorReport['compactions'][0], ClaudeDoctorReport['compactions'][0]];
  assert.deepEqual(
    { line: auto.line, trigger: auto.trigger, pre: auto.pre_tokens, uuid: auto.uuid, summary: auto.summary_line },
    { line: 51, trigger: 'auto', pre: 990044, uuid: 'cb77875a-17ce-467b-ba98-85a82308ab0e', summary: 54 },
  );
  assert.deepEqual(
    { line: manual.line, trigger: manual.trigger, pre: manual.pre_tokens, summary: manual.summary_line },
    { line: 103, trigger: 'manual', pre: 120, summary: 104 },
  );
  // Without Latch the calls after the auto-compaction ran: the report lists them with their outcome.
  assert.deepEqual(
    auto.calls_after.map((c) => [c.line, c.tool, c.summary, c.outcome]),
    [
      [74, 'Bash', 'echo two > b.txt', 'ran'],
      [91, 'Bash', 'echo three > c.txt', 'ran'],
    ],
  );
  assert.deepEqual(manual.calls_after, []);
  assert.equal(r.tool_calls.total, 8);
  assert.deepEqual(r.tool_calls.outcomes, { ran: 7, error: 1, blocked: 0, no_result: 0 });

  // The brief page read (cat page.txt) is checked with the one page-read rule, against its own header.
  assert.equal(r.brief_reads.length, 1);
  assert.deepEqual(
    {
      line: r.brief_reads[0]!.line,
      call: r.brief_reads[0]!.call_id,
      page: r.brief_reads[0]!.page,
      ok: r.brief_reads[0]!.ok,
      against: r.brief_reads[0]!.checked_against,
    },
    { line: 35, call: 'toolu_03page', page: 1, ok: true, against: 'page' },
  );
  const text = renderClaudeReport(r);
  assert.match(text, /Claude Code transcript: 114 lines/);
  assert.match(text, /#1 at line 51: trigger auto, preTokens 990044/);
  assert.match(text, /line 74 Bash: echo two > b\.txt → ran/);
  assert.match(text, /exit 3 does not apply/);
  assert.match(text, /findings: none — OK/);
});

test('a fork transcript: its copied boundary and summary are one compaction; exit 0', () => {
  const r = doctorClaudeFile(FORK, { latchHome: null });
  assert.deepEqual(r.findings, [], renderClaudeReport(r));
  assert.equal(r.compactions.length, 1);
  assert.equal(r.compactions[0]!.line, 6);
  assert.equal(r.compactions[0]!.summary_line, 7);
  assert.equal(r.sessions.length, 1);
  assert.match(r.sessions[0]!.session_id, /^3a6c6dfe-/);
});

test('damaged copies: a garbled line, a truncated last line, a lost line, an empty file → exit 1 with the line', () => {
  const dir = tmp();
  const lines = fixtureLines(TRANSCRIPT);

  const garbled = join(dir, 'garbled.jsonl');
  const g = [...lines];
  g[59] = g[59]!.slice(0, 40) + '\u0000#garbage#' + g[59]!.slice(80);
  writeFileSync(garbled, g.join('\n') + '\n');
  const rg = doctorClaudeFile(garbled, { latchHome: null });
  assert.equal(rg.exit_code, 1);
  assert.ok(codes(rg).includes('parse_error'));
  assert.deepEqual(
    rg.bad_lines.map((b) => b.line),
    [60],
  );
  assert.deepEqual(rg.findings.find((f) => f.code === 'parse_error')!.lines, [60]);
  assert.match(renderClaudeReport(rg), /ERROR parse_error \(line 60\)/);

  const cut = join(dir, 'cut.jsonl');
  const whole = readFileSync(TRANSCRIPT);
  writeFileSync(cut, whole.subarray(0, whole.length - 200));
  const rc = doctorClaudeFile(cut, { latchHome: null });
  assert.equal(rc.exit_code, 1);
  assert.deepEqual(codes(rc), ['truncated_last_line']);
  assert.equal(rc.truncated_last_line!.line, lines.length);

  // The tool_use of `echo two` deleted: its result answers nothing, and the chain is broken.
  const lost = join(dir, 'lost.jsonl');
  writeFileSync(lost, lines.filter((_, i) => i !== 73).join('\n') + '\n');
  const rl = doctorClaudeFile(lost, { latchHome: null });
  assert.equal(rl.exit_code, 1);
  assert.deepEqual(codes(rl), ['broken_chain', 'result_without_call']);
  assert.deepEqual(rl.findings.find((f) => f.code === 'result_without_call')!.lines, [74]);

  // The boundary deleted: its summary follows no boundary.
  const noBoundary = join(dir, 'no-boundary.jsonl');
  writeFileSync(noBoundary, lines.filter((_, i) => i !== 50).join('\n') + '\n');
  const rb = doctorClaudeFile(noBoundary, { latchHome: null });
  assert.equal(rb.exit_code, 1);
  assert.ok(codes(rb).includes('summary_without_boundary'));
  assert.equal(rb.compactions.length, 1);

  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, '');
  const re = doctorClaudeFile(empty, { latchHome: null });
  assert.equal(re.exit_code, 1);
  assert.deepEqual(codes(re), ['empty_file']);
});

test('unreadable: a missing file, a directory, content that is no Claude Code transcript → exit 2', async () => {
  const dir = tmp();
  const missing = doctorClaudeFile(join(dir, 'nope.jsonl'), { latchHome: null });
  assert.equal(missing.exit_code, 2);
  assert.match(missing.unreadable!, /cannot read .*nope\.jsonl/);
  assert.equal(doctorClaudeFile(dir, { latchHome: null }).exit_code, 2);
  const junk = join(dir, 'junk.txt');
  writeFileSync(junk, 'hello\nworld\n');
  assert.equal(doctorClaudeFile(junk, { latchHome: null }).exit_code, 2);
  const c = capture({ ...process.env, LATCH_HOME: join(dir, 'state') });
  assert.equal(await claudeTranscriptDoctor(c.io, { file: join(dir, 'nope.jsonl') }), 2);
  assert.match(c.err(), /latch doctor: cannot read/);
});

test('a call blocked by a hook: blocked, with whether its text names Latch', () => {
  const dir = tmp();
  const lines = fixtureLines(TRANSCRIPT);
  // The post-compaction `echo two` as Claude Code records a call Latch denied, and `echo three` denied by another hook.
  const deny = (line: string, id: string, reason: string) => {
    const o = JSON.parse(line) as Record<string, unknown>;
    const text = `PreToolUse:Bash hook error: ${reason}`;
    o.message = { role: 'user', content: [{ type: 'tool_result', content: text, is_error: true, tool_use_id: id }] };
    o.toolUseResult = `Error: ${text}`;
    return JSON.stringify(o);
  };
  const l = [...lines];
  l[74] = deny(l[74]!, 'toolu_07b', 'Latch blocked this call. Session b518aeac is latched: its context was compacted.');
  l[91] = deny(l[91]!, 'toolu_08c', 'policy check failed');
  const file = join(dir, 'blocked.jsonl');
  writeFileSync(file, l.join('\n') + '\n');
  const r = doctorClaudeFile(file, { latchHome: null });
  assert.deepEqual(r.findings, [], renderClaudeReport(r));
  const after = r.compactions[0]!.calls_after;
  assert.deepEqual(
    after.map((c) => [c.line, c.outcome, c.blocked?.names_latch]),
    [
      [74, 'blocked', true],
      [91, 'blocked', false],
    ],
  );
  assert.equal(r.tool_calls.outcomes.blocked, 2);
  assert.match(renderClaudeReport(r), /BLOCKED by a PreToolUse hook \(Latch\): Latch blocked this call/);
});

// ---------------------------------------------------------------------------------------------
// A store built by the hook sequence over the same transcript

interface Built {
  sb: Sandbox;
  file: string;
  written: string[];
  denied: Map<string, string>;
}

function claudePayload(name: string, over: Record<string, unknown>): Record<string, unknown> {
  return { ...(JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>), ...over };
}

/**
 * Replays the compacting transcript through runHook(claude), appending each line as Claude Code would
 * (stamped with the time it is written): SessionStart, Pre/PostToolUse around each call, PreCompact,
 * SessionStart(compact) and PostCompact before each boundary, SessionStart(resume) for each new process,
 * Stop. A call Latch denies gets the tool_result Claude Code writes for it.
 */
async function buildStore(): Promise<Built> {
  const sb = sandbox();
  const config = join(sb.base, 'claude-config');
  const dir = join(config, 'projects', '-home-u-proj');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${SID}.jsonl`);
  const env = { ...sb.env, CLAUDE_CONFIG_DIR: config, LATCH_CONTAIN: 'list' };
  const base = { session_id: SID, transcript_path: file, cwd: sb.work };
  const hook = async (name: string, over: Record<string, unknown> = {}) => {
    const p = claudePayload(name, { ...base, ...over });
    const r = await runHook(claude, JSON.stringify(p), String(p.hook_event_name), env);
    const out = r.stdout ? (JSON.parse(r.stdout) as { hookSpecificOutput?: Record<string, unknown> }) : null;
    return {
      denied: out?.hookSpecificOutput?.permissionDecision === 'deny',
      reason: String(out?.hookSpecificOutput?.permissionDecisionReason ?? ''),
    };
  };
  writeFileSync(join(sb.work, 'somefile'), 'hello from somefile\n');
  writeFileSync(file, '');
  const written: string[] = [];
  const append = (o: Record<string, unknown>) => {
    if ('timestamp' in o) o.timestamp = new Date().toISOString();
    const line = JSON.stringify(o);
    written.push(line);
    appendFileSync(file, line + '\n');
  };
  const denied = new Map<string, string>();
  const calls = new Map<string, { name: string; input: unknown }>();
  await hook('session-start-startup');
  const lines = fixtureLines(TRANSCRIPT).map((l) => l.split('/home/u/proj').join(sb.work));
  for (const [i, line] of lines.entries()) {
    const o = JSON.parse(line) as Record<string, unknown>;
    const content = (o.message as { content?: unknown } | undefined)?.content;
    const blocks = Array.isArray(content) ? (content as Record<string, unknown>[]) : [];
    if (o.type === 'queue-operation' && o.operation === 'enqueue' && i > 0) await hook('session-start-resume');
    if (o.type === 'system' && o.subtype === 'compact_boundary') {
      const trigger = (o.compactMetadata as { trigger: string }).trigger;
      await hook(`pre-compact-${trigger}`);
      await hook('session-start-compact');
      await hook(`post-compact-${trigger}`);
    }
    const result = blocks.find((b) => b.type === 'tool_result');
    if (o.type === 'user' && result) {
      const id = String(result.tool_use_id);
      const reason = denied.get(id);
      if (reason !== undefined) {
        const text = `PreToolUse:Bash hook error: ${reason}`;
        o.message = {
          role: 'user',
          content: [{ type: 'tool_result', content: text, is_error: true, tool_use_id: id }],
        };
        o.toolUseResult = `Error: ${text}`;
        append(o);
        continue;
      }
      append(o);
      const call = calls.get(id)!;
      const failedCall = result.is_error === true;
      const post = failedCall
        ? 'post-tool-use-failure-bash'
        : call.name === 'Write'
          ? 'post-tool-use-write'
          : call.name === 'Edit'
            ? 'post-tool-use-edit'
            : 'post-tool-use-bash';
      await hook(post, { tool_name: call.name, tool_input: call.input, tool_use_id: id });
      continue;
    }
    append(o);
    for (const b of blocks) {
      if (o.type !== 'assistant' || b.type !== 'tool_use') continue;
      const id = String(b.id);
      calls.set(id, { name: String(b.name), input: b.input });
      const r = await hook('pre-tool-use-bash', { tool_name: b.name, tool_input: b.input, tool_use_id: id });
      if (r.denied) denied.set(id, r.reason);
    }
    if (o.type === 'system' && o.subtype === 'stop_hook_summary') await hook('stop');
  }
  // The manual /compact run ends with SessionEnd (its scan reads the second boundary).
  await hook('session-end');
  return { sb, file, written, denied };
}

test('cross-check with a store built by the hook sequence: no false finding; a deleted denial and a denied call shown as run are found; latch report works', async (t) => {
  const b = await buildStore();
  t.after(b.sb.cleanup);
  // Latch denied both calls after the auto-compaction.
  assert.deepEqual([...b.denied.keys()].sort(), ['toolu_07b', 'toolu_08c']);

  const r = doctorClaudeFile(b.file, { latchHome: b.sb.home });
  assert.deepEqual(r.findings, [], renderClaudeReport(r));
  assert.equal(r.exit_code, 0);
  const st = r.store!;
  assert.equal(st.status, 'checked', st.detail);
  assert.equal(st.session_id, SID);
  assert.equal(st.agent, 'claude');
  assert.notEqual(st.state, 'mutable');
  assert.deepEqual(
    st.compactions!.map((c) => [c.seq, c.trigger, c.in_file, c.tripped_at !== null, c.checkpoint_id !== null]),
    [
      [1, 'auto', true, true, true],
      [2, 'manual', true, true, true],
    ],
  );
  assert.ok(st.compactions!.every((c) => c.observed_via.includes('transcript')));
  assert.deepEqual(
    st.checkpoints!.map((c) => c.prefix),
    ['same', 'same'],
  );
  assert.equal(st.denials!.store, 2);
  assert.equal(st.denials!.blocked_by_latch_in_file, 2);
  assert.deepEqual(st.denials!.missing_in_file, []);
  assert.deepEqual(st.denials!.missing_in_store, []);
  assert.ok((st.held_intervals ?? []).length >= 1);
  assert.deepEqual(
    r.compactions[0]!.calls_after.map((c) => [c.summary, c.outcome, c.blocked?.names_latch]),
    [
      ['echo two > b.txt', 'blocked', true],
      ['echo three > c.txt', 'blocked', true],
    ],
  );
  // The guard recorded the brief read before any brief existed (not complete for that reason alone):
  // the page is checked against its own header, and the store's record is shown beside it.
  assert.equal(r.brief_reads[0]!.store_ok, false);
  assert.equal(r.brief_reads[0]!.checked_against, 'page');
  assert.equal(r.brief_reads[0]!.ok, true);
  const text = renderClaudeReport(r);
  assert.match(text, /denials: 2 in the store; 2 call\(s\) blocked by Latch in the file/);
  assert.match(text, /transcript prefix \d+ bytes [0-9a-f]{12}…: same/);

  // Through the command, with the io's LATCH_HOME, and through `latch doctor FILE` (sniffed).
  const c = capture(b.sb.env, b.sb.work);
  assert.equal(await claudeTranscriptDoctor(c.io, { file: b.file, json: true }), 0);
  assert.equal((JSON.parse(c.out()) as ClaudeDoctorReport).store?.status, 'checked');
  const viaCli = capture(b.sb.env, b.sb.work);
  assert.equal(await cliMain(['doctor', b.file], viaCli.io), 0);
  assert.match(viaCli.out(), /Claude Code transcript/);

  // latch report on the store holding the Claude session.
  const md = capture(b.sb.env, b.sb.work);
  assert.equal(await report(md.io, { cwd: b.sb.work, markdown: true }), 0);
  assert.match(md.out(), new RegExp(SID));
  assert.match(md.out(), /### Compactions/);
  const html = join(b.sb.base, 'report.html');
  const hc = capture(b.sb.env, b.sb.work);
  assert.equal(await report(hc.io, { cwd: b.sb.work, html }), 0);
  assert.match(readFileSync(html, 'utf8'), new RegExp(SID));

  // A denial deleted from the store: the block in the file has no denial.
  const db = openStore(b.sb.home, { create: false });
  try {
    db.prepare("DELETE FROM denials WHERE tool_use_id = 'toolu_07b'").run();
  } finally {
    db.close();
  }
  const r2 = doctorClaudeFile(b.file, { latchHome: b.sb.home });
  assert.deepEqual(codes(r2), ['block_not_in_store'], renderClaudeReport(r2));
  assert.equal(r2.exit_code, 1);
  assert.deepEqual(r2.store!.denials!.missing_in_store, ['toolu_07b']);
  const resultLine = b.written.findIndex((l) => l.includes('"tool_use_id":"toolu_07b"')) + 1;
  assert.deepEqual(r2.findings[0]!.lines, [resultLine]);
  assert.match(renderClaudeReport(r2), /WARN {2}block_not_in_store/);

  // A copy in which the denied `echo three` ran: the denial is not in it, it ran while held, and the
  // second checkpoint's prefix no longer matches.
  const copy = join(b.sb.base, 'altered.jsonl');
  const ran = JSON.parse(fixtureLines(TRANSCRIPT)[91]!) as Record<string, unknown>;
  const altered = b.written.map((l) => (l.includes('"tool_use_id":"toolu_08c"') ? JSON.stringify(ran) : l));
  writeFileSync(copy, altered.join('\n') + '\n');
  const r3 = doctorClaudeFile(copy, { latchHome: b.sb.home });
  assert.equal(r3.exit_code, 1);
  assert.equal(r3.store!.session_id, SID, 'found by the session id (the copy is not the recorded path)');
  assert.match(r3.store!.detail, /not the recorded transcript/);
  for (const code of ['denial_not_in_transcript', 'ran_while_held', 'prefix_rewritten'])
    assert.ok(codes(r3).includes(code), `${code} in ${codes(r3).join(', ')}`);
  assert.equal(r3.findings.find((f) => f.code === 'denial_not_in_transcript')!.severity, 'error');
});

// ---------------------------------------------------------------------------------------------
// Routing

test('format sniffing: Claude Code transcripts go to the Claude doctor; Codex rollouts, streams and .zst to the Codex one', async () => {
  const doc = join('test', 'fixtures', 'doctor');
  assert.equal(sniffTranscriptFormat(TRANSCRIPT), 'claude');
  assert.equal(sniffTranscriptFormat(FORK), 'claude');
  assert.equal(sniffTranscriptFormat(join(FIX, 'tool-results.jsonl')), 'claude');
  assert.equal(sniffTranscriptFormat(join(doc, 'hooked-session.jsonl')), 'codex');
  assert.equal(sniffTranscriptFormat(join(doc, 'app-server.jsonl')), 'codex');
  assert.equal(sniffTranscriptFormat(join(doc, 'damaged', 'garbage-line.jsonl.zst')), 'codex');
  const dir = tmp();
  assert.equal(sniffTranscriptFormat(join(dir, 'missing.jsonl')), 'codex');
  assert.equal(sniffTranscriptFormat(dir), 'codex');
  // A Claude transcript whose first line is damaged is still recognised by the next ones.
  const damaged = join(dir, 'first-bad.jsonl');
  writeFileSync(damaged, `{"type":"queue-op\n${readFileSync(TRANSCRIPT, 'utf8')}`);
  assert.equal(sniffTranscriptFormat(damaged), 'claude');

  const env = { ...process.env, LATCH_HOME: join(dir, 'state') };
  const claudeRun = capture(env);
  assert.equal(await cliMain(['doctor', TRANSCRIPT, '--json'], claudeRun.io), 0);
  assert.equal((JSON.parse(claudeRun.out()) as { schema: string }).schema, 'latch.doctor.claude-transcript/1');
  const codexRun = capture(env);
  assert.equal(await cliMain(['doctor', join(doc, 'hooked-session.jsonl'), '--json'], codexRun.io), 0);
  assert.equal((JSON.parse(codexRun.out()) as { schema: string }).schema, 'latch.doctor.transcript/1');
  // --agent chooses: a Codex rollout read as a Claude transcript is not one.
  const forced = capture(env);
  assert.equal(await cliMain(['doctor', join(doc, 'hooked-session.jsonl'), '--agent', 'claude'], forced.io), 2);
  // A missing file keeps the Codex doctor's answer.
  const missing = capture(env);
  assert.equal(await cliMain(['doctor', join(dir, 'missing.jsonl'), '--json'], missing.io), 2);
  assert.equal((JSON.parse(missing.out()) as { schema: string }).schema, 'latch.doctor.transcript/1');
});
