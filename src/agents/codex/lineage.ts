// Where a Codex thread's rollout is, and what a fork inherits: the one rollout finder (the guard's
// fork walk, the brief's capture and the driver all use it) and session_meta.history_base.
import { closeSync, openSync, readdirSync, readSync, type Dirent } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const MAX_DEPTH = 4;

/**
 * The rollout of thread `id` (`rollout-<time>-<id>.jsonl`) in the sessions tree that holds `near`
 * (`$CODEX_HOME/sessions/YYYY/MM/DD/<file>`): `near`'s own directory first, then the whole tree, newest
 * date directories first. Unreadable directories are skipped. Null when none is found.
 */
export function findRollout(near: string, id: string): string | null {
  const here = dirname(near);
  let root: string | null = null;
  for (let d = here, i = 0; i < 5; i++, d = dirname(d)) {
    if (basename(d) === 'sessions') {
      root = d;
      break;
    }
  }
  return findRolloutIn(here, id, 0) ?? (root !== null && root !== here ? findRolloutIn(root, id, MAX_DEPTH) : null);
}

/** The rollout of thread `id` under `dir`, searching `depth` directory levels below it. */
export function findRolloutIn(dir: string, id: string, depth: number = MAX_DEPTH): string | null {
  const suffix = `-${id}.jsonl`;
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const e of entries)
    if (e.isFile() && e.name.startsWith('rollout-') && e.name.endsWith(suffix)) return join(dir, e.name);
  if (depth <= 0) return null;
  for (const e of entries.filter((x) => x.isDirectory()).sort((a, b) => b.name.localeCompare(a.name))) {
    const hit = findRolloutIn(join(dir, e.name), id, depth - 1);
    if (hit) return hit;
  }
  return null;
}

/**
 * session_meta.history_base.end_byte_offset of a rollout (its first line), or null. Codex 0.169+
 * does not copy a parent's history into a fork's rollout: the fork's session_meta points at the
 * parent's rollout up to that offset. Throws when the file cannot be read.
 */
export function historyBaseEnd(path: string): number | null {
  const fd = openSync(path, 'r');
  try {
    const chunks: Buffer[] = [];
    const buf = Buffer.allocUnsafe(1 << 16);
    for (let pos = 0, total = 0; total < 16 << 20; ) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n <= 0) break;
      const nl = buf.subarray(0, n).indexOf(0x0a);
      chunks.push(Buffer.from(buf.subarray(0, nl >= 0 ? nl : n)));
      if (nl >= 0) break;
      pos += n;
      total += n;
    }
    const first = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      type?: unknown;
      payload?: { history_base?: { end_byte_offset?: unknown } };
    };
    const end = first.type === 'session_meta' ? first.payload?.history_base?.end_byte_offset : undefined;
    return typeof end === 'number' && Number.isSafeInteger(end) && end >= 0 ? end : null;
  } finally {
    closeSync(fd);
  }
}
