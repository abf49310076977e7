// A Claude Code `--fork-session` of a compacted session inherits its parent's decision about the
// compaction it copies (src/guard/compaction.ts copyVerdict): the fork's transcript opens with a copy
// of the parent's latest compact_boundary, uuid unchanged (test/fixtures/claude/fork-transcript.jsonl,
// captured from the real 2.1.332). Driven in-process through runHook on transcripts in the real format
// (the captured fixtures, and lines made from their boundary line): a fork of a verified session
// starts mutable; a fork of a held one, of a session compacted again, or of a boundary nobody verified
// starts latched, naming the session that decided; a boundary line that carries a settled uuid anywhere
// else (forged, or a real compaction's), a replaced file, a file a forged hook names, or a number the
// session's own hooks counted first, trips as before; the fork's own compaction still latches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { claude } from '../../src/agents/claude/index.js';
import { scanClaudeTranscript } from '../../src/agents/claude/transcript.js';
import { runHook } from '../../src/hook.js';
import { status } from '../../src/commands/status.js';
import type { Io } from '../../src/kit/io.js';
import { immediate, openStore } from '../../src/store/store.js';
import { getSession, transition, type CompactionRow, type SessionRow } from '../../src/session/records.js';
import { EMPTY_SCAN, type ScanState } from '../../src/session/transcript.js';
import { announce } from '../../src/session/announce.js';
import { sandbox, type Sandbox } from '../helpers/workspace.js';

const FIX = join('test', 'fixtures', 'claude');
const PARENT_FILE = readFileSync(join(FIX, 'compacting-transcript.jsonl'));
const FORK_FILE = readFileSync(join(FIX, 'fork-transcript.jsonl'), 'utf8');
/** The parent fixture's two boundaries (auto, then manual); the fork fixture copies the second. */
const B1 = 'cb77875a-17ce-467b-ba98-85a82308ab0e';
const B2 = '8650f2eb-e18e-4cb6-b1b2-0161f364e6e0';
const P = 'b518aeac-5ba0-4fde-b760-74eb64550278';

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

/** Byte offsets where the lines holding `needle` start. */
function lineStarts(buf: Buffer, needle: string): number[] {
  const out: number[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    end = end < 0 ? buf.length : end + 1;
    if (buf.subarray(start, end).includes(needle)) out.push(start);
    start = end;
  }
  return out;
}

const [BOUNDARY1_AT, BOUNDARY2_AT] = lineStarts(PARENT_FILE, '"subtype":"compact_boundary"') as [number, number];
/** The parent's second boundary line and its summary line (the next one), as Claude Code wrote them. */
const BOUNDARY_LINES = PARENT_FILE.subarray(
  BOUNDARY2_AT,
  PARENT_FILE.indexOf(0x0a, PARENT_FILE.indexOf(0x0a, BOUNDARY2_AT) + 1) + 1,
).toString('utf8');

/** A later compaction's boundary + summary lines, in the real format, with a fresh uuid. */
function boundaryLines(uuid: string, sessionId: string): string {
  return BOUNDARY_LINES.split(B2)
    .join(uuid)
    .split(P)
    .join(sessionId)
    .replace(/"timestamp":"[^"]+"/g, `"timestamp":"${new Date().toISOString()}"`);
}

/** A fork's transcript (the captured one) whose copied boundary is `uuid`. */
function forkFile(uuid: string, sessionId: string): string {
  return FORK_FILE.split(B2).join(uuid).split('3a6c6dfe-ca5e-47d0-b9a8-6e05f180aaba').join(sessionId);
}

interface Env {
  sb: Sandbox;
  env: NodeJS.ProcessEnv;
  dir: string;
  path(id: string): string;
  hook(name: string, id: string, over?: Record<string, unknown>): Promise<{ stdout: string | null }>;
  /** A Bash write through PreToolUse; whether it was denied, and why. */
  write(id: string, over?: Record<string, unknown>): Promise<{ denied: boolean; reason: string }>;
  row(id: string): SessionRow;
  compactions(id: string): CompactionRow[];
  /** `compaction:*` transitions of a session (its trips), with their reasons. */
  trips(id: string): string[];
  /** A human's verify of `id` (the command's own checks are tested in verify-confirm.test.ts). */
  verify(id: string): void;
}

let tools = 0;

function setup(t: { after(fn: () => void): void }): Env {
  const sb = sandbox();
  t.after(sb.cleanup);
  const config = join(sb.base, 'claude-config');
  const dir = join(config, 'projects', '-home-u-proj');
  mkdirSync(dir, { recursive: true });
  const env = { ...sb.env, CLAUDE_CONFIG_DIR: config, LATCH_CONTAIN: 'list', LATCH_WATCH: 'off' };
  const path = (id: string) => join(dir, `${id}.jsonl`);
  const payload = (name: string, id: string, over: Record<string, unknown> = {}): Record<string, unknown> => ({
    ...fixture(name),
    session_id: id,
    cwd: sb.work,
    transcript_path: path(id),
    ...over,
  });
  const withDb = <T>(fn: (db: ReturnType<typeof openStore>) => T): T => {
    const db = openStore(sb.home, { create: false });
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    sb,
    env,
    dir,
    path,
    hook: (name, id, over) => {
      const p = payload(name, id, over);
      return runHook(claude, JSON.stringify(p), String(p.hook_event_name), env);
    },
    async write(id, over = {}) {
      const p = payload('pre-tool-use-bash', id, {
        tool_input: { command: `echo x > out-${++tools}.txt`, description: 'write' },
        tool_use_id: `toolu_fork_${tools}`,
        ...over,
      });
      const r = await runHook(claude, JSON.stringify(p), 'PreToolUse', env);
      const h = (r.stdout ? JSON.parse(r.stdout) : {}).hookSpecificOutput as
        | { permissionDecision?: string; permissionDecisionReason?: string }
        | undefined;
      return { denied: h?.permissionDecision === 'deny', reason: h?.permissionDecisionReason ?? '' };
    },
    row: (id) => withDb((db) => getSession(db, id)!),
    compactions: (id) =>
      withDb(
        (db) => db.prepare('SELECT * FROM compactions WHERE session_id = ? ORDER BY seq').all(id) as CompactionRow[],
      ),
    trips: (id) =>
      withDb((db) =>
        (
          db
            .prepare(
              "SELECT evidence_json FROM transitions WHERE session_id = ? AND event LIKE 'compaction:%' ORDER BY id",
            )
            .all(id) as { evidence_json: string }[]
        ).map((r) => String((JSON.parse(r.evidence_json) as { reason: string }).reason)),
      ),
    verify: (id) =>
      withDb((db) =>
        immediate(db, () => {
          transition(db, getSession(db, id)!, 'verify', {}, 'a human verified (simulated)', new Date().toISOString());
        }),
      ),
  };
}

const COMPACT_AUTO = ['pre-compact-auto', 'session-start-compact', 'post-compact-auto'];
const COMPACT_MANUAL = ['pre-compact-manual', 'session-start-compact', 'post-compact-manual'];

async function compact(e: Env, id: string, hooks = COMPACT_AUTO): Promise<void> {
  for (const h of hooks) await e.hook(h, id);
}

/**
 * The parent, as the fixture's session ran: a write, an auto-compaction (hooks first, the boundary by
 * the turn's end), verified; a manual compaction, verified. Its rows carry both boundary ids.
 */
async function verifiedParent(e: Env): Promise<void> {
  writeFileSync(e.path(P), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', P);
  assert.equal((await e.write(P)).denied, false, 'the parent writes before its compaction');
  await compact(e, P);
  assert.equal(e.row(P).state, 'latched');
  appendFileSync(e.path(P), PARENT_FILE.subarray(BOUNDARY1_AT, BOUNDARY2_AT));
  await e.hook('stop', P);
  e.verify(P);
  await compact(e, P, COMPACT_MANUAL);
  appendFileSync(e.path(P), PARENT_FILE.subarray(BOUNDARY2_AT));
  await e.hook('stop', P);
  assert.equal(e.row(P).state, 'latched');
  e.verify(P);
  assert.equal(e.row(P).state, 'mutable');
  assert.deepEqual(
    e.compactions(P).map((c) => [c.seq, c.boundary_id]),
    [
      [1, B1],
      [2, B2],
    ],
  );
}

/** `claude --resume <parent> --fork-session`: SessionStart(fork) before the file exists, then the file. */
async function fork(e: Env, id: string, content: string): Promise<{ denied: boolean; reason: string }> {
  assert.equal((await e.hook('session-start-fork', id)).stdout, null);
  writeFileSync(e.path(id), content);
  return e.write(id);
}

// ---------------------------------------------------------------------------------------------
// The scan: the copy's identity, and whether it opens the file

test('scan: the fork’s copy opens the file, across incremental reads; nothing else does', () => {
  const sb = sandbox({ git: false, store: false });
  try {
    const path = join(sb.base, 'f.jsonl');
    const buf = Buffer.from(FORK_FILE);
    const at = lineStarts(buf, '"subtype":"compact_boundary"')[0]!;
    // Cut at every line end before the copy and inside it: the head is carried between reads.
    const cuts = [...new Set([...lineStarts(buf.subarray(0, at + 1), ''), at, at + 10])].filter((c) => c > 0);
    writeFileSync(path, '');
    let state: ScanState = EMPTY_SCAN;
    let done = 0;
    const found = [];
    for (const cut of [...cuts.sort((a, b) => a - b), buf.length]) {
      appendFileSync(path, buf.subarray(done, cut));
      done = cut;
      const r = scanClaudeTranscript(path, state);
      found.push(...r.compactions);
      state = r.state;
    }
    assert.deepEqual(
      found.map((c) => [c.index, c.boundaryId, c.atHead]),
      [[1, B2, true]],
    );
    assert.equal(state.group, null, 'past the conversation, nothing is carried');
    // A state from before the field (offset past 0, no group): unknown, so not the head (fail closed).
    writeFileSync(path, buf.subarray(0, at));
    const before = scanClaudeTranscript(path, EMPTY_SCAN);
    assert.deepEqual(before.state.group, { head: true });
    appendFileSync(path, buf.subarray(at));
    assert.equal(scanClaudeTranscript(path, { ...before.state, group: null }).compactions[0]!.atHead, false);
    assert.equal(scanClaudeTranscript(path, before.state).compactions[0]!.atHead, true);
    // A uuid that is not one (too short, other characters) gives no identity.
    for (const bad of ['b1', 'x'.repeat(200), '../../etc/passwd', 'a b c d e f g h']) {
      writeFileSync(path, FORK_FILE.split(B2).join(bad));
      assert.equal(scanClaudeTranscript(path, EMPTY_SCAN).compactions[0]!.boundaryId, null, bad);
    }
    // A boundary after a conversation record is not at the head, even as the file's first boundary.
    writeFileSync(path, PARENT_FILE);
    assert.deepEqual(
      scanClaudeTranscript(path, EMPTY_SCAN).compactions.map((c) => c.atHead),
      [false, false],
    );
  } finally {
    sb.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------
// Forks

test('a fork of a verified session starts mutable; its own compaction still latches it, once', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  const F = '3a6c6dfe-ca5e-47d0-b9a8-6e05f180aaba';
  const r = await fork(e, F, FORK_FILE);
  assert.equal(r.denied, false, `the fork's write runs: ${r.reason}`);
  const row = e.row(F);
  assert.equal(row.state, 'mutable');
  assert.equal(row.parent_session_id, P, 'the one session holding that compaction is the parent');
  assert.deepEqual(e.trips(F), []);
  const [c] = e.compactions(F);
  assert.equal(c!.seq, 1);
  assert.equal(c!.boundary_id, B2);
  assert.deepEqual(JSON.parse(c!.inherited_from!), [P]);
  assert.ok(c!.checkpoint_id, 'checkpointed as usual');
  assert.deepEqual(JSON.parse(c!.observed_via), ['transcript']);
  assert.equal(row.closed_seq, 1, 'its number is closed, as a restore closes it');
  assert.equal(row.restored_at, c!.tripped_at);
  // The fork's own compaction: hooks first (#2, above the inherited one), its boundary by the turn's end.
  await compact(e, F);
  assert.equal(e.row(F).state, 'latched');
  assert.ok((await e.write(F)).denied, 'denied');
  appendFileSync(e.path(F), boundaryLines('0f0e0d0c-1111-4222-8333-444455556666', F));
  await e.hook('stop', F);
  assert.equal(e.trips(F).length, 1, 'one trip: the hooks and the boundary are the same compaction');
  assert.match(e.trips(F)[0]!, /context compaction #2 observed via/);
  assert.deepEqual(
    e.compactions(F).map((k) => [k.seq, k.boundary_id]),
    [
      [1, B2],
      [2, '0f0e0d0c-1111-4222-8333-444455556666'],
    ],
  );
  // The status says why the copy did not latch.
  let out = '';
  const io: Io = {
    out: (x) => void (out += x),
    err: () => {},
    env: e.env,
    cwd: e.sb.work,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
  };
  assert.equal(await status(io, { session: F, json: true }), 0);
  const s = (
    JSON.parse(out) as { sessions: { checkpoints: { compaction_seq: number; inherited_from?: string[] }[] }[] }
  ).sessions[0]!;
  assert.deepEqual(
    s.checkpoints.map((k) => [k.compaction_seq, k.inherited_from ?? null]),
    [
      [1, [P]],
      [2, null],
    ],
  );
});

test('a fork of a latched session starts latched, naming it; after a verify, the next fork inherits', async (t) => {
  const e = setup(t);
  // The parent as the e2e runs it: compacted (hooks), boundary written by the turn's end, not verified.
  writeFileSync(e.path(P), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', P);
  await compact(e, P);
  appendFileSync(e.path(P), PARENT_FILE.subarray(BOUNDARY1_AT, BOUNDARY2_AT));
  await e.hook('stop', P);
  const r = await fork(e, 'F1', forkFile(B1, 'F1'));
  assert.ok(r.denied, 'the fork of a latched session is denied');
  assert.equal(e.row('F1').state, 'latched');
  assert.equal(e.row('F1').parent_session_id, P);
  assert.match(e.trips('F1')[0]!, new RegExp(`forked from session ${P}, which is latched`));
  assert.match(r.reason, /latched/);
  // The human verifies the workspace (both), then forks again: two sessions hold it, both settled.
  e.verify(P);
  e.verify('F1');
  const again = await fork(e, 'F2', forkFile(B1, 'F2'));
  assert.equal(again.denied, false, again.reason);
  assert.equal(e.row('F2').state, 'mutable');
  assert.deepEqual(JSON.parse(e.compactions('F2')[0]!.inherited_from!), [P, 'F1']);
  assert.equal(e.row('F2').parent_session_id, null, 'two sessions hold it: which one was forked is not known');
  // A paused holder holds too.
  const db = openStore(e.sb.home, { create: false });
  try {
    db.prepare("UPDATE sessions SET state = 'paused' WHERE session_id = 'F1'").run();
  } finally {
    db.close();
  }
  const paused = await fork(e, 'F3', forkFile(B1, 'F3'));
  assert.ok(paused.denied, 'denied');
  assert.match(e.trips('F3')[0]!, /session F1 holds it too, which is paused/);
});

test('a parent compacted again after its verify: a fork copies the new boundary and starts latched', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  const V = 'c3c3c3c3-aaaa-4bbb-8ccc-dddddddddddd';
  await compact(e, P);
  appendFileSync(e.path(P), boundaryLines(V, P));
  await e.hook('stop', P);
  assert.equal(e.row(P).state, 'latched');
  assert.equal(e.compactions(P)[2]!.boundary_id, V);
  const r = await fork(e, 'F1', forkFile(V, 'F1'));
  assert.ok(r.denied, 'denied');
  assert.match(
    e.trips('F1')[0]!,
    new RegExp(`compaction #1 observed via transcript .*forked from session ${P}, which is latched`),
  );
  // An older copy of the same parent (its earlier, verified boundary) while it is latched: latched too.
  const old = await fork(e, 'F2', forkFile(B2, 'F2'));
  assert.ok(old.denied, 'denied');
  // Verified again: the next fork of the new boundary inherits.
  e.verify(P);
  e.verify('F1');
  e.verify('F2');
  assert.equal((await fork(e, 'F3', forkFile(V, 'F3'))).denied, false);
  assert.equal(e.row('F3').state, 'mutable');
});

test('a copy of a boundary no session holds, or one held in another workspace, starts latched', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  const r = await fork(e, 'F1', forkFile('99999999-0000-4000-8000-000000000000', 'F1'));
  assert.ok(r.denied, 'denied');
  assert.match(e.trips('F1')[0]!, /no session Latch knows holds that compaction/);
  assert.equal(e.row('F1').parent_session_id, null);
  const other = join(e.sb.base, 'other');
  mkdirSync(other);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: other });
  assert.equal((await e.hook('session-start-fork', 'F2', { cwd: other })).stdout, null);
  writeFileSync(e.path('F2'), forkFile(B2, 'F2'));
  const w = await e.write('F2', { cwd: other });
  assert.ok(w.denied, 'denied');
  assert.match(e.trips('F2')[0]!, new RegExp(`forked from session ${P}, of another workspace`));
});

test('a copy of a compaction no one verified (its session runs under policy continue) trips', async (t) => {
  const e = setup(t);
  // The parent runs under `continue` (fixed at first sight): its compaction trips without latching.
  writeFileSync(join(e.sb.home, 'config.toml'), 'policy = "continue"\n');
  writeFileSync(e.path(P), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', P);
  await compact(e, P);
  appendFileSync(e.path(P), PARENT_FILE.subarray(BOUNDARY1_AT, BOUNDARY2_AT));
  await e.hook('stop', P);
  assert.equal(e.row(P).state, 'mutable');
  assert.equal(e.compactions(P)[0]!.boundary_id, B1);
  rmSync(join(e.sb.home, 'config.toml'));
  const r = await fork(e, 'F1', forkFile(B1, 'F1'));
  assert.ok(r.denied, 'denied');
  assert.match(e.trips('F1')[0]!, new RegExp(`forked from session ${P}, where no one has verified compaction #1`));
});

test('a fork held when its copy is read (latched otherwise) does not settle the copy: it trips', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  assert.equal((await e.hook('session-start-fork', 'F1')).stdout, null);
  const db = openStore(e.sb.home, { create: false });
  try {
    immediate(db, () =>
      transition(db, getSession(db, 'F1')!, 'inherit:latched', {}, 'latched otherwise', new Date().toISOString()),
    );
  } finally {
    db.close();
  }
  writeFileSync(e.path('F1'), forkFile(B2, 'F1'));
  assert.ok((await e.write('F1')).denied, 'denied');
  assert.equal(e.compactions('F1')[0]!.inherited_from, null);
  assert.equal(e.row('F1').restored_at, null, 'no restore recorded while held');
  assert.equal(e.trips('F1').length, 1);
});

test('a fork of a fork inherits; a fork of a fork that compacted names that fork', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  assert.equal((await fork(e, 'F1', forkFile(B2, 'F1'))).denied, false);
  assert.equal((await fork(e, 'F2', forkFile(B2, 'F2'))).denied, false, 'F1 has not compacted: its latest is the copy');
  assert.deepEqual(JSON.parse(e.compactions('F2')[0]!.inherited_from!), [P, 'F1']);
  // F1 compacts on its own: latched, its boundary (a new uuid) after its conversation.
  const W = '77777777-8888-4999-aaaa-bbbbbbbbbbbb';
  await compact(e, 'F1');
  appendFileSync(e.path('F1'), boundaryLines(W, 'F1'));
  await e.hook('stop', 'F1');
  assert.equal(e.row('F1').state, 'latched');
  const r = await fork(e, 'F3', forkFile(W, 'F3'));
  assert.ok(r.denied, 'denied');
  assert.equal(e.row('F3').parent_session_id, 'F1');
  assert.match(e.trips('F3')[0]!, /forked from session F1, which is latched/);
});

// ---------------------------------------------------------------------------------------------
// An agent with a settled uuid in hand (every transcript of the user is readable to it)

test('a settled uuid on a boundary line the session wrote itself (forged, or its real compaction’s) trips', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  // A session with its own conversation; the agent appends a copy of the parent's settled boundary.
  const S = 'S1';
  writeFileSync(e.path(S), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', S);
  assert.equal((await e.write(S)).denied, false);
  appendFileSync(e.path(S), BOUNDARY_LINES);
  const r = await e.write(S);
  assert.ok(r.denied, 'the forged copy latches the forger, as any boundary does');
  assert.match(
    e.trips(S)[0]!,
    new RegExp(`carries the id of a compaction of session ${P}, but not where a fork's copy sits`),
  );
  assert.equal(e.compactions(S)[0]!.inherited_from, null);
  // A real compaction whose boundary line carries a settled uuid: the hooks latch it all the same.
  const S2 = 'S2';
  writeFileSync(e.path(S2), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', S2);
  await compact(e, S2);
  assert.equal(e.row(S2).state, 'latched');
  appendFileSync(e.path(S2), BOUNDARY_LINES);
  await e.hook('stop', S2);
  assert.equal(e.row(S2).state, 'latched');
  assert.equal(e.compactions(S2).length, 1, 'the boundary is that compaction’s late line');
  assert.equal(e.compactions(S2)[0]!.inherited_from, null);
});

test('a settled copy at the head of a file the session did not write as its own (replaced, or named by a forged hook) trips', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  // Replaced: the session's transcript becomes a file that opens with the settled copy.
  const S = 'S1';
  writeFileSync(e.path(S), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', S);
  assert.equal((await e.write(S)).denied, false);
  const next = join(e.dir, 'next.jsonl');
  writeFileSync(next, forkFile(B2, S));
  renameSync(next, e.path(S));
  const r = await e.write(S);
  assert.ok(r.denied, 'a replaced transcript is not a fork');
  assert.equal(e.compactions(S)[0]!.inherited_from, null);
  // A hook run by hand for the session, naming another file that opens with the settled copy.
  const S2 = 'S2';
  writeFileSync(e.path(S2), PARENT_FILE.subarray(0, BOUNDARY1_AT));
  await e.hook('session-start-startup', S2);
  const crafted = join(e.sb.base, 'crafted.jsonl');
  // (Longer than what the session's own scan consumed: a shorter file is taken for a stale read.)
  writeFileSync(crafted, forkFile(B2, S2) + PARENT_FILE.subarray(0, BOUNDARY1_AT).toString('utf8'));
  const forged = await e.write(S2, { transcript_path: crafted });
  assert.ok(forged.denied, 'the forged hook latches the forger');
  assert.equal(e.row(S2).state, 'latched');
  assert.match(e.trips(S2)[0]!, /not where a fork's copy sits/);
});

test('a fork whose own compaction hooks counted #1 before its copy was read does not inherit it', async (t) => {
  const e = setup(t);
  await verifiedParent(e);
  const F = 'F1';
  const file = forkFile(B2, F);
  const copyAt = file.indexOf('{"parentUuid":null');
  assert.equal((await e.hook('session-start-fork', F)).stdout, null);
  // The fork compacts while its file holds only the metadata records before the copy: the hooks count #1.
  writeFileSync(e.path(F), file.slice(0, copyAt));
  await compact(e, F);
  assert.equal(e.row(F).state, 'latched');
  appendFileSync(e.path(F), file.slice(copyAt));
  assert.ok((await e.write(F)).denied, 'denied');
  assert.equal(e.compactions(F).length, 1);
  assert.equal(e.compactions(F)[0]!.inherited_from, null, 'the copy landed on a number the hooks had counted');
  assert.equal(e.compactions(F)[0]!.boundary_id, B2);
  // Another fork, whose first turn compacts with the copy in its file (its PreCompact reads it):
  // #1 is inherited, the fork's own compaction is #2 and latches.
  e.verify(F);
  const G = 'F2';
  assert.equal((await e.hook('session-start-fork', G)).stdout, null);
  writeFileSync(e.path(G), forkFile(B2, G));
  await compact(e, G);
  assert.equal(e.row(G).state, 'latched');
  assert.deepEqual(
    e.compactions(G).map((k) => [k.seq, k.inherited_from === null ? null : JSON.parse(k.inherited_from)]),
    [
      [1, [P, F]],
      [2, null],
    ],
  );
  assert.equal(e.trips(G).length, 1);
  assert.match(e.trips(G)[0]!, /context compaction #2 observed via session_start/);
  e.verify(G);
  // A fork whose compaction hooks announced and could not record (the store locked, the hook killed):
  // the hook that reads the copy counts them after it, above the inherited number.
  const H = 'F3';
  assert.equal((await e.hook('session-start-fork', H)).stdout, null);
  writeFileSync(e.path(H), forkFile(B2, H));
  for (const source of ['pre_compact', 'session_start', 'post_compact'] as const)
    assert.ok('id' in announce(e.sb.home, H, source, { trigger: 'auto', turnId: null }, Date.now() - 1000));
  assert.ok((await e.write(H)).denied, 'the announced compaction latches');
  assert.deepEqual(
    e.compactions(H).map((k) => [k.seq, k.inherited_from === null ? null : JSON.parse(k.inherited_from)]),
    [
      [1, [P, F, G]],
      [2, null],
    ],
  );
  assert.equal(e.trips(H).length, 1);
  assert.match(e.trips(H)[0]!, /context compaction #2 observed via (session_start|post_compact)/);
  // A PreCompact alone (Claude Code may give up after it) counted #1 before the copy was read: the
  // copy lands on a number the session's own hook counted, so it is not inherited (fail closed).
  e.verify(H);
  const J = 'F4';
  const jFile = forkFile(B2, J);
  assert.equal((await e.hook('session-start-fork', J)).stdout, null);
  writeFileSync(e.path(J), jFile.slice(0, copyAt));
  await e.hook('pre-compact-auto', J);
  assert.equal(e.row(J).state, 'mutable', 'PreCompact never trips');
  appendFileSync(e.path(J), jFile.slice(copyAt));
  assert.ok((await e.write(J)).denied, 'denied');
  assert.match(e.trips(J)[0]!, /this session's own compaction hooks had counted #1 before the copy/);
});
