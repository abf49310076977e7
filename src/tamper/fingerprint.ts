// Reading a recorded file: its lstat identity (the quick tier: no contents), its bytes and sha256, the
// TOML parser (loaded on first use), canonical JSON, and the small helpers every comparison shares.
import {
  accessSync,
  closeSync,
  constants,
  fdatasyncSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statfsSync,
  statSync,
  type BigIntStats,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { nodeCrypto } from '../base/lazy.js';
import { moduleFile } from '../base/paths.js';
import type { Role, Verify } from './types.js';

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
// when a stat identity may stand for the content
//
// A write through a shared memory map (MAP_SHARED) moves a file's mtime and ctime only when it faults:
// at the first write to a page the kernel holds clean and write-protected. The page then stays
// writable until writeback cleans it (vm.dirty_expire_centisecs, 30 s, plus the flusher's period, 5
// s): every write in between leaves the stat as it is. So a same-content first write, accepted as a
// touch, let other bytes through unseen (a review showed it on ext4 and tmpfs). tmpfs never writes
// back and maps a page writable at a read fault already: a mapping that read first writes forever
// without moving the stat. test/unit/tamper.test.ts does both with python3's mmap.
//
// So a stat identity stands for the content (the quick tier skips the hash when it holds) only on a
// filesystem whose writeback write-protects mapped pages (ext2/3/4, xfs, btrfs, f2fs: their
// page_mkwrite moves the times), and only when the content was read at it
// - right after an fdatasync (readNow's `sync`), which cleans and write-protects every page now, so a
//   write after it faults and moves the ctime and a write before it is in the bytes read; the ctime
//   must be CTIME_SETTLE_MS old (a fault in the clock tick of the last stamp leaves it as it is); or
// - once its ctime is WRITTEN_BACK_MS old: writeback has long cleaned what the last fault made
//   writable (a delay that long would need minutes of flooded writeback; no sync needed).
// The sync is made only while the machine holds little dirty data (SYNC_DIRTY_MAX), so that it cannot
// stall the hook into its agent's timeout; otherwise (`sync`: a later hook syncs and reads again), and
// on any other filesystem (`never`: tmpfs, overlayfs, NFS, FUSE, non-Linux), the quick tier lists the
// file and the hook compares its bytes (FileRow.verify: the sha256 of the bytes last read at the
// identity; check.ts keeps those bytes, so that no hook hashes).
// Directories and Latch's own code (the hook runs it: a change to it is a change to the code that would
// compare it) are trusted by their stat. Size is no reason to trust: the agent decides it (a settings
// layer padded over a megabyte with a key that is no finding, then rewritten through a map, went
// unseen while files over 1 MiB were trusted by their stat); a large file is synced and read once
// like a small one, and compared on every hook only where nothing writes back.

/** Filesystems (statfs f_type) whose writeback write-protects mapped pages: ext2/3/4, xfs, btrfs, f2fs. */
const WRITEBACK_FS = new Set([0xef53, 0x58465342, 0x9123683e, 0xf2f52010]);

/** How old a ctime must be when the content is read after a sync for its identity to be trusted (many clock ticks). */
export const CTIME_SETTLE_MS = 1000;

/** How old a ctime must be for writeback to have cleaned its pages (default delay 35 s; over 17x that). */
export const WRITTEN_BACK_MS = 10 * 60_000;

/**
 * The most dirty and in-writeback data (/proc/meminfo) under which a sync is made in the hook. An
 * fdatasync of one small file waits for its own pages and the journal, rarely for other files' data
 * (ext4's delayed allocation): 3.8 ms with 160 MiB dirty here; at 256 MiB even a flush of everything
 * stays seconds below the hook's deadline. Lower, a build or a fresh checkout (a 10k-file repository
 * leaves ~50 MiB dirty for half a minute) made every hook re-hash a file changed in the last minutes.
 */
const SYNC_DIRTY_MAX_KB = 256 * 1024;

/** True when `path` (followed) lies on a filesystem whose writeback write-protects mapped pages. */
function writesBack(path: string): boolean {
  if (process.platform !== 'linux') return false;
  try {
    return WRITEBACK_FS.has(statfsSync(path).type);
  } catch {
    return false;
  }
}

let calm: boolean | undefined;

/** True when the machine holds little dirty data (an fdatasync then waits for little); read once per process. */
function syncIsCheap(): boolean {
  if (calm !== undefined) return calm;
  try {
    const m = readFileSync('/proc/meminfo', 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(m)?.[1] ?? Number.NaN);
    const dirty = kb('Dirty') + kb('Writeback');
    calm = Number.isFinite(dirty) && dirty < SYNC_DIRTY_MAX_KB;
  } catch {
    calm = false;
  }
  return calm;
}

/** The stat identity of the regular file behind `sig` (itself, or a symlink's target), else null. */
function fileSigOf(sig: string): string | null {
  const s = sig[0] === 'l' ? sig.slice(sig.indexOf('>') + 1) : sig;
  return s[0] === 'f' ? s : null;
}

/** The age (ms) at `atMs` of the ctime in `sig` (its regular file's), else null. */
function ctimeAge(sig: string, atMs: number): number | null {
  const f = fileSigOf(sig);
  const ns = f?.split(':')[3];
  return ns && /^\d+$/.test(ns) ? atMs - Number(BigInt(ns) / 1_000_000n) : null;
}

/** Roles whose identity always stands for the content: directories, and Latch's code (the hook runs it). */
const STAT_TRUSTED = new Set<Role>(['installed', 'path_target', 'path_dir', 'claude_dropins']);

/**
 * Reads a file of `role` so that its identity can be trusted (see above): after an fdatasync when
 * its ctime is recent, it lies on a filesystem that writes back, and the sync is cheap now.
 */
export function readForTrust(path: string, role?: Role, opts: { hash?: boolean } = {}): FileNow {
  if (role && STAT_TRUSTED.has(role)) return readNow(path, opts);
  const sig = statSig(path);
  const f = fileSigOf(sig);
  const age = ctimeAge(sig, Date.now());
  const sync = !!f && age !== null && age < WRITTEN_BACK_MS && writesBack(path) && syncIsCheap();
  return readNow(path, { ...opts, sync });
}

/**
 * Whether the identity `now.sig` of `path`, whose content was just read (`now`, by readForTrust for a
 * trust), may stand for it from now on: null (trusted), else what the quick tier must compare it
 * against and how. `readAtMs`: a time taken before the read.
 */
export function verifyOf(role: Role, path: string, now: FileNow, readAtMs: number): Verify | null {
  return STAT_TRUSTED.has(role) ? null : verifyOfRead(path, now, readAtMs);
}

/** verifyOf for a file whose role can be trusted only by its content. */
export function verifyOfRead(path: string, now: FileNow, readAtMs: number): Verify | null {
  const f = fileSigOf(now.sig);
  if (!f || now.kind === 'error') return null; // absent, a directory, a special file, dangling: nothing to map
  const raw = now.sha256 && !now.sha256.startsWith('too-large:') ? now.sha256 : null;
  if (!writesBack(path)) return { raw, until: 'never' };
  const age = ctimeAge(now.sig, readAtMs) ?? -1;
  if (raw !== null && (age >= WRITTEN_BACK_MS || (now.synced && age >= CTIME_SETTLE_MS))) return null;
  return { raw, until: 'sync' };
}

/** The sig column: the identity, and while it is not trusted `?` (`sync`) or `!` (`never`), then the sha256 read at it. */
export function storedSig(sig: string, verify: Verify | null | undefined): string {
  return verify ? `${sig}${verify.until === 'sync' ? '?' : '!'}${verify.raw ?? ''}` : sig;
}

/** Where the trust mark of a stored sig begins (-1: trusted). On the hot path: indexOf, no regex. */
export function markAt(stored: string): number {
  const q = stored.indexOf('?');
  return q >= 0 ? q : stored.indexOf('!');
}

export function parseStoredSig(stored: string): { sig: string; verify: Verify | null } {
  const i = markAt(stored);
  if (i < 0) return { sig: stored, verify: null };
  return {
    sig: stored.slice(0, i),
    verify: { raw: stored.slice(i + 1) || null, until: stored[i] === '?' ? 'sync' : 'never' },
  };
}

// ---------------------------------------------------------------------------------------------
// hashing and parsing (the full tier; loaded on first use)

let toml: typeof import('smol-toml') | undefined;

export function parseToml(text: string): Record<string, unknown> {
  toml ??= createRequire(moduleFile)('smol-toml') as typeof import('smol-toml');
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
  /** Read with `sync`: an fdatasync succeeded before the read, and the identity held across both. */
  synced?: boolean;
}

const MAX_HASHED = 64 * 1024 * 1024;

/**
 * The file at `path` as it is now: its identity, and (a regular file, or a symlink to one) its bytes
 * and sha256. `sync`: an fdatasync first, which cleans and write-protects the pages of every shared
 * mapping of it, so a write through one after the read moves the ctime (`synced`; see verifyOf).
 * `hash: false`: the bytes without their sha256 (null), for a caller that compares bytes.
 */
export function readNow(path: string, opts: { sync?: boolean; hash?: boolean } = {}): FileNow {
  const digest = (bytes: Buffer): string | null => (opts.hash === false ? null : sha256(bytes));
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
    // O_NONBLOCK, then a regular file or nothing: a FIFO swapped in since the lstat is neither waited
    // on nor read while a writer floods it (a hook held past its agent's timeout is let through).
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    let synced = false;
    let bytes: Buffer;
    try {
      if (!fstatSync(fd).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTREG' });
      if (opts.sync) {
        try {
          fdatasyncSync(fd);
          synced = true;
        } catch (err) {
          // A read-only filesystem: nothing writes through a map of it either.
          synced = (err as NodeJS.ErrnoException).code === 'EROFS';
        }
      }
      bytes = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
    if (!opts.sync) return { sig, kind, link, bytes, sha256: digest(bytes) };
    return { sig, kind, link, bytes, sha256: digest(bytes), synced: synced && statSig(path) === sig };
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
