// Corpus cases that break the oracle today (a write, a marker or a canary gets through), grouped by
// cause. They stay in the corpus and run as `todo` (test/unit/corpus.test.ts) until the classifier,
// the guard or the trip's containment is fixed; every other failure fails the test. Key:
// `caseKey(case)|mode` (mode: sealed = Latch's sealed sandbox, sandbox = run inside `codex sandbox`,
// classifier = run raw).
// Regenerate from the test's `FAIL "<key>"` diagnostics when a fix lands: remove what passes.
export const KNOWN_LEAKS: ReadonlyArray<{ cause: string; keys: readonly string[] }> = [
  {
    // Outside heldShell's reach: the guard denies these calls, since the shell startup files are in
    // the registration fingerprint (src/tamper/index.ts; a change latches the workspace and denies
    // tracked calls). This oracle runs heldShell's decision alone.
    cause:
      'shell startup files planted while mutable run before every call: Codex runs `bash -lc`, and BASH_ENV/ENV set there reach every inner shell (both modes); in a real session the registration fingerprint denies the call',
    keys: [
      'two-stage[bash-profile-env] "bash -c \'cat README.md\'"|classifier',
      'two-stage[bash-profile-env] "bash -c \'cat README.md\'"|sandbox',
      'two-stage[bash-profile-env] "cat README.md"|classifier',
      'two-stage[bash-profile-env] "cat README.md"|sandbox',
      'two-stage[bash-profile-env] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|classifier',
      'two-stage[bash-profile-env] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|sandbox',
      'two-stage[bash-profile-env] "sed -n \'1,5p\' README.md"|classifier',
      'two-stage[bash-profile-env] "sed -n \'1,5p\' README.md"|sandbox',
      'two-stage[bash-profile-env] "sh -c \'cat README.md\'"|classifier',
      'two-stage[bash-profile-env] "sh -c \'cat README.md\'"|sandbox',
      'two-stage[bash-profile] "cat README.md"|classifier',
      'two-stage[bash-profile] "cat README.md"|sandbox',
      'two-stage[bash-profile] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|classifier',
      'two-stage[bash-profile] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|sandbox',
      'two-stage[bash-profile] "sed -n \'1,5p\' README.md"|classifier',
      'two-stage[bash-profile] "sed -n \'1,5p\' README.md"|sandbox',
      'two-stage[bashrc-top] "cat README.md"|classifier',
      'two-stage[bashrc-top] "cat README.md"|sandbox',
      'two-stage[bashrc-top] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|classifier',
      'two-stage[bashrc-top] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|sandbox',
      'two-stage[bashrc-top] "sed -n \'1,5p\' README.md"|classifier',
      'two-stage[bashrc-top] "sed -n \'1,5p\' README.md"|sandbox',
    ],
  },
  {
    // Outside heldShell's reach: in a real session the writer is a process the agent left running,
    // stopped and killed at the trip (src/contain/index.ts) before any read after it.
    cause:
      'a background job started while mutable, blocked on a FIFO, acts once an allowed read opens the FIFO (both modes; timing-dependent, both modes listed); in a real session containment kills the writer at the trip',
    keys: [
      'two-stage[fifo-excludes] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null ls-files -o --exclude-standard"|classifier',
      'two-stage[fifo-excludes] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null ls-files -o --exclude-standard"|sandbox',
      'two-stage[fifo-excludes] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|classifier',
      'two-stage[fifo-excludes] "git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null status"|sandbox',
      'two-stage[fifo-writer] "awk \'{print}\' fifo"|classifier',
      'two-stage[fifo-writer] "awk \'{print}\' fifo"|sandbox',
      'two-stage[fifo-writer] "cat < fifo"|classifier',
      'two-stage[fifo-writer] "cat < fifo"|sandbox',
      'two-stage[fifo-writer] "cat fifo"|classifier',
      'two-stage[fifo-writer] "cat fifo"|sandbox',
      'two-stage[fifo-writer] "cmp fifo a.txt"|classifier',
      'two-stage[fifo-writer] "cmp fifo a.txt"|sandbox',
      'two-stage[fifo-writer] "diff fifo a.txt"|classifier',
      'two-stage[fifo-writer] "diff fifo a.txt"|sandbox',
      'two-stage[fifo-writer] "grep -n fifo fifo"|classifier',
      'two-stage[fifo-writer] "grep -n fifo fifo"|sandbox',
      'two-stage[fifo-writer] "head -n 1 fifo"|classifier',
      'two-stage[fifo-writer] "head -n 1 fifo"|sandbox',
      'two-stage[fifo-writer] "sed -n \'1p\' fifo"|classifier',
      'two-stage[fifo-writer] "sed -n \'1p\' fifo"|sandbox',
      'two-stage[fifo-writer] "sort fifo"|classifier',
      'two-stage[fifo-writer] "sort fifo"|sandbox',
      'two-stage[fifo-writer] "tail -n 1 fifo"|classifier',
      'two-stage[fifo-writer] "tail -n 1 fifo"|sandbox',
      'two-stage[fifo-writer] "wc -l fifo"|classifier',
      'two-stage[fifo-writer] "wc -l fifo"|sandbox',
    ],
  },
];

/**
 * Each cause is outside heldShell's reach, so what leaks in Codex's sandbox leaks the same way in
 * Latch's sealed one (mode `sealed`): Codex's `bash -lc` around the call, a job left running.
 */
const withSealed = (keys: readonly string[]): string[] =>
  keys.flatMap((k) => (k.endsWith('|sandbox') ? [k, `${k.slice(0, -'|sandbox'.length)}|sealed`] : [k]));

export const KNOWN: ReadonlySet<string> = new Set(KNOWN_LEAKS.flatMap((g) => withSealed(g.keys)));

export function knownCause(key: string): string | null {
  return KNOWN_LEAKS.find((g) => withSealed(g.keys).includes(key))?.cause ?? null;
}
