// What a Bash call may do while its session is held (latched or paused), decided in one place for the
// guard and for the adversarial corpus that checks it: Latch's own paths are never reachable; a
// command the classifier reads as read-only runs, inside the agent's read-only sandbox when there is
// one; anything else is denied with the classifier's reason.
import { homedir } from 'node:os';
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { classifyCommand, type ClassifyContext } from '../shell/readonly.js';
import { statedWrite } from '../shell/writes.js';
import { latchReadArgs, trustedPath, wrapClassifierOnly } from './read-shell.js';

/** Shell startup files: agents run hooks and commands through a login shell, so these run before each. */
export const SHELL_STARTUP_FILES = [
  '.bash_profile',
  '.bash_login',
  '.profile',
  '.bashrc',
  '.bash_logout',
  '.zshenv',
  '.zprofile',
  '.zshrc',
  '.zlogin',
];

export interface ClassifierInputs {
  latchHome: string;
  /** The payload's cwd. */
  cwd: string;
  /** Absolute path of this Latch's `latch.cjs`, when running from a bundle. */
  latchEntry: string | null;
  env: NodeJS.ProcessEnv;
  /** The agent's own hook registration and configuration (its adapter names them: Agent.registrationPaths). */
  registration: readonly ProtectedPath[];
}

export interface ProtectedPath {
  path: string;
  reason: string;
}

/**
 * The classifier's view of what the agent must not reach, in every state: Latch's store, the agent's
 * hook registration and configuration (as its adapter names them), the project's `.latch.toml`,
 * Latch's installed files and the shell startup files.
 */
export function classifierContext(i: ClassifierInputs): ClassifyContext {
  const home = i.env.HOME || homedir();
  const protectedPaths: ProtectedPath[] = [
    ...i.registration,
    { path: join(resolve(i.cwd), '.latch.toml'), reason: 'the project’s Latch policy (.latch.toml)' },
    ...SHELL_STARTUP_FILES.map((f) => ({
      path: join(home, f),
      reason: `a shell startup file (~/${f}) that runs before every hook`,
    })),
  ];
  if (i.latchEntry) {
    protectedPaths.push(
      { path: dirname(i.latchEntry), reason: 'Latch’s installed files' },
      { path: join(dirname(dirname(i.latchEntry)), 'bin', 'latch.cjs'), reason: 'Latch’s installed files' },
    );
  }
  return { latchHome: i.latchHome, latchBin: i.latchEntry ?? undefined, home, cwd: resolve(i.cwd), protectedPaths };
}

export type HeldShell =
  | { allow: false; touchesLatch: boolean; reasons: string[] }
  | { allow: true; command: string; sandboxed: boolean; reasons: string[] };

/** Where a held read runs: the sandbox's command line, and whether it hides Latch's files (sealed). */
export interface HeldSandbox {
  wrap: (command: string) => string;
  sealed: boolean;
}

/**
 * The decision for one Bash call of a held session: deny, or the command to run (as rewritten).
 *
 * - No sandbox, or one that does not hide Latch's files: the strict allowlist (src/shell/readonly.ts)
 *   is the gate; a read it admits runs (in the sandbox where there is one).
 * - A sealed sandbox (src/agents/shared/bwrap.ts: read-only, no network, no unix socket, own pid
 *   namespace, Latch's files hidden): the sandbox is the gate. The classifier keeps Latch's files and
 *   commands out by name, so the agent hears why, and refuses the writes a command states plainly
 *   (src/shell/writes.ts), so the agent hears why instead of meeting EROFS; any other command runs,
 *   and a recursive reader may pass over a protected path (hidden there).
 */
export function heldShell(
  command: string,
  ctx: ClassifyContext,
  sandbox: HeldSandbox | null,
  env: NodeJS.ProcessEnv = process.env,
): HeldShell {
  // Every wrapper runs the command with the held-read environment the classifier may then rely on.
  const sealed = sandbox?.sealed === true;
  const v = classifyCommand(command, { ...ctx, gitEnvHardened: true, sandboxed: sealed });
  if (v.touchesLatch) return { allow: false, touchesLatch: true, reasons: v.touchReasons };
  if (!v.readOnly) {
    if (!sealed) return { allow: false, touchesLatch: false, reasons: v.reasons };
    const write = statedWrite(command);
    if (write !== null)
      return {
        allow: false,
        touchesLatch: false,
        reasons: [`${write} writes, and writes are blocked while the session is held`],
      };
  }
  // Latch's own reads run in the hook (src/guard/guard.ts latchReplay), only in their exact form: any
  // other spelling of the installed Latch would run it in the agent's shell.
  if (ctx.latchBin && command.includes(basename(ctx.latchBin)) && !latchReadArgs(command, ctx.latchBin)) {
    return {
      allow: false,
      touchesLatch: true,
      reasons: [
        'run Latch’s reads alone, as `latch status` or `latch brief --page N` (no pipe, no other command): Latch runs them itself',
      ],
    };
  }
  return sandbox
    ? { allow: true, command: sandbox.wrap(command), sandboxed: true, reasons: [] }
    : {
        allow: true,
        command: wrapClassifierOnly(command, trustedPath(env.PATH, ctx.home ?? env.HOME)),
        sandboxed: false,
        reasons: [],
      };
}

/**
 * Would a held session's hook have let `command` run (as a read, in the sealed sandbox where one
 * runs; a Latch read in any spelling)? The one meaning of "read" the doctor shares with the hook.
 */
export function admittedWhileHeld(command: string, ctx: ClassifyContext): boolean {
  if (latchReadArgs(command, ctx.latchBin ?? '/nonexistent/dist/latch.cjs') !== null) return true;
  return heldShell(command, ctx, { wrap: (c) => c, sealed: true }).allow;
}

/** `p` with every symlink in its longest existing prefix resolved (the rest appended as written). */
function realish(p: string): string {
  let head = resolve(p);
  const tail: string[] = [];
  for (let i = 0; i < 256; i++) {
    try {
      const r = realpathSync(head);
      return tail.length ? join(r, ...[...tail].reverse()) : r;
    } catch {
      // A dangling symlink still names where a write would land: follow it by hand.
      try {
        if (lstatSync(head).isSymbolicLink()) {
          head = resolve(dirname(head), readlinkSync(head));
          continue;
        }
      } catch {
        // absent: go up
      }
      const parent = dirname(head);
      if (parent === head) break;
      tail.push(basename(head));
      head = parent;
    }
  }
  return resolve(p);
}

function inside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : dir + '/');
}

/**
 * Why a patch tool's change would reach Latch's own state or registration, or [] when it does not:
 * every path it names (as the agent's adapter parsed them) resolved against the payload's cwd,
 * exactly and through symlinks, in every state.
 */
export function patchTouchesLatch(tool: string, paths: readonly string[], ctx: ClassifyContext): string[] {
  const cwd = ctx.cwd ?? process.cwd();
  const targets = [
    { path: ctx.latchHome, reason: `the Latch home directory ${ctx.latchHome}` },
    ...(ctx.protectedPaths ?? []),
  ].map((t) => ({
    ...t,
    paths: [resolve(t.path), realish(t.path)],
  }));
  const reasons: string[] = [];
  for (const raw of paths) {
    const home = ctx.home ?? homedir();
    const expanded = raw === '~' ? home : raw.startsWith('~/') ? join(home, raw.slice(2)) : raw;
    const abs = resolve(cwd, expanded);
    const candidates = [abs, realish(abs)];
    for (const t of targets) {
      if (candidates.some((c) => t.paths.some((d) => inside(c, d))))
        reasons.push(`${tool} names ${raw}, which reaches ${t.reason}`);
    }
  }
  return reasons;
}
