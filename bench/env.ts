// The environment every benchmark runs its processes in, baseline and subject alike.
//
// Some variables make every Node start do work that is neither Latch's nor `node -e 0`'s own. The
// one that matters here: NODE_EXTRA_CA_CERTS makes Node load its root store and parse that CA file at
// start, ~85 ms on the project's VM (where it names the system bundle for the whole machine), against a
// ~48 ms `node -e 0` without it. Left
// in, it inflates the baseline and the subject by the same milliseconds and so pulls every ratio
// towards 1: a 30 ms hook overhead reads as 1.21 instead of 1.6.

/** Variables that change what a bare `node` does at start (certificates, preloads, coverage, debug output). */
export const NODE_START_VARS = ['NODE_EXTRA_CA_CERTS', 'NODE_OPTIONS', 'NODE_V8_COVERAGE', 'NODE_DEBUG'] as const;

/**
 * Removes NODE_START_VARS from this process's environment, so that every child inherits a clean one;
 * returns what it removed (name and value), for the report.
 */
export function scrubNodeStartEnv(): Array<{ name: string; value: string }> {
  const removed: Array<{ name: string; value: string }> = [];
  for (const name of NODE_START_VARS) {
    const value = process.env[name];
    if (value === undefined) continue;
    removed.push({ name, value });
    delete process.env[name];
  }
  return removed;
}
