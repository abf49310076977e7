// The analyser's reading of a rollout (third layer, after attempts.ts): a record's type and ordinal,
// its session, turns, tool calls and their outputs, and its compaction markers, read from the
// line's bytes where the line has Codex's usual shape; JSON.parse only for what needs it (or --full).
import {
  ARGS_KEY,
  CALL_ID_KEY,
  DIGITS,
  digitsAt,
  exitCodeAt,
  FIELD_AT,
  find,
  INPUT_KEY,
  jsonStringEnd,
  matchAt,
  matchWords,
  NAME_KEY,
  Needle,
  PAGED,
  pagedHead,
  payloadTypeAt,
  PieceNeedle,
  PieceScanner,
  SCANNED,
  stringEndShort,
  timestampEnd,
  turnIdAt,
  walkFields,
} from './bytes.js';
import { ROLLOUT_RECORD_TYPES } from '../records.js';
import { AttemptAnalyser } from './attempts.js';
import { BLOCKED, classifyOutput, exited } from './calls.js';
import type { NameEntry } from './names.js';
import { TS_PREFIX } from './state.js';
import { bump, num, str, unescapeJson } from './util.js';

const TYPE_KEY = Buffer.from('"type":"');
const ORD_KEY = Buffer.from('"ordinal":');
const ORD_TAIL = new Needle(',"ordinal":');
const TYPE_TAIL = new Needle(',"type":"');
/** Searched through `Compac` (item types are capitalised; CommandExecution differs at its 4th byte). */
const CC_ITEM = new PieceNeedle(Buffer.from('"type":"ContextCompaction"'), 15);
const BLOCKED_BYTES = Buffer.from(BLOCKED);
const OUTPUT_TAIL = new Needle(',"output":"');

const HEAD = 1024;

export abstract class RolloutAnalyser extends AttemptAnalyser {
  /** Just past the payload type's closing quote on the current line (fast path), or -1. */
  private subEnd = -1;
  /** The item_completed / item_started lines' search for a compaction item (rare: see PieceScanner). */
  private readonly ccItem = new PieceScanner(CC_ITEM);

  protected rolloutLine(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
  ): void {
    const dv = this.dv;
    const headEnd = Math.min(e, s + HEAD);
    // Fast path: {"timestamp":"<ts>","ordinal":<n>,"type":"<type>" read in place, no allocation;
    // first with constant words (a paginated rollout's lines), else a needle at a time.
    let p = s;
    let ord = -1;
    let ti = -1;
    /** The bytes up to the record type were read in the fixed shape (no search). */
    let fastHead = false;
    const paged = pagedHead(buf, dv, s, headEnd);
    if (paged >= 0) {
      ti = paged - TYPE_KEY.length;
      ord = PAGED.ordinal;
      fastHead = true;
    } else if (matchWords(buf, dv, p, TS_PREFIX)) {
      const q = timestampEnd(buf, dv, p + TS_PREFIX.length, Math.min(headEnd, p + 64));
      p = q < 0 ? -1 : q + 1;
      if (p > 0 && matchWords(buf, dv, p, ORD_TAIL)) {
        const v = digitsAt(buf, p + ORD_TAIL.length, headEnd);
        if (v >= 0) {
          ord = v;
          p = DIGITS.end;
        }
      }
      if (p > 0 && matchWords(buf, dv, p, TYPE_TAIL)) {
        ti = p + 1;
        fastHead = true;
      }
    }
    if (ti < 0) {
      ti = find(buf, TYPE_KEY, s, headEnd);
      // The record's own "type" key: at the line start or after a comma (a payload's follows "{").
      while (ti >= 0 && !(ti === s + 1 || buf[ti - 1] === 0x2c)) ti = find(buf, TYPE_KEY, ti + 1, headEnd);
      if (ti >= 0 && ord < 0) {
        const oi = find(buf, ORD_KEY, s, ti);
        if (oi >= 0) ord = digitsAt(buf, oi + ORD_KEY.length, ti);
      }
    }
    let type: string | null = null;
    let typeE: NameEntry | null = null;
    let te = -1;
    if (ti >= 0) {
      typeE = this.names.at(buf, dv, ti + TYPE_KEY.length, headEnd);
      te = this.names.end;
      if (te >= 0) type = typeE ? typeE.str : buf.toString('utf8', ti + TYPE_KEY.length, te);
    }
    let parsed: Record<string, unknown> | null = null;
    if (type === null) {
      parsed = this.parse(buf, s, e, n, terminated, oversize);
      if (!parsed) {
        if (oversize) this.badLine(n, terminated, 'no record type in its first bytes', buf, s, e);
        return;
      }
      type = str(parsed.type);
      if (type === null) {
        this.unknownType('(no type)', n);
        return;
      }
    } else if (!terminated || this.full) {
      // The last line without a newline, or --full: prove it parses.
      parsed = this.parse(buf, s, e, n, terminated, oversize);
      if (!parsed && !oversize) return;
    }
    if (!terminated)
      this.finding(
        'missing_final_newline',
        'warning',
        'the last line has no trailing newline (the writer may have stopped mid-write)',
        n,
      );
    if (typeE) typeE.records++;
    else bump(this.records, type);

    // Ordinal (paginated layout): consecutive from the first line on.
    if (ord >= 0) {
      if (this.ordLast !== null && ord !== this.ordLast + 1) {
        this.finding(
          'ordinal_gap',
          'error',
          'record ordinals are not consecutive: lines were removed, inserted or reordered',
          n,
        );
      }
      if (this.ordFirst === null) this.ordFirst = ord;
      this.ordLast = ord;
    }

    if (!(typeE ? typeE.known : ROLLOUT_RECORD_TYPES.has(type))) {
      this.unknownType(type, n);
      return;
    }
    switch (type) {
      case 'response_item':
      case 'event_msg': {
        this.subEnd = -1;
        const st = parsed
          ? str((parsed.payload as Record<string, unknown> | undefined)?.type)
          : this.subtype(buf, te, headEnd, fastHead);
        let sub: string | null;
        if (st !== null && typeof st === 'object') {
          sub = st.str;
          if (type === 'response_item') st.ri++;
          else st.em++;
        } else {
          sub = st;
          bump(this.payloadTypes, this.names.pair(type, sub ?? '?'));
        }
        if (type === 'response_item') this.responseItem(sub, buf, s, e, n, oversize, tail, terminated, parsed);
        else this.eventMsg(sub, buf, s, e, n, headEnd);
        return;
      }
      case 'turn_context':
        this.turnIdIn(buf, s, headEnd);
        return;
      case 'session_meta':
        this.sessionMeta(buf, s, e, n, oversize, terminated, parsed);
        return;
      case 'compacted':
        this.compacted(buf, s, e, n, oversize, tail, terminated, parsed);
        return;
      default:
        return;
    }
  }

  /** The payload type read from the bytes after the record type: its name entry (counted by the caller), or the string when uncached. */
  private subtype(buf: Buffer, te: number, headEnd: number, fastHead: boolean): NameEntry | string | null {
    if (te < 0) return null;
    let p = -1;
    let fixed = false;
    if (payloadTypeAt(buf, this.dv, te)) {
      p = te + 21;
      fixed = fastHead;
    } else {
      const i = find(buf, '"payload":{"type":"', te, headEnd);
      if (i >= 0) p = i + 19;
    }
    if (p < 0) return null;
    const en = this.names.at(buf, this.dv, p, headEnd);
    const q = this.names.end;
    if (q < 0) return null;
    // Only a line read in the fixed shape up to here lets the field walk start at the payload type.
    if (fixed) this.subEnd = q + 1;
    return en ?? buf.toString('utf8', p, q);
  }

  private sessionMeta(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    let p: Record<string, unknown> = {};
    const o = parsed ?? this.parse(buf, s, e, n, terminated, oversize);
    if (o) p = (o.payload as Record<string, unknown>) ?? {};
    else {
      // oversize: read the fields from the head
      const head = buf.toString('utf8', s, Math.min(e, s + 65536));
      for (const k of [
        'id',
        'session_id',
        'cli_version',
        'originator',
        'history_mode',
        'cwd',
        'forked_from_id',
        'source',
      ]) {
        const m = new RegExp(`"${k}":"((?:[^"\\\\]|\\\\.)*)"`).exec(head);
        if (m) p[k] = unescapeJson(m[1]!);
      }
    }
    const id = str(p.id) ?? str(p.session_id);
    const base = p.history_base as Record<string, unknown> | undefined;
    this.sessions.push({
      session_id: id,
      line: n,
      forked_from: str(p.forked_from_id) ?? str(base?.thread_id) ?? null,
      cwd: str(p.cwd),
    });
    if (this.sessions.length === 1) {
      this.writer.cli_version = str(p.cli_version);
      this.writer.originator = str(p.originator);
      this.writer.history_mode = str(p.history_mode);
      this.writer.source = typeof p.source === 'string' ? p.source : p.source ? JSON.stringify(p.source) : null;
      if (id && this.onSession) this.onSession(id);
    } else if (id !== this.sessions[0]!.session_id) {
      this.finding('several_sessions', 'warning', 'more than one session_meta with different ids in one rollout', n);
    }
  }

  private responseItem(
    sub: string | null,
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    // The model spoke again: the next compaction marker belongs to a new compaction.
    this.group = null;
    switch (sub) {
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        let p: Record<string, unknown> | null = parsed ? ((parsed.payload as Record<string, unknown>) ?? {}) : null;
        if (!p && !this.full)
          p = this.callFields(
            buf,
            s,
            e,
            sub === 'custom_tool_call' ? 'input' : sub === 'local_shell_call' ? null : 'arguments',
            this.subEnd,
          );
        if (!p) {
          const o = this.parse(buf, s, e, n, terminated, oversize);
          if (o) p = (o.payload as Record<string, unknown>) ?? {};
          else {
            if (!oversize) return; // a parse error was recorded
            const head = buf.toString('utf8', s, Math.min(e, s + 65536));
            p = {
              name: /"name":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1],
              call_id:
                /"call_id":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1] ??
                /"call_id":"((?:[^"\\]|\\.)*)"/.exec(tail!.toString('utf8'))?.[1],
            };
          }
        }
        const name = sub === 'local_shell_call' ? 'local_shell_call' : (str(p.name) ?? '?');
        this.toolCall(
          name,
          p,
          n,
          this.compactions.length > 0 && this.keepsCallText() ? this.timestamp(buf, s, e) : null,
        );
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
        this.toolOutput(buf, s, e, n, this.subEnd);
        return;
      default:
        return;
    }
  }

  /**
   * name, call_id and (after a compaction) the argument string of a tool call, read from the line's
   * JSON strings without parsing the rest of it. null when the line is not in the expected shape, or
   * its argument string is one JSON.parse rejects (the full parse then reports the line). The
   * argument string is checked always but decoded only while keepsCallText().
   */
  private callFields(
    buf: Buffer,
    s: number,
    e: number,
    argKey: 'arguments' | 'input' | null,
    from: number,
  ): Record<string, unknown> | null {
    const out: Record<string, unknown> = {};
    const headEnd = Math.min(e, s + 4096);
    const post = this.compactions.length > 0;
    const key = argKey === 'arguments' ? ARGS_KEY : INPUT_KEY;
    // The needles' first occurrences, walked from the payload type when the line has the usual shape.
    const walked = from > s && (argKey !== null || !post) && walkFields(buf, this.dv, from, e, key, post ? 7 : 1);
    let ni = walked ? FIELD_AT[0]! : find(buf, NAME_KEY.bytes, s, headEnd);
    if (ni + NAME_KEY.length > headEnd) ni = -1;
    if (ni >= 0) {
      const a = ni + NAME_KEY.length;
      const known = this.names.known(buf, this.dv, a, headEnd);
      if (known) out.name = known.str;
      else {
        const z = stringEndShort(buf, this.dv, a, headEnd);
        if (z < 0) return null;
        out.name = this.names.get(buf, a, z);
      }
    }
    if (!post) return out; // before any compaction only the name is counted
    if (argKey) {
      const ai = walked ? FIELD_AT[1]! : find(buf, key.bytes, s, headEnd);
      if (ai < 0 || ai + key.length > headEnd) return null;
      const a = ai + key.length;
      const scanned = walked && FIELD_AT[3]! >= 0;
      const z = scanned ? FIELD_AT[3]! : jsonStringEnd(buf, this.dv, a, e);
      // A text JSON.parse would reject sends the line to the full parse (and its parse error).
      if (z < 0 || !(scanned ? FIELD_AT[4] === 1 : SCANNED.valid)) return null;
      // Decoded only while an attempt made from it may still be listed or checked (settle()).
      if (this.keepsCallText()) out[argKey] = JSON.parse(buf.toString('utf8', a - 1, z + 1)) as string;
    }
    const ci = walked ? FIELD_AT[2]! : find(buf, CALL_ID_KEY.bytes, s, e);
    if (ci < 0) return null;
    const z = stringEndShort(buf, this.dv, ci + CALL_ID_KEY.length, e);
    if (z < 0) return null;
    out.call_id = buf.toString('utf8', ci + CALL_ID_KEY.length, z);
    return argKey === null ? null : out;
  }

  private toolOutput(buf: Buffer, s: number, e: number, n: number, from: number): void {
    const headEnd = Math.min(e, s + 2048);
    const dv = this.dv;
    // Fast path: "call_id":"<id>","output":"<text>
    let ci =
      from > s && walkFields(buf, dv, from, e, null, 4) ? FIELD_AT[2]! : find(buf, CALL_ID_KEY.bytes, s, headEnd);
    if (ci + CALL_ID_KEY.length > headEnd) ci = -1;
    if (ci >= 0) {
      const a = ci + CALL_ID_KEY.length;
      const z = stringEndShort(buf, dv, a, headEnd);
      if (z >= 0 && matchWords(buf, dv, z + 1, OUTPUT_TAIL)) {
        const o = z + 1 + OUTPUT_TAIL.length;
        const end = Math.min(e, o + 600);
        // The text matters only to tell a hook's block, or for a call being followed: then its
        // exit code is read from the bytes when it can be, else from the decoded text.
        if (!matchAt(buf, o, BLOCKED_BYTES)) {
          const p = this.pending.take(buf, a, z);
          if (!p) return;
          const exit = exitCodeAt(buf, dv, o, end);
          this.answered(p, exit === null ? classifyOutput(buf.toString('utf8', o, end)) : exited(exit), n);
          return;
        }
        this.output(buf.toString('utf8', a, z), classifyOutput(buf.toString('utf8', o, end)), n);
        return;
      }
    }
    const head = buf.toString('utf8', s, headEnd);
    const id = /"call_id":"((?:[^"\\]|\\.)*)"/.exec(head)?.[1] ?? null;
    // output: a string, or (older writers) content items whose first text is the output
    const m =
      /"output":"((?:[^"\\]|\\.)*)/.exec(head) ??
      /"output":\[\{[^}]*?"text":"((?:[^"\\]|\\.)*)/.exec(head) ??
      /"output":\{"output":"((?:[^"\\]|\\.)*)/.exec(head);
    this.output(id, classifyOutput(m?.[1] ?? ''), n);
  }

  private eventMsg(sub: string | null, buf: Buffer, s: number, e: number, n: number, headEnd: number): void {
    if (sub === 'item_completed' || sub === 'item_started') {
      if (this.ccItem.find(buf, this.dv, s, headEnd) >= 0) {
        const m = /"item":\{"type":"ContextCompaction","id":"((?:[^"\\]|\\.)*)"/.exec(buf.toString('utf8', s, headEnd));
        this.marker('item', m?.[1] ?? null, n, buf, s, e);
      }
    } else if (sub === 'context_compacted') {
      this.marker('legacy', null, n, buf, s, e);
    } else if (sub === 'task_started') {
      this.turnIdIn(buf, s, headEnd);
    }
  }

  /** The first "turn_id" in buf[s..headEnd) starts a turn: read from the bytes, or by the regex when its value has a backslash. */
  private turnIdIn(buf: Buffer, s: number, headEnd: number): void {
    let id = turnIdAt(buf, s, headEnd);
    if (id === undefined) id = /"turn_id":"((?:[^"\\]|\\.)*)"/.exec(buf.toString('utf8', s, headEnd))?.[1] ?? null;
    if (id !== null) this.turn(id);
  }

  private compacted(
    buf: Buffer,
    s: number,
    e: number,
    n: number,
    oversize: boolean,
    tail: Buffer | null,
    terminated: boolean,
    parsed: Record<string, unknown> | null,
  ): void {
    const c = this.marker('compacted', null, n, buf, s, e);
    const o = parsed ?? this.parse(buf, s, e, n, terminated, oversize);
    if (o) {
      const p = (o.payload as Record<string, unknown>) ?? {};
      const msg = p.message;
      c.summary = typeof msg === 'string' ? (msg.length === 0 ? 'remote' : 'local') : c.summary;
      c.window_number = num(p.window_number) ?? c.window_number;
      c.window_id = str(p.window_id) ?? c.window_id;
      c.previous_window_id = str(p.previous_window_id) ?? c.previous_window_id;
    } else if (oversize) {
      const head = buf.toString('utf8', s, Math.min(e, s + 4096));
      const t = tail!.toString('utf8');
      if (/"payload":\{"message":""/.test(head)) c.summary = 'remote';
      else if (/"payload":\{"message":"./.test(head)) c.summary = 'local';
      const wn = /"window_number":(\d+)/.exec(t);
      if (wn) c.window_number = Number(wn[1]);
      c.window_id = /"window_id":"([^"]*)"/.exec(t.replace(/"(first|previous)_window_id"/g, '"_'))?.[1] ?? c.window_id;
      c.previous_window_id = /"previous_window_id":"([^"]*)"/.exec(t)?.[1] ?? c.previous_window_id;
    }
  }
}
