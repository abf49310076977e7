// Reading a recorded file: its lstat identity (the quick tier: no contents), its bytes and sha256, the
// TOML parser (loaded on first use), canonical JSON, and the small helpers every comparison shares.
import {
  accessSync,
  constants,
  lstatSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  type BigIntStats,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { nodeCrypto } from '../../base/lazy.js';

// ---------------------------------------------------------------------------------------------
// lstat identity (the quick tier: no file contents)

function sigOf(st: BigIntStats): string {
  const kind = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'o';
  return `${kind}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.dev}`;
}

/** The stat identity of `path` (a symlink also carries its target's). Never reads the file. */
export function statSig(path: string): string {
  let st: BigIntStats | undefined;
  try {
    st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    return `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
  if (!st) return 'absent';
  const own = sigOf(st);
  if (!st.isSymbolicLink()) return own;
  let target: BigIntStats | undefined;
  try {
    target = statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    target = undefined;
  }
  return `${own}>${target ? sigOf(target) : 'dangling'}`;
}

// ---------------------------------------------------------------------------------------------
// hashing and parsing (the full tier; loaded on first use)

const req = createRequire(import.meta.url);

let toml: typeof import('smol-toml') | undefined;

export function parseToml(text: string): Record<string, unknown> {
  toml ??= req('smol-toml') as typeof import('smol-toml');
  return toml.parse(text) as Record<string, unknown>;
}

export function sha256(data: string | Buffer): string {
  return nodeCrypto().createHash('sha256').update(data).digest('hex');
}

/** JSON with object keys sorted at every level. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export interface FileNow {
  sig: string;
  kind: 'absent' | 'file' | 'symlink' | 'dir' | 'other' | 'error';
  link: string | null;
  bytes: Buffer | null;
  sha256: string | null;
  error?: string;
}

const MAX_HASHED = 64 * 1024 * 1024;

export function readNow(path: string): FileNow {
  const sig = statSig(path);
  if (sig === 'absent') return { sig, kind: 'absent', link: null, bytes: null, sha256: null };
  if (sig.startsWith('error:'))
    return { sig, kind: 'error', link: null, bytes: null, sha256: null, error: sig.slice(6) };
  const k = sig[0];
  const kind = k === 'f' ? 'file' : k === 'l' ? 'symlink' : k === 'd' ? 'dir' : 'other';
  let link: string | null = null;
  if (kind === 'symlink') {
    try {
      link = readlinkSync(path);
    } catch {
      link = null;
    }
  }
  if (kind === 'dir' || kind === 'other' || sig.endsWith('>dangling'))
    return { sig, kind, link, bytes: null, sha256: null };
  if (kind === 'symlink' && !/>f:/.test(sig)) return { sig, kind, link, bytes: null, sha256: null };
  // No recorded file is this large; hashing one would blow the hook's deadline (and memory).
  const size = Number((kind === 'symlink' ? sig.slice(sig.indexOf('>') + 1) : sig).split(':')[1]);
  if (size > MAX_HASHED)
    return { sig, kind, link, bytes: null, sha256: `too-large:${size}`, error: `larger than ${MAX_HASHED} bytes` };
  try {
    const bytes = readFileSync(path);
    return { sig, kind, link, bytes, sha256: sha256(bytes) };
  } catch (err) {
    return {
      sig,
      kind: 'error',
      link,
      bytes: null,
      sha256: null,
      error: (err as NodeJS.ErrnoException).code ?? String(err),
    };
  }
}

export function kindOfSig(sig: string): string {
  if (sig === 'absent') return 'absent';
  if (sig.startsWith('error:')) return 'unreadable';
  return { f: 'file', l: 'symlink', d: 'directory' }[sig[0] as 'f' | 'l' | 'd'] ?? 'special file';
}

export function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

export function isTable(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);
}

export function clip(s: string, max = 160): string {
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

/** True when this user may write `p` or (to replace or create it) its directory. */
export function userCanChange(p: string): boolean {
  for (const q of [p, dirname(p)]) {
    try {
      accessSync(q, constants.W_OK);
      return true;
    } catch {
      /* not writable, or absent */
    }
  }
  return false;
}
