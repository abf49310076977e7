// What the two transcript doctors share (`latch doctor FILE`: the Claude Code one in
// src/agents/claude/doctor-file/, the Codex one in src/agents/codex/fsck/): their findings, counted
// and rendered the same way, and the store cross-check's tolerant readers.
import { realpathSync } from 'node:fs';

export interface FileFinding<S extends string = string> {
  code: string;
  severity: S;
  message: string;
  /** How many times it occurred (lines, calls, ...). */
  count: number;
  /** 1-based line numbers of the first occurrences (at most `cap`). */
  lines: number[];
}

/** Counts one occurrence of CODE (the first one fixes severity and message); keeps up to `cap` lines. */
export function addFinding<S extends string>(
  map: Map<string, FileFinding<S>>,
  cap: number,
  code: string,
  severity: S,
  message: string,
  line?: number,
): void {
  let f = map.get(code);
  if (!f) {
    f = { code, severity, message, count: 0, lines: [] };
    map.set(code, f);
  }
  f.count++;
  if (line !== undefined && f.lines.length < cap) f.lines.push(line);
}

/** The report's findings section: `findings: none — OK` (unless the file was unreadable), or one line each. */
export function renderFindings(
  out: string[],
  findings: readonly FileFinding[],
  unreadable: string | null | undefined,
): void {
  if (findings.length === 0 && !unreadable) out.push('  findings: none — OK');
  else if (findings.length > 0) {
    out.push(`  findings (${findings.length}):`);
    for (const f of findings) {
      const lines = f.lines.length
        ? ` (line${f.lines.length > 1 ? 's' : ''} ${f.lines.slice(0, 8).join(', ')}${f.lines.length > 8 || f.count > f.lines.length ? ', …' : ''})`
        : '';
      out.push(
        `    ${f.severity === 'error' ? 'ERROR' : f.severity === 'warning' ? 'WARN ' : 'NOTE '} ${f.code}${f.count > 1 ? ` ×${f.count}` : ''}${lines}: ${f.message}`,
      );
    }
  }
}

/** The path with its links resolved, or as given when it cannot be. */
export function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** A JSON array column's items as strings; [] when it is not one. */
export function safeJsonArray(s: string): string[] {
  try {
    const v = JSON.parse(s) as unknown;
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}
