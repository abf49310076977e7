// `latch doctor` (without FILE): is Latch installed, wired, trusted by each agent, and is its store
// healthy? The generic checks (the store, the workspace watchers) are here; each agent's checks (its
// handlers, hook command, trust, version) are its own (src/agents/<name>/doctor.ts), reached through
// the agent port's `commands()`. Read-only towards the user's state: the store is opened read-only,
// and what the agents' checks run, they run on throwaway copies. `--repair` is the one exception: it
// only acts on the store, and only on one found corrupt (src/store/repair.ts).
import { existsSync, lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { AgentDoctor, AgentName } from '../agents/agent.js';
import { AGENT_NAMES, loadAgent } from '../agents/index.js';
import { errorMessage, EXIT } from '../base/errors.js';
import { dbPath } from '../base/paths.js';
import { inspectStore, type RepairRecord } from '../store/health.js';
import { repairStore } from '../store/repair.js';
import { addonFix, isAddonProblem, thisNode } from '../store/addon.js';
import { openStore, SCHEMA_VERSION } from '../store/store.js';
import { homeOf, json, type Io } from '../kit/io.js';
import type { Check, CheckStatus } from '../kit/checks.js';
import { listWatchers, type WatcherJson } from './shared/watchers.js';
import { residentHooks } from '../resident/list.js';
import { cgroup2Mount, cgroupOf, frozenGroups, mayMakeRoom } from '../contain/cgroup.js';
import { procSupported } from '../contain/proc.js';
import { sleepSync } from '../base/clock.js';

export type { Check, CheckStatus } from '../kit/checks.js';
export type { RepairResult } from '../store/repair.js';

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';

export interface DoctorOptions {
  codexHome?: string;
  project?: string;
  json?: boolean;
  /** Check only this agent's installation (default: each agent's whose configuration holds Latch; Codex's when none does). */
  agent?: AgentName;
  /** Claude Code's managed settings file (default: the system's; tests). */
  claudeManagedSettings?: string;
  /** Bound for each child process (an agent's binary, the hook probe). Default 10 s. */
  timeoutMs?: number;
  /** `--repair`: move a corrupt store aside and start a fresh one in the repaired state (nothing else is checked). */
  repair?: boolean;
}

/** The fix line of a corrupt store. */
export const REPAIR_FIX = 'latch doctor --repair';

// ---------------------------------------------------------------------------------------------
// the store

function modeStr(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}

function checkStore(io: Io, setupCmd: string): Check {
  const name = 'store';
  const home = homeOf(io);
  const me = typeof process.getuid === 'function' ? process.getuid() : undefined;
  let st: Stats;
  try {
    st = lstatSync(home);
  } catch {
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} does not exist (every tracked tool call is denied)`,
      fix: setupCmd,
    };
  }
  if (st.isSymbolicLink())
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} is a symlink; Latch refuses it`,
      fix: `replace the symlink ${home} by a real directory, then run \`${setupCmd}\``,
    };
  if (!st.isDirectory())
    return {
      name,
      status: 'fail',
      detail: `${home} is not a directory`,
      fix: `move ${home} away, then run \`${setupCmd}\``,
    };
  if (me !== undefined && st.uid !== me)
    return {
      name,
      status: 'fail',
      detail: `state directory ${home} is owned by uid ${st.uid}, not by you (uid ${me})`,
      fix: `chown ${me} ${home}`,
    };
  const warns: string[] = [];
  if ((st.mode & 0o777) !== 0o700) warns.push(`state directory mode ${modeStr(st.mode)} (expected 0700)`);

  const file = dbPath(home);
  let fst: Stats;
  try {
    fst = lstatSync(file);
  } catch {
    return {
      name,
      status: 'fail',
      detail: `store ${file} is missing (every tracked tool call is denied)`,
      fix: setupCmd,
    };
  }
  if (fst.isSymbolicLink() || !fst.isFile())
    return {
      name,
      status: 'fail',
      detail: `${file} is ${fst.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; Latch refuses it`,
      fix: `move ${file} away, then run \`${setupCmd}\``,
    };
  if (me !== undefined && fst.uid !== me)
    return {
      name,
      status: 'fail',
      detail: `${file} is owned by uid ${fst.uid}, not by you (uid ${me})`,
      fix: `chown ${me} ${file}`,
    };
  if ((fst.mode & 0o777) !== 0o600) warns.push(`store mode ${modeStr(fst.mode)} (expected 0600)`);

  const modeFix = `chmod 700 ${home} && chmod 600 ${file}`;
  const found = inspectStore(file);
  if (!found.ok) {
    const denied = `${file}: ${found.problem} (every tracked tool call is denied)`;
    const repairs = `\`${REPAIR_FIX}\` moves it aside (kept as evidence) and starts a fresh store in which every session it may have held stays latched until \`latch verify\``;
    switch (found.kind) {
      case 'corrupt':
        return { name, status: 'fail', detail: `${denied}\n${repairs}`, fix: REPAIR_FIX };
      case 'newer':
        return {
          name,
          status: 'fail',
          detail: `${denied}\nupgrade Latch to keep it; or ${repairs}`,
          fix: `upgrade Latch, or ${REPAIR_FIX}`,
        };
      case 'locked':
        return {
          name,
          status: 'fail',
          detail: denied,
          fix: `find the process holding ${file} (fuser -v ${file}), then run \`latch doctor\` again`,
        };
      case 'unreadable':
        if (isAddonProblem(found.problem))
          return {
            name,
            status: 'fail',
            detail: `${file}: cannot open it: better-sqlite3's native addon was not built for this Node (${thisNode()}; a Node upgrade?) (every tracked tool call is denied)`,
            fix: addonFix(),
          };
        return {
          name,
          status: 'fail',
          detail: `${denied}\nnot found corrupt: \`${REPAIR_FIX}\` leaves it in place`,
          fix: `fix what keeps it from being read (permissions, the disk, the SQLite addon), then run \`latch doctor\` again`,
        };
    }
  }
  if (found.migrates) {
    return {
      name,
      status: 'warn',
      detail: [
        `${file}: needs a schema migration (${found.version} -> ${SCHEMA_VERSION}), which succeeds on a copy`,
        'the next hook or command migrates it',
        ...warns,
      ].join('\n'),
      fix: 'latch status',
    };
  }
  if (found.journal.toLowerCase() !== 'wal')
    warns.push(`journal_mode is ${found.journal} (expected wal; the next writer switches it)`);
  const repaired = found.repairs.map(repairLine);
  const head = [`${file}: quick_check ok, schema ${SCHEMA_VERSION}`];
  if (warns.length) return { name, status: 'warn', detail: [...head, ...repaired, ...warns].join('\n'), fix: modeFix };
  return { name, status: 'ok', detail: [`${head[0]}, wal, modes 0700/0600`, ...repaired].join('\n') };
}

/** One line for a repair the store records: when, why, where the old store is kept, what it means. */
function repairLine(r: RepairRecord): string {
  const kept = r.evidence[0]?.to ?? '(nothing moved)';
  return `repaired ${r.repaired_at} (${r.problem}); the old store is kept at ${kept}; a session first seen since then starts latched (until \`latch verify\`) unless it provably started after the repair`;
}

// ---------------------------------------------------------------------------------------------
// resident hooks (a PreToolUse asks one before it starts Latch's bundle: src/resident/)

function checkResident(io: Io): Check {
  const name = 'resident hooks';
  if (io.env.LATCH_RESIDENT === 'off')
    return {
      name,
      status: 'ok',
      detail: 'disabled (LATCH_RESIDENT=off): every PreToolUse starts Latch in its own process',
    };
  if (process.platform !== 'linux')
    return {
      name,
      status: 'ok',
      detail: `not available on ${process.platform}: every PreToolUse starts Latch in its own process`,
    };
  const running = residentHooks(homeOf(io)).filter((r) => r.alive);
  return {
    name,
    status: 'ok',
    detail: running.length
      ? `${running.length} running (pid ${running.map((r) => r.pid).join(', ')}): one per agent process environment and working directory, gone after 10 idle minutes`
      : 'none running (the first PreToolUse of an agent process starts one)',
  };
}

// ---------------------------------------------------------------------------------------------
// containment: whether an agent started from here gets a cgroup of Latch's own (src/contain/cgroup.ts)

/** How long a frozen agent group may be a containment at work before the doctor calls it stuck. */
const FROZEN_GRACE_MS = 3000;

export function checkContainment(io: Io): Check {
  const name = 'containment';
  if (!procSupported())
    return {
      name,
      status: 'warn',
      detail: `not available on ${process.platform}: processes left by an agent are not stopped at a trip`,
    };
  if (io.env.LATCH_CGROUP === 'off')
    return {
      name,
      status: 'warn',
      detail:
        'LATCH_CGROUP=off: at a trip /proc is scanned alone; a job that forks its successor and exits, for ever, can outrun it',
    };
  const mount = cgroup2Mount();
  const own = cgroupOf('self');
  if (!mount || own === null)
    return {
      name,
      status: 'warn',
      detail:
        'no cgroup v2 hierarchy: at a trip /proc is scanned alone; a job that forks its successor and exits, for ever, can outrun it',
    };
  const here = join(mount, own);
  // A group left frozen (a containment that died half-way) holds its agent still: say how to thaw it.
  let stuck = frozenGroups(here);
  for (let waited = 0; stuck.length > 0 && waited < FROZEN_GRACE_MS; waited += 100) {
    sleepSync(100);
    stuck = frozenGroups(here);
  }
  if (stuck.length > 0)
    return {
      name,
      status: 'fail',
      detail: `an agent's cgroup is still frozen (a containment stopped half-way): ${stuck.join(', ')}; its agent does not run`,
      fix: stuck.map((d) => `echo 0 > ${join(d, 'cgroup.freeze')}`).join('; '),
    };
  const refused = mayMakeRoom(mount, own);
  if (refused)
    return {
      name,
      status: 'warn',
      detail: `an agent started from this shell gets no cgroup of Latch's own (${refused}): at a trip /proc is scanned alone; a job that forks its successor and exits, for ever, can outrun it`,
      fix: 'start the agent in a cgroup of your own, e.g. `systemd-run --user --scope codex`',
    };
  return {
    name,
    status: 'ok',
    detail: `atomic: an agent started from this shell is moved into a cgroup of Latch's own at its first hook (${join(here, 'latch-<pid>-<start>')}), frozen at a trip while its processes are stopped`,
  };
}

// ---------------------------------------------------------------------------------------------
// workspace watchers (a Close stats only what they journaled; without one, every file)

function checkWatchers(io: Io): Check {
  const name = 'watchers';
  if (io.env.LATCH_WATCH === 'off')
    return { name, status: 'ok', detail: 'disabled (LATCH_WATCH=off): each Close stats every tracked file' };
  if (process.platform !== 'linux')
    return { name, status: 'ok', detail: `not available on ${process.platform}: each Close stats every tracked file` };
  const home = homeOf(io);
  if (!existsSync(dbPath(home))) return { name, status: 'ok', detail: 'none yet (a hook starts one per workspace)' };
  let rows: WatcherJson[];
  try {
    const db = openStore(home, { create: false, readonly: true });
    try {
      rows = listWatchers(db, null);
    } finally {
      db.close();
    }
  } catch (err) {
    return {
      name,
      status: 'warn',
      detail: `cannot read the watchers: ${errorMessage(err)}`,
      fix: 'latch doctor (see the store check)',
    };
  }
  const running = rows.filter((r) => r.state !== 'unavailable' && r.alive);
  const unavailable = rows.filter((r) => r.state === 'unavailable');
  const lines = [
    `${running.length} running${running.length ? ': ' + running.map((r) => `${r.workspace} (${r.directories} directories)`).join(', ') : ' (a hook starts one per workspace)'}`,
  ];
  for (const r of unavailable)
    lines.push(
      `unavailable for ${r.workspace}: ${r.reason ?? 'no reason recorded'}; each Close there stats every tracked file`,
    );
  if (unavailable.length === 0) return { name, status: 'ok', detail: lines.join('\n') };
  return {
    name,
    status: 'warn',
    detail: lines.join('\n'),
    fix: 'add large generated directories to .gitignore (ignored ones are not watched), or raise LATCH_WATCH_MAX_DIRS (and fs.inotify.max_user_watches)',
  };
}

// ---------------------------------------------------------------------------------------------
// the registration fingerprint (the check: src/kit/checks.ts)

/** ok | changed | unrecorded | unknown (the store could not be read). */
export function registrationStatus(c: Check): string {
  if (!c.findings) return 'unknown';
  if (c.status === 'fail') return 'changed';
  return c.findings.some((f) => f.code === 'no_fingerprint') ? 'unrecorded' : 'ok';
}

// ---------------------------------------------------------------------------------------------

/**
 * The report: the leading agent's checks, the store and the watchers, what the leading agent checks
 * after them, then each other agent's checks and what it checks after the shared ones but a check the
 * report has already (the registration fingerprint is one for every agent: the leader's stands). So
 * Claude Code's reads while held are shown when Codex leads. Without --agent, the agents checked are
 * those whose configuration holds Latch (in registry order, the first leads), or the first agent when
 * none does.
 */
export async function runChecks(io: Io, opts: DoctorOptions): Promise<Check[]> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const names = opts.agent ? [opts.agent] : AGENT_NAMES;
  const flags = { 'codex-home': opts.codexHome, 'claude-managed-settings': opts.claudeManagedSettings };
  const parts: AgentDoctor[] = [];
  for (const name of names) {
    const agent = await loadAgent(name);
    if (!agent) continue;
    const commands = await agent.commands();
    parts.push(await commands.doctor(io, { project: opts.project, timeoutMs, flags }));
  }
  const installed = parts.filter((p) => p.installed);
  if (!opts.agent && installed.length === 0 && parts.length > 0) return notInstalled(io, parts);
  const lead = opts.agent ? parts[0]! : (installed[0] ?? parts[0]!);
  const others = opts.agent ? [] : installed.filter((p) => p !== lead);

  // First: opening the store (an agent's checks read the recorded installation) tightens its modes,
  // which this check reports.
  const store = checkStore(io, lead.setupFix);
  const checks: Check[] = await lead.checks();
  checks.push(store);
  checks.push(checkWatchers(io));
  checks.push(checkResident(io));
  checks.push(checkContainment(io));
  checks.push(...(await lead.afterShared()));
  for (const p of others) {
    checks.push(...(await p.checks()));
    const seen = new Set(checks.map((c) => c.name));
    checks.push(...(await p.afterShared()).filter((c) => !seen.has(c.name)));
  }
  return checks;
}

/**
 * No agent's configuration holds Latch (never set up, or every agent uninstalled): one answer that
 * says so, with where each agent was looked for, instead of every agent's checks failing one by one.
 */
async function notInstalled(io: Io, parts: AgentDoctor[]): Promise<Check[]> {
  const where: string[] = [];
  for (const p of parts) {
    const first = (await p.checks()).find((c) => /installed/.test(c.name));
    if (first) where.push(`${first.name}: ${first.detail.split('\n')[0]}`);
  }
  return [
    {
      name: 'installed',
      status: 'fail',
      detail: ['Latch is not installed for any agent.', ...where].join('\n'),
      fix: parts.map((p) => p.setupFix).join(', or '),
    },
    checkStore(io, parts[0]!.setupFix),
  ];
}

const MARK: Record<CheckStatus, string> = { ok: '[ok]  ', warn: '[warn]', fail: '[FAIL]' };

export function formatChecks(checks: Check[]): string {
  const lines = [`Latch doctor (${VERSION})`, ''];
  for (const c of checks) {
    const [first, ...rest] = c.detail.split('\n');
    lines.push(`${MARK[c.status]} ${c.name}: ${first ?? ''}`);
    for (const r of rest) lines.push(`         ${r}`);
    if (c.fix) lines.push(`         fix: ${c.fix}`);
  }
  const fails = checks.filter((c) => c.status === 'fail').length;
  const warns = checks.filter((c) => c.status === 'warn').length;
  lines.push('');
  lines.push(
    fails
      ? `${fails} check(s) failed, ${warns} warning(s).`
      : warns
        ? `No failures, ${warns} warning(s).`
        : 'All checks passed.',
  );
  return lines.join('\n') + '\n';
}

export async function doctor(io: Io, opts: DoctorOptions): Promise<number> {
  if (opts.repair) return repair(io, opts);
  const checks = await runChecks(io, opts);
  const ok = checks.every((c) => c.status !== 'fail');
  const reg = checks.find((c) => c.name === 'registration');
  const registration = reg
    ? { status: registrationStatus(reg), detail: reg.detail, findings: reg.findings ?? [] }
    : null;
  if (opts.json) io.out(JSON.stringify({ ok, checks, registration }, null, 2) + '\n');
  else io.out(formatChecks(checks));
  return ok ? EXIT.ok : EXIT.failure;
}

// ---------------------------------------------------------------------------------------------
// --repair

/**
 * `latch doctor --repair`: a store found corrupt (or written by a newer Latch) is moved aside and a
 * fresh one started in the repaired state (src/store/repair.ts). Exit 0 when it repaired, and when
 * the store was healthy (nothing moved: said so); 1 when there is no store, or one it does not move
 * (locked, unreadable, a symlink: said why). Only ever more restrictive: run by anyone, it releases
 * nothing (the agent cannot run it anyway: src/shell/latch-guard.ts).
 */
function repair(io: Io, opts: DoctorOptions): number {
  const r = repairStore(homeOf(io), io.now());
  const ok = r.status === 'repaired' || r.status === 'healthy';
  if (opts.json) {
    json(io, { ok, repair: r });
    return ok ? EXIT.ok : EXIT.failure;
  }
  const lines = [`Latch doctor --repair (${VERSION})`, ''];
  if (r.status !== 'repaired') {
    lines.push(r.detail + '.');
    if (r.status === 'missing') lines.push(`\`latch setup ${AGENT_NAMES.join('` or `latch setup ')}\` makes a store.`);
  } else {
    lines.push(`The store was unusable: ${r.problem}.`, 'Moved aside, kept as evidence:');
    for (const e of r.evidence) lines.push(`  ${e.from} -> ${e.to} (${e.bytes} bytes)`);
    lines.push(
      `Fresh store: ${r.store} (schema ${SCHEMA_VERSION}), repaired at ${r.repaired_at}.`,
      '',
      'The fresh store does not know which sessions were latched. Every session it has not seen starts latched',
      'at its next hook, until a human runs `latch verify` in its workspace (with --accept-changes once you',
      'have reviewed the workspace: its checkpoints stayed in the old store). A session that provably',
      'started after the repair (its SessionStart, a transcript created since) is not latched.',
    );
    if (r.holders.length > 0) {
      lines.push(
        '',
        "These processes still held the old store open (stop them: one closing may remove the fresh store's WAL):",
      );
      for (const h of r.holders) lines.push(`  pid ${h.pid}: ${h.cmdline}`);
    }
    lines.push(
      '',
      `Next: the registration fingerprint stayed in the old store: run \`latch setup ${AGENT_NAMES.join('` / `latch setup ')}\` for each agent you use`,
      'to record it again (review its hook files and your shell startup files first if you did not cause the corruption),',
      'then `latch doctor`.',
    );
  }
  io.out(lines.join('\n') + '\n');
  return ok ? EXIT.ok : EXIT.failure;
}
