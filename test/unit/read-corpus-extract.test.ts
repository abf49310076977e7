// The read corpus's two rewrites (test/fixtures/read-corpus/extract.ts): the repository root becomes the
// workspace, the agents' home becomes `~`; nothing that only looks like them changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rewriteHome, rewriteRoot } from '../fixtures/read-corpus/extract.js';

test('rewriteHome: the home as a path component becomes ~, wherever a shell or a compiler reads it', () => {
  const r = (cmd: string) => rewriteHome(cmd, '/home/agent');
  assert.equal(r('ls -d /home/agent/.pylint.d'), 'ls -d ~/.pylint.d');
  assert.equal(r('find /home/agent -type d'), 'find ~ -type d');
  assert.equal(
    r('export CFLAGS="-I/home/agent/x/include" LDFLAGS=-L/home/agent/x/lib'),
    'export CFLAGS="-I~/x/include" LDFLAGS=-L~/x/lib',
  );
  assert.equal(r("cfg = '/home/agent/mycert.pem'"), "cfg = '~/mycert.pem'");
  for (const same of [
    'cat tests/home/agents/a.rst',
    'ls /home/agentfs',
    'ls /srv/home/agent/x',
    'echo x/home/agent',
    'ls /home/agents',
  ])
    assert.equal(r(same), same);
});

test('rewriteRoot: the repository root becomes the workspace; longer names stay', () => {
  assert.equal(rewriteRoot('cat /testbed/django/x.py', '/testbed'), 'cat django/x.py');
  assert.equal(rewriteRoot('cd /testbed && ls', '/testbed'), 'cd . && ls');
  assert.equal(rewriteRoot('ls /testbed2 /application', '/testbed'), 'ls /testbed2 /application');
});
