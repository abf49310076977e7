// Native-resume qualification, as the core sees it: what is recorded and checked, and the decision
// with every check's reason. An agent that can prove a resume intact implements AgentSlow.qualifyResume
// (Codex: src/agents/codex/qualify.ts); one that cannot always answers `full`.
import type { ToolOutput } from '../agents/agent.js';
import type { BriefDigest } from './page-read.js';

export interface RecordedTranscript {
  path: string;
  realpath: string;
  dev: string;
  ino: string;
  uid: number;
  size: number;
  /** SHA-256 (hex) of bytes [0, size). */
  sha256: string;
}

export interface Identity {
  session_id: string;
  cwd: string;
  model: string | null;
  approval_policy: string | null;
  sandbox_policy: unknown;
  permission_profile: unknown;
}

export interface QualifyInput {
  /** transcript_path of the resuming hook payload. */
  transcriptPath: string;
  /** What Latch recorded earlier (null: never recorded → full). */
  recorded: RecordedTranscript | null;
  /** Latch's record of the session (from the latest turn identity Latch saw). */
  expected: Identity;
  payload: { session_id: string; cwd: string; model: string | null; permission_mode: string | null };
  /**
   * Exact allowlist of the writer versions the transcript may name (no ranges): the versions with a passing
   * qualification record (src/agents/codex/qualification.ts), e.g. qualifiedVersionsOfStore(db).
   */
  qualifiedVersions: readonly string[];
  currentBrief: BriefDigest | null;
  /** Byte offset just past the session's latest compaction in this transcript (null: none known). */
  lastCompactionOffset: number | null;
}

export interface QualifyCheck {
  name: string;
  ok: boolean;
  reason: string;
}

export interface QualifyDecision {
  decision: 'native' | 'full';
  checks: QualifyCheck[];
}

export interface QualifyOptions {
  /** The current user's uid (default: process.getuid()). Injectable so tests running as root can fail it. */
  uid?: number;
  /** How a tool output is unwrapped (default: the agent's own rule, AgentSlow.toolOutput). */
  toolOutput?: (output: string) => ToolOutput;
  /** Read size in bytes (default 1 MiB). */
  chunkSize?: number;
}

/** Check names, in report order. */
export const QUALIFY_CHECKS = ['file', 'identity', 'writer', 'append-only', 'tail', 'complete-read', 'fork'] as const;
export type QualifyCheckName = (typeof QUALIFY_CHECKS)[number];
