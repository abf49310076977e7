// Codex's slow parts (AgentSlow): loaded on first use, bundled into dist/slow.cjs with the guard's.
import type { AgentSlow } from '../agent.js';
import { captureFromTranscript } from './capture.js';
import { codexToolOutput } from './outputs.js';
import { qualifyResume } from './qualify.js';
import { qualifiedVersions } from './qualification.js';

export const codexSlow: AgentSlow = {
  capture: captureFromTranscript,
  toolOutput: codexToolOutput,
  qualifyResume: (input, latchHome) => qualifyResume({ ...input, qualifiedVersions: qualifiedVersions(latchHome) }),
};
