// Entry point: analyses a Claude Code transcript into a ClaudeDoctorReport.
import { resolve } from 'node:path';
import { errorMessage, isLatchError } from '../../../base/errors.js';
import { checkRead } from './brief-reads.js';
import { Analyser, readLines } from './read.js';
import { crossCheck } from './store-check.js';
import {
  type BriefReadInfo,
  type CallOutcome,
  type ClaudeDoctorExit,
  type ClaudeDoctorReport,
  type ClaudeStoreCheck,
  LIST_CAP,
  QUALIFICATION,
} from './types.js';

/** Analyses a Claude Code transcript. Never throws for a bad file: exit_code 2 says unreadable. */
export function doctorClaudeFile(file: string, opts: { latchHome?: string | null } = {}): ClaudeDoctorReport {
  const path = resolve(file);
  const a = new Analyser();
  let unreadable: string | null = null;
  let store: ClaudeStoreCheck | null = null;
  let reads: BriefReadInfo[] = [];
  try {
    readLines(path, a);
    a.finish();
    if (a.lines === 0) a.f.add('empty_file', 'error', 'the file is empty');
    else if (a.claudeRecords === 0)
      unreadable =
        'not a Claude Code transcript: no line is one of its records (a `sessionId`, or a type Claude Code writes)';
    if (!unreadable) {
      reads = a.reads.map((r) => checkRead(r, null));
      if (opts.latchHome) store = crossCheck(a, path, opts.latchHome, reads, a.reads);
    }
  } catch (err) {
    unreadable = isLatchError(err, 'E_UNREADABLE') ? err.message : `cannot read ${path}: ${errorMessage(err)}`;
  }
  const findings = [...a.f.map.values()];
  const exit: ClaudeDoctorExit =
    unreadable !== null ? 2 : findings.some((f) => f.severity === 'error' || f.severity === 'warning') ? 1 : 0;
  const outcomes: Record<CallOutcome, number> = { ran: 0, error: 0, blocked: 0, no_result: 0 };
  for (const c of a.calls) outcomes[c.outcome]++;
  return {
    schema: 'latch.doctor.claude-transcript/1',
    file: path,
    format: 'claude-transcript',
    bytes: a.bytes,
    lines: a.lines,
    ok: exit === 0,
    exit_code: exit,
    unreadable,
    qualification: { applies: false, detail: QUALIFICATION },
    sessions: [...a.sessions.values()],
    writer: { versions: Object.fromEntries(a.versions) },
    records: Object.fromEntries(a.records),
    system_subtypes: Object.fromEntries(a.subtypes),
    bad_lines: a.bad,
    bad_lines_truncated: a.badDropped,
    truncated_last_line: a.truncated,
    compactions: a.compactions,
    tool_calls: {
      total: a.calls.length,
      by_name: Object.fromEntries(a.toolNames),
      outcomes,
      blocked: a.calls.filter((c) => c.outcome === 'blocked').slice(0, LIST_CAP),
    },
    brief_reads: reads,
    store,
    findings,
  };
}
