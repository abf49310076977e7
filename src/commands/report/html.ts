// `latch report --html FILE`: one self-contained HTML file: header, the three-line summary (a write that
// ran while latched in red), the attempts on Latch itself, the blocked calls by reason (each reason's
// text once), the writes that ran apart from the reads, sessions, the interleaved timeline (turns, reads
// and writes with the files they changed, compactions, latch trips, denials, verifications with their
// evidence, outside edits) and a per-file view (every change, newest first, who made it). Semantic
// HTML that reads without JavaScript; an inline script only adds filters and expand/collapse. No
// external resource of any kind: inline CSS and JS, no fonts or images, and a Content-Security-Policy
// that admits only this file's own style and script (by hash). Every record-derived string is escaped.
import { createHash } from 'node:crypto';
import type { ChangeJson, LogEntry } from '../shared/timeline.js';
import {
  agentLabel,
  callText,
  distinct,
  fileSummaries,
  groupKey,
  isTrip,
  overallState,
  phaseLabel,
  readCounts,
  readLabel,
  selfProtectionDenials,
  short,
  splitReasons,
  transitionSummary,
  verifyEvidence,
  type Entry,
  type FileChange,
  type ReadCall,
  type ReportData,
  type WriteCall,
} from './data.js';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for an HTML text node or a double-quoted attribute value. */
export function esc(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  return String(value).replace(/[&<>"'`]/g, (c) => HTML_ESCAPES[c]!);
}

/** A class-name token from a record value (only [a-z0-9-] survive). */
const token = (value: string | null | undefined) => (value ?? 'none').toLowerCase().replace(/[^a-z0-9-]+/g, '-');

const time = (at: string | null | undefined) =>
  at
    ? `<time datetime="${esc(at)}">${esc(at.replace('T', ' ').replace(/Z$/, ' UTC'))}</time>`
    : '<span class="muted">-</span>';
const code = (v: string | null | undefined, cls = '') =>
  v === null || v === undefined || v === ''
    ? '<span class="muted">-</span>'
    : `<code${cls ? ` class="${cls}"` : ''}>${esc(v)}</code>`;
const sid = (id: string | null) =>
  id
    ? `<code class="sid" title="${esc(id)}">${esc(id.length > 13 ? '…' + id.slice(-12) : id)}</code>`
    : '<span class="muted">no session</span>';
const badge = (text: string, cls: string) => `<span class="badge ${cls}">${esc(text)}</span>`;

function whoMade(
  f: FileChange | ChangeJson,
  attempt?: { tool: string | null; summary: string | null; turn_id: string | null; attempt_state: string | null },
): string {
  switch (f.attribution) {
    case 'attempt':
      return `${attempt?.tool ? `${esc(attempt.tool)} ` : ''}${attempt?.summary ? code(callText(attempt.tool, attempt.summary), 'cmd') : ''} <span class="muted">(attempt ${code(f.attempt_id)}, session ${sid(f.session_id)}${attempt?.turn_id ? `, turn ${code(attempt.turn_id)}` : ''}${attempt?.attempt_state ? `, ${esc(attempt.attempt_state)}` : ''})</span>`;
    case 'contended':
      return `contended between ${f.candidates.length} attempts: ${f.candidates.map((c) => code(c)).join(', ')}`;
    case 'outside':
      return 'outside any agent attempt (a person or another process)';
    case 'unknown':
      return `unknown (at the edge of an attempt window or untimed)${f.candidates.length ? `: ${f.candidates.map((c) => code(c)).join(', ')}` : ''}`;
    default:
      return esc(f.attribution);
  }
}

function digest(side: { sha256: string; size: number } | null): string {
  return side
    ? `<code class="sha" title="${esc(side.sha256)}">${esc(short(side.sha256, 12))}</code> <span class="muted">${esc(side.size)} B</span>`
    : '<span class="muted">-</span>';
}

function changeRows(files: ChangeJson[]): string {
  return files
    .map(
      (f) =>
        `<tr class="attr-${token(f.attribution)}"><td>${esc(f.change)}</td><td>${code(f.path, 'path')}</td><td>${badge(f.attribution, `attr attr-${token(f.attribution)}`)}</td><td>${digest(f.before)} → ${digest(f.after)}</td><td>${time(f.observed_at)} <span class="muted">by ${esc(f.observed_by)}</span></td></tr>`,
    )
    .join('');
}

function changeTable(files: ChangeJson[]): string {
  return `<table class="changes"><thead><tr><th scope="col">Change</th><th scope="col">Path</th><th scope="col">Attribution</th><th scope="col">Content (sha256, size)</th><th scope="col">Observed</th></tr></thead><tbody>${changeRows(files)}</tbody></table>`;
}

/** What the timeline needs of the story: each call's read or write, each denial group's number. */
interface Story {
  writes: Map<string, WriteCall>;
  reads: Map<string, ReadCall>;
  groups: Map<string, number>;
}

function storyOf(d: ReportData): Story {
  return {
    writes: new Map(d.writes.map((w) => [w.attempt_id, w])),
    reads: new Map(d.reads.map((r) => [r.attempt_id, r])),
    groups: new Map(d.blocked.map((g, i) => [groupKey(g.reasons), i + 1])),
  };
}

/** A write's place in its story: a write that ran while latched is an alarm, in red. */
const phaseHtml = (w: WriteCall) =>
  w.phase === 'while_latched'
    ? `<strong class="alarm">WARNING: ${esc(phaseLabel(w))}</strong>`
    : badge(phaseLabel(w), `phase phase-${token(w.phase)}`);

function entryHtml(e: Entry, d: ReportData, story: Story): string {
  const attrs = (kind: string, extra: string, filter = kind) =>
    `class="entry ${kind}${extra ? ' ' + extra : ''}" data-kind="${filter}" data-session="${esc(e.session_id ?? '')}"`;
  const head = (label: string, rest: string) =>
    `<div class="head">${time(e.at)} <span class="label">${esc(label)}</span> ${sid(e.session_id)} ${rest}</div>`;
  switch (e.kind) {
    case 'attempt': {
      const files = e.files.length;
      const attribution = distinct(e.files.map((f) => f.attribution));
      const body = `<details${files > 0 ? ' open' : ''}><summary>${files === 0 ? 'no file changes' : `${files} file change${files === 1 ? '' : 's'} (${esc(attribution)})`}</summary>
<dl class="facts"><dt>Attempt</dt><dd>${code(e.attempt_id)}</dd><dt>Turn</dt><dd>${code(e.turn_id)}</dd>${e.agent_id ? `<dt>Sub-agent</dt><dd>${code(e.agent_id)}</dd>` : ''}<dt>Ended</dt><dd>${time(e.ended_at)}${e.end_reason ? ` <span class="muted">(${esc(e.end_reason)})</span>` : ''}</dd></dl>
${files > 0 ? changeTable(e.files) : ''}</details>`;
      const write = story.writes.get(e.attempt_id);
      const read = story.reads.get(e.attempt_id);
      const alarm = write?.phase === 'while_latched';
      const cls = `${read ? 'read' : 'write'} attempt-${token(e.state)}${alarm ? ' alarm' : ''}`;
      const label = alarm ? 'Write while latched' : read ? 'Read' : 'Write';
      const how = write ? phaseHtml(write) : read ? `<span class="muted">${esc(readLabel(read))}</span>` : '';
      return `<li ${attrs('attempt', cls, read ? 'read' : 'write')}>${head(label, `<span class="tool">${esc(e.tool)}</span> ${code(callText(e.tool, e.summary), 'cmd')} ${badge(e.state, `state state-${token(e.state)}`)} ${how}`)}${body}</li>`;
    }
    case 'change': {
      const c = e.change;
      const label =
        c.attribution === 'outside'
          ? 'Outside edit'
          : c.attribution === 'contended'
            ? 'Contended change'
            : c.attribution === 'unknown'
              ? 'Unattributed change'
              : 'File change';
      return `<li ${attrs('change', `attr-${token(c.attribution)}`)}>${head(label, `${esc(c.change)} ${code(c.path, 'path')} ${badge(c.attribution, `attr attr-${token(c.attribution)}`)}`)}<p class="detail">${whoMade(c)}; content ${digest(c.before)} → ${digest(c.after)}, observed by ${esc(c.observed_by)}</p></li>`;
    }
    case 'compaction': {
      const cp = e.checkpoint_id ? d.checkpoints.get(e.checkpoint_id) : undefined;
      const checkpoint = cp
        ? `checkpoint ${code(cp.id)} at ${time(cp.created_at)}: tree ${code(short(cp.tree_sha256), 'sha')} (${esc(cp.tree_files)} files)${cp.git_head ? `, git ${code(short(cp.git_head, 12))}${cp.git_branch ? ` on ${code(cp.git_branch)}` : ''}` : ''}`
        : e.checkpoint_id
          ? `checkpoint ${code(e.checkpoint_id)}`
          : '<strong>no checkpoint recorded</strong>';
      return `<li ${attrs('compaction', '')}>${head(`Compaction #${e.seq}`, `<span>${esc(e.trigger ?? 'trigger unknown')}, observed via ${esc(e.observed_via.join(' + '))}</span>`)}<p class="detail">${checkpoint}</p></li>`;
    }
    case 'transition': {
      const ev = e.evidence ?? {};
      const states = `${badge(e.from, `state state-${token(e.from)}`)} → ${badge(e.to, `state state-${token(e.to)}`)} <span class="muted">(${esc(e.event)})</span>`;
      if (e.event === 'verify') {
        const v = verifyEvidence(ev);
        const before = v.baseline?.tree_sha256 ?? null;
        const after = v.current?.tree_sha256 ?? null;
        const same = before !== null && after !== null ? before === after : null;
        const checks = (v.checks ?? [])
          .map(
            (c) =>
              `<li class="check ${c.ok ? 'ok' : 'fail'}">${badge(c.ok ? 'ok' : 'FAIL', c.ok ? 'ok' : 'fail')} <strong>${esc(c.name)}</strong>: ${esc(c.detail)}</li>`,
          )
          .join('');
        const changes = (v.changes ?? [])
          .map(
            (c) =>
              `<li>${esc(c.change)} ${code(c.path, 'path')}${c.attribution ? ` ${badge(c.attribution, `attr attr-${token(c.attribution)}`)}` : ''}</li>`,
          )
          .join('');
        return `<li ${attrs('verification', '')}>${head('Verification', states)}<details open><summary>Evidence: confirmed by ${esc(v.confirmed_by ?? '?')}; tree digest before = after: <strong>${same === null ? 'unknown' : same ? 'yes' : 'no'}</strong>${v.accepted_changes ? '; differences accepted' : ''}</summary>
<dl class="facts"><dt>Checkpoint tree</dt><dd>${v.baseline ? `${code(v.baseline.tree_sha256, 'sha')} (${esc(v.baseline.tree_files)} files, checkpoint ${code(v.baseline.id)})` : '<span class="muted">none</span>'}</dd><dt>Tree at verify</dt><dd>${v.current ? `${code(v.current.tree_sha256, 'sha')} (${esc(v.current.tree_files)} files${v.current.git_head ? `, git ${code(short(v.current.git_head, 12))}` : ''})` : '<span class="muted">-</span>'}</dd></dl>
${checks ? `<ul class="checks">${checks}</ul>` : ''}${changes ? `<p>Differences:</p><ul class="accepted">${changes}</ul>` : ''}</details></li>`;
      }
      const kind = isTrip(e) ? 'trip' : 'transition';
      const label = isTrip(e)
        ? e.to === 'paused'
          ? 'Latch paused'
          : 'Latch tripped'
        : e.to === 'mutable'
          ? 'Authority restored'
          : 'Authority';
      return `<li ${attrs(kind, `to-${token(e.to)}`)}>${head(label, states)}<p class="detail">${esc(transitionSummary(e)) || '<span class="muted">no evidence recorded</span>'}</p></li>`;
    }
    case 'denial': {
      // The shared reasons by their code and a link to their text (shown once, under Blocked calls).
      const { shared, detail } = splitReasons(e.reasons);
      const n = story.groups.get(groupKey(shared));
      const why = `<li>${shared.map((r) => code(r.code)).join(' + ')} ${n ? `<a href="#reason-${n}">reason ${n}</a>` : ''}</li>${detail.map((r) => `<li>${code(r.code)} ${esc(r.message)}</li>`).join('')}`;
      return `<li ${attrs('denial', '')}>${head('Denied', `<span class="tool">${esc(e.tool)}</span> ${code(callText(e.tool, e.summary), 'cmd')}`)}<ul class="reasons">${why}</ul>${e.turn_id ? `<p class="detail muted">turn ${code(e.turn_id)}</p>` : ''}</li>`;
    }
  }
}

function timelineHtml(d: ReportData): string {
  const story = storyOf(d);
  const items: string[] = [];
  const lastTurn = new Map<string, string | null>();
  for (const e of d.entries) {
    if ((e.kind === 'attempt' || e.kind === 'denial') && e.turn_id && lastTurn.get(e.session_id) !== e.turn_id) {
      lastTurn.set(e.session_id, e.turn_id);
      items.push(
        `<li class="entry turn" data-kind="turn" data-session="${esc(e.session_id)}"><div class="head">${time(e.at)} <span class="label">Turn</span> ${sid(e.session_id)} ${code(e.turn_id)}</div></li>`,
      );
    }
    items.push(entryHtml(e, d, story));
  }
  if (items.length === 0) return '<p class="muted">Nothing recorded.</p>';
  return `<ol class="timeline" id="timeline-list">\n${items.join('\n')}\n</ol>`;
}

function filesHtml(d: ReportData): string {
  const sums = fileSummaries(d);
  if (sums.length === 0) return '<p class="muted">No file changes recorded.</p>';
  const byPath = new Map<string, FileChange[]>();
  for (const f of d.files) byPath.set(f.path, [...(byPath.get(f.path) ?? []), f]);
  const bodies = sums.map((s) => {
    const rows = (byPath.get(s.path) ?? [])
      .map(
        (f) =>
          `<tr class="attr-${token(f.attribution)}" data-session="${esc(f.session_id ?? '')}"><td>${time(f.observed_at)}</td><td>${esc(f.change)}</td><td>${badge(f.attribution, `attr attr-${token(f.attribution)}`)}</td><td>${whoMade(f, f)}</td><td>${digest(f.before)} → ${digest(f.after)}</td></tr>`,
      )
      .join('');
    const counts = (['attempt', 'contended', 'outside', 'unknown'] as const)
      .filter((k) => s[k] > 0)
      .map((k) => `${s[k]} ${k}`)
      .join(', ');
    return `<tbody class="file" data-path="${esc(s.path)}"><tr class="file-head"><th scope="rowgroup" colspan="5">${code(s.path, 'path')} <span class="muted">${s.changes} change${s.changes === 1 ? '' : 's'}: ${esc(counts)}</span></th></tr>${rows}</tbody>`;
  });
  return `<table class="files" id="files-table"><caption>Every recorded change to each file, newest first${d.selected ? ' (changes of the selected session(s) only)' : ''}.</caption><thead><tr><th scope="col">Observed</th><th scope="col">Change</th><th scope="col">Attribution</th><th scope="col">Made by</th><th scope="col">Content (sha256, size)</th></tr></thead>${bodies.join('\n')}</table>`;
}

/** The agent's attempts on Latch itself, first (nothing when there were none). */
function selfProtectionHtml(d: ReportData): string {
  const self = selfProtectionDenials(d);
  if (self.length === 0) return '';
  const rows = self
    .map(
      (e) =>
        `<tr><td>${sid(e.session_id)}</td><td>${time(e.at)}</td><td>${code(callText(e.tool, e.summary) ?? e.tool, 'cmd')}</td></tr>`,
    )
    .join('');
  return `<section id="self" aria-labelledby="h-self">
<h2 id="h-self">Attempts on Latch itself (${self.length}, all denied)</h2>
<table><thead><tr><th>Session</th><th>When</th><th>Call</th></tr></thead><tbody>${rows}</tbody></table>
</section>
`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The three summary lines: compactions, writes (blocked; ran while latched, in red), verifications. */
function summaryHtml(d: ReportData): string {
  const s = d.summary;
  const heldNow =
    s.held_sessions.length === 0
      ? 'no session is latched now'
      : `latched now: ${s.held_sessions.map((h) => `${code(h.session_id)}${h.state === 'latched' ? '' : ` (${esc(h.state)})`}`).join(', ')}`;
  const whileLatched =
    s.writes_while_latched === 0
      ? 'ran while latched: none'
      : `<strong class="alarm">WARNING: ${plural(s.writes_while_latched, 'write')} ran while latched</strong> (<a href="#writes">see Writes that ran</a>)`;
  const verified = s.verified.map(
    (v) =>
      `${code(v.session_id)} ${v.how === 'evidence' ? 'by evidence (every brief page read)' : `by ${code(v.confirmed_by ?? '?')}`} at ${time(v.at)}${v.tree_unchanged === null ? '' : v.tree_unchanged ? ', tree unchanged' : ', tree changed'}${v.accepted_changes ? ', changes accepted' : ''}`,
  );
  const resumes = s.resumes > 0 ? `; ${plural(s.resumes, 'resume')}` : '';
  return `<section id="summary" aria-labelledby="h-summary">
<h2 id="h-summary">Summary</h2>
<ul class="summary">
<li id="summary-compactions"><strong>Compactions:</strong> ${s.compactions === 0 ? 'none' : `${s.compactions}, ${plural(s.trips, 'trip')}`}; ${heldNow}.</li>
<li id="summary-writes"><strong>Writes:</strong> ${s.writes_blocked} blocked, ${s.writes} ran; ${whileLatched}.</li>
<li id="summary-verifications"><strong>Verifications:</strong> ${s.verifications === 0 ? 'none' : `${s.verifications}: ${verified.join('; ')}`}${resumes}.</li>
</ul>
</section>
`;
}

/** The blocked calls, by reason: each shared reason's text once, the calls it blocked under it. */
function blockedHtml(d: ReportData): string {
  if (d.blocked.length === 0) return '';
  const groups = d.blocked
    .map((g, i) => {
      const calls = g.calls
        .map(
          (c) =>
            `<li>${code(callText(c.tool, c.summary) ?? c.tool, 'cmd')} <span class="tool">${esc(c.tool)}</span> ${time(c.at)}${c.detail.length > 0 ? `<br><span class="muted">${c.detail.map((r) => esc(r.message)).join(' ')}</span>` : ''}</li>`,
        )
        .join('');
      return `<div class="reason-group" id="reason-${i + 1}"><p><strong>${i + 1}. ${g.reasons.map((r) => code(r.code)).join(' + ')}</strong>, ${plural(g.count, 'call')} (session${g.sessions.length === 1 ? '' : 's'} ${g.sessions.map((x) => sid(x)).join(' ')}): ${g.reasons.map((r) => esc(r.message)).join(' ')}</p><details${g.count <= 10 ? ' open' : ''}><summary>${plural(g.count, 'blocked call')}</summary><ul class="calls">${calls}</ul></details></div>`;
    })
    .join('\n');
  return `<section id="blocked" aria-labelledby="h-blocked">
<h2 id="h-blocked">Blocked calls (${d.summary.writes_blocked}), by reason</h2>
${groups}
</section>
`;
}

/** The writes that ran, each with when it ran; one that ran while latched is a red row, never grey. */
function writesHtml(d: ReportData): string {
  const rows = d.writes
    .map(
      (w) =>
        `<tr class="write phase-${token(w.phase)}${w.phase === 'while_latched' ? ' alarm' : ''}"><td>${sid(w.session_id)}</td><td>${time(w.at)}</td><td>${phaseHtml(w)}</td><td>${esc(w.tool)}</td><td>${code(callText(w.tool, w.summary) ?? w.tool, 'cmd')} ${badge(w.state, `state state-${token(w.state)}`)}</td><td>${w.files.length === 0 ? '<span class="muted">none</span>' : w.files.map((f) => code(f, 'path')).join(' ')}</td></tr>`,
    )
    .join('');
  return `<section id="writes" aria-labelledby="h-writes">
<h2 id="h-writes">Writes that ran (${d.writes.length})</h2>
${rows ? `<table class="writes"><thead><tr><th scope="col">Session</th><th scope="col">When</th><th scope="col">Ran</th><th scope="col">Tool</th><th scope="col">Call</th><th scope="col">Files changed</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">None recorded.</p>'}
</section>
`;
}

/** The reads, apart from the writes: how each is known to be a read. */
function readsHtml(d: ReportData): string {
  const rows = d.reads
    .map(
      (r) =>
        `<tr class="read read-${token(r.how)}"><td>${sid(r.session_id)}</td><td>${time(r.at)}</td><td>${esc(readLabel(r))}</td><td>${esc(r.tool)}</td><td>${code(callText(r.tool, r.summary) ?? r.tool, 'cmd')}</td></tr>`,
    )
    .join('');
  return `<section id="reads" aria-labelledby="h-reads">
<h2 id="h-reads">Reads (${d.reads.length}, read-only inspection)</h2>
${rows ? `<p>${esc(readCounts(d.reads))}.</p><details${d.reads.length <= 10 ? ' open' : ''}><summary>${plural(d.reads.length, 'read')}</summary><table class="reads"><thead><tr><th scope="col">Session</th><th scope="col">When</th><th scope="col">How</th><th scope="col">Tool</th><th scope="col">Call</th></tr></thead><tbody>${rows}</tbody></table></details>` : '<p class="muted">None recorded.</p>'}
</section>
`;
}

function sessionsHtml(d: ReportData): string {
  if (d.sessions.length === 0) return '<p class="muted">No sessions recorded for this workspace.</p>';
  const rows = d.sessions
    .map(
      (s) =>
        `<tr><td>${code(s.session_id)}</td><td>${esc(agentLabel(s.agent))}</td><td>${esc(s.policy)}</td><td>${esc(s.scope)}</td><td>${badge(s.state, `state state-${token(s.state)}`)}</td><td>${s.may_mutate ? 'yes' : '<strong>no</strong>'}</td><td>${esc(s.compactions)}</td><td>${esc(s.denials)}</td><td>${s.parent_session_id ? code(s.parent_session_id) : '<span class="muted">-</span>'}</td><td>${s.reason ? esc(s.reason) : '<span class="muted">-</span>'}</td></tr>`,
    )
    .join('\n');
  return `<table class="sessions"><thead><tr><th scope="col">Session</th><th scope="col">Agent</th><th scope="col">Policy</th><th scope="col">Scope</th><th scope="col">State</th><th scope="col">May mutate</th><th scope="col">Compactions</th><th scope="col">Denied calls</th><th scope="col">Parent</th><th scope="col">Reason</th></tr></thead><tbody>\n${rows}\n</tbody></table>`;
}

function countsHtml(d: ReportData): string {
  const n = (k: LogEntry['kind']) => d.entries.filter((e) => e.kind === k).length;
  const trips = d.transitions.filter(isTrip).length;
  const verifies = d.transitions.filter((t) => t.event === 'verify').length;
  const outside = d.files.filter((f) => f.attribution === 'outside').length;
  // [count, one, many, class]
  const items: [number, string, string, string][] = [
    [d.reads.length, 'read', 'reads', 'read'],
    [d.writes.length, 'write', 'writes', 'write'],
    ...(d.summary.writes_while_latched > 0
      ? ([[d.summary.writes_while_latched, 'write while latched', 'writes while latched', 'alarm']] as [
          number,
          string,
          string,
          string,
        ][])
      : []),
    [n('compaction'), 'compaction', 'compactions', 'compaction'],
    [trips, 'latch trip', 'latch trips', 'trip'],
    [n('denial'), 'denied call', 'denied calls', 'denial'],
    [verifies, 'verification', 'verifications', 'verification'],
    [d.files.length, 'file change', 'file changes', 'change'],
    [outside, 'outside edit', 'outside edits', 'change attr-outside'],
  ];
  return `<ul class="counts">${items.map(([v, one, many, cls]) => `<li class="${cls}"><strong>${v}</strong> ${v === 1 ? one : many}</li>`).join('')}</ul>`;
}

const CSS = `
:root{--fg:#1d232b;--muted:#5b6570;--bg:#fff;--line:#d8dde3;--panel:#f6f8fa;--attempt:#5b6570;--compaction:#b35c00;--compaction-bg:#fff4e5;--denial:#c0262d;--denial-bg:#fdecec;--trip:#7b3fbf;--trip-bg:#f4edfc;--verify:#1f7a3a;--verify-bg:#e9f6ee;--outside:#1f5fbf;--outside-bg:#eaf1fc}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:18px;border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:0 0 8px}
h2{font-size:18px;margin:26px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 14px}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0}
nav{margin:0 0 12px}nav a{margin-right:14px;color:var(--outside)}
code{font:12.5px/1.4 ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono",monospace;background:var(--panel);border:1px solid var(--line);border-radius:4px;padding:0 4px;word-break:break-all}
.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{text-align:left;vertical-align:top;border-bottom:1px solid var(--line);padding:4px 8px}
thead th{background:var(--panel);font-weight:600}
caption{text-align:left;color:var(--muted);padding:4px 0}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;background:var(--panel);border:1px solid var(--line)}
.state-latched,.state-paused{color:var(--denial);border-color:var(--denial)}
.state-mutable,.state-closed,.ok{color:var(--verify);border-color:var(--verify)}
.state-abandoned,.fail{color:var(--denial);border-color:var(--denial)}
.attr-outside{color:var(--outside)}.attr-contended,.attr-unknown{color:var(--compaction)}
ul.counts{display:flex;flex-wrap:wrap;gap:8px;list-style:none;padding:0;margin:8px 0}
ul.counts li{border:1px solid var(--line);border-left:4px solid var(--attempt);border-radius:4px;padding:4px 10px;background:var(--panel)}
ul.counts li.compaction{border-left-color:var(--compaction)}ul.counts li.denial{border-left-color:var(--denial)}ul.counts li.trip{border-left-color:var(--trip)}ul.counts li.verification{border-left-color:var(--verify)}ul.counts li.attr-outside{border-left-color:var(--outside)}
ol.timeline{list-style:none;padding:0;margin:0;border-left:2px solid var(--line)}
.entry{position:relative;margin:0 0 6px 14px;padding:6px 10px;border:1px solid var(--line);border-left:4px solid var(--attempt);border-radius:4px;background:var(--bg)}
.entry::before{content:"";position:absolute;left:-21px;top:12px;width:10px;height:10px;border-radius:50%;background:var(--attempt)}
.entry .head{display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
.entry .label{font-weight:700}
.entry time{color:var(--muted);font-variant-numeric:tabular-nums;font-size:12.5px}
.entry .detail{margin:4px 0 0}
.entry details{margin-top:4px}.entry summary{cursor:pointer;color:var(--muted)}
.entry.turn{background:var(--panel);border-left-color:var(--line)}.entry.turn::before{background:var(--line)}
.entry.compaction{background:var(--compaction-bg);border-color:var(--compaction)}.entry.compaction::before{background:var(--compaction)}.entry.compaction .label{color:var(--compaction)}
.entry.denial{background:var(--denial-bg);border-color:var(--denial)}.entry.denial::before{background:var(--denial)}.entry.denial .label{color:var(--denial)}
.entry.trip{background:var(--trip-bg);border-color:var(--trip)}.entry.trip::before{background:var(--trip)}.entry.trip .label{color:var(--trip)}
.entry.verification{background:var(--verify-bg);border-color:var(--verify)}.entry.verification::before{background:var(--verify)}.entry.verification .label{color:var(--verify)}
.entry.transition{border-left-color:var(--trip)}
.entry.change.attr-outside{background:var(--outside-bg);border-color:var(--outside)}.entry.change.attr-outside::before{background:var(--outside)}.entry.change .label{color:var(--outside)}
.entry .tool{font-weight:600}
.entry.write{border-left-color:var(--fg)}.entry.write::before{background:var(--fg)}
strong.alarm{color:var(--denial);font-weight:700}
.entry.alarm{background:var(--denial-bg);border-color:var(--denial)}.entry.alarm::before{background:var(--denial)}.entry.alarm .label{color:var(--denial)}
tr.alarm td{background:var(--denial-bg)}
ul.summary{list-style:none;padding:0;margin:8px 0;font-size:15px}ul.summary li{margin:2px 0}
.reason-group{margin:8px 0;padding:6px 10px;border:1px solid var(--line);border-left:4px solid var(--denial);border-radius:4px}.reason-group p{margin:0 0 4px}
ul.calls{margin:4px 0 0;padding-left:20px}
ul.counts li.read{border-left-color:var(--line)}ul.counts li.write{border-left-color:var(--fg)}ul.counts li.alarm{border-left-color:var(--denial);color:var(--denial)}
ul.reasons,ul.checks,ul.accepted{margin:4px 0 0;padding-left:20px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:0 12px;margin:4px 0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
table.changes{font-size:13px}
tbody.file tr.file-head th{background:var(--panel);font-weight:400;border-top:2px solid var(--line)}
#controls{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:0 0 10px;padding:6px 10px;background:var(--panel);border:1px solid var(--line);border-radius:4px}
#controls label{white-space:nowrap}
.is-hidden,[hidden]{display:none!important}
footer{margin-top:30px;padding:12px 20px 30px;color:var(--muted);border-top:1px solid var(--line)}
@media print{#controls{display:none}details{display:block}}
`;

// Progressive enhancement: filters (session, kind, file path) and expand/collapse. The page is complete without it.
const SCRIPT = `
(function () {
  'use strict';
  var list = document.getElementById('timeline-list');
  var controls = document.getElementById('controls');
  if (!list || !controls) return;
  var entries = Array.prototype.slice.call(list.querySelectorAll('li.entry'));
  var kinds = [], sessions = [];
  entries.forEach(function (li) {
    var k = li.getAttribute('data-kind'), s = li.getAttribute('data-session');
    if (k && kinds.indexOf(k) < 0) kinds.push(k);
    if (s && sessions.indexOf(s) < 0) sessions.push(s);
  });
  function el(tag, text) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
  var sessionSel = el('select'); sessionSel.id = 'filter-session';
  var all = el('option', 'all sessions'); all.value = ''; sessionSel.appendChild(all);
  sessions.forEach(function (s) { var o = el('option', s); o.value = s; sessionSel.appendChild(o); });
  var sl = el('label', 'Session '); sl.appendChild(sessionSel); controls.appendChild(sl);
  var boxes = {};
  kinds.forEach(function (k) {
    var l = el('label'), b = el('input'); b.type = 'checkbox'; b.checked = true; b.value = k; b.className = 'filter-kind';
    boxes[k] = b; l.appendChild(b); l.appendChild(document.createTextNode(' ' + k)); controls.appendChild(l);
  });
  var pathBox = el('input'); pathBox.type = 'search'; pathBox.placeholder = 'filter files by path'; pathBox.id = 'filter-path';
  controls.appendChild(pathBox);
  function button(text, open) {
    var b = el('button', text); b.type = 'button';
    b.addEventListener('click', function () { Array.prototype.forEach.call(document.querySelectorAll('details'), function (d) { d.open = open; }); });
    controls.appendChild(b);
  }
  button('Expand all', true); button('Collapse all', false);
  var shown = el('span'); shown.className = 'muted'; shown.id = 'filter-count'; controls.appendChild(shown);
  function apply() {
    var s = sessionSel.value, n = 0;
    entries.forEach(function (li) {
      var k = li.getAttribute('data-kind');
      var visible = (!s || li.getAttribute('data-session') === s) && (!boxes[k] || boxes[k].checked);
      li.classList.toggle('is-hidden', !visible); if (visible) n++;
    });
    shown.textContent = n + ' of ' + entries.length + ' entries';
    var q = pathBox.value.toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll('#files-table tbody.file'), function (tb) {
      tb.classList.toggle('is-hidden', q !== '' && (tb.getAttribute('data-path') || '').toLowerCase().indexOf(q) < 0);
    });
  }
  controls.addEventListener('change', apply); pathBox.addEventListener('input', apply);
  controls.hidden = false; document.documentElement.classList.add('js');
  apply();
})();
`;

const sha256b64 = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64');

export function renderHtml(d: ReportData): string {
  const policies = distinct(d.sessions.map((s) => `${s.policy} (${s.scope})`));
  const title = `Latch report: ${d.workspace}`;
  // Only this file's own style and script may apply; nothing may be fetched, framed or submitted.
  // (Constant text and base64 only: no character that would need escaping in the attribute.)
  const csp = `default-src 'none'; style-src 'sha256-${sha256b64(CSS)}'; script-src 'sha256-${sha256b64(SCRIPT)}'; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="Latch ${esc(d.version)}">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>Latch report</h1>
<dl class="meta">
<dt>Workspace</dt><dd>${code(d.workspace)}</dd>
<dt>Sessions</dt><dd>${d.sessions.length === 0 ? '<span class="muted">none recorded</span>' : d.sessions.map((s) => code(s.session_id)).join(' ')}${d.selected ? ' <span class="muted">(selected)</span>' : ''}</dd>
<dt>Agent</dt><dd>${esc(distinct(d.agents.map(agentLabel)))}</dd>
<dt>Policy</dt><dd>${esc(policies)}</dd>
<dt>Current state</dt><dd>${esc(overallState(d))}</dd>
<dt>Generated</dt><dd>${time(d.generated_at)}</dd>
<dt>Latch version</dt><dd>${esc(d.version)}</dd>
</dl>
<nav><a href="#summary">Summary</a>${d.blocked.length > 0 ? '<a href="#blocked">Blocked</a>' : ''}<a href="#writes">Writes</a><a href="#reads">Reads</a><a href="#sessions">Sessions</a><a href="#timeline">Timeline</a><a href="#files">Files</a></nav>
</header>
<main>
${summaryHtml(d)}${selfProtectionHtml(d)}${blockedHtml(d)}${writesHtml(d)}${readsHtml(d)}<section id="sessions" aria-labelledby="h-sessions">
<h2 id="h-sessions">Sessions</h2>
${sessionsHtml(d)}
${countsHtml(d)}
</section>
<section id="timeline" aria-labelledby="h-timeline">
<h2 id="h-timeline">Timeline</h2>
<div id="controls" hidden></div>
${timelineHtml(d)}
</section>
<section id="files" aria-labelledby="h-files">
<h2 id="h-files">Files</h2>
${filesHtml(d)}
</section>
</main>
<footer>Generated by Latch ${esc(d.version)} from the Latch store at ${time(d.generated_at)}. Times are UTC; attributions are Latch's (attempt: inside one tool call's window; contended: inside several; outside: inside none; unknown: at a window's edge or untimed).</footer>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
