// The README's main job: `latch demo` drives the real Codex across an auto-compaction and must tell
// the true story (checked from its --json output, which is computed from the store and the workspace).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

test('latch demo: latched at the checkpoint, tree digests equal, verify restores, the resumed session writes', {
  timeout: 300_000,
}, () => {
  const r = spawnSync(process.execPath, [resolve('bin', 'latch.cjs'), 'demo', '--json'], {
    encoding: 'utf8',
    timeout: 280_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.ok, true);
  assert.ok(out.compactions >= 1);
  const s = out.status.sessions[0];
  assert.equal(s.state, 'latched');
  assert.equal(s.checkpoints[0].tree.sha256, out.tree_now.sha256);
  assert.ok(out.denials_seen_by_model >= 2);
  assert.equal(out.verify_exit, 0);
  assert.match(out.progress, /step 3: verified, continuing/);
});
