// Small helpers of the analyser: outcome counts, counting maps, field reads, text shortening.
import type { Outcome, OutcomeCounts } from './types.js';

export function emptyCounts(): OutcomeCounts {
  return { total: 0, ran: 0, failed: 0, blocked: 0, unknown: 0, no_output: 0 };
}

/** c[o]++, spelled out: a computed key on this path costs a generic keyed store per call. */
export function countOutcome(c: OutcomeCounts, o: Outcome): void {
  switch (o) {
    case 'ran':
      c.ran++;
      return;
    case 'failed':
      c.failed++;
      return;
    case 'blocked':
      c.blocked++;
      return;
    case 'unknown':
      c.unknown++;
      return;
    case 'no_output':
      c.no_output++;
      return;
  }
}

export function bump(m: Map<string, number>, k: string, n = 1): void {
  m.set(k, (m.get(k) ?? 0) + n);
}

export function obj(m: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}

export function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

export function num(x: unknown): number | null {
  return typeof x === 'number' && Number.isFinite(x) ? x : null;
}

/** JSON string body (escaped) → text; tolerant of a cut-off body. */
export function unescapeJson(body: string): string {
  let b = body;
  for (let i = 0; i < 8; i++) {
    try {
      return JSON.parse(`"${b}"`) as string;
    } catch {
      b = b.slice(0, -1);
    }
  }
  return body;
}

export function oneLine(s: string, max = 160): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}
