// The analyser's table of short names (its rollout fast path, rollout.ts, reads them from bytes).
import { matchWords, Needle, quoteAt } from './bytes.js';
import { ROLLOUT_RECORD_TYPES } from '../records.js';

/**
 * Short names (record types, payload types, tool names) read from bytes without allocating a string
 * per line. A name seen before is found from its first four bytes in a small table and checked
 * against the bytes of the candidate and the quote after them (known()); a new one by a hash of all
 * its bytes, which finds or makes its one canonical string (entry()).
 */
export interface NameEntry {
  readonly bytes: Needle;
  readonly str: string;
  /** ROLLOUT_RECORD_TYPES.has(str) */
  readonly known: boolean;
  /** Lines counted with this record type (rollout fast path; flushed into records by finish()). */
  records: number;
  /** Lines counted with this payload type under response_item / event_msg (flushed into payload_types). */
  ri: number;
  em: number;
}

const WORD_BITS = 10;
const WORD_SLOTS = 1 << WORD_BITS;
const WORD_PROBES = 4;

export class Names {
  private readonly buckets = new Map<number, NameEntry[]>();
  private readonly pairs = new Map<string, Map<string, string>>();
  /**
   * Names of four bytes or more with no '"' or '\\' by their first four bytes: entry index + 1 (0:
   * empty), at most WORD_PROBES slots after the word's own (names that do not fit are only hashed).
   */
  private readonly byWord = new Int32Array(WORD_SLOTS);
  readonly entries: NameEntry[] = [];
  /** Set by at(): the index of the quote that ends the name, or -1. */
  end = -1;

  /**
   * The entry of a name in byWord that buf[from..] holds, closed by a quote before `to`. That quote
   * is the first one after `from` (the name has none) and is not escaped (the name has no '\\'):
   * where quoteAt and stringEndShort end the name. null when there is none (the caller reads on).
   */
  known(buf: Buffer, dv: DataView, from: number, to: number): NameEntry | null {
    if (from + 4 > to) return null;
    let slot = wordSlot(dv.getInt32(from, true));
    for (let k = 0; k < WORD_PROBES; k++, slot = (slot + 1) & (WORD_SLOTS - 1)) {
      const id = this.byWord[slot]! - 1;
      if (id < 0) return null;
      const c = this.entries[id]!;
      const q = from + c.bytes.length;
      if (q < to && buf[q] === 0x22 && matchWords(buf, dv, from, c.bytes)) return c;
    }
    return null;
  }

  /** The name from `from` up to the first '"' before `to`, left in `end` (-1: none): its entry, or null when none or uncached. */
  at(buf: Buffer, dv: DataView, from: number, to: number): NameEntry | null {
    const hit = this.known(buf, dv, from, to);
    if (hit) {
      this.end = from + hit.bytes.length;
      return hit;
    }
    this.end = quoteAt(buf, from, to);
    return this.end < 0 ? null : this.entry(buf, from, this.end);
  }

  get(buf: Buffer, from: number, to: number): string {
    return this.entry(buf, from, to)?.str ?? buf.toString('utf8', from, to);
  }

  /** The canonical entry for these bytes; null once 10,000 distinct names were seen (not cached). */
  entry(buf: Buffer, from: number, to: number): NameEntry | null {
    const len = to - from;
    let h = len;
    for (let i = from; i < to; i++) h = (Math.imul(h, 31) + buf[i]!) | 0;
    const bucket = this.buckets.get(h);
    if (bucket) {
      outer: for (let k = 0; k < bucket.length; k++) {
        const c = bucket[k]!;
        const cb = c.bytes.bytes;
        if (cb.length !== len) continue;
        for (let i = 0; i < len; i++) if (cb[i] !== buf[from + i]) continue outer;
        return c;
      }
    }
    if (this.entries.length >= 10_000) return null;
    const str = interned(buf.toString('utf8', from, to));
    const entry: NameEntry = {
      bytes: new Needle(buf.subarray(from, to)),
      str,
      known: ROLLOUT_RECORD_TYPES.has(str),
      records: 0,
      ri: 0,
      em: 0,
    };
    this.entries.push(entry);
    if (bucket) bucket.push(entry);
    else this.buckets.set(h, [entry]);
    this.addWord(entry.bytes.bytes, this.entries.length);
    return entry;
  }

  private addWord(b: Buffer, idPlus1: number): void {
    if (b.length < 4 || b.includes(0x22) || b.includes(0x5c)) return;
    let slot = wordSlot(b.readInt32LE(0));
    for (let k = 0; k < WORD_PROBES; k++, slot = (slot + 1) & (WORD_SLOTS - 1)) {
      if (this.byWord[slot] === 0) {
        this.byWord[slot] = idPlus1;
        return;
      }
    }
  }

  pair(a: string, b: string): string {
    let m = this.pairs.get(a);
    if (!m) this.pairs.set(a, (m = new Map()));
    let v = m.get(b);
    if (v === undefined) m.set(b, (v = `${a}/${b}`));
    return v;
  }
}

/**
 * The engine's one shared copy of s (property keys are interned): names are compared with string
 * literals on every line, and two interned strings compare by pointer.
 */
function interned(s: string): string {
  return Object.keys({ [s]: 0 })[0] ?? s;
}

function wordSlot(w: number): number {
  return Math.imul(w, 0x9e3779b1) >>> (32 - WORD_BITS);
}
