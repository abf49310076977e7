// Claude Code's slow parts (AgentSlow): loaded on first use, bundled into dist/slow.cjs with the guard's.
import type { AgentSlow } from '../agent.js';
import type { QualifyDecision } from '../../continuity/qualify.js';
import { captureFromTranscript } from './capture.js';
import { claudeToolOutput } from './outputs.js';

/**
 * Latch cannot yet prove a Claude Code transcript intact across a resume (no writer allowlist, no
 * append-only record for it): every resume gets the full brief, and the check says why.
 */
export const CLAUDE_RESUME: QualifyDecision = {
  decision: 'full',
  checks: [
    {
      name: 'writer',
      ok: false,
      reason: 'Latch does not qualify Claude Code transcripts for native resume: every resume gets the full brief',
    },
  ],
};

export const claudeSlow: AgentSlow = {
  capture: captureFromTranscript,
  toolOutput: claudeToolOutput,
  qualifyResume: () => ({ decision: CLAUDE_RESUME.decision, checks: CLAUDE_RESUME.checks.map((c) => ({ ...c })) }),
};
