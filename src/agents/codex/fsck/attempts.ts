// The analyser's tool calls (second layer, after state.ts): every call counted by name in its
// segment; after a compaction, a shell, patch or MCP call is an attempt, waiting for its output
// (pending.ts) and then settled: counted by outcome, listed (the first ATTEMPT_CAP), its command
// classified, and checked against the intervals the store held the session.
import { admittedWhileHeld } from '../../../guard/held.js';
import { isReplay, replayedCommand } from '../../../guard/replay.js';
import { patchArgument, patchFiles, shellCommand, type Classified } from './calls.js';
import type { PendingCall } from './pending.js';
import { AnalyserState, ID_CAP } from './state.js';
import type { Attempt } from './types.js';
import { bump, countOutcome, oneLine, str } from './util.js';

const SHELL_TOOLS = new Set([
  'exec_command',
  'shell',
  'shell_command',
  'container.exec',
  'local_shell',
  'local_shell_call',
  'Bash',
]);
const PATCH_TOOLS = new Set(['apply_patch', 'Write', 'Edit']);

const ATTEMPT_CAP = 200;
/** The fields key of a call's description when the file has no call text (not a Codex field name). */
export const DESCRIBED = '\u0000described';

export abstract class AttemptAnalyser extends AnalyserState {
  private readonly roCache = new Map<string, boolean>();

  protected toolCall(
    name: string,
    p: Record<string, unknown>,
    n: number,
    ts: string | null,
    unknownKind = false,
  ): void {
    this.toolTotal++;
    bump(this.segments[this.segments.length - 1]!, name);
    const seg = this.compactions.length;
    if (seg === 0) return;
    const kind: Attempt['kind'] | null = SHELL_TOOLS.has(name)
      ? 'shell'
      : PATCH_TOOLS.has(name)
        ? 'patch'
        : name.startsWith('mcp__')
          ? 'mcp'
          : unknownKind
            ? 'unknown'
            : null;
    if (!kind) return;
    const callId = str(p.call_id) ?? str(p.id);
    const attempt: Attempt = {
      compaction: seg,
      line: n,
      timestamp: ts,
      call_id: callId,
      tool: name,
      kind,
      summary: '',
      read_only: null,
      outcome: 'no_output',
      exit_code: null,
      detail: null,
      output_line: null,
    };
    // The command text is worked out only for attempts that are listed or checked (settle()).
    const pend: PendingCall = { attempt, fields: p };
    this.attempts.total++;
    this.segAttempts[seg]!.total++;
    if (callId && this.pending.size < ID_CAP) this.pending.set(callId, pend);
    else this.settle(pend);
  }

  /** A call's output read on line n: a hook's block is counted, and the call it answers (if followed) settled. */
  protected output(id: string | null, outcome: Classified, n: number): void {
    if (outcome.outcome === 'blocked') {
      this.hookBlocked++;
      if (outcome.detail?.startsWith('Latch')) {
        if (id && this.blockedLatch.size < ID_CAP) this.blockedLatch.add(id);
      } else this.blockedOther++;
    }
    const p = id ? this.pending.get(id) : undefined;
    if (!p) return;
    this.pending.delete(id!);
    this.answered(p, outcome, n);
  }

  protected answered(p: PendingCall, outcome: Classified, n: number): void {
    p.attempt.outcome = outcome.outcome;
    p.attempt.exit_code = outcome.exit;
    p.attempt.detail = outcome.detail;
    p.attempt.output_line = n;
    this.settle(p);
  }

  /**
   * Whether settle() may still read the text of a call made now (its arguments, its timestamp): only
   * for an attempt it lists (the first ATTEMPT_CAP) or one timed inside an interval the store held
   * the session. The list only grows and `held` is set only when the first session id is adopted,
   * so once the list is full and no held interval can come, the text of later calls is never read.
   */
  protected keepsCallText(): boolean {
    return (
      this.attemptList.length < ATTEMPT_CAP ||
      this.held.length > 0 ||
      (this.onSession !== null && this.sessions.length === 0)
    );
  }

  /** An attempt whose outcome is known (or never will be): counted, checked against the store, listed. */
  protected settle(p: PendingCall): void {
    const a = p.attempt;
    countOutcome(this.segAttempts[a.compaction]!, a.outcome);
    countOutcome(this.attempts, a.outcome);
    const executed = a.outcome === 'ran' || a.outcome === 'failed';
    const listed = this.attemptList.length < ATTEMPT_CAP;
    const inHeld =
      executed &&
      a.timestamp !== null &&
      this.held.some((h) => a.timestamp! >= h.from && (h.to === null || a.timestamp! < h.to));
    if (listed || inHeld) {
      const f = p.fields;
      // A call the stream shows only through its blocked hook run: described as the store recorded it.
      const described = str(f[DESCRIBED]);
      const command =
        described ??
        (a.kind === 'shell'
          ? shellCommand(f)
          : a.kind === 'patch'
            ? patchFiles(str(f.input) ?? patchArgument(str(f.arguments)))
            : oneLine(str(f.arguments) ?? '', 80));
      // A held read Latch ran and the call replayed: the model's own command, a read.
      const replayed = a.kind === 'shell' && isReplay(command) ? replayedCommand(command) : null;
      a.summary = oneLine(replayed ?? (command || a.tool));
      if (a.kind === 'shell' && described === null) a.read_only = replayed !== null || this.readOnly(command);
    }
    if (a.read_only) this.attempts.read_only_listed++;
    if (inHeld && a.read_only !== true) {
      this.finding(
        'ran_while_held',
        'error',
        'a mutating call ran while the Latch store had the session latched or paused',
        a.line,
      );
    }
    if (listed) this.attemptList.push(a);
    else this.attemptDropped++;
  }

  private readOnly(cmd: string): boolean {
    const hit = this.roCache.get(cmd);
    if (hit !== undefined) return hit;
    // As the hook decided it while held (src/guard/held.ts): a read it ran in its sandbox and
    // replayed, or Latch's own read in any spelling (`latch brief --page N`), which it ran itself.
    const latchBin = /^\s*node\s+(\/\S*\/latch\.cjs)\s/.exec(cmd)?.[1];
    const v = admittedWhileHeld(cmd, { latchHome: '/nonexistent-latch-home', latchBin });
    if (this.roCache.size > 1000) this.roCache.clear();
    this.roCache.set(cmd, v);
    return v;
  }
}
