// The store's health, for `latch doctor` and its repair (src/store/repair.ts).
//
// inspectStore opens latch.db read-only and says whether this Latch can use it: a SQLite file whose
// quick_check passes, with a schema this Latch knows or can migrate (the migration is tried on a copy
// in memory), holding every table and column a fresh store has. What it cannot decide (a lock, an
// addon that does not load, a permission, an I/O error) is not called corruption: `latch doctor
// --repair` moves only a store found corrupt (or written by a newer Latch).
import { errorMessage } from '../base/errors.js';
import { MIGRATIONS } from './schema.js';
import { openSqlite, SCHEMA_VERSION, type Db } from './store.js';

/** What inspectStore found. `newer`: written by a newer Latch (usable again after an upgrade). */
export type Inspection =
  | { ok: true; version: number; journal: string; migrates: boolean; repairs: RepairRecord[] }
  | { ok: false; kind: 'corrupt' | 'newer' | 'locked' | 'unreadable'; problem: string };

/** Whether `latch doctor --repair` moves a store with this finding aside. */
export function repairable(i: Inspection): boolean {
  return !i.ok && (i.kind === 'corrupt' || i.kind === 'newer');
}

/** SQLite's own word that the file is not a sound database (better-sqlite3 puts it in `code`). */
const CORRUPT_CODES = /^SQLITE_(NOTADB|CORRUPT|FORMAT|IOERR_SHORT_READ)/;

function failure(err: unknown, what: string): Inspection {
  const code = (err as { code?: unknown } | null)?.code;
  const c = typeof code === 'string' ? code : '';
  const msg = `${what}: ${errorMessage(err)}${c ? ` (${c})` : ''}`;
  if (CORRUPT_CODES.test(c)) return { ok: false, kind: 'corrupt', problem: msg };
  if (/^SQLITE_(BUSY|LOCKED)/.test(c)) return { ok: false, kind: 'locked', problem: msg };
  return { ok: false, kind: 'unreadable', problem: msg };
}

/** Opens `file` read-only and says whether this Latch can use it (see the head of this file). */
export function inspectStore(file: string): Inspection {
  let db: Db;
  try {
    db = openSqlite(file, { readonly: true });
  } catch (err) {
    return failure(err, 'cannot open it');
  }
  let copy: Db | null = null;
  try {
    const rows = db.pragma('quick_check') as { quick_check: string }[];
    const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
    if (problems.length || rows.length === 0)
      return {
        ok: false,
        kind: 'corrupt',
        problem: `PRAGMA quick_check: ${problems.slice(0, 5).join('; ') || 'no result'}`,
      };
    const version = Number(db.pragma('user_version', { simple: true }));
    const journal = String(db.pragma('journal_mode', { simple: true }));
    if (version > SCHEMA_VERSION)
      return {
        ok: false,
        kind: 'newer',
        problem: `schema version ${version} is newer than this Latch's (${SCHEMA_VERSION}): a newer Latch wrote it`,
      };
    let schema = db;
    if (version < SCHEMA_VERSION) {
      // What the next writer would do, on a copy: a schema it cannot migrate is a store no hook can open.
      // A copy in memory: its header marked as no longer WAL (bytes 18 and 19), which SQLite needs to
      // write to a deserialized database.
      const bytes = db.serialize();
      bytes[18] = 1;
      bytes[19] = 1;
      copy = openSqlite(bytes);
      try {
        runMigrations(copy, version);
      } catch (err) {
        return {
          ok: false,
          kind: 'corrupt',
          problem: `schema version ${version} cannot be migrated to ${SCHEMA_VERSION}: ${errorMessage(err)}`,
        };
      }
      schema = copy;
    }
    const missing = missingSchema(schema);
    if (missing.length > 0)
      return {
        ok: false,
        kind: 'corrupt',
        problem: `schema version ${version} lacks ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''}`,
      };
    return { ok: true, version, journal, migrates: version < SCHEMA_VERSION, repairs: repairsOf(schema) };
  } catch (err) {
    return failure(err, 'cannot read it');
  } finally {
    copy?.close();
    db.close();
  }
}

function runMigrations(db: Db, from: number): void {
  db.exec('BEGIN');
  try {
    for (let v = from; v < SCHEMA_VERSION; v++) {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    }
    db.exec('COMMIT');
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

let reference: Map<string, string[]> | undefined;

/** Every table of a fresh store with its columns (built once, in memory). */
function freshSchema(): Map<string, string[]> {
  if (reference) return reference;
  const db = openSqlite(Buffer.alloc(0));
  try {
    runMigrations(db, 0);
    return (reference = tablesOf(db));
  } finally {
    db.close();
  }
}

function tablesOf(db: Db): Map<string, string[]> {
  const names = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .pluck()
    .all() as string[];
  return new Map(
    names.map((n) => [n, (db.pragma(`table_info(${JSON.stringify(n)})`) as { name: string }[]).map((c) => c.name)]),
  );
}

/** The tables and columns (`table.column`) a fresh store has and `db` lacks. */
function missingSchema(db: Db): string[] {
  const have = tablesOf(db);
  const out: string[] = [];
  for (const [table, columns] of freshSchema()) {
    const cols = have.get(table);
    if (!cols) out.push(`table ${table}`);
    else for (const c of columns) if (!cols.includes(c)) out.push(`column ${table}.${c}`);
  }
  return out;
}

/** A file `latch doctor --repair` moved aside: where it was, where it is, its size when moved. */
export interface MovedFile {
  from: string;
  to: string;
  bytes: number;
}

/** A repair as the fresh store records it (store_repairs), oldest first. */
export interface RepairRecord {
  repaired_at: string;
  problem: string;
  evidence: MovedFile[];
}

export function repairsOf(db: Db): RepairRecord[] {
  const rows = db.prepare('SELECT repaired_at, problem, evidence_json FROM store_repairs ORDER BY id').all() as {
    repaired_at: string;
    problem: string;
    evidence_json: string;
  }[];
  return rows.map((r) => ({
    repaired_at: r.repaired_at,
    problem: r.problem,
    evidence: JSON.parse(r.evidence_json) as MovedFile[],
  }));
}
