// `latch report`: what the store knows about a workspace (or some of its sessions), told as a story.
// Every format opens with the same three-line summary (compactions and whether a session is latched
// now; writes blocked and writes that ran while latched; verifications and who confirmed), then the
// attempts on Latch itself, the blocked calls grouped by reason (each reason's text once), and the
// writes that ran (before the trip, while latched, after verification) apart from the reads (data.ts).
//   --html FILE   one self-contained HTML file: header, that story (a write that ran while latched in
//                 red), sessions (each with its agent), the interleaved timeline (turns, reads and
//                 writes with the files they changed, compactions, latch trips, denials, verifications
//                 with their evidence, outside edits) and a per-file view (every
//                 change, newest first, who made it). Semantic HTML that reads without JavaScript; an
//                 inline script only adds filters and expand/collapse. No external resource of any kind:
//                 inline CSS and JS, no fonts or images, and a Content-Security-Policy that admits only
//                 this file's own style and script (by hash), so even a record that escaped escaping
//                 could not run or load anything.
//   --markdown    that story and the evidence tables, short enough for a pull-request comment: long
//                 lists end in "…and N more" (stdout, or --out FILE).
//   --json        the same data for programs, one JSON object on stdout (its shape: json.ts). With
//                 --html or --markdown --out FILE too, the "Wrote" lines go to stderr.
// Everything shown comes from the records (timeline() of shared/timeline.ts, sessionJson() of
// shared/session.ts and the transitions' evidence); every record-derived string is escaped for its
// output format. The data is read in data.ts; markdown.ts, html.ts and json.ts render it.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT, ExitError } from '../../base/errors.js';
import { withStore, type Io } from '../../kit/io.js';
import { collectReport } from './data.js';
import { renderHtml } from './html.js';
import { renderJson } from './json.js';
import { renderMarkdown } from './markdown.js';

export interface ReportOptions {
  cwd?: string;
  session?: string;
  html?: string;
  markdown?: boolean;
  out?: string;
  /** The report's data as JSON on stdout (json.ts). */
  json?: boolean;
}

export const REPORT_USAGE =
  'usage: latch report [--cwd DIR] [--session ID] (--html FILE | --markdown [--out FILE] | --json)';

export async function report(io: Io, opts: ReportOptions): Promise<number> {
  if (!opts.html && !opts.markdown && !opts.json) {
    io.err(`latch report: choose --html FILE or --markdown (or --json)\n${REPORT_USAGE}\n`);
    return EXIT.usage;
  }
  if (opts.html === '' || opts.out === '') throw new ExitError(EXIT.usage, REPORT_USAGE);
  if (opts.out && !opts.markdown)
    throw new ExitError(EXIT.usage, `--out is the Markdown destination; add --markdown\n${REPORT_USAGE}`);
  if (opts.json && opts.markdown && !opts.out)
    throw new ExitError(
      EXIT.usage,
      `--json and --markdown both print on stdout; write the Markdown with --out FILE\n${REPORT_USAGE}`,
    );
  const data = withStore(io, (db) => collectReport(db, io, opts));
  // With --json, stdout holds the JSON alone.
  const note = opts.json ? io.err : io.out;
  if (opts.html) {
    const file = resolve(io.cwd, opts.html);
    writeFileSync(file, renderHtml(data));
    if (!opts.markdown)
      note(`Wrote ${file} (${data.entries.length} timeline entries, ${data.files.length} file changes).\n`);
  }
  if (opts.markdown) {
    const md = renderMarkdown(data);
    if (opts.out) {
      const file = resolve(io.cwd, opts.out);
      writeFileSync(file, md);
      note(`Wrote ${file}.\n`);
    } else io.out(md);
  }
  if (opts.json) io.out(renderJson(data));
  return EXIT.ok;
}
