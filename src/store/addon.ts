// The store's native addon (better-sqlite3's better_sqlite3.node): its install script builds or
// downloads it for the Node that ran the install. Missing when the package was installed with scripts
// off; stale after a change of Node (`nvm use 24` under a Latch installed with 22): then the store
// cannot open, every tracked call is denied, and this says, in one line, what to run.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../base/paths.js';

/** Does an error message say the SQLite addon could not be loaded into this Node? */
export function isAddonProblem(message: string): boolean {
  return /better_sqlite3\.node|NODE_MODULE_VERSION|invalid ELF header|did not self-register|ERR_DLOPEN_FAILED/i.test(
    message,
  );
}

/** This Node, as the addon's build must match it. */
export const thisNode = (): string => `Node ${process.version}, ABI ${process.versions.modules}`;

/** What to run so that the addon fits this Node (one line). */
export function addonFix(): string {
  const pkg = packageRoot() ?? resolve(dirname(fileURLToPath(import.meta.url)), '..');
  return `\`npm rebuild better-sqlite3\` in ${pkg} under this Node (it compiles when no prebuilt addon can be downloaded: needs python3, make and a C++ compiler), or reinstall Latch with install scripts allowed (\`npm install -g agent-latch --allow-scripts=better-sqlite3\`)`;
}

/** The one-line explanation of an addon problem, or '' when the message is not one. */
export function addonHint(message: string): string {
  if (!isAddonProblem(message)) return '';
  return `Latch keeps its state in SQLite through better-sqlite3, whose native addon was not built for this Node (${thisNode()}). Build it: ${addonFix()}.\n`;
}
