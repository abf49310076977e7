// Node built-ins the hook path needs only sometimes, loaded on first use: a cold
// require('node:child_process') costs ~1.6 ms, more than a Close that stats one file.
import { createRequire } from 'node:module';
import { moduleFile } from './paths.js';

let cp: typeof import('node:child_process') | undefined;

export function childProcess(): typeof import('node:child_process') {
  return (cp ??= createRequire(moduleFile)('node:child_process') as typeof import('node:child_process'));
}

let crypto: typeof import('node:crypto') | undefined;

/** node:crypto, loaded on first use: `latch doctor FILE` hashes only when the store has checkpoints of FILE. */
export function nodeCrypto(): typeof import('node:crypto') {
  return (crypto ??= createRequire(moduleFile)('node:crypto') as typeof import('node:crypto'));
}
