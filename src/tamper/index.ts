// Tamper evidence for Latch's registration (issue 10, classes 4 and 7).
//
// `latch setup codex` records a fingerprint of everything that decides whether Latch's hooks run and
// what they run: the hooks.json it wrote (each Latch handler as canonical JSON, and a digest of the
// whole file), the hook-related parts of config.toml (the `[hooks.state]` trust entries of Latch's
// handlers, the `features` flags that turn hooks off, inline `[hooks]`, foreign trusted hooks, the
// project's trust level), Latch's installed files (bin/latch.cjs, dist/*.cjs, their V8 code caches,
// the SQLite addon, the TOML parser), the user's shell startup files (Codex runs every hook and every
// command as `$SHELL -lc`), and what `latch`, `node` and `codex` resolve to on the PATH. `latch setup
// claude` records its settings.json the same way; and every Claude Code settings layer a session reads
// (user, project, local, managed) is recorded when the session is first seen, by the keys that can
// disable or subvert the hooks.
//
// Two tiers:
// - `quickCheck`: the hook hot path. One SELECT and one lstat per recorded file (no hashing, no TOML,
//   no file contents): a file whose lstat identity (kind, size, mtime_ns, ctime_ns, ino, dev) is
//   unchanged is unchanged, once that identity is trusted. ctime cannot be set back by a process, so
//   "edit, then restore mtime" shows as a change. A write through a shared memory map moves no time
//   until the kernel write-protects the page again, so an identity is trusted only once its content
//   was read after an fdatasync or long after its ctime, on ext4/xfs/btrfs/f2fs (fingerprint.ts);
//   until then, and always on tmpfs and other filesystems, the hook compares the file with the bytes
//   the store keeps for its recorded sha256 (registration_content; hashed once, when first kept).
// - `fullCheck`: re-hash and re-parse the files (all of them, or the ones whose stat or content
//   changed), and return findings as data. A stat change whose content is unchanged (`touch`) or
//   whose change is benign (a trust entry added by the human's /hooks review, another table of
//   config.toml) is no finding; `checkRegistration` then records the new identity and content
//   baseline once (the baseline findings compare against is kept apart from the identity's trust).
//
// A change is accepted only by a human re-running `latch setup codex` / `latch setup claude` (which
// re-records everything, the settings layers the sessions recorded included).
//
// The parts (src/tamper/, imported in this order, none imports a later one):
//   types.ts          the data: roles, findings, rows, scopes
//   fingerprint.ts    lstat identity, bytes and sha256, canonical JSON, the TOML parser
//   quick.ts          the store's rows and the quick tier (quickCheck)
//   handlers.ts       the hook-text matcher: Latch's handlers in a hooks file, trust keys, compareHooks
//   codex-config.ts   the hook parts of a Codex config.toml and a workspace's .codex/ rules
//   claude-layers.ts  Claude Code's settings layers: which files, their digest, recorded per session
//   records.ts        what setup records and uninstall forgets; the PATH
//   check.ts          the full tier, checkRegistration, what a tamper does, guardRegistration
//   report.ts         registrationReport and its lines (latch status, latch doctor)

export {
  type CanonHandler,
  type ChangeOrigin,
  type ConfigPart,
  type FileRow,
  type Finding,
  type HooksScope,
  INSTALL_SCOPE,
  type InstallScope,
  LAYER_PREFIX,
  PATH_NAMES,
  type Recorded,
  type Role,
  type ScopeRow,
  type Severity,
  type Touch,
  TOUCH_SCOPE,
  type Verify,
} from './types.js';
export {
  canonicalJson,
  CTIME_SETTLE_MS,
  type FileNow,
  readForTrust,
  readNow,
  statSig,
  storedSig,
  userCanChange,
  verifyOf,
  WRITTEN_BACK_MS,
} from './fingerprint.js';
export { loadRecorded, quickCheck, type QuickResult } from './quick.js';
export { isLatchHandler, latchHandlersOf, trustKeysOf } from './handlers.js';
export { configPart } from './codex-config.js';
export {
  CLAUDE_SECURITY_KEYS,
  claudeConfigDirOf,
  claudeLayerPaths,
  claudeManagedDir,
  dropinDigest,
  layerDigest,
  type LayerSession,
  recordClaudeLayers,
} from './claude-layers.js';
export {
  type Accepted,
  extraCodexConfigs,
  forgetRegistration,
  forgetRegistrationIn,
  installedFiles,
  pathDirs,
  type RecordInput,
  recordRegistration,
  rerecordCodeCachesAtExit,
  resolveOnPath,
  runningFrom,
  shellStartupFiles,
} from './records.js';
export {
  checkRegistration,
  fullCheck,
  type FullResult,
  type GuardRegistration,
  guardRegistration,
  latchForTamper,
  type RegistrationCheck,
  setupCommandOf,
  summarize,
  TAMPER_CODE,
  tamperReasons,
} from './check.js';
export {
  acceptedLines,
  registrationLines,
  type RegistrationReport,
  registrationReport,
  RERECORD_FIX,
} from './report.js';
