// `latch doctor FILE`: damage vs age. Severities and exit codes (documented in `latch doctor --help`
// and docs/qualify.md):
//   error    damage, or Latch's record contradicts the file                          → exit 1
//   warning  something a healthy Codex does not write (blank line, no final newline)   → exit 1
//   notice   age, not damage: the writer is a Codex release Latch has not qualified
//            (unqualified_writer), or such a release wrote a record type / JSON-RPC
//            method Latch does not know yet (unknown_record_type, unknown_method)       → exit 3
// Exit 0: no finding. Exit 2: unreadable. The most serious applies: 2, then 1, then 3, then 0.
// A qualified writer is held to what it was qualified with: its unknown record type stays an error.
import { qualifiedVersions } from './qualification.js';

export type DoctorSeverity = 'error' | 'warning' | 'notice';
export type DoctorExit = 0 | 1 | 2 | 3;
export const DOCTOR_EXIT = { healthy: 0, damage: 1, unreadable: 2, unqualified: 3 } as const;

/** Findings that tell the writer's age (a notice when the writer is not qualified). */
export const AGE_CODES: ReadonlySet<string> = new Set(['unqualified_writer', 'unknown_record_type', 'unknown_method']);

interface FindingLike {
  code: string;
  severity: string;
  message: string;
}

/** The qualified writers for `home` (shipped records + $LATCH_HOME/qualified). */
export function qualifiedWriters(home: string | null | undefined): string[] {
  return qualifiedVersions(home);
}

/** Re-grades findings: age findings become notices (unknown types only for an unqualified writer). */
export function gradeFindings<F extends FindingLike>(
  findings: F[],
  writer: { cli_version: string | null; qualified: boolean },
): (Omit<F, 'severity'> & { severity: DoctorSeverity })[] {
  return findings.map((f) => {
    const age = f.code === 'unqualified_writer' || (AGE_CODES.has(f.code) && !writer.qualified);
    if (!age) return { ...f, severity: f.severity as DoctorSeverity };
    let message = f.message;
    if (f.code === 'unqualified_writer' && writer.cli_version) {
      message += `; the file may well be healthy: \`latch qualify codex ${writer.cli_version}\` qualifies that release on this machine`;
    } else if (f.code !== 'unqualified_writer') {
      message += ` (written by Codex ${writer.cli_version ?? 'of unknown version'}, which Latch has not qualified: a newer format, not damage)`;
    }
    return { ...f, severity: 'notice' as const, message };
  });
}

/** The exit code for a report (see the header). */
export function doctorExit(unreadable: boolean, findings: readonly { severity: string }[]): DoctorExit {
  if (unreadable) return 2;
  if (findings.some((f) => f.severity === 'error' || f.severity === 'warning')) return 1;
  if (findings.some((f) => f.severity === 'notice')) return 3;
  return 0;
}
