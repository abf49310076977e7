// The state store: one SQLite file under LATCH_HOME, WAL, busy timeout, BEGIN IMMEDIATE writes.
import { closeSync, chmodSync, existsSync, lstatSync, mkdirSync, openSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';
import { isoTime } from '../base/clock.js';
import { StoreError, errorMessage } from '../base/errors.js';
import { dbPath, moduleDir, moduleFile } from '../base/paths.js';
import { MIGRATIONS } from './schema.js';

export type Db = BetterSqlite3.Database;

export interface OpenOptions {
  /** Create the directory and database when missing (setup, CLI). The hook passes false: a missing store denies. */
  create: boolean;
  /** Milliseconds to wait for a lock before failing (SQLITE_BUSY). */
  busyTimeoutMs?: number;
  readonly?: boolean;
}

let nativePath: string | undefined;
let nativeAddon: object | undefined;

/**
 * The better-sqlite3 addon, by path: the JS of better-sqlite3 is bundled into dist/main.cjs, and
 * passing the addon's path spares the `bindings` package's search on every hook call.
 */
function nativeBinding(): string {
  if (nativePath) return nativePath;
  const beside = join(moduleDir, '..', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(beside)) return (nativePath = beside);
  const pkg = createRequire(moduleFile).resolve('better-sqlite3/package.json');
  return (nativePath = join(dirname(pkg), 'build', 'Release', 'better_sqlite3.node'));
}

/**
 * The addon itself, loaded once per process with process.dlopen (what require() does for a .node
 * file, without the module loader's resolution, package.json lookups and realpath).
 */
function nativeModule(): object {
  if (nativeAddon) return nativeAddon;
  const m = { exports: {} as object };
  process.dlopen(m, nativeBinding());
  return (nativeAddon = m.exports);
}

function uid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/** lstat, or null when nothing is there (any other error is thrown). */
export function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Refuse a state path that is a symlink or not owned by the current user. */
function checkOwned(p: string, st: Stats, kind: 'directory' | 'file'): void {
  if (st.isSymbolicLink()) throw new StoreError(`Latch ${kind} ${p} is a symlink; refusing to use it`);
  if (kind === 'directory' ? !st.isDirectory() : !st.isFile()) {
    throw new StoreError(`Latch ${kind} ${p} is not a ${kind}`);
  }
  const me = uid();
  if (me !== undefined && st.uid !== me) {
    throw new StoreError(`Latch ${kind} ${p} is owned by uid ${st.uid}, not by you (uid ${me}); refusing to use it`);
  }
}

export function ensureHomeDir(home: string, create: boolean): void {
  let st = lstatOrNull(home);
  if (!st) {
    if (!create) throw new StoreError(`Latch store directory ${home} does not exist (run \`latch setup codex\`)`);
    mkdirSync(home, { recursive: true, mode: 0o700 });
    st = lstatSync(home);
  }
  checkOwned(home, st, 'directory');
  if ((st.mode & 0o077) !== 0) chmodSync(home, 0o700);
}

export function openStore(home: string, opts: OpenOptions): Db {
  ensureHomeDir(home, opts.create);
  return openStoreFile(dbPath(home), opts);
}

/**
 * The store at `file` (normally `latch.db` in a checked home: openStore). `latch doctor --repair`
 * builds a fresh store under another name beside the old one (src/store/health.ts).
 */
export function openStoreFile(file: string, opts: OpenOptions): Db {
  let st = lstatOrNull(file);
  if (!st) {
    if (!opts.create)
      throw new StoreError(`Latch store ${file} is missing (run \`latch setup codex\` or \`latch doctor\`)`);
    closeSync(openSync(file, 'wx', 0o600));
    st = lstatSync(file);
  }
  checkOwned(file, st, 'file');
  if ((st.mode & 0o077) !== 0) chmodSync(file, 0o600);

  let db: Db;
  try {
    db = new Database(file, {
      fileMustExist: true,
      timeout: opts.busyTimeoutMs ?? 3000,
      readonly: opts.readonly ?? false,
      // better-sqlite3 takes the loaded addon as well as its path (lib/database.js); its types name only the path.
      nativeBinding: nativeModule() as unknown as string,
    });
  } catch (err) {
    throw new StoreError(`cannot open Latch store ${file}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    // One exec, not a prepared statement each: every hook opens the store.
    db.exec(
      opts.readonly
        ? 'PRAGMA foreign_keys = ON'
        : 'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON',
    );
    migrate(db, file, opts.readonly ?? false);
  } catch (err) {
    db.close();
    throw new StoreError(`Latch store ${file} is unusable: ${errorMessage(err)}`, { cause: err });
  }
  return db;
}

/**
 * A SQLite database as it is: no pragma, no migration, no ownership check (the store's health check
 * opens the file read-only this way, and a copy of it in memory from a Buffer: src/store/health.ts).
 */
export function openSqlite(source: string | Buffer, opts: { readonly?: boolean; timeoutMs?: number } = {}): Db {
  return new Database(source, {
    fileMustExist: typeof source === 'string',
    readonly: opts.readonly ?? false,
    timeout: opts.timeoutMs ?? 3000,
    nativeBinding: nativeModule() as unknown as string,
  });
}

export const SCHEMA_VERSION = MIGRATIONS.length;

function migrate(db: Db, file: string, readonly: boolean): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version === SCHEMA_VERSION) return;
  if (version > SCHEMA_VERSION) {
    throw new StoreError(
      `${file} has schema version ${version}, newer than this Latch (${SCHEMA_VERSION}); upgrade Latch`,
    );
  }
  if (readonly)
    throw new StoreError(`${file} needs a schema migration (${version} -> ${SCHEMA_VERSION}); open it writable`);
  immediate(db, () => {
    // Re-read under the write lock: another process may have migrated meanwhile.
    let v = db.pragma('user_version', { simple: true }) as number;
    for (; v < SCHEMA_VERSION; v++) {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    }
  });
}

/** Runs fn inside BEGIN IMMEDIATE ... COMMIT (rolls back on throw). */
export function immediate<T>(db: Db, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const out = fn();
    db.exec('COMMIT');
    return out;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

export function nowIso(): string {
  return isoTime();
}
