// Byte-level readers for `latch doctor` (src/agents/codex/fsck/fsck.ts): they read a line's fields in place in the
// read buffer, without making a string or a native call per line. Every one of them either returns
// exactly what the string-based reading it replaces would (JSON.parse, a regex on the decoded text, a
// search from the line start), or says it cannot (-1 / null / false) so the caller takes that path.
//
// Why reading bytes is exact here: every needle is ASCII, and UTF-8 decoding turns an ASCII byte into
// the same character and a non-ASCII byte never into an ASCII one (an invalid sequence becomes U+FFFD).
// So "the text starts with / contains ASCII X" holds on the bytes iff it holds on the decoded text;
// character offsets equal byte offsets only while the bytes are ASCII, and the readers that count
// characters (exitCodeAt) give up at the first non-ASCII byte.
//
// Most of them read four bytes at a time through a DataView over the line's buffer (dv): a whole
// word compared with a needle's, or tested for a byte value by the exact zero-byte test below.

// ---------------------------------------------------------------------------------------------
// Four bytes at a time

/** Some byte of the 32-bit word v is 0: exact (a byte >= 1 never borrows, so no false positive). */
function hasZeroByte(v: number): boolean {
  return ((v - 0x01010101) & ~v & 0x80808080) !== 0;
}

/** Some byte of v is '"'. */
function hasQuote(v: number): boolean {
  return hasZeroByte(v ^ 0x22222222);
}

/** Some byte of v is '"', '\' or a control character (< 0x20): what a JSON string body must look at. */
function hasJsonSpecial(v: number): boolean {
  return hasZeroByte(v ^ 0x22222222) || hasZeroByte(v ^ 0x5c5c5c5c) || ((v - 0x20202020) & ~v & 0x80808080) !== 0;
}

/** A needle (ASCII text, or a copy of bytes) as little-endian 32-bit words, the last one masked to the needle's length. */
export class Needle {
  readonly bytes: Buffer;
  readonly length: number;
  readonly words: Int32Array;
  readonly masks: Int32Array;

  constructor(text: string | Buffer) {
    this.bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : Buffer.from(text);
    this.length = this.bytes.length;
    const n = (this.length + 3) >> 2;
    const padded = Buffer.alloc(n * 4);
    this.bytes.copy(padded);
    this.words = new Int32Array(n);
    this.masks = new Int32Array(n).fill(-1);
    for (let k = 0; k < n; k++) this.words[k] = padded.readInt32LE(4 * k);
    if (this.length % 4 !== 0) this.masks[n - 1] = (1 << (8 * (this.length % 4))) - 1;
  }
}

/** matchAt(buf, at, needle.bytes), a word at a time through dv (a DataView over exactly buf's bytes). */
export function matchWords(buf: Buffer, dv: DataView, at: number, needle: Needle): boolean {
  if (at < 0 || at + needle.length > buf.length) return false;
  const w = needle.words;
  if (at + 4 * w.length > buf.length) return matchAt(buf, at, needle.bytes);
  const m = needle.masks;
  for (let k = 0; k < w.length; k++) if ((dv.getInt32(at + 4 * k, true) & m[k]!) !== w[k]) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// A byte at a time

/** buf[at..] starts with needle. */
export function matchAt(buf: Buffer, at: number, needle: Buffer): boolean {
  const n = needle.length;
  if (at < 0 || at + n > buf.length) return false;
  for (let i = 0; i < n; i++) if (buf[at + i] !== needle[i]) return false;
  return true;
}

/** buf[at..end) starts with needle. */
function startsAt(buf: Buffer, at: number, end: number, needle: Buffer): boolean {
  return at + needle.length <= end && matchAt(buf, at, needle);
}

/** Index of the next '"' in [from, to), or -1. */
export function quoteAt(buf: Buffer, from: number, to: number): number {
  for (let i = from; i < to; i++) if (buf[i] === 0x22) return i;
  return -1;
}

/** indexOf bounded to [from, to): never scans past the line (a miss would otherwise scan the chunk). */
export function find(buf: Buffer, needle: Buffer | string, from: number, to: number): number {
  if (to <= from) return -1;
  const i = buf.subarray(from, to).indexOf(needle);
  return i < 0 ? -1 : from + i;
}

/**
 * A needle searched natively through a piece of it shorter than 7 bytes: for a pattern that short
 * Node's Buffer search is a memchr and a compare, where a longer one first fills a 256-entry skip
 * table, on every call (about 3x the cost of searching a 1 KiB line head).
 */
export class PieceNeedle {
  readonly piece: Buffer;

  constructor(
    readonly bytes: Buffer,
    /** Where the piece starts in the needle: pick bytes rare in the text searched. */
    readonly at: number,
  ) {
    this.piece = Buffer.from(bytes.subarray(at, at + 6));
  }
}

/**
 * find(buf, needle.bytes, from, to). Every occurrence of the needle holds the piece at needle.at, and
 * the piece's occurrences are tried left to right: the first one inside a whole needle is the first
 * needle.
 */
export function findPiece(buf: Buffer, needle: PieceNeedle, from: number, to: number): number {
  if (to - from < needle.bytes.length) return -1;
  const window = buf.subarray(from, to);
  let i = needle.at;
  for (;;) {
    const j = window.indexOf(needle.piece, i);
    if (j < 0) return -1;
    const start = from + j - needle.at;
    if (start + needle.bytes.length > to) return -1;
    if (matchAt(buf, start, needle.bytes)) return start;
    i = j + 1;
  }
}

/**
 * findPiece for the lines of one buffer taken in order, for a rare needle: the piece is searched
 * natively from a line to its next occurrence in the buffer, however far, and that answer is kept
 * for the following lines, so a buffer is searched about once per piece occurrence instead of once
 * per line (and without a subarray per line).
 *
 * Exact: `next` is the first occurrence of the piece in buf at or after `from` (-1: none), so for
 * any i in [from, next] (or any i >= from when next is -1) it is also the first one at or after i.
 * The answer is reused only for the same `dv`, which the caller guarantees is a view made for one
 * unchanging content of buf (LineSplitter makes a new DataView for every chunk and every carried
 * line); anything else searches afresh. From the first occurrence on, the pieces are tried in
 * order as findPiece tries them.
 */
export class PieceScanner {
  private dv: DataView | null = null;
  private from = 0;
  private next = -1;

  constructor(readonly needle: PieceNeedle) {}

  find(buf: Buffer, dv: DataView, from: number, to: number): number {
    const nd = this.needle;
    if (to - from < nd.bytes.length) return -1;
    let i = from + nd.at;
    for (;;) {
      let j: number;
      if (this.dv === dv && this.from <= i && (this.next < 0 || i <= this.next)) j = this.next;
      else {
        j = buf.indexOf(nd.piece, i);
        this.dv = dv;
        this.from = i;
        this.next = j;
      }
      if (j < 0) return -1;
      const start = j - nd.at;
      if (start + nd.bytes.length > to) return -1;
      if (matchAt(buf, start, nd.bytes)) return start;
      i = j + 1;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Line heads

/** The little-endian word of text's bytes at..at+3 (zero past its end). */
function word(text: string, at: number): number {
  return Buffer.from(text.padEnd(at + 4, '\0'), 'latin1').readInt32LE(at);
}

const TS_0 = word('{"timestamp":"', 0);
const TS_1 = word('{"timestamp":"', 4);
const TS_2 = word('{"timestamp":"', 8);
const TS_3 = word('{"timestamp":"', 12);
const ORD_0 = word('","ordinal":', 0);
const ORD_1 = word('","ordinal":', 4);
const ORD_2 = word('","ordinal":', 8);
const TYPE_0 = word(',"type":"', 0);
const TYPE_1 = word(',"type":"', 4);

/** Set by pagedHead: the record's ordinal. */
export const PAGED = { ordinal: -1 };

/**
 * The head every line of a paginated rollout starts with, `{"timestamp":"<24-byte timestamp>",`
 * `"ordinal":<digits>,"type":"`, read with constant words: the index where the record type starts
 * (PAGED.ordinal: the ordinal), or -1 when the line does not start exactly so or is too short for
 * these reads, and the caller reads it the general way. When it returns, that way reads the same:
 * the prefix, the first quote after it, `,"ordinal":`, the digits and `,"type":"` at the same places.
 */
/** Set by digitsAt: the index just past the digits it read. */
export const DIGITS = { end: -1 };

/** The value of the decimal digits starting at buf[from] (before `to`), or -1 when there is none there; DIGITS.end is past them. */
export function digitsAt(buf: Buffer, from: number, to: number): number {
  let d = from;
  let v = 0;
  for (; d < to; d++) {
    const c = buf[d]!;
    if (c < 0x30 || c > 0x39) break;
    v = v * 10 + (c - 0x30);
  }
  DIGITS.end = d;
  return d > from ? v : -1;
}

export function pagedHead(buf: Buffer, dv: DataView, s: number, headEnd: number): number {
  if (s + 64 > headEnd) return -1;
  if (
    dv.getInt32(s, true) !== TS_0 ||
    dv.getInt32(s + 4, true) !== TS_1 ||
    dv.getInt32(s + 8, true) !== TS_2 ||
    (dv.getInt32(s + 12, true) & 0xffff) !== TS_3
  )
    return -1;
  for (let k = s + 14; k < s + 38; k += 4) if (hasQuote(dv.getInt32(k, true))) return -1;
  if (dv.getInt32(s + 38, true) !== ORD_0 || dv.getInt32(s + 42, true) !== ORD_1 || dv.getInt32(s + 46, true) !== ORD_2)
    return -1;
  const d0 = s + 50;
  let d = d0;
  let v = 0;
  for (; d < headEnd; d++) {
    const c = buf[d]!;
    if (c < 0x30 || c > 0x39) break;
    v = v * 10 + (c - 0x30);
  }
  if (d === d0 || d + 12 > buf.length) return -1;
  if (dv.getInt32(d, true) !== TYPE_0 || dv.getInt32(d + 4, true) !== TYPE_1 || buf[d + 8] !== 0x22) return -1;
  PAGED.ordinal = v;
  return d + 9;
}

const PT_0 = word('","payload":{"type":"', 0);
const PT_1 = word('","payload":{"type":"', 4);
const PT_2 = word('","payload":{"type":"', 8);
const PT_3 = word('","payload":{"type":"', 12);
const PT_4 = word('","payload":{"type":"', 16);
const PAYLOAD_TYPE = Buffer.from('","payload":{"type":"');

/** buf[at..] starts with `","payload":{"type":"` (matchAt, with constant words). */
export function payloadTypeAt(buf: Buffer, dv: DataView, at: number): boolean {
  if (at < 0 || at + 21 > buf.length) return false;
  if (at + 24 > buf.length) return matchAt(buf, at, PAYLOAD_TYPE);
  return (
    dv.getInt32(at, true) === PT_0 &&
    dv.getInt32(at + 4, true) === PT_1 &&
    dv.getInt32(at + 8, true) === PT_2 &&
    dv.getInt32(at + 12, true) === PT_3 &&
    dv.getInt32(at + 16, true) === PT_4 &&
    buf[at + 20] === 0x22
  );
}

/**
 * quoteAt(buf, from, to) for a line's timestamp: when the 24 bytes of an ISO-8601 UTC timestamp
 * (`2026-11-29T09:20:29.656Z`) hold no quote and a quote follows.
 */
export function timestampEnd(buf: Buffer, dv: DataView, from: number, to: number): number {
  const q = from + 24;
  if (q < to && buf[q] === 0x22) {
    let k = from;
    while (k < q && !hasQuote(dv.getInt32(k, true))) k += 4;
    if (k === q) return q;
  }
  return quoteAt(buf, from, to);
}

// ---------------------------------------------------------------------------------------------
// JSON strings

/** Index of the closing quote of a JSON string whose body starts at `from`, or -1 before `to`. */
export function stringEnd(buf: Buffer, from: number, to: number): number {
  let i = from;
  for (;;) {
    const q = buf.indexOf(0x22, i);
    if (q < 0 || q >= to) return -1;
    if (!escaped(buf, from, q)) return q;
    i = q + 1;
  }
}

/** The quote at q is preceded by an odd run of backslashes (after `from`). */
function escaped(buf: Buffer, from: number, q: number): boolean {
  let bs = 0;
  for (let k = q - 1; k >= from && buf[k] === 0x5c; k--) bs++;
  return (bs & 1) === 1;
}

/**
 * stringEnd, reading the first 96 bytes in JS (short ids and names end there, without a native
 * call): words without a quote are passed whole, and a quote found is checked as stringEnd does.
 */
export function stringEndShort(buf: Buffer, dv: DataView, from: number, to: number): number {
  const lim = Math.min(to, from + 96);
  let i = from;
  for (;;) {
    while (i + 4 <= lim && !hasQuote(dv.getInt32(i, true))) i += 4;
    const q = quoteAt(buf, i, lim);
    if (q < 0) break;
    if (!escaped(buf, from, q)) return q;
    i = q + 1;
  }
  return lim < to ? stringEnd(buf, from, to) : -1;
}

/** Bytes that may follow a backslash in a JSON string (`u` is checked with its four hex digits). */
const ESCAPE = new Uint8Array(128);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

/** Set by jsonStringEnd: whether the body it closed is one JSON.parse accepts. */
export const SCANNED = { valid: false };

/**
 * stringEnd in one pass that also checks the body as JSON.parse would (SCANNED.valid): no raw
 * control character, only the escapes \" \\ \/ \b \f \n \r \t \uXXXX. The closing quote is the same
 * one stringEnd finds: a backslash run is read in pairs from its start, so a quote after it is
 * escaped exactly when the run is odd (the four digits of \u are read as plain bytes, as stringEnd
 * reads them). Bytes >= 0x80 decode to characters JSON allows anywhere in a string; words holding
 * none of '"', '\' or a control character are passed whole.
 */
export function jsonStringEnd(buf: Buffer, dv: DataView, from: number, to: number): number {
  let ok = true;
  let i = from;
  for (;;) {
    while (i + 4 <= to && !hasJsonSpecial(dv.getInt32(i, true))) i += 4;
    if (i >= to) break;
    const c = buf[i]!;
    if (c === 0x22) {
      SCANNED.valid = ok;
      return i;
    }
    if (c === 0x5c) {
      if (++i >= to) break;
      const x = buf[i]!;
      if (x === 0x75)
        ok &&=
          i + 4 < to &&
          HEX[buf[i + 1]!] === 1 &&
          HEX[buf[i + 2]!] === 1 &&
          HEX[buf[i + 3]!] === 1 &&
          HEX[buf[i + 4]!] === 1;
      else if (x >= 0x80 || ESCAPE[x] !== 1) ok = false;
    } else if (c < 0x20) ok = false;
    i++;
  }
  SCANNED.valid = false;
  return -1;
}

export const NAME_KEY = new Needle('"name":"');
export const CALL_ID_KEY = new Needle('"call_id":"');
export const ARGS_KEY = new Needle('"arguments":"');
export const INPUT_KEY = new Needle('"input":"');

/**
 * Where walkFields found the needles "name":", the argument key and "call_id":" (-1: not asked or
 * not found); [3] the closing quote of the argument's value when the walk went past it (else -1),
 * and [4] 1 when that value is one JSON.parse accepts.
 */
export const FIELD_AT = new Int32Array(5);

/**
 * Walks a payload's string fields `,"key":"value"` from p (just past the closing quote of a string)
 * up to e, noting in FIELD_AT the first position of the needles "name":" (want & 1), argKey (want & 2)
 * and "call_id":" (want & 4). Every value passed is a JSON string closed by an unescaped quote and
 * followed by ',': no needle can start inside it or at its quotes, so a needle found at a key is its
 * first occurrence in the line, as a search from the line start would find. false when the line
 * leaves that shape before all were found (the caller then searches).
 */
export function walkFields(
  buf: Buffer,
  dv: DataView,
  p: number,
  e: number,
  argKey: Needle | null,
  want: number,
): boolean {
  FIELD_AT[0] = FIELD_AT[1] = FIELD_AT[2] = FIELD_AT[3] = -1;
  let need = want;
  while (need !== 0) {
    if (p + 2 > e || buf[p] !== 0x2c || buf[p + 1] !== 0x22) return false;
    const k = p + 1;
    const kq = quoteAt(buf, k + 1, Math.min(e, k + 40));
    if (kq < 0 || kq + 3 > e || buf[kq + 1] !== 0x3a || buf[kq + 2] !== 0x22) return false;
    const v = kq + 3;
    const len = v - k;
    if ((need & 1) !== 0 && len === NAME_KEY.length && matchWords(buf, dv, k, NAME_KEY)) {
      FIELD_AT[0] = k;
      need &= ~1;
    } else if ((need & 2) !== 0 && argKey !== null && len === argKey.length && matchWords(buf, dv, k, argKey)) {
      FIELD_AT[1] = k;
      need &= ~2;
    } else if ((need & 4) !== 0 && len === CALL_ID_KEY.length && matchWords(buf, dv, k, CALL_ID_KEY)) {
      FIELD_AT[2] = k;
      need &= ~4;
    }
    if (need === 0) return true;
    const isArg = k === FIELD_AT[1];
    const z = isArg ? jsonStringEnd(buf, dv, v, e) : stringEndShort(buf, dv, v, e);
    if (z < 0) return false;
    if (isArg) {
      FIELD_AT[3] = z;
      FIELD_AT[4] = SCANNED.valid ? 1 : 0;
    }
    p = z + 1;
  }
  return true;
}

const TURN_ID_KEY = new PieceNeedle(Buffer.from('"turn_id":"'), 5);

/**
 * /"turn_id":"((?:[^"\\]|\\.)*)"/ on the text of buf[s..end), read from the bytes for a value
 * without a backslash (an id): the first key's value up to its closing quote. null: no such key;
 * undefined: the value has a backslash or no closing quote before `end` (the caller runs the regex).
 */
export function turnIdAt(buf: Buffer, s: number, end: number): string | null | undefined {
  const k = findPiece(buf, TURN_ID_KEY, s, end);
  if (k < 0) return null;
  const v = k + TURN_ID_KEY.bytes.length;
  for (let i = v; i < end; i++) {
    const c = buf[i]!;
    if (c === 0x22) return buf.toString('utf8', v, i);
    if (c === 0x5c) return undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Tool outputs

const BLOCKED_PREFIX = Buffer.from('Command blocked by PreToolUse hook: ');
const PATCH_FAILED = Buffer.from('apply_patch verification failed');
const PROCESS_EXITED = new Needle('Process exited with code ');
const EXIT_CODE = new Needle('Exit code: ');

/**
 * The exit code classifyOutput() reads from a call's output text when it reads one, taken from the
 * bytes buf[o..end) that the text would be decoded from: the first `Process exited with code N` in
 * its first 400 characters, else a leading `Exit code: N`. null when the text starts with a hook's
 * block or a failed patch, has no exit code, or has a non-ASCII byte where characters are counted:
 * the caller then decodes the text and calls classifyOutput().
 */
export function exitCodeAt(buf: Buffer, dv: DataView, o: number, end: number): number | null {
  if (end <= o || startsAt(buf, o, end, BLOCKED_PREFIX) || startsAt(buf, o, end, PATCH_FAILED)) return null;
  // /Process exited with code (-?\d+)/ on the first 400 characters, which are the first 400 bytes
  // while they are ASCII. Words of ASCII without a 'P' are passed whole.
  const lim = Math.min(end, o + 400);
  let i = o;
  while (i < lim) {
    if (i + 4 <= lim) {
      const v = dv.getInt32(i, true);
      if ((v & 0x80808080) === 0 && !hasZeroByte(v ^ 0x50505050)) {
        i += 4;
        continue;
      }
    }
    const c = buf[i]!;
    if (c >= 0x80) return null;
    if (c === 0x50 && i + PROCESS_EXITED.length <= lim && matchWords(buf, dv, i, PROCESS_EXITED)) {
      const x = integerAt(buf, i + PROCESS_EXITED.length, lim);
      if (x !== null) return x;
    }
    i++;
  }
  // /^Exit code: (-?\d+)/ on the whole text.
  return o + EXIT_CODE.length <= end && matchWords(buf, dv, o, EXIT_CODE)
    ? integerAt(buf, o + EXIT_CODE.length, end)
    : null;
}

/** Number(m[1]) for /^(-?\d+)/ on buf[p..end), or null when it does not match. */
function integerAt(buf: Buffer, p: number, end: number): number | null {
  const neg = p < end && buf[p] === 0x2d;
  const d0 = neg ? p + 1 : p;
  let d = d0;
  let v = 0;
  for (; d < end; d++) {
    const c = buf[d]!;
    if (c < 0x30 || c > 0x39) break;
    v = v * 10 + (c - 0x30);
  }
  if (d === d0) return null;
  // Up to 15 digits the sum is exact; beyond, let Number() round as the regex path does.
  if (d - d0 > 15) return Number(buf.toString('latin1', p, d));
  return neg ? -v : v;
}
