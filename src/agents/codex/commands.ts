// Codex's commands (AgentCommands): `latch setup|uninstall codex` and its `latch doctor` checks. Loaded
// through `codex.commands()`, by the commands only (dist/cli.cjs), never by a hook. Each loads its
// module on first use, as every command does (src/cli.ts).
import type { AgentCommands } from '../agent.js';

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const codexCommands: AgentCommands = {
  setupFlags: ['codex-home', 'project', 'dry-run', 'trust'],
  async setup(io, o) {
    const { setupCodex } = await import('./setup.js');
    return setupCodex(io, {
      codexHome: text(o.flags?.['codex-home']),
      project: o.project,
      dryRun: o.dryRun === true,
      trust: o.flags?.trust === true,
    });
  },
  async uninstall(io, o) {
    const { uninstallCodex } = await import('./setup.js');
    return uninstallCodex(io, {
      codexHome: text(o.flags?.['codex-home']),
      project: o.project,
      dryRun: o.dryRun === true,
    });
  },
  async doctor(io, o) {
    const { codexDoctor } = await import('./doctor.js');
    return codexDoctor(io, {
      codexHome: text(o.flags?.['codex-home']),
      project: o.project,
      timeoutMs: o.timeoutMs ?? 10_000,
    });
  },
};
