// What the two demo stories share (`latch demo codex`, `latch demo claude`): the git workspace they
// build, the in-process commands' captured output, and the story lines read from `latch status --json`
// and the workspace itself.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError, EXIT } from '../../base/errors.js';
import { snapshotTree } from '../../tree/snapshot.js';
import type { Io } from '../../kit/io.js';
import type { status } from '../status.js';
import type { verify } from '../verify.js';

/**
 * The commands the demo runs in process, as a human would type them: handed in by the CLI (no command
 * imports another).
 */
export interface DemoCommands {
  status: typeof status;
  verify: typeof verify;
}

export interface DemoOptions {
  commands: DemoCommands;
  keep?: boolean;
  json?: boolean;
  /** Where to build the demo (a fresh temp dir by default). */
  dir?: string;
}

/** What one agent's part of the demo found: whether the story held, and its --json object. */
export interface DemoPart {
  ok: boolean;
  json: Record<string, unknown>;
}

/** A session as `latch status --json` reports it (the fields the story prints). */
export interface DemoSession {
  session_id: string;
  agent?: string;
  state: string;
  denials: number;
  checkpoints: { id: string; observed_via: string[]; tree: { sha256: string; files: number } }[];
  reason: string | null;
}

export interface DemoStatus {
  sessions: DemoSession[];
  reads?: { guard: string; detail: string };
}

/** An Io whose output (out and err) is kept instead of printed; never interactive. */
export function capture(io: Io): { io: Io; text: () => string } {
  let buf = '';
  return { io: { ...io, out: (t) => (buf += t), err: (t) => (buf += t), interactive: false }, text: () => buf };
}

/** One story line, unless the demo prints --json. */
export function teller(io: Io, opts: Pick<DemoOptions, 'json'>): (text: string) => void {
  return (t) => {
    if (!opts.json) io.out(t + '\n');
  };
}

export function git(cwd: string, args: string[]): void {
  execFileSync('git', args, { cwd, stdio: 'ignore' });
}

/** The demo builds a git workspace: `git` must be on the PATH (checked before anything is created). */
export function requireGit(): void {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new ExitError(
      EXIT.failure,
      'the demo builds a git workspace and needs `git` on the PATH; install git and run it again',
    );
  }
}

/** A fresh git repository with one committed README.md. */
export function initDemoWorkspace(work: string): void {
  git(work, ['init', '-q', '-b', 'main']);
  writeFileSync(join(work, 'README.md'), '# demo project\n');
  git(work, ['add', '.']);
  git(work, [
    '-c',
    'user.name=demo',
    '-c',
    'user.email=demo@example.invalid',
    '-c',
    'commit.gpgsign=false',
    'commit',
    '-qm',
    'init',
  ]);
}

/** `latch status --json` of the workspace, run in-process. */
export async function demoStatus(sub: Io, work: string, commands: DemoCommands): Promise<DemoStatus> {
  const st = capture(sub);
  await commands.status(st.io, { cwd: work, json: true });
  return JSON.parse(st.text()) as DemoStatus;
}

/** The session, its checkpoint and the tree digest now against the checkpoint's. */
export function sessionStory(
  say: (t: string) => void,
  session: DemoSession | undefined,
  work: string,
): { equal: boolean; now: { sha256: string; files: number } } {
  const cp = session?.checkpoints[0];
  const now = snapshotTree(work);
  const equal = cp?.tree.sha256 === now.sha256;
  say(`   session ${session?.session_id}: ${session?.state}`);
  say(`   checkpoint ${cp?.id} observed via ${cp?.observed_via.join(' + ')}`);
  say(
    `   tree at checkpoint ${cp?.tree.sha256.slice(0, 16)}… (${cp?.tree.files} files); now ${now.sha256.slice(0, 16)}… (${now.files} files): ${equal ? 'EQUAL' : 'DIFFERENT'}`,
  );
  return { equal, now: { sha256: now.sha256, files: now.files } };
}

/** A denial as the model received it, on one line. */
export function quoteDenial(say: (t: string) => void, text: string | undefined): void {
  if (text) say(`     "${text.slice(0, 220).replace(/\s+/g, ' ')}…"`);
}

/** Step 3 of both stories: `latch verify --yes`, run in-process (a plain process tree: the demo's). */
export async function verifyStep(
  say: (t: string) => void,
  sub: Io,
  work: string,
  n: number,
  commands: DemoCommands,
): Promise<number> {
  say(`${n}. A human runs \`latch verify --yes\`:`);
  const ver = capture(sub);
  const code = await commands.verify(ver.io, { cwd: work, yes: true });
  for (const line of ver.text().trimEnd().split('\n')) say(`   ${line}`);
  return code;
}

/** A file's text, or '' when it does not exist. */
export function fileText(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** The story's last line. */
export function conclusion(say: (t: string) => void, ok: boolean, opts: DemoOptions, base: string, extra: string) {
  say(
    ok
      ? '\nThe latch held across the compaction and was released only by verification.'
      : '\nDemo did NOT behave as expected (see above).',
  );
  if (opts.keep) say(`Kept ${base} (${extra}).`);
}
