// A human's edit is not an attack (issue 23.3), on the real pinned Codex: after a session ran a call,
// the human appends an alias to ~/.bashrc between sessions. The next session's write is refused
// (the fingerprint changed) but nothing is latched; `latch setup codex` records the edit and says
// which workspace it released; the next session writes, with no `latch verify`. Before, the edit
// latched every session of the workspace and only `latch verify --accept-changes` released them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LATCH, outputsContaining, setupEnv } from '../helpers/e2e.js';

const T = { timeout: 300_000 };

test(
  "a human's dotfile edit between sessions: refused until latch setup records it, nothing latched, no verify",
  T,
  async (t) => {
    const env = await setupEnv([
      { items: [{ type: 'bash', cmd: 'echo one > one.txt' }], inputTokens: 200 },
      { items: [{ type: 'message', text: 'done' }] },
      { items: [{ type: 'bash', cmd: 'echo two > two.txt' }], inputTokens: 200 },
      { items: [{ type: 'message', text: 'done' }] },
      { items: [{ type: 'bash', cmd: 'echo three > three.txt' }], inputTokens: 200 },
      { items: [{ type: 'message', text: 'done' }] },
    ]);
    t.after(() => env.cleanup());
    // The user's own home (its shell startup files are fingerprinted): setup again with it.
    const home = join(env.base, 'home');
    mkdirSync(home);
    writeFileSync(join(home, '.bash_profile'), '. ~/.bashrc\n');
    writeFileSync(join(home, '.bashrc'), 'export EDITOR=vi\n');
    const withHome = { env: { HOME: home } };
    const first = spawnSetup(env.latchHome, env.codexHome, env.work, home);
    assert.equal(first.status, 0, first.stderr);

    const one = await env.codex('write one.txt', withHome);
    assert.equal(one.code, 0, one.stderr.slice(-2000));
    assert.equal(env.file('one.txt'), 'one\n');
    // Past the call's window (its end + 2 s), the human edits a dotfile in another terminal.
    await new Promise((r) => setTimeout(r, 2_500));
    appendFileSync(join(home, '.bashrc'), "alias ll='ls -la'\n");

    const two = await env.codex('write two.txt', withHome);
    assert.equal(two.code, 0, two.stderr.slice(-2000));
    assert.equal(env.file('two.txt'), null, 'refused while the edit is not recorded');
    const refusal = outputsContaining(env, 'Latch blocked');
    assert.equal(refusal.length, 1, refusal.join('\n---\n'));
    assert.match(refusal[0]!, /\.bashrc/);
    assert.match(refusal[0]!, /a human's edit/);
    let status = env.statusJson();
    assert.deepEqual(
      status.sessions.map((s) => s.state),
      ['mutable', 'mutable'],
      'no session latched',
    );

    const again = spawnSetup(env.latchHome, env.codexHome, env.work, home);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /Accepted the registration change found at .*a human edit/);
    assert.match(again.stdout, new RegExp(`Released ${env.work}: 1 session`));

    const three = await env.codex('write three.txt', withHome);
    assert.equal(three.code, 0, three.stderr.slice(-2000));
    assert.equal(env.file('three.txt'), 'three\n', 'writes again, with no latch verify');
    status = env.statusJson();
    assert.ok(status.sessions.every((s) => s.state === 'mutable'));
  },
);

function spawnSetup(latchHome: string, codexHome: string, work: string, home: string) {
  return spawnSync(process.execPath, [LATCH, 'setup', 'codex', '--codex-home', codexHome], {
    cwd: work,
    env: { ...process.env, HOME: home, LATCH_HOME: latchHome, CODEX_HOME: codexHome },
    encoding: 'utf8',
    timeout: 60_000,
  });
}
