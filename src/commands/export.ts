// `latch export agent-trace`: the recorded attribution as one Agent Trace record (spec v0.1.0,
// https://github.com/cursor/agent-trace): vcs, tool, files -> conversations -> contributor, ranges.
//
// Conversations. One per Codex session: `url` is `urn:uuid:<session id>` (Codex session ids are
// UUIDs; a non-UUID id falls back to the transcript's file:// URL, or no url), `related` holds the
// transcript (`{type: "transcript", url: file://...}`) and a sub-agent's parent session. Changes no
// single session can own get a conversation without a url (the spec makes url optional).
//
// Contributor mapping, from Latch's attribution of each change (src/ledger/observe.ts):
//   attempt    -> "ai", model_id = the session's model (as Codex reports it, e.g. "gpt-5.5"; Latch
//                 does not record the provider, so no "openai/" prefix is invented), in the
//                 session's conversation.
//   contended  -> "ai": every candidate is an agent attempt, only WHICH one is ambiguous. When all
//                 candidates belong to one session (Latch then records that session) the change
//                 goes to that session's conversation, since Agent Trace has no per-attempt level;
//                 otherwise to a url-less conversation listing the candidate sessions in `related`
//                 (type "candidate_session"), with a model_id only if they all share one model.
//   outside    -> "human": no attempt of any recorded session was live when the file changed. This
//                 is the spec's "not AI" bucket; it also covers other processes that are not the
//                 agent (an editor's formatter, a build the user ran), which the spec has no type for.
//   unknown    -> "unknown": too close to an attempt window's edge, no change time, or an attempt
//                 with no recorded start ("origin cannot be determined"). Candidate sessions, if
//                 any, are listed in `related`.
//   "mixed" is never emitted: each Latch change has one attribution; Latch never sees a human edit
//   inside AI output at a finer grain than a whole file.
//
// Ranges. Latch records whole-file changes (sha256 of the content before/after), not lines. Only the
// LAST recorded change to a file can say anything about the file's lines now, and only if the file on
// disk still hashes to that change's after-hash (regular file, text, i.e. no NUL byte):
//   added     -> the whole file, lines 1..N (content_hash = "sha256:<after hash>");
//   modified  -> when the before-content can be recovered from git (HEAD or the index holds a blob
//                whose sha256 equals the recorded before-hash), the lines of the current file that a
//                line diff against it marks inserted or replaced; otherwise no ranges.
// Every other conversation of the file (earlier changes, removals, a file changed since Latch last
// looked) has `ranges: []`: it contributed to the file, but which current lines it wrote cannot be
// shown. Lines are those of the working tree at export time; `vcs.revision` is HEAD at export time,
// and metadata["agent-latch"].git.dirty says whether the working tree differs from it.
import { createHash, randomUUID } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EXIT } from '../base/errors.js';
import { gitState, runGit } from '../base/git.js';
import { getSession, type SessionRow } from '../session/records.js';
import type { Db } from '../store/store.js';
import { json, withStore, type Io } from '../kit/io.js';
import { resolveWorkspace, targetSessions } from './shared/target.js';

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

export const AGENT_TRACE_VERSION = '0.1.0';

type ContributorType = 'human' | 'ai' | 'mixed' | 'unknown';

export interface TraceContributor {
  type: ContributorType;
  model_id?: string;
}

export interface TraceRange {
  start_line: number;
  end_line: number;
  content_hash?: string;
}

export interface TraceConversation {
  url?: string;
  contributor: TraceContributor;
  ranges: TraceRange[];
  related?: { type: string; url: string }[];
}

export interface TraceRecord {
  version: string;
  id: string;
  timestamp: string;
  vcs?: { type: 'git'; revision: string };
  tool?: { name: string; version?: string };
  files: { path: string; conversations: TraceConversation[] }[];
  metadata: Record<string, unknown>;
}

/** Latch attribution -> Agent Trace contributor type (see the header). */
export const CONTRIBUTOR_OF: Readonly<Record<string, ContributorType>> = {
  attempt: 'ai',
  contended: 'ai',
  outside: 'human',
  unknown: 'unknown',
};

interface ChangeRow {
  id: number;
  path: string;
  change: 'added' | 'modified' | 'removed';
  attribution: string;
  attempt_id: string | null;
  session_id: string | null;
  candidates_json: string;
  before_sha256: string | null;
  after_sha256: string | null;
  after_mode: number | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The conversation url of a session, or undefined when it has none. */
export function sessionUrl(row: Pick<SessionRow, 'session_id' | 'transcript_path'>): string | undefined {
  if (UUID.test(row.session_id)) return `urn:uuid:${row.session_id.toLowerCase()}`;
  return row.transcript_path ? pathToFileURL(row.transcript_path).href : undefined;
}

function sessionRelated(
  row: SessionRow,
  lookup: (id: string) => SessionRow | undefined,
): { type: string; url: string }[] {
  const out: { type: string; url: string }[] = [];
  const own = sessionUrl(row);
  if (row.transcript_path) {
    const t = pathToFileURL(row.transcript_path).href;
    if (t !== own) out.push({ type: 'transcript', url: t });
  }
  if (row.parent_session_id) {
    const parent = lookup(row.parent_session_id);
    const url = parent
      ? sessionUrl(parent)
      : UUID.test(row.parent_session_id)
        ? `urn:uuid:${row.parent_session_id.toLowerCase()}`
        : undefined;
    if (url) out.push({ type: 'parent_session', url });
  }
  return out;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Byte offsets of the lines of `buf`: line i (0-based) is buf[starts[i], starts[i+1]) incl. its '\n'. */
function lineStarts(buf: Buffer): number[] {
  const starts: number[] = [];
  if (buf.length === 0) return starts;
  starts.push(0);
  for (let i = buf.indexOf(10); i !== -1 && i + 1 < buf.length; i = buf.indexOf(10, i + 1)) starts.push(i + 1);
  return starts;
}

function lines(buf: Buffer): string[] {
  const s = lineStarts(buf);
  // latin1 maps bytes 1:1, so comparisons are byte-exact whatever the encoding.
  return s.map((start, i) => buf.toString('latin1', start, i + 1 < s.length ? s[i + 1] : buf.length));
}

/** Largest middle section (after trimming a common prefix and suffix) the LCS table may cover. */
const MAX_DIFF_CELLS = 4_000_000;

/**
 * 0-based indices of the lines of `after` that are not matched to a line of `before` by a longest
 * common subsequence (inserted or replaced lines), or null when the files are too large to diff.
 */
export function changedLineIndices(before: string[], after: string[]): number[] | null {
  let pre = 0;
  while (pre < before.length && pre < after.length && before[pre] === after[pre]) pre++;
  let suf = 0;
  while (
    suf < before.length - pre &&
    suf < after.length - pre &&
    before[before.length - 1 - suf] === after[after.length - 1 - suf]
  )
    suf++;
  const a = before.slice(pre, before.length - suf);
  const b = after.slice(pre, after.length - suf);
  const n = a.length;
  const m = b.length;
  if (m === 0) return [];
  if (n === 0) return b.map((_, j) => pre + j);
  if ((n + 1) * (m + 1) > MAX_DIFF_CELLS) return null;
  // L[i][j] = LCS length of a[i..] and b[j..]; min(n, m) <= 2000 here, so 16 bits suffice.
  const w = m + 1;
  const L = new Uint16Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i * w + j] = a[i] === b[j] ? L[(i + 1) * w + j + 1]! + 1 : Math.max(L[(i + 1) * w + j]!, L[i * w + j + 1]!);
    }
  }
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (j < m) {
    if (i < n && a[i] === b[j]) {
      i++;
      j++;
    } else if (i < n && L[(i + 1) * w + j]! >= L[i * w + j + 1]!) {
      i++;
    } else {
      out.push(pre + j);
      j++;
    }
  }
  return out;
}

/** Runs of consecutive 0-based line indices as 1-based ranges, each with the sha256 of its bytes. */
function toRanges(buf: Buffer, indices: number[]): TraceRange[] {
  const starts = lineStarts(buf);
  const end = (k: number) => (k + 1 < starts.length ? starts[k + 1]! : buf.length);
  const out: TraceRange[] = [];
  for (let k = 0; k < indices.length; ) {
    let e = k;
    while (e + 1 < indices.length && indices[e + 1] === indices[e]! + 1) e++;
    const first = indices[k]!;
    const last = indices[e]!;
    out.push({
      start_line: first + 1,
      end_line: last + 1,
      content_hash: `sha256:${sha256(buf.subarray(starts[first], end(last)))}`,
    });
    k = e + 1;
  }
  return out;
}

/** The before-content of a modification, when git (HEAD or the index) holds exactly that blob. */
function gitBefore(workspace: string, path: string, beforeSha: string): Buffer | null {
  for (const spec of [`HEAD:${path}`, `:${path}`]) {
    const r = runGit(workspace, ['cat-file', 'blob', spec]);
    if (r.status === 0 && sha256(r.stdout) === beforeSha) return r.stdout;
  }
  return null;
}

/** What the last change to a file says about its current lines (see the header). */
function rangesOfLast(workspace: string, last: ChangeRow, isGit: boolean): TraceRange[] {
  if (last.change === 'removed' || last.after_sha256 === null) return [];
  if (last.after_mode !== 100644 && last.after_mode !== 100755) return [];
  let buf: Buffer;
  try {
    const abs = join(workspace, last.path);
    if (!lstatSync(abs).isFile()) return [];
    buf = readFileSync(abs);
  } catch {
    return [];
  }
  if (sha256(buf) !== last.after_sha256 || buf.includes(0)) return [];
  const count = lineStarts(buf).length;
  if (count === 0) return [];
  if (last.change === 'added') return [{ start_line: 1, end_line: count, content_hash: `sha256:${last.after_sha256}` }];
  if (!isGit || last.before_sha256 === null) return [];
  const before = gitBefore(workspace, last.path, last.before_sha256);
  if (!before || before.includes(0)) return [];
  const idx = changedLineIndices(lines(before), lines(buf));
  return idx === null ? [] : toRanges(buf, idx);
}

interface Group {
  key: string;
  conversation: TraceConversation;
}

/** Builds the trace record of a workspace (or of the given sessions only). */
export function agentTrace(
  db: Db,
  workspace: string,
  sessions: SessionRow[],
  onlySessions: boolean,
  now: string,
): TraceRecord {
  const cache = new Map<string, SessionRow | undefined>(sessions.map((s) => [s.session_id, s]));
  const lookup = (id: string): SessionRow | undefined => {
    if (!cache.has(id)) cache.set(id, getSession(db, id));
    return cache.get(id);
  };
  const attemptSession = db.prepare('SELECT session_id FROM attempts WHERE id = ?');
  const sessionOfAttempt = (id: string): string | null =>
    (attemptSession.get(id) as { session_id: string } | undefined)?.session_id ?? null;
  const wanted = new Set(sessions.map((s) => s.session_id));

  const git = gitState(workspace);
  const changes = db.prepare('SELECT * FROM changes WHERE workspace = ? ORDER BY id').all(workspace) as ChangeRow[];
  const byPath = new Map<string, ChangeRow[]>();
  for (const c of changes) {
    const list = byPath.get(c.path) ?? [];
    list.push(c);
    byPath.set(c.path, list);
  }

  const usedSessions = new Set<string>();
  const files: TraceRecord['files'] = [];
  for (const path of [...byPath.keys()].sort()) {
    const history = byPath.get(path)!;
    const last = history[history.length - 1]!;
    const groups: Group[] = [];
    for (const c of history) {
      const candidates = [
        ...new Set(
          (JSON.parse(c.candidates_json) as string[]).map(sessionOfAttempt).filter((s): s is string => s !== null),
        ),
      ].sort();
      const involved = c.session_id ? [c.session_id] : candidates;
      if (onlySessions && !involved.some((s) => wanted.has(s))) continue;
      const type = CONTRIBUTOR_OF[c.attribution] ?? 'unknown';
      let key: string;
      let make: () => TraceConversation;
      const owner = type === 'ai' && c.session_id ? lookup(c.session_id) : undefined;
      if (owner) {
        key = `session:${owner.session_id}`;
        make = () => {
          const conv: TraceConversation = {
            contributor: { type: 'ai', ...(owner.model ? { model_id: owner.model } : {}) },
            ranges: [],
          };
          const url = sessionUrl(owner);
          if (url) conv.url = url;
          const related = sessionRelated(owner, lookup);
          if (related.length) conv.related = related;
          return conv;
        };
        usedSessions.add(owner.session_id);
      } else {
        key = `${c.attribution}:${candidates.join(',')}`;
        make = () => {
          const rows = candidates.map(lookup);
          const models = new Set(rows.map((r) => r?.model ?? null));
          const model = type === 'ai' && models.size === 1 ? [...models][0] : null;
          const conv: TraceConversation = { contributor: { type, ...(model ? { model_id: model } : {}) }, ranges: [] };
          const related = rows.flatMap((r, i) => {
            const url = r
              ? sessionUrl(r)
              : UUID.test(candidates[i]!)
                ? `urn:uuid:${candidates[i]!.toLowerCase()}`
                : undefined;
            return url ? [{ type: 'candidate_session', url }] : [];
          });
          if (related.length) conv.related = related;
          return conv;
        };
        for (const s of candidates) usedSessions.add(s);
      }
      let g = groups.find((x) => x.key === key);
      if (!g) {
        g = { key, conversation: make() };
        groups.push(g);
      }
      if (c === last) g.conversation.ranges = rangesOfLast(workspace, last, git.isRepo);
    }
    if (groups.length > 0) files.push({ path, conversations: groups.map((g) => g.conversation) });
  }

  const involvedRows = [...new Set([...sessions.map((s) => s.session_id), ...usedSessions])]
    .map(lookup)
    .filter((r): r is SessionRow => r !== undefined);
  const toolRows = onlySessions ? sessions : involvedRows;
  const versions = [...new Set(toolRows.map((r) => r.cli_version).filter((v): v is string => v !== null))];
  let dirty: boolean | null = null;
  if (git.isRepo) {
    const st = runGit(workspace, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
    dirty = st.status === 0 ? st.stdout.length > 0 : null;
  }

  const record: TraceRecord = {
    version: AGENT_TRACE_VERSION,
    id: randomUUID(),
    timestamp: now,
    ...(git.head ? { vcs: { type: 'git' as const, revision: git.head } } : {}),
    // One tool per record: the version only when the sessions agree on one (each is in metadata).
    tool: { name: toolName(toolRows), ...(versions.length === 1 ? { version: versions[0] } : {}) },
    files,
    metadata: {
      'agent-latch': {
        version: VERSION,
        workspace,
        ...(onlySessions ? { session_filter: sessions.map((s) => s.session_id) } : {}),
        git: { head: git.head, branch: git.branch, dirty },
        sessions: involvedRows.map((r) => ({
          session_id: r.session_id,
          conversation_url: sessionUrl(r) ?? null,
          parent_session_id: r.parent_session_id,
          cli_version: r.cli_version,
          model: r.model,
          transcript_path: r.transcript_path,
        })),
        contributor_of_attribution: CONTRIBUTOR_OF,
        ranges:
          'Latch records whole-file changes. Ranges are given only for the last recorded change of a file whose working-tree content still has that ' +
          "change's after-hash: the whole file for an addition; for a modification, the lines a line diff marks inserted or replaced against the " +
          'before-content recovered from git (HEAD or index blob with the recorded before-hash). Otherwise ranges is empty. Lines are those of the ' +
          'working tree at export time.',
      },
    },
  };
  return record;
}

export async function exportAgentTrace(io: Io, opts: { cwd?: string; session?: string }): Promise<number> {
  return withStore(io, (db) => {
    const { workspace, sessions } = targetSessions(db, io, opts);
    const ws = workspace ?? resolveWorkspace(io, opts.cwd);
    json(io, agentTrace(db, ws, sessions, Boolean(opts.session), io.now()));
    return EXIT.ok;
  });
}

/** The agent the exported sessions belong to (`codex + claude` when they differ; `codex` for none, as before the column). */
function toolName(rows: readonly { agent: string }[]): string {
  const agents = [...new Set(rows.map((r) => r.agent))].sort();
  return agents.length > 0 ? agents.join(' + ') : 'codex';
}
