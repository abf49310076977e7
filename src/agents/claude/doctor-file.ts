// `latch doctor FILE` for a Claude Code transcript ($CLAUDE_CONFIG_DIR/projects/<mangled cwd>/<session>.jsonl),
// in the spirit of the Codex fsck (src/agents/codex/fsck/): what the file holds (sessions, writer
// versions, line types, lines that are not JSON), each compaction (its compact_boundary line and the
// isCompactSummary line after it), the tool calls after each compaction and how they ended (ran, error,
// blocked by a PreToolUse hook: `PreToolUse:<Tool> hook error: …`, and whether the text names Latch),
// the Latch brief pages read (the one page-read rule, src/continuity/page-read.ts, with Claude Code's
// toolOutput) and, when the Latch store knows the session (opened read-only), the cross-check: the
// session's state, the compactions the store saw against the file's, the denials it recorded against
// the calls blocked in the file, the calls that ran while it held the session, and each checkpoint's
// transcript prefix hash against this file.
//
// Exit codes (the Codex doctor's vocabulary): 0 healthy (no ERROR or WARN finding), 1 damage (an ERROR:
// the file is damaged or contradicts Latch's record; or a WARN: something a healthy Claude Code does not
// write), 2 unreadable. Exit 3 (an unqualified writer) does not apply: Latch qualifies no Claude Code
// release (every resume gets the full brief), and the report says so. NOTE findings do not change the exit.
//
// The code is in src/agents/claude/doctor-file/: types.ts (the report and shared constants), sniff.ts (format
// sniffing), read.ts (reading the file: record checks, compactions, tool calls and their results),
// brief-reads.ts, store-check.ts (the store cross-check), analyse.ts (the entry point), render.ts (the text
// summary) and command.ts (the command).
export { doctorClaudeFile } from './doctor-file/analyse.js';
export { claudeTranscriptDoctor } from './doctor-file/command.js';
export { renderClaudeReport } from './doctor-file/render.js';
export { sniffTranscriptFormat } from './doctor-file/sniff.js';
export type {
  BriefReadInfo,
  CallOutcome,
  ClaudeCall,
  ClaudeCompaction,
  ClaudeDoctorExit,
  ClaudeDoctorOptions,
  ClaudeDoctorReport,
  ClaudeFinding,
  ClaudeSeverity,
  ClaudeStoreCheck,
} from './doctor-file/types.js';
