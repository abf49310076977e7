// The one rule for "this tool output is a complete read of a brief page": read receipts (recordReads)
// and native-resume qualification both ask it, so a read the guard counts is a read resume accepts.
// The agent unwraps its own tool-output format (exit status, truncation, error wrappers: Agent.toolOutput);
// this module checks the page block inside against the brief (format: src/continuity/brief.ts).
import type { ToolOutput } from '../agents/agent.js';
import { createHash } from 'node:crypto';

/** What a read is checked against: the brief's session, version and page digests. */
export interface BriefDigest {
  session: string;
  version: number;
  pages: { n: number; sha256: string }[];
}

export interface PageRead {
  ok: boolean;
  /** The page the output claims to be (null when none can be told). */
  page: number | null;
  /** Every reason it is not a complete read (empty when ok). */
  reasons: string[];
}

/** Is `output` (one tool output, as the transcript recorded it) a complete read of one page of `brief`? */
export function pageRead(output: string, brief: BriefDigest, toolOutput: (output: string) => ToolOutput): PageRead {
  const t = toolOutput(output);
  const reasons = t.ok ? [] : [...t.problems];
  if (t.body === null) {
    const claimed = /LATCH-BRIEF session=\S+ version=\d+ page=(\d+)\//.exec(output);
    return { ok: false, page: claimed ? Number(claimed[1]) : null, reasons };
  }
  const pages = parsePages(t.body);
  const headers = countHeaders(t.body);
  if (pages.length === 0) {
    reasons.push(headers ? 'the page block is incomplete (no matching end line)' : 'no brief page in the output');
    return { ok: false, page: null, reasons };
  }
  if (pages.length > 1) reasons.push(`${pages.length} page blocks in one output; read one page per command`);
  if (headers > pages.length) reasons.push('an incomplete page block is in the output');
  const p = pages[0]!;
  if (p.session !== brief.session) reasons.push(`the page belongs to session ${p.session}, not ${brief.session}`);
  if (p.version !== brief.version)
    reasons.push(`the page is of version ${p.version}; the current version is ${brief.version}`);
  const total = brief.pages.length;
  if (p.total !== total || p.page < 1 || p.page > total)
    reasons.push(`page ${p.page}/${p.total} does not exist in version ${brief.version} (${total} pages)`);
  if (!p.bodyOk) reasons.push(`page ${p.page}: the body does not match its sha256`);
  else if (p.version === brief.version && brief.pages.find((x) => x.n === p.page)?.sha256 !== p.sha256)
    reasons.push(`page ${p.page}: the digest differs from the recorded page`);
  return { ok: reasons.length === 0, page: p.page, reasons };
}

export interface ParsedPage {
  session: string;
  version: number;
  page: number;
  total: number;
  sha256: string;
  /** The recomputed digest of the body equals the header's. */
  bodyOk: boolean;
  /** Offsets of the block in the text: [start of header, end of END line). */
  start: number;
  end: number;
  body: string;
}

const HEADER_RE = /^<<<LATCH-BRIEF session=(\S+) version=(\d+) page=(\d+)\/(\d+) sha256=([0-9a-f]{64})>>>$/gm;

/** Every complete page block in an arbitrary text (e.g. a tool output). */
export function parsePages(text: string): ParsedPage[] {
  const out: ParsedPage[] = [];
  HEADER_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = HEADER_RE.exec(text))) {
    const [header, session, version, page, total, digest] = m as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const bodyStart = m.index + header.length + 1;
    if (text[m.index + header.length] !== '\n') continue;
    const endLine = `<<<END-LATCH-BRIEF page=${page}/${total} version=${version}>>>`;
    let from = bodyStart;
    let endAt = -1;
    for (;;) {
      const j = text.indexOf(`\n${endLine}`, from);
      if (j < 0) break;
      const after = j + 1 + endLine.length;
      if (after === text.length || text[after] === '\n' || text[after] === '\r') {
        endAt = j;
        break;
      }
      from = j + 1;
    }
    if (endAt < 0) continue;
    const body = text.slice(bodyStart, endAt);
    const end = endAt + 1 + endLine.length;
    out.push({
      session,
      version: Number(version),
      page: Number(page),
      total: Number(total),
      sha256: digest,
      bodyOk: createHash('sha256').update(body, 'utf8').digest('hex') === digest,
      start: m.index,
      end,
      body,
    });
    HEADER_RE.lastIndex = end;
  }
  return out;
}

/** How many page headers `text` holds (complete blocks or not). */
export function countHeaders(text: string): number {
  return (text.match(/^<<<LATCH-BRIEF /gm) ?? []).length;
}
