// The tool calls waiting for their output, by call id (attempts.ts pairs them with their output).
import type { Attempt } from './types.js';

const SMALL_PENDING = 16;

export interface PendingCall {
  attempt: Attempt;
  /** The call's fields (name, arguments / input), read again only when the attempt is listed or checked. */
  fields: Record<string, unknown>;
}

/**
 * The calls waiting for their output by call id, with a Map's semantics and order (finish() settles
 * the rest in that order). There is usually one, the call just made: up to SMALL_PENDING are kept
 * in arrays searched by string equality, which spares hashing two fresh id strings per call and a
 * Map that reallocates its table each time it empties; past that, a Map holds them.
 */
export class PendingCalls {
  private ids: string[] = [];
  private calls: PendingCall[] = [];
  private map: Map<string, PendingCall> | null = null;

  get size(): number {
    return this.map ? this.map.size : this.ids.length;
  }

  get(id: string): PendingCall | undefined {
    if (this.map) return this.map.get(id);
    const i = this.ids.indexOf(id);
    return i < 0 ? undefined : this.calls[i];
  }

  set(id: string, p: PendingCall): void {
    if (!this.map) {
      const i = this.ids.indexOf(id);
      if (i >= 0) this.calls[i] = p;
      else if (this.ids.length < SMALL_PENDING) {
        this.ids.push(id);
        this.calls.push(p);
      } else {
        this.map = new Map(this.ids.map((k, j) => [k, this.calls[j]!]));
        this.ids = [];
        this.calls = [];
      }
    }
    this.map?.set(id, p);
  }

  /**
   * get() then delete() of the id that is the text of buf[a..z), compared with the ids kept without
   * decoding it while its bytes are ASCII (an ASCII byte is the character of the same code).
   */
  take(buf: Buffer, a: number, z: number): PendingCall | undefined {
    if (this.map) {
      const id = buf.toString('utf8', a, z);
      const p = this.map.get(id);
      if (p) this.delete(id);
      return p;
    }
    for (let i = 0; i < this.ids.length; i++) {
      if (!sameText(this.ids[i]!, buf, a, z)) continue;
      const p = this.calls[i]!;
      this.removeAt(i);
      return p;
    }
    return undefined;
  }

  delete(id: string): void {
    if (this.map) {
      this.map.delete(id);
      if (this.map.size === 0) this.map = null;
      return;
    }
    const i = this.ids.indexOf(id);
    if (i >= 0) this.removeAt(i);
  }

  private removeAt(i: number): void {
    for (let j = i + 1; j < this.ids.length; j++) {
      this.ids[j - 1] = this.ids[j]!;
      this.calls[j - 1] = this.calls[j]!;
    }
    this.ids.pop();
    this.calls.pop();
  }

  values(): PendingCall[] {
    return this.map ? [...this.map.values()] : [...this.calls];
  }

  clear(): void {
    this.ids = [];
    this.calls = [];
    this.map = null;
  }
}

/** s equals the text buf[a..z) decodes to. */
function sameText(s: string, buf: Buffer, a: number, z: number): boolean {
  for (let k = 0; a + k < z; k++) {
    const c = buf[a + k]!;
    if (c >= 0x80) return s === buf.toString('utf8', a, z);
    if (s.charCodeAt(k) !== c) return false;
  }
  return s.length === z - a;
}
