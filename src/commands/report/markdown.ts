// `latch report --markdown`: the evidence summary as Markdown tables for a pull request. Every
// record-derived string goes through mdText (free text) or mdCode (identifiers, paths, commands).
import type { LogEntry } from '../shared/timeline.js';
import {
  agentLabel,
  callText,
  compactionWindows,
  distinct,
  fileSummaries,
  overallState,
  selfProtectionDenials,
  short,
  transitionSummary,
  verifyEvidence,
  type ReportData,
} from './data.js';

/** Free text in a table cell: every Markdown/HTML-significant character backslash-escaped. */
export function mdText(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value)
    .replace(/\r\n?|\n/g, ' ')
    .replace(/[\\`*_[\]<>|~&]/g, (c) => '\\' + c);
}

/** An identifier, path or command in a table cell: a code span (longer fence than any backtick run; pipes escaped for the table). */
export function mdCode(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  const text = value.replace(/\r\n?|\n/g, ' ').replace(/\|/g, '\\|');
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad =
    text.startsWith('`') || text.endsWith('`') || (text.startsWith(' ') && text.endsWith(' ') && text.trim() !== '')
      ? ' '
      : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function mdTable(head: string[], rows: string[][]): string {
  if (rows.length === 0) return '_None recorded._\n';
  return (
    [
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n') + '\n'
  );
}

export function renderMarkdown(d: ReportData): string {
  const out: string[] = [];
  out.push('## Latch evidence summary\n');
  out.push(
    `Workspace ${mdCode(d.workspace)}${d.selected ? `, session(s) ${d.selected.map(mdCode).join(', ')}` : ''}. Agent: ${mdText(distinct(d.agents.map(agentLabel)))}. Current state: ${mdText(overallState(d))}. Generated ${mdText(d.generated_at)} by Latch ${mdText(d.version)}.\n`,
  );

  // First: what the agent tried against Latch itself (none is the usual case, and then nothing is shown).
  const self = selfProtectionDenials(d);
  if (self.length > 0) {
    out.push(`### Attempts on Latch itself (${self.length}, all denied)\n`);
    out.push(
      mdTable(
        ['Session', 'When', 'Call'],
        self.map((e) => [mdCode(e.session_id), mdText(e.at), mdCode(callText(e.tool, e.summary) ?? e.tool)]),
      ),
    );
  }

  out.push('### Sessions\n');
  out.push(
    mdTable(
      ['Session', 'Agent', 'Policy', 'Scope', 'State', 'Compactions', 'Denied calls'],
      d.sessions.map((s) => [
        mdCode(s.session_id),
        mdText(agentLabel(s.agent)),
        mdCode(s.policy),
        mdCode(s.scope),
        mdCode(s.state),
        String(s.compactions),
        String(s.denials),
      ]),
    ),
  );

  out.push('### Compactions\n');
  const comps = d.entries.filter((e): e is Extract<LogEntry, { kind: 'compaction' }> => e.kind === 'compaction');
  out.push(
    mdTable(
      ['Session', '#', 'Seen at', 'Trigger', 'Observed via', 'Checkpoint', 'Tree digest at checkpoint (files)'],
      comps.map((c) => {
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
    ),
  );

  out.push('### Authority transitions\n');
  out.push(
    mdTable(
      ['Session', 'When', 'From → to', 'Event', 'Evidence'],
      d.transitions.map((t) => [
        mdCode(t.session_id),
        mdText(t.at),
        `${mdCode(t.from)} → ${mdCode(t.to)}`,
        mdCode(t.event),
        mdText(transitionSummary(t)),
      ]),
    ),
  );

  out.push('### Mutation attempts after each compaction\n');
  const windows = compactionWindows(d);
  out.push(
    mdTable(
      ['Session', 'Compaction', 'From', 'Until', 'Allowed', 'Denied'],
      windows.map((w) => [
        mdCode(w.session_id),
        `#${w.seq}`,
        mdText(w.from),
        mdText(w.until ?? 'now'),
        String(w.allowed),
        String(w.denied.length),
      ]),
    ),
  );
  const denied = windows.flatMap((w) => w.denied.map((dn) => ({ w, dn })));
  if (denied.length > 0) {
    out.push('Denied calls:\n');
    out.push(
      mdTable(
        ['Session', 'After compaction', 'When', 'Tool', 'Call', 'Reasons'],
        denied.map(({ w, dn }) => [
          mdCode(dn.session_id),
          `#${w.seq}`,
          mdText(dn.at),
          mdText(dn.tool),
          mdCode(callText(dn.tool, dn.summary)),
          mdText(dn.reasons.map((r) => `${r.code}: ${r.message}`).join(' ')),
        ]),
      ),
    );
  }

  out.push('### Files changed\n');
  out.push(
    mdTable(
      ['File', 'Changes', 'attempt', 'contended', 'outside', 'unknown', 'Last change'],
      fileSummaries(d).map((f) => [
        mdCode(f.path),
        String(f.changes),
        String(f.attempt),
        String(f.contended),
        String(f.outside),
        String(f.unknown),
        mdText(`${f.last.change} at ${f.last.observed_at}`),
      ]),
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
      rows,
    ),
  );
  return out.join('\n');
}
