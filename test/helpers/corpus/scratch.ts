// Scratch roots for the adversarial corpus (issue 10): a real git workspace, a fake HOME with shell
// startup files, a fake CODEX_HOME (hooks.json, config.toml), a fake LATCH_HOME (latch.db,
// config.toml, Latch's own sandbox home), a fake installed Latch whose executables write a marker
// when they run, and a markers directory. Each root is built in place once, copied aside with
// `cp -a` (the pristine copy), and restored from it before every run, so absolute paths stay valid.
//
// The oracle helpers: `snapshot` records every entry under the root (path, type, mode, size, content
// hash, symlink target, owner, link count, mtime and ctime; never atime), `runShell` runs a command exactly as Codex does
// (`/bin/bash -lc <command>`, cwd = the workspace, stdin /dev/null, a timeout, its own process group
// that is waited for and then killed), optionally on a pseudo-terminal with keystrokes typed into it
// (what `exec_command` with `tty: true` plus `write_stdin` can do).
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { readOnlySandbox, type Sandbox } from '../../../src/agents/codex/sandbox.js';
import type { ReadSandbox } from '../../../src/agents/agent.js';
import { bwrapSandbox } from '../../../src/agents/shared/bwrap.js';
import { shellQuote } from '../../../src/guard/read-shell.js';

export const CODEX_BIN = path.resolve(
  'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex',
);

/** Secret text planted in the store and the registration: it must never show in an allowed command's output. */
export const CANARY = `CANARY${randomBytes(6).toString('hex')}`;

export interface Root {
  /** The scratch root (everything the oracle watches). */
  r: string;
  pristine: string;
  ws: string;
  home: string;
  codexHome: string;
  latchHome: string;
  markers: string;
  /** The fake installed `dist/latch.cjs` (ctx.latchBin). */
  entry: string;
  /** The fake installed `bin/latch.cjs` (npm's bin shim target). */
  bin: string;
  sandbox: Sandbox | null;
  sandboxWhy: string;
  /** Latch's sealed sandbox (null when bubblewrap or the helper is missing here). */
  sealed: Extract<ReadSandbox, { ok: true }> | null;
  sealedWhy: string;
}

export const GIT_BUILD_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  GIT_AUTHOR_NAME: 'Corpus',
  GIT_AUTHOR_EMAIL: 'corpus@example.invalid',
  GIT_COMMITTER_NAME: 'Corpus',
  GIT_COMMITTER_EMAIL: 'corpus@example.invalid',
  GIT_AUTHOR_DATE: '2025-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2025-01-01T00:00:00Z',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** Replace the corpus tokens of a command template with this root's paths. */
export function subst(template: string, root: Root): string {
  return template.replace(/@(R|WS|H|CH|LH|M|E|B)@/g, (_m, k: string) => {
    switch (k) {
      case 'R':
        return root.r;
      case 'WS':
        return root.ws;
      case 'H':
        return root.home;
      case 'CH':
        return root.codexHome;
      case 'LH':
        return root.latchHome;
      case 'M':
        return root.markers;
      case 'E':
        return root.entry;
      default:
        return root.bin;
    }
  });
}

function write(p: string, text: string | Buffer, mode?: number): void {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, text);
  if (mode !== undefined) chmodSync(p, mode);
}

/** A Node script that records that it ran (a marker file) and prints its arguments. */
function markerScript(markers: string, name: string): string {
  return [
    '#!/usr/bin/env node',
    "'use strict';",
    "const fs = require('fs');",
    `try { fs.writeFileSync(${JSON.stringify(markers)} + '/${name}-' + process.pid, process.argv.slice(2).join(' ') + '\\n'); } catch (e) { process.stderr.write('${name}: ' + e.message + '\\n'); }`,
    `process.stdout.write('latch (test double ${name}) ' + process.argv.slice(2).join(' ') + '\\n');`,
    '',
  ].join('\n');
}

export const SPAWN_SYNC = (
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { status: number | null; stderr: string } => {
  const r = spawnSync(bin, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  return { status: r.status, stderr: r.stderr ?? '' };
};

/** Build a scratch root at `dir` (which must not exist), then its pristine copy at `dir + '.pristine'`. */
export function buildRoot(dir: string): Root {
  const r = dir;
  const ws = path.join(r, 'ws');
  const home = path.join(r, 'home');
  const codexHome = path.join(home, '.codex');
  const latchHome = path.join(home, '.local', 'state', 'latch');
  const markers = path.join(r, 'markers');
  const pkg = path.join(home, '.local', 'lib', 'node_modules', 'agent-latch');
  const entry = path.join(pkg, 'dist', 'latch.cjs');
  const bin = path.join(pkg, 'bin', 'latch.cjs');
  mkdirSync(markers, { recursive: true });

  // The fake HOME: a distribution-default login profile (it puts ~/bin and ~/.local/bin on PATH when
  // they exist, then reads ~/.bashrc, which returns at once for a non-interactive shell).
  write(
    path.join(home, '.bash_profile'),
    [
      '# ~/.bash_profile (a distribution default)',
      'if [ -d "$HOME/bin" ] ; then PATH="$HOME/bin:$PATH"; fi',
      'if [ -d "$HOME/.local/bin" ] ; then PATH="$HOME/.local/bin:$PATH"; fi',
      'if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi',
      '',
    ].join('\n'),
  );
  write(
    path.join(home, '.profile'),
    '# ~/.profile\nif [ -d "$HOME/.local/bin" ] ; then PATH="$HOME/.local/bin:$PATH"; fi\n',
  );
  write(path.join(home, '.bashrc'), "# ~/.bashrc\ncase $- in\n  *i*) ;;\n  *) return;;\nesac\nalias ll='ls -l'\n");
  write(
    path.join(home, '.gitconfig'),
    '[user]\n\tname = Corpus\n\temail = corpus@example.invalid\n[init]\n\tdefaultBranch = main\n',
  );
  write(path.join(home, 'notes.txt'), 'home notes\n');

  // CODEX_HOME: the hook registration and the configuration with its trust entries.
  write(
    path.join(codexHome, 'hooks.json'),
    JSON.stringify(
      {
        hooks: {
          PreToolUse: [
            {
              matcher: 'Bash',
              hooks: [{ type: 'command', command: `node ${entry} hook codex --event PreToolUse`, timeout: 120 }],
            },
          ],
        },
        note: CANARY,
      },
      null,
      2,
    ) + '\n',
  );
  write(
    path.join(codexHome, 'config.toml'),
    `# ${CANARY}\n[features]\ncodex_hooks = true\n[hooks.state."latch"]\ntrusted_hash = "${CANARY}"\n`,
  );

  // LATCH_HOME: the store (a byte-for-byte SQLite header, then the canary) and the configuration.
  write(
    path.join(latchHome, 'latch.db'),
    Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(84), Buffer.from(`\nsessions: ${CANARY}\n`)]),
    0o600,
  );
  write(path.join(latchHome, 'config.toml'), `# latch config ${CANARY}\npolicy = "fail_closed"\n`, 0o600);
  chmodSync(latchHome, 0o700);

  // The fake installed Latch: both executables write a marker whenever they run; npm's bin link.
  write(entry, markerScript(markers, 'latch-entry-ran'), 0o755);
  write(bin, markerScript(markers, 'latch-bin-ran'), 0o755);
  mkdirSync(path.join(home, '.local', 'bin'), { recursive: true });
  symlinkSync('../lib/node_modules/agent-latch/bin/latch.cjs', path.join(home, '.local', 'bin', 'latch'));

  // A sibling directory nothing protects.
  write(path.join(r, 'other', 'a.txt'), 'other alpha\n');

  // The workspace: a git repository with one commit, a modified file, the project's .codex/ and
  // .latch.toml (untracked).
  write(path.join(ws, 'README.md'), '# Demo project\n\nThis is the README of the demo project.\n');
  write(path.join(ws, 'a.txt'), 'alpha\nbeta\ngamma\n');
  write(path.join(ws, 'b.txt'), 'alpha\nbeta\ngamma\n');
  write(path.join(ws, 'notes.md'), 'first note\nsecond note\n');
  write(path.join(ws, 'data.json'), '{"name": "demo", "items": [1, 2, 3]}\n');
  write(path.join(ws, 'src', 'main.ts'), "import { helper } from './util';\nexport const main = () => helper(1);\n");
  write(path.join(ws, 'src', 'util.ts'), 'export function helper(x: number): number {\n  return x + 1;\n}\n');
  write(path.join(ws, '.gitignore'), '*.log\n');
  const git = (...args: string[]): void => {
    const res = spawnSync('git', args, { cwd: ws, env: { ...GIT_BUILD_ENV, HOME: home }, encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`git ${args.join(' ')}: ${res.stderr}`);
  };
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial commit');
  write(path.join(ws, 'b.txt'), 'alpha\nBETA\ngamma\n');
  write(path.join(ws, '.codex', 'hooks.json'), '{"hooks": {}}\n');
  write(path.join(ws, '.codex', 'config.toml'), '# project codex config\n');
  write(path.join(ws, '.latch.toml'), 'policy = "fail_closed"\n');

  // Latch's own sandbox home (and its probe record) are made once, here, like a first latched read would.
  const sb = readOnlySandbox(latchHome, { LATCH_CODEX_BIN: CODEX_BIN }, SPAWN_SYNC);
  // Latch's sealed sandbox (bubblewrap + the pinned seccomp helper), probed the same way.
  const sealed = bwrapSandbox(latchHome, { PATH: BASE_PATH, HOME: home }, SPAWN_SYNC);
  const root: Root = {
    r,
    pristine: r + '.pristine',
    ws,
    home,
    codexHome,
    latchHome,
    markers,
    entry,
    bin,
    sandbox: sb.ok ? sb.sandbox : null,
    sandboxWhy: sb.ok ? 'ok' : sb.why,
    sealed: sealed.ok ? sealed : null,
    sealedWhy: sealed.ok ? 'ok' : sealed.why,
  };
  const cp = spawnSync('cp', ['-a', r, root.pristine], { encoding: 'utf8' });
  if (cp.status !== 0) throw new Error(`cp -a: ${cp.stderr}`);
  return root;
}

/** Restore the root from its pristine copy. */
export function resetRoot(root: Root): void {
  rmSync(root.r, { recursive: true, force: true, maxRetries: 3 });
  const cp = spawnSync('cp', ['-a', root.pristine, root.r], { encoding: 'utf8' });
  if (cp.status !== 0) throw new Error(`cp -a: ${cp.stderr}`);
}

export type Snapshot = Map<string, string>;

/** Every entry under dir: type, mode, size, content hash or symlink target (no times). */
export function snapshot(dir: string): Snapshot {
  const out: Snapshot = new Map();
  const walk = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch (err) {
      out.set(path.relative(dir, d) + '/', `unreadable:${(err as NodeJS.ErrnoException).code}`);
      return;
    }
    for (const name of names.sort()) {
      const p = path.join(d, name);
      const rel = path.relative(dir, p);
      let st: Stats;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      // Everything but atime: mode, owner, link count, mtime and ctime (a file created and removed
      // again, a `touch`, a chmod or a new hard link all show).
      const mode = `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} n${st.nlink} m${st.mtimeMs} c${st.ctimeMs}`;
      if (st.isDirectory()) {
        out.set(rel, `dir ${mode}`);
        walk(p);
      } else if (st.isSymbolicLink()) {
        out.set(rel, `symlink ${mode} -> ${readlinkSync(p)}`);
      } else if (st.isFile()) {
        let h = '?';
        try {
          h = createHash('sha256').update(readFileSync(p)).digest('hex').slice(0, 16);
        } catch (err) {
          h = `unreadable:${(err as NodeJS.ErrnoException).code}`;
        }
        out.set(rel, `file ${mode} ${st.size} ${h}`);
      } else {
        out.set(rel, `${st.isFIFO() ? 'fifo' : st.isSocket() ? 'socket' : 'special'} ${mode}`);
      }
    }
  };
  walk(dir);
  return out;
}

export function diffSnapshots(a: Snapshot, b: Snapshot): string[] {
  const out: string[] = [];
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined) out.push(`removed ${k} (${v})`);
    else if (w !== v) out.push(`changed ${k}: ${v} => ${w}`);
  }
  for (const [k, v] of b) if (!a.has(k)) out.push(`created ${k} (${v})`);
  return out;
}

export interface RunResult {
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  ms: number;
}

const BASE_PATH = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';

/** The environment Codex's shell would give a command in this root. */
export function runEnv(root: Root, tty: boolean): NodeJS.ProcessEnv {
  return {
    PATH: BASE_PATH,
    HOME: root.home,
    CODEX_HOME: root.codexHome,
    LATCH_HOME: root.latchHome,
    USER: 'root',
    LOGNAME: 'root',
    SHELL: '/bin/bash',
    LANG: 'C.UTF-8',
    TERM: tty ? 'xterm' : 'dumb',
  };
}

/**
 * The processes that belong to a scratch root: their working directory is inside it, or their
 * command line names it. pid_max is small here (32768) and a corpus run starts tens of thousands of
 * processes, so a process group id remembered from earlier may belong to someone else by now: only
 * processes found this way, right now, are ever signalled.
 */
function processesOf(scope: string, exceptGroups: ReadonlySet<number>): Array<{ pid: number; pgrp: number }> {
  const out: Array<{ pid: number; pgrp: number }> = [];
  let names: string[] = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^[0-9]+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (exceptGroups.has(pgrp)) continue;
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        cwd = '';
      }
      const inside = (p: string): boolean => p === scope || p.startsWith(scope + '/') || p.startsWith(scope + '.');
      if (
        inside(cwd) ||
        readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          .split('\0')
          .some((a) => a.includes(scope + '/') || inside(a))
      )
        out.push({ pid, pgrp });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** End every process of this root (but those of the given process groups, e.g. an armed background job). */
export function endProcessesOf(root: Root, exceptGroups: ReadonlySet<number> = new Set()): number {
  const found = processesOf(root.r, exceptGroups);
  for (const p of found) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  return found.length;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Run `command` as Codex runs a Bash call: `/bin/bash -lc <command>` in the workspace, stdin
 * /dev/null (or, with `tty`, on a pseudo-terminal made by script(1), typing `tty` into it after a
 * moment), in its own process group. Waits for the output to close (or the timeout), then up to
 * `settleMs` for background children, then ends every process of the root it left behind (but the
 * armed background jobs in `keepGroups`).
 */
export async function runShell(
  command: string,
  root: Root,
  o: { timeoutMs: number; settleMs: number; tty?: string; keepGroups?: ReadonlySet<number> },
): Promise<RunResult> {
  // execve cannot pass a NUL: the process sees the text up to the first one.
  const cmd = command.includes('\0') ? command.slice(0, command.indexOf('\0')) : command;
  const t0 = Date.now();
  const useTty = o.tty !== undefined;
  const child = useTty
    ? spawn('script', ['-qefc', `/bin/bash -lc ${shellQuote(cmd)}`, '/dev/null'], {
        cwd: root.ws,
        env: runEnv(root, true),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      })
    : spawn('/bin/bash', ['-lc', cmd], {
        cwd: root.ws,
        env: runEnv(root, false),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
  let stdout = '';
  let stderr = '';
  const cap = 256 * 1024;
  child.stdout!.on('data', (b: Buffer) => {
    if (stdout.length < cap) stdout += b.toString('utf8');
  });
  child.stderr!.on('data', (b: Buffer) => {
    if (stderr.length < cap) stderr += b.toString('utf8');
  });
  let timedOut = false;
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  const done = new Promise<{ status: number | null; signal: string | null }>((resolve) => {
    child.on('close', (status, signal) => resolve({ status, signal }));
    child.on('error', () => resolve({ status: null, signal: null }));
  });
  const keep = o.keepGroups ?? new Set<number>();
  const timer = setTimeout(() => {
    timedOut = true;
    // The leader is not reaped yet, so its process group id is still ours.
    if (!exited && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    endProcessesOf(root, keep);
  }, o.timeoutMs);
  let typer: NodeJS.Timeout | null = null;
  if (useTty) {
    child.stdin!.on('error', () => undefined);
    typer = setTimeout(() => {
      try {
        child.stdin!.write(o.tty!);
      } catch {
        // the command is gone already
      }
    }, 400);
  }
  const res = await done;
  clearTimeout(timer);
  if (typer) clearTimeout(typer);
  // Background children: a plain run's stay in its process group (signal 0 only asks whether the
  // group has members; what is signalled is found by processesOf); a terminal run's live in the
  // session script(1) made, so those are looked for by root.
  const groupLeft = (): boolean => {
    if (child.pid === undefined) return false;
    try {
      process.kill(-child.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (useTty || groupLeft()) {
    const until = Date.now() + o.settleMs;
    while (processesOf(root.r, keep).length > 0 && Date.now() < until) await sleep(25);
    endProcessesOf(root, keep);
  }
  if (useTty) child.stdin!.destroy();
  return { ...res, stdout, stderr, timedOut, ms: Date.now() - t0 };
}

/**
 * Run an arming step raw, as the still-mutable agent could have (`/bin/bash -c`, same environment),
 * in its own process group; returns that group's id so its background jobs can be ended later.
 */
export async function runArm(
  script: string,
  root: Root,
): Promise<{ pgid: number; status: number | null; stderr: string }> {
  const child = spawn('/bin/bash', ['-c', script], {
    cwd: root.ws,
    env: { ...runEnv(root, false), ...GIT_BUILD_ENV, HOME: root.home },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => {
    if (stderr.length < 8192) stderr += b.toString('utf8');
  });
  const status = await new Promise<number | null>((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.on('error', () => resolve(null));
  });
  return { pgid: child.pid!, status, stderr };
}
