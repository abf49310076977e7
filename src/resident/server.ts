// The resident hook (`latch __serve <agent>`): an ordinary hook process kept alive, so that a
// PreToolUse need not start Latch's bundle (client.ts). An ordinary hook that found none for its
// identity starts one after its reply (startResident); it serves only hooks of exactly its own
// identity (identity.ts: Node, entry, agent, working directory, environment), one request at a time,
// each with a store opened for it, through the same runHook as the ordinary hook. What it answers is
// limited (GuardContext.resident): a PreToolUse on a known, mutable session with nothing to count,
// recover or prepare. Anything else it leaves, before the guard writes anything, to the ordinary hook
// (an answer `notServed`). It leaves when idle, when its spool directory goes, when another resident
// hook took the directory over, and when Latch's files change under it.
//
// What it trusts is what the ordinary hook trusts: its requests come from processes of the same user,
// which could run the ordinary hook themselves with any payload, environment and directory.
import {
  appendFileSync,
  lstatSync,
  readdirSync,
  utimesSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Agent } from '../agents/agent.js';
import { reanchorIfDrifted, reanchorWallClock } from '../base/clock.js';
import { errorMessage, isLatchError } from '../base/errors.js';
import { setDeadline } from '../base/deadline.js';
import { dbPath, moduleDir } from '../base/paths.js';
import { procStat, runs } from '../base/proc.js';
import { isAgentProcess } from '../contain/match.js';
import { argvOf, exeOf } from '../contain/proc.js';
import { busyTimeout, runHook } from '../hook.js';
import { type Db, openStore } from '../store/store.js';
import { namedServer, readOrNull, residentSpool, serverAnswers, SPOOL } from './identity.js';
import { entryPath, ownDirectory } from './start.js';

/** A resident hook with nothing to do for this long leaves (LATCH_RESIDENT_IDLE_MS overrides). */
const IDLE_MS = 10 * 60_000;
/** How often it looks for missed requests, its directory, its code and its idleness. */
const SWEEP_MS = 1_000;
/** An answer no client took, or a file a killed process left, is removed after this long. */
const STALE_ANSWER_MS = 5 * 60_000;
/** The Latch files whose change makes a resident hook leave (it would run stale code). */
const CODE_FILES = ['latch.cjs', 'main.cjs', 'cli.cjs', 'slow.cjs', 'observer.cjs'];

/** The resident hook's process: serves until it has a reason to leave; the exit code. */
export async function runResident(agent: Agent, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (process.platform !== 'linux') return 2;
  const spool = residentSpool(entryPath(), agent.name, env, process.cwd());
  if (!spool || !ownDirectory(spool.dir, true)) return 1;
  const { identity, dir } = spool;
  const me = `${process.pid} ${procStat(process.pid)?.start ?? ''}\n`;
  const current = namedServer(dir);
  // Another one serves (alive, with a fresh heartbeat); a stuck or stopped one is replaced.
  if (current && current.pid !== process.pid && serverAnswers(current)) return 0;
  const tmp = join(dir, `server.${process.pid}.tmp`);
  writeFileSync(tmp, me, { mode: 0o600 });
  renameSync(tmp, join(dir, SPOOL.server));
  return new Resident(agent, env, identity, dir, me).run();
}

class Resident {
  private readonly code = codeStamp();
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private busy = false;
  /** The exit code once a reason to leave was found. */
  private leaving: number | undefined;
  private lastRequest = Date.now();
  private lastAnchor = Date.now();
  private finish: ((code: number) => void) | undefined;
  private readonly idleMs: number;
  private readonly store: KeptStore;
  /** The agent process whose hook started this one (null: none found; then only the idle bound). */
  private readonly agentProcess: { pid: number; start: string } | null;

  constructor(
    private readonly agent: Agent,
    private readonly env: NodeJS.ProcessEnv,
    private readonly identity: string,
    private readonly dir: string,
    private readonly me: string,
  ) {
    const n = Number(env.LATCH_RESIDENT_IDLE_MS);
    this.idleMs = Number.isFinite(n) && n > 0 ? n : IDLE_MS;
    // Read once, then removed: a resident hook leaves nothing behind but the start stamp.
    this.agentProcess = agentOf(readOrNull(join(dir, SPOOL.agents)));
    removeQuietly(join(dir, SPOOL.agents));
    this.store = new KeptStore(busyTimeout(env));
  }

  run(): Promise<number> {
    return new Promise<number>((resolve) => {
      // (Events arrive after this function returns: `finish` is set by then.)
      const watcher = watch(this.dir, { persistent: true }, (_event, name) => {
        if (typeof name === 'string') this.enqueue(name);
      });
      watcher.on('error', () => this.leave(1));
      const timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.finish = (code) => {
        watcher.close();
        clearInterval(timer);
        if (readOrNull(join(this.dir, SPOOL.server)) === this.me) removeQuietly(join(this.dir, SPOOL.server));
        if (readOrNull(join(this.dir, SPOOL.dismissed)) === this.me) removeQuietly(join(this.dir, SPOOL.dismissed));
        // The record its spawner wrote, when it names this process alone (never rewritten here).
        if (readOrNull(join(this.dir, SPOOL.spawned)) === this.me) removeQuietly(join(this.dir, SPOOL.spawned));
        this.store.drop();
        resolve(code);
      };
      this.sweep();
    });
  }

  /** Leaves now, or, with a request in hand, once it is answered (its client would take a resident
   * hook gone mid-request for a failure and deny the call). */
  private leave(code: number): void {
    this.leaving ??= code;
    if (this.busy) return;
    const f = this.finish;
    this.finish = undefined;
    f?.(this.leaving);
  }

  private enqueue(name: string): void {
    if (!name.endsWith(SPOOL.request) || this.queued.has(name)) return;
    this.queued.add(name);
    this.queue.push(name);
    if (!this.busy) void this.drain();
  }

  private async drain(): Promise<void> {
    this.busy = true;
    try {
      for (let name = this.queue.shift(); name !== undefined; name = this.queue.shift()) {
        this.queued.delete(name);
        if (this.leaving !== undefined) break;
        await this.serve(name);
      }
    } finally {
      this.busy = false;
      if (this.leaving !== undefined) this.leave(this.leaving);
    }
  }

  /** One request: claim, check, run the hook, answer. */
  private async serve(name: string): Promise<void> {
    const id = name.slice(0, -SPOOL.request.length);
    const claimed = join(this.dir, id + SPOOL.claimed);
    try {
      renameSync(join(this.dir, name), claimed);
    } catch {
      return; // withdrawn by its client, or taken by another resident hook
    }
    this.lastRequest = Date.now();
    let answer: Answer;
    try {
      answer = await this.answer(readFileSync(claimed, 'utf8'));
    } catch (err) {
      // Whatever failed may have written: a deny, never a second decision by the ordinary hook.
      answer = {
        stdout: null,
        stderr: `Latch blocked this call: internal error (${errorMessage(err)})\n`,
        exitCode: 2,
      };
    } finally {
      setDeadline(null);
    }
    if (this.env.LATCH_RESIDENT_TRACE === '1') this.trace(answer, claimed);
    const tmp = join(this.dir, `${id}.tmp-answer`);
    try {
      writeFileSync(tmp, JSON.stringify(answer), { mode: 0o600 });
      renameSync(tmp, join(this.dir, id + SPOOL.answer));
    } finally {
      removeQuietly(claimed);
    }
    if ('notServed' in answer && answer.leave) this.leave(0);
  }

  /**
   * LATCH_RESIDENT_TRACE=1 (tests): one line per request in <home>/resident/trace.log, with the
   * session and call the payload names, whether this hook answered, and why not.
   */
  private trace(answer: Answer, claimed: string): void {
    try {
      let call: { session_id?: unknown; tool_use_id?: unknown } = {};
      try {
        call = JSON.parse((JSON.parse(readFileSync(claimed, 'utf8')) as { input: string }).input) as typeof call;
      } catch {
        /* not a payload */
      }
      const line = {
        at: new Date().toISOString(),
        pid: process.pid,
        session: call.session_id ?? null,
        call: call.tool_use_id ?? null,
        ...('notServed' in answer
          ? { served: false, why: answer.notServed }
          : { served: true, exitCode: answer.exitCode }),
        heapMb: Math.round(process.memoryUsage().heapUsed / 1e5) / 10,
      };
      appendFileSync(join(dirname(this.dir), 'trace.log'), `${JSON.stringify(line)}\n`, { mode: 0o600 });
    } catch {
      /* tracing is best effort */
    }
  }

  private async answer(text: string): Promise<Answer> {
    const req = parseRequest(text);
    if (!req) return { notServed: 'a malformed request' };
    if (req.identity !== this.identity) return { notServed: 'a hook of another identity' };
    if (codeStamp() !== this.code) return { notServed: 'Latch changed since this resident hook started', leave: true };
    reanchorIfDrifted();
    try {
      const r = await runHook(this.agent, req.input, 'PreToolUse', this.env, { resident: true, store: this.store });
      return { stdout: r.stdout, stderr: r.stderr ?? null, exitCode: r.exitCode };
    } catch (err) {
      if (isLatchError(err, 'E_NOT_SERVED')) return { notServed: err.message };
      throw err;
    }
  }

  /** Missed events, then the reasons to leave; between requests, the wall clock's anchor is renewed. */
  private sweep(): void {
    if (!this.finish) return;
    const now = Date.now();
    const server = join(this.dir, SPOOL.server);
    if (readOrNull(server) !== this.me || !ownDirectory(this.dir, false)) return this.leave(0);
    // Dismissed by `latch uninstall` (src/resident/list.ts): the marker names this process.
    if (readOrNull(join(this.dir, SPOOL.dismissed)) === this.me) return this.leave(0);
    if (codeStamp() !== this.code || now - this.lastRequest > this.idleMs) return this.leave(0);
    // Its agent exited: no hook of it will come (another agent of the identity starts its own).
    const a = this.agentProcess;
    if (a && !runs(a.pid, a.start)) return this.leave(0);
    // The heartbeat: a client takes a resident hook whose `server` is older than HEARTBEAT_STALE_MS
    // for gone (stuck or stopped), runs the ordinary hook and starts another.
    try {
      const t = new Date(now);
      utimesSync(server, t, t);
    } catch {
      return this.leave(0);
    }
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return this.leave(0);
    }
    for (const name of names) {
      if (name.endsWith(SPOOL.request)) this.enqueue(name);
      // Answers no client took, and what a killed client or resident hook left half done.
      else if (name !== SPOOL.server && name !== SPOOL.started && name !== SPOOL.agents && name !== SPOOL.spawned)
        removeIfOlder(join(this.dir, name), STALE_ANSWER_MS);
    }
    if (!this.busy && now - this.lastAnchor > 10_000) {
      reanchorWallClock();
      this.lastAnchor = Date.now();
    }
  }
}

/**
 * The resident hook's store: opened once and kept while latch.db is the same file (one opened again
 * after a store was removed or replaced, by `latch uninstall` and a new setup), with each statement
 * prepared once (an ordinary hook prepares every statement it runs: ~1.3 ms a PreToolUse, measured).
 */
class KeptStore {
  private db: Db | null = null;
  private file = '';

  constructor(private readonly busyTimeoutMs: number) {}

  readonly open = (home: string): Db => {
    const file = fileId(dbPath(home));
    if (this.db && file === this.file && !this.db.inTransaction) return this.db;
    this.drop();
    const db = openStore(home, { create: false, busyTimeoutMs: this.busyTimeoutMs });
    preparedOnce(db);
    this.db = db;
    this.file = file;
    return db;
  };

  /** Kept open for the next request. */
  readonly close = (_db: Db): void => undefined;

  drop(): void {
    try {
      this.db?.close();
    } catch {
      /* closed already */
    }
    this.db = null;
  }
}

/** At most this many statements are kept per store (the SQL Latch runs is mostly constant text). */
const STATEMENTS_KEPT = 512;

/**
 * `db.prepare` from a cache: the same SQL gets the same statement, its result mode reset (pluck,
 * expand and raw are modes set on the statement). Safe because Latch never holds a statement across
 * another's use (no iterate()).
 */
export function preparedOnce(db: Db): void {
  const prepare = db.prepare.bind(db);
  const kept = new Map<string, ReturnType<Db['prepare']>>();
  db.prepare = ((sql: string) => {
    let st = kept.get(sql);
    if (st) {
      if (st.reader) st.pluck(false).expand(false).raw(false);
      return st;
    }
    st = prepare(sql);
    if (kept.size >= STATEMENTS_KEPT) kept.clear();
    kept.set(sql, st);
    return st;
  }) as Db['prepare'];
}

/** A file's identity (device and inode), '' when it is missing. */
function fileId(path: string): string {
  try {
    const s = lstatSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return '';
  }
}

type Answer =
  | { stdout: string | null; stderr: string | null; exitCode: number }
  | { notServed: string; leave?: boolean };

function parseRequest(text: string): { identity: string; input: string } | null {
  try {
    const o = JSON.parse(text) as { v?: unknown; identity?: unknown; input?: unknown };
    if (o?.v !== 1 || typeof o.identity !== 'string' || typeof o.input !== 'string') return null;
    return { identity: o.identity, input: o.input };
  } catch {
    return null;
  }
}

/**
 * The agent among the starting hook's ancestors (SPOOL.agents): the nearest that still runs as
 * listed and is an agent process (a registered agent's: Agent.processes).
 */
function agentOf(text: string | null): { pid: number; start: string } | null {
  for (const line of (text ?? '').split('\n').slice(0, 32)) {
    const m = /^(\d+) (\d+)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    const start = m[2]!;
    if (runs(pid, start) && isAgentProcess(exeOf(pid), argvOf(pid))) return { pid, start };
  }
  return null;
}

/** The identity of Latch's code files: a change (an upgrade, a rebuild) sends the resident hook away. */
function codeStamp(): string {
  return CODE_FILES.map((f) => {
    try {
      const s = statSync(join(moduleDir, f));
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return '-';
    }
  }).join(' ');
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* gone already */
  }
}

function removeIfOlder(path: string, ms: number): void {
  try {
    if (Date.now() - statSync(path).mtimeMs > ms) unlinkSync(path);
  } catch {
    /* gone already */
  }
}
