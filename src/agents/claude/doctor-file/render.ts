// Rendering: the human-readable summary of a ClaudeDoctorReport.
import { renderFindings } from '../../shared/file-doctor.js';
import { clip } from './read.js';
import type { ClaudeCall, ClaudeDoctorReport } from './types.js';

function hist(r: Record<string, number>, max = 12): string {
  const e = Object.entries(r);
  if (e.length === 0) return 'none';
  const shown = e.slice(0, max).map(([k, v]) => `${k} ${v}`);
  return shown.join(', ') + (e.length > max ? `, … (${e.length - max} more)` : '');
}

function outcomeText(c: ClaudeCall): string {
  switch (c.outcome) {
    case 'ran':
      return 'ran';
    case 'error':
      return `error${c.detail ? `: ${c.detail}` : ''}`;
    case 'blocked':
      return `BLOCKED by a ${c.blocked?.hook ?? 'PreToolUse'} hook${c.blocked?.names_latch ? ' (Latch)' : ' (not Latch)'}: ${c.detail ?? ''}`;
    default:
      return 'no result in the file';
  }
}

const short = (h: string | null | undefined) => (h ? `${h.slice(0, 12)}…` : '(none)');

/** The human-readable summary. */
export function renderClaudeReport(r: ClaudeDoctorReport): string {
  const out: string[] = [];
  out.push(r.file);
  out.push(`  Claude Code transcript: ${r.lines} lines, ${r.bytes} bytes`);
  if (r.unreadable) {
    out.push(`  UNREADABLE: ${r.unreadable}`);
    if (r.lines === 0) return out.join('\n') + '\n';
  }
  const versions = Object.keys(r.writer.versions);
  out.push(
    `  writer: ${versions.length ? `Claude Code ${versions.join(', ')}` : 'unknown version'} — not qualified: ${r.qualification.detail}`,
  );
  for (const s of r.sessions.slice(0, 5))
    out.push(`  session ${s.session_id} (lines ${s.first_line}..${s.last_line}, ${s.lines} lines)`);
  if (r.sessions.length > 5) out.push(`  … ${r.sessions.length - 5} more sessions`);
  if (r.sessions.length === 0) out.push('  session: no line names one');
  out.push(`  records: ${hist(r.records)}`);
  if (Object.keys(r.system_subtypes).length) out.push(`  system lines: ${hist(r.system_subtypes)}`);
  if (r.bad_lines.length) {
    out.push(`  BAD lines (not JSON objects): ${r.bad_lines.length + r.bad_lines_truncated}`);
    for (const b of r.bad_lines.slice(0, 10)) out.push(`    line ${b.line} (${b.bytes} bytes): ${b.why}`);
  }
  const t = r.tool_calls;
  out.push(
    `  tool calls: ${t.total}${t.total ? ` (${hist(t.by_name)})` : ''}; ran ${t.outcomes.ran}, error ${t.outcomes.error}, blocked by a hook ${t.outcomes.blocked}${t.outcomes.no_result ? `, no result ${t.outcomes.no_result}` : ''}`,
  );
  out.push(`  compactions: ${r.compactions.length}`);
  for (const c of r.compactions) {
    out.push(
      `    #${c.index} at line ${c.line}: trigger ${c.trigger ?? 'unknown'}, preTokens ${c.pre_tokens ?? '?'}, uuid ${c.uuid ?? '(none)'}; summary ${c.summary_line !== null ? `at line ${c.summary_line}` : 'MISSING'}`,
    );
    const n = c.calls_after.length + c.calls_after_truncated;
    out.push(`       tool calls after it: ${n === 0 ? 'none' : n}`);
    for (const x of c.calls_after.slice(0, 20))
      out.push(`       line ${x.line} ${x.tool}: ${x.summary} → ${clip(outcomeText(x), 160)}`);
    if (n > 20) out.push(`       … ${n - 20} more (see --json)`);
  }
  const early = t.blocked.filter((c) => c.compaction === 0);
  if (early.length) {
    out.push(`  blocked before any compaction: ${early.length}`);
    for (const x of early.slice(0, 10))
      out.push(`    line ${x.line} ${x.tool}: ${x.summary} → ${clip(outcomeText(x), 160)}`);
  }
  if (r.brief_reads.length) {
    out.push(`  Latch brief page reads: ${r.brief_reads.length}`);
    for (const b of r.brief_reads.slice(0, 10)) {
      const what =
        b.page !== null
          ? `page ${b.page}/${b.total ?? '?'} of session ${b.session ?? '?'} version ${b.version ?? '?'}`
          : 'no page';
      const against = b.checked_against === 'store' ? 'against the store’s brief' : 'against its own header';
      out.push(
        `    line ${b.line} ${b.call_id ?? ''}: ${what} — ${b.ok ? 'complete' : `NOT complete (${b.reasons.join('; ')})`} (${against}${b.store_ok !== null ? `; store: ${b.store_ok ? 'complete' : b.checked_against === 'page' ? 'not complete: no brief recorded then' : 'not complete'}` : ''})`,
      );
    }
  }
  const st = r.store;
  if (st) {
    out.push(
      `  Latch store ${st.home}: ${st.status === 'checked' ? st.detail : `${st.status.replace('_', ' ')}${st.detail ? ` (${st.detail})` : ''}`}`,
    );
    if (st.status === 'checked') {
      out.push(
        `    agent ${st.agent}, policy ${st.policy}, state now ${st.state}${st.state_reason ? ` (${st.state_reason})` : ''}; ${st.attempts_recorded} attempt(s), ${st.brief_reads_recorded} brief read(s) recorded`,
      );
      for (const c of st.compactions ?? [])
        out.push(
          `    compaction #${c.seq}: checkpoint ${c.checkpoint_id ?? 'NONE'}, ${c.tripped_at ? `tripped ${c.tripped_at}` : 'NOT tripped'}, via ${c.observed_via.join(' + ')}${c.in_file ? '' : ' — NOT in the file'}`,
        );
      for (const c of st.checkpoints ?? [])
        out.push(
          `    checkpoint ${c.id}: transcript prefix ${c.transcript_size ?? '?'} bytes ${short(c.transcript_sha256)}: ${c.prefix === 'rewritten' ? 'REWRITTEN' : c.prefix === 'shorter' ? 'the file is SHORTER' : c.prefix}`,
        );
      for (const h of st.held_intervals ?? []) out.push(`    ${h.state} from ${h.from} to ${h.to ?? 'now'}`);
      const d = st.denials;
      if (d) {
        out.push(
          `    denials: ${d.store} in the store; ${d.blocked_by_latch_in_file} call(s) blocked by Latch in the file${d.blocked_by_other_hooks_in_file ? `, ${d.blocked_by_other_hooks_in_file} by other hooks` : ''}`,
        );
        if (d.missing_in_file.length)
          out.push(`      denied but not blocked in the file: ${d.missing_in_file.join(', ')}`);
        if (d.missing_in_store.length)
          out.push(`      blocked in the file without a denial: ${d.missing_in_store.join(', ')}`);
        if (d.in_subagent_transcripts.length)
          out.push(`      in sub-agent transcripts: ${d.in_subagent_transcripts.join(', ')}`);
      }
    }
  }
  renderFindings(out, r.findings, r.unreadable);
  if (r.exit_code === 1) out.push('  verdict: damaged or inconsistent (exit 1)');
  if (r.truncated_last_line)
    out.push(`  truncated last line: line ${r.truncated_last_line.line} (${r.truncated_last_line.bytes} bytes)`);
  return out.join('\n') + '\n';
}
