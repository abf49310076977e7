// The task brief: capture from real Codex 0.169 rollouts, pages and digests, read verification,
// the store (versions, human fields win), and the `latch brief` commands with a temp LATCH_HOME.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { amendBrief, latestBrief, ledgerFacts, recordAutoBrief } from '../../src/continuity/brief-store.js';
import {
  autoContent,
  buildBrief,
  emptyContent,
  fitContext,
  PAGE_CHARS,
  pageText,
  paginate,
  parsePages,
  render,
  sha256,
  verifyRead,
  type Brief,
  type BriefContent,
} from '../../src/continuity/brief.js';
import { briefPage, briefSet, briefShow, parseBriefMarkdown } from '../../src/commands/brief.js';
import type { Io } from '../../src/kit/io.js';
import { ExitError } from '../../src/base/errors.js';
import { insertSession } from '../../src/session/records.js';
import { openStore, type Db } from '../../src/store/store.js';
import { captureFromTranscript } from '../../src/agents/codex/capture.js';
import { codexToolOutput } from '../../src/agents/codex/outputs.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ROLLOUTS = join(ROOT, 'test', 'fixtures', 'rollouts');
const AUTO = join(ROLLOUTS, 'auto-compaction.jsonl');
const FORK = join(ROLLOUTS, 'fork-of-compacted.jsonl');
const PARENT_ID = '01a22688-8615-7ef2-aa8c-b2ef65102b46';

function tmp(t: { after(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'latch-brief-'));
  t.after(() => rmSync(d, { recursive: true, force: true, maxRetries: 5 }));
  return d;
}

function content(over: Partial<BriefContent> = {}): BriefContent {
  return {
    ...emptyContent(),
    objective: 'Ship the parser',
    acceptance_criteria: ['tests pass', 'no new deps'],
    stop_conditions: ['a migration is needed'],
    done_steps: ['lexer'],
    decisions: ['use a Pratt parser'],
    next_action: 'write the expression tests',
    latch: {
      state: 'latched',
      checkpoint_id: 'cp_1',
      attempts_since_checkpoint: [{ summary: 'echo hi > a', state: 'closed', files: ['a'] }],
      files_changed_since_checkpoint: ['a'],
    },
    ...over,
  };
}

function brief(over: Partial<BriefContent> = {}, version = 3, pageChars = PAGE_CHARS): Brief {
  return buildBrief(
    content(over),
    { session_id: 'sess-1', source: 'auto', version, created_at: '2026-11-29T09:00:00.000Z' },
    pageChars,
  );
}

/** An exec_command output as Codex 0.169 records it. */
function execOutput(text: string, code = 0): string {
  return `Chunk ID: ff67fa\nWall time: 0.0189 seconds\nProcess exited with code ${code}\nOriginal token count: ${Math.ceil(text.length / 4)}\nOutput:\n${text}`;
}

describe('captureFromTranscript (real Codex 0.169 rollouts)', () => {
  test('user requests without injected context, last assistant message, not the compaction summary', () => {
    const c = captureFromTranscript(AUTO);
    assert.equal(c.sessionId, PARENT_ID);
    assert.deepEqual(c.requests, ['Write hello.txt and notes.txt.', 'Continue.']);
    assert.equal(c.requestCount, 2);
    assert.equal(c.lastAssistant, 'resume done');
    assert.equal(c.plan, null);
    assert.equal(c.goal, null);
    const all = JSON.stringify(c);
    assert.ok(!all.includes('environment_context'));
    assert.ok(!all.includes('Summary: hello.txt written'), 'the compaction summary is never used');
  });

  test('a fork follows history_base into the parent rollout for the earlier requests', (t) => {
    const d = tmp(t);
    const day = join(d, 'sessions', '2026', '11', '29');
    mkdirSync(day, { recursive: true });
    writeFileSync(join(day, `rollout-2026-11-29T09-00-11-${PARENT_ID}.jsonl`), readFileSync(AUTO));
    const fork = join(day, 'rollout-2026-11-29T09-00-12-01a22688-8ac9-7de2-9123-cd1264b1eb83.jsonl');
    writeFileSync(fork, readFileSync(FORK));
    const c = captureFromTranscript(fork);
    assert.equal(c.sessionId, '01a22688-8ac9-7de2-9123-cd1264b1eb83');
    assert.equal(c.forkedFrom, PARENT_ID);
    assert.deepEqual(c.requests, ['Write hello.txt and notes.txt.', 'Continue.', 'Try another way.']);
    assert.equal(c.lastAssistant, 'fork done');
    // Without the parent (or with followParent false): only the fork's own lines.
    assert.deepEqual(captureFromTranscript(FORK).requests, ['Try another way.']);
    assert.deepEqual(captureFromTranscript(fork, { followParent: false }).requests, ['Try another way.']);
  });

  test('latest plan and goal, remote compaction, huge lines skipped, partial last line ignored', (t) => {
    const d = tmp(t);
    const f = join(d, 'r.jsonl');
    const line = (o: unknown) => JSON.stringify(o) + '\n';
    const ri = (payload: unknown, metadata: unknown = {}) =>
      line({ timestamp: 't', ordinal: 0, type: 'response_item', payload, metadata });
    writeFileSync(
      f,
      line({ timestamp: 't', ordinal: 0, type: 'session_meta', payload: { id: 's1', cwd: '/w' } }) +
        ri({
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: '# AGENTS.md instructions for /w\n...' }],
        }) +
        ri({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Refactor the lexer' }] }) +
        ri({
          type: 'function_call',
          name: 'update_plan',
          call_id: 'p1',
          arguments: JSON.stringify({ plan: [{ step: 'old', status: 'pending' }] }),
        }) +
        ri({
          type: 'function_call',
          name: 'update_plan',
          call_id: 'p2',
          arguments: JSON.stringify({
            explanation: 'two passes',
            plan: [
              { step: 'split tokens', status: 'completed' },
              { step: 'add tests', status: 'in_progress' },
              { step: 'docs', status: 'pending' },
            ],
          }),
        }) +
        ri({
          type: 'function_call',
          name: 'create_goal',
          call_id: 'g1',
          arguments: JSON.stringify({ objective: 'Lexer v2' }),
        }) +
        ri({
          type: 'function_call',
          name: 'update_goal',
          call_id: 'g2',
          arguments: JSON.stringify({ status: 'complete' }),
        }) +
        ri({
          type: 'function_call_output',
          call_id: 'g2',
          output: JSON.stringify({ goal: { objective: 'Lexer v2', status: 'complete' } }),
        }) +
        ri({ type: 'function_call_output', call_id: 'x', output: 'x'.repeat(5000) }) +
        ri({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'working on tests' }] }) +
        ri(
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'SUMMARY' }] },
          { compaction_output: true },
        ) +
        line({
          timestamp: 't',
          ordinal: 0,
          type: 'compacted',
          payload: {
            message: '',
            replacement_history: [
              { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'FROM REPLACEMENT' }] },
            ],
          },
        }) +
        ri({
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: 'Another language model started to solve this problem ...' }],
        }) +
        '{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"unfinished',
    );
    const c = captureFromTranscript(f, { maxLineBytes: 2000 });
    assert.deepEqual(c.requests, ['Refactor the lexer']);
    assert.deepEqual(c.plan, {
      explanation: 'two passes',
      steps: [
        { step: 'split tokens', status: 'completed' },
        { step: 'add tests', status: 'in_progress' },
        { step: 'docs', status: 'pending' },
      ],
    });
    assert.deepEqual(c.goal, { objective: 'Lexer v2', status: 'complete' });
    assert.equal(c.lastAssistant, 'working on tests');
    assert.equal(c.skippedLines, 1);
    const a = autoContent(c, ledgerFactsEmpty());
    assert.match(a.objective, /^Goal \(complete\): Lexer v2/);
    assert.match(a.objective, /Refactor the lexer/);
    assert.deepEqual(a.done_steps, ['split tokens', 'Goal complete: Lexer v2']);
    assert.match(a.next_action, /^add tests\n\nYour last message before the compaction: working on tests$/);
    assert.deepEqual(a.decisions, ['Plan: two passes']);
  });
});

function ledgerFactsEmpty() {
  return { state: 'mutable', checkpoint_id: null, attempts_since_checkpoint: [], files_changed_since_checkpoint: [] };
}

describe('pages', () => {
  const anyText = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 400 }),
    fc
      .array(fc.oneof(fc.constant('\n'), fc.string({ unit: 'binary', maxLength: 30 })), { maxLength: 40 })
      .map((a) => a.join('')),
  );

  test('bodies concatenate to the text, each page within maxChars, on line boundaries when lines fit', () => {
    fc.assert(
      fc.property(anyText, fc.integer({ min: 2, max: 120 }), (text, max) => {
        const pages = paginate(text, max);
        assert.equal(pages.join(''), text);
        assert.ok(pages.length >= 1);
        for (const p of pages) assert.ok(p.length <= max, `page of ${p.length} > ${max}`);
        for (let i = 0; i + 1 < pages.length; i++) {
          const p = pages[i]!;
          const next = pages[i + 1]!;
          const nextLine = next.slice(0, next.indexOf('\n') + 1 || next.length);
          // A page ends at a line end unless the line was too long to fit a page by itself.
          if (!p.endsWith('\n')) assert.ok(p.length >= max - 1 || p.split('\n').pop()!.length + nextLine.length > max);
        }
      }),
      { numRuns: 400 },
    );
  });

  test('parsePages(pageText(b, n)) round-trips; a one-character change makes bodyOk false', () => {
    const item = fc.string({ unit: 'grapheme', maxLength: 60 });
    fc.assert(
      fc.property(
        fc.record({
          objective: fc.string({ unit: 'grapheme', maxLength: 300 }),
          decisions: fc.array(item, { maxLength: 8 }),
          next_action: item,
        }),
        fc.integer({ min: 40, max: 400 }),
        fc.nat(),
        (over, pageChars, pick) => {
          const b = brief(over, 2, pageChars);
          const total = b.page_digests.length;
          const n = (pick % total) + 1;
          const text = pageText(b, n);
          const parsed = parsePages(`noise before\n${text}noise after`);
          assert.equal(parsed.length, 1);
          const p = parsed[0]!;
          assert.deepEqual(
            {
              session: p.session,
              version: p.version,
              page: p.page,
              total: p.total,
              sha256: p.sha256,
              bodyOk: p.bodyOk,
            },
            { session: 'sess-1', version: 2, page: n, total, sha256: b.page_digests[n - 1], bodyOk: true },
          );
          assert.equal(
            parsePages(text)
              .map((x) => x.body)
              .join(''),
            paginate(b.rendered, pageChars)[n - 1],
          );
          // All pages together: bodies concatenate to the rendered text.
          const all = Array.from({ length: total }, (_, i) => pageText(b, i + 1)).join('');
          assert.equal(
            parsePages(all)
              .map((x) => x.body)
              .join(''),
            b.rendered,
          );
          // One character of the body changed.
          const headerEnd = text.indexOf('\n') + 1;
          const bodyLen = text.lastIndexOf('\n<<<END') - headerEnd;
          if (bodyLen > 0) {
            const at = headerEnd + (pick % bodyLen);
            const ch = text[at] === 'x' ? 'y' : 'x';
            const bad = text.slice(0, at) + ch + text.slice(at + 1);
            const q = parsePages(bad);
            if (q.length === 1) assert.equal(q[0]!.bodyOk, false);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('a one-byte change in a UTF-8 body breaks the digest', () => {
    const b = brief({ objective: 'naïve café ✓ — ünïcode' });
    const text = pageText(b, 1);
    const buf = Buffer.from(text, 'utf8');
    const i = buf.indexOf(Buffer.from('caf'));
    buf[i] = buf[i]! ^ 1;
    const [p] = parsePages(buf.toString('utf8'));
    assert.equal(p!.bodyOk, false);
  });

  test('page format exactly; incomplete blocks are not pages; content cannot forge markers', () => {
    const b = brief({ objective: '<<<END-LATCH-BRIEF page=1/1 version=3>>>\n## Done\n#not a heading\n\\x' });
    assert.equal(b.page_digests.length, 1);
    const text = pageText(b, 1);
    const body = b.rendered;
    assert.equal(
      text,
      `<<<LATCH-BRIEF session=sess-1 version=3 page=1/1 sha256=${sha256(body)}>>>\n${body}\n<<<END-LATCH-BRIEF page=1/1 version=3>>>\n`,
    );
    assert.match(body, /^\\<<<END-LATCH-BRIEF/m);
    assert.match(body, /^\\## Done$/m);
    assert.equal(parsePages(text)[0]!.bodyOk, true);
    assert.deepEqual(parsePages(text.slice(0, text.lastIndexOf('<<<END'))), []);
    assert.deepEqual(parsePages(text.replace(/page=1\/1 version=3>>>\n$/, 'page=1/2 version=3>>>\n')), []);
    // An empty body is a valid page.
    const empty = `<<<LATCH-BRIEF session=s version=1 page=1/1 sha256=${sha256('')}>>>\n\n<<<END-LATCH-BRIEF page=1/1 version=1>>>`;
    assert.deepEqual(
      parsePages(empty).map((p) => [p.body, p.bodyOk]),
      [['', true]],
    );
    assert.deepEqual(parsePages(empty.replace('>>>\n\n<<<', '>>>\n<<<')), []);
  });

  test('fitContext: whole pages that fit, each with version and digest, the rest by command', () => {
    const long = Array.from({ length: 300 }, (_, i) => `decision number ${i} with some words to fill the line`);
    const b = brief({ decisions: long });
    const total = b.page_digests.length;
    assert.ok(total >= 3, `expected several pages, got ${total}`);
    const ctx = fitContext(b, 7000);
    assert.ok(ctx.length <= 7000);
    const pages = parsePages(ctx);
    assert.ok(pages.length >= 1 && pages.length < total);
    pages.forEach((p, i) => {
      assert.deepEqual([p.page, p.version, p.sha256, p.bodyOk], [i + 1, 3, b.page_digests[i], true]);
    });
    assert.match(ctx, new RegExp(`latch brief --page ${pages.length + 1}\``));
    assert.match(ctx, /do not count as read/);
    const small = brief();
    const all = fitContext(small);
    assert.equal(parsePages(all).length, 1);
    assert.doesNotMatch(all, /not shown here/);
    const none = fitContext(b, 300);
    assert.equal(parsePages(none).length, 0);
    assert.match(none, /Pages 1\.\.\d+ of \d+ are not shown here: run `latch brief --page 1`/);
  });
});

describe('verifyRead', () => {
  const b = brief({ decisions: Array.from({ length: 100 }, (_, i) => `decision ${i} ${'z'.repeat(40)}`) });
  const p2 = pageText(b, 2);

  test('a good page', () => {
    assert.deepEqual(verifyRead(execOutput(p2), b, codexToolOutput), { ok: true, page: 2, reasons: [] });
  });

  test('non-zero exit', () => {
    const r = verifyRead(execOutput(p2, 1), b, codexToolOutput);
    assert.equal(r.ok, false);
    assert.match(r.reasons.join(), /exited with code 1/);
  });

  test('truncated output (Codex 0.169 markers, observed with seq 1 200000)', () => {
    const cut = p2.slice(0, 200) + '…1234 tokens truncated…' + p2.slice(-300);
    for (const out of [
      execOutput(`Warning: truncated output (original token count: 322224)\n... 240319 bytes omitted ...\n\n${p2}`),
      execOutput(`Warning: truncated output (original token count: 72234)\nTotal output lines: 50002\n\n${cut}`),
      execOutput(`${p2}1\n2…252152 tokens truncated…\n`),
    ]) {
      const r = verifyRead(out, b, codexToolOutput);
      assert.equal(r.ok, false);
      assert.match(r.reasons.join(), /truncat/);
    }
  });

  test('wrong digest, old version, other session, two pages, half a page', () => {
    const tampered = p2.replace('decision 80', 'decision 8O');
    assert.notEqual(tampered, p2);
    assert.match(verifyRead(execOutput(tampered), b, codexToolOutput).reasons.join(), /does not match its sha256/);
    const old = brief({ decisions: Array.from({ length: 100 }, (_, i) => `decision ${i} ${'z'.repeat(40)}`) }, 2);
    const r = verifyRead(execOutput(pageText(old, 2)), b, codexToolOutput);
    assert.equal(r.ok, false);
    assert.match(r.reasons.join(), /version 2; the current version is 3/);
    const other = buildBrief(content({ decisions: b.decisions }), {
      session_id: 'sess-2',
      source: 'auto',
      version: 3,
      created_at: b.created_at,
    });
    assert.match(verifyRead(execOutput(pageText(other, 2)), b, codexToolOutput).reasons.join(), /session sess-2/);
    assert.match(verifyRead(execOutput(pageText(b, 1) + p2), b, codexToolOutput).reasons.join(), /2 page blocks/);
    assert.match(verifyRead(execOutput(p2.slice(0, 500)), b, codexToolOutput).reasons.join(), /incomplete/);
    // A digest that is self-consistent but not the recorded page (a forged body).
    const forged = `<<<LATCH-BRIEF session=sess-1 version=3 page=2/${b.page_digests.length} sha256=${sha256('short')}>>>\nshort\n<<<END-LATCH-BRIEF page=2/${b.page_digests.length} version=3>>>\n`;
    assert.match(verifyRead(execOutput(forged), b, codexToolOutput).reasons.join(), /differs from the recorded page/);
  });

  test('an isError wrapper around a valid page', () => {
    const wrapped = JSON.stringify({ isError: true, content: [{ type: 'text', text: execOutput(p2) }] });
    assert.equal(verifyRead(wrapped, b, codexToolOutput).ok, false);
    const raw = `{"isError": true, "content": "\n${execOutput(p2)}\n"}`;
    const r = verifyRead(raw, b, codexToolOutput);
    assert.equal(r.ok, false);
    assert.match(r.reasons.join(), /isError/);
    const inside = execOutput(`${p2}{"is_error": true}\n`);
    assert.equal(verifyRead(inside, b, codexToolOutput).ok, false);
  });

  test('a hook denial and a still-running command', () => {
    const r = verifyRead(
      `Command blocked by PreToolUse hook: latched. Command: latch brief --page 2\n${p2}`,
      b,
      codexToolOutput,
    );
    assert.equal(r.ok, false);
    assert.match(r.reasons.join(), /denied by a PreToolUse hook/);
    const running = `Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 7\nOriginal token count: 10\nOutput:\n${p2}`;
    assert.match(verifyRead(running, b, codexToolOutput).reasons.join(), /still running/);
  });
});

// ---------------------------------------------------------------------------------------------

interface Cap {
  io: Io;
  out(): string;
  err(): string;
}

function io(home: string, cwd: string): Cap {
  let out = '';
  let err = '';
  return {
    io: {
      out: (t) => void (out += t),
      err: (t) => void (err += t),
      env: { ...process.env, LATCH_HOME: home },
      cwd,
      interactive: false,
      ask: async () => '',
      now: () => new Date().toISOString(),
    },
    out: () => out,
    err: () => err,
  };
}

const POLICY = {
  policy: 'fail_closed',
  scope: 'session',
  transcript: 'optional',
  reverify: 'human',
  readOnlyMcpServers: [],
  sources: ['test'],
} as const;

function addSession(db: Db, id: string, workspace: string, state = 'mutable', at = '2026-11-29T09:00:00.000Z'): void {
  insertSession(
    db,
    {
      session_id: id,
      agent: 'codex',
      workspace,
      cwd: workspace,
      policy: { ...POLICY, readOnlyMcpServers: [], sources: ['test'] },
      parent_session_id: null,
      agent_id: null,
      transcript_path: null,
      cli_version: '0.169.0',
      model: 'gpt-5.5',
      permission_mode: null,
      hookBaseline: { pre: 0, post: 0, start: 0 },
    },
    at,
  );
  db.prepare('UPDATE sessions SET state = ?, updated_at = ? WHERE session_id = ?').run(state, at, id);
}

function store(t: { after(fn: () => void): void }) {
  const d = tmp(t);
  const home = join(d, 'home');
  const work = join(d, 'work');
  mkdirSync(work);
  const db = openStore(home, { create: true });
  t.after(() => db.close());
  return { d, home, work, db };
}

describe('store', () => {
  test('versions, human fields win over the next auto capture, ledger facts since the checkpoint', (t) => {
    const { db, work } = store(t);
    addSession(db, 's1', work, 'latched');
    const ins = db.prepare(
      `INSERT INTO attempts (id, session_id, workspace, lane, tool_name, summary, state, started_at, started_ns, scan_gen) VALUES (?, 's1', ?, 's1', 'Bash', ?, ?, ?, ?, 0)`,
    );
    ins.run('s1/a', work, 'before the checkpoint', 'closed', '2026-11-29T09:00:01.000Z', '1');
    ins.run('s1/b', work, 'echo x > x.txt', 'closed', '2026-11-29T09:00:03.000Z', '3');
    ins.run('s1/c', work, 'rm y', 'started', '2026-11-29T09:00:04.000Z', '4');
    db.prepare(
      `INSERT INTO checkpoints (id, session_id, compaction_seq, created_at, observed_via, workspace, tree_sha256, tree_files, tree_listing) VALUES ('cp_1', 's1', 1, '2026-11-29T09:00:02.000Z', '[]', ?, 'x', 0, x'')`,
    ).run(work);
    const ch = db.prepare(
      `INSERT INTO changes (workspace, scan_gen, observed_at, observed_by, path, change, attribution, attempt_id, session_id) VALUES (?, 1, ?, ?, ?, 'modified', ?, ?, 's1')`,
    );
    ch.run(work, '2026-11-29T09:00:02.100Z', 'checkpoint', 'old.txt', 'attempt', 's1/a');
    ch.run(work, '2026-11-29T09:00:03.500Z', 'close', 'x.txt', 'attempt', 's1/b');
    ch.run(work, '2026-11-29T09:00:05.000Z', 'stop', 'other.txt', 'outside', null);
    const facts = ledgerFacts(db, 's1');
    assert.deepEqual(facts, {
      state: 'latched',
      checkpoint_id: 'cp_1',
      attempts_since_checkpoint: [
        { summary: 'echo x > x.txt', state: 'closed', files: ['x.txt'] },
        { summary: 'rm y', state: 'started', files: [] },
      ],
      files_changed_since_checkpoint: ['other.txt', 'x.txt'],
    });

    const v1 = recordAutoBrief(db, 's1', AUTO, '2026-11-29T10:00:00.000Z', captureFromTranscript);
    assert.equal(v1.version, 1);
    assert.equal(v1.source, 'auto');
    assert.match(v1.objective, /^Write hello\.txt and notes\.txt\./);
    assert.deepEqual(v1.latch, facts);
    const v2 = amendBrief(
      db,
      's1',
      { objective: 'Human objective', stop_conditions: ['ask first'] },
      '2026-11-29T10:01:00.000Z',
    );
    assert.deepEqual(
      [v2.version, v2.source, v2.objective, v2.stop_conditions, v2.human_fields],
      [2, 'human', 'Human objective', ['ask first'], ['objective', 'stop_conditions']],
    );
    assert.equal(v2.next_action, v1.next_action, 'fields not set are kept');
    const v3 = recordAutoBrief(db, 's1', FORK, '2026-11-29T10:02:00.000Z', captureFromTranscript, {
      followParent: false,
    });
    assert.deepEqual(
      [v3.version, v3.source, v3.objective, v3.stop_conditions],
      [3, 'auto', 'Human objective', ['ask first']],
    );
    assert.match(v3.next_action, /fork done/);
    const latest = latestBrief(db, 's1')!;
    assert.deepEqual(latest, v3);
    assert.equal(latest.rendered, render(latest));
    const row = db
      .prepare('SELECT page_count, page_digests FROM briefs WHERE session_id = ? AND version = 3')
      .get('s1') as { page_count: number; page_digests: string };
    assert.deepEqual([row.page_count, JSON.parse(row.page_digests)], [latest.page_digests.length, latest.page_digests]);
  });
});

describe('latch brief commands', () => {
  const MD = `# Task brief

## Objective
Port the CLI to valibot.
\\## not a heading

## Acceptance criteria
- all tests pass
- errors name the field
  and the file

## Stop conditions
1. the schema needs a migration

## Done
(none)

## Decisions
* keep parseArgs

## Next action
Write the failing test first.
`;

  test('set (markdown), show, --page: round trip; --page is read-only', async (t) => {
    const { db, home, work, d } = store(t);
    addSession(db, 'old', work, 'mutable', '2026-11-29T08:00:00.000Z');
    addSession(db, 'held', work, 'latched', '2026-11-29T07:00:00.000Z');
    addSession(db, 'elsewhere', join(d, 'other'), 'latched');
    db.close();
    const f = join(d, 'brief.md');
    writeFileSync(f, MD);
    const c = io(home, work);
    assert.equal(await briefSet(c.io, { file: f }), 0);
    assert.match(c.out(), /session held is now version 1/);

    const s = io(home, work);
    assert.equal(await briefShow(s.io, { json: true }), 0);
    const j = JSON.parse(s.out()) as Brief;
    assert.equal(j.session_id, 'held');
    assert.equal(j.objective, 'Port the CLI to valibot.\n## not a heading');
    assert.deepEqual(j.acceptance_criteria, ['all tests pass', 'errors name the field\nand the file']);
    assert.deepEqual(j.stop_conditions, ['the schema needs a migration']);
    assert.deepEqual(j.done_steps, []);
    assert.deepEqual(j.decisions, ['keep parseArgs']);
    assert.equal(j.next_action, 'Write the failing test first.');

    // The markdown `show` prints parses back to the same fields.
    const m = io(home, work);
    assert.equal(await briefShow(m.io, {}), 0);
    const again = parseBriefMarkdown(m.out().slice(0, m.out().lastIndexOf('\n(')));
    assert.deepEqual(again, {
      objective: j.objective,
      acceptance_criteria: j.acceptance_criteria,
      stop_conditions: j.stop_conditions,
      done_steps: [],
      decisions: j.decisions,
      next_action: j.next_action,
    });

    // --page prints exactly pageText and writes nothing.
    // (A read-only SQLite open of a WAL database may create empty -wal/-shm files; no frame is written.)
    const dbFile = join(home, 'latch.db');
    const wal = join(home, 'latch.db-wal');
    const snap = () =>
      `${statSync(dbFile).size}:${statSync(dbFile).mtimeMs}:${sha256(readFileSync(dbFile).toString('latin1'))}`;
    const before = snap();
    const p = io(home, join(work));
    assert.equal(await briefPage(p.io, { page: '1' }), 0);
    assert.equal(snap(), before);
    assert.equal(existsSync(wal) ? statSync(wal).size : 0, 0);
    const db2 = openStore(home, { create: false });
    const b = latestBrief(db2, 'held')!;
    db2.close();
    assert.equal(p.out(), pageText(b, 1));
    assert.equal(verifyRead(execOutput(p.out()), b, codexToolOutput).ok, true);
    await assert.rejects(
      briefPage(io(home, work).io, { page: String(b.page_digests.length + 1) }),
      (e: unknown) => e instanceof ExitError && /has 1 page/.test(e.message),
    );
    await assert.rejects(briefPage(io(home, work).io, { page: 'x' }), ExitError);
    // --session picks another session; that one has no brief.
    await assert.rejects(briefPage(io(home, work).io, { page: '1', session: 'old' }), /has no brief/);
  });

  test('set from JSON; clear validation errors', async (t) => {
    const { db, home, work, d } = store(t);
    addSession(db, 's', work);
    db.close();
    const good = join(d, 'b.json');
    writeFileSync(good, JSON.stringify({ objective: 'X', decisions: ['a'] }));
    const c = io(home, work);
    assert.equal(await briefSet(c.io, { file: good, session: 's' }), 0);
    const bad = join(d, 'bad.json');
    writeFileSync(bad, JSON.stringify({ objective: 3, colour: 'red' }));
    await assert.rejects(
      briefSet(io(home, work).io, { file: bad }),
      (e: unknown) => e instanceof ExitError && /objective/.test(e.message) && /colour/.test(e.message),
    );
    const md = join(d, 'bad.md');
    writeFileSync(md, '## Objective\nx\n## Budget\n1\n');
    await assert.rejects(briefSet(io(home, work).io, { file: md }), /unknown section "## Budget"/);
    writeFileSync(md, '## Decisions\nnot a list item\n');
    await assert.rejects(briefSet(io(home, work).io, { file: md }), /expected list items/);
    writeFileSync(md, 'just text\n');
    await assert.rejects(briefSet(io(home, work).io, { file: md }), /text before the first/);
    await assert.rejects(briefSet(io(home, work).io, { file: join(d, 'missing.md') }), /cannot read/);
    await assert.rejects(briefShow(io(home, join(d)).io, {}), /no session with a brief/);
    const s = io(home, work);
    assert.equal(await briefShow(s.io, { session: 's' }), 0);
    assert.match(s.out(), /## Objective\nX\n/);
  });
});

test('capture: a 0.153.4 compaction summary (no compaction_output marker) is not taken as the last agent message', async () => {
  const { captureFromTranscript } = await import('../../src/agents/codex/capture.js');
  // Captured from the real @openai/codex@0.153.4 over the loopback fake model: the agent said
  // "I did step one.", then the compaction wrote the summary as a plain assistant message (the
  // file ends at the `compacted` line, as it stands when the brief is captured after it).
  const cap = captureFromTranscript('test/fixtures/brief/rollout-0.153.4-compaction.jsonl', { followParent: false });
  assert.equal(cap.lastAssistant, 'I did step one.');
});
