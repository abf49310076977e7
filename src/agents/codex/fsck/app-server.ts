// The analyser's reading of a captured `codex app-server` stream (fourth layer, after rollout.ts):
// JSON-RPC messages counted by kind and method, threads as sessions, turns, hook runs and items
// paired start to completion, tool items as tool calls, and a blocked PreToolUse run as the call it
// blocked.
import { DESCRIBED } from './attempts.js';
import { BLOCKED, callIdOfRun, commandOfItem } from './calls.js';
import { RolloutAnalyser } from './rollout.js';
import { ID_CAP, LIST_CAP } from './state.js';
import type { CompactionReport, HookRunInfo } from './types.js';
import { bump, num, oneLine, str } from './util.js';

/** Server → client methods of the 0.169.0 app-server protocol (generate-ts: ServerNotification, ServerRequest). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(
  (
    'error thread/started thread/status/changed thread/readState/changed thread/archived thread/deleted thread/unarchived thread/closed ' +
    'thread/reverted skills/changed thread/name/updated thread/section/changed thread/attachment/updated thread/goal/updated ' +
    'thread/prediction/updated thread/goal/cleared thread/queue/changed project/changed thread/project/updated ' +
    'thread/environment/connected thread/environment/disconnected thread/settings/updated thread/tokenUsage/updated turn/started ' +
    'hook/started turn/completed hook/completed turn/diff/updated turn/plan/updated item/started item/autoApprovalReview/started ' +
    'item/autoApprovalReview/completed item/completed item/agentMessage/delta item/plan/delta command/exec/outputDelta ' +
    'process/outputDelta process/exited item/commandExecution/outputDelta item/commandExecution/terminalInteraction ' +
    'item/fileChange/outputDelta item/fileChange/patchUpdated item/mcpToolCall/progress account/updated ' +
    'account/gatewayOAuth/changed account/rateLimits/updated app/list/updated fs/changed item/reasoning/summaryTextDelta ' +
    'item/reasoning/summaryPartAdded item/reasoning/textDelta thread/compacted model/rerouted model/verification ' +
    'turn/moderationMetadata model/safetyBuffering/updated thread/realtime/started thread/realtime/itemAdded ' +
    'thread/realtime/item/started thread/realtime/item/transcript/delta thread/realtime/item/completed ' +
    'thread/realtime/transcript/delta thread/realtime/transcript/done thread/realtime/outputAudio/delta thread/realtime/sdp ' +
    'thread/realtime/error thread/realtime/closed windows/worldWritableWarning account/login/completed remoteControl/status/changed ' +
    'mcpServer/startupStatus/updated configWarning deprecationNotice ' +
    // server requests
    'item/commandExecution/requestApproval item/fileChange/requestApproval item/tool/requestUserInput item/tool/call ' +
    'applyPatchApproval execCommandApproval account/chatgptAuthTokens/refresh item/permissions/requestApproval mcpServer/elicitation/request ' +
    // client requests/notifications, when a capture holds both directions
    'initialize initialized thread/start thread/resume thread/fork turn/start turn/interrupt thread/compact/start hooks/list'
  ).split(' '),
);

const ENTRY_TEXT_CAP = 2000;

export abstract class AppServerAnalyser extends RolloutAnalyser {
  /** app-server: hook runs (hook/started, hook/completed). */
  readonly hookRuns = {
    started: 0,
    completed: 0,
    byEventStatus: new Map<string, number>(),
    runs: [] as HookRunInfo[],
    dropped: 0,
  };
  /** app-server: started and not yet completed, by kind → `<threadId> <id>` → lines of the starts. */
  protected readonly open = {
    hook: new Map<string, number[]>(),
    item: new Map<string, number[]>(),
    turn: new Map<string, number[]>(),
  };
  /** app-server: the first and last `emittedAtMs` of the stream (the time it covers), or null. */
  emittedFirst: number | null = null;
  emittedLast: number | null = null;
  /** Set from the store when it knows the session: what Latch recorded of a call it denied, by call id. */
  deniedCalls: Map<string, { tool: string; summary: string | null }> | null = null;
  /** app-server: whether the current turn had a user message before its compaction (→ auto). */
  private turnHadUser = new Map<string, boolean>();

  protected appServerLine(buf: Buffer, s: number, e: number, n: number, oversize: boolean, terminated: boolean): void {
    let o: Record<string, unknown> | null = null;
    if (oversize) {
      const head = buf.toString('utf8', s, Math.min(e, s + 4096));
      const m = /"method":"([^"]*)"/.exec(head);
      bump(this.records, m ? 'notification' : 'response');
      if (m) bump(this.payloadTypes, m[1]!);
      return;
    }
    o = this.parse(buf, s, e, n, terminated, false);
    if (!o) return;
    if (!terminated)
      this.finding(
        'missing_final_newline',
        'warning',
        'the last line has no trailing newline (the capture may have stopped mid-write)',
        n,
      );
    const method = str(o.method);
    const hasId = 'id' in o;
    const kind = method
      ? hasId
        ? 'request'
        : 'notification'
      : hasId && 'result' in o
        ? 'response'
        : hasId && 'error' in o
          ? 'error_response'
          : null;
    if (!kind) {
      this.unknownType('(neither method nor id/result)', n);
      return;
    }
    bump(this.records, kind);
    const at = num(o.emittedAtMs);
    if (at !== null) {
      if (this.emittedFirst === null || at < this.emittedFirst) this.emittedFirst = at;
      if (this.emittedLast === null || at > this.emittedLast) this.emittedLast = at;
    }
    const params = (o.params !== null && typeof o.params === 'object' ? o.params : {}) as Record<string, unknown>;
    if (method) {
      bump(this.payloadTypes, method);
      if (!KNOWN_METHODS.has(method)) {
        const u = this.unknown.get(`method ${method}`);
        if (u) u.count++;
        else this.unknown.set(`method ${method}`, { count: 1, first: n });
        this.finding('unknown_method', 'warning', 'a JSON-RPC method Latch does not know', n);
      }
    }
    if (kind === 'response') {
      const r = (o.result ?? {}) as Record<string, unknown>;
      const ua = str(r.userAgent);
      if (ua && !this.writer.cli_version) {
        const v = /\/(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)/.exec(ua);
        if (v) this.writer.cli_version = v[1]!;
        this.writer.originator = ua.split('/')[0] ?? null;
      }
      const th = r.thread as Record<string, unknown> | undefined;
      if (th) this.thread(th, n);
      return;
    }
    switch (method) {
      case 'thread/started':
        this.thread((params.thread ?? {}) as Record<string, unknown>, n);
        return;
      case 'turn/completed': {
        const id = str((params.turn as Record<string, unknown> | undefined)?.id);
        if (id) this.closed('turn', `${str(params.threadId) ?? ''} ${id}`, n);
        return;
      }
      case 'hook/started':
      case 'hook/completed':
        this.hookRun(method, params, n);
        return;
      case 'turn/started': {
        const t = params.turn as Record<string, unknown> | undefined;
        const id = str(t?.id);
        if (id) {
          this.opened('turn', `${str(params.threadId) ?? ''} ${id}`, n);
          this.turn(id);
          this.turnHadUser.set(id, false);
          if (this.turnHadUser.size > 1000) this.turnHadUser.delete(this.turnHadUser.keys().next().value!);
        }
        return;
      }
      case 'thread/compacted': {
        const c = this.marker('thread', null, n, null, s, e);
        c.turn_id = str(params.turnId) ?? c.turn_id;
        this.inferTrigger(c);
        return;
      }
      case 'item/started':
      case 'item/completed': {
        const item = (params.item ?? {}) as Record<string, unknown>;
        const t = str(item.type);
        const itemId = str(item.id);
        if (itemId) {
          const key = `${str(params.threadId) ?? ''} ${itemId}`;
          if (method === 'item/started') this.opened('item', key, n);
          else this.closed('item', key, n);
        }
        if (t === 'userMessage' && this.currentTurn) this.turnHadUser.set(this.currentTurn, true);
        if (t === 'contextCompaction') {
          const c = this.marker('item', str(item.id), n, null, s, e);
          c.turn_id = str(params.turnId) ?? c.turn_id;
          this.inferTrigger(c);
          return;
        }
        // Any other item closes an open compaction group (as a response_item does in a rollout).
        if (t && t !== 'contextCompaction') this.group = null;
        if (method === 'item/completed' && t) this.appServerTool(t, item, n);
        return;
      }
      default:
        return;
    }
  }

  /** A `hook/started` / `hook/completed` notification: runs paired, counted, and a blocked PreToolUse read as the blocked call. */
  private hookRun(method: 'hook/started' | 'hook/completed', params: Record<string, unknown>, n: number): void {
    const run = params.run !== null && typeof params.run === 'object' ? (params.run as Record<string, unknown>) : null;
    const runId = str(run?.id);
    const key = `${str(params.threadId) ?? ''} ${runId ?? ''}`;
    if (method === 'hook/started') {
      this.hookRuns.started++;
      this.opened('hook', key, n);
      return;
    }
    this.hookRuns.completed++;
    this.closed('hook', key, n);
    if (!run) return;
    const event = str(run.eventName);
    const status = str(run.status);
    bump(this.hookRuns.byEventStatus, `${event ?? '?'}:${status ?? '?'}`);
    const entries = (Array.isArray(run.entries) ? run.entries : []).map((x: unknown) => {
      const en = (x !== null && typeof x === 'object' ? x : {}) as Record<string, unknown>;
      const text = str(en.text) ?? '';
      return {
        kind: str(en.kind) ?? '?',
        text: text.length > ENTRY_TEXT_CAP ? text.slice(0, ENTRY_TEXT_CAP - 1) + '…' : text,
      };
    });
    const info: HookRunInfo = {
      line: n,
      event,
      status,
      run_id: runId,
      source_path: str(run.sourcePath),
      status_message: str(run.statusMessage),
      entries,
    };
    if (status === 'blocked' || status === 'failed' || entries.length > 0) {
      if (this.hookRuns.runs.length < LIST_CAP) this.hookRuns.runs.push(info);
      else this.hookRuns.dropped++;
    }
    if (status === 'failed') {
      this.finding('hook_failed', 'warning', 'a hook run failed (its output entries are listed with the hook runs)', n);
    }
    if (status === 'blocked' && event === 'preToolUse') this.blockedByHook(info, runId, n);
  }

  /**
   * A PreToolUse run that blocked: the call never started, so the stream has no item for it, only
   * this run, whose id ends with the call id (`pre-tool-use:<n>:<hooks file>:<call id>`). Counted as
   * a tool call and an attempt, blocked by the hook, with the hook's entries; the tool and command
   * are the store's record of the denial when it has one.
   */
  private blockedByHook(info: HookRunInfo, runId: string | null, n: number): void {
    // Without a call id in the run's id, the run's own id keeps the attempt (it is still blocked).
    const callId = callIdOfRun(runId, info.source_path) ?? runId ?? `hook-run-line-${n}`;
    // The feedback entries are what the model was told (a rollout's "Command blocked by PreToolUse hook: …").
    const feedback = info.entries.filter((x) => x.kind === 'feedback');
    const text = (feedback.length > 0 ? feedback : info.entries).map((x) => x.text).join(' ');
    const byLatch =
      info.entries.some((x) => x.text.startsWith('Latch')) ||
      (info.entries.length === 0 && (info.status_message ?? '').startsWith('Latch'));
    this.hookBlocked++;
    if (byLatch) {
      if (this.blockedLatch.size < ID_CAP) this.blockedLatch.add(callId);
    } else this.blockedOther++;
    const denied = this.deniedCalls?.get(callId);
    const fields: Record<string, unknown> = { call_id: callId };
    if (denied?.summary)
      fields[DESCRIBED] = denied.summary.startsWith(`${denied.tool}: `)
        ? denied.summary.slice(denied.tool.length + 2)
        : denied.summary;
    else fields[DESCRIBED] = `call ${callId} (blocked before it started: the stream shows only its PreToolUse run)`;
    this.toolCall(denied?.tool ?? 'unknown', fields, n, null, true);
    const p = this.pending.get(callId);
    if (!p) return;
    this.pending.delete(callId);
    p.attempt.hook = info;
    this.answered(
      p,
      {
        outcome: 'blocked',
        exit: null,
        detail: oneLine(text || `blocked by the PreToolUse hook (${info.status_message ?? 'no output'})`),
      },
      n,
    );
  }

  private opened(kind: 'hook' | 'item' | 'turn', key: string, n: number): void {
    const m = this.open[kind];
    const at = m.get(key);
    if (at) at.push(n);
    else if (m.size < ID_CAP) m.set(key, [n]);
  }

  private closed(kind: 'hook' | 'item' | 'turn', key: string, n: number): void {
    const m = this.open[kind];
    const at = m.get(key);
    if (at && at.length > 0) {
      at.shift();
      if (at.length === 0) m.delete(key);
      return;
    }
    this.finding(
      'completion_without_start',
      'error',
      'a hook/completed, item/completed or turn/completed whose start is not in the stream: lines were lost, or the capture did not start with the server',
      n,
    );
  }

  private inferTrigger(c: CompactionReport): void {
    if (c.trigger_source === 'store') return;
    const had = c.turn_id ? this.turnHadUser.get(c.turn_id) : undefined;
    if (had === undefined) return;
    c.trigger = had ? 'auto' : 'manual';
    c.trigger_source = 'inferred';
  }

  private thread(th: Record<string, unknown>, n: number): void {
    const id = str(th.id);
    if (!id || this.sessions.some((x) => x.session_id === id)) return;
    this.sessions.push({ session_id: id, line: n, forked_from: str(th.forkedFromId) ?? null, cwd: str(th.cwd) });
    const v = str(th.cliVersion);
    if (v) this.writer.cli_version = v;
    this.writer.source = str(th.source) ?? this.writer.source;
    if (this.sessions.length === 1 && this.onSession) this.onSession(id);
  }

  private appServerTool(t: string, item: Record<string, unknown>, n: number): void {
    const name =
      t === 'commandExecution'
        ? 'exec_command'
        : t === 'fileChange'
          ? 'apply_patch'
          : t === 'mcpToolCall'
            ? `mcp__${str(item.server) ?? '?'}__${str(item.tool) ?? '?'}`
            : t === 'dynamicToolCall'
              ? (str(item.tool) ?? t)
              : null;
    if (!name) return;
    const p: Record<string, unknown> = { call_id: item.id };
    if (t === 'commandExecution') p.arguments = JSON.stringify({ cmd: commandOfItem(item) });
    if (t === 'fileChange')
      p.input = (Array.isArray(item.changes) ? item.changes : [])
        .map(
          (c: { path?: string; kind?: { type?: string } }) =>
            `*** ${c?.kind?.type ?? 'Update'} File: ${c?.path ?? '?'}`,
        )
        .join('\n');
    this.toolCall(name, p, n, null);
    const id = str(item.id);
    const pend = id ? this.pending.get(id) : undefined;
    if (!pend) return;
    this.pending.delete(id!);
    const status = str(item.status);
    const out = str(item.aggregatedOutput) ?? '';
    const exit = num(item.exitCode);
    const a = pend.attempt;
    a.output_line = n;
    a.exit_code = exit;
    if (status === 'declined' || out.startsWith(BLOCKED)) {
      a.outcome = 'blocked';
      a.detail = out.startsWith(BLOCKED) ? oneLine(out.slice(BLOCKED.length)) : 'declined';
      this.hookBlocked++;
      if (a.detail.startsWith('Latch')) {
        if (id && this.blockedLatch.size < ID_CAP) this.blockedLatch.add(id);
      } else this.blockedOther++;
    } else if (status === 'completed' && (exit === null || exit === 0)) a.outcome = 'ran';
    else if (status === 'failed' || (exit !== null && exit !== 0)) {
      a.outcome = 'failed';
      a.detail = oneLine(out || status || '');
    } else a.outcome = 'unknown';
    this.settle(pend);
  }
}
