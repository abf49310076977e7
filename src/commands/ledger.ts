// `latch log` (the attempt timeline, with compactions, latch transitions and denials interleaved) and
// `latch blame PATH` (every recorded change to a file, newest first).
import { isAbsolute, relative, resolve } from 'node:path';
import { EXIT, ExitError } from '../base/errors.js';
import type { AttemptRow } from '../ledger/ledger.js';
import { json, withStore, type Io } from '../kit/io.js';
import { resolveWorkspace, targetSessions, type TargetOptions } from './shared/target.js';
import { changeJson, timeline, type ChangeJson, type ChangeRow } from './shared/timeline.js';

function fileList(files: ChangeJson[]): string {
  if (files.length === 0) return 'no file changes';
  return files
    .map((f) => `${f.change} ${f.path}${f.attribution === 'attempt' ? '' : ` [${f.attribution}]`}`)
    .join(', ');
}

export async function log(io: Io, opts: TargetOptions & { json?: boolean }): Promise<number> {
  const none = (home: string): number => {
    if (opts.json) json(io, { workspace: resolveWorkspace(io, opts.cwd), entries: [] });
    else io.out(`No Latch state at ${home} yet: nothing has been recorded.\n`);
    return EXIT.ok;
  };
  return withStore(
    io,
    (db) => {
      const { workspace, sessions } = targetSessions(db, io, opts);
      const ws = workspace ?? resolveWorkspace(io, opts.cwd);
      const entries = timeline(db, ws, opts.session ? sessions.map((s) => s.session_id) : null);
      if (opts.json) {
        json(io, { workspace: ws, entries });
        return EXIT.ok;
      }
      if (entries.length === 0) io.out(`Nothing recorded for ${ws}.\n`);
      for (const e of entries) {
        const sid = e.session_id ? e.session_id.slice(-8) : '-';
        switch (e.kind) {
          case 'attempt':
            io.out(
              `${e.at}  ${sid}  ${e.tool.padEnd(11)} ${e.state.padEnd(9)} ${e.summary ?? ''}\n${' '.repeat(36)}→ ${fileList(e.files)}${e.end_reason && e.state === 'abandoned' ? ` (${e.end_reason})` : ''}\n`,
            );
            break;
          case 'change':
            io.out(
              `${e.at}  ${sid}  change      ${e.change.attribution.padEnd(9)} ${e.change.change} ${e.change.path}\n`,
            );
            break;
          case 'compaction':
            io.out(
              `${e.at}  ${sid}  COMPACTION  #${e.seq} (${e.trigger ?? 'trigger unknown'}) via ${e.observed_via.join('+')}, checkpoint ${e.checkpoint_id ?? '-'}\n`,
            );
            break;
          case 'transition':
            io.out(
              `${e.at}  ${sid}  AUTHORITY   ${e.from} -> ${e.to} (${e.event})${e.reason ? `: ${e.reason}` : ''}\n`,
            );
            break;
          case 'denial':
            io.out(`${e.at}  ${sid}  DENIED      ${e.summary ?? e.tool}\n`);
            break;
        }
      }
      return EXIT.ok;
    },
    { ifMissing: none },
  );
}

export interface BlameEntry extends ChangeJson {
  turn_id: string | null;
  tool: string | null;
  summary: string | null;
  attempt_state: string | null;
}

export async function blame(io: Io, opts: { path: string; cwd?: string; json?: boolean }): Promise<number> {
  if (!opts.path) throw new ExitError(EXIT.usage, 'usage: latch blame PATH [--cwd DIR] [--json]');
  return withStore(io, (db) => {
    const ws = resolveWorkspace(io, opts.cwd);
    const abs = isAbsolute(opts.path) ? opts.path : resolve(io.cwd, opts.cwd ?? '.', opts.path);
    const rel = relative(ws, abs).split('\\').join('/');
    if (rel.startsWith('..')) throw new ExitError(EXIT.usage, `${opts.path} is outside the workspace ${ws}`);
    const rows = db
      .prepare('SELECT * FROM changes WHERE workspace = ? AND path = ? ORDER BY id DESC')
      .all(ws, rel) as ChangeRow[];
    const attempt = db.prepare('SELECT * FROM attempts WHERE id = ?');
    const entries: BlameEntry[] = rows.map((r) => {
      const a = r.attempt_id ? (attempt.get(r.attempt_id) as AttemptRow | undefined) : undefined;
      return {
        ...changeJson(r),
        turn_id: a?.turn_id ?? null,
        tool: a?.tool_name ?? null,
        summary: a?.summary ?? null,
        attempt_state: a?.state ?? null,
      };
    });
    if (opts.json) {
      json(io, { workspace: ws, path: rel, changes: entries });
      return EXIT.ok;
    }
    if (entries.length === 0) io.out(`No recorded changes to ${rel} in ${ws}.\n`);
    for (const e of entries) {
      const who =
        e.attribution === 'attempt'
          ? `${e.tool} ${e.summary ?? ''} (session ${e.session_id}, turn ${e.turn_id ?? '-'}, attempt ${e.attempt_state})`
          : e.attribution === 'contended'
            ? `contended between ${e.candidates.length} attempts: ${e.candidates.join(', ')}`
            : e.attribution;
      io.out(`${e.observed_at}  ${e.change.padEnd(8)} ${who}\n`);
    }
    return EXIT.ok;
  });
}
