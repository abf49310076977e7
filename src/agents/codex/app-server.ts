// A minimal, bounded client for `codex app-server` (JSON-RPC, one JSON object per line over stdio,
// no "jsonrpc" member) and the other small things `latch doctor` asks the real Codex binary.
// Every child runs with an explicit CODEX_HOME, a hard timeout that kills its whole process group,
// and the features that would reach the network (plugin sync) turned off.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  accessSync,
  constants,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { LatchError } from '../../base/errors.js';
import { killGroup, runBounded } from '../../base/bounded.js';

/** How to start Codex: `cmd ...args <codex args>`. */
export interface CodexCommand {
  cmd: string;
  args: string[];
  /** Human-readable: the path that was found. */
  path: string;
  from: 'PATH' | 'node_modules' | 'given';
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A JS launcher (the npm package's bin/codex.js) is run with this node; a native binary directly. */
export function codexCommandFor(path: string, from: CodexCommand['from']): CodexCommand {
  if (/\.[cm]?js$/.test(path)) return { cmd: process.execPath, args: [path], path, from };
  return { cmd: path, args: [], path, from };
}

function fromNodeModules(): string | null {
  const bases = [typeof __filename === 'string' ? __filename : null, join(process.cwd(), 'noop.js')].filter(
    (b): b is string => !!b,
  );
  for (const base of bases) {
    try {
      const req = createRequire(base);
      const pkgJson = req.resolve('@openai/codex/package.json');
      const pkg = JSON.parse(readFileSync(pkgJson, 'utf8')) as { bin?: string | Record<string, string> };
      const rel = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.codex;
      if (!rel) continue;
      const p = join(dirname(pkgJson), rel);
      if (existsSync(p)) return p;
    } catch {
      /* not installed next to this file */
    }
  }
  return null;
}

/** `codex` from PATH, else from this project's node_modules (@openai/codex), else null. */
export function resolveCodex(env: NodeJS.ProcessEnv): CodexCommand | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'codex');
    if (isExecutableFile(p)) return { cmd: p, args: [], path: p, from: 'PATH' };
  }
  const nm = fromNodeModules();
  return nm ? codexCommandFor(nm, 'node_modules') : null;
}

/** The environment for a Codex child: no credentials or proxies, explicit CODEX_HOME, loopback only. */
export function codexChildEnv(env: NodeJS.ProcessEnv, codexHome: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || /^(OPENAI_|CODEX_|HTTPS?_PROXY$|ALL_PROXY$)/i.test(k)) continue;
    out[k] = v;
  }
  out.CODEX_HOME = codexHome;
  out.NO_PROXY = '127.0.0.1,localhost';
  out.RUST_LOG = 'error';
  return out;
}

/**
 * `-c`/`--disable` flags that keep `codex app-server` off the network. In 0.169.0 the `plugins`
 * feature resolves github.com at startup (seen with strace); with it off, no socket leaves loopback.
 */
export const OFFLINE_FLAGS = [
  '-c',
  'check_for_update_on_startup=false',
  '-c',
  'analytics.enabled=false',
  '--disable',
  'plugins',
];

/** `codex --version` → "0.169.0" (plus the raw line). */
export async function codexVersion(
  codex: CodexCommand,
  opts: { env: NodeJS.ProcessEnv; codexHome: string; cwd: string; timeoutMs?: number },
): Promise<{ version: string | null; raw: string; error?: string }> {
  const r = await runBounded(codex.cmd, [...codex.args, '--version'], {
    env: codexChildEnv(opts.env, opts.codexHome),
    cwd: opts.cwd,
    timeoutMs: opts.timeoutMs ?? 10_000,
  });
  const raw = r.stdout.trim();
  if (r.spawnError) return { version: null, raw, error: `cannot run ${codex.path}: ${r.spawnError}` };
  if (r.timedOut)
    return { version: null, raw, error: `\`codex --version\` did not finish within ${opts.timeoutMs ?? 10_000} ms` };
  if (r.code !== 0)
    return {
      version: null,
      raw,
      error: `\`codex --version\` exited ${r.code ?? r.signal}: ${r.stderr.trim().slice(0, 200)}`,
    };
  const m = /(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?/.exec(raw);
  return m ? { version: m[0], raw } : { version: null, raw, error: `cannot read a version in "${raw.slice(0, 100)}"` };
}

// ---------------------------------------------------------------------------------------------
// app-server

export class AppServerError extends LatchError {
  constructor(message: string) {
    super('E_APP_SERVER', message);
    this.name = 'AppServerError';
  }
}

export interface AppServerRequest {
  method: string;
  params: unknown;
}

/**
 * Starts `codex app-server` (stdio), performs the initialize / initialized handshake, sends the
 * requests one after the other and returns their results. Closing stdin ends the server; a hard
 * timeout kills its process group. Rejects with AppServerError on timeout, exit, or an error reply.
 */
export function appServerCall(
  codex: CodexCommand,
  requests: AppServerRequest[],
  opts: {
    env: NodeJS.ProcessEnv;
    codexHome: string;
    cwd: string;
    timeoutMs?: number;
    clientVersion?: string;
    waitExit?: boolean;
  },
): Promise<unknown[]> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(codex.cmd, [...codex.args, 'app-server', ...OFFLINE_FLAGS], {
        cwd: opts.cwd,
        env: codexChildEnv(opts.env, opts.codexHome),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      reject(new AppServerError(`cannot start ${codex.path} app-server: ${(err as Error).message}`));
      return;
    }
    const results: unknown[] = [];
    let stderr = '';
    let buf = '';
    let settled = false;
    let next = 0; // index of the request awaiting its reply (-1 while initializing)
    let exited = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        child.stdin.end();
      } catch {
        /* closed */
      }
      // Give the server a moment to exit on EOF, then make sure nothing is left behind.
      const reaper = setTimeout(() => killGroup(child.pid, () => child.kill('SIGKILL')), 2_000);
      reaper.unref();
      const done = () => (err ? reject(err) : resolve(results));
      if (opts.waitExit && !exited) {
        // The caller deletes the server's CODEX_HOME next: answer once the server is gone.
        child.once('close', () => {
          clearTimeout(reaper);
          done();
        });
        return;
      }
      child.once('close', () => clearTimeout(reaper));
      done();
    };
    const timer = setTimeout(() => {
      killGroup(child.pid, () => child.kill('SIGKILL'));
      settle(new AppServerError(`codex app-server did not answer within ${timeoutMs} ms (killed)`));
    }, timeoutMs);
    const send = (msg: Record<string, unknown>) => {
      try {
        child.stdin.write(JSON.stringify(msg) + '\n');
      } catch (err) {
        settle(new AppServerError(`cannot write to codex app-server: ${(err as Error).message}`));
      }
    };
    const sendNext = () => {
      if (next >= requests.length) return settle(null);
      const r = requests[next]!;
      send({ id: next + 2, method: r.method, params: r.params });
    };
    const onMessage = (msg: Record<string, unknown>) => {
      if (!('id' in msg) || typeof msg.id !== 'number') {
        // A server request (it has a method and an id) would need an answer; none is expected here.
        return;
      }
      if ('method' in msg) {
        send({ id: msg.id, error: { code: -32601, message: 'latch doctor does not handle server requests' } });
        return;
      }
      if (msg.error !== undefined) {
        const e = msg.error as { message?: unknown };
        const what = msg.id === 1 ? 'initialize' : (requests[msg.id - 2]?.method ?? `request ${msg.id}`);
        return settle(
          new AppServerError(
            `codex app-server rejected ${what}: ${typeof e?.message === 'string' ? e.message : JSON.stringify(msg.error)}`,
          ),
        );
      }
      if (msg.id === 1) {
        send({ method: 'initialized' });
        return sendNext();
      }
      if (msg.id === next + 2) {
        results.push(msg.result);
        next++;
        sendNext();
      }
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      let i: number;
      while (!settled && (i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          continue; // not a protocol line
        }
        if (msg && typeof msg === 'object' && !Array.isArray(msg)) onMessage(msg as Record<string, unknown>);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 8192) stderr += d;
    });
    child.stdin.on('error', () => {
      /* reported through close */
    });
    child.on('error', (err) => settle(new AppServerError(`cannot start ${codex.path} app-server: ${err.message}`)));
    child.on('close', (code, signal) => {
      exited = true;
      const tail = stderr
        .trim()
        .split('\n')
        .filter((l) => !/WARNING: proceeding|bubblewrap/.test(l))
        .slice(-3)
        .join(' | ');
      settle(
        new AppServerError(
          `codex app-server exited (${code ?? signal}) before answering${tail ? `: ${tail.slice(0, 300)}` : ''}`,
        ),
      );
    });
    send({
      id: 1,
      method: 'initialize',
      params: { clientInfo: { name: 'latch-doctor', title: 'Latch doctor', version: opts.clientVersion ?? '0' } },
    });
  });
}

/** One hook as `hooks/list` reports it (codex 0.169.0; only the fields Latch reads). */
export interface CodexHookInfo {
  /** `<abs path of hooks.json>:<event_snake_case>:<group index>:<handler index>` */
  key: string;
  eventName: string;
  handlerType?: string;
  command?: string;
  matcher?: string | null;
  sourcePath: string;
  source: string;
  enabled: boolean;
  /** `sha256:<hex>`; covers command, matcher, timeout and statusMessage. */
  currentHash: string;
  trustStatus: 'managed' | 'untrusted' | 'trusted' | 'modified' | string;
}

export interface HooksListEntry {
  cwd: string;
  hooks: CodexHookInfo[];
  warnings: string[];
  errors: { message: string; path: string }[];
}

/** Asks Codex which hooks it would load for `cwds` and whether each one is trusted. */
export async function listCodexHooks(
  codex: CodexCommand,
  opts: { env: NodeJS.ProcessEnv; codexHome: string; cwds: string[]; timeoutMs?: number; waitExit?: boolean },
): Promise<HooksListEntry[]> {
  const [res] = await appServerCall(codex, [{ method: 'hooks/list', params: { cwds: opts.cwds } }], {
    env: opts.env,
    codexHome: opts.codexHome,
    cwd: opts.cwds[0] ?? process.cwd(),
    timeoutMs: opts.timeoutMs,
    waitExit: opts.waitExit,
  });
  const data = (res as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new AppServerError('hooks/list returned no `data` array');
  return data.map((e: Record<string, unknown>) => ({
    cwd: String(e.cwd ?? ''),
    hooks: Array.isArray(e.hooks) ? (e.hooks as CodexHookInfo[]) : [],
    warnings: Array.isArray(e.warnings) ? e.warnings.map(String) : [],
    errors: Array.isArray(e.errors) ? (e.errors as { message: string; path: string }[]) : [],
  }));
}

// ---------------------------------------------------------------------------------------------
// a throwaway CODEX_HOME

/**
 * A temporary CODEX_HOME holding copies of `codexHome`'s config.toml and hooks.json only, for the
 * Codex children `latch doctor` starts: `codex app-server` writes skills, logs and databases into its
 * CODEX_HOME, and doctor must leave the user's as it found it. Codex's trust keys embed the absolute
 * path of hooks.json, so the copy's `[hooks.state."<codexHome>/hooks.json:..."]` keys are rewritten
 * to the copy's path, and `toOriginal` maps what Codex reports back. `cleanup()` deletes the copy.
 */
export interface IsolatedCodexHome {
  dir: string;
  toOriginal(s: string): string;
  cleanup(): void;
}

export function isolatedCodexHome(codexHome: string): IsolatedCodexHome {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'latch-codex-home-')));
  const cleanup = () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  try {
    const spellings = [codexHome];
    try {
      const real = realpathSync(codexHome);
      if (real !== codexHome) spellings.push(real);
    } catch {
      /* no CODEX_HOME yet */
    }
    const hooks = join(codexHome, 'hooks.json');
    if (isFile(hooks)) copyFileSync(hooks, join(dir, 'hooks.json'));
    const cfg = join(codexHome, 'config.toml');
    if (isFile(cfg)) {
      let text = readFileSync(cfg, 'utf8');
      for (const o of spellings) text = text.split(`${o}/hooks.json:`).join(`${dir}/hooks.json:`);
      writeFileSync(join(dir, 'config.toml'), text, { mode: 0o600 });
    }
  } catch (err) {
    cleanup();
    throw err;
  }
  const toOriginal = (s: string) => s.split(`${dir}/`).join(`${codexHome}/`);
  return { dir, toOriginal, cleanup };
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** `listCodexHooks` against an isolated copy of `codexHome`; keys and paths are reported as the originals. */
export async function listCodexHooksIsolated(
  codex: CodexCommand,
  opts: { env: NodeJS.ProcessEnv; codexHome: string; cwds: string[]; timeoutMs?: number; isolated?: IsolatedCodexHome },
): Promise<HooksListEntry[]> {
  const iso = opts.isolated ?? isolatedCodexHome(opts.codexHome);
  try {
    const entries = await listCodexHooks(codex, {
      env: opts.env,
      codexHome: iso.dir,
      cwds: opts.cwds,
      timeoutMs: opts.timeoutMs,
      waitExit: true,
    });
    return entries.map((e) => ({
      cwd: e.cwd,
      hooks: e.hooks.map((h) => ({ ...h, key: iso.toOriginal(h.key), sourcePath: iso.toOriginal(h.sourcePath) })),
      warnings: e.warnings.map(iso.toOriginal),
      errors: e.errors.map((x) => ({
        message: iso.toOriginal(String(x.message)),
        path: iso.toOriginal(String(x.path)),
      })),
    }));
  } finally {
    if (!opts.isolated) iso.cleanup();
  }
}

// ---------------------------------------------------------------------------------------------
// a whole app-server session (tests, fixture capture)

export type AppServerMessage = Record<string, unknown>;

export interface AppServerSessionOptions {
  env: NodeJS.ProcessEnv;
  codexHome: string;
  cwd: string;
  /** Extra environment for the server (and so for the hooks it runs), e.g. LATCH_HOME. */
  extraEnv?: Record<string, string>;
  /** Hard limit for the whole session: past it the process group is killed. Default 180 s. */
  timeoutMs?: number;
  clientName?: string;
}

/**
 * `codex app-server` driven over stdio for a whole session: initialize / initialized, then requests
 * and notifications as the caller sends them. Every line the server writes on stdout is kept verbatim
 * (`lines`, the raw stream `latch doctor` reads); the parsed objects are in `messages`. A server
 * request (approval, user input) is answered with a JSON-RPC error and recorded in `serverRequests`.
 * The session has a hard deadline that kills the server's process group; close() ends it by closing
 * stdin, then kills whatever is left.
 */
export class AppServerSession {
  readonly lines: string[] = [];
  readonly messages: AppServerMessage[] = [];
  readonly serverRequests: AppServerMessage[] = [];
  stderr = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private buf = '';
  private nextId = 1;
  private waiters: {
    from: number;
    pred: (m: AppServerMessage) => boolean;
    resolve: (m: AppServerMessage) => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  }[] = [];
  private readonly killTimer: NodeJS.Timeout;
  private readonly closed: Promise<void>;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    timeoutMs: number,
  ) {
    child.stdout.setEncoding('utf8').on('data', (d: string) => this.onData(d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (this.stderr.length < 65536) this.stderr += d;
    });
    child.stdin.on('error', () => {
      /* reported through close */
    });
    this.closed = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        if (this.buf) this.take(this.buf);
        this.buf = '';
        this.exit = { code, signal };
        clearTimeout(this.killTimer);
        for (const w of this.waiters.splice(0)) {
          clearTimeout(w.timer);
          w.reject(
            new AppServerError(`codex app-server exited (${code ?? signal}) while waiting: ${this.stderrTail()}`),
          );
        }
        resolve();
      });
    });
    this.killTimer = setTimeout(() => killGroup(child.pid, () => child.kill('SIGKILL')), timeoutMs);
    this.killTimer.unref();
  }

  /** Starts the server and performs the initialize / initialized handshake. */
  static async start(codex: CodexCommand, opts: AppServerSessionOptions): Promise<AppServerSession> {
    const env = { ...codexChildEnv(opts.env, opts.codexHome), ...(opts.extraEnv ?? {}) };
    const child = spawn(codex.cmd, [...codex.args, 'app-server', ...OFFLINE_FLAGS], {
      cwd: opts.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const s = new AppServerSession(child, opts.timeoutMs ?? 180_000);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => reject(new AppServerError(`cannot start ${codex.path} app-server: ${err.message}`)));
    });
    const name = opts.clientName ?? 'latch';
    await s.request('initialize', { clientInfo: { name, title: name, version: '0' } });
    s.notify('initialized');
    return s;
  }

  /** Position in `messages`: pass it to waitFor() to wait only for what arrives after now. */
  mark(): number {
    return this.messages.length;
  }

  notify(method: string, params?: unknown): void {
    this.send(params === undefined ? { method } : { method, params });
  }

  /** Sends a request and resolves with its result; rejects with AppServerError on an error reply. */
  async request(method: string, params: unknown, timeoutMs = 60_000): Promise<any> {
    const id = this.nextId++;
    const from = this.mark();
    this.send({ id, method, params });
    const reply = await this.waitFor((m) => m.id === id && !('method' in m), `the reply to ${method}`, {
      from,
      timeoutMs,
    });
    if (reply.error !== undefined) {
      const e = reply.error as { message?: unknown };
      throw new AppServerError(
        `codex app-server rejected ${method}: ${typeof e?.message === 'string' ? e.message : JSON.stringify(reply.error)}`,
      );
    }
    return reply.result;
  }

  /** The first message at or after `from` (default 0) that satisfies pred. */
  waitFor(
    pred: (m: AppServerMessage) => boolean,
    what: string,
    opts: { from?: number; timeoutMs?: number } = {},
  ): Promise<AppServerMessage> {
    const from = opts.from ?? 0;
    for (let i = from; i < this.messages.length; i++)
      if (pred(this.messages[i]!)) return Promise.resolve(this.messages[i]!);
    if (this.exit)
      return Promise.reject(
        new AppServerError(
          `codex app-server exited (${this.exit.code ?? this.exit.signal}) before ${what}: ${this.stderrTail()}`,
        ),
      );
    const timeoutMs = opts.timeoutMs ?? 120_000;
    return new Promise((resolve, reject) => {
      const w = {
        from,
        pred,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          reject(new AppServerError(`no ${what} from codex app-server within ${timeoutMs} ms: ${this.stderrTail()}`));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Closes stdin (the server exits at EOF) and waits up to graceMs, then kills its process group. */
  async close(graceMs = 5_000): Promise<void> {
    try {
      this.child.stdin.end();
    } catch {
      /* closed */
    }
    const t = setTimeout(() => killGroup(this.child.pid, () => this.child.kill('SIGKILL')), graceMs);
    await this.closed;
    clearTimeout(t);
    // Whatever the server left in its group (a shell the model opened) goes too.
    killGroup(this.child.pid, () => undefined);
  }

  /** The raw stream as written: every stdout line, each with its newline. */
  stream(): string {
    return this.lines.map((l) => l + '\n').join('');
  }

  private stderrTail(): string {
    return this.stderr
      .trim()
      .split('\n')
      .filter((l) => !/WARNING: proceeding|bubblewrap/.test(l))
      .slice(-3)
      .join(' | ')
      .slice(0, 500);
  }

  private send(msg: Record<string, unknown>): void {
    this.child.stdin.write(JSON.stringify(msg) + '\n');
  }

  private onData(d: string): void {
    this.buf += d;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      this.take(line);
    }
  }

  private take(line: string): void {
    this.lines.push(line);
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return; // not a protocol line: kept in `lines` as written
    }
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return;
    const m = msg as AppServerMessage;
    this.messages.push(m);
    const idx = this.messages.length - 1;
    if ('method' in m && 'id' in m) {
      this.serverRequests.push(m);
      this.send({ id: m.id, error: { code: -32601, message: 'this client does not handle server requests' } });
    }
    for (const w of [...this.waiters]) {
      if (idx >= w.from && w.pred(m)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(m);
      }
    }
  }
}
