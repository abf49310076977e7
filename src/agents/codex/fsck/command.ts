// `latch doctor FILE [--json]`: fsck for a Codex rollout (plain or .jsonl.zst) or a captured
// `codex app-server` stream. Exit codes (src/agents/codex/qualification-doctor.ts): 0 healthy, 1 damage (an
// ERROR or WARN finding), 2 unreadable, 3 healthy but written by a Codex release Latch has not
// qualified (NOTE findings only: age, not damage).
import { statSync } from 'node:fs';
import { fsckFile, type FsckReport, type OutcomeCounts } from './fsck.js';
import { homeOf, json, type Io } from '../../../kit/io.js';
import { renderFindings } from '../../shared/file-doctor.js';

export interface TranscriptDoctorOptions {
  file: string;
  json?: boolean;
  /** JSON.parse every line (slower; the default frames every line and parses only what it needs). */
  full?: boolean;
  /** Override $LATCH_HOME for the store cross-check; null skips the cross-check. */
  latchHome?: string | null;
  /** Show a progress line on stderr. Default: stderr is a TTY and the file is at least 256 MiB. */
  progress?: boolean;
}

const LARGE = 256 << 20;

export async function transcriptDoctor(io: Io, opts: TranscriptDoctorOptions): Promise<number> {
  const latchHome = opts.latchHome === undefined ? homeOf(io) : opts.latchHome;
  let size = 0;
  try {
    size = statSync(opts.file).size;
  } catch {
    /* reported by fsckFile */
  }
  const progress = opts.progress ?? (Boolean(process.stderr.isTTY) && size >= LARGE);
  const started = Date.now();
  let shown = false;
  const report = await fsckFile(opts.file, {
    latchHome,
    full: opts.full,
    onProgress: progress
      ? (done, total) => {
          shown = true;
          const pct = total > 0 ? Math.floor((done / total) * 100) : 0;
          const secs = (Date.now() - started) / 1000;
          io.err(`\rlatch doctor: ${mib(done)} / ${mib(total)} (${pct}%), ${secs.toFixed(1)} s`);
        }
      : undefined,
  });
  if (shown) io.err('\r\x1b[K');
  if (opts.json) json(io, report);
  else io.out(render(report));
  if (report.unreadable && !opts.json) io.err(`latch doctor: ${report.unreadable}\n`);
  return report.exit_code;
}

function mib(n: number): string {
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : `${(n / (1 << 20)).toFixed(0)} MiB`;
}

function hist(r: Record<string, number>, max = 12): string {
  const e = Object.entries(r);
  if (e.length === 0) return 'none';
  const shown = e.slice(0, max).map(([k, v]) => `${k} ${v}`);
  return shown.join(', ') + (e.length > max ? `, … (${e.length - max} more)` : '');
}

function outcomes(c: OutcomeCounts): string {
  const parts = [`ran ${c.ran}`, `blocked ${c.blocked}`, `failed ${c.failed}`];
  if (c.unknown) parts.push(`unknown ${c.unknown}`);
  if (c.no_output) parts.push(`no output ${c.no_output}`);
  return `${c.total} (${parts.join(', ')})`;
}

const short = (h: string | null | undefined) => (h ? `${h.slice(0, 12)}…` : '(none)');

/** The human-readable summary. */
export function render(r: FsckReport): string {
  const out: string[] = [];
  const what =
    r.format === 'rollout'
      ? `Codex rollout, ${r.layout} layout`
      : r.format === 'app-server'
        ? 'codex app-server JSON-RPC stream'
        : 'unrecognised content';
  out.push(`${r.file}`);
  out.push(`  ${what}${r.compression ? `, ${r.compression}-compressed` : ''}: ${r.lines} lines, ${r.bytes} bytes`);
  if (r.unreadable) {
    out.push(`  UNREADABLE: ${r.unreadable}`);
    if (r.lines === 0) return out.join('\n') + '\n';
  }
  const w = r.writer;
  out.push(
    `  writer: ${w.cli_version ? `Codex ${w.cli_version}` : 'unknown version'} — ${w.qualified ? 'qualified by Latch' : `NOT qualified (Latch qualifies ${w.allowlist.join(', ') || 'no release'}; \`latch qualify codex${w.cli_version ? ` ${w.cli_version}` : ''}\`)`}` +
      (w.originator ? `; originator ${w.originator}` : '') +
      (w.history_mode ? `; history ${w.history_mode}` : ''),
  );
  for (const s of r.sessions.slice(0, 5))
    out.push(
      `  session ${s.session_id ?? '(no id)'} (line ${s.line})${s.forked_from ? `, forked from ${s.forked_from}` : ''}${s.cwd ? `, cwd ${s.cwd}` : ''}`,
    );
  if (r.sessions.length === 0 && r.format === 'rollout') out.push('  session: no session_meta');
  out.push(`  turns: ${r.turns.count}${r.ordinals ? `; ordinals ${r.ordinals.first}..${r.ordinals.last}` : ''}`);
  out.push(`  records: ${hist(r.records)}`);
  if (r.unknown_types.length)
    out.push(
      `  UNKNOWN types: ${r.unknown_types.map((u) => `${u.type} ×${u.count} (first at line ${u.first_line})`).join(', ')}`,
    );
  out.push(
    `  tool calls: ${r.tool_calls.total}${r.tool_calls.total ? ` (${hist(r.tool_calls.by_name)})` : ''}; ${r.hook_runs ? 'calls' : 'outputs'} blocked by a hook: ${r.hook_blocked_outputs}`,
  );
  if (r.hook_runs)
    out.push(
      `  hook runs: ${r.hook_runs.started} started, ${r.hook_runs.completed} completed (${hist(r.hook_runs.by_event_status)})`,
    );
  out.push(`  compactions: ${r.compactions.length}`);
  for (const c of r.compactions) {
    const where = `line ${c.line}${c.record_ordinal !== null ? `, ordinal ${c.record_ordinal}` : ''}`;
    const win =
      c.window_number !== null ? `window ${c.window_number}${c.window_id ? ` (${c.window_id})` : ''}` : 'window ?';
    const trig = c.trigger
      ? `trigger ${c.trigger}${c.trigger_source === 'inferred' ? ' (inferred)' : ''}`
      : 'trigger unknown';
    out.push(
      `    #${c.index} at ${where}: ${win}, ${trig}, summary ${c.summary ?? 'unknown'}, via ${c.via.join(' + ')}`,
    );
    out.push(`       tool calls before: ${hist(c.tool_calls_before, 6)}; after: ${hist(c.tool_calls_after, 6)}`);
    out.push(`       mutation attempts after: ${outcomes(c.attempts_after)}`);
  }
  const at = r.attempts_after_compaction;
  if (at.total > 0) {
    out.push(
      `  mutation attempts after a compaction: ${outcomes(at)}; read-only shell among those listed: ${at.read_only_listed}`,
    );
    for (const x of at.list.slice(0, 20)) {
      const res =
        x.outcome === 'blocked'
          ? `BLOCKED by hook: ${x.detail ?? ''}`
          : x.outcome === 'ran'
            ? `ran${x.exit_code !== null ? ` (exit ${x.exit_code})` : ''}`
            : x.outcome === 'failed'
              ? `failed${x.detail ? `: ${x.detail}` : ''}`
              : x.outcome === 'no_output'
                ? 'no output recorded'
                : `unknown${x.detail ? `: ${x.detail}` : ''}`;
      out.push(
        `    line ${x.line} [#${x.compaction}] ${x.tool}: ${x.summary}${x.read_only ? ' (read-only)' : ''} → ${res.slice(0, 140)}`,
      );
    }
    if (at.list.length > 20 || at.list_truncated)
      out.push(`    … ${at.list.length - 20 + at.list_truncated} more (see --json)`);
  }
  const st = r.store;
  if (st) {
    out.push(
      `  Latch store ${st.home}: ${st.status === 'checked' ? st.detail : `${st.status.replace('_', ' ')}${st.detail ? ` (${st.detail})` : ''}`}`,
    );
    if (st.status === 'checked') {
      out.push(`    policy ${st.policy}, state now ${st.state}; ${st.attempts_recorded} attempt(s) recorded`);
      for (const c of st.compactions ?? []) {
        out.push(
          `    compaction #${c.seq}: checkpoint ${c.checkpoint_id ?? 'NONE'}, ${c.tripped_at ? `tripped ${c.tripped_at}` : 'NOT tripped'}, via ${c.observed_via.join(' + ')}${c.in_transcript ? '' : ' — NOT in the file'}`,
        );
      }
      for (const c of st.checkpoints ?? []) {
        const of =
          r.format !== 'app-server'
            ? ''
            : c.compared_file
              ? ` (of ${c.compared_file})`
              : ' (its transcript is not there to check; the stream is not that file)';
        out.push(
          `    checkpoint ${c.id}: tree ${short(c.tree_sha256)} (${c.tree_files} files); transcript prefix ${c.transcript_size ?? '?'} bytes: ${c.prefix === 'rewritten' ? 'REWRITTEN' : c.prefix}${of}`,
        );
      }
      for (const v of st.verifies ?? []) {
        const same = v.baseline_tree_sha256 === v.current_tree_sha256;
        out.push(
          `    verify ${v.at}: tree at checkpoint ${short(v.checkpoint_tree_sha256 ?? v.baseline_tree_sha256)}, at verify ${short(v.current_tree_sha256)} (${same ? 'unchanged' : v.accepted_changes ? 'changed, accepted' : 'CHANGED'})`,
        );
      }
      for (const h of st.held_intervals ?? []) out.push(`    ${h.state} from ${h.from} to ${h.to ?? 'now'}`);
      const win = st.stream_window;
      if (win && (win.denials_outside > 0 || win.compactions_before > 0)) {
        out.push(
          `    the stream covers ${win.from} to ${win.to}: ${win.denials_outside} denial(s) and ${win.compactions_before} compaction(s) recorded before or after it are not compared with it`,
        );
      }
      const d = st.denials;
      if (d) {
        out.push(
          `    denials: ${d.store} in the store; ${d.transcript_blocked_by_latch} call(s) blocked by Latch in the file${d.transcript_blocked_other ? `, ${d.transcript_blocked_other} by other hooks` : ''}`,
        );
        if (d.missing_in_transcript.length)
          out.push(`      denied but not blocked in the file: ${d.missing_in_transcript.join(', ')}`);
        if (d.missing_in_store.length)
          out.push(`      blocked in the file without a denial: ${d.missing_in_store.join(', ')}`);
      }
    }
  }
  renderFindings(out, r.findings, r.unreadable);
  if (r.exit_code === 3)
    out.push(
      `  verdict: no damage found; exit 3 because Codex ${r.writer.cli_version ?? '(unknown version)'} is not qualified by Latch (age, not damage)`,
    );
  else if (r.exit_code === 1) out.push('  verdict: damaged or inconsistent (exit 1)');
  if (r.truncated_last_line)
    out.push(`  truncated last line: line ${r.truncated_last_line.line} (${r.truncated_last_line.bytes} bytes)`);
  return out.join('\n') + '\n';
}
