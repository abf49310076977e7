// Read-only that the kernel enforces: while a session is latched or paused, every Bash call Latch
// lets through runs inside the agent's own read-only sandbox (for Codex: `codex sandbox`, the same
// binary the user already runs: bubblewrap + seccomp on Linux, Seatbelt on macOS), rewritten through
// the PreToolUse reply's `updatedInput`. The classifier stays the first gate (it gives the agent a
// clear reason); where no sandbox can run, it is the only one, and status and doctor say so.
//
// The sandbox runs with a CODEX_HOME of Latch's own (`$LATCH_HOME/sandbox/codex-home`, an empty
// config.toml, re-emptied on every use): `codex sandbox` reads config.toml and trusted projects'
// `.codex/config.toml`, and a permissions profile there (which an agent could have written while it
// was still mutable) can make the sandbox writable. With Latch's home no project is trusted.
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  constants,
} from 'node:fs';
import { basename, join } from 'node:path';
import { procParent } from '../../base/proc.js';
import { readShell, readShellArgv, shellQuote } from '../../guard/read-shell.js';
import type { SandboxedProcess } from '../agent.js';
import { type ReadsReport, sealedReadsReport, wroteThrough } from '../shared/bwrap.js';
export type { ReadsReport } from '../shared/bwrap.js';

export interface Sandbox {
  kind: 'codex';
  /** The agent binary whose `sandbox` subcommand runs the command. */
  bin: string;
  /** CODEX_HOME for the sandbox: Latch's own, empty config. */
  home: string;
  /**
   * A directory holding `codex-linux-sandbox` (a link to `bin`), put first on PATH: `codex sandbox`
   * re-executes itself under that name inside bubblewrap, and from 0.171 it refuses to create the
   * link itself when its CODEX_HOME is under /tmp (then every sandboxed command fails). Null off Linux.
   */
  aliases: string | null;
}

export type SandboxStatus = { ok: true; sandbox: Sandbox } | { ok: false; why: string };

/**
 * The command Codex runs instead of `command`: the same text, as one `bash -c` argument, inside
 * `codex sandbox` (file system read-only, /tmp included; network off; its own pid namespace, so it
 * cannot signal a process outside either).
 */
export function wrapReadOnly(command: string, sb: Sandbox): string {
  const path = sb.aliases ? [`PATH=${shellQuote(sb.aliases)}:"$PATH"`] : [];
  return [
    ...path,
    `CODEX_HOME=${shellQuote(sb.home)}`,
    'exec',
    shellQuote(sb.bin),
    'sandbox',
    '--',
    ...readShell(command),
  ].join(' ');
}

/** The process that runs `command` inside `codex sandbox` (what wrapReadOnly's command line runs). */
export function readOnlyArgv(command: string, sb: Sandbox, env: NodeJS.ProcessEnv): SandboxedProcess {
  return {
    file: sb.bin,
    args: ['sandbox', '--', ...readShellArgv(command)],
    env: {
      ...env,
      CODEX_HOME: sb.home,
      ...(sb.aliases ? { PATH: `${sb.aliases}:${env.PATH ?? ''}` } : {}),
    },
  };
}

/** Is `text` a command this module wrote (so a rewritten call is recognised in a transcript)? */
export function isWrapped(text: string): boolean {
  return (
    (/^(?:PATH='[^']*':"\$PATH" )?CODEX_HOME=/.test(text) && text.includes(' sandbox -- /usr/bin/env -u BASH_ENV ')) ||
    text.startsWith('exec /usr/bin/env -u BASH_ENV ')
  );
}

/**
 * `<latchHome>/sandbox/aliases/codex-linux-sandbox` → `bin` (re-linked when it names another binary):
 * the name `codex sandbox` re-executes itself under inside bubblewrap. Linux only.
 */
function sandboxAliases(latchHome: string, bin: string): string | null {
  if (process.platform !== 'linux') return null;
  const dir = join(latchHome, 'sandbox', 'aliases');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const link = join(dir, 'codex-linux-sandbox');
  let current: string | null = null;
  try {
    current = readlinkSync(link);
  } catch {
    current = null;
  }
  if (current !== bin) {
    rmSync(link, { force: true, recursive: true });
    symlinkSync(bin, link);
  }
  return dir;
}

/**
 * The agent binary that started this hook: the nearest ancestor whose executable is named `codex`
 * (Codex runs hooks as `$SHELL -lc "<command>"`; the npm package's `codex.js` starts the native
 * binary, which is the hook's ancestor). Linux /proc only; null elsewhere or when none is found.
 */
export function agentBinaryFromAncestry(startPid: number = process.pid): string | null {
  let pid: number | null = procParent(startPid);
  for (let depth = 0; pid !== null && pid > 1 && depth < 16; depth++) {
    try {
      const exe = readlinkSync(`/proc/${pid}/exe`);
      if (basename(exe) === 'codex') return exe.endsWith(' (deleted)') ? null : exe;
    } catch {
      // Not ours to read (another user) or gone: keep walking.
    }
    pid = procParent(pid);
  }
  return null;
}

/** Latch's own CODEX_HOME for the sandbox, with an empty config.toml (re-emptied when it is not). */
function sandboxHome(latchHome: string): string {
  const dir = join(latchHome, 'sandbox', 'codex-home');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  const config = join(dir, 'config.toml');
  let clean = false;
  try {
    const c = lstatSync(config);
    clean = c.isFile() && c.size === 0;
    if (!clean) rmSync(config, { recursive: true, force: true });
  } catch {
    clean = false;
  }
  if (!clean) {
    const fd = openSync(
      config,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    closeSync(fd);
  }
  return dir;
}

interface ProbeRecord {
  bin: string;
  size: number;
  mtimeMs: number;
  ino: number;
  ok: boolean;
  why: string;
}

/**
 * Does `codex sandbox` run here, read-only? Checked once per binary (path, size, mtime, inode) and
 * remembered in `$LATCH_HOME/sandbox/probe.json`: `true` must run, and a write to a file must fail.
 * A stale or forged record can only make Latch use the classifier alone, or run the read inside a
 * sandbox that then fails the command: neither lets a write through.
 */
export function probeSandbox(
  latchHome: string,
  bin: string,
  home: string,
  spawn: (bin: string, args: string[], env: NodeJS.ProcessEnv) => { status: number | null; stderr: string },
  aliases: string | null = null,
): { ok: boolean; why: string } {
  const st = statSync(bin);
  const file = join(latchHome, 'sandbox', 'probe.json');
  try {
    const rec = JSON.parse(readFileSync(file, 'utf8')) as ProbeRecord;
    if (rec.bin === bin && rec.size === st.size && rec.mtimeMs === st.mtimeMs && rec.ino === st.ino)
      return { ok: rec.ok, why: rec.why };
  } catch {
    // No record yet (or unreadable): probe.
  }
  const target = join(latchHome, 'sandbox', `probe-${process.pid}`);
  try {
    unlinkSync(target);
  } catch {
    // absent, as it should be
  }
  const env = {
    ...process.env,
    CODEX_HOME: home,
    ...(aliases ? { PATH: `${aliases}:${process.env.PATH ?? ''}` } : {}),
  };
  const t = spawn(bin, ['sandbox', '--', '/bin/true'], env);
  let ok = false;
  let why: string;
  if (t.status !== 0)
    why = `\`codex sandbox -- /bin/true\` failed (exit ${t.status}): ${t.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
  else {
    const wrote = wroteThrough(target, () =>
      spawn(bin, ['sandbox', '--', '/bin/sh', '-c', ': > "$1"', 'sh', target], env),
    );
    ok = !wrote;
    why = wrote ? '`codex sandbox` let a write through (not read-only here)' : 'codex sandbox runs read-only';
  }
  const rec: ProbeRecord = { bin, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, ok, why };
  try {
    writeFileSync(file, JSON.stringify(rec) + '\n', { mode: 0o600 });
  } catch {
    // Not remembered: probed again next time.
  }
  return { ok, why };
}

/**
 * The read-only sandbox for this hook, or why there is none. `LATCH_SANDBOX=off` turns it off (the
 * classifier alone then guards reads: status and doctor say so); `LATCH_CODEX_BIN` names the binary
 * when the hook does not run under Codex (tests, other drivers).
 */
export function readOnlySandbox(
  latchHome: string,
  env: NodeJS.ProcessEnv,
  spawn: Parameters<typeof probeSandbox>[3],
): SandboxStatus {
  if (env.LATCH_SANDBOX === 'off') return { ok: false, why: 'LATCH_SANDBOX=off' };
  if (process.platform !== 'linux' && process.platform !== 'darwin')
    return { ok: false, why: `no agent sandbox on ${process.platform}` };
  const bin = env.LATCH_CODEX_BIN || agentBinaryFromAncestry();
  if (!bin)
    return { ok: false, why: 'the Codex binary that runs this session was not found among the hook’s ancestors' };
  try {
    const fd = openSync(bin, 'r');
    try {
      if (!fstatSync(fd).isFile()) return { ok: false, why: `${bin} is not a file` };
    } finally {
      closeSync(fd);
    }
    const home = sandboxHome(latchHome);
    const aliases = sandboxAliases(latchHome, bin);
    const probe = probeSandbox(latchHome, bin, home, spawn, aliases);
    return probe.ok ? { ok: true, sandbox: { kind: 'codex', bin, home, aliases } } : { ok: false, why: probe.why };
  } catch (err) {
    return { ok: false, why: `the sandbox cannot be prepared (${(err as Error).message})` };
  }
}

/** What guards held reads on this machine: Latch's sealed sandbox, else Codex's own (runs nothing). */
export function readsReport(latchHome: string, env: NodeJS.ProcessEnv = process.env): ReadsReport {
  const sealed = sealedReadsReport(latchHome, env);
  if ('guard' in sealed) return sealed;
  const codex = codexSandboxReport(latchHome, env);
  return { guard: codex.guard, detail: `${sealed.why}; ${codex.detail}` };
}

/** What Codex's own sandbox does for held reads, from the probe a hook remembered (runs nothing). */
export function codexSandboxReport(latchHome: string, env: NodeJS.ProcessEnv = process.env): ReadsReport {
  if (env.LATCH_SANDBOX === 'off')
    return {
      guard: 'classifier_only',
      detail: 'LATCH_SANDBOX=off: reads while held are guarded by the classifier only',
    };
  try {
    const rec = JSON.parse(readFileSync(join(latchHome, 'sandbox', 'probe.json'), 'utf8')) as ProbeRecord;
    return rec.ok
      ? {
          guard: 'sandbox',
          detail: `reads while held run inside \`${rec.bin} sandbox\` (read-only file system, no network; unsealed: only the strict allowlist's reads run)`,
        }
      : {
          guard: 'classifier_only',
          detail: `no read-only sandbox (${rec.why}): reads while held are guarded by the classifier only`,
        };
  } catch {
    return {
      guard: 'unknown',
      detail: 'the read-only sandbox has not been probed on this machine yet (the first compaction does it)',
    };
  }
}
