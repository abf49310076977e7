// The canonical form of a workspace tree: what one entry records (TreeEntry, the git-like modes), the
// canonical listing and its sha256 digest, its compact stored form (encodeListing / decodeListing),
// and the diff of two listings. Pure functions of their input (no file system): the checkpoint and
// the continuity evidence use them without loading the enumeration or hashing code, and both
// snapshotTree (snapshot.ts) and observeTree (observe-tree.ts) produce entries in this form.
//
// Directories that git lists (gitlinks / submodules, and untracked nested
// repositories that `--others` reports as `dir/`) are RECORDED as mode 160000
// with size 0 and a placeholder hash of 64 zeros (GITLINK_SHA256): their
// presence is part of the digest, their content is not (the submodule's own
// state is not inspected).
//
// Per file: path (relative, '/'-separated), git-like mode (100644, 100755 when
// the owner-execute bit is set, 120000 for symlinks, 160000 for gitlinks),
// size in bytes, sha256 of the content (of the link target bytes for symlinks).
//
// Digest: sha256 over the canonical listing, entries sorted by the UTF-8 byte
// order of their paths, one line per entry: `${mode} ${size} ${sha256}\t${path}\n`.
// A path that contains a control character (e.g. '\n') or begins with '"' is
// written JSON-quoted, so the listing stays unambiguous; ordinary paths are
// written verbatim.

import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';

// ---------------------------------------------------------------------------
// Types

export interface TreeEntry {
  path: string;
  mode: number;
  size: number;
  sha256: string;
}

export interface TreeSnapshot {
  root: string;
  sha256: string;
  files: number;
  entries: TreeEntry[];
  /** hashed: files whose content was read (includes racy); reused: served from the stat cache; racy: re-hashed because racily clean. */
  stats: { hashed: number; reused: number; racy: number };
}

export interface TreeDiff {
  added: TreeEntry[];
  removed: TreeEntry[];
  modified: { before: TreeEntry; after: TreeEntry }[];
}

export const MODE_FILE = 100644;
export const MODE_EXEC = 100755;
export const MODE_SYMLINK = 120000;
export const MODE_GITLINK = 160000;
export const GITLINK_SHA256 = '0'.repeat(64);

// ---------------------------------------------------------------------------
// Path ordering and canonical listing

/**
 * Compare two strings by the byte order of their UTF-8 encodings without
 * encoding them. UTF-16 code-unit order equals UTF-8 byte order except that
 * surrogates (0xD800-0xDFFF, i.e. code points >= 0x10000) must sort after
 * 0xE000-0xFFFF.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

// eslint-disable-next-line no-control-regex
const NEEDS_QUOTE = /[\u0000-\u001f\u007f]/;

function listingPath(p: string): string {
  return p.charCodeAt(0) === 0x22 /* " */ || NEEDS_QUOTE.test(p) ? JSON.stringify(p) : p;
}

export function sortEntries(entries: TreeEntry[]): TreeEntry[] {
  return entries.sort((a, b) => compareUtf8(a.path, b.path));
}

/** The canonical listing text for entries (sorted copy; the input is not modified). */
export function canonicalListing(entries: TreeEntry[]): string {
  const sorted = sortEntries(entries.slice());
  const parts: string[] = new Array(sorted.length);
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    parts[i] = `${e.mode} ${e.size} ${e.sha256}\t${listingPath(e.path)}\n`;
  }
  return parts.join('');
}

/** sha256 (hex) of the canonical listing. */
export function digestEntries(entries: TreeEntry[]): string {
  return createHash('sha256').update(canonicalListing(entries), 'utf8').digest('hex');
}

/** zlib-deflated canonical listing, for compact storage. */
export function encodeListing(entries: TreeEntry[]): Buffer {
  return deflateSync(Buffer.from(canonicalListing(entries), 'utf8'));
}

const LINE_RE = /^(\d+) (\d+) ([0-9a-f]{64})\t/;

/** Inverse of encodeListing. Throws on malformed input. */
export function decodeListing(buf: Buffer): TreeEntry[] {
  const text = inflateSync(buf).toString('utf8');
  const out: TreeEntry[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    if (nl < 0) throw new Error(`decodeListing: unterminated line at offset ${pos}`);
    const line = text.slice(pos, nl);
    pos = nl + 1;
    const m = LINE_RE.exec(line);
    if (!m) throw new Error(`decodeListing: malformed line ${JSON.stringify(line)}`);
    const raw = line.slice(m[0].length);
    let p: string;
    if (raw.charCodeAt(0) === 0x22) {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'string') throw new Error(`decodeListing: bad quoted path ${raw}`);
      p = parsed;
    } else {
      p = raw;
    }
    out.push({ path: p, mode: Number(m[1]), size: Number(m[2]), sha256: m[3]! });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Diff

export function diffTrees(before: TreeEntry[], after: TreeEntry[]): TreeDiff {
  const prev = new Map<string, TreeEntry>();
  for (const e of before) prev.set(e.path, e);
  const added: TreeEntry[] = [];
  const modified: { before: TreeEntry; after: TreeEntry }[] = [];
  const seen = new Set<string>();
  for (const a of after) {
    seen.add(a.path);
    const b = prev.get(a.path);
    if (!b) added.push(a);
    else if (b.mode !== a.mode || b.size !== a.size || b.sha256 !== a.sha256) modified.push({ before: b, after: a });
  }
  const removed: TreeEntry[] = [];
  for (const b of before) if (!seen.has(b.path)) removed.push(b);
  sortEntries(added);
  sortEntries(removed);
  modified.sort((x, y) => compareUtf8(x.after.path, y.after.path));
  return { added, removed, modified };
}
