// The one page-read rule: a read receipt (verifyRead, what the guard counts) and native-resume
// qualification (resumeRead, what a resume accepts) give the same verdict on every generated tool
// output, and that verdict is the one an independent oracle computes from how the output was built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { buildBrief, emptyContent, pageText, verifyRead, type Brief } from '../../src/continuity/brief.js';
import { digestOf } from '../../src/continuity/brief.js';
import { codexToolOutput } from '../../src/agents/codex/outputs.js';
import { resumeRead } from '../../src/agents/codex/qualify.js';

const base = buildBrief(
  {
    ...emptyContent(),
    objective: 'Ship the parser. '.repeat(400),
    decisions: ['use a Pratt parser'],
    next_action: 'write the tests',
  },
  { session_id: 'sess-1', source: 'auto', version: 3, created_at: '2026-12-01T09:00:00.000Z' },
  1200,
);
const older = buildBrief(
  { ...emptyContent(), objective: 'Older objective. '.repeat(400) },
  { session_id: 'sess-1', source: 'auto', version: 2, created_at: '2026-12-01T08:00:00.000Z' },
  1200,
);
const other = buildBrief(
  {
    ...emptyContent(),
    objective: 'Ship the parser. '.repeat(400),
    decisions: ['use a Pratt parser'],
    next_action: 'write the tests',
  },
  { session_id: 'sess-2', source: 'auto', version: 3, created_at: '2026-12-01T09:00:00.000Z' },
  1200,
);

/** How one output is built; the oracle reads the verdict off this, not off the text. */
interface Spec {
  page: number;
  block: 'right' | 'tampered' | 'older' | 'other-session' | 'cut' | 'none' | 'two';
  status: 'exit0' | 'exit1' | 'running' | 'none';
  /** The header's Original token count claims more than is shown. */
  undercount: boolean;
  marker: 'none' | 'warning-head' | 'mid-line' | 'bytes-omitted';
  wrapper: 'none' | 'is-error' | 'hook-denied';
  /** Plain text around the block (never a marker). */
  before: string;
  after: string;
}

function blockOf(s: Spec, b: Brief): string {
  const n = Math.min(s.page, b.page_digests.length);
  switch (s.block) {
    case 'right':
      return pageText(b, n);
    case 'tampered': {
      // One character of the body changed, under the original header and digest.
      const t = pageText(b, n);
      const at = t.indexOf('\n') + 1;
      return t.slice(0, at) + (t[at] === 'x' ? 'y' : 'x') + t.slice(at + 1);
    }
    case 'older':
      return pageText(older, Math.min(n, older.page_digests.length));
    case 'other-session':
      return pageText(other, Math.min(n, other.page_digests.length));
    case 'cut': {
      const t = pageText(b, n);
      return t.slice(0, Math.floor(t.length / 2));
    }
    case 'two':
      return pageText(b, n) + pageText(b, n);
    case 'none':
      return 'no page here\n';
  }
}

function build(s: Spec, b: Brief): string {
  let body = s.before + blockOf(s, b) + s.after;
  if (s.marker === 'warning-head') body = `Warning: truncated output (original token count: 99999)\n${body}`;
  if (s.marker === 'mid-line') body = `${body}42…1234 tokens truncated…671\n`;
  if (s.marker === 'bytes-omitted') body = `${body}... 1290000 bytes omitted ...\n`;
  const head = ['Chunk ID: 5e1f0a', 'Wall time: 0.0100 seconds'];
  if (s.status === 'exit0') head.push('Process exited with code 0');
  if (s.status === 'exit1') head.push('Process exited with code 1');
  if (s.status === 'running') head.push('Process running with session ID 4242');
  const shown = Math.ceil(Buffer.byteLength(body, 'utf8') / 4);
  head.push(`Original token count: ${s.undercount ? shown + 100 : shown}`);
  const out = `${head.join('\n')}\nOutput:\n${body}`;
  if (s.wrapper === 'is-error') return JSON.stringify({ isError: true, content: [{ type: 'text', text: out }] });
  if (s.wrapper === 'hook-denied')
    return `Command blocked by PreToolUse hook: latched. Command: latch brief --page ${s.page}\n${out}`;
  return out;
}

/** A complete read: one untouched page of the current version, run to exit 0, shown whole, unwrapped. */
const oracle = (s: Spec) =>
  s.block === 'right' && s.status === 'exit0' && !s.undercount && s.marker === 'none' && s.wrapper === 'none';

const plain = fc.stringMatching(/^[a-z ]{0,40}\n$/).map((x) => (x.includes('LATCH') ? '' : x));
const spec: fc.Arbitrary<Spec> = fc.record({
  page: fc.integer({ min: 1, max: 8 }),
  block: fc.constantFrom('right', 'right', 'right', 'tampered', 'older', 'other-session', 'cut', 'none', 'two'),
  status: fc.constantFrom('exit0', 'exit0', 'exit0', 'exit1', 'running', 'none'),
  undercount: fc.constantFrom(false, false, false, false, true),
  marker: fc.constantFrom('none', 'none', 'none', 'warning-head', 'mid-line', 'bytes-omitted'),
  wrapper: fc.constantFrom('none', 'none', 'none', 'is-error', 'hook-denied'),
  before: fc.oneof(fc.constant(''), plain),
  after: fc.oneof(fc.constant(''), plain),
});

test('receipts and resume qualification agree on every generated output, and both match the oracle', () => {
  assert.ok(base.page_digests.length >= 3, 'a brief of several pages');
  let complete = 0;
  fc.assert(
    fc.property(spec, (s) => {
      const out = build(s, base);
      const receipt = verifyRead(out, base, codexToolOutput);
      const resume = resumeRead(out, digestOf(base));
      assert.deepEqual(resume, receipt, 'the two paths give the same verdict and reasons');
      assert.equal(receipt.ok, oracle(s), `${JSON.stringify(s)} → ${receipt.reasons.join('; ')}`);
      if (receipt.ok) {
        complete++;
        assert.equal(receipt.page, Math.min(s.page, base.page_digests.length));
      } else assert.ok(receipt.reasons.length > 0, 'a refusal always says why');
    }),
    { numRuns: 2000 },
  );
  assert.ok(complete > 50, `the generator makes complete reads too (${complete})`);
});
