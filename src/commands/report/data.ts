// `latch report`, the data: one read of the store, shared by the renderers (markdown.ts, html.ts,
// json.ts), and the format-neutral story they all tell: the summary (compactions, writes blocked,
// writes that ran while latched, verifications), the denials grouped by reason, and the allowed calls
// split into reads and writes. Everything comes from the records: timeline() of shared/timeline.ts,
// sessionJson() of shared/session.ts, the transitions' evidence, the attempts' columns and brief_reads.
import { CLOSE_REASON } from '../../ledger/ledger.js';
import type { Db } from '../../store/store.js';
import type { Io } from '../../kit/io.js';
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
  tool_use_id: string | null;
  summary: string | null;
  state: string;
  started_at: string;
  /** '0': no Start was recorded (the call was seen first at its PostToolUse: Latch never admitted it). */
  started_ns: string;
  ended_at: string | null;
  end_reason: string | null;
  /** The adapter's tool kind at Start (shell, patch, mcp, agent, unknown); null for older records. */
  kind: string | null;
}

/**
 * Where an allowed call falls in its session's story, from the session's own transitions at the
 * call's Start: before any trip, while held (latched or paused), or after a human restored authority
 * (`latch verify`, or the evidence release, which is a verify too; `latch resume`).
 */
export type Phase = 'before_trip' | 'while_latched' | 'after_verify' | 'after_resume';

/** A read-only call that ran: how Latch knows it was one. */
export type ReadHow =
  /** A brief page the transcript shows the agent read (brief_reads, by the call's id). */
  | 'brief_page'
  /** Started while held: the guard allows only reads then (run in its read-only sandbox and replayed). */
  | 'held'
  /** Closed as read-only: its PostToolUse found a command the read-only classifier accepts (no scan). */
  | 'read_only';

export interface ReadCall {
  attempt_id: string;
  session_id: string;
  at: string;
  tool: string;
  summary: string | null;
  how: ReadHow;
  /** For a brief page read: the page number. */
  page: number | null;
  phase: Phase;
}

export interface WriteCall {
  attempt_id: string;
  session_id: string;
  at: string;
  ended_at: string | null;
  tool: string;
  summary: string | null;
  /** The attempt's state (closed, abandoned, started, closing). */
  state: string;
  kind: string | null;
  /** The paths of the changes the ledger attributed to it, in the order observed. */
  files: string[];
  phase: Phase;
  /**
   * Why a write counts as having run while latched (phase `while_latched`): it started while its
   * session was held (no Start recorded, or a record older Latch allowed), or it started before a trip
   * and changed a file after it. Null otherwise.
   */
  latched_how: 'started_while_held' | 'ran_past_trip' | null;
}

/** Denials that share their reasons: each reason text once, with the calls it blocked. */
export interface DenialGroup {
  /** The shared reasons (the session's latch, an unchecked transcript, …), as recorded. */
  reasons: { code: string; message: string }[];
  count: number;
  sessions: string[];
  calls: {
    session_id: string;
    at: string;
    turn_id: string | null;
    tool: string;
    summary: string | null;
    /** The reasons that explain this call only (what it writes, the tool it is). */
    detail: { code: string; message: string }[];
  }[];
}

export interface ReportSummary {
  compactions: number;
  trips: number;
  /** Whether any session in scope is held (latched or paused) now. */
  latched_now: boolean;
  held_sessions: { session_id: string; state: string }[];
  /** Denied tracked calls (every one a call Latch would not let change the workspace). */
  writes_blocked: number;
  /** Allowed calls that may have changed the workspace. */
  writes: number;
  /** Writes that ran while their session was held: an alarm, never expected. */
  writes_while_latched: number;
  reads: number;
  verifications: number;
  verified: {
    session_id: string;
    at: string;
    /** `--yes`, `tty-code`, … as recorded; null for the evidence release (no human). */
    confirmed_by: string | null;
    how: 'human' | 'evidence';
    /** Tree digest at the checkpoint = at verify; null when either was not recorded. */
    tree_unchanged: boolean | null;
    accepted_changes: boolean;
  }[];
  resumes: number;
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
  /** The allowed calls that only read, oldest first. */
  reads: ReadCall[];
  /** The allowed calls that may have written, oldest first. */
  writes: WriteCall[];
  /** Every denial, grouped by its shared reasons, in the order each group first happened. */
  blocked: DenialGroup[];
  summary: ReportSummary;
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
    .prepare(
      'SELECT id, session_id, turn_id, tool_name, tool_use_id, summary, state, started_at, started_ns, ended_at, end_reason, kind FROM attempts WHERE workspace = ?',
    )
    .all(ws) as AttemptLite[])
    attempts.set(a.id, a);
  const files: FileChange[] = [];
  /** Each attempt's changes, oldest first: what it changed, and when. */
  const changedBy = new Map<string, ChangeRow[]>();
  for (const r of db.prepare('SELECT * FROM changes WHERE workspace = ? ORDER BY id DESC').all(ws) as ChangeRow[]) {
    if (r.attempt_id) changedBy.set(r.attempt_id, [r, ...(changedBy.get(r.attempt_id) ?? [])]);
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
  // Brief pages the transcript shows read, by the call that read them (the attempt's tool_use_id).
  const briefPages = new Map<string, number | null>();
  for (const sid of sessionIds)
    for (const r of db.prepare('SELECT call_id, page FROM brief_reads WHERE session_id = ?').all(sid) as {
      call_id: string;
      page: number | null;
    }[])
      briefPages.set(`${sid}\u0000${r.call_id}`, r.page);

  const { reads, writes } = classifyCalls(entries, attempts, changedBy, briefPages, transitions, infos);
  const blocked = groupDenials(entries);
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
    reads,
    writes,
    blocked,
    summary: summarize(infos, entries, transitions, reads, writes),
  };
}

const held = (state: string) => state !== 'mutable';

/** A session's authority at a moment, from its transitions: its state, and how it last became mutable. */
function phaseAt(transitions: TransitionInfo[], initial: string, at: string): { phase: Phase; state: string } {
  let state = initial;
  let restoredBy: 'verify' | 'resume' | null = null;
  for (const t of transitions) {
    if (t.at > at) break;
    if (held(t.from) && !held(t.to)) restoredBy = t.event === 'resume' ? 'resume' : 'verify';
    state = t.to;
  }
  if (held(state)) return { phase: 'while_latched', state };
  return { phase: restoredBy === null ? 'before_trip' : `after_${restoredBy}`, state };
}

/** When a change happened: its ctime (ns), else when it was observed (no later than that). */
const changedAtOrAfter = (c: ChangeRow, at: string): boolean =>
  c.changed_ns !== null && /^\d+$/.test(c.changed_ns)
    ? BigInt(c.changed_ns) >= BigInt(Date.parse(at)) * 1_000_000n
    : c.observed_at >= at;

/**
 * The allowed calls (attempts) split into reads and writes, each placed in its session's story. A call
 * is a read when the records say so and it changed no file: a brief page read (brief_reads), a call
 * started while its session was held (the guard allows only reads then), or one closed as read-only.
 * Anything else may have written, and is a write (fail closed: a call whose Close never came counts).
 */
function classifyCalls(
  entries: Entry[],
  attempts: Map<string, AttemptLite>,
  changedBy: Map<string, ChangeRow[]>,
  briefPages: Map<string, number | null>,
  transitions: TransitionInfo[],
  sessions: SessionInfo[],
): { reads: ReadCall[]; writes: WriteCall[] } {
  const bySession = new Map<string, TransitionInfo[]>();
  for (const t of transitions) bySession.set(t.session_id, [...(bySession.get(t.session_id) ?? []), t]);
  const current = new Map(sessions.map((s) => [s.session_id, s.state]));
  const reads: ReadCall[] = [];
  const writes: WriteCall[] = [];
  for (const e of entries) {
    if (e.kind !== 'attempt') continue;
    const a = attempts.get(e.attempt_id);
    const ts = bySession.get(e.session_id) ?? [];
    const { phase, state } = phaseAt(ts, ts[0]?.from ?? current.get(e.session_id) ?? 'mutable', e.at);
    const changes = changedBy.get(e.attempt_id) ?? [];
    const admitted = a !== undefined && a.started_ns !== '0';
    const briefKey = a?.tool_use_id ? `${e.session_id}\u0000${a.tool_use_id}` : null;
    const how: ReadHow | null =
      changes.length > 0
        ? null
        : briefKey !== null && briefPages.has(briefKey)
          ? 'brief_page'
          : admitted && held(state)
            ? 'held'
            : e.end_reason === CLOSE_REASON.readOnly
              ? 'read_only'
              : null;
    if (how !== null) {
      reads.push({
        attempt_id: e.attempt_id,
        session_id: e.session_id,
        at: e.at,
        tool: e.tool,
        summary: e.summary,
        how,
        page: how === 'brief_page' ? (briefPages.get(briefKey!) ?? null) : null,
        phase,
      });
      continue;
    }
    // A write that started before a trip and changed a file after it ran while latched, too.
    const pastTrip =
      phase !== 'while_latched' &&
      ts.some(
        (t) =>
          isTrip(t) &&
          t.at > e.at &&
          (e.ended_at === null || e.ended_at > t.at) &&
          changes.some((c) => changedAtOrAfter(c, t.at)),
      );
    writes.push({
      attempt_id: e.attempt_id,
      session_id: e.session_id,
      at: e.at,
      ended_at: e.ended_at,
      tool: e.tool,
      summary: e.summary,
      state: e.state,
      kind: a?.kind ?? null,
      files: changes.map((c) => c.path),
      phase: pastTrip ? 'while_latched' : phase,
      latched_how: phase === 'while_latched' ? 'started_while_held' : pastTrip ? 'ran_past_trip' : null,
    });
  }
  return { reads, writes };
}

/**
 * The reasons that explain one call rather than why calls are blocked (src/guard/decide.ts: what the
 * command writes, the tool it is, a read to send again): shown with their call, not as a group's text.
 */
const CALL_REASONS: ReadonlySet<string> = new Set([
  'not_read_only',
  'network_tool',
  'unknown_tool',
  'retry',
  'read_unsafe',
]);

/**
 * A denial's reasons split: `shared`, why calls were blocked (the session's latch, an unchecked
 * transcript, …: the same text for every call it blocked), and `detail`, what explains this call only.
 * A denial with nothing but call reasons shares those.
 */
export function splitReasons(reasons: { code: string; message: string }[]): {
  shared: { code: string; message: string }[];
  detail: { code: string; message: string }[];
} {
  const shared = reasons.filter((r) => !CALL_REASONS.has(r.code));
  return shared.length > 0
    ? { shared, detail: reasons.filter((r) => CALL_REASONS.has(r.code)) }
    : { shared: reasons, detail: [] };
}

/** The key of a group of denials: its shared reasons, codes and texts. */
export const groupKey = (shared: { code: string; message: string }[]): string =>
  JSON.stringify(shared.map((r) => [r.code, r.message]));

/** Every denial, grouped by the reasons it shares with others (each text once), first-seen order. */
function groupDenials(entries: Entry[]): DenialGroup[] {
  const groups = new Map<string, DenialGroup>();
  for (const e of entries) {
    if (e.kind !== 'denial') continue;
    const { shared, detail } = splitReasons(e.reasons);
    const key = groupKey(shared);
    let g = groups.get(key);
    if (!g) {
      g = { reasons: shared, count: 0, sessions: [], calls: [] };
      groups.set(key, g);
    }
    g.count++;
    if (!g.sessions.includes(e.session_id)) g.sessions.push(e.session_id);
    g.calls.push({ session_id: e.session_id, at: e.at, turn_id: e.turn_id, tool: e.tool, summary: e.summary, detail });
  }
  return [...groups.values()];
}

function summarize(
  sessions: SessionInfo[],
  entries: Entry[],
  transitions: TransitionInfo[],
  reads: ReadCall[],
  writes: WriteCall[],
): ReportSummary {
  const heldNow = sessions.filter((s) => held(s.state)).map((s) => ({ session_id: s.session_id, state: s.state }));
  const verified = transitions
    .filter((t) => t.event === 'verify')
    .map((t) => {
      const v = verifyEvidence(t.evidence);
      const before = v.baseline?.tree_sha256 ?? null;
      const after = v.current?.tree_sha256 ?? null;
      const byEvidence = t.evidence.reverify === 'evidence';
      return {
        session_id: t.session_id,
        at: t.at,
        confirmed_by: byEvidence ? null : (v.confirmed_by ?? null),
        how: byEvidence ? ('evidence' as const) : ('human' as const),
        tree_unchanged: before !== null && after !== null ? before === after : null,
        accepted_changes: v.accepted_changes === true,
      };
    });
  return {
    compactions: entries.filter((e) => e.kind === 'compaction').length,
    trips: transitions.filter(isTrip).length,
    latched_now: heldNow.length > 0,
    held_sessions: heldNow,
    writes_blocked: entries.filter((e) => e.kind === 'denial').length,
    writes: writes.length,
    writes_while_latched: writes.filter((w) => w.phase === 'while_latched').length,
    reads: reads.length,
    verifications: verified.length,
    verified,
    resumes: transitions.filter((t) => t.event === 'resume').length,
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

/** How the renderers name a call's place in its session's story (plain text). */
export function phaseLabel(w: { phase: Phase; latched_how?: WriteCall['latched_how'] }): string {
  switch (w.phase) {
    case 'before_trip':
      return 'before the trip';
    case 'after_verify':
      return 'after verification';
    case 'after_resume':
      return 'after resume';
    case 'while_latched':
      return w.latched_how === 'ran_past_trip'
        ? 'while latched (started before the trip, changed files after it)'
        : 'while latched';
  }
}

/** How the renderers name the way a read is known to be one (plain text). */
export function readLabel(r: ReadCall): string {
  switch (r.how) {
    case 'brief_page':
      return r.page === null ? 'brief page' : `brief page ${r.page}`;
    case 'held':
      return 'held read, run read-only by Latch';
    case 'read_only':
      return 'read-only command';
  }
}

/** The reads, counted by how each is known to be one: `2 held reads while latched, 1 brief page read`. */
export function readCounts(reads: ReadCall[]): string {
  const n = (how: ReadHow) => reads.filter((r) => r.how === how).length;
  const parts: [number, string, string][] = [
    [n('held'), 'held read', 'while latched (run read-only by Latch, output replayed)'],
    [n('brief_page'), 'brief page read', ''],
    [n('read_only'), 'other read-only command', ''],
  ];
  return parts
    .filter(([count]) => count > 0)
    .map(([count, what, rest]) => `${count} ${what}${count === 1 ? '' : 's'}${rest ? ` ${rest}` : ''}`)
    .join(', ');
}

/**
 * At most `cap` of `items`, keeping every one `keep` selects (the alarms), then the rest in order; the
 * kept items stay in their original order. Returns them and how many were left out.
 */
export function capped<T>(
  items: T[],
  cap: number,
  keep: (t: T) => boolean = () => false,
): { shown: T[]; more: number } {
  if (items.length <= cap) return { shown: items, more: 0 };
  const must = new Set(items.filter(keep));
  let room = Math.max(0, cap - must.size);
  const shown = items.filter((t) => {
    if (must.has(t)) return true;
    if (room === 0) return false;
    room--;
    return true;
  });
  return { shown, more: items.length - shown.length };
}
