// Entry of dist/slow.cjs: what only a trip, a session's first sight or continuity needs, for the guard
// (src/guard/slow.ts) and for every agent's slow parts (AgentSlow). The hook bundle loads it lazily:
// any `import('./slow.js')` in the hot path resolves to this file (scripts/build.mjs, lazy-slow).
export * from './guard/slow.js';
export * from './agents/slow-parts.js';
