// `latch report --json`: the report's data (data.ts's ReportData) as one JSON object, for programs.
// The shape is stable: every key is always present (null or [] when there is nothing), in the order
// below, and a change of meaning changes `format`. The pieces are the ones the other commands print:
// a session as `latch status --json`, a timeline entry as `latch log --json`, a change as
// `latch blame --json`; checkpoints are an array (ReportData keeps a map), ordered by session, then
// compaction, time and id. `summary`, `blocked`, `writes` and `reads` are the story the Markdown and
// HTML tell (data.ts), in full: nothing in them is capped.
//
//   {
//     "format": "latch/report@1",
//     "workspace": string, "generated_at": ISO time, "version": Latch's version,
//     "selected": [session id] | null (null: the whole workspace),
//     "agents": [agent name ("codex", "claude", …), first seen first],
//     "summary": { compactions, trips, latched_now, held_sessions: [{ session_id, state }], writes_blocked,
//                  writes, writes_while_latched, reads, verifications,
//                  verified: [{ session_id, at, confirmed_by, how: "human" | "evidence", tree_unchanged,
//                               accepted_changes }], resumes },
//     "blocked": [denials grouped by their shared reasons, first seen first: { reasons: [{ code, message }],
//                 count, sessions, calls: [{ session_id, at, turn_id, tool, summary, detail: [{ code, message }] }] }],
//     "writes": [allowed calls that may have written, oldest first: { attempt_id, session_id, at, ended_at, tool,
//                summary, state, kind, files: [path], phase: "before_trip" | "while_latched" | "after_verify" |
//                "after_resume", latched_how: "started_while_held" | "ran_past_trip" | null }],
//     "reads": [allowed calls that only read, oldest first: { attempt_id, session_id, at, tool, summary,
//               how: "brief_page" | "held" | "read_only", page, phase }],
//     "sessions": [{ session_id, agent, state, may_mutate, policy, scope, reason, checkpoints, … }],
//     "entries": [{ kind: "attempt" | "change" | "compaction" | "transition" | "denial", at, session_id, …;
//                   a transition with its evidence }],
//     "transitions": [{ session_id, at, event, from, to, evidence }],
//     "checkpoints": [{ id, session_id, compaction_seq, created_at, tree_sha256, tree_files, git_head, git_branch }],
//     "files": [every recorded change, newest first: { id, path, change, attribution, attempt_id, session_id,
//               candidates, observed_at, observed_by, before, after, tool, summary, turn_id, attempt_state }]
//   }
import type { ReportData } from './data.js';

/** What `--json` prints; `format` names this shape. */
export const REPORT_FORMAT = 'latch/report@1';

type CheckpointJson = ReportData['checkpoints'] extends Map<string, infer C> ? C : never;

export interface ReportJson {
  format: typeof REPORT_FORMAT;
  workspace: string;
  generated_at: string;
  version: string;
  selected: string[] | null;
  agents: string[];
  summary: ReportData['summary'];
  blocked: ReportData['blocked'];
  writes: ReportData['writes'];
  reads: ReportData['reads'];
  sessions: ReportData['sessions'];
  entries: ReportData['entries'];
  transitions: ReportData['transitions'];
  checkpoints: CheckpointJson[];
  files: ReportData['files'];
}

const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);

export function reportJson(d: ReportData): ReportJson {
  const order = new Map(d.sessions.map((s, i) => [s.session_id, i]));
  const checkpoints = [...d.checkpoints.values()].sort(
    (a, b) =>
      cmp(order.get(a.session_id) ?? order.size, order.get(b.session_id) ?? order.size) ||
      cmp(a.compaction_seq, b.compaction_seq) ||
      cmp(a.created_at, b.created_at) ||
      cmp(a.id, b.id),
  );
  return {
    format: REPORT_FORMAT,
    workspace: d.workspace,
    generated_at: d.generated_at,
    version: d.version,
    selected: d.selected,
    agents: d.agents,
    summary: d.summary,
    blocked: d.blocked,
    writes: d.writes,
    reads: d.reads,
    sessions: d.sessions,
    entries: d.entries,
    transitions: d.transitions,
    checkpoints,
    files: d.files,
  };
}

export function renderJson(d: ReportData): string {
  return `${JSON.stringify(reportJson(d), null, 2)}\n`;
}
