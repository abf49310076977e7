// The rollout / app-server analyser behind `latch doctor FILE`: it is fed lines (LineSplitter) and
// keeps the counts, compactions, tool calls and attempts of the report. It touches no file and no
// store: fsck.ts reads the file, opens the store, cross-checks and builds the report.
// The Analyser is built in layers, one file each (state.ts, attempts.ts, rollout.ts, app-server.ts:
// see state.ts); this file is the line entry, which tells the format, and finish().
import { AppServerAnalyser } from './app-server.js';
import { bump, obj } from './util.js';

export { CHUNK, LineSplitter, MAX_KEEP } from './lines.js';
export { LIST_CAP } from './state.js';
export { callIdOfRun, classifyOutput, commandOfItem } from './calls.js';
export { obj } from './util.js';
export type {
  Attempt,
  CompactionReport,
  Finding,
  Format,
  HeldInterval,
  HookRunInfo,
  HookRunsReport,
  Layout,
  Outcome,
  OutcomeCounts,
  SessionInfo,
  Severity,
  WriterInfo,
} from './types.js';

export class Analyser extends AppServerAnalyser {
  // -- lines ----------------------------------------------------------------------------------

  line = (
    buf: Buffer,
    dv: DataView,
    s: number,
    e: number,
    fullLen: number,
    tail: Buffer | null,
    terminated: boolean,
  ): void => {
    const n = ++this.lines;
    this.dv = dv;
    this.bytes += fullLen + (terminated ? 1 : 0);
    // Trailing \r or spaces are not Codex's, but they do not make a line unreadable.
    let end = e;
    while (end > s && (buf[end - 1] === 0x0d || buf[end - 1] === 0x20)) end--;
    if (end === s) {
      if (!terminated) return;
      this.finding('blank_line', 'warning', 'blank line (Codex never writes one)', n);
      return;
    }
    const oversize = tail !== null;
    const last = oversize ? lastNonSpace(tail) : buf[end - 1];
    if (buf[s] !== 0x7b || last !== 0x7d) {
      this.badLine(n, terminated, buf[s] !== 0x7b ? 'not a JSON object' : 'does not end with "}"', buf, s, end);
      return;
    }
    if (this.format === 'unknown') this.detect(buf, s, end);
    if (this.format === 'app-server') {
      this.appServerLine(buf, s, end, n, oversize, terminated);
      return;
    }
    this.rolloutLine(buf, s, end, n, oversize, tail, terminated);
  };

  private detect(buf: Buffer, s: number, e: number): void {
    const head = buf.toString('utf8', s, Math.min(e, s + 200));
    if (/^\{"(?:jsonrpc|id|method)"/.test(head) || (/"method":"/.test(head) && !/^\{"(?:timestamp|type)"/.test(head))) {
      this.format = 'app-server';
      return;
    }
    if (/^\{"timestamp":"[^"]*","ordinal":/.test(head)) {
      this.format = 'rollout';
      this.layout = 'paginated';
    } else if (/"type":"/.test(head)) {
      this.format = 'rollout';
      this.layout = 'legacy';
    }
  }

  // -- end ------------------------------------------------------------------------------------

  finish(): void {
    // Counts kept on the name entries by the rollout fast path.
    for (const en of this.names.entries) {
      if (en.records > 0) bump(this.records, en.str, en.records);
      if (en.ri > 0) bump(this.payloadTypes, this.names.pair('response_item', en.str), en.ri);
      if (en.em > 0) bump(this.payloadTypes, this.names.pair('event_msg', en.str), en.em);
      en.records = en.ri = en.em = 0;
    }
    for (const p of this.pending.values()) this.settle(p);
    this.pending.clear();
    if (this.format === 'app-server') {
      const parts: string[] = [];
      const starts: number[] = [];
      for (const kind of ['hook', 'item', 'turn'] as const) {
        const lines = [...this.open[kind].values()].flat();
        if (lines.length > 0) parts.push(`${lines.length} ${kind === 'hook' ? 'hook run' : kind}(s)`);
        starts.push(...lines);
        this.open[kind].clear();
      }
      const message = `${parts.join(', ')} started in the stream never completed: the capture stopped early or lost lines`;
      for (const line of starts.sort((x, y) => x - y)) this.finding('missing_completion', 'error', message, line);
    }
    // Tool calls by name overall: the sum of the segments' counts.
    this.toolNames.clear();
    for (const seg of this.segments) for (const [name, count] of seg) bump(this.toolNames, name, count);
    for (let i = 0; i < this.compactions.length; i++) {
      const c = this.compactions[i]!;
      c.tool_calls_before = obj(this.segments[i]!);
      c.tool_calls_after = obj(this.segments[i + 1]!);
      c.attempts_after = this.segAttempts[i + 1]!;
    }
  }
}

function lastNonSpace(b: Buffer): number | undefined {
  let i = b.length - 1;
  while (i >= 0 && (b[i] === 0x0d || b[i] === 0x20)) i--;
  return i >= 0 ? b[i] : undefined;
}
