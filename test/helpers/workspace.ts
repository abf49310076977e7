// Temp workspaces, Latch homes and Codex-shaped payloads for unit tests (the acceptance tests use the real Codex).
import { cgroup2Mount, cgroupOf, removeDeadGroups } from '../../src/contain/cgroup.js';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../../src/ledger/ledger.js';
import { recordedResidents } from '../../src/resident/list.js';
import { procStat } from '../../src/base/proc.js';
import { openStore } from '../../src/store/store.js';

export interface Sandbox {
  base: string;
  work: string;
  home: string;
  transcript: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function sandbox(opts: { git?: boolean; store?: boolean } = {}): Sandbox {
  const base = mkdtempSync(join(tmpdir(), 'latch-test-'));
  const work = join(base, 'work');
  const home = join(base, 'state');
  mkdirSync(work);
  if (opts.git !== false) {
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: work });
    writeFileSync(join(work, 'README.md'), '# test\n');
    execFileSync('git', ['add', '.'], { cwd: work });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'init'], {
      cwd: work,
    });
  }
  if (opts.store !== false) openStore(home, { create: true }).close();
  const transcript = join(base, 'rollout.jsonl');
  writeFileSync(
    transcript,
    rolloutLine('session_meta', { id: 'S', session_id: 'S', cwd: work, cli_version: '0.169.0' }),
  );
  const cleanup = () => {
    stopLatchProcesses(home, base);
    rmSync(base, { recursive: true, force: true, maxRetries: 10 });
  };
  return { base, work, home, transcript, env: { ...process.env, LATCH_HOME: home }, cleanup };
}

/**
 * Stops the workspace watchers a test's hooks started under this Latch home, the resident hooks they
 * spawned (recorded in the home's spools), and any watcher process
 * for a workspace under `base` (one a killed hook started may not have registered yet), and any
 * resident hook working under `base` (one a hook started just before may not have named itself yet,
 * and would make its spool directory again), and waits (up to 15 s) for them to exit, so that
 * removing the directories does not race with a watcher or a resident hook. What has not left after
 * 15 s is killed.
 */
export function stopLatchProcesses(home: string, base?: string): void {
  // The agents' cgroups Latch made (src/contain/cgroup.ts) that are empty now: the test's agents
  // ran in this process's cgroup.
  const mount = cgroup2Mount();
  const own = cgroupOf('self');
  if (mount && own) removeDeadGroups(join(mount, own));
  let rows: { pid: number; pid_start: string }[] = [];
  if (existsSync(join(home, 'latch.db'))) {
    try {
      const db = openStore(home, { create: false, readonly: true });
      try {
        rows = db.prepare('SELECT pid, pid_start FROM watchers').all() as typeof rows;
      } finally {
        db.close();
      }
    } catch {
      rows = [];
    }
  }
  if (base) rows.push(...latchProcessesUnder(base));
  // The resident hooks this home's hooks spawned, as each spawning hook recorded them (their working
  // directory is the hook's, which need not lie under `base`).
  for (const id of recordedResidents(home)) {
    const [pid, start] = id.split(':');
    rows.push({ pid: Number(pid), pid_start: start! });
  }
  const alive = (r: { pid: number; pid_start: string }) => isAlive({ pid: r.pid, start: r.pid_start });
  for (const r of rows) if (alive(r)) process.kill(r.pid, 'SIGTERM');
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  // A busy machine can take seconds to schedule an exit: up to 15 s, then SIGKILL for what still runs
  // (each one this test's own, by its row in the test's store or its root or directory under `base`).
  for (let waited = 0; waited < 15_000 && rows.some(alive); waited += 20) Atomics.wait(sleeper, 0, 0, 20);
  for (const r of rows) if (alive(r)) process.kill(r.pid, 'SIGKILL');
  for (let waited = 0; waited < 2000 && rows.some(alive); waited += 20) Atomics.wait(sleeper, 0, 0, 20);
}

/**
 * `latch __watch ROOT` processes whose ROOT is under base, and `latch __serve AGENT` processes whose
 * working directory or Latch home is (from /proc; Linux only).
 */
function latchProcessesUnder(base: string): { pid: number; pid_start: string }[] {
  const out: { pid: number; pid_start: string }[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return out;
  }
  for (const n of entries) {
    try {
      const argv = readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0');
      const i = argv.indexOf('__watch');
      const watcher = i >= 0 && argv[i + 1]?.startsWith(base + '/');
      // A resident hook works under `base`, or serves a Latch home there (its spawning hook's working
      // directory may be anywhere: the environment names the home).
      const resident =
        argv.includes('__serve') &&
        (`${readlinkSync(`/proc/${n}/cwd`)}/`.startsWith(base + '/') ||
          readFileSync(`/proc/${n}/environ`, 'utf8')
            .split('\0')
            .some((e) => e.startsWith(`LATCH_HOME=${base}/`)));
      if (!watcher && !resident) continue;
      out.push({ pid: Number(n), pid_start: procStat(Number(n))?.start ?? 'unknown' });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

export function rolloutLine(type: string, payload: unknown): string {
  return JSON.stringify({ timestamp: new Date().toISOString(), type, payload }) + '\n';
}

/** Appends what Codex 0.169 writes for one local compaction. */
export function appendCompaction(transcript: string, id = 'cc-' + Math.random().toString(16).slice(2)): void {
  appendFileSync(
    transcript,
    rolloutLine('response_item', {
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'summary' }],
    }) +
      rolloutLine('compacted', { message: 'Another language model started...\nsummary', replacement_history: [] }) +
      rolloutLine('turn_context', { cwd: '/', model: 'gpt-5.5' }) +
      rolloutLine('event_msg', { type: 'item_completed', item: { type: 'ContextCompaction', id } }),
  );
}

export function appendModelTurn(transcript: string): void {
  appendFileSync(
    transcript,
    rolloutLine('response_item', { type: 'function_call', name: 'exec_command', arguments: '{}' }),
  );
}

const FIX = join('test', 'fixtures', 'codex-payloads');

/** A captured real payload, re-pointed at this sandbox. */
export function payload(name: string, sb: Sandbox, over: Record<string, unknown> = {}): Record<string, unknown> {
  const p = JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>;
  return { ...p, session_id: 'S', cwd: sb.work, transcript_path: sb.transcript, ...over };
}

export function bash(sb: Sandbox, command: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return payload('pre-tool-use-bash', sb, {
    tool_input: { command },
    tool_use_id: 'call_' + Math.random().toString(16).slice(2),
    ...over,
  });
}

/** A command's Io over a sandbox, capturing what it prints; a question through stdin fails the test. */
export function captureIo(
  sb: Sandbox,
  over: { now?: string; interactive?: boolean } = {},
): { io: import('../../src/kit/io.js').Io; out(): string; err(): string } {
  let out = '';
  let err = '';
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (err += t),
    env: sb.env,
    cwd: sb.work,
    interactive: over.interactive ?? false,
    ask: async (): Promise<string> => {
      throw new Error('no question through stdin expected');
    },
    now: () => over.now ?? new Date().toISOString(),
  };
  return { io, out: () => out, err: () => err };
}
