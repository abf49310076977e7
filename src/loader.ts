// dist/latch.cjs: the process entry. It runs dist/main.cjs (the hook and the CLI switch) with a V8 code
// cache (dist/main.cjs.v8cache, written by the build), which saves the hook most of its compile time
// on every tool call. dist/slow.cjs (required lazily by main.cjs on a trip or a session's first sight),
// dist/observer.cjs (on a Close or a turn's end) and dist/cli.cjs (the commands) get the same
// treatment (<file>.v8cache) through a wrapper around the CommonJS loader for those files. Node 22 has module.enableCompileCache(); Node 20 does not, hence this file.
// Anything unexpected here falls back to a plain require: the cache is an optimisation, never a
// condition (and the PreToolUse command maps any crash to a deny).
import { accessSync, constants, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type Module from 'node:module';
import { dirname, join } from 'node:path';
import { mainCacheName } from './base/code-cache.js';
import { askResident, residentAgent } from './resident/client.js';
import { handOver } from './resident/handoff.js';

declare const __filename: string;
declare const require: NodeJS.Require;

const file = join(dirname(__filename), 'main.cjs');
/** The lazily required bundles that get a code cache too. */
const cachedFiles = new Set(['slow.cjs', 'observer.cjs', 'cli.cjs'].map((f) => join(dirname(__filename), f)));

type CompiledFn = (
  exports: unknown,
  require: NodeJS.Require,
  module: Module,
  filename: string,
  dirname: string,
) => void;
type ModuleInternals = typeof Module & {
  wrap(src: string): string;
  _nodeModulePaths(dir: string): string[];
  _extensions: Record<string, (module: Module, filename: string) => void>;
};

/** node:module when first needed (~0.6 ms to load): a PreToolUse the resident hook answers never needs it. */
function nodeModule(): ModuleInternals {
  return require('node:module') as ModuleInternals;
}

/** Compiles a CommonJS file with its code cache (`<file>.v8cache` unless named); schedules a cache write when wanted. */
function compileCached(path: string, cacheFile = `${path}.v8cache`): CompiledFn | null {
  let source: string;
  let cached: Buffer | undefined;
  try {
    source = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  try {
    cached = readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }
  const M = nodeModule();
  // node:vm when first needed: a PreToolUse the resident hook answers never compiles anything.
  const { Script } = require('node:vm') as typeof import('node:vm');
  const script = new Script(M.wrap(source), { filename: path, cachedData: cached });
  const fn = script.runInThisContext() as CompiledFn;
  const want = process.env.LATCH_WRITE_CODE_CACHE;
  // Build time (LATCH_WRITE_CODE_CACHE=1), or no cache at all. A cache this Node rejects (another
  // version) is not rewritten at run time: the code caches are part of the registration fingerprint
  // (src/tamper/index.ts), and a rewrite would read as a tamper. `npm run build` writes them anew.
  if (want === '1' || (cached === undefined && want !== '0' && writable(dirname(path)))) {
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
  return fn;
}

/** Routes require('./slow.cjs'), './observer.cjs' and './cli.cjs' through compileCached; any other file keeps the default loader. */
function hookSlow(): void {
  const M = nodeModule();
  const exts = M._extensions;
  const original = exts['.js'];
  if (typeof original !== 'function') return;
  exts['.js'] = function (module: Module, filename: string): void {
    if (cachedFiles.has(filename)) {
      let fn: CompiledFn | null = null;
      try {
        fn = compileCached(filename);
      } catch {
        fn = null;
      }
      if (fn) {
        fn.call(
          module.exports,
          module.exports,
          nodeModule().createRequire(filename),
          module,
          filename,
          dirname(filename),
        );
        return;
      }
    }
    original.call(this, module, filename);
  };
}

function runCached(): boolean {
  // A hook runs main.cjs from its agent's cache (src/base/code-cache.ts).
  const fn = compileCached(file, join(dirname(file), mainCacheName(process.argv.slice(2))));
  if (!fn) return false;
  const M = nodeModule();
  const mod = new M(file);
  mod.filename = file;
  mod.paths = M._nodeModulePaths(dirname(file));
  try {
    hookSlow();
  } catch {
    /* slow.cjs and observer.cjs then load without a cache */
  }
  started = true;
  fn.call(mod.exports, mod.exports, M.createRequire(file), mod, file, dirname(file));
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

function main(): void {
  // A PreToolUse first asks the resident hook (src/resident/client.ts). main.cjs runs only when that
  // did not answer, with the payload the client read handed over.
  const agent = residentAgent(process.argv.slice(2), process.env);
  if (agent !== null) {
    const asked = askResident(agent, __filename);
    if (asked.answered) return;
    if (process.env.LATCH_RESIDENT_TRACE === '1') process.stderr.write(`latch: resident hook: ${asked.why}\n`);
    handOver({ input: asked.input, startResident: asked.start });
  }
  let ran = false;
  try {
    ran = runCached();
  } catch (err) {
    // Once main.cjs has started, its errors are its own (it installs its handlers first); only a
    // failure to set up the cached run falls through to the plain require below.
    if (started) throw err;
  }
  if (!ran) require('./main.cjs');
}

main();
