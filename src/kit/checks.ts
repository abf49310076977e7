// What `latch doctor`'s checks share, the generic ones (src/commands/doctor.ts) and each agent's
// (src/agents/<name>/doctor.ts, behind the port's `commands()`): the check itself, this installation's
// node and entry, the file checks of a hook command, the end-to-end PreToolUse probe, and the
// registration fingerprint's check.
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { runBounded } from '../base/bounded.js';
import { errorMessage } from '../base/errors.js';
import { dbPath } from '../base/paths.js';
import {
  INSTALL_SCOPE,
  RERECORD_FIX,
  registrationLines,
  registrationReport,
  type Finding,
  type InstallScope,
  type RegistrationReport,
} from '../tamper/index.js';
import { openStore } from '../store/store.js';
import { homeOf, type Io } from './io.js';
import { defaultEntry } from '../base/hook-command.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** The command or step that fixes it. */
  fix?: string;
  /** The registration check's findings (as data). */
  findings?: Finding[];
}

export function oneLine(s: string, max = 200): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

export function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** The project directory of a `<project>/.<agent>/<file>` configuration file. */
export function projectDirOf(file: string): string {
  return resolve(file, '..', '..');
}

export function whichOnPath(cmd: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const p = join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return null;
}

export function fileProblem(
  p: string,
  kind: 'node binary' | 'Latch entry' | 'latch launcher',
  mode: number,
): string | null {
  if (!p.startsWith('/')) return `${kind} ${p} is not an absolute path`;
  let st: Stats;
  try {
    st = statSync(p);
  } catch {
    return `${kind} ${p} does not exist`;
  }
  if (!st.isFile()) return `${kind} ${p} is not a file`;
  try {
    accessSync(p, mode);
  } catch {
    return `${kind} ${p} is not ${mode === constants.X_OK ? 'executable' : 'readable'}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// this installation

/** The node binaries and entries this installation writes into hook commands: the running ones and the ones setup recorded. */
export interface Installation {
  nodes: string[];
  entries: string[];
}

export function thisInstallation(io: Io): Installation {
  const nodes = [process.execPath];
  const entries = [resolve(defaultEntry())];
  const home = homeOf(io);
  if (existsSync(dbPath(home))) {
    try {
      const db = openStore(home, { create: false, readonly: true });
      try {
        const row = db.prepare('SELECT json FROM registrations WHERE scope = ?').get(INSTALL_SCOPE) as
          | { json: string }
          | undefined;
        if (row) {
          const rec = JSON.parse(row.json) as InstallScope;
          nodes.push(rec.node);
          entries.push(rec.entry);
        }
      } finally {
        db.close();
      }
    } catch {
      /* no fingerprint (older store): only the running installation counts */
    }
  }
  for (const e of [...entries]) entries.push(realOrSelf(e));
  return { nodes: [...new Set(nodes)], entries: [...new Set(entries)] };
}

// ---------------------------------------------------------------------------------------------
// the end-to-end probe of a PreToolUse command

/** What a PreToolUse probe sends: the agent's payload for a tool call, and a tool Latch never blocks. */
export interface ProbeSpec {
  payload(dir: string, toolName: string, toolInput: unknown): string;
  untracked: { name: string; input(dir: string): unknown };
}

function isDenyReply(stdout: string): boolean {
  try {
    const o = JSON.parse(stdout.trim()) as {
      hookSpecificOutput?: { hookEventName?: unknown; permissionDecision?: unknown };
    };
    return o?.hookSpecificOutput?.hookEventName === 'PreToolUse' && o.hookSpecificOutput.permissionDecision === 'deny';
  } catch {
    return false;
  }
}

/** Runs a PreToolUse command as the agent would (through a shell, payload on stdin) against an empty LATCH_HOME. */
export async function probePreToolUse(io: Io, command: string, timeoutMs: number, spec: ProbeSpec): Promise<string[]> {
  const problems: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'latch-doctor-'));
  const payload = spec.payload;
  const tool = spec.untracked.name;
  try {
    const home = join(dir, 'state');
    mkdirSync(home, { mode: 0o700 });
    const env = { ...io.env, LATCH_HOME: home };
    const run = (input: string) => runBounded('/bin/sh', ['-c', command], { env, cwd: dir, input, timeoutMs });

    const untracked = await run(payload(dir, tool, spec.untracked.input(dir)));
    if (untracked.spawnError) problems.push(`cannot run /bin/sh: ${untracked.spawnError}`);
    else if (untracked.timedOut) problems.push(`untracked-tool probe (${tool}) did not finish within ${timeoutMs} ms`);
    else if (untracked.code !== 0 || untracked.stdout.trim() !== '') {
      problems.push(
        `untracked-tool probe (${tool}) should pass silently but exited ${untracked.code ?? untracked.signal}` +
          (untracked.stdout.trim() ? ` with stdout ${oneLine(untracked.stdout)}` : '') +
          (untracked.stderr.trim() ? ` (stderr: ${oneLine(untracked.stderr)})` : ''),
      );
    }

    const tracked = await run(payload(dir, 'Bash', { command: 'rm -rf x' }));
    if (tracked.spawnError) problems.push(`cannot run /bin/sh: ${tracked.spawnError}`);
    else if (tracked.timedOut)
      problems.push(`fail-closed probe (Bash with no store) did not finish within ${timeoutMs} ms`);
    else {
      const denied =
        (tracked.code === 0 && isDenyReply(tracked.stdout)) || (tracked.code === 2 && tracked.stderr.trim() !== '');
      if (!denied) {
        problems.push(
          `fail-closed probe (Bash \`rm -rf x\` with no store) was not denied: exit ${tracked.code ?? tracked.signal}` +
            (tracked.stdout.trim() ? `, stdout ${oneLine(tracked.stdout)}` : ', no stdout') +
            (tracked.stderr.trim() ? `, stderr ${oneLine(tracked.stderr)}` : ''),
        );
      }
    }
    try {
      const left = readdirSync(home);
      if (left.length)
        problems.push(`the hook created ${left.join(', ')} in an empty LATCH_HOME (it must not create a store)`);
    } catch {
      /* the probe removed its home: reported by the checks above if it mattered */
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// the registration fingerprint (src/tamper/index.ts)

export function registrationOf(io: Io, workspace: string | null): RegistrationReport | { error: string } {
  const home = homeOf(io);
  if (!existsSync(dbPath(home))) return { error: 'no store yet' };
  try {
    const db = openStore(home, { create: false, readonly: true });
    try {
      return registrationReport(db, workspace);
    } finally {
      db.close();
    }
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** The setup commands of the registrations recorded (Claude Code's settings.json, Codex's hooks.json). */
function registrationAgents(report: RegistrationReport): ('claude' | 'codex')[] {
  const agents = new Set(report.registrations.map((r) => (basename(r.scope) === 'settings.json' ? 'claude' : 'codex')));
  return [...agents].sort();
}

/**
 * What to do about a changed registration: re-run the setup that recorded it. Codex's text is the
 * fingerprint's own (RERECORD_FIX); a Claude Code registration names `latch setup claude`.
 */
function rerecordFix(report: RegistrationReport): string {
  const agents = registrationAgents(report);
  if (!agents.includes('claude')) return RERECORD_FIX;
  const setup = agents.map((a) => `\`latch setup ${a}\``).join(' or ');
  const which = agents.length > 1 ? ' (the one whose registration changed)' : '';
  return `check each change; if it is yours, re-run ${setup}${which} (with --project DIR for a project install) to record the fingerprint again, then \`latch verify\` in each latched workspace`;
}

/** The `registration` check; `setupFix` records a fingerprint where none is. */
export function checkRegistration(report: RegistrationReport | { error: string }, setupFix: string): Check {
  const name = 'registration';
  if ('error' in report)
    return {
      name,
      status: 'warn',
      detail: `cannot compare the registration fingerprint: ${report.error}`,
      fix: setupFix,
    };
  const [first, ...rest] = registrationLines(report);
  const detail = [first ?? '', ...rest].join('\n');
  if (report.status === 'unrecorded') return { name, status: 'warn', detail, fix: setupFix, findings: report.findings };
  if (report.status === 'changed')
    return { name, status: 'fail', detail, fix: rerecordFix(report), findings: report.findings };
  return { name, status: report.findings.length ? 'warn' : 'ok', detail, findings: report.findings };
}
