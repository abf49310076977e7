// Who a resident hook may answer for. The resident hook (server.ts) is an ordinary hook process kept
// alive: it answers only the hooks that would have run exactly as it runs, with the same Node binary
// and flags, the same Latch entry, the same agent, the same working directory and the same
// environment, byte for byte. That identity, as text, is what a request carries and what the server
// compares; its hash names the spool directory both sides meet in, under the Latch home.
// Dependency-free apart from node:fs and node:path: this module is in dist/latch.cjs, on every hook's path.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { latchHomeFromEnv } from '../base/home.js';
import { runs } from '../base/proc.js';

/** The identity of a hook process, as text (JSON): what a resident hook must share with its client. */
export function identityText(
  entry: string,
  agent: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  execArgv: readonly string[] = process.execArgv,
): string {
  const vars = Object.keys(env)
    .sort()
    .map((k) => [k, env[k] ?? '']);
  return JSON.stringify({
    v: 1,
    node: process.execPath,
    version: process.version,
    execArgv,
    entry,
    agent,
    cwd,
    env: vars,
  });
}

/**
 * A hook process's identity and the spool directory its resident hook serves:
 * <Latch home>/resident/<hash of the identity>. Null without a home the environment names (no HOME):
 * such a hook runs in its own process.
 */
export function residentSpool(
  entry: string,
  agent: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  execArgv: readonly string[] = process.execArgv,
): { identity: string; dir: string } | null {
  const home = latchHomeFromEnv(env);
  if (home === null) return null;
  const identity = identityText(entry, agent, env, cwd, execArgv);
  return { identity, dir: join(home, 'resident', fnv32(identity)) };
}

/**
 * FNV-1a (32 bits) over the text's UTF-16 code units, and its length: a name, not a secret (the
 * resident hook compares the whole identity, so two identities with one name only share a directory,
 * whose hook serves one of them). Cheap on purpose: it runs in the interpreter on every hook.
 */
export function fnv32(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return `${(h >>> 0).toString(16).padStart(8, '0')}-${text.length.toString(16)}`;
}

/** A resident hook whose heartbeat is older than this is taken for gone (stuck, or stopped). */
export const HEARTBEAT_STALE_MS = 5_000;

/** A resident hook as its spool directory's `server` file names it (alive or not). */
export interface NamedServer {
  pid: number;
  start: string;
  /** The `server` file, whose mtime is the heartbeat. */
  file: string;
}

export function namedServer(dir: string): NamedServer | null {
  const file = join(dir, SPOOL.server);
  const text = readOrNull(file);
  const m = text === null ? null : /^(\d+) (\d+)\n$/.exec(text);
  return m ? { pid: Number(m[1]), start: m[2]!, file } : null;
}

/** The named resident hook runs (not exited, not stopped) and its heartbeat is recent. */
export function serverAnswers(s: NamedServer): boolean {
  if (!runs(s.pid, s.start)) return false;
  try {
    return Date.now() - statSync(s.file).mtimeMs < HEARTBEAT_STALE_MS;
  } catch {
    return false;
  }
}

/** The files of a spool directory. */
export const SPOOL = {
  /**
   * `<pid> <start>`: the resident hook that serves this directory (start: /proc/<pid>/stat field 22).
   * Its mtime is the heartbeat: renewed every second while the resident hook can answer.
   */
  server: 'server',
  /** `<pid> <start>` of a resident hook told to leave (`latch uninstall`): it leaves between two requests. */
  dismissed: 'dismissed',
  /**
   * `<pid> <start>` lines: the resident hooks a hook of this directory spawned (start: /proc/<pid>/stat
   * field 22), written by that spawning hook right after spawn(2) (tmp + rename), never by the resident
   * hook (which only removes it as it leaves, when it names that resident hook alone). Containment
   * spares a resident hook only by this record (src/resident/list.ts recordedResidents).
   */
  spawned: 'spawned',
  /** When a hook last started a resident hook here (ms since the epoch): starts are spaced out. */
  started: 'started',
  /**
   * `<pid> <start>` lines: the ancestors of the hook that started the resident hook, nearest first.
   * The resident hook finds its agent among them and leaves when that process exits.
   */
  agents: 'agents',
  request: '.req',
  claimed: '.work',
  answer: '.res',
} as const;

/** The file's text, else null; looked up first, since most looks (the client's polls) find nothing and a throw costs more. */
export function readOrNull(path: string): string | null {
  if (!existsSync(path)) return null;
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}
