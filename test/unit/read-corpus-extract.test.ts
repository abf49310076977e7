// The read corpus's two rewrites (test/fixtures/read-corpus/extract.ts): the repository root becomes the
// workspace, the agents' home `/root` becomes `~`; nothing that only looks like them changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rewriteHome, rewriteRoot } from '../fixtures/read-corpus/extract.js';

test('rewriteHome: /root as a path component becomes ~, wherever a shell or a compiler reads it', () => {
  assert.equal(rewriteHome('ls -d /root/.pylint.d'), 'ls -d ~/.pylint.d');
  assert.equal(rewriteHome('find /root -type d'), 'find ~ -type d');
  assert.equal(
    rewriteHome('export CFLAGS="-I/root/x/include" LDFLAGS=-L/root/x/lib'),
    'export CFLAGS="-I~/x/include" LDFLAGS=-L~/x/lib',
  );
  assert.equal(rewriteHome("cfg = '/root/mycert.pem'"), "cfg = '~/mycert.pem'");
  for (const same of ['cat tests/roots/a.rst', 'ls /rootfs', 'ls /srv/root/x', 'echo x/root', 'ls /roots'])
    assert.equal(rewriteHome(same), same);
});

test('rewriteRoot: the repository root becomes the workspace; longer names stay', () => {
  assert.equal(rewriteRoot('cat /testbed/django/x.py', '/testbed'), 'cat django/x.py');
  assert.equal(rewriteRoot('cd /testbed && ls', '/testbed'), 'cd . && ls');
  assert.equal(rewriteRoot('ls /testbed2 /application', '/testbed'), 'ls /testbed2 /application');
});
