// dist/latch.cjs: the process entry. It runs dist/main.cjs (the hook and the CLI switch) with a V8 code
// cache (dist/main.cjs.v8cache, written by the build), which saves the hook most of its compile time
// on every tool call. Node 22 has module.enableCompileCache(); Node 20 does not, hence this file.
// Anything unexpected here falls back to a plain require: the cache is an optimisation, never a
// condition (and the PreToolUse command maps any crash to a deny).
import { accessSync, constants, readFileSync, renameSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

declare const __filename: string;

const file = join(dirname(__filename), 'main.cjs');
const cacheFile = `${file}.v8cache`;

type ModuleInternals = typeof Module & {
  wrap(src: string): string;
  _nodeModulePaths(dir: string): string[];
};

function runCached(): boolean {
  let source: string;
  let cached: Buffer | undefined;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  try {
    cached = readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }
  const M = Module as ModuleInternals;
  const script = new Script(M.wrap(source), { filename: file, cachedData: cached });
  const fn = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;
  const mod = new Module(file);
  mod.filename = file;
  mod.paths = M._nodeModulePaths(dirname(file));
  const want = process.env.LATCH_WRITE_CODE_CACHE;
  if (want === '1' || ((cached === undefined || script.cachedDataRejected) && want !== '0' && writable(dirname(file)))) {
    // Build time (LATCH_WRITE_CODE_CACHE=1), or a Node version the shipped cache does not fit.
    process.once('exit', () => {
      try {
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        /* the cache is optional */
      }
    });
  }
  started = true;
  fn.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, dirname(file));
  return true;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

let started = false;
let ran = false;
try {
  ran = runCached();
} catch (err) {
  // Once main.cjs has started, its errors are its own (it installs its handlers first); only a
  // failure to set up the cached run falls through to the plain require below.
  if (started) throw err;
}
if (!ran) require('./main.cjs');
