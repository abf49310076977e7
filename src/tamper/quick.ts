// The store's side of the fingerprint and the quick tier: load what setup and the sessions recorded, and
// on the hook hot path compare every recorded file's lstat identity (one SELECT, one lstat each).
import { join } from 'node:path';
import type { Db } from '../store/store.js';
import { markAt, parseStoredSig, statSig } from './fingerprint.js';
import {
  type FileRow,
  type Finding,
  isWorkspaceScope,
  LAYER_PREFIX,
  type Recorded,
  type ScopeRow,
  type Verify,
  WS_PREFIX,
} from './types.js';

/** A row as the store keeps it: the sig column also says whether the identity is trusted (fingerprint.ts, storedSig). */
function decoded<T extends { sig: string }>(row: T): T & { verify: Verify | null } {
  const { sig, verify } = parseStoredSig(row.sig);
  return { ...row, sig, verify };
}

// ---------------------------------------------------------------------------------------------
// store access

/**
 * Drops the bytes kept for content checks (registration_content, see check.ts verifyContent) that no
 * recorded file's untrusted identity names any more (inside the caller's transaction).
 */
export function dropUnnamedContent(db: Db): void {
  db.prepare(
    'DELETE FROM registration_content WHERE NOT EXISTS (SELECT 1 FROM registration_files f WHERE instr(f.sig, registration_content.sha256) > 0)',
  ).run();
}

export function loadRecorded(db: Db): Recorded {
  const scopes = db
    .prepare('SELECT scope, kind, recorded_at, json FROM registrations ORDER BY scope')
    .all() as ScopeRow[];
  const files = (
    db
      .prepare('SELECT scope, path, role, sig, sha256, link FROM registration_files ORDER BY scope, path')
      .all() as FileRow[]
  ).map(decoded);
  const a = db.prepare('SELECT sigs, findings_json, at FROM registration_alarm WHERE id = 1').get() as
    | { sigs: string; findings_json: string; at: string }
    | undefined;
  return {
    scopes,
    files,
    alarm: a ? { sigs: a.sigs, findings: JSON.parse(a.findings_json) as Finding[], at: a.at } : null,
  };
}

function isRecorded(src: Db | Recorded): src is Recorded {
  return Array.isArray((src as Recorded).files) && Array.isArray((src as Recorded).scopes);
}

type Statement = import('better-sqlite3').Statement<unknown[]>;

const statements = new WeakMap<Db, { packed: Statement; ws: Statement }>();

function stmts(db: Db): { packed: Statement; ws: Statement } {
  let s = statements.get(db);
  if (!s) {
    s = {
      // One statement for the hot path (a row per file costs ~4x more to fetch): every global row and
      // this workspace's rows as one string (scope US path US sig RS ...), the newest session of the
      // workspace (an index search) and how far its Claude Code layers were recorded. "Not under a
      // workspace prefix" is spelled as ranges (';' follows ':'), so each part of the OR is a range
      // of the primary key instead of a scan of every workspace's rows.
      packed: db.prepare(
        `SELECT (SELECT group_concat(scope || char(31) || path || char(31) || sig, char(30)) FROM registration_files
                 WHERE scope < 'cw:' OR (scope >= 'cw;' AND scope < 'ws:') OR scope >= 'ws;' OR scope IN (@ws, @cw)) AS p,
                (SELECT max(rowid) FROM sessions WHERE workspace = @workspace) AS top,
                (SELECT json FROM registrations WHERE scope = @cw) AS layers`,
      ),
      ws: db.prepare('SELECT scope, path, role, sig, sha256, link FROM registration_files WHERE scope = ?'),
    };
    statements.set(db, s);
  }
  return s;
}

interface QuickRow {
  scope: string;
  path: string;
  sig: string;
  verify?: Verify | null;
}

interface Packed {
  rows: QuickRow[];
  /** Sessions of the workspace newer than the ones whose Claude Code layers were recorded. */
  layersBehind: boolean;
}

function packedRows(db: Db, workspace: string): Packed {
  const r = stmts(db).packed.get({ ws: WS_PREFIX + workspace, cw: LAYER_PREFIX + workspace, workspace }) as {
    p: string | null;
    top: number | null;
    layers: string | null;
  };
  const through = r.layers ? ((JSON.parse(r.layers) as { through?: number }).through ?? 0) : 0;
  const rows = r.p
    ? r.p.split('\x1e').map((x) => {
        const [scope = '', path = '', sig = ''] = x.split('\x1f');
        return markAt(sig) < 0 ? { scope, path, sig, verify: null } : decoded({ scope, path, sig });
      })
    : [];
  return { rows, layersBehind: workspace !== '' && r.top !== null && r.top > through };
}

export function workspaceRows(src: Db | Recorded, workspace: string | null | undefined): FileRow[] {
  if (!workspace) return [];
  const scope = WS_PREFIX + workspace;
  const recorded = isRecorded(src)
    ? src.files.filter((f) => f.scope === scope)
    : (stmts(src).ws.all(scope) as FileRow[]).map(decoded);
  const rows: FileRow[] = [];
  for (const [name, role] of [
    ['config.toml', 'ws_config'],
    ['hooks.json', 'ws_hooks'],
  ] as const) {
    const path = join(workspace, '.codex', name);
    rows.push(recorded.find((r) => r.path === path) ?? { scope, path, role, sig: 'absent', sha256: null, link: null });
  }
  return rows;
}

export interface QuickResult {
  /** ok: every recorded stat identity holds; changed: some differ (escalate); unrecorded: no fingerprint. */
  status: 'ok' | 'changed' | 'unrecorded';
  changed: { scope: string; path: string; now: string }[];
  /** Rows whose identity holds but does not stand for the content (FileRow.verify): the caller compares their content. */
  verify: { scope: string; path: string; sig: string; verify: Verify }[];
  /** Every current identity, in row order (the alarm key). */
  sigs: string;
  files: number;
  /** A session of the workspace whose Claude Code settings layers are not recorded yet (Db source only). */
  layersBehind: boolean;
}

/**
 * The hot-path tier: lstat every recorded file (the installation's, the registrations', the
 * workspace's Claude Code settings layers, and its `.codex/config.toml` and `.codex/hooks.json`),
 * compare with the recorded identity. Reads no file contents, loads no crypto and no TOML. Cost: one
 * SELECT (one packed string) + one lstat per file. A held identity that does not stand for the
 * content yet (FileRow.verify) is listed in `verify`, for the caller to compare.
 */
export function quickCheck(src: Db | Recorded, opts: { workspace?: string | null } = {}): QuickResult {
  const wsScope = opts.workspace ? WS_PREFIX + opts.workspace : '';
  const cwScope = opts.workspace ? LAYER_PREFIX + opts.workspace : '';
  const packed: Packed = isRecorded(src)
    ? {
        rows: src.files.filter((f) => !isWorkspaceScope(f.scope) || f.scope === wsScope || f.scope === cwScope),
        layersBehind: false,
      }
    : packedRows(src, opts.workspace ?? '');
  const files = packed.rows.filter((f) => !f.scope.startsWith(WS_PREFIX));
  const rows: QuickRow[] = files.slice();
  if (opts.workspace) {
    // The workspace's .codex/ files: their last identity seen, else expected absent.
    for (const name of ['config.toml', 'hooks.json']) {
      const path = join(opts.workspace, '.codex', name);
      rows.push(
        packed.rows.find((r) => r.scope === wsScope && r.path === path) ?? { scope: wsScope, path, sig: 'absent' },
      );
    }
  }
  const changed: QuickResult['changed'] = [];
  const verify: QuickResult['verify'] = [];
  const all: string[] = [];
  for (const row of rows) {
    const now = statSig(row.path);
    all.push(now);
    if (now !== row.sig) changed.push({ scope: row.scope, path: row.path, now });
    else if (row.verify) verify.push({ scope: row.scope, path: row.path, sig: now, verify: row.verify });
  }
  const status = files.length === 0 ? 'unrecorded' : changed.length ? 'changed' : 'ok';
  return { status, changed, verify, sigs: all.join('|'), files: rows.length, layersBehind: packed.layersBehind };
}
