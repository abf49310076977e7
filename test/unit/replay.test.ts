// The replay a held read becomes (src/guard/replay.ts): run by bash as an agent runs it, it prints
// exactly what the read printed, on the same streams, exits with the read's status and runs nothing of
// the command it names; the recogniser accepts exactly what replayOf writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, utimesSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { isReplay, replayDir, replayedCommand, replayOf } from '../../src/guard/replay.js';
import { tmpDir } from '../helpers/git.js';

const run = (command: string, cwd: string) =>
  spawnSync('/bin/bash', ['-c', command], { cwd, encoding: 'buffer', stdio: ['ignore', 'pipe', 'pipe'] });

test('a replay prints what the read printed, on the same streams, and keeps its status (property)', () => {
  // A home whose path a shell must quote.
  const home = path.join(tmpDir('latch-replay-'), "it's a home");
  mkdirSync(home);
  const marker = path.join(home, 'ran');
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 300 }),
      fc.uint8Array({ maxLength: 100 }),
      fc.integer({ min: 0, max: 255 }),
      // The original command: anything, including what would run something if it were not a comment.
      fc.oneof(
        fc.string({ maxLength: 80 }),
        fc.constantFrom(`touch '${marker}'`, `x\ntouch '${marker}'`, `$(touch '${marker}')`, `\`touch '${marker}'\``),
      ),
      (out, err, code, original) => {
        fc.pre(!original.includes('\r') && !original.includes('\0'));
        const text = replayOf(home, original, { stdout: Buffer.from(out), stderr: Buffer.from(err), code });
        assert.ok(isReplay(text), text);
        assert.equal(replayedCommand(text), original);
        // The agent sees its own command first.
        assert.ok(text.startsWith(`#${original.split('\n')[0] === '' ? '' : ' '}`));
        const r = run(text, home);
        assert.deepEqual(new Uint8Array(r.stdout), out);
        assert.deepEqual(new Uint8Array(r.stderr), err);
        assert.equal(r.status, code);
        assert.equal(existsSync(marker), false, 'the original command ran');
      },
    ),
    { numRuns: 150 },
  );
});

test('a note (cut output, a time limit) reaches the agent on stderr; a bad status becomes 1', () => {
  const home = tmpDir('latch-replay-');
  const text = replayOf(home, 'grep -r x /', {
    stdout: Buffer.from('a\n'),
    stderr: Buffer.alloc(0),
    code: 124,
    note: 'the read was stopped after 45 s',
  });
  const r = run(text, home);
  assert.equal(r.status, 124);
  assert.match(r.stderr.toString(), /\[latch: the read was stopped after 45 s\]/);
  const bad = run(replayOf(home, 'x', { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), code: -3 }), home);
  assert.equal(bad.status, 1);
});

test('isReplay accepts only what replayOf writes: no extra command, no other file', () => {
  const home = tmpDir('latch-replay-');
  const good = replayOf(home, 'cat a.txt', { stdout: Buffer.from('x'), stderr: Buffer.from('y'), code: 0 });
  assert.ok(isReplay(good));
  const lines = good.split('\n');
  const last = lines[lines.length - 1]!;
  const head = lines.slice(0, -1).join('\n');
  for (const bad of [
    `${good}; touch x`,
    `${good}\ntouch x`,
    `${head}\n${last.replace('exit 0', 'touch x; exit 0')}`,
    `${head}\n${last.replace(/\.out'/, ".txt'")}`,
    `${head}\n${last.replace(/\/replay\/[0-9a-f]{32}/, '/etc/passwd')}`,
    `touch x\n${good}`,
    good.replace('# cat a.txt', 'cat a.txt'),
    good.replace('\n# (held session', '\r\n# (held session'),
    `${head}\n${last.replace(/'$|exit 0$/, "exit 0 '")}`,
    last,
    '',
  ])
    assert.equal(isReplay(bad), false, JSON.stringify(bad));
});

test('replays older than an hour are swept at the next replay; fresh ones stay', () => {
  const home = tmpDir('latch-replay-');
  replayOf(home, 'a', { stdout: Buffer.from('1'), stderr: Buffer.from('e'), code: 0 });
  const dir = replayDir(home);
  const old = readdirSync(dir);
  assert.equal(old.length, 2);
  const then = new Date(Date.now() - 2 * 3600_000);
  for (const f of old) utimesSync(path.join(dir, f), then, then);
  replayOf(home, 'b', { stdout: Buffer.from('2'), stderr: Buffer.alloc(0), code: 0 });
  const now = readdirSync(dir);
  assert.equal(now.length, 1);
  assert.ok(!old.includes(now[0]!));
});
