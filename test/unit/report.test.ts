// `latch report --html / --markdown / --json`: records produced as in hook.test.ts and commands.test.ts (real
// payloads through runCodexHook, a compaction, a denied call, a held read, `latch verify`, an outside edit),
// then the HTML (self-contained, escaped, semantic), the Markdown tables and the JSON (its stable shape) are
// checked, and the story all three tell: the summary, the denials by reason, the writes apart from the reads
// (a write that ran while latched as an alarm), and Markdown short enough for a pull-request comment.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { report } from '../../src/commands/report/index.js';
import { esc } from '../../src/commands/report/html.js';
import { MD_LIST_CAP, mdCode, mdText } from '../../src/commands/report/markdown.js';
import { pageText } from '../../src/continuity/brief.js';
import { latestBrief } from '../../src/continuity/brief-store.js';
import { openStore } from '../../src/store/store.js';
import { verify } from '../../src/commands/verify.js';
import { ExitError } from '../../src/base/errors.js';
import { claude } from '../../src/agents/claude/index.js';
import { runCodexHook, runHook } from '../../src/hook.js';
import { cliMain } from '../../src/cli.js';
import {
  appendCompaction,
  appendModelTurn,
  bash,
  payload,
  rolloutLine,
  captureIo,
  sandbox,
  type Sandbox,
} from '../helpers/workspace.js';

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON, read field by field
type Json = any;

/** Clear of the attribution's 20 ms window-edge margin (src/ledger/observe.ts). */
const GAP = 60;
const WEIRD = 'we<ird>&"q\'.txt';
const XSS_CMD = `echo '<script>window.__pwned = 1</script>' > '${WEIRD}' && echo "a&b" > notes.txt`;
const DENIED_CMD = `cat notes.txt | tee copy.txt; echo "<img src=x onerror=window.__pwned=2>"`;

const capture = (sb: Sandbox, now?: string) => captureIo(sb, { now });

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = r.stdout ? JSON.parse(r.stdout) : null;
  return { ...r, denied: parsed?.hookSpecificOutput?.permissionDecision === 'deny' };
}

/** One allowed Bash call that writes files while its attempt is live: Pre, write, Post. */
async function agentWrites(sb: Sandbox, turn: string, command: string, files: Record<string, string>) {
  const id = 'call_' + Math.random().toString(16).slice(2);
  const pre = await hook(sb, bash(sb, command, { tool_use_id: id, turn_id: turn }));
  assert.equal(pre.denied, false, `allowed: ${pre.stdout}`);
  await sleep(GAP);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(sb.work, f), text);
  await sleep(GAP);
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: id, turn_id: turn, tool_input: { command } }));
}

/** A read while held: allowed rewritten (run by Latch read-only, replayed), then its PostToolUse. */
async function heldRead(
  sb: Sandbox,
  turn: string,
  command: string,
  id = 'call_' + Math.random().toString(16).slice(2),
) {
  const pre = await hook(sb, bash(sb, command, { tool_use_id: id, turn_id: turn }));
  const reply = pre.stdout ? JSON.parse(pre.stdout) : null;
  const rewritten = reply?.hookSpecificOutput?.updatedInput;
  assert.ok(rewritten && typeof rewritten.command === 'string', `a held read, rewritten: ${pre.stdout}`);
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: id, turn_id: turn, tool_input: rewritten }));
}

/** A compaction seen by every source, as Codex reports an auto-compaction (latches a fail_closed session). */
async function compact(sb: Sandbox, turn: string) {
  await hook(sb, payload('pre-compact-auto', sb, { turn_id: turn }));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb, { turn_id: turn }));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
}

/**
 * Session S: a write (turn-1), an auto-compaction seen by every source (latched, fail_closed), a denied
 * call and a held read (turn-2), Stop, `latch verify --yes`, another write (turn-3), Stop, then a hand
 * edit and a Stop.
 */
async function scenario(sb: Sandbox): Promise<void> {
  await hook(sb, payload('session-start-startup', sb));
  await agentWrites(sb, 'turn-1', XSS_CMD, { [WEIRD]: '<script>window.__pwned = 1</script>\n', 'notes.txt': 'a&b\n' });
  await hook(sb, payload('stop', sb, { turn_id: 'turn-1' }));
  await hook(sb, payload('pre-compact-auto', sb, { turn_id: 'turn-2' }));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb, { turn_id: 'turn-2' }));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
  assert.ok((await hook(sb, bash(sb, DENIED_CMD, { turn_id: 'turn-2' }))).denied, 'latched: the write is denied');
  await heldRead(sb, 'turn-2', 'cat notes.txt');
  await hook(sb, payload('stop', sb, { turn_id: 'turn-2' }));
  const v = capture(sb);
  assert.equal(await verify(v.io, { yes: true }), 0, v.out() + v.err());
  await agentWrites(sb, 'turn-3', 'touch after.txt', { 'after.txt': '' });
  await hook(sb, payload('stop', sb, { turn_id: 'turn-3' }));
  await sleep(GAP);
  writeFileSync(join(sb.work, 'notes.txt'), 'edited by hand\n');
  await sleep(GAP);
  await hook(sb, payload('stop', sb, { turn_id: 'turn-3' }));
}

/** The cells of a GFM table row (split on pipes not escaped by a backslash). */
function cells(row: string): string[] {
  assert.ok(row.startsWith('| ') && row.endsWith(' |'), `a table row: ${row}`);
  return row
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

/** The tables under each `### Heading` of the Markdown: header cells and rows of cells. */
function tables(md: string): Map<string, { head: string[]; rows: string[][] }[]> {
  const out = new Map<string, { head: string[]; rows: string[][] }[]>();
  let section = '';
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('### ')) section = line.slice(4);
    if (line.startsWith('| ') && lines[i + 1]?.startsWith('|---')) {
      const head = cells(line);
      const rows: string[][] = [];
      for (i += 2; i < lines.length && lines[i]!.startsWith('| '); i++) rows.push(cells(lines[i]!));
      for (const r of rows) assert.equal(r.length, head.length, `row width in ${section}: ${JSON.stringify(r)}`);
      out.set(section, [...(out.get(section) ?? []), { head, rows }]);
    }
  }
  return out;
}

describe('latch report', () => {
  let sb: Sandbox;
  let html = '';
  let md = '';
  const NOW = '2030-01-02T03:04:05.678Z';

  before(async () => {
    sb = sandbox();
    await scenario(sb);
    const h = capture(sb, NOW);
    assert.equal(await report(h.io, { html: 'report.html' }), 0, h.err());
    assert.match(h.out(), /^Wrote .*report\.html/);
    html = readFileSync(join(sb.work, 'report.html'), 'utf8');
    const m = capture(sb, NOW);
    assert.equal(await report(m.io, { markdown: true }), 0, m.err());
    md = m.out();
  });
  after(() => sb?.cleanup());

  test('neither --html nor --markdown: usage, exit 2; --out without --markdown is a usage error', async () => {
    const c = capture(sb);
    assert.equal(await report(c.io, {}), 2);
    assert.match(c.err(), /--html FILE or --markdown/);
    await assert.rejects(
      report(c.io, { html: 'x.html', out: 'x.md' }),
      (e: unknown) => e instanceof ExitError && e.exitCode === 2,
    );
    assert.equal(existsSync(join(sb.work, 'x.html')), false);
  });

  test('an unknown --session is a usage error', async () => {
    const c = capture(sb);
    await assert.rejects(
      report(c.io, { session: 'nope', markdown: true }),
      (e: unknown) => e instanceof ExitError && e.exitCode === 2 && /no session nope/.test(e.message),
    );
  });

  test('HTML: one self-contained document with no external resource', () => {
    assert.ok(html.startsWith('<!doctype html>'));
    assert.doesNotMatch(html, /https?:\/\//i, 'no http(s) reference anywhere');
    assert.doesNotMatch(html, /<link\b/i);
    assert.doesNotMatch(html, /<script\b[^>]*\bsrc\s*=/i);
    assert.doesNotMatch(
      html,
      /<(img|iframe|object|embed|video|audio|source|base|form)\b/i,
      'no element that could load anything',
    );
    assert.doesNotMatch(html, /@import|url\(/i, 'no CSS fetch');
    assert.equal(html.match(/<script\b/gi)?.length, 1, 'exactly one script element: the inline enhancement');
    assert.equal(html.match(/<style\b/gi)?.length, 1);
    assert.doesNotMatch(html, /\sstyle\s*=/i, 'no inline style attributes (the CSP admits the style element by hash)');
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    assert.ok(csp, 'a CSP meta tag');
    assert.match(csp!, /default-src 'none'/);
    assert.match(csp!, /script-src 'sha256-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(csp!, /unsafe-inline/);
  });

  test('HTML: the header names workspace, sessions, policy, state, generated time and version', () => {
    const header = html.slice(html.indexOf('<header>'), html.indexOf('</header>'));
    assert.ok(header.includes(esc(sb.work)), 'workspace');
    assert.match(header, /<dt>Sessions<\/dt><dd><code>S<\/code>/);
    assert.match(header, /<dt>Agent<\/dt><dd>Codex<\/dd>/);
    assert.match(header, /<dt>Policy<\/dt><dd>fail_closed \(session\)<\/dd>/);
    assert.match(header, /<dt>Current state<\/dt><dd>mutable/);
    assert.ok(header.includes(`<time datetime="${NOW}">`), 'generated time');
    assert.match(header, /<dt>Latch version<\/dt><dd>[0-9][^<]*<\/dd>/);
  });

  test('HTML: the timeline is an ordered list of classed entries in order', () => {
    const ol = html.slice(
      html.indexOf('<ol class="timeline"'),
      html.indexOf('</ol>', html.indexOf('<ol class="timeline"')),
    );
    const kinds = [...ol.matchAll(/<li class="entry ([a-z-]+)[^"]*" data-kind="([a-z]+)"/g)].map((m) => m[1]);
    const firstOf = (k: string) => kinds.indexOf(k);
    for (const k of ['turn', 'attempt', 'compaction', 'trip', 'denial', 'verification', 'change'])
      assert.ok(firstOf(k) >= 0, `an entry of kind ${k}: ${kinds.join(' ')}`);
    assert.ok(firstOf('attempt') < firstOf('compaction'), 'the write came before the compaction');
    assert.ok(firstOf('compaction') < firstOf('trip') || firstOf('compaction') < firstOf('denial'));
    assert.ok(firstOf('trip') < firstOf('denial'), 'tripped, then denied');
    assert.ok(firstOf('denial') < firstOf('verification'), 'denied, then verified');
    assert.ok(kinds.lastIndexOf('attempt') > firstOf('verification'), 'a call allowed again after verify');
    assert.equal(kinds.filter((k) => k === 'turn').length, 3, 'turn-1, turn-2, turn-3');
    assert.match(ol, /<li class="entry compaction" data-kind="compaction" data-session="S">/);
    assert.match(ol, /<li class="entry denial" data-kind="denial" data-session="S">/);
    assert.match(ol, /class="entry change attr-outside"[^>]*>.*Outside edit.*notes\.txt/);
    assert.match(ol, /Compaction #1<\/span>.*auto, observed via [a-z_ +]*pre_compact/);
    assert.match(
      ol,
      /checkpoint <code>[^<]+<\/code> at <time[^>]*>[^<]*<\/time>: tree <code class="sha">[0-9a-f]{16}…<\/code> \(\d+ files\)/,
    );
    assert.match(ol, /Latch tripped<\/span>.*mutable<\/span> → <span class="badge state state-latched">latched/);
  });

  test('HTML: tool calls show state, files changed and attribution; denials their reasons; verify its evidence', () => {
    const attempt = html.slice(
      html.indexOf('<li class="entry attempt'),
      html.indexOf('</li>', html.indexOf('<li class="entry attempt')),
    );
    assert.match(attempt, /<span class="badge state state-closed">closed<\/span>/);
    assert.ok(attempt.includes(`<code class="path">${esc(WEIRD)}</code>`), 'the weird path, escaped');
    assert.match(
      attempt,
      /<code class="path">notes\.txt<\/code><\/td><td><span class="badge attr attr-attempt">attempt<\/span>/,
    );
    const denial = html.slice(
      html.indexOf('<li class="entry denial"'),
      html.indexOf('</ul></li>', html.indexOf('<li class="entry denial"')),
    );
    assert.match(denial, /<code>latched<\/code> /, 'reason code');
    assert.ok(denial.includes(esc(DENIED_CMD)), 'the denied command, escaped');
    const ver = html.slice(
      html.indexOf('<li class="entry verification"'),
      html.indexOf('</details></li>', html.indexOf('<li class="entry verification"')),
    );
    assert.match(ver, /confirmed by --yes; tree digest before = after: <strong>yes<\/strong>/);
    assert.match(
      ver,
      /<dt>Checkpoint tree<\/dt><dd><code class="sha">([0-9a-f]{64})<\/code>.*<dt>Tree at verify<\/dt><dd><code class="sha">\1<\/code>/,
    );
    assert.match(ver, /<li class="check ok">.*<strong>tree<\/strong>: workspace tree unchanged/);
  });

  test('HTML: the summary first, the denial reason once, writes apart from reads', () => {
    const main = html.slice(html.indexOf('<main>'));
    assert.ok(main.indexOf('<section id="summary"') < main.indexOf('<section id="sessions"'), 'the summary first');
    const summary = main.slice(main.indexOf('<section id="summary"'), main.indexOf('</section>'));
    assert.match(
      summary,
      /<li id="summary-compactions"><strong>Compactions:<\/strong> 1, 1 trip; no session is latched now\.<\/li>/,
    );
    assert.match(
      summary,
      /<li id="summary-writes"><strong>Writes:<\/strong> 1 blocked, 2 ran; ran while latched: none\.<\/li>/,
    );
    assert.match(
      summary,
      /<strong>Verifications:<\/strong> 1: <code>S<\/code> by <code>--yes<\/code> at <time[^>]*>[^<]+<\/time>, tree unchanged\./,
    );
    assert.doesNotMatch(summary, /alarm/);
    // The latched reason's text once, under Blocked calls; the timeline's denial links to it.
    const reason =
      /<div class="reason-group" id="reason-1"><p><strong>1\. <code>latched<\/code><\/strong>, 1 call \(session [^)]*\): (This session is latched: [^<]+)<\/p>/.exec(
        main,
      );
    assert.ok(reason, 'the reason group');
    assert.equal(html.split(reason[1]!).length - 1, 1, 'the reason text appears once');
    const denial = main.slice(main.indexOf('<li class="entry denial"'));
    assert.match(
      denial,
      /<ul class="reasons"><li><code>latched<\/code> <a href="#reason-1">reason 1<\/a><\/li><li><code>not_read_only<\/code> This command is not a read/,
    );
    // The writes that ran, each with when; the read apart.
    const writes = main.slice(main.indexOf('<section id="writes"'), main.indexOf('<section id="reads"'));
    assert.deepEqual(
      [...writes.matchAll(/<tr class="write phase-([a-z-]+)( alarm)?">/g)].map((m) => [m[1], m[2] ?? '']),
      [
        ['before-trip', ''],
        ['after-verify', ''],
      ],
    );
    const reads = main.slice(main.indexOf('<section id="reads"'), main.indexOf('<section id="sessions"'));
    assert.match(reads, /<h2 id="h-reads">Reads \(1, read-only inspection\)<\/h2>/);
    assert.match(
      reads,
      /<tr class="read read-held">.*held read, run read-only by Latch.*<code class="cmd">cat notes\.txt<\/code>/,
    );
    // In the timeline too: reads and writes are entries of their own kind.
    const kinds = [...main.matchAll(/<li class="entry attempt (read|write)[^"]*" data-kind="([a-z]+)"/g)].map((m) => [
      m[1],
      m[2],
    ]);
    assert.deepEqual(kinds, [
      ['write', 'write'],
      ['read', 'read'],
      ['write', 'write'],
    ]);
  });

  test('HTML: record text is escaped; a <script> in a command summary is inert text', () => {
    assert.ok(!html.includes('<script>window.__pwned'), 'no raw script from the record');
    assert.ok(!html.includes('<img src=x'), 'no raw img from the record');
    assert.ok(html.includes('&lt;script&gt;window.__pwned = 1&lt;/script&gt;'), 'the command shows as text');
    assert.ok(html.includes('&lt;img src=x onerror=window.__pwned=2&gt;'));
    assert.ok(html.includes('we&lt;ird&gt;&amp;&quot;q&#39;.txt'), 'the path, escaped (quotes too, for attributes)');
    assert.ok(html.includes('data-path="we&lt;ird&gt;&amp;&quot;q&#39;.txt"'), 'escaped inside an attribute value');
    // The only <script> is ours, and the only '</script>' closes it.
    assert.equal(html.match(/<\/script>/gi)?.length, 1);
    assert.equal(esc(`<a href="x">'&'</a>\``), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;&#96;');
  });

  test('HTML: the per-file view lists every change per file, newest first, with who made it', () => {
    const table = html.slice(
      html.indexOf('<table class="files"'),
      html.indexOf('</table>', html.indexOf('<table class="files"')),
    );
    assert.match(table, /<thead><tr><th scope="col">Observed<\/th>/);
    const notes = table.slice(table.indexOf('<tbody class="file" data-path="notes.txt">'));
    const body = notes.slice(0, notes.indexOf('</tbody>'));
    assert.match(body, /2 changes: 1 attempt, 1 outside/);
    const rows = [...body.matchAll(/<tr class="attr-([a-z]+)"/g)].map((m) => m[1]);
    assert.deepEqual(rows, ['outside', 'attempt'], 'newest first');
    assert.match(body, /outside any agent attempt/);
    assert.match(body, /Bash <code class="cmd">echo &#39;&lt;script&gt;/, 'the attempt that made the first change');
    assert.match(table, /data-path="after\.txt"/);
    const paths = [...table.matchAll(/<tbody class="file" data-path="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(paths, [...paths].sort(), 'files in path order');
  });

  test('Markdown: the three-line summary first', () => {
    const lines = md.split('\n');
    assert.equal(lines[0], '## Latch evidence summary');
    assert.equal(lines[2], '- **Compactions:** 1, 1 trip; no session is latched now.');
    assert.equal(lines[3], '- **Writes:** 1 blocked, 2 ran; ran while latched: none.');
    assert.match(lines[4]!, /^- \*\*Verifications:\*\* 1: `S` by `--yes` at [0-9T:.\-Z]+, tree unchanged\.$/);
    assert.equal(lines[5], '');
    assert.ok(lines[6]!.startsWith('Workspace '), 'then the workspace line');
  });

  test('Markdown: the evidence tables', () => {
    assert.match(md, /^## Latch evidence summary\n/);
    assert.ok(md.includes(`Workspace \`${sb.work}\``));
    assert.ok(md.includes(`Generated ${mdText(NOW)} by Latch`));
    assert.ok(md.includes('. Agent: Codex. Current state:'), 'the agent in the summary line');
    const t = tables(md);
    const one = (name: string) => {
      const list = t.get(name);
      assert.ok(list && list.length >= 1, `a table under ${name}: ${[...t.keys()].join(', ')}`);
      return list![0]!;
    };
    assert.deepEqual(one('Sessions').head, [
      'Session',
      'Agent',
      'Policy',
      'Scope',
      'State',
      'Compactions',
      'Denied calls',
    ]);
    assert.deepEqual(one('Sessions').rows, [['`S`', 'Codex', '`fail_closed`', '`session`', '`mutable`', '1', '1']]);

    const comp = one('Compactions');
    assert.equal(comp.rows.length, 1);
    const [csid, seq, , trigger, via, checkpoint, tree] = comp.rows[0]!;
    assert.deepEqual([csid, seq, trigger], ['`S`', '1', 'auto']);
    assert.match(via!, /pre\\_compact/);
    assert.match(checkpoint!, /^`[^`]+`$/);
    assert.match(tree!, /^`[0-9a-f]{16}…` \(\d+\)$/);

    const trans = one('Authority transitions').rows;
    assert.deepEqual(
      trans.map((r) => [r[2], r[3]]),
      [
        ['`mutable` → `latched`', '`compaction:fail_closed`'],
        ['`latched` → `mutable`', '`verify`'],
      ],
    );
    assert.match(trans[1]![4]!, /confirmed by --yes; checks: checkpoint ok, tree ok/);

    // The story: blocked calls by reason, the writes that ran, the reads apart.
    const blocked = md.slice(md.indexOf('### Blocked calls (1), by reason\n'), md.indexOf('### Writes that ran'));
    assert.ok(blocked.length > 0, md);
    assert.match(blocked, /^\*\*`latched`\*\*, 1 call \(session `S`\): This session is latched: /m);
    const call = blocked.split('\n').filter((l) => l.startsWith('- '));
    assert.equal(call.length, 1);
    assert.ok(
      call[0]!.startsWith(`- ${mdCode(DENIED_CMD, false)} (Bash, `),
      `the denied command as a code span, its pipe as typed: ${call[0]}`,
    );
    assert.match(call[0]!, /\): This command is not a read Latch allows while held: /, 'what this call writes');
    const writes = one('Writes that ran (2)');
    assert.deepEqual(writes.head, ['Session', 'When', 'Ran', 'Tool', 'Call', 'Files changed']);
    assert.deepEqual(
      writes.rows.map((r) => [r[0], r[2], r[3], r[4]]),
      [
        ['`S`', 'before the trip', 'Bash', mdCode(XSS_CMD)],
        ['`S`', 'after verification', 'Bash', '`touch after.txt`'],
      ],
    );
    assert.deepEqual(writes.rows[0]![5]!.split(', ').sort(), [mdCode(WEIRD), '`notes.txt`'].sort());
    assert.equal(writes.rows[1]![5], '`after.txt`');
    const reads = md.slice(md.indexOf('### Reads (1, read-only inspection)\n'), md.indexOf('### Sessions'));
    assert.match(reads, /^1 held read while latched \(run read-only by Latch, output replayed\)\.$/m);
    assert.match(reads, /^- `cat notes\.txt` \(held read, run read-only by Latch, [^)]+\)$/m);
    assert.doesNotMatch(md, /Mutation attempts after each compaction/, 'reads no longer mixed with writes');

    const files = one('Files changed').rows;
    const byPath = new Map(files.map((r) => [r[0], r.slice(1, 6)]));
    assert.deepEqual(byPath.get('`notes.txt`'), ['2', '1', '0', '1', '0']);
    assert.deepEqual(byPath.get('`after.txt`'), ['1', '1', '0', '0', '0']);
    assert.deepEqual(byPath.get(mdCode(WEIRD)), ['1', '1', '0', '0', '0']);

    const digests = one('Tree digest at checkpoint vs at verify');
    assert.equal(digests.rows.length, 1);
    const [dsid, , dcp, beforeTree, afterTree, same, accepted] = digests.rows[0]!;
    assert.equal(dsid, '`S`');
    assert.equal(dcp, checkpoint, 'the compaction checkpoint is the verify baseline');
    assert.equal(beforeTree!.replace(/ .*/, ''), afterTree!.replace(/ .*/, ''));
    assert.match(beforeTree!, /^`[0-9a-f]{64}` \(\d+\)$/);
    assert.equal(same, 'yes');
    assert.equal(accepted, 'no');
    // Record text shows only inside code spans (rendered as text) or backslash-escaped.
    const outsideCode = md.replace(/(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g, '');
    assert.ok(md.includes('<script>'), 'the command, in a code span');
    assert.ok(!outsideCode.includes('<script>') && !outsideCode.includes('<img'), 'no raw HTML from the records');
  });

  test('Markdown to --out FILE; both formats at once', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { markdown: true, out: 'evidence.md', html: 'both.html' }), 0);
    assert.match(c.out(), /^Wrote .*evidence\.md\.\n$/);
    assert.equal(readFileSync(join(sb.work, 'evidence.md'), 'utf8'), md);
    assert.equal(readFileSync(join(sb.work, 'both.html'), 'utf8'), html);
  });

  test('JSON: the report data, every key in a fixed order, the same on every run', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { json: true }), 0, c.err());
    assert.equal(c.err(), '');
    const j = JSON.parse(c.out()) as Json;
    assert.deepEqual(Object.keys(j), [
      'format',
      'workspace',
      'generated_at',
      'version',
      'selected',
      'agents',
      'summary',
      'blocked',
      'writes',
      'reads',
      'sessions',
      'entries',
      'transitions',
      'checkpoints',
      'files',
    ]);
    assert.equal(j.format, 'latch/report@1');
    // The story: the summary's numbers, the denial by its reason, the writes and the read.
    const { verified: by, ...counts } = j.summary;
    assert.deepEqual(counts, {
      compactions: 1,
      trips: 1,
      latched_now: false,
      held_sessions: [],
      writes_blocked: 1,
      writes: 2,
      writes_while_latched: 0,
      reads: 1,
      verifications: 1,
      resumes: 0,
    });
    assert.deepEqual(
      by.map((v: Json) => [v.session_id, v.confirmed_by, v.how, v.tree_unchanged, v.accepted_changes]),
      [['S', '--yes', 'human', true, false]],
    );
    assert.equal(j.blocked.length, 1);
    assert.deepEqual(
      j.blocked[0].reasons.map((r: Json) => r.code),
      ['latched'],
    );
    assert.equal(j.blocked[0].count, 1);
    assert.deepEqual(
      j.blocked[0].calls.map((c: Json) => [c.tool, c.summary, c.detail.map((r: Json) => r.code)]),
      [['Bash', `Bash: ${DENIED_CMD}`, ['not_read_only']]],
    );
    assert.deepEqual(
      j.writes.map((w: Json) => [w.summary, w.phase, w.latched_how, w.kind, [...w.files].sort()]),
      [
        [`Bash: ${XSS_CMD}`, 'before_trip', null, 'shell', [WEIRD, 'notes.txt'].sort()],
        ['Bash: touch after.txt', 'after_verify', null, 'shell', ['after.txt']],
      ],
    );
    assert.deepEqual(
      j.reads.map((r: Json) => [r.summary, r.how, r.phase]),
      [['Bash: cat notes.txt', 'held', 'while_latched']],
    );
    assert.equal(j.workspace, sb.work);
    assert.equal(j.generated_at, NOW);
    assert.match(j.version, /^[0-9]/);
    assert.equal(j.selected, null);
    assert.deepEqual(j.agents, ['codex']);
    assert.deepEqual(
      j.sessions.map((x: Json) => [x.session_id, x.agent, x.policy, x.state]),
      [['S', 'codex', 'fail_closed', 'mutable']],
    );
    // The timeline: the kinds the HTML shows, a transition with its evidence attached.
    const kinds = new Set(j.entries.map((e: Json) => e.kind));
    for (const k of ['attempt', 'change', 'compaction', 'transition', 'denial']) assert.ok(kinds.has(k), k);
    const trip = j.entries.find((e: Json) => e.kind === 'transition' && e.from === 'mutable' && e.to === 'latched');
    assert.ok(trip && typeof trip.evidence === 'object' && trip.evidence !== null, JSON.stringify(trip));
    const verified = j.transitions.find((t: Json) => t.event === 'verify');
    assert.equal(verified.session_id, 'S');
    assert.equal(verified.to, 'mutable');
    assert.ok(Array.isArray(verified.evidence.checks), 'the verification evidence');
    const denial = j.entries.find((e: Json) => e.kind === 'denial');
    assert.ok(denial.summary.includes('tee copy.txt'), 'record text as recorded (JSON escapes it)');
    // Checkpoints: an array (the data's map), each with its session.
    assert.ok(Array.isArray(j.checkpoints) && j.checkpoints.length >= 1);
    for (const cp of j.checkpoints) {
      assert.equal(cp.session_id, 'S');
      assert.match(cp.tree_sha256, /^[0-9a-f]{64}$/);
    }
    // Files: every change, newest first, with who made it.
    const ids = j.files.map((f: Json) => f.id);
    assert.deepEqual(
      ids,
      [...ids].sort((a: number, b: number) => b - a),
    );
    const weird = j.files.find((f: Json) => f.path === WEIRD);
    assert.equal(weird.attribution, 'attempt');
    assert.equal(weird.tool, 'Bash');
    assert.equal(weird.session_id, 'S');
    const hand = j.files.find((f: Json) => f.path === 'notes.txt' && f.attribution === 'outside');
    assert.ok(hand, 'the hand edit, attributed outside');
    assert.equal(hand.tool, null);
    // Stable: the same records give the same bytes.
    const again = capture(sb, NOW);
    assert.equal(await report(again.io, { json: true }), 0);
    assert.equal(again.out(), c.out());
  });

  test('JSON with the other formats: files written, stdout holds the JSON alone; --markdown to stdout is refused', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { json: true, html: 'j.html', markdown: true, out: 'j.md' }), 0);
    assert.equal(JSON.parse(c.out()).format, 'latch/report@1');
    assert.match(c.err(), /^Wrote .*j\.md\.\n$/);
    assert.equal(readFileSync(join(sb.work, 'j.html'), 'utf8'), html);
    assert.equal(readFileSync(join(sb.work, 'j.md'), 'utf8'), md);
    await assert.rejects(
      report(capture(sb).io, { json: true, markdown: true }),
      (e: unknown) => e instanceof ExitError && e.exitCode === 2 && /both print on stdout/.test(e.message),
    );
  });

  test('JSON through the CLI; --help documents the shape', async () => {
    const c = capture(sb, NOW);
    assert.equal(await cliMain(['report', '--json', '--session', 'S'], c.io), 0, c.err());
    const j = JSON.parse(c.out()) as Json;
    assert.deepEqual(j.selected, ['S']);
    assert.deepEqual(j.agents, ['codex']);
    const h = capture(sb);
    assert.equal(await cliMain(['report', '--help'], h.io), 0);
    assert.match(h.out(), /--json\)/);
    for (const word of [
      'latch/report@1',
      'agents',
      'sessions',
      'each with its agent',
      'entries',
      'checkpoints',
      'files',
      'summary: {compactions',
      'writes_while_latched',
      'blocked: [',
      'reads: [',
      'pull-request comment',
    ])
      assert.ok(h.out().includes(word), word);
  });

  test('--session limits the report; a workspace with no records still renders', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { session: 'S', markdown: true }), 0);
    assert.match(c.out(), /session\(s\) `S`/);
    const empty = sandbox();
    try {
      const e = capture(empty, NOW);
      assert.equal(await report(e.io, { html: 'r.html', markdown: true }), 0, e.err());
      const page = readFileSync(join(empty.work, 'r.html'), 'utf8');
      assert.match(page, /No sessions recorded for this workspace/);
      assert.match(page, /Nothing recorded\./);
      assert.match(e.out(), /### Sessions\n\n_None recorded\._/);
    } finally {
      empty.cleanup();
    }
  });
});

describe('latch report names the agent of each session', () => {
  let sb: Sandbox;
  const NOW = '2030-01-02T03:04:05.678Z';

  before(async () => {
    sb = sandbox();
    // A Codex session S and a Claude Code session C in the same workspace (SessionStart records each).
    await hook(sb, payload('session-start-startup', sb));
    const config = join(sb.base, 'claude-config');
    const projects = join(config, 'projects', 'proj');
    mkdirSync(projects, { recursive: true });
    const start = {
      session_id: 'C',
      transcript_path: join(projects, 'C.jsonl'),
      cwd: sb.work,
      hook_event_name: 'SessionStart',
      source: 'startup',
    };
    const r = await runHook(claude, JSON.stringify(start), 'SessionStart', { ...sb.env, CLAUDE_CONFIG_DIR: config });
    assert.equal(r.exitCode, 0, r.stderr ?? '');
  });
  after(() => sb?.cleanup());

  test('Markdown: the summary line and an Agent column in the sessions table', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { markdown: true }), 0, c.err());
    assert.ok(c.out().includes('. Agent: Codex, Claude Code. Current state:'), c.out());
    const sessions = tables(c.out()).get('Sessions')![0]!;
    assert.equal(sessions.head[1], 'Agent');
    assert.deepEqual(sessions.rows.map((r) => [r[0], r[1]]).sort(), [
      ['`C`', 'Claude Code'],
      ['`S`', 'Codex'],
    ]);
    const one = capture(sb, NOW);
    assert.equal(await report(one.io, { markdown: true, session: 'C' }), 0, one.err());
    assert.ok(one.out().includes('. Agent: Claude Code. Current state:'), 'only the selected session’s agent');
  });

  test('JSON: agents, and each session with its agent', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { json: true }), 0, c.err());
    const j = JSON.parse(c.out()) as Json;
    assert.deepEqual(j.agents, ['codex', 'claude']);
    assert.deepEqual(j.sessions.map((x: Json) => [x.session_id, x.agent]).sort(), [
      ['C', 'claude'],
      ['S', 'codex'],
    ]);
    const one = capture(sb, NOW);
    assert.equal(await report(one.io, { json: true, session: 'C' }), 0, one.err());
    const k = JSON.parse(one.out()) as Json;
    assert.deepEqual(k.selected, ['C']);
    assert.deepEqual(k.agents, ['claude']);
    assert.deepEqual(
      k.sessions.map((x: Json) => x.agent),
      ['claude'],
    );
  });

  test('HTML: the header lists the agents; each session row names its agent', async () => {
    const c = capture(sb, NOW);
    assert.equal(await report(c.io, { html: 'agents.html' }), 0, c.err());
    const page = readFileSync(join(sb.work, 'agents.html'), 'utf8');
    const header = page.slice(page.indexOf('<header>'), page.indexOf('</header>'));
    assert.match(header, /<dt>Agent<\/dt><dd>Codex, Claude Code<\/dd>/);
    const table = page.slice(page.indexOf('<table class="sessions">'), page.indexOf('</table>'));
    assert.match(
      table,
      /<thead><tr><th scope="col">Session<\/th><th scope="col">Agent<\/th><th scope="col">Policy<\/th>/,
    );
    const rows = [...table.matchAll(/<tr><td><code>([^<]+)<\/code><\/td><td>([^<]+)<\/td>/g)].map((m) => [m[1], m[2]]);
    assert.deepEqual(rows.sort(), [
      ['C', 'Claude Code'],
      ['S', 'Codex'],
    ]);
  });
});

describe('Markdown escaping', () => {
  test('mdCode: backticks, pipes and newlines', () => {
    assert.equal(mdCode('a|b'), '`a\\|b`');
    assert.equal(mdCode('echo `x`'), '`` echo `x` ``');
    assert.equal(mdCode('`start'), '`` `start ``');
    assert.equal(mdCode('a\nb'), '`a b`');
    assert.equal(mdCode(null), '-');
  });
  test('mdText: inline syntax and raw HTML neutralised', () => {
    assert.equal(mdText('<b>*x*</b> | [l](u) & _y_'), '\\<b\\>\\*x\\*\\</b\\> \\| \\[l\\](u) \\& \\_y\\_');
    assert.equal(mdText(''), '-');
  });
});

describe('attempts on Latch itself', () => {
  test('a call the agent made against Latch is recorded and shown first; none, no section', async (t) => {
    const sb = sandbox();
    t.after(sb.cleanup);
    await hook(sb, payload('session-start-startup', sb));
    await agentWrites(sb, 'turn-1', 'echo a > a.txt', { 'a.txt': 'a\n' });
    const none = capture(sb);
    assert.equal(await report(none.io, { markdown: true }), 0, none.err());
    assert.doesNotMatch(none.out(), /Attempts on Latch itself/);
    // Mutable, the agent types the human's command: denied before the store opens, and recorded.
    assert.ok((await hook(sb, bash(sb, 'latch verify --yes', { turn_id: 'turn-1' }))).denied);
    const m = capture(sb);
    assert.equal(await report(m.io, { markdown: true }), 0, m.err());
    const sections = m.out().match(/^### .*$/gm) ?? [];
    assert.equal(sections[0], '### Attempts on Latch itself (1, all denied)');
    const rows = tables(m.out()).get('Attempts on Latch itself (1, all denied)')![0]!.rows;
    assert.deepEqual(
      rows.map((r) => [r[0], r[2]]),
      [['`S`', '`latch verify --yes`']],
    );
    const h = capture(sb);
    assert.equal(await report(h.io, { html: 'self.html' }), 0, h.err());
    const page = readFileSync(join(sb.work, 'self.html'), 'utf8');
    const self = page.indexOf('<section id="self"');
    assert.ok(self > 0 && self < page.indexOf('<section id="sessions"'), 'the section comes first');
    assert.match(page.slice(self), /Attempts on Latch itself \(1, all denied\)[\s\S]*latch verify --yes/);
  });
});

/** What Codex records for a call whose output is page `n` of the session's brief (the page-read rule's input). */
function appendPageOutput(sb: Sandbox, callId: string, n: number): void {
  const db = openStore(sb.home, { create: false });
  const brief = latestBrief(db, 'S')!;
  db.close();
  const output = `Chunk ID: ${callId}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 40\nOutput:\n${pageText(brief, n)}`;
  appendFileSync(
    sb.transcript,
    rolloutLine('response_item', { type: 'function_call', name: 'exec_command', call_id: callId, arguments: '{}' }) +
      rolloutLine('response_item', { type: 'function_call_output', call_id: callId, output }),
  );
}

describe('the story of a latched session', () => {
  let sb: Sandbox;
  let md = '';
  let html = '';
  let j: Json;
  const DENIALS = 40;
  /** The Markdown limit for a pull-request comment: GitHub takes 65,536 characters; a reviewer reads far less. */
  const MD_LIMIT = 6_000;

  // A write before the trip; a write that started before the trip and changed its file after it; reads
  // while latched (one a brief page, by the transcript's receipt); many denied writes; still latched.
  before(async () => {
    sb = sandbox();
    await hook(sb, payload('session-start-startup', sb));
    await agentWrites(sb, 'turn-1', 'echo a > a.txt', { 'a.txt': 'a\n' });
    const slow = 'call_slow';
    assert.equal(
      (await hook(sb, bash(sb, 'sleep 2; echo b > b.txt', { tool_use_id: slow, turn_id: 'turn-1' }))).denied,
      false,
    );
    await compact(sb, 'turn-2');
    await sleep(GAP);
    writeFileSync(join(sb.work, 'b.txt'), 'b\n');
    await sleep(GAP);
    await hook(
      sb,
      payload('post-tool-use-bash', sb, {
        tool_use_id: slow,
        turn_id: 'turn-1',
        tool_input: { command: 'sleep 2; echo b > b.txt' },
      }),
    );
    await heldRead(sb, 'turn-2', 'cat a.txt');
    // Under tsx no installed latch.cjs exists for the hook to run `latch brief --page 1` itself: the
    // page comes through another read; the transcript's output of that call is what makes it a page read.
    await heldRead(sb, 'turn-2', `cat ${join(sb.base, 'page-1.txt')}`, 'call_page');
    appendPageOutput(sb, 'call_page', 1);
    for (let i = 0; i < DENIALS; i++)
      assert.ok((await hook(sb, bash(sb, `echo ${i} > out-${i}.txt`, { turn_id: 'turn-2' }))).denied);
    await hook(sb, payload('stop', sb, { turn_id: 'turn-2' }));
    const m = capture(sb);
    assert.equal(await report(m.io, { markdown: true }), 0, m.err());
    md = m.out();
    const h = capture(sb);
    assert.equal(await report(h.io, { html: 'story.html' }), 0, h.err());
    html = readFileSync(join(sb.work, 'story.html'), 'utf8');
    const c = capture(sb);
    assert.equal(await report(c.io, { json: true }), 0, c.err());
    j = JSON.parse(c.out());
  });
  after(() => sb?.cleanup());

  test('JSON: the write that ran past the trip counts as run while latched; reads apart, a brief page among them', () => {
    const { verified, ...counts } = j.summary;
    assert.deepEqual(verified, []);
    assert.deepEqual(counts, {
      compactions: 1,
      trips: 1,
      latched_now: true,
      held_sessions: [{ session_id: 'S', state: 'latched' }],
      writes_blocked: DENIALS,
      writes: 2,
      writes_while_latched: 1,
      reads: 2,
      verifications: 0,
      resumes: 0,
    });
    assert.deepEqual(
      j.writes.map((w: Json) => [w.summary, w.phase, w.latched_how, w.files]),
      [
        ['Bash: echo a > a.txt', 'before_trip', null, ['a.txt']],
        ['Bash: sleep 2; echo b > b.txt', 'while_latched', 'ran_past_trip', ['b.txt']],
      ],
    );
    assert.deepEqual(
      j.reads.map((r: Json) => [r.summary.replace(sb.base, 'BASE'), r.how, r.page, r.phase]),
      [
        ['Bash: cat a.txt', 'held', null, 'while_latched'],
        ['Bash: cat BASE/page-1.txt', 'brief_page', 1, 'while_latched'],
      ],
    );
    assert.equal(j.blocked.length, 1, 'one reason for every denial');
    assert.equal(j.blocked[0].count, DENIALS);
    assert.equal(j.blocked[0].calls.length, DENIALS, 'JSON lists every call');
  });

  test('Markdown: the alarm in the summary and in the writes; each reason once; reads apart', () => {
    const lines = md.split('\n');
    assert.equal(lines[2], '- **Compactions:** 1, 1 trip; latched now: `S`.');
    assert.equal(
      lines[3],
      `- **Writes:** ${DENIALS} blocked, 2 ran; **WARNING: 1 write ran while latched** (see Writes that ran).`,
    );
    assert.equal(lines[4], '- **Verifications:** none.');
    const writes = tables(md).get('Writes that ran (2)')![0]!.rows;
    assert.deepEqual(
      writes.map((r) => [r[2], r[4], r[5]]),
      [
        ['before the trip', '`echo a > a.txt`', '`a.txt`'],
        [
          '**WARNING: while latched (started before the trip, changed files after it)**',
          '`sleep 2; echo b > b.txt`',
          '`b.txt`',
        ],
      ],
    );
    const latched = j.blocked[0].reasons[0].message as string;
    assert.equal(md.split(mdText(latched)).length - 1, 1, 'the model-facing reason once');
    const calls = md.slice(md.indexOf('### Blocked calls'), md.indexOf('### Writes that ran'));
    assert.equal(calls.split('\n').filter((l) => l.startsWith('- `echo ')).length, MD_LIST_CAP);
    assert.ok(calls.includes(`…and ${DENIALS - MD_LIST_CAP} more calls`), calls);
    const reads = md.slice(md.indexOf('### Reads (2, read-only inspection)'), md.indexOf('### Sessions'));
    assert.match(
      reads,
      /^1 held read while latched \(run read-only by Latch, output replayed\), 1 brief page read\.$/m,
    );
    assert.match(reads, /^- `cat a\.txt` \(held read, run read-only by Latch, [^)]+\)$/m);
    assert.match(reads, /^- `cat [^`]*page-1\.txt` \(brief page 1, [^)]+\)$/m);
  });

  test(`Markdown: ${DENIALS} denials still fit a pull-request comment`, () => {
    assert.ok(md.length < MD_LIMIT, `${md.length} characters (limit ${MD_LIMIT}):\n${md}`);
  });

  test('HTML: the write that ran while latched is red, in the summary, the writes and the timeline', () => {
    assert.match(
      html,
      /<li id="summary-writes"><strong>Writes:<\/strong> 40 blocked, 2 ran; <strong class="alarm">WARNING: 1 write ran while latched<\/strong>/,
    );
    assert.match(
      html,
      /<tr class="write phase-while-latched alarm">.*<strong class="alarm">WARNING: while latched \(started before the trip, changed files after it\)<\/strong>/,
    );
    const entry = /<li class="entry attempt write attempt-closed alarm" data-kind="write"[^>]*>(.*?)<\/div>/.exec(html);
    assert.ok(entry, 'the timeline entry, classed as an alarm');
    assert.match(entry[1]!, /<span class="label">Write while latched<\/span>.*sleep 2; echo b &gt; b\.txt/);
    // The alarm's style is red, not the grey of a plain entry.
    assert.match(html, /\.entry\.alarm\{background:var\(--denial-bg\);border-color:var\(--denial\)\}/);
    assert.match(html, /strong\.alarm\{color:var\(--denial\)/);
    const latched = esc(j.blocked[0].reasons[0].message as string);
    assert.equal(html.split(latched).length - 1, 1, 'the reason text once in the page');
  });
});
