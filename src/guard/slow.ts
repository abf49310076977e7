// The parts of the guard that only a trip (checkpoint) or a session's first sight needs. The hook
// bundle loads this module lazily (dist/slow.cjs), so an ordinary PreToolUse pays nothing for git,
// hashing, zlib or the TOML parser.
export { checkpointRow, collectEvidence, hashPrefix, insertCheckpoint } from '../checkpoint/checkpoint.js';
export { resolvePolicy } from '../session/policy.js';
export { workspaceRoot } from '../base/git.js';
export { observeWorkspace } from '../ledger/observe.js';
export {
  captureBrief,
  deliveryText,
  evidenceRelease,
  qualify,
  recordReads,
  recordTranscript,
} from '../continuity/continuity.js';
