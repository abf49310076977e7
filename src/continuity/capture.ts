// What an agent's transcript says about the task, as the brief needs it. Each agent captures it from its
// own format (AgentSlow.capture, e.g. src/agents/codex/capture.ts); the brief (brief.ts autoContent)
// turns it into the brief's content.

export interface PlanStep {
  step: string;
  status: string;
}

export interface TranscriptCapture {
  sessionId: string | null;
  cwd: string | null;
  forkedFrom: string | null;
  /** The user's own requests, oldest first: the first one and the latest MAX_REQUESTS - 1. */
  requests: string[];
  requestCount: number;
  plan: { explanation: string | null; steps: PlanStep[] } | null;
  goal: { objective: string; status: string | null } | null;
  lastAssistant: string | null;
  /** Lines longer than maxLineBytes that were skipped unread. */
  skippedLines: number;
  badLines: number;
}

export interface CaptureOptions {
  /** Lines longer than this are skipped (default 8 MiB). */
  maxLineBytes?: number;
  /** Follow a fork into the parent transcript its history comes from (default true). */
  followParent?: boolean;
  /** Finds a thread's rollout; default: search the `sessions` tree the transcript lives in. */
  resolveRollout?: (threadId: string) => string | null;
}

/** A capture of nothing (no transcript): the brief then holds the ledger's facts only. */
export function emptyCapture(): TranscriptCapture {
  return {
    sessionId: null,
    cwd: null,
    forkedFrom: null,
    requests: [],
    requestCount: 0,
    plan: null,
    goal: null,
    lastAssistant: null,
    skippedLines: 0,
    badLines: 0,
  };
}
