// Reading a JSONL transcript line by line, in bounded memory: 1 MiB reads, a line kept only up to
// `maxLine` bytes (a longer one is reported and skipped), a final line without its newline ignored
// (it is still being written).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

const CHUNK = 1 << 20;

/**
 * Reads bytes [0, limit) of `path` (limit null: the whole file) line by line, without the newline.
 * A line longer than `maxLine` goes to `onSkip` instead of `onLine`; either returning true stops the
 * read (a line skipped before its newline is seen cannot stop it). Throws when the file cannot be opened.
 */
export function readLines(
  path: string,
  limit: number | null,
  maxLine: number,
  onLine: (line: Buffer) => boolean | void,
  onSkip: () => boolean | void,
): void {
  const fd = openSync(path, 'r');
  try {
    const size = Number(fstatSync(fd).size);
    const end = limit === null ? size : Math.min(limit, size);
    const buf = Buffer.allocUnsafe(CHUNK);
    let carry: Buffer[] = [];
    let carryLen = 0;
    let skipping = false;
    let pos = 0;
    while (pos < end) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, end - pos), pos);
      if (n <= 0) break;
      pos += n;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl < 0 || nl >= n) break;
        let stop: boolean | void = false;
        if (skipping) skipping = false;
        else if (carryLen + (nl - start) > maxLine) stop = onSkip();
        else stop = onLine(carryLen ? Buffer.concat([...carry, buf.subarray(start, nl)]) : buf.subarray(start, nl));
        if (stop === true) return;
        carry = [];
        carryLen = 0;
        start = nl + 1;
      }
      if (start < n && !skipping) {
        if (carryLen + (n - start) > maxLine) {
          onSkip();
          skipping = true;
          carry = [];
          carryLen = 0;
        } else {
          carry.push(Buffer.from(buf.subarray(start, n)));
          carryLen += n - start;
        }
      }
    }
    // A final line without a newline is still being written: ignore it.
  } finally {
    closeSync(fd);
  }
}
