// The store cross-check (read-only): the Latch store's record of the session against the file.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage } from '../../../base/errors.js';
import { dbPath } from '../../../base/paths.js';
import type { BriefDigest } from '../../../continuity/page-read.js';
import { type Db, openStore } from '../../../store/store.js';
import { safeJsonArray, safeRealpath } from '../../shared/file-doctor.js';
import { checkRead } from './brief-reads.js';
import type { Analyser, PendingRead } from './read.js';
import { type BriefReadInfo, CHUNK, type ClaudeStoreCheck, LIST_CAP } from './types.js';

interface StoreRows {
  session: {
    session_id: string;
    agent: string;
    policy: string;
    state: string;
    state_reason: string | null;
    transcript_path: string | null;
    created_at: string;
  };
  compactions: {
    seq: number;
    trigger: string | null;
    observed_via: string;
    checkpoint_id: string | null;
    tripped_at: string | null;
  }[];
  checkpoints: {
    id: string;
    compaction_seq: number;
    transcript_path: string | null;
    transcript_size: number | null;
    transcript_sha256: string | null;
  }[];
  transitions: { at: string; to_state: string }[];
  denials: { tool_use_id: string | null; tool_name: string; at: string }[];
  attempts: { tool_use_id: string | null; started_at: string }[];
  reads: { call_id: string; version: number | null; ok: number }[];
}

function findSession(db: Db, path: string, ids: string[]): string | null {
  const byPath = db.prepare('SELECT session_id FROM sessions WHERE transcript_path = ? ORDER BY created_at LIMIT 1');
  for (const p of [path, safeRealpath(path)]) {
    const r = byPath.get(p) as { session_id: string } | undefined;
    if (r) return r.session_id;
  }
  const byId = db.prepare('SELECT session_id FROM sessions WHERE session_id = ?');
  for (const id of ids) if (byId.get(id)) return id;
  return null;
}

function loadRows(db: Db, id: string): StoreRows {
  const all = <T>(sql: string): T[] => db.prepare(sql).all(id) as T[];
  return {
    session: db
      .prepare(
        'SELECT session_id, agent, policy, state, state_reason, transcript_path, created_at FROM sessions WHERE session_id = ?',
      )
      .get(id) as StoreRows['session'],
    compactions: all(
      'SELECT seq, trigger, observed_via, checkpoint_id, tripped_at FROM compactions WHERE session_id = ? ORDER BY seq',
    ),
    checkpoints: all(
      'SELECT id, compaction_seq, transcript_path, transcript_size, transcript_sha256 FROM checkpoints WHERE session_id = ? ORDER BY compaction_seq, created_at',
    ),
    transitions: all('SELECT at, to_state FROM transitions WHERE session_id = ? ORDER BY id'),
    denials: all('SELECT tool_use_id, tool_name, at FROM denials WHERE session_id = ? ORDER BY id'),
    attempts: all('SELECT tool_use_id, started_at FROM attempts WHERE session_id = ?'),
    reads: all('SELECT call_id, version, ok FROM brief_reads WHERE session_id = ? ORDER BY id'),
  };
}

function briefDigest(db: Db, session: string, version: number): BriefDigest | null {
  const r = db.prepare('SELECT page_digests FROM briefs WHERE session_id = ? AND version = ?').get(session, version) as
    | { page_digests: string }
    | undefined;
  if (!r) return null;
  const shas = safeJsonArray(r.page_digests);
  return { session, version, pages: shas.map((sha256, i) => ({ n: i + 1, sha256 })) };
}

function hashPrefix(path: string, size: number): string | null {
  let fd = -1;
  try {
    fd = openSync(path, 'r');
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    let pos = 0;
    while (pos < size) {
      const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
      if (n <= 0) return null;
      h.update(buf.subarray(0, n));
      pos += n;
    }
    return h.digest('hex');
  } catch {
    return null;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** The ids of a session's sub-agent transcripts (`<dir>/<session>/subagents/*.jsonl`) that mention `ids`. */
function inSubagentTranscripts(path: string, session: string, ids: string[]): Set<string> {
  const found = new Set<string>();
  if (ids.length === 0) return found;
  const dir = join(dirname(path), session, 'subagents');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return found;
  }
  for (const n of names) {
    let text = '';
    try {
      text = readFileSync(join(dir, n), 'utf8');
    } catch {
      continue;
    }
    for (const id of ids) if (text.includes(`"${id}"`)) found.add(id);
  }
  return found;
}

function heldIntervals(transitions: StoreRows['transitions']): { from: string; to: string | null; state: string }[] {
  const held: { from: string; to: string | null; state: string }[] = [];
  for (const t of transitions) {
    const open = held.length > 0 && held[held.length - 1]!.to === null;
    if (t.to_state !== 'mutable' && !open) held.push({ from: t.at, to: null, state: t.to_state });
    else if (t.to_state === 'mutable' && open) held[held.length - 1]!.to = t.at;
  }
  return held;
}

export function crossCheck(
  a: Analyser,
  path: string,
  home: string,
  reads: BriefReadInfo[],
  pending: PendingRead[],
): ClaudeStoreCheck {
  const base: ClaudeStoreCheck = { home, status: 'not_found', detail: '', session_id: null };
  if (!existsSync(dbPath(home))) return { ...base, detail: `no Latch store at ${dbPath(home)}` };
  let db: Db;
  try {
    db = openStore(home, { create: false, readonly: true });
  } catch (err) {
    return { ...base, status: 'unreadable', detail: errorMessage(err) };
  }
  try {
    const ids = [...a.sessions.keys()];
    const sid = findSession(db, path, ids);
    if (!sid)
      return {
        ...base,
        status: 'session_unknown',
        session_id: ids[0] ?? null,
        detail: ids.length
          ? `the Latch store knows no session of this file (${ids.slice(0, 3).join(', ')}) and no session with this transcript path`
          : 'no session id in the file and no store session for this path',
      };
    const s = loadRows(db, sid);
    const f = a.f;
    const out: ClaudeStoreCheck = {
      ...base,
      status: 'checked',
      session_id: sid,
      detail: `Latch store knows session ${sid}`,
      agent: s.session.agent,
      policy: s.session.policy,
      state: s.session.state,
      state_reason: s.session.state_reason,
      transcript_path: s.session.transcript_path,
      attempts_recorded: s.attempts.length,
      brief_reads_recorded: s.reads.length,
    };
    if (s.session.agent !== 'claude')
      f.add(
        'store_agent_mismatch',
        'warning',
        `the Latch store records session ${sid} as a ${s.session.agent} session, not a Claude Code one`,
      );
    if (s.session.transcript_path && safeRealpath(s.session.transcript_path) !== safeRealpath(path))
      out.detail += `; FILE is not the recorded transcript ${s.session.transcript_path} (a copy?)`;

    // Compactions: the n-th store compaction is the n-th compact_boundary of the file.
    const T = a.compactions.length;
    const byseq = new Map(s.compactions.map((c) => [c.seq, c]));
    const cps = new Set(s.checkpoints.map((c) => c.id));
    out.compactions = s.compactions.map((c) => ({
      seq: c.seq,
      trigger: c.trigger,
      observed_via: safeJsonArray(c.observed_via),
      checkpoint_id: c.checkpoint_id,
      tripped_at: c.tripped_at,
      in_file: c.seq >= 1 && c.seq <= T,
    }));
    for (const k of a.compactions) {
      const c = byseq.get(k.index);
      if (!c) {
        f.add(
          'store_missing_compaction',
          'error',
          'a compaction in the file has no record in the Latch store (Latch did not see it)',
          k.line,
        );
        continue;
      }
      if (c.trigger && k.trigger && c.trigger !== k.trigger)
        f.add(
          'trigger_mismatch',
          'warning',
          `the store recorded a different trigger for a compaction than its compact_boundary line (${c.trigger} vs ${k.trigger})`,
          k.line,
        );
      if (!c.checkpoint_id || !cps.has(c.checkpoint_id))
        f.add('no_checkpoint', 'error', 'a compaction has no checkpoint in the Latch store', k.line);
      if (!c.tripped_at) f.add('no_trip', 'error', 'a compaction did not trip the policy in the Latch store', k.line);
    }
    for (const c of s.compactions) {
      if (c.seq <= T) continue;
      const via = safeJsonArray(c.observed_via);
      if (via.length > 0 && via.every((v) => v === 'pre_compact') && !c.tripped_at)
        f.add(
          'pre_compact_only',
          'notice',
          `the store recorded compaction #${c.seq} from PreCompact alone (Claude Code may give up after PreCompact: no compaction then)`,
        );
      else if (via.includes('transcript'))
        f.add(
          'transcript_missing_compaction',
          'error',
          `Latch read compaction #${c.seq} in the transcript, but the file shows only ${T}: the transcript lost lines or was rewritten`,
        );
      else
        f.add(
          'transcript_missing_compaction',
          'warning',
          `the store recorded compaction #${c.seq} (via ${via.join(' + ') || '?'}) but the file shows only ${T} compact_boundary line(s) (Claude Code writes the boundary late: if the session is still running, check again after its turn ends)`,
        );
    }

    // Checkpoints: the transcript prefix hashed at each one, against this file.
    out.checkpoints = s.checkpoints.map((c) => {
      let prefix: NonNullable<ClaudeStoreCheck['checkpoints']>[number]['prefix'] = 'not_recorded';
      let now: string | null = null;
      if (c.transcript_size !== null && c.transcript_sha256) {
        if (a.bytes < c.transcript_size) {
          prefix = 'shorter';
          f.add(
            'prefix_rewritten',
            'error',
            `the file is shorter (${a.bytes} bytes) than the ${c.transcript_size} bytes hashed at checkpoint ${c.id}: it was truncated or rewritten`,
          );
        } else {
          now = hashPrefix(path, c.transcript_size);
          if (now === c.transcript_sha256) prefix = 'same';
          else {
            prefix = 'rewritten';
            f.add(
              'prefix_rewritten',
              'error',
              `prefix rewritten: the first ${c.transcript_size} bytes differ from what checkpoint ${c.id} hashed`,
            );
          }
        }
      }
      return {
        id: c.id,
        compaction_seq: c.compaction_seq,
        transcript_path: c.transcript_path,
        transcript_size: c.transcript_size,
        transcript_sha256: c.transcript_sha256,
        prefix_now_sha256: now,
        prefix,
      };
    });

    // Denials vs calls blocked in the file.
    const held = heldIntervals(s.transitions);
    out.held_intervals = held;
    const denied = s.denials.map((d) => d.tool_use_id).filter((x): x is string => !!x);
    const deniedSet = new Set(denied);
    const blockedLatch = a.calls.filter((c) => c.outcome === 'blocked' && c.blocked?.names_latch);
    const blockedOther = a.calls.filter((c) => c.outcome === 'blocked' && !c.blocked?.names_latch).length;
    const absent = denied.filter((id) => !a.callById.has(id));
    const sub = inSubagentTranscripts(path, sid, absent);
    const missingInFile: string[] = [];
    for (const id of denied) {
      const c = a.callById.get(id);
      if (!c) {
        if (sub.has(id)) continue;
        missingInFile.push(id);
        f.add(
          'denial_not_in_transcript',
          'error',
          'a denial Latch recorded has no blocked call in the file (the call is not in it: lines were lost, or FILE is not this session’s transcript)',
        );
      } else if (c.outcome === 'no_result') {
        missingInFile.push(id);
        f.add(
          'denial_without_result',
          'warning',
          'a call Latch denied has no tool_result in the file (the file ends before it, or lost it)',
          c.line,
        );
      } else if (c.outcome !== 'blocked') {
        missingInFile.push(id);
        f.add(
          'denial_not_in_transcript',
          'error',
          `a call Latch denied is not blocked in the file: it ${c.outcome === 'error' ? 'ran and failed' : 'ran'} (the deny did not take, or the transcript was altered)`,
          c.result_line ?? c.line,
        );
      }
    }
    if (sub.size > 0)
      f.add(
        'denial_in_subagent',
        'notice',
        `${sub.size} denial(s) are of sub-agent calls, in the sub-agent transcripts beside the file (not compared)`,
      );
    const missingInStore: string[] = [];
    for (const c of blockedLatch) {
      if (c.id && deniedSet.has(c.id)) continue;
      if (c.blocked?.unrecorded) {
        f.add(
          'block_unrecorded',
          'notice',
          'a call Latch blocked without a store record (it could not check the call, or the call touched Latch’s own files: such denials are not recorded)',
          c.result_line ?? c.line,
        );
        continue;
      }
      if (c.id) missingInStore.push(c.id);
      f.add(
        'block_not_in_store',
        'warning',
        'a call blocked by Latch in the file has no denial in the Latch store',
        c.result_line ?? c.line,
      );
    }
    out.denials = {
      store: s.denials.length,
      blocked_by_latch_in_file: blockedLatch.length,
      blocked_by_other_hooks_in_file: blockedOther,
      missing_in_file: missingInFile.slice(0, LIST_CAP),
      missing_in_store: missingInStore.slice(0, LIST_CAP),
      in_subagent_transcripts: [...sub].slice(0, LIST_CAP),
    };

    // Calls that ran without Latch admitting them (no attempt): while the session was held, and after
    // Latch first saw the session. A tracked call Latch admits (a read while held runs rewritten) has an attempt.
    const attempted = new Set(s.attempts.map((x) => x.tool_use_id).filter((x): x is string => !!x));
    const since = Date.parse(s.session.created_at);
    const inHeld = (t: number) => held.some((h) => t >= Date.parse(h.from) && (h.to === null || t < Date.parse(h.to)));
    for (const c of a.calls) {
      if (c.kind === null || c.outcome === 'blocked' || c.outcome === 'no_result' || !c.id || attempted.has(c.id))
        continue;
      const t = c.timestamp ? Date.parse(c.timestamp) : Number.NaN;
      if (!Number.isFinite(t)) continue;
      if (inHeld(t))
        f.add(
          'ran_while_held',
          'error',
          'a tracked call ran while the Latch store had the session latched or paused, and Latch never admitted it',
          c.line,
        );
      else if (Number.isFinite(since) && t >= since)
        f.add(
          'call_not_in_ledger',
          'warning',
          'a tracked call ran after Latch first saw the session but has no attempt in the store (its hook did not run, or failed open)',
          c.line,
        );
    }

    // Brief reads: checked with the brief version the store checked them with; the store's verdict must agree.
    const rec = new Map(s.reads.map((r) => [r.call_id, r]));
    reads.forEach((info, i) => {
      const r = info.call_id ? rec.get(info.call_id) : undefined;
      if (!r) return;
      // No brief was recorded when the guard read it: the store says "not complete" for that reason alone.
      const digest = r.version !== null ? briefDigest(db, sid, r.version) : null;
      if (!digest) {
        reads[i] = { ...info, store_ok: r.ok === 1 };
        return;
      }
      const mine = checkRead(pending[i]!, digest);
      reads[i] = { ...mine, store_ok: r.ok === 1 };
      if ((r.ok === 1) !== mine.ok)
        f.add(
          'brief_read_mismatch',
          'warning',
          `the store recorded a brief page read as ${r.ok === 1 ? 'complete' : 'not complete'}, but the file shows ${mine.ok ? 'a complete' : 'an incomplete'} read`,
          info.line,
        );
    });
    return out;
  } finally {
    db.close();
  }
}
