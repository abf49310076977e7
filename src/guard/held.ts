// What a Bash call may do while its session is held (latched or paused), decided in one place for the
// guard and for the adversarial corpus that checks it: Latch's own paths are never reachable; a
// command the classifier reads as read-only runs, inside the agent's read-only sandbox when there is
// one; anything else is denied with the classifier's reason.
import { homedir } from 'node:os';
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { classifyCommand, type ClassifyContext } from '../shell/readonly.js';
import { latchReadArgs, trustedPath, wrapClassifierOnly, wrapReadOnly, type Sandbox } from '../agents/codex/sandbox.js';

/** Shell startup files: Codex runs hooks and commands as `$SHELL -lc`, so these run before each. */
export const SHELL_STARTUP_FILES = ['.bash_profile', '.bash_login', '.profile', '.bashrc', '.bash_logout', '.zshenv', '.zprofile', '.zshrc', '.zlogin'];

export interface ClassifierInputs {
  latchHome: string;
  /** The payload's cwd. */
  cwd: string;
  /** Absolute path of this Latch's `latch.cjs`, when running from a bundle. */
  latchEntry: string | null;
  env: NodeJS.ProcessEnv;
}

/**
 * The classifier's view of what the agent must not reach, in every state: Latch's store, Codex's hook
 * registration (hooks.json, config.toml with its trust entries and feature flags), the project's
 * `.codex/` and `.latch.toml`, Latch's installed files and the shell startup files.
 */
export function classifierContext(i: ClassifierInputs): ClassifyContext {
  const home = i.env.HOME || homedir();
  const codexHome = resolve(i.env.CODEX_HOME || join(home, '.codex'));
  const protectedPaths: Array<{ path: string; reason: string }> = [
    { path: join(codexHome, 'hooks.json'), reason: 'the Codex hook registration (hooks.json)' },
    { path: join(codexHome, 'config.toml'), reason: 'the Codex configuration (hook trust and features)' },
    { path: join(resolve(i.cwd), '.codex'), reason: 'the project’s Codex configuration (.codex/)' },
    { path: join(resolve(i.cwd), '.latch.toml'), reason: 'the project’s Latch policy (.latch.toml)' },
    ...SHELL_STARTUP_FILES.map((f) => ({ path: join(home, f), reason: `a shell startup file (~/${f}) that runs before every hook` })),
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

/** The decision for one Bash call of a held session: deny, or the command to run (as rewritten). */
export function heldShell(command: string, ctx: ClassifyContext, sandbox: Sandbox | null, env: NodeJS.ProcessEnv = process.env): HeldShell {
  // Both wrappers run the command with the held-read environment the classifier may then rely on.
  const v = classifyCommand(command, { ...ctx, gitEnvHardened: true });
  if (v.touchesLatch || !v.readOnly) return { allow: false, touchesLatch: v.touchesLatch, reasons: v.reasons };
  // Latch's own reads run in the hook (src/guard/guard.ts latchReplay), only in their exact form: any
  // other spelling of the installed Latch would run it in the agent's shell.
  if (ctx.latchBin && command.includes(basename(ctx.latchBin)) && !latchReadArgs(command, ctx.latchBin)) {
    return { allow: false, touchesLatch: true, reasons: [`run Latch's reads alone and exactly as \`node ${ctx.latchBin} status\` (or \`brief --page N\`): Latch runs them itself`] };
  }
  return sandbox
    ? { allow: true, command: wrapReadOnly(command, sandbox), sandboxed: true, reasons: [] }
    : { allow: true, command: wrapClassifierOnly(command, trustedPath(env.PATH, ctx.home ?? env.HOME)), sandboxed: false, reasons: [] };
}

/** The paths an apply_patch names (`*** Add|Update|Delete File:` and `*** Move to:`), as written. */
export function patchPaths(patch: string): string[] {
  const out: string[] = [];
  for (const m of patch.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.*)$/gm)) out.push(m[1]!.trim());
  return out;
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
 * Why an apply_patch would reach Latch's own state or registration, or [] when it does not: every
 * named path resolved against the payload's cwd, exactly and through symlinks, in every state.
 */
export function patchTouchesLatch(patch: string, ctx: ClassifyContext): string[] {
  const cwd = ctx.cwd ?? process.cwd();
  const targets = [{ path: ctx.latchHome, reason: `the Latch home directory ${ctx.latchHome}` }, ...(ctx.protectedPaths ?? [])].map((t) => ({
    ...t,
    paths: [resolve(t.path), realish(t.path)],
  }));
  const reasons: string[] = [];
  for (const raw of patchPaths(patch)) {
    const home = ctx.home ?? homedir();
    const expanded = raw === '~' ? home : raw.startsWith('~/') ? join(home, raw.slice(2)) : raw;
    const abs = resolve(cwd, expanded);
    const candidates = [abs, realish(abs)];
    for (const t of targets) {
      if (candidates.some((c) => t.paths.some((d) => inside(c, d)))) reasons.push(`apply_patch names ${raw}, which reaches ${t.reason}`);
    }
  }
  return reasons;
}
