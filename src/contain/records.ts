// The trip: contain, then record (each its own step; errors become data). Also what containment
// would stop now for a session (`latch status`), and the record's one writer.
import { dirname } from 'node:path';
import { type Db, immediate } from '../store/store.js';
import { recordedResidents } from '../resident/list.js';
import { contain } from './kill.js';
import { cgroupOf, enroll, type Group, groupOf } from './cgroup.js';
import { type AgentInfo, findAgent } from './match.js';
import { bootNs, exeOf, nsOf, type Proc, procSupported, readProc, sameProcess } from './proc.js';
import { type ContainResult, failed, listCandidates, type ScanInput, unsupported } from './scan.js';
import { attemptWindows, watcherIds } from './windows.js';
import { monoMs } from '../base/clock.js';

/**
 * Called by the guard after the trip's transaction committed: contains the processes of the
 * session's agent and the orphans of the workspace's attempts, and records them in
 * contained_processes / containments. Never throws.
 */
export function containAfterTrip(
  db: Db,
  sessionId: string,
  compactionSeq: number,
  opts: {
    workspace?: string | null;
    now?: string;
    orphanFilter?: (p: Proc) => boolean;
    mode?: string;
    /** The agent's session marks (Agent.sessionMarks): without them no orphan is signalled. */
    marks?: readonly string[];
    /**
     * Contain around the agent its hooks recorded for the session (session_agents), not the one among
     * this process's ancestors: the caller is not the agent's hook (the watcher's out-of-band trip).
     */
    recordedAgent?: boolean;
  } = {},
): ContainResult {
  const t0 = monoMs();
  let result: ContainResult;
  try {
    if (!procSupported()) result = unsupported(t0);
    else {
      let workspace = opts.workspace ?? null;
      if (workspace === null) {
        const r = db.prepare('SELECT workspace FROM sessions WHERE session_id = ?').get(sessionId) as
          | { workspace: string }
          | undefined;
        workspace = r?.workspace ?? null;
      }
      const windows = attemptWindows(db, { workspace, sinceNs: bootNs() });
      const input: ScanInput = {
        windows,
        watchers: watcherIds(db),
        residents: recordedResidents(dirname(db.name)),
        marks: opts.marks ?? [],
        ...(opts.orphanFilter ? { orphanFilter: opts.orphanFilter } : {}),
      };
      // LATCH_CONTAIN=list (tests sharing a uid with other work, or a human who wants to see first):
      // record the candidates without signalling them. The hook's environment is the agent's own, which
      // the agent's tool calls cannot change.
      const mode = opts.mode ?? process.env.LATCH_CONTAIN;
      // Without an agent among the hook's ancestors (a hook run by hand or in-process by a test, an
      // agent this file does not know) there is nobody to contain for sure: list, do not signal.
      const agent = opts.recordedAgent ? liveSessionAgent(db, sessionId) : findAgent();
      input.agent = agent;
      // The agent's cgroup of Latch's own, where its first hook could make one (src/contain/cgroup.ts).
      const group = agent ? groupOf(agent, process.env, recordedGroup(db, sessionId, agent)) : null;
      if (group && 'dir' in group) input.group = group.dir;
      if (mode === 'list' || !agent) {
        result = listCandidates(input);
        result.notes.push(
          mode === 'list'
            ? 'LATCH_CONTAIN=list: candidates recorded, nothing signalled'
            : opts.recordedAgent
              ? "the session's recorded agent process no longer runs: candidates recorded, nothing signalled"
              : "no agent process among the hook's ancestors: candidates recorded, nothing signalled",
        );
      } else result = contain(input);
      if (group && 'none' in group) result.notes.push(`no cgroup to freeze (${group.none}): /proc scanned alone`);
    }
  } catch (err) {
    result = failed(t0, err);
  }
  const rec = recordContainment(db, sessionId, compactionSeq, result, opts.now ?? new Date().toISOString());
  if (rec) result.errors.push(rec);
  return result;
}

/**
 * What containment would stop now for a session, without signalling (for `latch status`): the
 * agent recorded at its latest trip (when still the same process), else this process's agent.
 */
export function listForSession(
  db: Db,
  sessionId: string,
  opts: { orphanFilter?: (p: Proc) => boolean; marks?: readonly string[] } = {},
): ContainResult {
  const t0 = monoMs();
  if (!procSupported()) return unsupported(t0);
  try {
    const s = db.prepare('SELECT workspace FROM sessions WHERE session_id = ?').get(sessionId) as
      | { workspace: string }
      | undefined;
    const last = db
      .prepare(
        'SELECT agent_pid, agent_start, agent_cmdline FROM containments WHERE session_id = ? AND agent_pid IS NOT NULL ORDER BY id DESC LIMIT 1',
      )
      .get(sessionId) as { agent_pid: number; agent_start: string; agent_cmdline: string | null } | undefined;
    const boot = bootNs();
    const live = last ? readProc(last.agent_pid, boot) : null;
    const agent =
      last && live && live.startTicks === last.agent_start
        ? {
            pid: last.agent_pid,
            start_ticks: last.agent_start,
            exe: exeOf(last.agent_pid),
            cmdline: last.agent_cmdline ?? '',
          }
        : undefined;
    const windows = attemptWindows(db, { workspace: s?.workspace ?? null, sinceNs: boot });
    return listCandidates({
      windows,
      watchers: watcherIds(db),
      residents: recordedResidents(dirname(db.name)),
      marks: opts.marks ?? [],
      ...(agent ? { agent } : {}),
      ...(opts.orphanFilter ? { orphanFilter: opts.orphanFilter } : {}),
    });
  } catch (err) {
    return failed(t0, err);
  }
}

/** Writes the record (own transaction). Returns an error message instead of throwing. */
export function recordContainment(
  db: Db,
  sessionId: string,
  compactionSeq: number,
  r: ContainResult,
  now: string,
): string | null {
  try {
    immediate(db, () => {
      const run = db
        .prepare(
          `INSERT INTO containments (session_id, compaction_seq, at, supported, agent_pid, agent_start, agent_cmdline, pid_ns, rounds, ms, notes_json, errors_json, spared_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          sessionId,
          compactionSeq,
          now,
          r.supported ? 1 : 0,
          r.agent?.pid ?? null,
          r.agent?.start_ticks ?? null,
          r.agent?.cmdline ?? null,
          nsOf('self'),
          r.rounds,
          Math.round(r.ms * 1000) / 1000,
          JSON.stringify(r.notes),
          JSON.stringify(r.errors),
          JSON.stringify(r.spared.slice(0, 100)),
        );
      const ins = db.prepare(
        `INSERT INTO contained_processes (containment_id, session_id, compaction_seq, pid, start_ticks, start_ns, exe, cmdline, why, attempt_id, action, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const c of r.candidates)
        ins.run(
          run.lastInsertRowid,
          sessionId,
          compactionSeq,
          c.pid,
          c.start_ticks,
          c.start_ns,
          c.exe,
          c.cmdline,
          c.why,
          c.attempt_id,
          c.action,
          now,
        );
    });
    return null;
  } catch (err) {
    return `recording the containment failed: ${String((err as Error)?.message ?? err)}`;
  }
}

/**
 * The hook's part in atomic containment (src/contain/cgroup.ts): puts the agent that runs this
 * hook into a cgroup of Latch's own, once, so that every process it starts later is born there. Where
 * no agent runs this hook (by hand, a test in process), or the cgroup is not this user's: no group.
 * Returns the agent found among this hook's ancestors too (null when it did not look: `unlessBornInGroup`
 * and a hook born in such a group). Never throws.
 */
export function enrollAgent(
  opts: { unlessBornInGroup?: boolean } = {},
  env: NodeJS.ProcessEnv = process.env,
): { group: Group; agent: AgentInfo | null } {
  let agent: AgentInfo | null = null;
  try {
    if (!procSupported()) return { group: { none: 'unsupported' }, agent };
    // A later hook whose agent is recorded looks only where it may have to enroll it: not when turned
    // off, not when born in the agent's group (one read says so, no ancestry walk).
    if (opts.unlessBornInGroup && env.LATCH_CGROUP === 'off') return { group: { none: 'LATCH_CGROUP=off' }, agent };
    if (opts.unlessBornInGroup && /\/latch-\d+-\d+\/agent$/.test(cgroupOf('self') ?? ''))
      return { group: { none: 'enrolled' }, agent };
    agent = findAgent();
    if (env.LATCH_CGROUP === 'off') return { group: { none: 'LATCH_CGROUP=off' }, agent };
    return { group: agent ? enroll(agent, env) : { none: 'no agent among the ancestors' }, agent };
  } catch (err) {
    return { group: { none: String((err as Error)?.message ?? err) }, agent };
  }
}

/**
 * Records the agent process a session's hook runs under (session_agents), when it is not the one
 * recorded: from the hook's own ancestry, never from anything the agent's jobs can name. A recorded
 * agent that still runs keeps the record: a job of the agent can run
 * Latch's hook with the session's payload under an executable it named `codex`, and an agent recorded
 * from there, once it exits, would leave the watcher looking at no agent. A resumed session's new
 * agent process is recorded once the old one has exited. `known`: the record, when the caller read it.
 * Own transaction; errors are returned, never thrown (the hook goes on without it).
 */
export function recordSessionAgent(
  db: Db,
  sessionId: string,
  agent: AgentInfo,
  now: string,
  cgroup: string | null = null,
  known: (AgentInfo & { cgroup: string | null }) | undefined | 'read' = 'read',
): string | null {
  try {
    const cur = known === 'read' ? recordedSessionAgent(db, sessionId) : known;
    const same = cur !== undefined && cur.pid === agent.pid && cur.start_ticks === agent.start_ticks;
    // The group Latch made for this agent process is made once: a later hook may fill in a group the
    // first could not make, never replace one (a job can move the agent into a decoy of the group's
    // name, or into a cgroup Latch may not divide, where a hook would find another group or none).
    if (same && (cur.cgroup !== null || cgroup === null)) return null;
    if (!same && cur !== undefined && sameProcess(cur.pid, cur.start_ticks)) return null;
    immediate(db, () => {
      db.prepare(
        `INSERT INTO session_agents (session_id, pid, start_ticks, exe, cmdline, cgroup, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(session_id) DO UPDATE SET pid = excluded.pid, start_ticks = excluded.start_ticks,
           exe = excluded.exe, cmdline = excluded.cmdline, cgroup = excluded.cgroup, recorded_at = excluded.recorded_at`,
      ).run(sessionId, agent.pid, agent.start_ticks, agent.exe, agent.cmdline, cgroup, now);
    });
    return null;
  } catch (err) {
    return `recording the session's agent failed: ${String((err as Error)?.message ?? err)}`;
  }
}

/** The agent process recorded for a session (and the group Latch made for it), whether or not it still runs. */
export function recordedSessionAgent(db: Db, sessionId: string): (AgentInfo & { cgroup: string | null }) | undefined {
  const r = db
    .prepare('SELECT pid, start_ticks, exe, cmdline, cgroup FROM session_agents WHERE session_id = ?')
    .get(sessionId) as
    | { pid: number; start_ticks: string; exe: string | null; cmdline: string; cgroup: string | null }
    | undefined;
  return r ? { pid: r.pid, start_ticks: r.start_ticks, exe: r.exe, cmdline: r.cmdline, cgroup: r.cgroup } : undefined;
}

/** The group recorded for the session's agent, when `agent` is that very process. */
function recordedGroup(db: Db, sessionId: string, agent: AgentInfo): string | null {
  try {
    const a = recordedSessionAgent(db, sessionId);
    return a && a.pid === agent.pid && a.start_ticks === agent.start_ticks ? a.cgroup : null;
  } catch {
    return null;
  }
}

/** The session's recorded agent when that very process (pid and start time) still runs, else null. */
export function liveSessionAgent(db: Db, sessionId: string): AgentInfo | null {
  const a = recordedSessionAgent(db, sessionId);
  return a && sameProcess(a.pid, a.start_ticks)
    ? { pid: a.pid, start_ticks: a.start_ticks, exe: a.exe, cmdline: a.cmdline }
    : null;
}
