// The shapes the analyser reports (analyser.ts and its layers fill them; fsck.ts builds the report
// from them). Types only.

import type { FileFinding } from '../../shared/file-doctor.js';

export type Severity = 'error' | 'warning';

/** A finding (its lines: at most 50). */
export type Finding = FileFinding<Severity>;

export type Outcome = 'ran' | 'failed' | 'blocked' | 'unknown' | 'no_output';

export interface Attempt {
  compaction: number;
  line: number;
  timestamp: string | null;
  call_id: string | null;
  tool: string;
  /** unknown: an app-server call seen only through its blocked PreToolUse run (the stream names no tool). */
  kind: 'shell' | 'patch' | 'mcp' | 'unknown';
  summary: string;
  read_only: boolean | null;
  outcome: Outcome;
  exit_code: number | null;
  detail: string | null;
  output_line: number | null;
  /** app-server: the hook run that blocked the call (PreToolUse), with its output entries. */
  hook?: HookRunInfo;
}

/** A hook run as `hook/completed` reports it (codex app-server). */
export interface HookRunInfo {
  line: number;
  event: string | null;
  status: string | null;
  run_id: string | null;
  source_path: string | null;
  status_message: string | null;
  /** The run's output entries (kind: warning | stop | feedback | context | error); each text at most ENTRY_TEXT_CAP characters. */
  entries: { kind: string; text: string }[];
}

/** What a captured app-server stream shows of hook runs (null for a rollout). */
export interface HookRunsReport {
  started: number;
  completed: number;
  /** `<eventName>:<status>` → count, over hook/completed. */
  by_event_status: Record<string, number>;
  /** The completed runs that blocked, failed or wrote output entries (first LIST_CAP). */
  runs: HookRunInfo[];
  runs_truncated: number;
}

export interface OutcomeCounts {
  total: number;
  ran: number;
  failed: number;
  blocked: number;
  unknown: number;
  no_output: number;
}

export interface CompactionReport {
  /** 1-based count of this compaction within the file. */
  index: number;
  line: number;
  record_ordinal: number | null;
  timestamp: string | null;
  via: string[];
  turn_id: string | null;
  window_number: number | null;
  window_id: string | null;
  previous_window_id: string | null;
  /** auto | manual, from the store or (app-server) inferred; null when unknown. */
  trigger: string | null;
  trigger_source: 'store' | 'inferred' | null;
  /** local: the compacted message holds the summary; remote: `message: ""`. */
  summary: 'local' | 'remote' | null;
  tool_calls_before: Record<string, number>;
  tool_calls_after: Record<string, number>;
  attempts_after: OutcomeCounts;
}

export type Format = 'rollout' | 'app-server' | 'unknown';
export type Layout = 'paginated' | 'legacy' | null;
export interface WriterInfo {
  cli_version: string | null;
  qualified: boolean;
  allowlist: string[];
  originator: string | null;
  history_mode: string | null;
  source: string | null;
}
export interface SessionInfo {
  session_id: string | null;
  line: number;
  forked_from: string | null;
  cwd: string | null;
}
/** An interval during which the store had the session latched or paused (not allowed to mutate). */
export interface HeldInterval {
  from: string;
  to: string | null;
  state: string;
}
