// Codex rollout record types (the top-level `type` of each line), one list per meaning.

/** Every top-level type Codex 0.169–0.171 writes (RolloutItem variants, read in the binary): `doctor FILE` knows these. */
export const ROLLOUT_RECORD_TYPES: ReadonlySet<string> = new Set([
  'session_meta',
  'response_item',
  'event_msg',
  'turn_context',
  'compacted',
  'world_state',
  'token_usage_record',
  'dynamic_tools_updated',
  'inter_agent_communication',
  'realtime_item',
]);

/**
 * The types Latch understands well enough to resume natively (docs/codex-notes.md, test/fixtures/rollouts/):
 * a subset of ROLLOUT_RECORD_TYPES. A type Latch only recognises, such as inter_agent_communication,
 * still makes a resume `full`.
 */
export const RESUMABLE_RECORD_TYPES: ReadonlySet<string> = new Set([
  'session_meta',
  'response_item',
  'event_msg',
  'turn_context',
  'compacted',
  'world_state',
  'token_usage_record',
]);
