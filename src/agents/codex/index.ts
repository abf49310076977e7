// OpenAI Codex as a Latch agent. Hot parts are imported here (they run in every hook); the brief's
// capture and resume qualification load through slow() into dist/slow.cjs; setup, uninstall and the
// doctor checks through commands() (./commands.ts, for the commands only). The fsck (`latch doctor
// FILE`) and qualification belong to their commands, which import them directly.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Agent } from '../agent.js';
import { codexDeny, codexReply, parseCodexPayload } from './hooks.js';
import { historyBaseEnd, findRollout } from './lineage.js';
import { scanTranscript } from './rollout.js';
import { isReplay } from '../../guard/replay.js';
import { bwrapSandbox } from '../shared/bwrap.js';
import { isWrapped, readOnlyArgv, readOnlySandbox, wrapReadOnly } from './sandbox.js';
import { classifyTool } from './tools.js';
import { codexProcesses } from './processes.js';

export const codex: Agent = {
  name: 'codex',
  title: 'Codex',
  parse(stdin) {
    const p = parseCodexPayload(stdin);
    return p.ok ? { ok: true, eventName: p.payload.hook_event_name, obs: p.obs, event: p.event } : p;
  },
  reply: codexReply,
  deny: codexDeny,
  classifyTool,
  // Seen in every command of a real 0.171.0 session: CODEX_THREAD_ID = CODEX_SESSION_ID = the hook's session_id.
  sessionMarks: ['CODEX_THREAD_ID', 'CODEX_SESSION_ID'],
  processes: codexProcesses,
  registrationPaths(env, cwd) {
    const codexHome = resolve(env.CODEX_HOME || join(env.HOME || homedir(), '.codex'));
    return [
      { path: join(codexHome, 'hooks.json'), reason: 'the Codex hook registration (hooks.json)' },
      { path: join(codexHome, 'config.toml'), reason: 'the Codex configuration (hook trust and features)' },
      { path: join(resolve(cwd), '.codex'), reason: 'the project’s Codex configuration (.codex/)' },
    ];
  },
  readSandbox(latchHome, env, spawn) {
    // Latch's sealed sandbox first (it hides Latch's files from the read); else Codex's own.
    const sealed = bwrapSandbox(latchHome, env, spawn);
    if (sealed.ok || !sealed.fallback) return sealed;
    const st = readOnlySandbox(latchHome, env, spawn);
    if (!st.ok) return { ok: false, why: `${sealed.why}; Codex's sandbox: ${st.why}` };
    const sb = st.sandbox;
    return {
      ok: true,
      wrap: (command) => wrapReadOnly(command, sb),
      argv: (command, e) => readOnlyArgv(command, sb, e),
      sealed: false,
      where: `\`${sb.bin} sandbox\``,
    };
  },
  isRewrittenRead: (text) => isReplay(text) || isWrapped(text),
  transcript: { scan: scanTranscript, find: findRollout, inheritedEnd: historyBaseEnd },
  slow: () => import('./slow.js').then((m) => m.codexSlow),
  commands: () => import('./commands.js').then((m) => m.codexCommands),
};
