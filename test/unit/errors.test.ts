// The error vocabulary (src/base/errors.ts): every error class Latch throws on purpose is a LatchError
// with its own code, and isLatchError recognises an error by that code alone, so that an error thrown
// by another bundle's copy of a class (not an instance of this one, perhaps renamed by a minifier)
// is still recognised.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXIT, ExitError, isLatchError, LatchError, StoreError, type LatchErrorCode } from '../../src/base/errors.js';
import { checkDeadline, DeadlineError, setDeadline } from '../../src/base/deadline.js';
import { ConfigError } from '../../src/session/policy.js';
import { AppServerError } from '../../src/agents/codex/app-server.js';
import { UnreadableError } from '../../src/agents/codex/fsck/fsck.js';

const CLASSES: [LatchErrorCode, string, () => LatchError][] = [
  ['E_EXIT', 'ExitError', () => new ExitError(EXIT.usage, 'm')],
  ['E_STORE', 'StoreError', () => new StoreError('m')],
  ['E_CONFIG', 'ConfigError', () => new ConfigError('m')],
  ['E_DEADLINE', 'DeadlineError', () => new DeadlineError('m')],
  ['E_APP_SERVER', 'AppServerError', () => new AppServerError('m')],
  ['E_UNREADABLE', 'UnreadableError', () => new UnreadableError('m')],
];

test('each error class is a LatchError with its own code, its name and its message unchanged', () => {
  assert.equal(new Set(CLASSES.map(([code]) => code)).size, CLASSES.length, 'one code per class');
  for (const [code, name, make] of CLASSES) {
    const err = make();
    assert.ok(err instanceof Error && err instanceof LatchError, name);
    assert.equal(err.code, code, name);
    assert.equal(err.name, name);
    assert.equal(err.message, 'm', name);
    assert.equal(String(err), `${name}: m`);
    assert.ok(isLatchError(err), name);
    assert.ok(isLatchError(err, code), name);
    for (const [other] of CLASSES) if (other !== code) assert.ok(!isLatchError(err, other), `${name} is not ${other}`);
  }
});

test('ExitError keeps its exit code apart from its vocabulary code; StoreError keeps its cause', () => {
  const exit = new ExitError(EXIT.notHuman, 'refused');
  assert.equal(exit.exitCode, 77);
  assert.equal(exit.code, 'E_EXIT');
  const cause = new Error('disk');
  assert.equal(new StoreError('unusable', { cause }).cause, cause);
});

test('checkDeadline throws an error recognised as E_DEADLINE', () => {
  setDeadline(1);
  try {
    const until = Date.now() + 5;
    while (Date.now() <= until);
    assert.throws(
      () => checkDeadline('testing'),
      (e: unknown) =>
        isLatchError(e, 'E_DEADLINE') &&
        e.message === "ran out of time while testing (the hook must answer before Codex's timeout)",
    );
  } finally {
    setDeadline(null);
  }
});

test('an error from another bundle is recognised by its code alone: not an instance, name changed', () => {
  // What another bundle's (minified) copy of ConfigError looks like from here.
  class C extends Error {
    code = 'E_CONFIG';
  }
  const foreign = new C('bad.toml is not valid TOML');
  foreign.name = 'c';
  assert.ok(!(foreign instanceof ConfigError) && !(foreign instanceof LatchError));
  assert.ok(isLatchError(foreign));
  assert.ok(isLatchError(foreign, 'E_CONFIG'));
  assert.ok(!isLatchError(foreign, 'E_STORE'));

  const plain = Object.assign(new Error('ran out of time'), { code: 'E_DEADLINE', name: 'x' });
  assert.ok(isLatchError(plain, 'E_DEADLINE'));
  // Not even an Error: a structured copy (e.g. across a worker or vm boundary) keeps its data.
  const copy = structuredClone({ message: 'locked', code: 'E_STORE' });
  assert.ok(isLatchError(copy, 'E_STORE'));

  // A foreign ExitError narrows to one with its exit code.
  const exit: unknown = Object.assign(new Error('usage'), { code: 'E_EXIT', exitCode: 2 });
  assert.ok(isLatchError(exit, 'E_EXIT') && exit.exitCode === 2);
});

test('isLatchError rejects what is not a Latch error, whatever its name', () => {
  const named = new Error('x');
  named.name = 'ConfigError';
  const system = Object.assign(new Error('no such file'), { code: 'ENOENT', syscall: 'open' });
  const sqlite = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  for (const v of [
    named,
    system,
    sqlite,
    null,
    undefined,
    'E_CONFIG',
    42,
    {},
    { code: 'E_CONFIG' },
    { code: 'E_NOPE', message: 'm' },
  ]) {
    assert.ok(!isLatchError(v), String(v));
  }
  assert.ok(!isLatchError({ code: 'E_CONFIG' }, 'E_CONFIG'), 'no message: not an error');
});
