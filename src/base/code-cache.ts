// The V8 code caches beside the bundles (dist/<bundle>.v8cache): src/loader.ts runs each bundle from
// its cache, scripts/build.mjs writes them, and the registration fingerprint (src/tamper/)
// covers every one, present or absent (a cache is code the hook runs).
//
// A cache holds the functions its warm-up run compiled. The hooks of different agents run different
// functions of main.cjs (their payloads, transcripts and settings), so each agent's hook has a cache
// of its own: one warmed by a Codex hook leaves a Claude Code hook compiling its own path lazily.

/** The bundles that run from a code cache. */
export const CACHED_BUNDLES = ['main.cjs', 'slow.cjs', 'observer.cjs', 'cli.cjs'];

/** The agents whose hooks run main.cjs from a cache of their own (the agent registry's names). */
export const HOOK_CACHE_AGENTS = ['codex', 'claude'];

/** The name of main.cjs's cache for `latch hook <agent> …` (argv after the script), else the shared one. */
export function mainCacheName(argv: readonly string[]): string {
  const agent = argv[0] === 'hook' ? argv[1] : undefined;
  return agent !== undefined && HOOK_CACHE_AGENTS.includes(agent) ? `main.cjs.${agent}.v8cache` : 'main.cjs.v8cache';
}

/** The bundle a code cache file belongs to (`main.cjs.codex.v8cache` → `main.cjs`). */
export function bundleOfCache(cache: string): string {
  return cache.slice(0, cache.indexOf('.cjs') + 4);
}

/** Every code cache file name the installation may hold. */
export function codeCacheNames(): string[] {
  return [...CACHED_BUNDLES.map((b) => `${b}.v8cache`), ...HOOK_CACHE_AGENTS.map((a) => `main.cjs.${a}.v8cache`)];
}
