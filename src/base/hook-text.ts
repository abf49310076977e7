// The text of the fail-closed wrapper around a tool hook (PreToolUse), owned here once: setup writes
// it (src/base/hook-command.ts), containment recognises it (src/contain/match.ts),
// each agent's doctor reads it back. It has two guards:
//   - the entry is gone (the package removed without `latch uninstall`): one sentence that names the
//     command removing the handlers, exit 2 (block), instead of Node's stack trace;
//   - the hook exits other than 0 or 2 (a crash, a signal): exit 2 with a reason. The agents read
//     such a failure as "let the call through"; exit 2 blocks it.

/** The package's name on the npm registry (for the one command that removes Latch's handlers). */
export const PACKAGE_NAME = 'agent-latch';

/** One shell word: `s` in single quotes (a `'` inside becomes `'\''`). */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The guard for a missing entry, as the wrapper's script starts. */
export function entryGuard(agent: string, entry: string): string {
  const shown = entry.replace(/["\\$`]/g, '');
  return `if [ ! -f ${shq(entry)} ]; then echo "Latch is not installed any more (${shown} is missing), and its ${agent} hooks still run: blocking this call. Remove them with: npx ${PACKAGE_NAME} uninstall ${agent}" >&2; exit 2; fi; `;
}

/** The guard for any exit other than 0 and 2, as the wrapper's script ends. */
const EXIT_GUARD =
  '; s=$?; if [ "$s" -ne 0 ] && [ "$s" -ne 2 ]; then ' +
  'echo "Latch could not check this call (hook exited $s); blocking it. Run: latch doctor" >&2; exit 2; fi; exit "$s"';

/**
 * `run` wrapped fail-closed: `/bin/sh -c '<entry guard><run><exit guard>'`. `withEntryGuard: false`
 * is the form setups before the entry guard wrote (still recognised as Latch's).
 */
export function wrapFailClosed(run: string, agent: string, entry: string, withEntryGuard = true): string {
  return `/bin/sh -c ${shq(`${withEntryGuard ? entryGuard(agent, entry) : ''}${run}${EXIT_GUARD}`)}`;
}

const ENTRY_GUARD_RE = /^if \[ ! -f '(?:[^']|'\\'')*' \]; then echo "[^"]*" >&2; exit 2; fi; /;

/** The wrapper's script without a leading entry guard (a script without one as it is). */
export function withoutEntryGuard(script: string): string {
  const m = ENTRY_GUARD_RE.exec(script);
  return m ? script.slice(m[0].length) : script;
}
