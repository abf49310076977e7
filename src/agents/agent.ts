// The agent port: everything Latch needs from one coding agent. The core (guard, ledger, continuity,
// session, tree, store, shell) knows only this file's types; each agent implements it in its own
// folder (src/agents/<name>/) and is listed once in src/agents/index.ts.
//
// Hot parts (payloads, replies, tools, the transcript scan, the sandbox) are plain members: they run in
// every hook. Slow parts (brief capture, resume qualification, unwrapping a tool output) load on first use
// through `slow()`, and the commands' parts (setup, uninstall, doctor checks) through `commands()`, so
// the hook bundle stays small.
import type { Io } from '../kit/io.js';
import type { Check } from '../kit/checks.js';
import type { Decision, LatchEvent, Observation, ToolCall } from '../guard/events.js';
import type { ProtectedPath } from '../guard/held.js';
import type { TranscriptReader } from '../session/transcript.js';
import type { CaptureOptions, TranscriptCapture } from '../continuity/capture.js';
import type { QualifyDecision, QualifyInput } from '../continuity/qualify.js';

export type AgentName = 'codex' | 'claude';

/** One reply to the agent: JSON for stdout (null: print nothing), the exit code, and a stderr line. */
export interface HookReply {
  stdout: string | null;
  exitCode: 0 | 2;
  stderr?: string;
}

export type ParsedHook =
  | { ok: true; eventName: string; obs: Observation; event: LatchEvent | null }
  | { ok: false; error: string; eventName: string | null; toolName: string | null };

/** The agent's read-only sandbox on this machine, or why there is none. */
export type ReadSandbox =
  | {
      ok: true;
      /** The command line that runs `command` (a clean read shell) inside the sandbox. */
      wrap(command: string): string;
      /**
       * The same as a process the hook itself starts (outside the agent's own sandbox, where a nested
       * one could not start): program, arguments and environment; no shell parses them.
       */
      argv(command: string, env: NodeJS.ProcessEnv, hide: readonly string[]): SandboxedProcess;
      /**
       * The sandbox hides what `hide` names (Latch's home, the agent's registration...): whatever runs
       * inside can neither change nor see it, so the held-read rules may admit any command that states
       * no write (src/guard/held.ts). Unsealed, only the strict allowlist's reads run.
       */
      sealed: boolean;
      where: string;
    }
  | { ok: false; why: string };

/** A process to spawn: the read inside the sandbox. */
export interface SandboxedProcess {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export type Spawn = (bin: string, args: string[], env: NodeJS.ProcessEnv) => { status: number | null; stderr: string };

/** What reading one tool output tells: the command's own output, or why it is not a clean, whole one. */
export type ToolOutput = { ok: true; body: string } | { ok: false; body: string | null; problems: string[] };

export interface AgentSlow {
  /** What the transcript says about the task (requests, plan, last message), for the brief. */
  capture(path: string, opts?: CaptureOptions): TranscriptCapture;
  /**
   * Native or full brief for a resuming session, with every check and its evidence. The writer
   * allowlist is the agent's own (Codex: the qualified releases recorded under `latchHome`).
   */
  qualifyResume(input: Omit<QualifyInput, 'qualifiedVersions'>, latchHome: string): QualifyDecision;
  /** A tool output as the transcript records it, unwrapped: the agent's half of the page-read rule. */
  toolOutput(output: string): ToolOutput;
}

/** What continuity needs of an agent: its slow parts, loaded. */
export type AgentParts = AgentSlow;

/**
 * Which processes are the agent, and which are its sandbox: what containment (the nearest agent among
 * a hook's ancestors) and `latch verify`'s ancestry check recognise. Plain data, in a module of the
 * agent's own that imports nothing else (`src/agents/<name>/processes.ts`): the registry lists every
 * agent's without loading the agent (src/agents/index.ts).
 */
export interface AgentProcesses {
  /** Executable basenames (of /proc/PID/exe) that are the agent. */
  readonly exes: readonly RegExp[];
  /** Whole executable paths that are the agent (a native build installed under a versions directory). */
  readonly exePaths: readonly RegExp[];
  /** Scripts that make a node or bun process the agent (its first argument that is not an option). */
  readonly scripts: readonly RegExp[];
  /** Executable basenames of the sandboxes the agent runs its commands in. */
  readonly sandboxes: readonly RegExp[];
}

/** What `latch setup|uninstall <agent>` and `latch doctor` hand an agent. */
export interface AgentCommandOptions {
  /** --project DIR: the project's configuration instead of the user's. */
  project?: string;
  /** --dry-run (setup, uninstall): show what would be written; write nothing. */
  dryRun?: boolean;
  /** --json (setup, uninstall), for an agent that takes it. */
  json?: boolean;
  /** Bound for each child process a doctor check runs. */
  timeoutMs?: number;
  /**
   * The agent's own options, by name (Codex: `codex-home`, `trust`; Claude Code: `claude-managed-settings`,
   * for tests). Each agent reads only its own, and checks their types.
   */
  flags?: Readonly<Record<string, string | boolean | undefined>>;
}

/** An agent's part of `latch doctor` (without FILE): its configuration read, its checks not yet run. */
export interface AgentDoctor {
  /** Latch is in the agent's configuration (checked by default, without --agent). */
  readonly installed: boolean;
  /** The command that installs Latch for the agent: the fix the shared checks name. */
  readonly setupFix: string;
  /** The agent's own checks (its handlers, hook command, trust, version). */
  checks(): Promise<Check[]>;
  /**
   * Its checks after the shared store and watcher checks (reads while held, the registration
   * fingerprint). When another agent leads the report, they follow this agent's own checks, and a
   * name already in the report is left out.
   */
  afterShared(): Promise<Check[]>;
}

/** The agent's commands: `latch setup|uninstall <agent>` and its `latch doctor` checks. */
export interface AgentCommands {
  /** The options of `latch setup|uninstall <agent>` it takes, by command-line name; any other is refused. */
  readonly setupFlags: readonly string[];
  setup(io: Io, opts: AgentCommandOptions): Promise<number>;
  uninstall(io: Io, opts: AgentCommandOptions): Promise<number>;
  doctor(io: Io, opts: AgentCommandOptions): Promise<AgentDoctor>;
}

export interface Agent {
  readonly name: AgentName;
  /** As people write it: `Codex`. */
  readonly title: string;

  /** One hook payload (stdin) → the observation and event; never throws. */
  parse(stdin: string): ParsedHook;
  /** The agent's reply to `eventName` for a decision. */
  reply(eventName: string, d: Decision): HookReply;
  /** The agent's deny reply for a tool call (`notice`: for the human, when the agent can show one). */
  deny(reason: string, notice?: string): HookReply;
  /** What a tool call is: tracked kind, command, the paths a patch names. */
  classifyTool(name: string, input: unknown, toolUseId: string | null): ToolCall;

  /** The agent's own hook registration and configuration, which no tool call may reach. */
  registrationPaths(env: NodeJS.ProcessEnv, cwd: string): ProtectedPath[];
  /**
   * Environment variables the agent sets to the session's id in every process a tool call of it
   * starts (Codex 0.171: CODEX_THREAD_ID; Claude Code 2.1.332: CLAUDE_CODE_SESSION_ID). Containment
   * signals an orphan only when it carries one of them with the id of a session whose tool call was
   * running when it started: a process without the mark is listed, never killed.
   */
  readonly sessionMarks: readonly string[];
  /** Which processes are the agent and its sandbox (the same object the registry lists: `agentProcesses()`). */
  readonly processes: AgentProcesses;
  /** The agent's read-only sandbox (probed once per binary; `spawn` runs the probe). */
  readSandbox(latchHome: string, env: NodeJS.ProcessEnv, spawn: Spawn): ReadSandbox;
  /** Is `text` a read Latch rewrote (so a transcript's command is recognised as a held read)? */
  isRewrittenRead(text: string): boolean;
  /**
   * Optional: makes what the agent itself runs around a held read safe before it is allowed (Claude
   * Code sources shell snapshots outside any wrapper). Null when done; else why not (the read is denied).
   */
  prepareHeldRead?(env: NodeJS.ProcessEnv): string | null;

  readonly transcript: TranscriptReader;
  /** The slow parts, loaded on first use. */
  slow(): Promise<AgentSlow>;
  /** The commands' parts (setup, uninstall, doctor checks), loaded on first use; never by a hook. */
  commands(): Promise<AgentCommands>;
}
