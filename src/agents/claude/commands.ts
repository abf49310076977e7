// Claude Code's commands (AgentCommands): `latch setup|uninstall claude` and its `latch doctor` checks.
// Loaded through `claude.commands()`, by the commands only (dist/cli.cjs), never by a hook. Each loads
// its module on first use, as every command does (src/cli.ts).
import type { AgentCommands } from '../agent.js';

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const claudeCommands: AgentCommands = {
  setupFlags: ['project', 'dry-run', 'json'],
  async setup(io, o) {
    const { setupClaude } = await import('./setup.js');
    return setupClaude(io, { project: o.project, dryRun: o.dryRun === true, json: o.json === true });
  },
  async uninstall(io, o) {
    const { uninstallClaude } = await import('./setup.js');
    return uninstallClaude(io, { project: o.project, dryRun: o.dryRun === true, json: o.json === true });
  },
  async doctor(io, o) {
    const { claudeDoctor } = await import('./doctor.js');
    return claudeDoctor(io, {
      project: o.project,
      managedSettings: text(o.flags?.['claude-managed-settings']),
      timeoutMs: o.timeoutMs ?? 10_000,
    });
  },
};
