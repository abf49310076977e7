// Every agent's slow part (AgentSlow), for the slow bundle's entry (src/slow.ts): the one list outside
// the registry that the bundles force, kept beside it. An agent's index loads its own through
// `import('./slow.js')`, which the hook bundle resolves to dist/slow.cjs (scripts/build.mjs).
export { codexSlow } from './codex/slow.js';
export { claudeSlow } from './claude/slow.js';
