// The comparison as `latch status` and `latch doctor` show it (read-only: no refresh, no alarm).
import type { Db } from '../store/store.js';
import { fullCheck, setupCommandOf } from './check.js';
import { loadRecorded } from './quick.js';
import type { Accepted } from './records.js';
import { type Finding, isRegistration, isWorkspaceScope, LAYER_PREFIX, type Touch, TOUCH_SCOPE } from './types.js';

// ---------------------------------------------------------------------------------------------
// reports (latch status, latch doctor)

export interface RegistrationReport {
  /** ok: nothing changed; changed: tamper findings; unrecorded: no fingerprint (setup by an older Latch). */
  status: 'ok' | 'changed' | 'unrecorded';
  recorded_at: string | null;
  /** Files compared, by role. */
  files: Record<string, number>;
  registrations: { scope: string; kind: string; recorded_at: string }[];
  findings: Finding[];
  /** Files seen touched since setup (same content, new stat identity), newest last. */
  touched: Touch[];
}

/** The full comparison, read-only (no refresh, no alarm): what `latch status` and `latch doctor` show. */
export function registrationReport(db: Db, workspace: string | null): RegistrationReport {
  const recorded = loadRecorded(db);
  const full = fullCheck(recorded, { workspace });
  const files: Record<string, number> = {};
  for (const f of recorded.files)
    if (!isWorkspaceScope(f.scope) || (!!workspace && f.scope === LAYER_PREFIX + workspace))
      files[f.role] = (files[f.role] ?? 0) + 1;
  const regs = recorded.scopes
    .filter(isRegistration)
    .map((s) => ({ scope: s.scope, kind: s.kind, recorded_at: s.recorded_at }));
  const tamper = full.findings.some((f) => f.severity === 'tamper');
  return {
    status: tamper ? 'changed' : regs.length === 0 ? 'unrecorded' : 'ok',
    recorded_at:
      regs
        .map((r) => r.recorded_at)
        .sort()
        .at(-1) ?? null,
    files,
    registrations: regs,
    findings: full.findings,
    touched: JSON.parse(recorded.scopes.find((s) => s.scope === TOUCH_SCOPE)?.json ?? '[]') as Touch[],
  };
}

const ROLE_LABEL: Record<string, string> = {
  hooks: 'hooks.json',
  config: 'Codex config files (hook settings)',
  installed: 'installed Latch files',
  shell: 'shell startup files',
  path_dir: 'PATH directories',
  path_target: '`latch` on the PATH',
  claude_settings: 'Claude Code settings layers (their security keys)',
  claude_dropins: 'Claude Code managed drop-in directories',
};

export const RERECORD_FIX =
  'check each change; if it is yours, re-run `latch setup codex` (with --project DIR for a project install) to record the fingerprint again, then `latch verify` in each latched workspace';

/** Text lines for a report: first line is the summary. */
export function registrationLines(r: RegistrationReport): string[] {
  const counts = Object.entries(r.files)
    .map(([role, n]) => `${n} ${ROLE_LABEL[role] ?? role}`)
    .join(', ');
  if (r.status === 'unrecorded')
    return [r.findings.find((f) => f.code === 'no_fingerprint')?.detail ?? 'no registration fingerprint recorded'];
  const setup = setupCommandOf(
    r.registrations.map((x) => x.scope),
    r.findings,
  );
  const at = r.recorded_at ? ` (${r.recorded_at})` : '';
  const head =
    r.status === 'ok' ? `ok: unchanged since ${setup}${at}; compared ${counts}` : `CHANGED since ${setup}${at}:`;
  const lines = [head];
  for (const f of r.findings)
    lines.push(
      `${f.severity === 'tamper' ? 'changed' : 'note'}: ${f.path ? `${f.path}: ` : ''}${f.detail} [${f.code}]`,
    );
  for (const t of r.touched.slice(-5))
    lines.push(
      `note: ${t.path}: touched at ${t.at}, content unchanged (a change undone before any hook ran would look the same)`,
    );
  if (r.touched.length > 5) lines.push(`note: and ${r.touched.length - 5} earlier touch(es)`);
  return lines;
}

/** What `latch setup` tells the human it accepted by re-recording (nothing when there was no alarm). */
export function acceptedLines(a: Accepted | null): string[] {
  if (!a) return [];
  const t = a.findings.filter((f) => f.severity === 'tamper');
  const lines = [
    `Accepted the registration change found at ${a.at}${a.origin.origin === 'human' ? ', made when no agent tool call ran (a human edit)' : ''}:`,
    ...t.slice(0, 5).map((f) => `  ${f.path ? `${f.path}: ` : ''}${f.detail}`),
    ...(t.length > 5 ? [`  and ${t.length - 5} more`] : []),
  ];
  const sessions = (n: number) => `${n} session${n === 1 ? '' : 's'}`;
  for (const r of a.released)
    lines.push(
      `Released ${r.workspace}: ${sessions(r.sessions.length)} whose calls it refused may change files again.`,
    );
  for (const r of a.stillLatched)
    lines.push(
      `Still latched ${r.workspace}: ${sessions(r.sessions.length)} (the change was made while an agent's tool call or job ran); review, then run \`latch verify\` there.`,
    );
  return lines;
}
