// The trip: contain, then record (each its own step; errors become data). Also what containment
// would stop now for a session (`latch status`), and the record's one writer.
import { dirname } from 'node:path';
import type { Db } from '../../store/store.js';
import { recordedResidents } from '../../resident/list.js';
import { contain } from './kill.js';
import { cgroupOf, enroll, type Group, groupOf } from './cgroup.js';
import { findAgent } from './match.js';
import { bootNs, exeOf, nsOf, type Proc, procSupported, readProc } from './proc.js';
import { type ContainResult, failed, listCandidates, type ScanInput, unsupported } from './scan.js';
import { attemptWindows, watcherIds } from './windows.js';
import { monoMs } from '../../base/clock.js';

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
      const agent = findAgent();
      input.agent = agent;
      // The agent's cgroup of Latch's own, where its first hook could make one (src/guard/contain/cgroup.ts).
      const group = agent ? groupOf(agent) : null;
      if (group && 'dir' in group) input.group = group.dir;
      if (mode === 'list' || !agent) {
        result = listCandidates(input);
        result.notes.push(
          mode === 'list'
            ? 'LATCH_CONTAIN=list: candidates recorded, nothing signalled'
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
    db.exec('BEGIN IMMEDIATE');
    try {
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
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    return null;
  } catch (err) {
    return `recording the containment failed: ${String((err as Error)?.message ?? err)}`;
  }
}

/**
 * The hook's part in atomic containment (src/guard/contain/cgroup.ts): puts the agent that runs this
 * hook into a cgroup of Latch's own, once, so that every process it starts later is born there. Where
 * no agent runs this hook (by hand, a test in process), or the cgroup is not this user's: nothing.
 * Never throws.
 */
export function enrollAgent(opts: { unlessBornInGroup?: boolean } = {}, env: NodeJS.ProcessEnv = process.env): Group {
  try {
    if (!procSupported() || env.LATCH_CGROUP === 'off') return { none: 'off or unsupported' };
    // A later hook of an enrolled agent was born in its group: one read says so, no ancestry walk.
    if (opts.unlessBornInGroup && /\/latch-\d+-\d+\/agent$/.test(cgroupOf('self') ?? '')) return { none: 'enrolled' };
    const agent = findAgent();
    return agent ? enroll(agent, env) : { none: 'no agent among the ancestors' };
  } catch (err) {
    return { none: String((err as Error)?.message ?? err) };
  }
}
