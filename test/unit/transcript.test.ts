import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMPTY_SCAN, scanTranscript, topLevelType, type ScanState } from '../../src/agents/codex/rollout.js';

const REAL = join('test', 'fixtures', 'rollouts', 'auto-compaction.jsonl');
const FORK = join('test', 'fixtures', 'rollouts', 'fork-of-compacted.jsonl');

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'latch-transcript-'));
}

const line = (type: string, payload: unknown) =>
  JSON.stringify({ timestamp: '2026-11-29T00:00:00Z', type, payload }) + '\n';
const compacted = (message = 'summary') => line('compacted', { message, replacement_history: [] });
const itemDone = (id: string) => line('event_msg', { type: 'item_completed', item: { type: 'ContextCompaction', id } });
const reply = (text = 'ok') =>
  line('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
const turnContext = () => line('turn_context', { cwd: '/w', model: 'm' });

test('the real 0.169 rollout with one auto-compaction counts exactly one compaction', () => {
  const r = scanTranscript(REAL, EMPTY_SCAN);
  assert.equal(r.compactions.length, 1);
  assert.equal(r.state.compactions, 1);
  assert.equal(r.compactions[0]!.via, 'compacted');
  assert.equal(r.compactions[0]!.summaryKind, 'local');
  assert.equal(r.meta?.cliVersion, '0.169.0');
  assert.equal(r.badLines, 0);
  assert.equal(r.state.offset, readFileSync(REAL).length);
});

test('a fork rollout names its parent and holds no compacted line of its own', () => {
  const r = scanTranscript(FORK, EMPTY_SCAN);
  assert.ok(r.meta?.forkedFrom);
  assert.notEqual(r.meta?.forkedFrom, r.meta?.id);
});

test('compacted + turn_context + item_completed{ContextCompaction} is ONE compaction (0.169 order)', () => {
  const dir = tmp();
  const f = join(dir, 'r.jsonl');
  writeFileSync(
    f,
    line('session_meta', { id: 's', cli_version: '0.169.0' }) + reply() + compacted() + turnContext() + itemDone('a'),
  );
  const r = scanTranscript(f, EMPTY_SCAN);
  assert.equal(r.compactions.length, 1);
  // A second compaction after the model spoke again is a new one.
  appendFileSync(f, reply() + compacted('') + turnContext() + itemDone('b'));
  const r2 = scanTranscript(f, r.state);
  assert.equal(r2.compactions.length, 1);
  assert.equal(r2.compactions[0]!.index, 2);
  assert.equal(r2.compactions[0]!.summaryKind, 'remote');
  rmSync(dir, { recursive: true });
});

test('an item marker alone (no compacted line) still counts, and a later different item is another compaction', () => {
  const dir = tmp();
  const f = join(dir, 'r.jsonl');
  writeFileSync(f, itemDone('x') + reply() + itemDone('y'));
  assert.equal(scanTranscript(f, EMPTY_SCAN).state.compactions, 2);
  rmSync(dir, { recursive: true });
});

test('incremental: only complete lines are consumed; a partial last line is read on the next scan', () => {
  const dir = tmp();
  const f = join(dir, 'r.jsonl');
  const c = compacted();
  writeFileSync(f, reply() + c.slice(0, 10));
  const r1 = scanTranscript(f, EMPTY_SCAN);
  assert.equal(r1.compactions.length, 0);
  assert.equal(r1.state.offset, Buffer.byteLength(reply()));
  appendFileSync(f, c.slice(10));
  const r2 = scanTranscript(f, r1.state);
  assert.equal(r2.compactions.length, 1);
  assert.equal(r2.bytesRead, Buffer.byteLength(c), 'the second scan reads only the new bytes');
  rmSync(dir, { recursive: true });
});

test('a replaced or truncated file is rescanned; only compactions beyond the count are new', () => {
  const dir = tmp();
  const f = join(dir, 'r.jsonl');
  writeFileSync(f, compacted() + reply());
  const r1 = scanTranscript(f, EMPTY_SCAN);
  assert.equal(r1.state.compactions, 1);
  // Replace with a file holding two compactions.
  writeFileSync(join(dir, 'new'), compacted() + reply() + compacted() + reply());
  renameSync(join(dir, 'new'), f);
  const r2 = scanTranscript(f, r1.state);
  assert.match(r2.reset ?? '', /replaced/);
  assert.deepEqual(
    r2.compactions.map((c) => c.index),
    [2],
  );
  // Truncate: nothing new, count never goes down.
  truncateSync(f, 5);
  const r3 = scanTranscript(f, r2.state);
  assert.match(r3.reset ?? '', /shrank/);
  assert.equal(r3.compactions.length, 0);
  assert.equal(r3.state.compactions, 2);
  rmSync(dir, { recursive: true });
});

test('an unreadable line that mentions compaction counts as one (fail closed)', () => {
  const dir = tmp();
  const f = join(dir, 'r.jsonl');
  writeFileSync(f, '{"type":"compacted", garbage\n');
  const r = scanTranscript(f, EMPTY_SCAN);
  assert.equal(r.compactions.length, 1);
  assert.equal(r.badLines, 1);
  rmSync(dir, { recursive: true });
});

test('topLevelType reads the record type from the head of a line', () => {
  assert.equal(topLevelType(Buffer.from('{"timestamp":"x","ordinal":3,"type":"compacted","payload":{}}')), 'compacted');
  assert.equal(topLevelType(Buffer.from('not json')), null);
});

test('property: splitting the same bytes into any number of appends gives the same count as one scan', () => {
  const kinds = fc.constantFrom('reply', 'compacted', 'item', 'tc', 'garbage');
  fc.assert(
    fc.property(fc.array(kinds, { maxLength: 25 }), fc.array(fc.nat(), { maxLength: 6 }), (seq, cuts) => {
      let id = 0;
      const text = seq
        .map((k) =>
          k === 'reply'
            ? reply()
            : k === 'compacted'
              ? compacted()
              : k === 'item'
                ? itemDone(`i${id++}`)
                : k === 'tc'
                  ? turnContext()
                  : 'x{\n',
        )
        .join('');
      const bytes = Buffer.from(text);
      const dir = tmp();
      const f = join(dir, 'r.jsonl');
      try {
        writeFileSync(f, bytes);
        const whole = scanTranscript(f, EMPTY_SCAN).state.compactions;
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        writeFileSync(f, '');
        let st: ScanState = EMPTY_SCAN;
        let found = 0;
        let prev = 0;
        for (const p of [...points, bytes.length]) {
          appendFileSync(f, bytes.subarray(prev, p));
          prev = p;
          const r = scanTranscript(f, st);
          found += r.compactions.length;
          st = r.state;
        }
        assert.equal(st.compactions, whole);
        assert.equal(found, whole);
      } finally {
        rmSync(dir, { recursive: true });
      }
    }),
    { numRuns: 150 },
  );
});

test('property: arbitrary bytes never throw and never decrease the count', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (data) => {
      const dir = tmp();
      const f = join(dir, 'r.jsonl');
      try {
        writeFileSync(f, data);
        const r = scanTranscript(f, { ...EMPTY_SCAN, compactions: 3 });
        assert.ok(r.state.compactions >= 3);
      } finally {
        rmSync(dir, { recursive: true });
      }
    }),
    { numRuns: 100 },
  );
});
