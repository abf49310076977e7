// Helpers for the ledger tests: hook calls (in-process and as real processes, killable), reads of
// the attempts/changes tables, and the per-row consistency rules of the attempt state machine.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runCodexHook } from '../../src/hook.js';
import { ATTEMPT_TABLE, CLOSE_REASON, isAlive, type AttemptRow, type AttemptState } from '../../src/ledger/ledger.js';
import { openStore } from '../../src/store/store.js';

export const LATCH_BIN = resolve('dist/latch.cjs');

function newestMtime(dir: string): number {
  let max = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    max = Math.max(max, st.isDirectory() ? newestMtime(p) : st.mtimeMs);
  }
  return max;
}

let checked = false;

/**
 * The process tests run dist/latch.cjs (`npm test` builds it first): it must exist. A dist older than
 * the hook path's sources is reported (once per test process), not failed: sources edited after the
 * build would otherwise fail a run that tests the build it has.
 */
export function assertFreshBuild(): void {
  const main = resolve('dist/main.cjs');
  const slow = resolve('dist/slow.cjs');
  if (!existsSync(LATCH_BIN) || !existsSync(main) || !existsSync(slow))
    throw new Error('dist/latch.cjs is missing: run `npm run build` first');
  if (checked) return;
  checked = true;
  const src = newestMtime(resolve('src'));
  if (Math.min(statSync(main).mtimeMs, statSync(slow).mtimeMs) < src)
    console.log('# warning: dist/ is older than src/ (run `npm run build`): testing the older build');
}

export interface Reply {
  stdout: string | null;
  exitCode: number;
  denied: boolean;
  reason: string;
}

function readReply(stdout: string | null): { denied: boolean; reason: string } {
  if (!stdout) return { denied: false, reason: '' };
  const o = JSON.parse(stdout) as {
    hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string };
  };
  return {
    denied: o.hookSpecificOutput?.permissionDecision === 'deny',
    reason: o.hookSpecificOutput?.permissionDecisionReason ?? '',
  };
}

/** One hook call through the real entry point, in this process. */
export async function hookInProcess(env: NodeJS.ProcessEnv, p: Record<string, unknown>): Promise<Reply> {
  const r = await runCodexHook(JSON.stringify(p), null, env);
  return { stdout: r.stdout, exitCode: r.exitCode, ...readReply(r.stdout) };
}

export interface ProcRun extends Reply {
  pid: number;
  /** Killed by our SIGKILL before it exited on its own. */
  killed: boolean;
  signal: NodeJS.Signals | null;
  stderr: string;
  ms: number;
}

/** `node dist/latch.cjs hook codex --event E` with the payload on stdin; optionally SIGKILLed after killAfterMs. */
export function hookProcess(
  env: NodeJS.ProcessEnv,
  p: Record<string, unknown>,
  opts: { killAfterMs?: number; onSpawn?: (pid: number) => void } = {},
): Promise<ProcRun> {
  const t0 = performance.now();
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [LATCH_BIN, 'hook', 'codex', '--event', String(p.hook_event_name)], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let exited = false;
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
    child.stdin.on('error', () => {}); // EPIPE when killed before reading stdin
    child.on('error', fail);
    let timer: NodeJS.Timeout | undefined;
    if (opts.killAfterMs !== undefined) {
      timer = setTimeout(() => {
        if (!exited) child.kill('SIGKILL');
      }, opts.killAfterMs);
    }
    child.on('exit', () => (exited = true));
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const stdout = out.trim() === '' ? null : out.trim();
      let rep = { denied: false, reason: '' };
      try {
        rep = readReply(stdout);
      } catch {
        rep = { denied: false, reason: `unparsable reply ${stdout}` };
      }
      done({
        pid: child.pid!,
        killed: signal === 'SIGKILL',
        signal,
        exitCode: code ?? -1,
        stdout,
        stderr: err,
        ms: performance.now() - t0,
        ...rep,
      });
    });
    opts.onSpawn?.(child.pid!);
    child.stdin.end(JSON.stringify(p));
  });
}

/** The pid of a process that has exited (its closer identity can never be alive again). */
export function deadPid(): Promise<number> {
  return new Promise((done, fail) => {
    const c = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    c.on('error', fail);
    c.on('close', () => done(c.pid!));
  });
}

export interface ChangeRow {
  id: number;
  path: string;
  change: string;
  observed_by: string;
  attribution: string;
  attempt_id: string | null;
}

export interface Ledger {
  attempts: AttemptRow[];
  changes: ChangeRow[];
  recorded(path: string): number;
  attempt(id: string): AttemptRow | undefined;
}

export function readLedger(home: string): Ledger {
  const db = openStore(home, { create: false, busyTimeoutMs: 30_000 });
  try {
    const attempts = db.prepare('SELECT * FROM attempts ORDER BY id').all() as AttemptRow[];
    const changes = db
      .prepare('SELECT id, path, change, observed_by, attribution, attempt_id FROM changes ORDER BY id')
      .all() as ChangeRow[];
    return {
      attempts,
      changes,
      recorded: (path) => changes.filter((c) => c.path === path).length,
      attempt: (id) => attempts.find((a) => a.id === id),
    };
  } finally {
    db.close();
  }
}

/** Simulates a PostToolUse that wrote `closing` and died: the attempt is closing, owned by a dead process. */
export function crashClose(home: string, id: string, pid: number): void {
  const db = openStore(home, { create: false, busyTimeoutMs: 30_000 });
  try {
    const r = db
      .prepare(
        "UPDATE attempts SET state = 'closing', closing_ns = ?, closer_pid = ?, closer_start = 'gone' WHERE id = ? AND state = 'started'",
      )
      .run((BigInt(Date.now()) * 1_000_000n).toString(), pid, id);
    if (r.changes !== 1) throw new Error(`crashClose: ${id} is not started`);
  } finally {
    db.close();
  }
}

export const CLOSE_REASONS: string[] = Object.values(CLOSE_REASON);
export const ABANDON_REASON = /before PostToolUse|without PostToolUse|later turn/;

/** States reachable from `from` along ATTEMPT_TABLE (including itself). */
export function reachable(from: AttemptState): Set<AttemptState> {
  const seen = new Set<AttemptState>([from]);
  const todo = [from];
  while (todo.length > 0) {
    const s = todo.pop()!;
    for (const next of Object.values(ATTEMPT_TABLE[s])) {
      if (next && !seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return seen;
}

/** The consistency rules of one attempt row; returns the violations (empty when consistent). */
export function rowProblems(a: AttemptRow): string[] {
  const p: string[] = [];
  const terminal = a.state === 'closed' || a.state === 'abandoned';
  if (!(a.state in ATTEMPT_TABLE)) p.push(`unknown state ${a.state}`);
  if (terminal !== (a.ended_at !== null)) p.push(`${a.state} with ended_at ${a.ended_at}`);
  if (terminal && a.ended_ns === null) p.push(`${a.state} without ended_ns`);
  if (a.state === 'closed' && !CLOSE_REASONS.includes(a.end_reason ?? ''))
    p.push(`closed with end_reason ${a.end_reason}`);
  if (a.state === 'abandoned' && !ABANDON_REASON.test(a.end_reason ?? ''))
    p.push(`abandoned with end_reason ${a.end_reason}`);
  if (a.state === 'closed' && a.closing_ns === null) p.push('closed without ever closing');
  if (a.state === 'abandoned' && a.closing_ns !== null) p.push('abandoned after closing began (closed AND abandoned)');
  if (a.state === 'started' && (a.closer_pid !== null || a.end_reason !== null)) p.push('started with a closer or end');
  if (a.state === 'closing' && a.closer_pid === null) p.push('closing without a closer');
  if (a.end_reason === CLOSE_REASON.recovered && a.recovery_gen < 1) p.push('recovered without a claim');
  return p.map((x) => `${a.id}: ${x}`);
}

export function ledgerProblems(l: Ledger): string[] {
  const p = l.attempts.flatMap(rowProblems);
  const byCall = new Map<string, number>();
  for (const a of l.attempts)
    byCall.set(`${a.session_id}/${a.tool_use_id}`, (byCall.get(`${a.session_id}/${a.tool_use_id}`) ?? 0) + 1);
  for (const [k, n] of byCall) if (n !== 1) p.push(`${n} attempts for call ${k}`);
  for (const a of l.attempts)
    if (a.id !== `${a.session_id}/${a.tool_use_id}`) p.push(`attempt id ${a.id} is not deterministic`);
  return p;
}

/** Closing attempts whose closer is dead: what the recovery barrier must finish. */
export function orphans(l: Ledger): AttemptRow[] {
  return l.attempts.filter((a) => a.state === 'closing' && !isAlive({ pid: a.closer_pid, start: a.closer_start }));
}

/** A small seeded PRNG (mulberry32), so a failing trial can be replayed with LATCH_TEST_SEED. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
