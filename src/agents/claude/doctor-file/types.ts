// The report's types and the constants the Claude transcript doctor shares (src/agents/claude/doctor-file.ts).
import type { FileFinding } from '../../shared/file-doctor.js';
export type ClaudeSeverity = 'error' | 'warning' | 'notice';
export type ClaudeDoctorExit = 0 | 1 | 2;

/** A finding (its lines: at most LIST_CAP). */
export type ClaudeFinding = FileFinding<ClaudeSeverity>;

export type CallOutcome = 'ran' | 'error' | 'blocked' | 'no_result';

export interface ClaudeCall {
  /** The assistant line holding the tool_use. */
  line: number;
  /** The user line holding its tool_result (null: none in the file). */
  result_line: number | null;
  id: string | null;
  tool: string;
  /** Latch's classification (src/agents/claude/tools.ts): shell | patch | mcp | agent | unknown, null = read-only tool. */
  kind: string | null;
  summary: string;
  timestamp: string | null;
  /** compact_boundary lines before it in the file. */
  compaction: number;
  outcome: CallOutcome;
  /** The error or the hook's reason (first line, clipped). */
  detail: string | null;
  exit_code: number | null;
  /** For a blocked call: which hook, whether its text names Latch, and whether Latch records such a block (a fail-closed crash or a touch of Latch's own files is denied without a store record). */
  blocked: { hook: string; names_latch: boolean; unrecorded: boolean } | null;
}

export interface ClaudeCompaction {
  index: number;
  line: number;
  session_id: string | null;
  uuid: string | null;
  timestamp: string | null;
  trigger: string | null;
  pre_tokens: number | null;
  post_tokens: number | null;
  /** The isCompactSummary user line after it (null: none before the next boundary or the end). */
  summary_line: number | null;
  /** The tool calls from this boundary to the next one. */
  calls_after: ClaudeCall[];
  calls_after_truncated: number;
}

export interface BriefReadInfo {
  line: number;
  call_id: string | null;
  /** What the page block says of itself (null: no complete header). */
  session: string | null;
  version: number | null;
  page: number | null;
  total: number | null;
  ok: boolean;
  reasons: string[];
  /** store: against the Latch brief version the store checked it with; page: only against its own header (no brief to compare). */
  checked_against: 'store' | 'page';
  /** What the store recorded for this read (null: no record). */
  store_ok: boolean | null;
}

export interface ClaudeStoreCheck {
  home: string;
  status: 'not_found' | 'unreadable' | 'session_unknown' | 'checked';
  detail: string;
  session_id: string | null;
  agent?: string;
  policy?: string;
  state?: string;
  state_reason?: string | null;
  transcript_path?: string | null;
  compactions?: {
    seq: number;
    trigger: string | null;
    observed_via: string[];
    checkpoint_id: string | null;
    tripped_at: string | null;
    in_file: boolean;
  }[];
  checkpoints?: {
    id: string;
    compaction_seq: number;
    transcript_path: string | null;
    transcript_size: number | null;
    transcript_sha256: string | null;
    prefix_now_sha256: string | null;
    prefix: 'same' | 'rewritten' | 'shorter' | 'not_recorded';
  }[];
  held_intervals?: { from: string; to: string | null; state: string }[];
  denials?: {
    store: number;
    blocked_by_latch_in_file: number;
    blocked_by_other_hooks_in_file: number;
    missing_in_file: string[];
    missing_in_store: string[];
    in_subagent_transcripts: string[];
  };
  attempts_recorded?: number;
  brief_reads_recorded?: number;
}

export interface ClaudeDoctorReport {
  schema: 'latch.doctor.claude-transcript/1';
  file: string;
  format: 'claude-transcript';
  bytes: number;
  lines: number;
  ok: boolean;
  /** 0 healthy, 1 damage (an ERROR or WARN finding), 2 unreadable. Never 3: see qualification. */
  exit_code: ClaudeDoctorExit;
  unreadable: string | null;
  qualification: { applies: false; detail: string };
  sessions: { session_id: string; first_line: number; last_line: number; lines: number }[];
  /** Claude Code versions (the lines' `version`) and how many lines each wrote. */
  writer: { versions: Record<string, number> };
  /** Lines by `type`; system lines also by subtype. */
  records: Record<string, number>;
  system_subtypes: Record<string, number>;
  bad_lines: { line: number; bytes: number; why: string }[];
  bad_lines_truncated: number;
  truncated_last_line: { line: number; bytes: number } | null;
  compactions: ClaudeCompaction[];
  tool_calls: {
    total: number;
    by_name: Record<string, number>;
    outcomes: Record<CallOutcome, number>;
    /** Every call a hook blocked, before or after a compaction. */
    blocked: ClaudeCall[];
  };
  brief_reads: BriefReadInfo[];
  store: ClaudeStoreCheck | null;
  findings: ClaudeFinding[];
}

export interface ClaudeDoctorOptions {
  file: string;
  json?: boolean;
  /** $LATCH_HOME for the store cross-check (default: the io's); null skips it. */
  latchHome?: string | null;
}

export const LIST_CAP = 50;
export const CHUNK = 1 << 20;
export const QUALIFICATION =
  'Latch does not qualify Claude Code releases (native resume is never used for Claude Code: every resume gets the full brief), so exit 3 does not apply';

/** The line types Claude Code 2.1.332 writes (others are tolerated, noted). */
export const KNOWN_TYPES: ReadonlySet<string> = new Set([
  'user',
  'assistant',
  'attachment',
  'system',
  'queue-operation',
  'last-prompt',
  'atis-latch',
  'api-request',
  'api-request-shape',
  'api-request-blob',
  'tools-used',
  'cost-state',
  'mode',
  // written by earlier releases
  'summary',
  'file-history-snapshot',
  'progress',
  'custom-title',
]);
