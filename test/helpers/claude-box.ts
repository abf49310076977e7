// In-process Claude Code scaffolding for unit tests: a sandbox (workspace, Latch home) with a Claude
// config dir and a HOME of the test's own, and a session S whose transcript holds one user line.
// Hook payloads are the recorded fixtures under test/fixtures/claude, pointed at the box.
// (test/helpers/claude.ts is the e2e harness for the real binary; it needs dist/ built.)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sandbox, type Sandbox } from './workspace.js';

const FIX = join('test', 'fixtures', 'claude');

/** The first line of session S's transcript: the user's prompt (Claude Code 2.1.332, cwd /w). */
export const CLAUDE_USER_LINE = `${JSON.stringify({ parentUuid: 'p0', type: 'user', message: { role: 'user', content: 'go' }, sessionId: 'S', version: '2.1.332', cwd: '/w' })}\n`;

export interface ClaudeBox extends Sandbox {
  /** $CLAUDE_CONFIG_DIR. */
  config: string;
  /** $HOME. */
  userHome: string;
  /** Session S's transcript: $CLAUDE_CONFIG_DIR/projects/-w/S.jsonl. */
  tr: string;
}

/** A workspace, a Latch home, a Claude config dir and a HOME of the test's own (containment: list). */
export function claudeBox(): ClaudeBox {
  const sb = sandbox();
  const config = join(sb.base, 'claude-config');
  const userHome = join(sb.base, 'home');
  mkdirSync(join(config, 'projects', '-w'), { recursive: true });
  mkdirSync(userHome);
  const tr = join(config, 'projects', '-w', 'S.jsonl');
  writeFileSync(tr, CLAUDE_USER_LINE);
  return {
    ...sb,
    config,
    userHome,
    tr,
    env: { ...sb.env, HOME: userHome, CLAUDE_CONFIG_DIR: config, LATCH_CONTAIN: 'list' },
  };
}

/** A recorded Claude Code hook payload, test/fixtures/claude/NAME.json. */
export function claudeFixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIX, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

/** The fixture NAME as session S in the box's workspace, with `over` on top. */
export function claudeBoxPayload(
  b: Pick<ClaudeBox, 'work' | 'tr'>,
  name: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return { ...claudeFixture(name), session_id: 'S', cwd: b.work, transcript_path: b.tr, ...over };
}
