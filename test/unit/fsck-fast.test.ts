// The byte readers behind `latch doctor`'s fast path (src/agents/codex/fsck/bytes.ts) against the string-based
// readings they stand in for (JSON.parse, the regexes, a bounded search), and the analyser's
// bookkeeping of calls waiting for their outputs on a file shaped to stress it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classifyOutput, fsckFile } from '../../src/agents/codex/fsck/fsck.js';
import {
  DIGITS,
  digitsAt,
  exitCodeAt,
  find,
  findPiece,
  jsonStringEnd,
  matchAt,
  matchWords,
  Needle,
  PAGED,
  pagedHead,
  PieceNeedle,
  PieceScanner,
  SCANNED,
  stringEnd,
  stringEndShort,
  turnIdAt,
} from '../../src/agents/codex/fsck/bytes.js';

const REAL = join('test', 'fixtures', 'doctor', 'hooked-session.jsonl');
const view = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.length);
/** Text made of the pieces that matter to a reader, so that properties hit its edge cases. */
const textOf = (pieces: string[]) =>
  fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 6 })), { maxLength: 40 }).map((a) => a.join(''));

test('jsonStringEnd ends a string where stringEnd does, and accepts exactly what JSON.parse accepts', () => {
  const pieces = [
    '"',
    '\\',
    '\\"',
    '\\\\',
    '\\u',
    '\\u00e9',
    '\\u12',
    '\\uD800',
    '\\n',
    '\\x',
    '\\/',
    '\\b',
    '\n',
    '\t',
    '\u0001',
    'é',
    '😀',
    'abc',
    'u',
    '0f',
    ' ',
  ];
  fc.assert(
    fc.property(textOf(pieces), fc.nat(3), (body, pad) => {
      const b = Buffer.from(' '.repeat(pad) + body);
      const to = b.length;
      const z = jsonStringEnd(b, view(b), pad, to);
      assert.equal(z, stringEnd(b, pad, to));
      assert.equal(stringEndShort(b, view(b), pad, to), z);
      if (z < 0) return;
      let parses = true;
      try {
        JSON.parse(`"${b.toString('utf8', pad, z)}"`);
      } catch {
        parses = false;
      }
      assert.equal(SCANNED.valid, parses, JSON.stringify(body));
    }),
    { numRuns: 3000 },
  );
});

test('exitCodeAt reads the exit code classifyOutput reads, or leaves the text to it', () => {
  const pieces = [
    'Process exited with code ',
    'Process exited with code',
    'Exit code: ',
    'Chunk ID: 1f\\n',
    'Wall time: 0.1 seconds\\n',
    '0',
    '1',
    '-',
    '-0',
    '42',
    '12345678901234567',
    'P',
    'é',
    '\u2028',
    'Command blocked by PreToolUse hook: ',
    'apply_patch verification failed',
    'x'.repeat(90),
    '\\n',
  ];
  const exitText = fc
    .tuple(
      fc.constantFrom('', 'Chunk ID: 1f\\nWall time: 0.1 seconds\\n', 'x'.repeat(370), 'é'),
      fc.constantFrom('Process exited with code ', 'Exit code: '),
      fc.constantFrom('0', '1', '-3', '-0', '007', '-', 'x', '12345678901234567890'),
      textOf(pieces),
    )
    .map((t) => t.join(''));
  let read = 0;
  fc.assert(
    fc.property(fc.oneof(textOf(pieces), exitText), fc.nat(700), (text, cut) => {
      const b = Buffer.from(text);
      const end = Math.min(b.length, cut);
      const exit = exitCodeAt(b, view(b), 0, end);
      if (exit === null) return;
      read++;
      const c = classifyOutput(b.toString('utf8', 0, end));
      assert.deepEqual(
        c,
        { outcome: exit === 0 ? 'ran' : 'failed', exit, detail: exit === 0 ? null : `exit code ${exit}` },
        text,
      );
    }),
    { numRuns: 3000 },
  );
  assert.ok(read > 100, 'the fast path was taken');
  // Codex's own shapes are read from the bytes.
  for (const t of [
    'Chunk ID: 9a\\nWall time: 0.0114 seconds\\nProcess exited with code 1\\nOutput:\\nok\\n',
    'Exit code: 0\\nWall time: 0 seconds\\nOutput:\\nSuccess.',
  ]) {
    const b = Buffer.from(t);
    assert.notEqual(exitCodeAt(b, view(b), 0, b.length), null, t);
  }
  // Past the first 400 characters the regex does not look, and counting them needs ASCII.
  const late = Buffer.from('x'.repeat(390) + 'Process exited with code 3');
  assert.equal(exitCodeAt(late, view(late), 0, late.length), null);
  assert.equal(classifyOutput(late.toString()).exit, null);
});

test('pagedHead reads the head of every line of a real rollout, and only that exact shape', () => {
  for (const line of readFileSync(REAL, 'utf8').trimEnd().split('\n')) {
    const b = Buffer.from(line);
    const o = JSON.parse(line) as { type: string; ordinal: number };
    const t = pagedHead(b, view(b), 0, Math.min(b.length, 1024));
    assert.ok(t > 0, line.slice(0, 80));
    assert.equal(b.toString('utf8', t, t + o.type.length + 1), `${o.type}"`);
    assert.equal(PAGED.ordinal, o.ordinal);
  }
  const head =
    '{"timestamp":"2026-11-29T09:20:29.656Z","ordinal":59999,"type":"response_item","payload":{"type":"message"}}';
  fc.assert(
    fc.property(fc.nat(70), fc.constantFrom('"', ',', ':', '1', 'x', ' ', '{'), (at, c) => {
      const line = head.slice(0, at) + c + head.slice(at + 1);
      const b = Buffer.from(line);
      const t = pagedHead(b, view(b), 0, b.length);
      const m = /^\{"timestamp":"[^"]{24}","ordinal":(\d+),"type":"/.exec(line);
      assert.equal(t, m ? m[0].length : -1, line);
      if (m) assert.equal(PAGED.ordinal, Number(m[1]));
    }),
  );
});

test('word and piece searches agree with the byte ones', () => {
  const needle = '"type":"ContextCompaction"';
  const piece = new PieceNeedle(Buffer.from(needle), 15);
  fc.assert(
    fc.property(
      textOf([needle, 'Compac', 'ContextCompaction"', '"type":"Context', 'CommandExecution', '"type":"']),
      fc.nat(20),
      fc.nat(20),
      (text, from, cut) => {
        const b = Buffer.from(text);
        const to = Math.max(0, b.length - cut);
        assert.equal(findPiece(b, piece, from, to), find(b, needle, from, to), text);
        const w = new Needle(needle);
        for (let at = 0; at <= b.length; at++) assert.equal(matchWords(b, view(b), at, w), matchAt(b, at, w.bytes));
      },
    ),
    { numRuns: 500 },
  );
});

test('a PieceScanner finds what find does, over ranges in any order and buffers that change', () => {
  const needle = '"type":"ContextCompaction"';
  const scanner = new PieceScanner(new PieceNeedle(Buffer.from(needle), 15));
  const text = textOf([
    needle,
    'Compac',
    'ContextCompaction"',
    '"type":"Context',
    'CommandExecution',
    '"type":"',
    '\n',
  ]);
  fc.assert(
    fc.property(
      fc.array(fc.tuple(text, fc.array(fc.tuple(fc.nat(200), fc.nat(60)), { maxLength: 12 }), fc.boolean()), {
        maxLength: 4,
      }),
      (bufs) => {
        // One Buffer reused for every "chunk" (as the reader reuses its buffers), with a new view each time.
        const b = Buffer.alloc(4096, 0x78);
        for (const [t, ranges, sorted] of bufs) {
          const n = b.write(t);
          b.fill(0x78, n);
          const dv = view(b);
          const rs = sorted ? [...ranges].sort((x, y) => x[0] - y[0]) : ranges;
          for (const [from, len] of rs) {
            const to = Math.min(b.length, from + len);
            assert.equal(scanner.find(b, dv, from, to), find(b, needle, from, to), `${t} ${from} ${to}`);
          }
        }
      },
    ),
    { numRuns: 1000 },
  );
});

test('turnIdAt reads the id the regex reads, or leaves the value to it', () => {
  fc.assert(
    fc.property(textOf(['"turn_id":"', '"thread_id":"', '\\"', '\\\\', '"', 'abc-1', 'é', '_id":"']), (text) => {
      const b = Buffer.from(text);
      const id = turnIdAt(b, 0, b.length);
      if (id === undefined) return;
      assert.equal(id, /"turn_id":"((?:[^"\\]|\\.)*)"/.exec(text)?.[1] ?? null, text);
    }),
    { numRuns: 2000 },
  );
});

test('calls waiting at once (a few, and more than the arrays hold), ids reused, outputs out of order: settled as a Map keeps them', async () => {
  const d = mkdtempSync(join(tmpdir(), 'latch-fsck-fast-'));
  try {
    const lines = readFileSync(REAL, 'utf8').trimEnd().split('\n');
    const ci = lines.findIndex((l) => l.includes('"type":"compacted"'));
    const call = JSON.parse(lines.find((l, k) => k > ci && l.includes('"type":"function_call"'))!);
    const out = JSON.parse(lines.find((l, k) => k > ci && l.includes('"type":"function_call_output"'))!);
    const mkCall = (id: string, cmd: string) =>
      JSON.stringify({ ...call, payload: { ...call.payload, call_id: id, arguments: JSON.stringify({ cmd }) } });
    const mkOut = (id: string, exit: number) =>
      JSON.stringify({
        ...out,
        payload: { ...out.payload, call_id: id, output: `Chunk ID: 1\nProcess exited with code ${exit}\n` },
      });
    for (const n of [6, 20]) {
      const half = n / 2;
      const extra: string[] = [];
      for (let k = 0; k < n; k++) extra.push(mkCall(`c${k}`, `echo ${k} > f${k}`));
      for (let k = n - 1; k >= half; k--) extra.push(mkOut(`c${k}`, k % 3));
      extra.push(mkCall('c1', 'echo again > f1')); // replaces the waiting c1 where it is, as Map.set does
      extra.push(mkOut('nobody', 0));
      // The fixture's own calls after the compaction come first; its outputs answer them all.
      const body = [...lines, ...extra].map((l, k) => l.replace(/"ordinal":\d+/, `"ordinal":${k}`));
      const f = join(d, `pending-${n}.jsonl`);
      writeFileSync(f, body.join('\n') + '\n');
      const r = await fsckFile(f, { latchHome: null });
      const mine = r.attempts_after_compaction.list.filter((a) => /^c\d+$/.test(a.call_id ?? ''));
      const answered = Array.from({ length: half }, (_, j) => n - 1 - j);
      const waiting = Array.from({ length: half }, (_, k) => k);
      assert.deepEqual(
        mine.map((a) => [a.call_id, a.outcome, a.exit_code, a.summary]),
        [
          ...answered.map((k) => [`c${k}`, k % 3 === 0 ? 'ran' : 'failed', k % 3, `echo ${k} > f${k}`]),
          ...waiting.map((k) => [`c${k}`, 'no_output', null, k === 1 ? 'echo again > f1' : `echo ${k} > f${k}`]),
        ],
        `${n} calls`,
      );
      // the replaced call is counted as made, but never settled
      assert.equal(r.attempts_after_compaction.total, 4 + n + 1);
      assert.equal(r.attempts_after_compaction.no_output, half);
      assert.deepEqual(r.findings, []);
    }
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('digitsAt reads what /^\d+/ matches (value and end), or -1 when it does not match', () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[0-9a-z"-]{0,12}$/), fc.nat(3), (text, pad) => {
      const b = Buffer.from(' '.repeat(pad) + text, 'latin1');
      const m = /^\d+/.exec(text);
      const v = digitsAt(b, pad, b.length);
      if (!m) return assert.equal(v, -1);
      assert.equal(v, Number(m[0]));
      assert.equal(DIGITS.end, pad + m[0].length);
    }),
    { numRuns: 2000 },
  );
});
