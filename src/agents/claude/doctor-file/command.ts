// The command: `latch doctor FILE` on a Claude Code transcript.
import { homeOf, type Io, json } from '../../../kit/io.js';
import { doctorClaudeFile } from './analyse.js';
import { renderClaudeReport } from './render.js';
import type { ClaudeDoctorOptions } from './types.js';

export async function claudeTranscriptDoctor(io: Io, opts: ClaudeDoctorOptions): Promise<number> {
  const latchHome = opts.latchHome === undefined ? homeOf(io) : opts.latchHome;
  const report = doctorClaudeFile(opts.file, { latchHome });
  if (opts.json) json(io, report);
  else io.out(renderClaudeReport(report));
  if (report.unreadable && !opts.json) io.err(`latch doctor: ${report.unreadable}\n`);
  return report.exit_code;
}
