// Brief reads: a Latch brief page read in the file, checked with the one page-read rule.
import { type BriefDigest, pageRead, parsePages } from '../../../continuity/page-read.js';
import { claudeToolOutput } from '../outputs.js';
import type { PendingRead } from './read.js';
import type { BriefReadInfo } from './types.js';

export function checkRead(r: PendingRead, digest: BriefDigest | null): BriefReadInfo {
  const pages = parsePages(claudeToolOutput(r.envelope).body ?? r.text);
  const p = pages[0];
  let d = digest;
  if (!d) {
    // No Latch brief to compare with: the page is checked against its own header (complete, whole, digest).
    d = p
      ? {
          session: p.session,
          version: p.version,
          pages: Array.from({ length: Math.max(p.total, 0) }, (_, i) => ({
            n: i + 1,
            sha256: i + 1 === p.page ? p.sha256 : '',
          })),
        }
      : { session: '', version: 0, pages: [] };
  }
  const v = pageRead(r.envelope, d, claudeToolOutput);
  return {
    line: r.line,
    call_id: r.callId,
    session: p?.session ?? null,
    version: p?.version ?? null,
    page: p?.page ?? v.page,
    total: p?.total ?? null,
    ok: v.ok,
    reasons: v.reasons,
    checked_against: digest ? 'store' : 'page',
    store_ok: null,
  };
}
