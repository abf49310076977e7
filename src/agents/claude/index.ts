// Claude Code as a Latch agent. Hot parts are imported here (they run in every hook); the brief's
// capture and the tool-output rule load through slow() into dist/slow.cjs; setup, uninstall and the
// doctor checks through commands() (./commands.ts, for the commands only).
import type { Agent } from '../agent.js';
import { claudeDeny, claudeReply, parseClaudePayload } from './hooks.js';
import { claudeReadSandbox, isClaudeRewrittenRead, prepareClaudeHeldRead } from './sandbox.js';
import { classifyTool } from './tools.js';
import { claudeProcesses } from './processes.js';
import {
  claudeInheritedEnd,
  claudeRegistrationPaths,
  findClaudeTranscript,
  scanClaudeTranscript,
} from './transcript.js';

export const claude: Agent = {
  name: 'claude',
  title: 'Claude Code',
  parse(stdin) {
    const p = parseClaudePayload(stdin);
    return p.ok ? { ok: true, eventName: p.payload.hook_event_name, obs: p.obs, event: p.event } : p;
  },
  reply: claudeReply,
  deny: claudeDeny,
  classifyTool,
  // Seen in every Bash command of a real 2.1.332 session: CLAUDE_CODE_SESSION_ID = the hook's session_id.
  sessionMarks: ['CLAUDE_CODE_SESSION_ID'],
  processes: claudeProcesses,
  registrationPaths: claudeRegistrationPaths,
  readSandbox: (latchHome, env, spawn) => claudeReadSandbox(latchHome, env, spawn),
  isRewrittenRead: isClaudeRewrittenRead,
  prepareHeldRead: prepareClaudeHeldRead,
  transcript: { scan: scanClaudeTranscript, find: findClaudeTranscript, inheritedEnd: claudeInheritedEnd },
  slow: () => import('./slow.js').then((m) => m.claudeSlow),
  commands: () => import('./commands.js').then((m) => m.claudeCommands),
};
