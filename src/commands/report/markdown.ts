// `latch report --markdown`: the story of the sessions, short enough for a pull-request comment: a
// three-line summary (compactions, writes blocked and writes that ran while latched, verifications),
// the attempts on Latch itself, the blocked calls grouped by reason (each reason's text once), the
// writes that ran (when: before the trip, while latched, after verification) apart from the reads,
// then the evidence tables. Long lists are capped ("…and N more"; the HTML and --json have them all).
// Every record-derived string goes through mdText (free text) or mdCode (identifiers, paths, commands).
import type { LogEntry } from '../shared/timeline.js';
import {
  agentLabel,
  callText,
  capped,
  distinct,
  fileSummaries,
  overallState,
  phaseLabel,
  readCounts,
  readLabel,
  selfProtectionDenials,
  short,
  transitionSummary,
  verifyEvidence,
  type ReportData,
} from './data.js';

/** Rows of a list or table shown before "…and N more". */
export const MD_LIST_CAP = 10;
/** Rows of an evidence table (sessions, compactions, transitions, files) shown before "…and N more". */
export const MD_TABLE_CAP = 20;

/** Free text in a table cell: every Markdown/HTML-significant character backslash-escaped. */
export function mdText(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value)
    .replace(/\r\n?|\n/g, ' ')
    .replace(/[\\`*_[\]<>|~&]/g, (c) => '\\' + c);
}

/**
 * An identifier, path or command: a code span (longer fence than any backtick run). In a table cell
 * (the default) its pipes are escaped for the table; elsewhere they stay as they are, since a code
 * span shows a backslash literally.
 */
export function mdCode(value: string | null | undefined, inTable = true): string {
  if (value === null || value === undefined || value === '') return '-';
  const flat = value.replace(/\r\n?|\n/g, ' ');
  const text = inTable ? flat.replace(/\|/g, '\\|') : flat;
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad =
    text.startsWith('`') || text.endsWith('`') || (text.startsWith(' ') && text.endsWith(' ') && text.trim() !== '')
      ? ' '
      : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function mdTable(head: string[], rows: string[][], more = 0, what = 'rows'): string {
  if (rows.length === 0) return '_None recorded._\n';
  return (
    [
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n') +
    '\n' +
    (more > 0 ? `\n${andMore(more, what)}\n` : '')
  );
}

const andMore = (n: number, what: string) =>
  `_…and ${n} more ${what} (the HTML report and \`--json\` list every one)._`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The three summary lines: compactions, writes, verifications. */
function summaryLines(d: ReportData): string[] {
  const s = d.summary;
  const heldNow =
    s.held_sessions.length === 0
      ? 'no session is latched now'
      : `latched now: ${s.held_sessions.map((h) => `${mdCode(h.session_id, false)}${h.state === 'latched' ? '' : ` (${mdText(h.state)})`}`).join(', ')}`;
  const compactions = `- **Compactions:** ${s.compactions === 0 ? 'none' : `${s.compactions}, ${plural(s.trips, 'trip')}`}; ${heldNow}.`;
  const whileLatched =
    s.writes_while_latched === 0
      ? 'ran while latched: none.'
      : `**WARNING: ${plural(s.writes_while_latched, 'write')} ran while latched** (see Writes that ran).`;
  const writes = `- **Writes:** ${s.writes_blocked} blocked, ${s.writes} ran; ${whileLatched}`;
  const shown = capped(s.verified, 3);
  const each = shown.shown.map(
    (v) =>
      `${mdCode(v.session_id, false)} ${v.how === 'evidence' ? 'by evidence (every brief page read)' : `by ${mdCode(v.confirmed_by ?? '?', false)}`} at ${mdText(v.at)}${v.tree_unchanged === null ? '' : v.tree_unchanged ? ', tree unchanged' : ', tree changed'}${v.accepted_changes ? ', changes accepted' : ''}`,
  );
  if (shown.more > 0) each.push(`and ${shown.more} more`);
  const resumes = s.resumes > 0 ? `; ${plural(s.resumes, 'resume')}` : '';
  const verifications = `- **Verifications:** ${s.verifications === 0 ? 'none' : `${s.verifications}: ${each.join('; ')}`}${resumes}.`;
  return [compactions, writes, verifications];
}

export function renderMarkdown(d: ReportData): string {
  const out: string[] = [];
  out.push('## Latch evidence summary\n');
  out.push(`${summaryLines(d).join('\n')}\n`);
  out.push(
    `Workspace ${mdCode(d.workspace, false)}${d.selected ? `, session(s) ${d.selected.map((x) => mdCode(x, false)).join(', ')}` : ''}. Agent: ${mdText(distinct(d.agents.map(agentLabel)))}. Current state: ${mdText(overallState(d))}. Generated ${mdText(d.generated_at)} by Latch ${mdText(d.version)}.\n`,
  );

  // First: what the agent tried against Latch itself (none is the usual case, and then nothing is shown).
  const self = selfProtectionDenials(d);
  if (self.length > 0) {
    const list = capped(self, MD_LIST_CAP);
    out.push(`### Attempts on Latch itself (${self.length}, all denied)\n`);
    out.push(
      mdTable(
        ['Session', 'When', 'Call'],
        list.shown.map((e) => [mdCode(e.session_id), mdText(e.at), mdCode(callText(e.tool, e.summary) ?? e.tool)]),
        list.more,
        'attempts',
      ),
    );
  }

  // The blocked calls, by reason: each reason's text once, the calls it blocked under it.
  if (d.blocked.length > 0) {
    out.push(`### Blocked calls (${d.summary.writes_blocked}), by reason\n`);
    for (const g of d.blocked) {
      const codes = g.reasons.map((r) => mdCode(r.code, false)).join(' + ');
      const text = g.reasons.map((r) => mdText(r.message)).join(' ');
      out.push(
        `**${codes}**, ${plural(g.count, 'call')} (session${g.sessions.length === 1 ? '' : 's'} ${g.sessions.map((x) => mdCode(x, false)).join(', ')}): ${text}\n`,
      );
      // The agent's attempts on Latch itself are listed first, above: their reason is enough here.
      if (self.length > 0 && g.reasons.every((r) => r.code === 'touches_latch')) {
        out.push('- (the calls: under Attempts on Latch itself, above)\n');
        continue;
      }
      const list = capped(g.calls, MD_LIST_CAP);
      out.push(
        list.shown
          .map(
            (c) =>
              `- ${mdCode(callText(c.tool, c.summary) ?? c.tool, false)} (${mdText(c.tool)}, ${mdText(c.at)})${c.detail.length > 0 ? `: ${mdText(c.detail.map((r) => r.message).join(' '))}` : ''}`,
          )
          .join('\n') +
          (list.more > 0 ? `\n- ${andMore(list.more, 'calls')}` : '') +
          '\n',
      );
    }
  }

  // The writes that ran, each placed in its session's story; one that ran while latched is an alarm.
  out.push(`### Writes that ran (${d.writes.length})\n`);
  const writes = capped(d.writes, MD_LIST_CAP, (w) => w.phase === 'while_latched');
  out.push(
    mdTable(
      ['Session', 'When', 'Ran', 'Tool', 'Call', 'Files changed'],
      writes.shown.map((w) => {
        const files = capped(w.files, 3);
        return [
          mdCode(w.session_id),
          mdText(w.at),
          w.phase === 'while_latched' ? `**WARNING: ${mdText(phaseLabel(w))}**` : mdText(phaseLabel(w)),
          mdText(w.tool),
          mdCode(callText(w.tool, w.summary) ?? w.tool),
          w.files.length === 0
            ? 'none'
            : files.shown.map((f) => mdCode(f)).join(', ') + (files.more > 0 ? ` and ${files.more} more` : ''),
        ];
      }),
      writes.more,
      'writes',
    ),
  );

  // The reads, apart: counted by how each is known to be one; the held and brief reads listed.
  out.push(`### Reads (${d.reads.length}, read-only inspection)\n`);
  if (d.reads.length === 0) out.push('_None recorded._\n');
  else {
    out.push(`${mdText(readCounts(d.reads))}.\n`);
    const notable = d.reads.filter((r) => r.how !== 'read_only');
    if (notable.length > 0) {
      const list = capped(notable, MD_LIST_CAP);
      out.push(
        list.shown
          .map(
            (r) =>
              `- ${mdCode(callText(r.tool, r.summary) ?? r.tool, false)} (${mdText(readLabel(r))}, ${mdText(r.at)})`,
          )
          .join('\n') +
          (list.more > 0 ? `\n- ${andMore(list.more, 'reads')}` : '') +
          '\n',
      );
    }
  }

  out.push('### Sessions\n');
  const sessions = capped(d.sessions, MD_TABLE_CAP, (s) => !s.may_mutate);
  out.push(
    mdTable(
      ['Session', 'Agent', 'Policy', 'Scope', 'State', 'Compactions', 'Denied calls'],
      sessions.shown.map((s) => [
        mdCode(s.session_id),
        mdText(agentLabel(s.agent)),
        mdCode(s.policy),
        mdCode(s.scope),
        mdCode(s.state),
        String(s.compactions),
        String(s.denials),
      ]),
      sessions.more,
      'sessions',
    ),
  );

  out.push('### Compactions\n');
  const comps = capped(
    d.entries.filter((e): e is Extract<LogEntry, { kind: 'compaction' }> => e.kind === 'compaction'),
    MD_TABLE_CAP,
  );
  out.push(
    mdTable(
      ['Session', '#', 'Seen at', 'Trigger', 'Observed via', 'Checkpoint', 'Tree digest at checkpoint (files)'],
      comps.shown.map((c) => {
        const cp = c.checkpoint_id ? d.checkpoints.get(c.checkpoint_id) : undefined;
        return [
          mdCode(c.session_id),
          String(c.seq),
          mdText(c.at),
          mdText(c.trigger ?? 'unknown'),
          mdText(c.observed_via.join(' + ')),
          mdCode(c.checkpoint_id),
          cp ? `${mdCode(short(cp.tree_sha256))} (${cp.tree_files})` : '-',
        ];
      }),
      comps.more,
      'compactions',
    ),
  );

  out.push('### Authority transitions\n');
  const trans = capped(d.transitions, MD_TABLE_CAP);
  out.push(
    mdTable(
      ['Session', 'When', 'From → to', 'Event', 'Evidence'],
      trans.shown.map((t) => [
        mdCode(t.session_id),
        mdText(t.at),
        `${mdCode(t.from)} → ${mdCode(t.to)}`,
        mdCode(t.event),
        mdText(transitionSummary(t)),
      ]),
      trans.more,
      'transitions',
    ),
  );

  out.push('### Files changed\n');
  const files = capped(fileSummaries(d), MD_TABLE_CAP);
  out.push(
    mdTable(
      ['File', 'Changes', 'attempt', 'contended', 'outside', 'unknown', 'Last change'],
      files.shown.map((f) => [
        mdCode(f.path),
        String(f.changes),
        String(f.attempt),
        String(f.contended),
        String(f.outside),
        String(f.unknown),
        mdText(`${f.last.change} at ${f.last.observed_at}`),
      ]),
      files.more,
      'files',
    ),
  );

  out.push('### Tree digest at checkpoint vs at verify\n');
  const verifies = d.transitions.filter((t) => t.event === 'verify');
  const rows = verifies.map((t) => {
    const v = verifyEvidence(t.evidence);
    const before = v.baseline?.tree_sha256 ?? null;
    const after = v.current?.tree_sha256 ?? null;
    const same = before !== null && after !== null ? (before === after ? 'yes' : 'no') : 'unknown';
    return [
      mdCode(t.session_id),
      mdText(t.at),
      mdCode(v.baseline?.id ?? null),
      before ? `${mdCode(before)} (${v.baseline?.tree_files ?? '?'})` : '-',
      after ? `${mdCode(after)} (${v.current?.tree_files ?? '?'})` : '-',
      same,
      v.accepted_changes ? 'yes' : 'no',
    ];
  });
  for (const s of d.sessions) {
    if (!s.may_mutate && s.checkpoints.length > 0) {
      const last = s.checkpoints[s.checkpoints.length - 1]!;
      rows.push([
        mdCode(s.session_id),
        mdText(`not verified yet (${s.state})`),
        mdCode(last.id),
        `${mdCode(last.tree.sha256)} (${last.tree.files})`,
        '-',
        'not verified',
        '-',
      ]);
    }
  }
  out.push(
    mdTable(
      [
        'Session',
        'Verified at',
        'Checkpoint',
        'Tree at checkpoint (files)',
        'Tree at verify (files)',
        'Tree digest before = after',
        'Changes accepted',
      ],
      rows.slice(-MD_TABLE_CAP),
      Math.max(0, rows.length - MD_TABLE_CAP),
      'verifications',
    ),
  );
  return out.join('\n');
}
