// The command surface, declared in one place. Each command lazy-loads its module.
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitError, EXIT, isLatchError } from './base/errors.js';
import { processIo, type Io } from './kit/io.js';
import type { AgentCommandOptions, AgentCommands } from './agents/agent.js';
import { AGENT_NAMES, isAgentName, loadAgent } from './agents/index.js';
import { removeDeadGroupsHere } from './contain/cgroup.js';
import { addonHint } from './store/addon.js';

// The agents' commands parts (light: each loads its module on first use), exported by the commands'
// bundle as src/slow.ts exports their slow parts (src/agents/commands-parts.ts).
export * from './agents/commands-parts.js';

type Options = NonNullable<ParseArgsConfig['options']>;

interface Command {
  usage: string;
  summary: string;
  options: Options;
  positionals?: boolean;
  run(io: Io, values: Record<string, string | boolean | undefined>, positionals: string[]): Promise<number>;
}

const cwdOpt = { cwd: { type: 'string' } } as const;
const sessionOpt = { session: { type: 'string' } } as const;
const jsonOpt = { json: { type: 'boolean' } } as const;
const homeOpts = { 'codex-home': { type: 'string' }, project: { type: 'string' } } as const;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `unknown agent`: the names Latch has, for a message. */
const knownAgents = () => AGENT_NAMES.join(' or ');

/**
 * The commands of the agent a setup/uninstall is for (`latch setup <agent>`), loaded through the
 * registry, with only the options that agent takes.
 */
async function setupAgent(
  positionals: string[],
  values: Record<string, string | boolean | undefined>,
  cmd: string,
): Promise<AgentCommands> {
  const { usage, options } = COMMANDS[cmd]!;
  if (positionals.length !== 1) throw new ExitError(EXIT.usage, `usage: ${usage}`);
  const agent = await loadAgent(positionals[0]);
  if (!agent)
    throw new ExitError(EXIT.usage, `unknown agent \`${positionals[0]}\`: expected ${knownAgents()}\nusage: ${usage}`);
  const commands = await agent.commands();
  const wrong = Object.keys(options).find((o) => values[o] !== undefined && !commands.setupFlags.includes(o));
  if (wrong)
    throw new ExitError(EXIT.usage, `--${wrong} is not an option of \`latch ${cmd} ${agent.name}\`\nusage: ${usage}`);
  return commands;
}

/** What `latch setup|uninstall <agent>` hands the agent: the shared options; its own by name. */
function setupOptions(values: Record<string, string | boolean | undefined>): AgentCommandOptions {
  return {
    project: str(values.project),
    dryRun: values['dry-run'] === true,
    json: values.json === true,
    flags: values,
  };
}

export const COMMANDS: Record<string, Command> = {
  setup: {
    usage:
      'latch setup codex [--codex-home DIR] [--project DIR] [--trust] [--dry-run] | latch setup claude [--project DIR] [--dry-run] [--json]',
    summary:
      "Install Latch's hook handlers, idempotently, keeping every other hook and setting. codex: into Codex's hooks.json (user or project); --trust also records Codex's trust for exactly Latch's handlers (the hash the real `codex` reports, written as [hooks.state] entries of $CODEX_HOME/config.toml; no other entry touched), so Codex runs them without a /hooks review. claude: into Claude Code's settings.json ($CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json; --project DIR: DIR/.claude/settings.json), every tool's PreToolUse wrapped fail-closed. --dry-run shows what it would write.",
    options: { ...homeOpts, ...jsonOpt, 'dry-run': { type: 'boolean' }, trust: { type: 'boolean' } },
    positionals: true,
    async run(io, v, p) {
      return (await setupAgent(p, v, 'setup')).setup(io, setupOptions(v));
    },
  },
  uninstall: {
    usage:
      'latch uninstall codex [--codex-home DIR] [--project DIR] [--dry-run] | latch uninstall claude [--project DIR] [--dry-run] [--json]',
    summary: "Remove only Latch's handlers from Codex's hooks.json or Claude Code's settings.json.",
    options: { ...homeOpts, ...jsonOpt, 'dry-run': { type: 'boolean' } },
    positionals: true,
    async run(io, v, p) {
      const code = await (await setupAgent(p, v, 'uninstall')).uninstall(io, setupOptions(v));
      // The empty cgroups Latch made for agents that have exited, in this shell's cgroup
      // (src/contain/cgroup.ts): nothing of Latch's stays behind there.
      if (!v['dry-run']) removeDeadGroupsHere();
      return code;
    },
  },
  doctor: {
    usage:
      'latch doctor [FILE] [--agent codex|claude] [--codex-home DIR] [--project DIR] [--json] [--full] | latch doctor --repair [--json]',
    summary:
      "Without FILE: check the installation (hooks installed and trusted, binary, Codex version, store health; Claude Code's settings, hook command and version when Latch is in them, or with --agent claude; --agent codex: Codex only). Exit 0 no check failed, 1 one did. " +
      '--repair: when the store is corrupt (not a SQLite file, a failed quick_check, a schema this Latch cannot migrate or does not know), move it and its -wal/-shm aside to latch.db.corrupt-<time> in the same directory (kept as evidence, never deleted) and start a fresh store in which every session it has not seen starts latched at its next hook until a human runs `latch verify` (a session provably started after the repair is not); it only ever restricts, and checks nothing else. ' +
      "Exit 0 repaired, or the store is healthy (nothing moved, said so); 1 no store, or one it does not move (locked, unreadable, a symlink: said why). --json: {ok, repair: {status: repaired|healthy|missing|refused, store (the fresh store's path), problem, evidence: [{from, to, bytes}], repaired_at, holders} or {status, store, detail}}. " +
      "With FILE: fsck a Codex rollout (.jsonl or .jsonl.zst), a captured app-server stream or a Claude Code transcript (recognised from its first lines; --agent claude|codex chooses), cross-checked with the Latch store. Exit codes with FILE: 0 healthy (no finding); 1 damage (an ERROR: the file is damaged or contradicts Latch's record; or a WARN: something a healthy Codex does not write); 2 unreadable; 3 healthy but written by a Codex release Latch has not qualified (NOTE findings only: age, not damage; `latch qualify codex VERSION` qualifies it). The most serious applies (2, 1, 3, 0). A Claude Code transcript: 0, 1 or 2 (Latch qualifies no Claude Code release, so 3 does not apply).",
    options: {
      ...homeOpts,
      ...jsonOpt,
      full: { type: 'boolean' },
      agent: { type: 'string' },
      repair: { type: 'boolean' },
    },
    positionals: true,
    async run(io, v, p) {
      const agent = str(v.agent);
      if (agent !== undefined && !isAgentName(agent))
        throw new ExitError(EXIT.usage, `--agent ${agent}: expected ${knownAgents()}`);
      if (p.length > 1) throw new ExitError(EXIT.usage, 'usage: latch doctor [FILE] [--json] [--full]');
      if (v.repair === true) {
        const other = ['agent', 'codex-home', 'project', 'full'].find((o) => v[o] !== undefined);
        if (p.length > 0 || other)
          throw new ExitError(
            EXIT.usage,
            `--repair ${p.length > 0 ? 'takes no FILE' : `does not take --${other}`}: it repairs the store only\nusage: latch doctor --repair [--json]`,
          );
        const { doctor } = await import('./commands/doctor.js');
        return doctor(io, { repair: true, json: v.json === true });
      }
      if (p.length === 1) {
        // A Claude Code transcript (sniffed from its first lines, or --agent claude) has its own doctor.
        const { claudeTranscriptDoctor, sniffTranscriptFormat } = await import('./agents/claude/doctor-file.js');
        const file = resolve(io.cwd, p[0]!);
        if (agent === 'claude' || (agent === undefined && sniffTranscriptFormat(file) === 'claude'))
          return claudeTranscriptDoctor(io, { file, json: v.json === true });
        const { transcriptDoctor } = await import('./agents/codex/fsck/command.js');
        return transcriptDoctor(io, { file: p[0]!, json: v.json === true, full: v.full === true });
      }
      const { doctor } = await import('./commands/doctor.js');
      return doctor(io, { codexHome: str(v['codex-home']), project: str(v.project), json: v.json === true, agent });
    },
  },
  qualify: {
    usage:
      'latch qualify codex [VERSION | --codex PATH] [--install] [--json] [--keep] [--timeout SECONDS] [--retries N]',
    summary:
      "Qualify a Codex release on this machine: drive the real binary (PATH's codex, --codex PATH, or VERSION from Latch's cache; --install fetches it with npm into $LATCH_HOME/cache/codex/VERSION) over a loopback fake model through the hook, deny, compaction, resume, fork, brief and rollout checks, and write the record to $LATCH_HOME/qualified/VERSION.json. Only a record whose every check passed qualifies the version for native resume. A run in which a step ran out of time (each `codex exec` gets --timeout SECONDS, default 180) is inconclusive, not failed: it runs again (--retries N, default 1) and, if still inconclusive, nothing is recorded. Exit 0 all passed, 1 a check failed (named), 2 usage or binary not found, 75 inconclusive.",
    options: {
      ...jsonOpt,
      codex: { type: 'string' },
      install: { type: 'boolean' },
      keep: { type: 'boolean' },
      timeout: { type: 'string' },
      retries: { type: 'string' },
    },
    positionals: true,
    async run(io, v, p) {
      const usage =
        'usage: latch qualify codex [VERSION | --codex PATH] [--install] [--json] [--keep] [--timeout SECONDS] [--retries N]';
      if (p[0] !== 'codex' || p.length > 2) throw new ExitError(EXIT.usage, usage);
      const count = (name: string, min: number): number | undefined => {
        const raw = str(v[name]);
        if (raw === undefined) return undefined;
        const n = Number(raw);
        if (!/^\d+$/.test(raw) || n < min || n > 10_000)
          throw new ExitError(
            EXIT.usage,
            `--${name} wants a whole number from ${min} to 10000, not ${JSON.stringify(raw)}`,
          );
        return n;
      };
      const timeout = count('timeout', 1);
      const retries = count('retries', 0);
      const { qualifyCodex } = await import('./commands/qualify.js');
      return qualifyCodex(io, {
        version: p[1],
        codex: str(v.codex),
        json: v.json === true,
        install: v.install === true,
        keep: v.keep === true,
        timeoutMs: timeout === undefined ? undefined : timeout * 1000,
        retries,
      });
    },
  },
  status: {
    usage: 'latch status [--cwd DIR] [--session ID] [--json]',
    summary: 'Show sessions, their authority state, checkpoints and reasons.',
    options: { ...cwdOpt, ...sessionOpt, ...jsonOpt },
    async run(io, v) {
      const { status } = await import('./commands/status.js');
      return status(io, { cwd: str(v.cwd), session: str(v.session), json: v.json === true });
    },
  },
  verify: {
    usage: 'latch verify [--cwd DIR] [--session ID] [--yes] [--accept-changes] [--json]',
    summary:
      "Show, per latched session, what the agent was doing and its next step (its task brief), the workspace's changes since the checkpoint (git diff --stat form) and the processes from its calls still running; check the evidence and, with human confirmation (type back the code shown on the terminal, or --yes), restore authority. --accept-changes accepts the listed differences: later verifies of the session compare with that tree. Refused when run by a process of the agent (its descendants, sandbox, or a job it started). Exit 0 restored, 65 evidence does not hold, 2 no confirmation, 77 refused: not a human.",
    options: {
      ...cwdOpt,
      ...sessionOpt,
      ...jsonOpt,
      yes: { type: 'boolean', short: 'y' },
      'accept-changes': { type: 'boolean' },
    },
    async run(io, v) {
      const { verify } = await import('./commands/verify.js');
      return verify(io, {
        cwd: str(v.cwd),
        session: str(v.session),
        yes: v.yes === true,
        json: v.json === true,
        acceptChanges: v['accept-changes'] === true,
      });
    },
  },
  resume: {
    usage: 'latch resume [--cwd DIR] [--session ID] [--yes] [--json]',
    summary:
      'Lift a pause (policy `pause`), with human confirmation (the code shown on the terminal, or --yes); refused when run by a process of the agent (exit 77). A fail_closed latch needs `latch verify`.',
    options: { ...cwdOpt, ...sessionOpt, ...jsonOpt, yes: { type: 'boolean', short: 'y' } },
    async run(io, v) {
      const { resume } = await import('./commands/verify.js');
      return resume(io, { cwd: str(v.cwd), session: str(v.session), json: v.json === true, yes: v.yes === true });
    },
  },
  log: {
    usage: 'latch log [--cwd DIR] [--session ID] [--json]',
    summary:
      'The mutation-attempt timeline with files changed, compactions, latch transitions and denials interleaved.',
    options: { ...cwdOpt, ...sessionOpt, ...jsonOpt },
    async run(io, v) {
      const { log } = await import('./commands/ledger.js');
      return log(io, { cwd: str(v.cwd), session: str(v.session), json: v.json === true });
    },
  },
  blame: {
    usage: 'latch blame PATH [--cwd DIR] [--json]',
    summary: 'Every recorded change to PATH, newest first, with the attempt, session, turn, tool and attribution.',
    options: { ...cwdOpt, ...jsonOpt },
    positionals: true,
    async run(io, v, p) {
      if (p.length !== 1) throw new ExitError(EXIT.usage, 'usage: latch blame PATH [--cwd DIR] [--json]');
      const { blame } = await import('./commands/ledger.js');
      return blame(io, { path: p[0]!, cwd: str(v.cwd), json: v.json === true });
    },
  },
  brief: {
    usage:
      'latch brief show [--session ID] [--cwd DIR] [--json] | latch brief set --file F [--session ID] [--cwd DIR] | latch brief --page N [--session ID] [--cwd DIR]',
    summary:
      "The session's task brief: show it, set it (a human: markdown sections or JSON), or print page N (the agent reads every page after a compaction).",
    options: { ...cwdOpt, ...sessionOpt, ...jsonOpt, file: { type: 'string' }, page: { type: 'string' } },
    positionals: true,
    async run(io, v, p) {
      const usage =
        'usage: latch brief show [--session ID] [--cwd DIR] [--json] | latch brief set --file F [--session ID] [--cwd DIR] | latch brief --page N [--session ID] [--cwd DIR]';
      const m = await import('./commands/brief.js');
      const target = { cwd: str(v.cwd), session: str(v.session) };
      if (v.page !== undefined) {
        if (p.length !== 0 || v.file !== undefined || v.json === true) throw new ExitError(EXIT.usage, usage);
        return m.briefPage(io, { ...target, page: String(v.page) });
      }
      if (p.length === 1 && p[0] === 'show' && v.file === undefined)
        return m.briefShow(io, { ...target, json: v.json === true });
      if (p.length === 1 && p[0] === 'set' && typeof v.file === 'string' && v.json !== true)
        return m.briefSet(io, { ...target, file: v.file });
      throw new ExitError(EXIT.usage, usage);
    },
  },
  report: {
    usage: 'latch report [--cwd DIR] [--session ID] (--html FILE | --markdown [--out FILE] | --json)',
    summary:
      'The story of the sessions for people: a three-line summary first (compactions and whether a session is latched now; writes blocked, and writes that ran while latched, in red; verifications and who confirmed), ' +
      'the attempts on Latch itself, the blocked calls grouped by reason (each reason once), the writes that ran (before the trip, while latched, after verification) apart from the reads; ' +
      'then the evidence. --html FILE: one self-contained HTML file (also the timeline and a per-file view); --markdown: short enough for a pull-request comment (long lists end in "…and N more"). ' +
      '--json: the same data for programs, one JSON object on stdout, every key always present: {format: "latch/report@1", workspace, generated_at, version, ' +
      'selected: [session id] or null (the whole workspace), agents: [agent name ("codex", "claude"), first seen first], ' +
      'summary: {compactions, trips, latched_now, held_sessions, writes_blocked, writes, writes_while_latched, reads, verifications, verified: [{session_id, at, confirmed_by, how, tree_unchanged, accepted_changes}], resumes}, ' +
      'blocked: [{reasons, count, sessions, calls: [{session_id, at, turn_id, tool, summary, detail}]}], ' +
      'writes: [{attempt_id, session_id, at, ended_at, tool, summary, state, kind, files, phase: before_trip|while_latched|after_verify|after_resume, latched_how}], ' +
      'reads: [{attempt_id, session_id, at, tool, summary, how: brief_page|held|read_only, page, phase}], ' +
      'sessions: [as `latch status --json`, each with its agent], entries: [the timeline as `latch log --json`, a transition with its evidence], ' +
      'transitions: [{session_id, at, event, from, to, evidence}], checkpoints: [{id, session_id, compaction_seq, created_at, tree_sha256, tree_files, git_head, git_branch}], ' +
      'files: [every recorded change, newest first, as `latch blame --json` plus id]}.',
    options: {
      ...cwdOpt,
      ...sessionOpt,
      ...jsonOpt,
      html: { type: 'string' },
      markdown: { type: 'boolean' },
      out: { type: 'string', short: 'o' },
    },
    async run(io, v) {
      const { report } = await import('./commands/report/index.js');
      return report(io, {
        cwd: str(v.cwd),
        session: str(v.session),
        html: str(v.html),
        markdown: v.markdown === true,
        out: str(v.out),
        json: v.json === true,
      });
    },
  },
  export: {
    usage: 'latch export agent-trace [--cwd DIR] [--session ID]',
    summary: 'Print the recorded attribution as an Agent Trace record (JSON, spec v0.1.0).',
    options: { ...cwdOpt, ...sessionOpt },
    positionals: true,
    async run(io, v, p) {
      if (p.length !== 1 || p[0] !== 'agent-trace')
        throw new ExitError(EXIT.usage, 'usage: latch export agent-trace [--cwd DIR] [--session ID]');
      const { exportAgentTrace } = await import('./commands/export.js');
      return exportAgentTrace(io, { cwd: str(v.cwd), session: str(v.session) });
    },
  },
  exec: {
    usage: 'latch exec [--cwd DIR] -- CMD [ARGS...]',
    summary: 'Run CMD unless the workspace has a latched session (then exit 73 without running it).',
    options: { ...cwdOpt },
    positionals: true,
    async run(io, v, p) {
      const { execGuarded } = await import('./commands/exec.js');
      return execGuarded(io, { cwd: str(v.cwd), command: p });
    },
  },
  watch: {
    usage: 'latch watch [status|stop] [--cwd DIR | --all] [--json]',
    summary:
      'List the workspace watchers (which let a Close stat only the paths that changed) or stop them; hooks start them.',
    options: { ...cwdOpt, ...jsonOpt, all: { type: 'boolean' } },
    positionals: true,
    async run(io, v, p) {
      const { watch } = await import('./commands/watch.js');
      return watch(io, { action: p[0] ?? 'status', cwd: str(v.cwd), all: v.all === true, json: v.json === true });
    },
  },
  demo: {
    usage: 'latch demo [codex|claude|all] [--keep] [--json]',
    summary:
      'Run a real agent session over a loopback fake model across an auto-compaction and show the latch at work: codex (`codex exec`), claude (`claude -p`), or all (the default: Codex, then Claude Code). An agent that is not installed is named with what to install (exit 1).',
    options: { keep: { type: 'boolean' }, ...jsonOpt },
    positionals: true,
    async run(io, v, p) {
      const agent = p[0] ?? 'all';
      if (p.length > 1 || (agent !== 'codex' && agent !== 'claude' && agent !== 'all'))
        throw new ExitError(EXIT.usage, 'usage: latch demo [codex|claude|all] [--keep] [--json]');
      const [{ demo }, { status }, { verify }] = await Promise.all([
        import('./commands/demo/index.js'),
        import('./commands/status.js'),
        import('./commands/verify.js'),
      ]);
      return demo(io, { agent, keep: v.keep === true, json: v.json === true, commands: { status, verify } });
    },
  },
};

function help(io: Io): number {
  const lines = [
    'latch: a fail-closed compaction latch for coding agents (Codex, Claude Code)',
    '',
    'Usage:',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage}\n      ${c.summary}`),
    '  latch hook codex|claude --event NAME   (run by the agent; reads a hook payload on stdin)',
    '',
    'State: $LATCH_HOME (default ${XDG_STATE_HOME:-~/.local/state}/latch).',
    'Run `latch COMMAND --help` for one command.',
    '',
  ];
  io.out(lines.join('\n'));
  return EXIT.ok;
}

export async function cliMain(argv: string[], io: Io = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') return help(io);
  if (name === '__watch' && rest.length === 1) {
    // The workspace watcher process a hook starts (src/watch/client.ts); not a user command.
    const { runWatcher } = await import('./watch/daemon.js');
    const { latchHome } = await import('./base/paths.js');
    const code = await runWatcher({ home: latchHome(io.env), root: rest[0]! });
    process.exit(code); // nothing it leaves behind may keep a stopped watcher alive
  }
  if (name === '__serve' && rest.length === 1) {
    // The resident hook a hook starts (src/resident/); not a user command.
    const { runResident } = await import('./resident/server.js');
    const { loadAgent } = await import('./agents/index.js');
    const agent = await loadAgent(rest[0]!);
    process.exit(agent ? await runResident(agent, io.env) : EXIT.usage);
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    io.out(`${VERSION}\n`);
    return EXIT.ok;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    io.err(`latch: unknown command \`${name}\`\n\n`);
    help({ ...io, out: io.err });
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(`usage: ${cmd.usage}\n\n${cmd.summary}\n`);
    return EXIT.ok;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: cmd.options, allowPositionals: cmd.positionals ?? false, strict: true });
  } catch (err) {
    io.err(`latch ${name}: ${(err as Error).message}\nusage: ${cmd.usage}\n`);
    return EXIT.usage;
  }
  try {
    return await cmd.run(io, parsed.values as Record<string, string | boolean | undefined>, parsed.positionals);
  } catch (err) {
    if (isLatchError(err, 'E_EXIT')) {
      io.err(`latch ${name}: ${err.message}\n`);
      return err.exitCode;
    }
    if (isLatchError(err, 'E_STORE') || isLatchError(err, 'E_CONFIG')) {
      io.err(`latch ${name}: ${err.message}\n${addonHint(err.message)}`);
      return EXIT.failure;
    }
    return unexpected(io, name, err);
  }
}

/**
 * An error no command turned into a message: one line (the stack only with LATCH_DEBUG=1). A stack
 * trace would be noise to a user, and its frames name where the bundles were compiled (the V8 code
 * caches keep the build machine's file names).
 */
function unexpected(io: Io, name: string, err: unknown): number {
  const e = err as { message?: unknown; code?: unknown; stack?: unknown; syscall?: unknown } | null;
  const msg = (typeof e?.message === 'string' ? e.message : String(err)).split('\n')[0];
  if (typeof e?.code === 'string' && typeof e.syscall === 'string' && /^E[A-Z]+$/.test(e.code)) {
    // The system refused a file or process operation (a path given that does not exist, permissions).
    io.err(`latch ${name}: ${msg}\n`);
    return EXIT.failure;
  }
  const code = typeof e?.code === 'string' ? ` [${e.code}]` : '';
  io.err(`latch ${name}: unexpected error${code}: ${msg}\n`);
  if (io.env.LATCH_DEBUG === '1' && typeof e?.stack === 'string') io.err(`${e.stack}\n`);
  else io.err('This is a bug in Latch; run again with LATCH_DEBUG=1 for the stack trace, and please report it.\n');
  return EXIT.failure;
}

declare const __LATCH_VERSION__: string | undefined;
const VERSION = typeof __LATCH_VERSION__ === 'string' ? __LATCH_VERSION__ : '0.0.0-dev';
