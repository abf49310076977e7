// The transcript port: what the guard, continuity and the ledger need to know of an agent's own
// record of a session (Codex's rollout, Claude Code's transcript), without knowing its format. Each
// agent implements a TranscriptReader in its folder (src/agents/<name>/); nothing here reads a file.

/** Where an incremental scan stopped, stored per session (records.ts); `group` is the reader's own. */
export interface ScanState {
  offset: number;
  dev: string | null;
  ino: string | null;
  compactions: number;
  /** Reader-specific carry-over between scans (e.g. a compaction whose lines are not all read yet). */
  group: unknown;
}

export const EMPTY_SCAN: ScanState = { offset: 0, dev: null, ino: null, compactions: 0, group: null };

export interface TranscriptCompaction {
  /** 1-based count of this compaction within the transcript. */
  index: number;
  /** Byte offset just past the line that first showed it. */
  endOffset: number;
  /** Which record showed it (the reader's name for it). */
  via: string;
  summaryKind: 'local' | 'remote' | null;
  /**
   * When the agent wrote it (the line's own timestamp, ISO), if the line says; a boundary that lands
   * on a compaction a human already settled trips again unless it was written before that restore.
   */
  at?: string | null;
  /**
   * The agent's own id of the record that showed it, when its format has one that survives a fork
   * (Claude Code copies its parent's latest boundary, uuid unchanged, into a fork's transcript): the
   * same compaction seen in two sessions. Null or absent when the reader has none (Codex).
   */
  boundaryId?: string | null;
  /**
   * The record opens the transcript: nothing but metadata records before it in the file (where a
   * fork's copy of its parent's boundary sits; a compaction of the session itself always follows its
   * conversation). False or absent when unknown.
   */
  atHead?: boolean;
}

export interface SessionMeta {
  id: string | null;
  cliVersion: string | null;
  cwd: string | null;
  /** The session this one was forked from, when the transcript says so. */
  forkedFrom: string | null;
}

/** The identity fields of the session's latest turn (what a resume must match). */
export interface TurnIdentity {
  cwd: string | null;
  model: string | null;
  approval_policy: string | null;
  sandbox_policy: unknown;
  permission_profile: unknown;
}

/** A tool output that carries a Latch brief page, with the compaction count at its position. */
export interface BriefOutput {
  callId: string | null;
  output: string;
  compactionsBefore: number;
  endOffset: number;
}

export interface ScanResult {
  state: ScanState;
  /** The newest turn identity in the bytes read (null if none). */
  turnContext: TurnIdentity | null;
  /** Tool outputs holding `<<<LATCH-BRIEF` page blocks, in file order. */
  briefOutputs: BriefOutput[];
  compactions: TranscriptCompaction[];
  /** Tool call ids whose output was recorded. */
  outputs: string[];
  meta: SessionMeta | null;
  /** The file was replaced or shrank since the last scan; it was rescanned from the start. */
  reset: string | null;
  badLines: number;
  bytesRead: number;
}

/** An agent's transcript, read the way the hot path needs it. */
export interface TranscriptReader {
  /** Scan `path` from `prev.offset` (whole lines only). Throws when the file cannot be read. */
  scan(path: string, prev: ScanState): ScanResult;
  /** The transcript of session `id` near `near` (the same agent's session store), or null. */
  find(near: string, id: string): string | null;
  /**
   * For a fork whose history lives in its parent's transcript: the byte offset in the parent's file
   * where the inherited part ends; null when the whole parent file counts (or the format has none).
   */
  inheritedEnd(path: string): number | null;
}
