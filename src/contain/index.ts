// Process containment at a trip (issue 10, "nothing started before the compaction acts after it").
//
// When a session latches, processes the agent left running (background jobs, nohup, setsid, double
// forks, live interactive shells the agent could still type into) must not act afterwards.
// Linux only (/proc); elsewhere every entry point answers `supported: false` and says so.
//
// Candidates (same real uid as this process only):
//   agent_descendant       every descendant of the agent process (the nearest ancestor of this hook
//                          that is a registered agent's: see "Which process is an agent" below),
//                          except: this process, its ancestors and descendants; the hook
//                          invocations (direct children of the agent whose argv is exactly Latch's
//                          hook command, see isHookInvocation) and their own stages (the wrapper's
//                          inner shell, the hook's node: isHookStage), but not what they started;
//                          and the agent's own helpers: direct children started outside every
//                          attempt window (MCP servers started with the session), whose descendants
//                          are still candidates when they started inside a window.
//   orphan_of_attempt <id> a process whose parent is PID 1 or a subreaper (systemd, tini, ...), that
//                          carries the mark of attempt <id>'s session (below), and whose start time
//                          lies in [started_ns - 50 ms, end + 2 s] of attempt <id>
//                          (every attempt of the workspace; end = ended_ns, closing_ns or now), plus
//                          all its descendants.
//   orphan_during_containment  an orphan that appeared while containment ran (a candidate forked and
//                          exited between two scans), carrying the mark of a session with a window.
// An orphan is the agent's only when it carries the session's mark: the environment variable the agent
// sets to the session's id in every process its tool calls start (Agent.sessionMarks), with the id of
// a session whose call was running when it started. An orphan of a window without the mark (a job the user started from another shell,
// or one whose mark the agent removed) is `orphan_unmarked`: listed for the human in `latch status` and
// `latch verify`, never signalled.
// Which process is an agent, and which its sandbox, is each agent's own fact (Agent.processes: the
// executables, native build paths and node/bun scripts that are the agent, its sandboxes' executables),
// supplied as data by src/agents/<name>/processes.ts. The registry (src/agents/index.ts), which the
// hook and the commands load (src/hook.ts, src/cli.ts), hands all registered agents' facts to contain/match.ts (useAgentProcesses) without
// loading any agent; nothing under src/guard/ names an agent's binary or script. Asked before a
// registry did that, match.ts throws: verify's ancestry check refuses, a trip records the failure.
// Tests may add a fake agent's facts (registerTestAgentProcesses; test/unit/fake-agent.test.ts).
// Never signalled: PID 1, this process, its ancestors, processes of another uid, zombies, kernel
// threads, the agent itself.
//
// What is spared, and by what (issue 29.1, "trust no shape"). A process Latch started and must keep is
// spared only by an identity Latch recorded itself when it started it: pid and start time (/proc
// stat field 22, fixed at fork), never by its argv (its own memory: node can rewrite it through
// /proc/self/mem) or a path read at the trip (a symbolic link the agent re-points at dist/latch.cjs):
//   - a workspace watcher: its row in the store's `watchers` table (pid, pid_start), written by the
//     watcher itself (src/watch/lease.ts), ScanInput.watchers;
//   - a resident hook: a line of its spool's `spawned` file, written by the hook that spawned it right
//     after spawn (src/resident/start.ts; read by src/resident/list.ts recordedResidents, the Latch
//     home being the store's directory), ScanInput.residents. Not its `server` file: the resident
//     hook writes that about itself;
//   - a hook invocation, which Latch does not start (the agent does): by its exact command, run by
//     the executable its name says, with the agent's code-changing environment (isHookProcess). It
//     must answer the agent (a killed PreToolUse may fail open: docs/hook-failures.md). Its node form's entry must be
//     one of this Latch's entries exactly as written (no realpath through a link the agent can
//     re-point).
// A spared process's subtree is never spared with it: what a watcher, a resident hook or a hook
// started is scanned as any other process of its place (the hook running this containment is not in
// that walk: it and its ancestors are protected, its descendants are this process's own).
// To become a spared process an agent must write Latch's state directory as the same user (a row in
// the store, a line in a spool), or be the exact hook command Latch installed: the first is what a
// managed install (state another user owns) would close, out of scope here.
//
// contain(): SIGSTOP every candidate (so none can fork), rescan until no new candidate appears (at
// most MAX_ROUNDS), then SIGKILL them all. Each signal re-reads the process's start time first (pid
// reuse); the remaining race between that read and kill(2) is microseconds (Node has no pidfd).
// Every function here returns errors as data and never throws.
//
// The parts (src/contain/, imported in this order, none imports a later one):
//   proc.ts      process listing and identity from /proc
//   match.ts     which process is what: agents and sandboxes (the registry's facts), reapers;
//                hook invocations (spared)
//   windows.ts   attempt windows and Latch's watchers (their recorded identities), from the store
//   cgroup.ts    the agent's cgroup of Latch's own: enroll at its first hook, freeze at the trip
//   scan.ts      the candidate scan, the result types, listCandidates
//   kill.ts      contain(): stop, rescan, kill
//   records.ts   containAfterTrip, enrollAgent, listForSession, recordContainment
//   ancestry.ts  checkAncestry: who may confirm `latch verify` / `latch resume`
//   jobs.ts      changeOrigin: could an agent have made a registration change (a window, a live job)
export {
  type AncestorEvidence,
  type AncestryReport,
  checkAncestry,
  type Refusal,
} from './ancestry.js';
export { contain } from './kill.js';
export {
  type AgentInfo,
  findAgent,
  hookCommandText,
  isAgentProcess,
  isHookInvocation,
  isSandboxProcess,
  parseHookText,
} from './match.js';
export {
  ancestry,
  argvOf,
  bootNs,
  cmdlineText,
  environOf,
  exeOf,
  nsOf,
  type Proc,
  procSelfPid,
  procSupported,
  readProc,
  sameProcess,
} from './proc.js';
export {
  containAfterTrip,
  enrollAgent,
  listForSession,
  liveSessionAgent,
  recordContainment,
  recordedSessionAgent,
  recordSessionAgent,
} from './records.js';
export { type ChangeOrigin, changeOrigin } from './jobs.js';
export { type Candidate, type ContainResult, listCandidates, type ScanInput, type Why } from './scan.js';
export { type AttemptWindow, attemptWindows, WINDOW_AFTER_NS, WINDOW_BEFORE_NS, windowOf } from './windows.js';
