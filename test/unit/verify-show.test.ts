// What `latch verify` shows a human before they decide (issue 23, item 8): per held session, the task
// brief's gist (what the agent was doing, its next step), the workspace's changes since the baseline in
// `git diff --stat`'s form, and the processes from its calls still running; and that differences a
// human accepted (`--accept-changes`) become the baseline later verifies of the session compare with.
// Real temp git repositories, real hooks (runCodexHook) and the real store.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { verify, type Confirmer } from '../../src/commands/verify.js';
import { lineDelta, splitLines } from '../../src/checkpoint/diffstat.js';
import { procSupported, sameProcess } from '../../src/contain/index.js';
import { procStat } from '../../src/base/proc.js';
import { openStore } from '../../src/store/store.js';
import { runCodexHook } from '../../src/hook.js';
import {
  appendCompaction,
  appendModelTurn,
  bash,
  payload,
  rolloutLine,
  captureIo,
  sandbox,
  type Sandbox,
} from '../helpers/workspace.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

function fresh(t: { after(fn: () => void): void }): Sandbox {
  const sb = sandbox();
  t.after(sb.cleanup);
  return sb;
}

async function hook(sb: Sandbox, p: Record<string, unknown>) {
  const r = await runCodexHook(JSON.stringify(p), null, sb.env);
  const parsed = r.stdout ? JSON.parse(r.stdout) : null;
  return { ...r, denied: parsed?.hookSpecificOutput?.permissionDecision === 'deny' };
}

const capture = (sb: Sandbox) => captureIo(sb);

async function verifyJson(sb: Sandbox, opts: Parameters<typeof verify>[1]): Promise<{ code: number; report: Json }> {
  const c = capture(sb);
  const code = await verify(c.io, { ...opts, json: true });
  return { code, report: JSON.parse(c.out()) };
}

function commit(sb: Sandbox, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) writeFileSync(join(sb.work, p), text);
  execFileSync('git', ['add', '.'], { cwd: sb.work });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'files'], {
    cwd: sb.work,
  });
}

/** The user's request and a plan, as Codex writes them to the rollout: what the brief captures. */
function converse(sb: Sandbox): void {
  appendFileSync(
    sb.transcript,
    rolloutLine('response_item', {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Refactor the lexer into two passes' }],
    }) +
      rolloutLine('response_item', {
        type: 'function_call',
        name: 'update_plan',
        call_id: 'plan-1',
        arguments: JSON.stringify({
          plan: [
            { step: 'split the tokenizer', status: 'completed' },
            { step: 'add tests for the second pass', status: 'in_progress' },
          ],
        }),
      }),
  );
}

/** One compaction seen by every source (its PreCompact takes the checkpoint and captures the brief). */
async function compaction(sb: Sandbox): Promise<void> {
  await hook(sb, payload('pre-compact-auto', sb));
  appendCompaction(sb.transcript);
  await hook(sb, payload('post-compact-auto', sb));
  await hook(sb, payload('session-start-compact', sb));
  appendModelTurn(sb.transcript);
}

function stateOf(sb: Sandbox): string {
  const db = openStore(sb.home, { create: false });
  try {
    return (db.prepare("SELECT state FROM sessions WHERE session_id = 'S'").get() as { state: string }).state;
  } finally {
    db.close();
  }
}

describe('latch verify shows what a human needs to decide', () => {
  test('the brief (doing, next), a diff stat since the checkpoint, the processes still running: on the terminal, with --yes, before the prompt and in --json', {
    skip: !procSupported() && 'Linux /proc only',
  }, async (t) => {
    const sb = fresh(t);
    commit(sb, { 'lib.txt': 'a\nb\nc\n', 'old.txt': 'x\ny\n' });
    converse(sb);
    await hook(sb, payload('session-start-startup', sb));
    assert.equal((await hook(sb, bash(sb, 'make & disown'))).denied, false);
    // While that call runs, a job starts that outlives it (setsid: its parent is gone at once). It
    // does not carry the session's mark: containment lists it at the trip and never signals it.
    const pidFile = join(sb.base, 'job.pid');
    const env = { ...process.env };
    delete env.CODEX_THREAD_ID;
    assert.equal(
      spawnSync('setsid', ['-f', 'sh', '-c', 'echo $$ > "$0"; exec sleep 120', pidFile], { env, stdio: 'ignore' })
        .status,
      0,
    );
    for (let i = 0; i < 200 && !(existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim()); i++)
      await new Promise((r) => setTimeout(r, 10));
    const job = Number(readFileSync(pidFile, 'utf8').trim());
    const jobStart = procStat(job)!.start;
    t.after(() => {
      if (sameProcess(job, jobStart)) process.kill(job, 'SIGKILL');
    });
    await compaction(sb);
    assert.ok((await hook(sb, bash(sb, 'echo two > two.txt'))).denied, 'latched');
    await hook(sb, payload('stop', sb));
    // After the checkpoint: one line changed and one added in a committed file, a file removed, one added.
    writeFileSync(join(sb.work, 'lib.txt'), 'a\nB\nc\nd\n');
    unlinkSync(join(sb.work, 'old.txt'));
    writeFileSync(join(sb.work, 'new.txt'), 'one\ntwo\n');

    const c = capture(sb);
    assert.equal(await verify(c.io, { yes: true }), 65, c.out() + c.err());
    const out = c.out();
    assert.match(out, /\n {2}doing: Refactor the lexer into two passes\n/);
    assert.match(out, /\n {2}done: 1 step\(s\), the last: split the tokenizer\n/);
    assert.match(out, /\n {2}next: add tests for the second pass\n/);
    assert.match(out, /changes since the checkpoint \(3 path\(s\)\):\n/);
    assert.match(out, /\n {4}lib\.txt \| 3 \+\+- +modified; outside\n/);
    assert.match(out, /\n {4}new\.txt \| 2 \+\+ +added; outside\n/);
    assert.match(out, /\n {4}old\.txt \| 2 -- +removed; outside\n/);
    assert.match(out, /\n {4}3 files changed, 4 insertions\(\+\), 3 deletions\(-\)\n/);
    assert.match(
      out,
      new RegExp(
        `still running from the agent's calls \\(\\d+\\); a listed one may be yours[^\\n]*\\n(?: {4}[^\\n]*\\n)*? {4}pid ${job}: listed, not signalled \\(orphan_unmarked\\): sleep 120\\n`,
      ),
    );
    assert.equal(stateOf(sb), 'latched');

    // Interactively the same summary is on the terminal before the code is asked for; under --json it
    // is in the prompt itself (stdout is the program's), and the JSON carries it structured.
    const tty = capture(sb);
    let shownFirst = '';
    const no: Confirmer = {
      kind: 'test-tty',
      ask: () => {
        shownFirst = tty.out();
        return 'no';
      },
    };
    assert.equal(await verify(tty.io, { acceptChanges: true, confirmer: no }), 2);
    assert.match(shownFirst, /doing: Refactor the lexer[\s\S]*lib\.txt \| 3 \+\+-[\s\S]*pid \d+: listed/);
    let prompt = '';
    const j = capture(sb);
    const asked: Confirmer = { kind: 'test-tty', ask: (p) => ((prompt = p), 'no') };
    assert.equal(await verify(j.io, { acceptChanges: true, confirmer: asked, json: true }), 2);
    assert.match(prompt, /next: add tests for the second pass[\s\S]*new\.txt \| 2 \+\+[\s\S]*Type the code/);
    const report = JSON.parse(j.out());
    assert.equal(report.restored, false);
    const s = report.sessions[0];
    assert.equal(s.note, 'not confirmed');
    assert.equal(s.brief.objective, 'Refactor the lexer into two passes');
    assert.equal(s.brief.next_action, 'add tests for the second pass');
    assert.deepEqual(s.brief.done_steps, ['split the tokenizer']);
    assert.equal(s.diffstat.total, 3);
    assert.deepEqual(
      s.diffstat.files.map((f: Json) => [f.path, f.change, f.added, f.removed, f.uncounted]),
      [
        ['lib.txt', 'modified', 2, 1, null],
        ['new.txt', 'added', 2, 0, null],
        ['old.txt', 'removed', 0, 2, null],
      ],
    );
    const p = s.processes.find((x: Json) => x.pid === job);
    assert.ok(p, JSON.stringify(s.processes));
    assert.equal(p.action, 'listed');
    assert.equal(p.signalled, false);
    assert.equal(p.why, 'orphan_unmarked');
    assert.equal(stateOf(sb), 'latched');
  });

  test('a changed file whose content at the checkpoint git does not hold: shown with its sizes, lines not counted', async (t) => {
    const sb = fresh(t);
    commit(sb, { 'lib.txt': 'committed\n' });
    await hook(sb, payload('session-start-startup', sb));
    writeFileSync(join(sb.work, 'lib.txt'), 'edited before the checkpoint\n'); // not committed
    assert.equal((await hook(sb, bash(sb, 'true'))).denied, false);
    await compaction(sb);
    await hook(sb, payload('stop', sb));
    writeFileSync(join(sb.work, 'lib.txt'), 'edited again\n');
    writeFileSync(join(sb.work, 'blob.bin'), Buffer.from([1, 0, 2]));
    const c = capture(sb);
    assert.equal(await verify(c.io, { yes: true }), 65);
    assert.match(c.out(), /\n {4}blob\.bin \| Bin 0 -> 3 bytes +added; outside\n/);
    assert.match(
      c.out(),
      /\n {4}lib\.txt {2}\| \? 29 -> 13 bytes +modified; outside; lines not counted: its content at the baseline is not in git\n/,
    );
    assert.match(c.out(), /2 files changed, 0 insertions\(\+\), 0 deletions\(-\) \(lines counted in 0 of them\)/);
    // A session whose brief holds nothing of the task says so.
    assert.match(c.out(), /\n {2}brief: no task or next step in it \(brief version 1, auto, /);
  });
});

describe('latch verify --accept-changes: the accepted tree becomes the baseline', () => {
  test('a compaction begun while latched (PreCompact, its checkpoint) and ended after the verify: the next verify lists only what changed after the acceptance', async (t) => {
    const sb = fresh(t);
    await hook(sb, payload('session-start-startup', sb));
    assert.equal((await hook(sb, bash(sb, 'true'))).denied, false);
    await compaction(sb);
    await hook(sb, payload('stop', sb));
    assert.equal(stateOf(sb), 'latched');
    // The agent, latched, goes on reading until its context compacts again: PreCompact takes
    // checkpoint #2 while the session is still latched.
    await hook(sb, payload('pre-compact-auto', sb));
    // The human adds a file, commits it (HEAD moves), and accepts both.
    commit(sb, { 'accepted.txt': 'mine\n' });
    const first = capture(sb);
    assert.equal(await verify(first.io, { yes: true, acceptChanges: true }), 0, first.out() + first.err());
    assert.match(first.out(), /accepted\.txt \| 1 \+/);
    assert.equal(stateOf(sb), 'mutable');
    // The compaction ends: it latches again (its checkpoint was taken before the acceptance).
    appendCompaction(sb.transcript);
    await hook(sb, payload('post-compact-auto', sb));
    await hook(sb, payload('session-start-compact', sb));
    assert.equal(stateOf(sb), 'latched');
    writeFileSync(join(sb.work, 'later.txt'), 'after\n');

    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    const s = report.sessions[0];
    assert.deepEqual(
      s.evidence.changes.map((x: Json) => [x.change, x.path]),
      [['added', 'later.txt']],
      'the accepted file is not listed again',
    );
    assert.equal(s.evidence.baseline.kind, 'accepted');
    const git = s.evidence.checks.find((x: Json) => x.name === 'git');
    assert.equal(git.ok, true, git.detail);
    assert.match(git.detail, /as at the acceptance/);
    assert.deepEqual(
      s.diffstat.files.map((f: Json) => f.path),
      ['later.txt'],
    );
    const c = capture(sb);
    assert.equal(await verify(c.io, { yes: true }), 65);
    assert.match(c.out(), /baseline: the tree accepted at an earlier `latch verify --accept-changes`/);
    assert.match(c.out(), /\n {4}later\.txt \| 1 \+ +added; outside\n/);
    assert.doesNotMatch(c.out(), /accepted\.txt/);

    // Accepting again moves the baseline on; the acceptance is recorded with its transition.
    assert.equal(await verify(capture(sb).io, { yes: true, acceptChanges: true }), 0);
    const db = openStore(sb.home, { create: false });
    try {
      const row = db.prepare("SELECT transition_id, changes FROM accepted_baselines WHERE session_id = 'S'").get() as {
        transition_id: number;
        changes: number;
      };
      const last = db
        .prepare("SELECT id, event FROM transitions WHERE session_id = 'S' ORDER BY id DESC LIMIT 1")
        .get() as { id: number; event: string };
      assert.deepEqual(row, { transition_id: last.id, changes: 1 });
      assert.equal(last.event, 'verify');
    } finally {
      db.close();
    }
  });

  test('a verify in the middle of a compaction latches once more when its boundary arrives: the accepted change is not listed again', async (t) => {
    const sb = fresh(t);
    await hook(sb, payload('session-start-startup', sb));
    assert.equal((await hook(sb, bash(sb, 'true'))).denied, false);
    await hook(sb, payload('stop', sb));
    // PreCompact (checkpoint) and PostCompact (the trip); the transcript's boundary comes later.
    await hook(sb, payload('pre-compact-auto', sb));
    await hook(sb, payload('post-compact-auto', sb));
    assert.equal(stateOf(sb), 'latched');
    writeFileSync(join(sb.work, 'accepted.txt'), 'mine\n');
    assert.equal(await verify(capture(sb).io, { yes: true, acceptChanges: true }), 0);
    // The boundary, written after the restore, latches the same compaction again (its checkpoint is
    // from before the acceptance).
    appendCompaction(sb.transcript);
    await hook(sb, payload('session-start-compact', sb));
    assert.equal(stateOf(sb), 'latched');
    writeFileSync(join(sb.work, 'later.txt'), 'after\n');
    const { code, report } = await verifyJson(sb, { yes: true });
    assert.equal(code, 65);
    assert.deepEqual(
      report.sessions[0].evidence.changes.map((x: Json) => x.path),
      ['later.txt'],
    );
  });
});

describe('lineDelta: the counts of a shortest line edit script', () => {
  /** The longest common subsequence by dynamic programming: the oracle. */
  function lcs(a: readonly string[], b: readonly string[]): number {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let i = 1; i <= a.length; i++) {
      let diag = 0;
      for (let j = 1; j <= b.length; j++) {
        const up = row[j]!;
        row[j] = a[i - 1] === b[j - 1] ? diag + 1 : Math.max(row[j]!, row[j - 1]!);
        diag = up;
      }
    }
    return row[b.length]!;
  }

  test('equals n - LCS removed and m - LCS added, on random line lists', () => {
    const lines = fc.array(fc.constantFrom('a\n', 'b\n', 'c\n', 'd\n', '\n', 'a'), { maxLength: 40 });
    fc.assert(
      fc.property(lines, lines, (a, b) => {
        const common = lcs(a, b);
        assert.deepEqual(lineDelta(a, b), { removed: a.length - common, added: b.length - common });
      }),
      { numRuns: 500 },
    );
  });

  test('lines keep their terminators (a last line without one differs), and a spent budget gives null', () => {
    assert.deepEqual(splitLines('a\nb'), ['a\n', 'b']);
    assert.deepEqual(splitLines(''), []);
    assert.deepEqual(lineDelta(splitLines('a\nb'), splitLines('a\nb\n')), { added: 1, removed: 1 });
    const a = Array.from({ length: 200 }, (_, i) => `${i}\n`);
    const b = Array.from({ length: 200 }, (_, i) => `${i}x\n`);
    assert.equal(lineDelta(a, b, 1000), null);
    assert.deepEqual(lineDelta(a, b), { added: 200, removed: 200 });
  });
});
