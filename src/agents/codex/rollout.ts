// Incremental scan of a Codex rollout (transcript_path) for compaction markers.
// Reads only the bytes appended since the last scan; consumes whole lines only.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import {
  EMPTY_SCAN,
  type BriefOutput,
  type ScanResult,
  type ScanState,
  type SessionMeta,
  type TranscriptCompaction,
  type TurnIdentity,
} from '../../session/transcript.js';

/** Markers of one compaction that may arrive as several lines (item started/completed, compacted, legacy). */
export interface MarkerGroup {
  itemId: string | null;
  hasCompacted: boolean;
  hasLegacy: boolean;
  hasItem: boolean;
}

export type {
  BriefOutput,
  ScanResult,
  ScanState,
  SessionMeta,
  TranscriptCompaction,
  TurnIdentity,
} from '../../session/transcript.js';
export { EMPTY_SCAN };

/** The carry-over this reader keeps in ScanState.group (stored as JSON: checked, not trusted). */
function isMarkerGroup(g: unknown): g is MarkerGroup {
  if (g === null || typeof g !== 'object') return false;
  const o = g as Record<string, unknown>;
  return (
    (o.itemId === null || typeof o.itemId === 'string') &&
    typeof o.hasCompacted === 'boolean' &&
    typeof o.hasLegacy === 'boolean' &&
    typeof o.hasItem === 'boolean'
  );
}

const CHUNK = 1 << 16;
const NL = 0x0a;

/** Scan `path` from `prev.offset`. Throws when the file cannot be read (callers fail closed). */
export function scanTranscript(path: string, prev: ScanState): ScanResult {
  const fd = openSync(path, 'r');
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) throw new Error(`transcript ${path} is not a regular file`);
    const dev = String(st.dev);
    const ino = String(st.ino);
    const size = Number(st.size);
    let reset: string | null = null;
    let start: ScanState = prev;
    if (prev.dev !== null && (prev.dev !== dev || prev.ino !== ino)) {
      reset = `transcript ${path} was replaced (device/inode changed)`;
    } else if (size < prev.offset) {
      reset = `transcript ${path} shrank from ${prev.offset} to ${size} bytes`;
    }
    if (reset) start = { ...EMPTY_SCAN };
    const scanner = new LineScanner(start);
    const bytesRead = scanner.run(fd, size);
    const state: ScanState = {
      offset: scanner.offset,
      dev,
      ino,
      compactions: Math.max(scanner.count, reset ? prev.compactions : 0),
      group: scanner.group,
    };
    // After a reset only compactions beyond what was already counted are new.
    const compactions = reset ? scanner.found.filter((c) => c.index > prev.compactions) : scanner.found;
    return {
      state,
      compactions,
      outputs: scanner.outputs,
      turnContext: scanner.turnContext,
      briefOutputs: scanner.briefOutputs,
      meta: scanner.meta,
      reset,
      badLines: scanner.badLines,
      bytesRead,
    };
  } finally {
    closeSync(fd);
  }
}

class LineScanner {
  offset: number;
  count: number;
  group: MarkerGroup | null;
  found: TranscriptCompaction[] = [];
  outputs: string[] = [];
  turnContext: TurnIdentity | null = null;
  briefOutputs: BriefOutput[] = [];
  meta: SessionMeta | null = null;
  badLines = 0;

  constructor(s: ScanState) {
    this.offset = s.offset;
    this.count = s.compactions;
    this.group = isMarkerGroup(s.group) ? { ...s.group } : null;
  }

  run(fd: number, size: number): number {
    let pos = this.offset;
    let carry: Buffer | null = null;
    let read = 0;
    const buf = Buffer.allocUnsafe(CHUNK);
    while (pos < size) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
      if (n <= 0) break;
      read += n;
      pos += n;
      const data: Buffer = carry ? Buffer.concat([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
      // Offset of data[0] in the file.
      const base = pos - data.length;
      let lineStart = 0;
      for (;;) {
        const nl = data.indexOf(NL, lineStart);
        if (nl < 0) break;
        this.line(data.subarray(lineStart, nl), base + nl + 1);
        lineStart = nl + 1;
      }
      this.offset = base + lineStart;
      carry = lineStart < data.length ? Buffer.from(data.subarray(lineStart)) : null;
    }
    return read;
  }

  private line(line: Buffer, end: number): void {
    if (line.length === 0) return;
    const type = topLevelType(line);
    const mentionsCompact = line.indexOf('ompact') >= 0;
    if (type === 'response_item') {
      // The model spoke again: the next marker belongs to a new compaction. (Codex 0.169 writes
      // compacted, world_state, turn_context, ... then item_completed{ContextCompaction} for ONE
      // compaction, so only a response_item closes the group.)
      this.group = null;
      const callId = outputCallId(line);
      if (callId) {
        this.outputs.push(callId);
        if (line.indexOf(BRIEF_MARK) >= 0) this.briefOutput(line, callId, end);
      }
      return;
    }
    if (type === 'turn_context') {
      this.readTurnContext(line);
      return;
    }
    if (!mentionsCompact && type !== 'session_meta') return;
    let obj: { type?: unknown; timestamp?: unknown; payload?: Record<string, unknown> };
    try {
      obj = JSON.parse(line.toString('utf8'));
    } catch {
      this.badLines++;
      // A line that mentions compaction but cannot be read is counted as one (fail closed; its time
      // unknown).
      if (mentionsCompact) this.marker('compacted', null, end, null, null);
      return;
    }
    const payload = (obj && typeof obj.payload === 'object' && obj.payload) || {};
    const at = obj && typeof obj.timestamp === 'string' ? obj.timestamp : null;
    switch (obj.type) {
      case 'session_meta':
        if (!this.meta) this.meta = readMeta(payload);
        return;
      case 'compacted': {
        const msg = payload.message;
        const kind = typeof msg === 'string' ? (msg.length === 0 ? 'remote' : 'local') : null;
        this.marker('compacted', null, end, kind, at);
        return;
      }
      case 'event_msg': {
        const t = payload.type;
        if (t === 'context_compacted') this.marker('context_compacted', null, end, null, at);
        else if (t === 'item_started' || t === 'item_completed') {
          const item = payload.item as Record<string, unknown> | undefined;
          if (item && item.type === 'ContextCompaction') {
            this.marker('context_compaction_item', typeof item.id === 'string' ? item.id : null, end, null, at);
          }
        }
        return;
      }
      default:
        return;
    }
  }

  private briefOutput(line: Buffer, callId: string, end: number): void {
    try {
      const obj = JSON.parse(line.toString('utf8')) as { payload?: { output?: unknown } };
      const out = obj.payload?.output;
      const text = typeof out === 'string' ? out : JSON.stringify(out ?? '');
      this.briefOutputs.push({ callId, output: text, compactionsBefore: this.count, endOffset: end });
    } catch {
      this.badLines++;
    }
  }

  private readTurnContext(line: Buffer): void {
    try {
      const p = (JSON.parse(line.toString('utf8')) as { payload?: Record<string, unknown> }).payload ?? {};
      this.turnContext = {
        cwd: str(p.cwd),
        model: str(p.model),
        approval_policy: str(p.approval_policy),
        sandbox_policy: p.sandbox_policy ?? null,
        permission_profile: p.permission_profile ?? null,
      };
    } catch {
      this.badLines++;
    }
  }

  private marker(
    via: TranscriptCompaction['via'],
    itemId: string | null,
    end: number,
    kind: 'local' | 'remote' | null,
    at: string | null,
  ): void {
    const g = this.group;
    const joins =
      g !== null &&
      (via === 'compacted'
        ? !g.hasCompacted
        : via === 'context_compacted'
          ? !g.hasLegacy
          : !g.hasItem || g.itemId === null || itemId === null || g.itemId === itemId);
    if (!joins) {
      this.count++;
      this.group = { itemId: null, hasCompacted: false, hasLegacy: false, hasItem: false };
      this.found.push({ index: this.count, endOffset: end, via, summaryKind: kind, at });
    } else if (kind) {
      const last = this.found[this.found.length - 1];
      if (last && last.index === this.count) last.summaryKind = kind;
    }
    const group = this.group!;
    if (via === 'compacted') group.hasCompacted = true;
    if (via === 'context_compacted') group.hasLegacy = true;
    if (via === 'context_compaction_item') {
      group.hasItem = true;
      group.itemId = group.itemId ?? itemId;
    }
  }
}

function str(x: unknown): string | null {
  return typeof x === 'string' ? x : null;
}

function readMeta(p: Record<string, unknown>): SessionMeta {
  const base = p.history_base as Record<string, unknown> | undefined;
  return {
    id: str(p.id) ?? str(p.session_id),
    cliVersion: str(p.cli_version),
    cwd: str(p.cwd),
    forkedFrom: str(p.forked_from_id) ?? str(base?.thread_id) ?? str(base?.session_id) ?? str(base?.id) ?? null,
  };
}

const TYPE_KEY = Buffer.from('"type":"');
const BRIEF_MARK = Buffer.from('<<<LATCH-BRIEF');
const OUTPUT_MARK = Buffer.from('_call_output","');
const CALL_ID_RE = /"call_id":"((?:[^"\\]|\\.)*)"/;

/** The call_id of a tool-output response_item, read from the head of the line. */
export function outputCallId(line: Buffer): string | null {
  const head = line.subarray(0, 400);
  if (head.indexOf(OUTPUT_MARK) < 0) return null;
  const m = CALL_ID_RE.exec(head.toString('utf8'));
  if (!m) return null;
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    return null;
  }
}

/** The record type of a rollout line, read from its first bytes without parsing the whole line. */
export function topLevelType(line: Buffer): string | null {
  const head = line.subarray(0, 160);
  const i = head.indexOf(TYPE_KEY);
  if (i < 0) return null;
  const s = i + TYPE_KEY.length;
  const e = head.indexOf(0x22, s);
  if (e < 0) return null;
  return head.toString('latin1', s, e);
}
