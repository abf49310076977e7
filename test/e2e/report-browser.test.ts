// `latch report --html` in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; scripts/install-chromium.sh installs it). The report of a workspace with a write, a
// compaction, a denied call, a verification and a hand edit must render its timeline (compaction and
// denial entries visible), make no request other than for the file itself, keep a <script> from a
// record inert, work without JavaScript, and produce a non-blank screenshot (/tmp/latch-report.png).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { inflateSync } from 'node:zlib';
import type { Io } from '../../src/kit/io.js';
import { report } from '../../src/commands/report/index.js';
import { verify } from '../../src/commands/verify.js';
import { runCodexHook } from '../../src/hook.js';
import { appendCompaction, appendModelTurn, bash, payload, sandbox, type Sandbox } from '../helpers/workspace.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = '/tmp/latch-report.png';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const GAP = 60;
const XSS = `echo '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">' > 'a<b>&"c".txt'`;

const skip = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: run scripts/install-chromium.sh (Debian package chromium) to enable this test`;

function quietIo(sb: Sandbox): Io {
  return {
    out: () => {},
    err: () => {},
    env: sb.env,
    cwd: sb.work,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  };
}

async function hook(sb: Sandbox, p: Record<string, unknown>): Promise<boolean> {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  return (r.stdout ? JSON.parse(r.stdout) : null)?.hookSpecificOutput?.permissionDecision === 'deny';
}

async function agentWrites(sb: Sandbox, turn: string, command: string, files: Record<string, string>): Promise<void> {
  const id = 'call_' + Math.random().toString(16).slice(2);
  assert.equal(await hook(sb, bash(sb, command, { tool_use_id: id, turn_id: turn })), false);
  await sleep(GAP);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(sb.work, f), text);
  await sleep(GAP);
  await hook(sb, payload('post-tool-use-bash', sb, { tool_use_id: id, turn_id: turn, tool_input: { command } }));
}

/** The records: a write, a compaction (latched), a denied call, verify, another write, a hand edit. */
async function scenario(sb: Sandbox): Promise<void> {
  await hook(sb, payload('session-start-startup', sb));
  await agentWrites(sb, 'turn-1', XSS, { 'a<b>&"c".txt': 'x\n', 'notes.txt': 'one\n' });
  await hook(sb, payload('stop', sb, { turn_id: 'turn-1' }));
  await hook(sb, payload('pre-compact-auto', sb, { turn_id: 'turn-2' }));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb, { turn_id: 'turn-2' }));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
  assert.equal(
    await hook(sb, bash(sb, 'rm -rf src && echo "<b>bold</b>" > x', { turn_id: 'turn-2' })),
    true,
    'latched: denied',
  );
  await hook(sb, payload('stop', sb, { turn_id: 'turn-2' }));
  assert.equal(await verify(quietIo(sb), { yes: true }), 0);
  await agentWrites(sb, 'turn-3', 'echo two >> notes.txt', { 'notes.txt': 'one\ntwo\n' });
  await hook(sb, payload('stop', sb, { turn_id: 'turn-3' }));
  await sleep(GAP);
  writeFileSync(join(sb.work, 'hand.txt'), 'by hand\n');
  await sleep(GAP);
  await hook(sb, payload('stop', sb, { turn_id: 'turn-3' }));
}

// A minimal PNG decoder (8-bit RGB/RGBA, not interlaced: what Chromium writes): zlib-inflate the IDAT
// chunks and undo the per-row filters.
function decodePng(buf: Buffer): { width: number; height: number; channels: number; pixels: Buffer } {
  assert.ok(buf.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])), 'PNG signature');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let off = 8; off < buf.length; ) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      assert.equal(depth, 8, 'bit depth 8');
      assert.equal(interlace, 0, 'not interlaced');
      channels = colour === 6 ? 4 : colour === 2 ? 3 : 0;
      assert.ok(channels > 0, `colour type ${colour}`);
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = pixels.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? pixels.subarray((y - 1) * stride, y * stride) : Buffer.alloc(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[x - channels]! : 0;
      const b = prev[x]!;
      const c = x >= channels ? prev[x - channels]! : 0;
      let v = line[x]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else assert.equal(filter, 0, `filter type ${filter}`);
      out[x] = v & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

function pixelStats(png: Buffer): { width: number; height: number; colours: number; nonWhite: number } {
  const { width, height, channels, pixels } = decodePng(png);
  const colours = new Set<number>();
  let nonWhite = 0;
  for (let i = 0; i < pixels.length; i += channels) {
    const [r, g, b] = [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
    colours.add((r << 16) | (g << 8) | b);
    if (r < 245 || g < 245 || b < 245) nonWhite++;
  }
  return { width, height, colours: colours.size, nonWhite: nonWhite / (width * height) };
}

test('report HTML in headless Chromium: renders, stays offline, inert records, works without JS, non-blank', {
  skip,
  timeout: 120_000,
}, async (t) => {
  const { chromium } = await import('playwright-core');
  const sb = sandbox();
  t.after(sb.cleanup);
  await scenario(sb);
  const file = join(sb.base, 'report.html');
  assert.equal(await report(quietIo(sb), { html: file }), 0);
  const url = pathToFileURL(file).href;

  const profiles: string[] = [];
  t.after(() => {
    for (const p of profiles) rmSync(p, { recursive: true, force: true, maxRetries: 5 });
  });
  const launch = (javaScriptEnabled: boolean) => {
    const profile = mkdtempSync(join(tmpdir(), 'latch-chromium-'));
    profiles.push(profile);
    return chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      javaScriptEnabled,
      viewport: { width: 1280, height: 900 },
      serviceWorkers: 'block',
    });
  };

  /** Every request other than the report file itself (route: aborted, so nothing leaves; request: seen at all). */
  const watch = async (ctx: Awaited<ReturnType<typeof launch>>, self = url) => {
    const leaked: string[] = [];
    await ctx.route('**/*', (route) => {
      const u = route.request().url();
      if (u === self) return route.continue();
      leaked.push(u);
      return route.abort();
    });
    ctx.on('request', (r) => {
      if (r.url() !== self && !leaked.includes(r.url())) leaked.push(r.url());
    });
    return leaked;
  };

  // The detector works: a page that does load something is caught.
  {
    const ctx = await launch(true);
    try {
      const control = join(sb.base, 'control.html');
      const leaked = await watch(ctx, pathToFileURL(control).href);
      writeFileSync(control, '<!doctype html><title>control</title><img src="http://latch-control.invalid/x.png">');
      const page = await ctx.newPage();
      await page.goto(pathToFileURL(control).href);
      await page.waitForTimeout(200);
      assert.ok(
        leaked.some((u) => u.startsWith('http://latch-control.invalid/')),
        `the control page's request is seen: ${JSON.stringify(leaked)}`,
      );
    } finally {
      await ctx.close();
    }
  }

  // With JavaScript.
  {
    const ctx = await launch(true);
    try {
      const leaked = await watch(ctx);
      const page = await ctx.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(String(e)));
      await page.goto(url, { waitUntil: 'load' });

      const compaction = page.locator('li.entry.compaction');
      const denial = page.locator('li.entry.denial');
      await compaction.first().waitFor({ state: 'visible' });
      assert.equal(await compaction.count(), 1);
      assert.ok(await denial.first().isVisible(), 'the denial entry is visible');
      assert.match(
        (await compaction.first().innerText()).replace(/\s+/g, ' '),
        /Compaction #1 .*auto, observed via .*checkpoint .*tree [0-9a-f]{16}/,
      );
      assert.match(
        await denial.first().innerText(),
        /Denied[\s\S]*rm -rf src && echo "<b>bold<\/b>" > x[\s\S]*latched/,
      );
      assert.ok(await page.locator('li.entry.trip').first().isVisible(), 'the latch trip');
      assert.match(await page.locator('li.entry.verification').first().innerText(), /tree digest before = after: yes/);
      assert.ok(
        await page.locator('li.entry.change.attr-outside', { hasText: 'hand.txt' }).isVisible(),
        'the hand edit',
      );
      assert.ok(await page.locator('#files-table tbody.file[data-path="notes.txt"]').isVisible(), 'the per-file view');

      // The <script> and onerror of the record are text, never executed.
      assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
      assert.equal(
        await page.locator('li.entry.attempt code.cmd', { hasText: '<script>window.__pwned = 1</script>' }).count(),
        1,
      );
      assert.equal(await page.locator('b', { hasText: 'bold' }).count(), 0, 'no element from a record');
      assert.equal(
        await page.locator('#files-table tbody.file[data-path="a<b>&\\"c\\".txt"]').count(),
        1,
        'the odd path round-trips through the attribute',
      );

      // The enhancement ran (so the CSP hash admits our own script): filters work.
      assert.ok(await page.locator('#controls').isVisible(), 'the filter bar is shown');
      await page.locator('#controls input.filter-kind[value="denial"]').uncheck();
      assert.equal(await denial.first().isVisible(), false, 'denials filtered out');
      assert.ok(await compaction.first().isVisible());
      await page.locator('#controls input.filter-kind[value="denial"]').check();
      await page.locator('#filter-path').fill('hand');
      assert.equal(
        await page.locator('#files-table tbody.file[data-path="notes.txt"]').isVisible(),
        false,
        'path filter',
      );
      await page.locator('#filter-path').fill('');
      assert.deepEqual(problems, [], 'no console errors (a CSP violation would show here)');

      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      const stats = pixelStats(readFileSync(SCREENSHOT));
      assert.equal(stats.width, 1280);
      assert.ok(stats.colours >= 16, `a screenshot with content: ${stats.colours} distinct colours`);
      assert.ok(stats.nonWhite > 0.03, `non-white share ${stats.nonWhite.toFixed(3)}`);
      const blank = pixelStats(await (await ctx.newPage()).screenshot());
      assert.ok(
        blank.colours < stats.colours && blank.nonWhite < stats.nonWhite,
        `blank page for comparison: ${JSON.stringify(blank)}`,
      );
      assert.deepEqual(leaked, [], 'no request besides the report file');
    } finally {
      await ctx.close();
    }
  }

  // Without JavaScript: the same content, no filter bar.
  {
    const ctx = await launch(false);
    try {
      const leaked = await watch(ctx);
      const page = await ctx.newPage();
      await page.goto(url, { waitUntil: 'load' });
      assert.ok(await page.locator('ol.timeline > li.entry.compaction').isVisible());
      assert.ok(await page.locator('ol.timeline > li.entry.denial').isVisible());
      assert.ok(await page.locator('table.files').isVisible());
      assert.equal(await page.locator('#controls').isVisible(), false, 'no controls without JS');
      assert.ok(
        await page.locator('li.entry.verification details[open] ul.checks').isVisible(),
        'evidence shown (details open)',
      );
      assert.deepEqual(leaked, []);
    } finally {
      await ctx.close();
    }
  }
});
