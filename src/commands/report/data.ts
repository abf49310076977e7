// `latch report`, the data: one read of the store, shared by both renderers (markdown.ts, html.ts),
// and the format-neutral summaries they both show. Everything comes from the records: timeline() of
// shared/timeline.ts, sessionJson() of shared/session.ts and the transitions' evidence.
import type { Db } from '../../store/store.js';
import type { Io } from '../io.js';
import { sessionJson } from '../shared/session.js';
import { resolveWorkspace, targetSessions } from '../shared/target.js';
import { timeline, type ChangeJson, type ChangeRow, type LogEntry } from '../shared/timeline.js';

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

type SessionInfo = ReturnType<typeof sessionJson>;

interface CheckpointInfo {
  id: string;
  session_id: string;
  compaction_seq: number;
  created_at: string;
  tree_sha256: string;
  tree_files: number;
  git_head: string | null;
  git_branch: string | null;
}

interface VerifyEvidence {
  confirmed_by?: string;
  accepted_changes?: boolean;
  checks?: { name: string; ok: boolean; detail: string }[];
  changes?: {
    path: string;
    change: string;
    attribution: string | null;
    attempt_id: string | null;
    while_latched?: boolean;
  }[];
  baseline?: { id: string; created_at: string; tree_sha256: string; tree_files: number } | null;
  current?: { tree_sha256: string; tree_files: number; git_head: string | null; git_branch: string | null };
}

interface TransitionInfo {
  session_id: string;
  at: string;
  event: string;
  from: string;
  to: string;
  evidence: Record<string, unknown>;
}

/** A timeline entry, with a transition's full evidence attached. */
export type Entry = LogEntry & { evidence?: Record<string, unknown> };

export interface FileChange extends ChangeJson {
  id: number;
  tool: string | null;
  summary: string | null;
  turn_id: string | null;
  attempt_state: string | null;
}

interface AttemptLite {
  id: string;
  session_id: string;
  turn_id: string | null;
  tool_name: string;
  summary: string | null;
  state: string;
  started_at: string;
}

export interface ReportData {
  workspace: string;
  generated_at: string;
  version: string;
  /** Null: the whole workspace; otherwise the selected session ids. */
  selected: string[] | null;
  /** The agents the sessions in scope belong to (sessions.agent, e.g. `codex`, `claude`), first seen first. */
  agents: string[];
  sessions: SessionInfo[];
  entries: Entry[];
  transitions: TransitionInfo[];
  checkpoints: Map<string, CheckpointInfo>;
  /** Every recorded change in scope, newest first (as `latch blame`). */
  files: FileChange[];
}

export function collectReport(db: Db, io: Io, opts: { cwd?: string; session?: string }): ReportData {
  const { workspace, sessions } = targetSessions(db, io, opts);
  const ws = workspace ?? resolveWorkspace(io, opts.cwd);
  const selected = opts.session ? sessions.map((s) => s.session_id) : null;
  const inScope = (id: string | null) => selected === null || (id !== null && selected.includes(id));
  const infos = sessions.map((s) => sessionJson(db, s));
  const sessionIds = infos.map((s) => s.session_id);

  const transitions: TransitionInfo[] = [];
  const checkpoints = new Map<string, CheckpointInfo>();
  for (const sid of sessionIds) {
    for (const t of db.prepare('SELECT * FROM transitions WHERE session_id = ? ORDER BY id').all(sid) as {
      at: string;
      event: string;
      from_state: string;
      to_state: string;
      evidence_json: string;
    }[]) {
      transitions.push({
        session_id: sid,
        at: t.at,
        event: t.event,
        from: t.from_state,
        to: t.to_state,
        evidence: parseObject(t.evidence_json),
      });
    }
    for (const c of db
      .prepare(
        'SELECT id, session_id, compaction_seq, created_at, tree_sha256, tree_files, git_head, git_branch FROM checkpoints WHERE session_id = ?',
      )
      .all(sid) as CheckpointInfo[]) {
      checkpoints.set(c.id, c);
    }
  }

  // Attach each transition's evidence to its timeline entry (same session, time, event and states).
  const pending = new Map<string, Record<string, unknown>[]>();
  const key = (t: { session_id: string; at: string; event: string; from: string; to: string }) =>
    [t.session_id, t.at, t.event, t.from, t.to].join('\u0000');
  for (const t of transitions) {
    const list = pending.get(key(t)) ?? [];
    list.push(t.evidence);
    pending.set(key(t), list);
  }
  const entries: Entry[] = timeline(db, ws, selected).map((e) =>
    e.kind === 'transition' ? { ...e, evidence: pending.get(key(e))?.shift() ?? {} } : e,
  );

  const attempts = new Map<string, AttemptLite>();
  for (const a of db
    .prepare('SELECT id, session_id, turn_id, tool_name, summary, state, started_at FROM attempts WHERE workspace = ?')
    .all(ws) as AttemptLite[])
    attempts.set(a.id, a);
  const files: FileChange[] = [];
  for (const r of db.prepare('SELECT * FROM changes WHERE workspace = ? ORDER BY id DESC').all(ws) as ChangeRow[]) {
    const a = r.attempt_id ? attempts.get(r.attempt_id) : undefined;
    if (selected !== null && !inScope(a?.session_id ?? r.session_id)) continue;
    files.push({
      id: r.id,
      path: r.path,
      change: r.change,
      attribution: r.attribution,
      attempt_id: r.attempt_id,
      session_id: r.session_id,
      candidates: parseArray(r.candidates_json),
      observed_at: r.observed_at,
      observed_by: r.observed_by,
      before:
        r.before_sha256 === null
          ? null
          : { sha256: r.before_sha256, mode: r.before_mode ?? 0, size: r.before_size ?? 0 },
      after:
        r.after_sha256 === null ? null : { sha256: r.after_sha256, mode: r.after_mode ?? 0, size: r.after_size ?? 0 },
      tool: a?.tool_name ?? null,
      summary: a?.summary ?? null,
      turn_id: a?.turn_id ?? null,
      attempt_state: a?.state ?? null,
    });
  }
  return {
    workspace: ws,
    generated_at: io.now(),
    version: VERSION,
    selected,
    agents: [...new Set(infos.map((s) => s.agent))],
    sessions: infos,
    entries,
    transitions,
    checkpoints,
    files,
  };
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function parseArray(text: string): string[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}

/** How the report names an agent (src/agents/index.ts); a name this Latch does not know shows as stored. */
const AGENT_LABELS: Readonly<Record<string, string>> = { codex: 'Codex', claude: 'Claude Code' };
export const agentLabel = (name: string): string => (Object.hasOwn(AGENT_LABELS, name) ? AGENT_LABELS[name]! : name);

export const verifyEvidence = (ev: Record<string, unknown> | undefined): VerifyEvidence => (ev ?? {}) as VerifyEvidence;
export const isTrip = (t: { event: string; from: string; to: string }) => t.from === 'mutable' && t.to !== 'mutable';
/** A call's summary without the `Tool: ` prefix summarizeCall() puts on it (the tool is shown next to it). */
export const callText = (tool: string | null, summary: string | null): string | null =>
  summary !== null && tool !== null && summary.startsWith(`${tool}: `) ? summary.slice(tool.length + 2) : summary;
export const short = (sha: string | null | undefined, n = 16) =>
  sha ? (sha.length > n ? sha.slice(0, n) + '…' : sha) : '-';

/**
 * The agent's attempts on Latch itself (its store, its registration, `latch verify`): denied calls whose
 * reasons say so, oldest first. The report shows them before anything else.
 */
export function selfProtectionDenials(d: ReportData): Extract<LogEntry, { kind: 'denial' }>[] {
  return d.entries.filter(
    (e): e is Extract<LogEntry, { kind: 'denial' }> =>
      e.kind === 'denial' && e.reasons.some((r) => r.code === 'touches_latch'),
  );
}

/** Allowed attempts and denials of a session from each compaction to the next. */
interface CompactionWindow {
  session_id: string;
  seq: number;
  from: string;
  until: string | null;
  allowed: number;
  denied: Extract<LogEntry, { kind: 'denial' }>[];
}

export function compactionWindows(d: ReportData): CompactionWindow[] {
  const out: CompactionWindow[] = [];
  for (const s of d.sessions) {
    const comps = d.entries.filter(
      (e): e is Extract<LogEntry, { kind: 'compaction' }> => e.kind === 'compaction' && e.session_id === s.session_id,
    );
    comps.forEach((c, i) => {
      const until = comps[i + 1]?.at ?? null;
      const inWindow = (at: string) => at >= c.at && (until === null || at < until);
      const mine = d.entries.filter((e) => e.session_id === s.session_id && inWindow(e.at));
      out.push({
        session_id: s.session_id,
        seq: c.seq,
        from: c.at,
        until,
        allowed: mine.filter((e) => e.kind === 'attempt').length,
        denied: mine.filter((e): e is Extract<LogEntry, { kind: 'denial' }> => e.kind === 'denial'),
      });
    });
  }
  return out;
}

interface FileSummary {
  path: string;
  changes: number;
  attempt: number;
  contended: number;
  outside: number;
  unknown: number;
  last: FileChange;
}

export function fileSummaries(d: ReportData): FileSummary[] {
  const by = new Map<string, FileSummary>();
  for (const f of d.files) {
    let s = by.get(f.path);
    if (!s) {
      s = { path: f.path, changes: 0, attempt: 0, contended: 0, outside: 0, unknown: 0, last: f };
      by.set(f.path, s);
    }
    s.changes++;
    if (
      f.attribution === 'attempt' ||
      f.attribution === 'contended' ||
      f.attribution === 'outside' ||
      f.attribution === 'unknown'
    )
      s[f.attribution]++;
  }
  return [...by.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export function overallState(d: ReportData): string {
  if (d.sessions.length === 0) return 'no sessions recorded';
  const held = d.sessions.filter((s) => !s.may_mutate);
  if (held.length === 0) return 'mutable (every session may mutate)';
  return `${held.length} of ${d.sessions.length} session(s) blocked: ${held.map((s) => `${s.session_id} ${s.state}`).join(', ')}`;
}

export function distinct(values: string[]): string {
  const u = [...new Set(values)];
  return u.length ? u.join(', ') : '-';
}

/** A transition's evidence as one line of plain text (each renderer escapes it for its format). */
export function transitionSummary(t: {
  event: string;
  from: string;
  to: string;
  evidence?: Record<string, unknown>;
}): string {
  const ev = t.evidence ?? {};
  if (t.event === 'verify') {
    const v = verifyEvidence(ev);
    const checks = (v.checks ?? []).map((c) => `${c.name} ${c.ok ? 'ok' : 'FAIL'}`).join(', ');
    const parts = [
      `confirmed by ${v.confirmed_by ?? '?'}`,
      checks ? `checks: ${checks}` : null,
      v.accepted_changes ? `accepted ${(v.changes ?? []).length} change(s)` : null,
    ];
    return parts.filter(Boolean).join('; ');
  }
  const reason = typeof ev.reason === 'string' ? ev.reason : null;
  if (reason) return reason; // the reason already names the compaction, source, checkpoint or parent
  const extra: string[] = [];
  if (typeof ev.compaction_seq === 'number') extra.push(`compaction #${ev.compaction_seq}`);
  if (typeof ev.observed_via === 'string') extra.push(`via ${ev.observed_via}`);
  if (typeof ev.checkpoint_id === 'string') extra.push(`checkpoint ${ev.checkpoint_id}`);
  if (typeof ev.parent_session_id === 'string') extra.push(`parent ${ev.parent_session_id}`);
  return extra.join(', ');
}
