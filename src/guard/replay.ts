// A held read runs in the hook, not in the agent's shell: the hook runs outside the agent's own sandbox
// (Codex `workspace-write`/`read-only`, Claude Code's `sandbox.enabled`), where a nested sandbox
// cannot start, so Latch runs the read inside its read-only sandbox itself, keeps what it printed and
// its exit status here, and rewrites the agent's call into a command that only replays them:
//
//   # git status
//   # (held session: Latch ran this read in its read-only sandbox; its output is replayed below)
//   /bin/cat -- '<home>/replay/<id>.out'; /bin/cat -- '<home>/replay/<id>.err' >&2; exit 0
//
// The agent (and the human in the agent's UI) sees its own command first, as comment lines: a comment
// runs nothing. The replay only reads two files and exits, so it works inside any sandbox the agent
// runs in, and the files are written here with O_EXCL and unguessable names. They are removed after
// an hour (at the next replay): a replay is read once, right after the hook answers.
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { nodeCrypto } from '../base/lazy.js';
import { shellQuote } from './read-shell.js';

/** What a read printed and how it ended. */
export interface Captured {
  stdout: Buffer;
  stderr: Buffer;
  /** The exit status (a signal or a failure to start: 1 or more, never 0). */
  code: number;
  /** Why the output is not whole (cut at the cap, stopped at the deadline), for the agent. */
  note?: string | null;
}

/** The most a replay keeps of each stream. */
export const REPLAY_CAP = 4 * 1024 * 1024;
const KEEP_MS = 60 * 60 * 1000;
const NOTE = '# (held session: Latch ran this read in its read-only sandbox; its output is replayed below)';

export function replayDir(latchHome: string): string {
  return join(latchHome, 'replay');
}

function writeNew(path: string, data: Buffer): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
  } finally {
    closeSync(fd);
  }
}

/** Removes replays older than an hour (best effort: a failure leaves a file for the next sweep). */
function sweep(dir: string, now: number): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!/^[0-9a-f]{32}\.(out|err)$/.test(name)) continue;
    try {
      const p = join(dir, name);
      if (now - lstatSync(p).mtimeMs > KEEP_MS) unlinkSync(p);
    } catch {
      // gone already, or not ours to remove
    }
  }
}

/** `original` as comment lines: what the agent typed, shown first, running nothing. */
function commented(original: string): string {
  return original
    .split(/\r?\n/)
    .map((l) => (l === '' ? '#' : `# ${l.replace(/\r/g, ' ')}`))
    .join('\n');
}

/**
 * 16 random bytes as hex, for a replay's name: from /dev/urandom (the hot path need not load
 * node:crypto for it, ~8 ms here), else node:crypto.
 */
function randomHex16(): string {
  try {
    const fd = openSync('/dev/urandom', constants.O_RDONLY);
    try {
      const b = Buffer.alloc(16);
      if (readSync(fd, b, 0, 16, null) === 16) return b.toString('hex');
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom (not Linux or macOS): below
  }
  return nodeCrypto().randomBytes(16).toString('hex');
}

/** Writes the captured output and returns the command that replays it (see the file's comment). */
export function replayOf(latchHome: string, original: string, c: Captured): string {
  const dir = replayDir(latchHome);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  sweep(dir, Date.now());
  const id = randomHex16();
  const note = c.note ? Buffer.from(`\n[latch: ${c.note}]\n`) : Buffer.alloc(0);
  const cut = (b: Buffer) => (b.length > REPLAY_CAP ? b.subarray(0, REPLAY_CAP) : b);
  const out = join(dir, `${id}.out`);
  const err = join(dir, `${id}.err`);
  writeNew(out, cut(c.stdout));
  const errData = Buffer.concat([cut(c.stderr), note]);
  if (errData.length > 0) writeNew(err, errData);
  const code = Number.isInteger(c.code) && c.code >= 0 && c.code < 256 ? c.code : 1;
  const replay = [`/bin/cat -- ${shellQuote(out)}`];
  if (errData.length > 0) replay.push(`/bin/cat -- ${shellQuote(err)} >&2`);
  replay.push(`exit ${code}`);
  return `${commented(original)}\n${NOTE}\n${replay.join('; ')}`;
}

const QUOTED = String.raw`'(?:[^'\n]|'\\'')*'`;
const REPLAY_LINE = new RegExp(String.raw`^/bin/cat -- (${QUOTED}); (?:/bin/cat -- (${QUOTED}) >&2; )?exit (\d{1,3})$`);

/**
 * Is `text` a replay replayOf wrote? Exact: comment lines only, the note, then a line that does
 * nothing but print two files named like replays and exit. (Such a command cannot change anything,
 * whoever typed it.)
 */
export function isReplay(text: string): boolean {
  const lines = text.split('\n');
  const last = lines.pop();
  if (last === undefined || lines.length < 2 || lines[lines.length - 1] !== NOTE) return false;
  if (!lines.every((l) => l.startsWith('#') && !l.includes('\r'))) return false;
  const m = REPLAY_LINE.exec(last);
  if (!m) return false;
  const files = [m[1], m[2]]
    .filter((f): f is string => f !== undefined)
    .map((f) => f.slice(1, -1).replace(/'\\''/g, "'"));
  return files.every((f, i) => new RegExp(String.raw`/replay/[0-9a-f]{32}\.${i === 0 ? 'out' : 'err'}$`).test(f));
}

/** The command the agent typed, from a replay (null when `text` is not one). */
export function replayedCommand(text: string): string | null {
  if (!isReplay(text)) return null;
  const lines = text.split('\n').slice(0, -2);
  return lines.map((l) => (l === '#' ? '' : l.slice(2))).join('\n');
}
