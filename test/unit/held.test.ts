// The held-state decisions that do not depend on the classifier's tables: which paths an apply_patch
// names, and that a patch reaching Latch's store or registration is refused, through `..`, `~` and
// symlinks planted in the workspace, whatever the session's state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { classifierContext, patchTouchesLatch as touches } from '../../src/guard/held.js';
import { patchPaths } from '../../src/agents/codex/tools.js';
import { codex } from '../../src/agents/codex/index.js';
import type { ClassifyContext } from '../../src/shell/readonly.js';

/** As the guard asks it: the paths the Codex adapter parsed from the patch. */
const patchTouchesLatch = (text: string, ctx: ClassifyContext) => touches('apply_patch', patchPaths(text), ctx);
import { tmpDir } from '../helpers/git.js';

const patch = (...lines: string[]) => `*** Begin Patch\n${lines.join('\n')}\n*** End Patch\n`;

test('patchPaths reads every file header, moves included', () => {
  assert.deepEqual(
    patchPaths(
      patch('*** Add File: a.txt', '+x', '*** Update File: b/c.ts', '*** Move to: d.ts', '@@', '*** Delete File: e'),
    ),
    ['a.txt', 'b/c.ts', 'd.ts', 'e'],
  );
});

test('a patch reaching the store, the Codex registration or a startup file is refused; workspace files are not', () => {
  const root = tmpDir('latch-held-');
  const home = path.join(root, 'home');
  const work = path.join(root, 'work');
  const latchHome = path.join(home, '.local', 'state', 'latch');
  const codexHome = path.join(home, '.codex');
  for (const d of [work, latchHome, codexHome]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(latchHome, 'latch.db'), '');
  symlinkSync(latchHome, path.join(work, 'st'));
  symlinkSync(path.join(codexHome, 'hooks.json'), path.join(work, 'h.json'));
  const env = { HOME: home, CODEX_HOME: codexHome };
  const ctx = classifierContext({
    latchHome,
    cwd: work,
    latchEntry: '/opt/latch/dist/latch.cjs',
    env,
    registration: codex.registrationPaths(env, work),
  });
  const refused = [
    `${latchHome}/latch.db`,
    '../home/.local/state/latch/latch.db',
    '~/.local/state/latch/config.toml',
    'st/latch.db',
    'h.json',
    `${codexHome}/hooks.json`,
    '../home/.codex/config.toml',
    '.codex/hooks.json',
    '.latch.toml',
    '~/.bash_profile',
    '/opt/latch/dist/main.cjs',
    './sub/../../home/.bashrc',
  ];
  for (const p of refused) assert.ok(patchTouchesLatch(patch(`*** Add File: ${p}`, '+x'), ctx).length > 0, p);
  assert.ok(
    patchTouchesLatch(patch('*** Update File: a.txt', '*** Move to: st/latch.db'), ctx).length > 0,
    'move into the store',
  );
  for (const p of ['a.txt', 'src/x.ts', 'stx/latch.db', 'codex/hooks.json'])
    assert.deepEqual(patchTouchesLatch(patch(`*** Add File: ${p}`, '+x'), ctx), [], p);
});
