// The check: the full tier (re-hash and re-parse, findings as data), what every hook calls
// (checkRegistration: quick, then full on a change, refresh or alarm), what a tamper does (latch the
// workspace's sessions, deny reasons), and the guard's one call (guardRegistration, never throws).
import { basename, join } from 'node:path';
import { sessionsIn, transition } from '../session/records.js';
import { immediate, type Db } from '../store/store.js';
import { isLatchError, NotServedError } from '../base/errors.js';
import {
  describeLayerChange,
  dropinDigest,
  dropinNames,
  layerDigest,
  layerRowsNow,
  recordClaudeLayers,
} from './claude-layers.js';
import { compareConfig, configPart, ruleCheckWorkspace } from './codex-config.js';
import {
  canonicalJson,
  kindOfSig,
  readForTrust,
  readNow,
  sha256,
  storedSig,
  verifyOf,
  verifyOfRead,
} from './fingerprint.js';
import { compareHooks, trustKeysOf } from './handlers.js';
import { dropUnnamedContent, loadRecorded, type QuickResult, quickCheck, workspaceRows } from './quick.js';
import { resolveOnPath } from './records.js';
import {
  type ChangeOrigin,
  originOfJson,
  TAMPER_CODE,
  type FileRow,
  type Finding,
  type HooksScope,
  INSTALL_SCOPE,
  type InstallScope,
  isRegistration,
  isWorkspaceScope,
  LAYER_PREFIX,
  PATH_NAMES,
  type Recorded,
  type Role,
  type Severity,
  type Touch,
  TOUCH_SCOPE,
} from './types.js';

// ---------------------------------------------------------------------------------------------
// the full tier

export interface FullResult {
  findings: Finding[];
  /** Rows whose new identity may be recorded (content unchanged, or a change that is not a finding). */
  refresh: FileRow[];
  /** Scopes whose JSON changes with an accepted change (config parts). */
  scopeUpdates: { scope: string; json: string }[];
  checked: number;
}

function scopeJson<T>(recorded: Recorded, scope: string): T | null {
  const s = recorded.scopes.find((x) => x.scope === scope);
  return s ? (JSON.parse(s.json) as T) : null;
}

function allLatchKeys(recorded: Recorded): string[] {
  const keys: string[] = [];
  for (const s of recorded.scopes) {
    if (!isRegistration(s)) continue;
    const h = JSON.parse(s.json) as HooksScope;
    for (const x of h.handlers) keys.push(...trustKeysOf(h.hooks_file, x));
  }
  return keys;
}

/**
 * Re-hashes and re-parses the recorded files (`only`: just these rows; default all) and compares
 * them with the fingerprint. Findings are data; `severity: "warn"` ones never latch. `trust`: read
 * each file so that its identity may be trusted (readForTrust: after an fdatasync when recent), for
 * the refresh to record (the hook's check; a report only reads).
 */
export function fullCheck(
  recorded: Recorded,
  opts: { only?: FileRow[]; workspace?: string | null; trust?: boolean } = {},
): FullResult {
  const res: FullResult = { findings: [], refresh: [], scopeUpdates: [], checked: 0 };
  const layers = opts.workspace ? LAYER_PREFIX + opts.workspace : null;
  if (!recorded.scopes.some(isRegistration)) {
    res.findings.push({
      code: 'no_fingerprint',
      severity: 'warn',
      path: '',
      detail:
        "no registration fingerprint is recorded (Latch was set up by an older version): changes to hooks.json, config.toml, Latch's files or shell startup files go unnoticed; run `latch setup codex` to record it",
    });
    // The settings layers a Claude Code session recorded are compared even so.
    if (!opts.only && !recorded.files.some((f) => f.scope === layers)) return res;
  }
  const rows =
    opts.only ??
    recorded.files
      .filter((f) => !isWorkspaceScope(f.scope) || f.scope === layers)
      .concat(workspaceRows(recorded, opts.workspace));
  const install = scopeJson<InstallScope>(recorded, INSTALL_SCOPE);
  const scopes = new Map<string, HooksScope>();
  let pathFindings: Finding[] | null = null;
  for (const row of rows) {
    res.checked++;
    const readAt = Date.now();
    const now = opts.trust ? readForTrust(row.path, row.role) : readNow(row.path);
    const before = res.findings.length;
    /** The value a refresh records in the sha256 column (a layer's digest instead of the file's hash). */
    let digest: string | null = null;
    const f = (code: string, detail: string, severity: Severity = 'tamper') =>
      res.findings.push({ code, severity, path: row.path, detail });
    switch (row.role) {
      case 'claude_settings': {
        digest = layerDigest(now, row.path);
        if (digest !== row.sha256)
          f(
            'claude_settings_changed',
            `Claude Code settings: ${describeLayerChange(row.sha256, digest)} (${row.sig === 'absent' ? 'a layer written since Latch began watching this workspace; ' : ''}these keys decide whether Latch's hooks run, with what environment, and which programs Claude Code runs outside any sandbox)`,
          );
        break;
      }
      case 'claude_dropins': {
        digest = dropinDigest(row.path);
        if (digest !== row.sha256) {
          f(
            'claude_settings_changed',
            `Claude Code managed drop-ins: ${digest.startsWith('error:') ? `cannot be listed (${digest.slice(6)})` : 'a drop-in with security keys appeared, changed or went away'}`,
          );
          break;
        }
        // A drop-in that appeared with nothing that matters is watched from now on (an edit in place
        // does not move the directory's stat).
        const names = dropinNames(row.path);
        for (const n of Array.isArray(names) ? names : []) {
          const p = join(row.path, n);
          if (!recorded.files.some((x) => x.scope === row.scope && x.path === p))
            res.refresh.push(...layerRowsNow(row.scope, p, 'claude_settings'));
        }
        break;
      }
      case 'hooks': {
        const s = scopes.get(row.scope) ?? scopeJson<HooksScope>(recorded, row.scope);
        if (!s) break;
        scopes.set(row.scope, s);
        res.findings.push(...compareHooks(s, row, now));
        break;
      }
      case 'config': {
        const s = scopes.get(row.scope) ?? scopeJson<HooksScope>(recorded, row.scope);
        if (!s) break;
        scopes.set(row.scope, s);
        const keys = s.handlers.flatMap((h) => trustKeysOf(s.hooks_file, h));
        const recordedPart = s.config[row.path] ?? {
          exists: false,
          features: {},
          state: {},
          foreign: [],
          inline: null,
        };
        if (now.kind === 'error') {
          f('config_unreadable', `cannot read it (${now.error})`);
          break;
        }
        if (now.kind !== 'absent' && now.bytes === null) {
          f('file_replaced', `is now a ${kindOfSig(now.sig)}`);
          break;
        }
        // The project's trust level is read from the config it was recorded from (the user's).
        const part = configPart(now.bytes, keys, 'project_trust' in recordedPart ? s.project : null);
        res.findings.push(...compareConfig(row.path, recordedPart, part));
        if (res.findings.length === before && canonicalJson(part) !== canonicalJson(recordedPart)) {
          s.config[row.path] = part;
          res.scopeUpdates = res.scopeUpdates
            .filter((u) => u.scope !== row.scope)
            .concat({ scope: row.scope, json: JSON.stringify(s) });
        }
        break;
      }
      case 'installed':
      case 'shell':
      case 'path_target': {
        const wasAbsent = row.sig === 'absent';
        if (wasAbsent && now.kind === 'absent') break;
        const what =
          row.role === 'shell'
            ? 'shell startup file (runs before every hook and command: `$SHELL -lc`)'
            : row.role === 'path_target'
              ? '`latch` on the PATH'
              : 'Latch installed file';
        if (wasAbsent) f('file_appeared', `${what} appeared (was absent at setup)`);
        else if (now.kind === 'absent') f('file_missing', `${what} was removed`);
        else if (kindOfSig(row.sig) !== kindOfSig(now.sig) || row.link !== now.link) {
          f(
            'file_replaced',
            `${what}: was a ${kindOfSig(row.sig)}${row.link ? ` -> ${row.link}` : ''}, now a ${kindOfSig(now.sig)}${now.link ? ` -> ${now.link}` : ''}`,
          );
        } else if (now.sha256 !== row.sha256) {
          const size = row.sig.split(':')[1];
          const nowSize = now.sig.split(':')[1];
          f(
            'file_changed',
            `${what}: content changed (sha256 ${short(row.sha256)} -> ${short(now.sha256)}${size === nowSize ? ', same size' : `, size ${size} -> ${nowSize}`})`,
          );
        }
        break;
      }
      case 'path_dir': {
        if (!install) break;
        if (!pathFindings) {
          pathFindings = [];
          for (const name of PATH_NAMES) {
            const was = install.resolved[name] ?? null;
            const is = resolveOnPath(name, install.path_dirs);
            if (was !== is)
              pathFindings.push({
                code: 'path_shim',
                severity: 'tamper',
                path: is ?? was ?? row.path,
                detail: `\`${name}\` on the PATH setup recorded now resolves to ${is ?? 'nothing'} (was ${was ?? 'nothing'})`,
              });
          }
          res.findings.push(...pathFindings);
        }
        if (pathFindings.length) continue; // no refresh while the resolution differs
        break;
      }
      case 'ws_config':
      case 'ws_hooks':
        // A project registration covers its own hooks file (compared above, against its fingerprint).
        if (row.role === 'ws_hooks' && recorded.scopes.some((x) => x.scope === row.path)) break;
        res.findings.push(...ruleCheckWorkspace(row, now, allLatchKeys(recorded)));
        break;
    }
    const tamper = res.findings.slice(before).some((x) => x.severity === 'tamper');
    // No finding: the new identity and content baseline are recorded, with whether the identity
    // stands for the content (verifyOf; a row compared on every hook gets the bytes read here).
    if (!tamper && (now.sig !== row.sig || row.verify)) {
      const next: FileRow = {
        ...row,
        sig: now.sig,
        sha256: digest ?? now.sha256 ?? row.sha256,
        link: now.link,
        verify: verifyOf(row.role, row.path, now, readAt),
      };
      if (storedSig(next.sig, next.verify) !== storedSig(row.sig, row.verify) || next.sha256 !== row.sha256)
        res.refresh.push(next);
    }
  }
  return res;
}

/** The largest file whose bytes the store keeps for verifyContent (larger ones are hashed each time). */
const CONTENT_MAX = 256 * 1024;

/**
 * Checks the rows whose identity held but does not stand for the content (QuickResult.verify) against
 * the content last read at that identity: `changed`, those whose bytes differ (or whose identity moved
 * meanwhile), to be compared like a stat change; `trusted`, `sync` rows read unchanged in a way
 * verifyOfRead now trusts (after an fdatasync, or with a ctime old enough). The comparison is with the
 * bytes the store keeps for that sha256 (registration_content), not a hash: hashing would load
 * node:crypto, most of a hook's time on a filesystem where no identity is ever trusted (tmpfs,
 * overlayfs). Bytes not kept yet are hashed once and, when they match, kept (`learned`).
 */
function verifyContent(
  db: Db,
  rows: QuickResult['verify'],
): {
  changed: { scope: string; path: string; now: string; raw: string | null }[];
  trusted: { scope: string; path: string; stored: string; sig: string }[];
  learned: { sha256: string; bytes: Buffer }[];
} {
  const changed: { scope: string; path: string; now: string; raw: string | null }[] = [];
  const trusted: { scope: string; path: string; stored: string; sig: string }[] = [];
  const learned: { sha256: string; bytes: Buffer }[] = [];
  if (rows.length === 0) return { changed, trusted, learned };
  const kept = db.prepare('SELECT bytes FROM registration_content WHERE sha256 = ?').pluck();
  for (const r of rows) {
    const readAt = Date.now();
    const sync = r.verify.until === 'sync';
    const now = sync ? readForTrust(r.path, undefined, { hash: false }) : readNow(r.path, { hash: false });
    const raw = r.verify.raw;
    let same = false;
    if (now.sig === r.sig && now.bytes !== null && raw !== null) {
      const bytes = kept.get(raw) as Buffer | undefined;
      if (bytes) same = now.bytes.equals(bytes);
      else {
        now.sha256 = sha256(now.bytes);
        same = now.sha256 === raw;
        if (same && now.bytes.length <= CONTENT_MAX) learned.push({ sha256: raw, bytes: now.bytes });
      }
    }
    if (!same) {
      const digest = now.sha256 ?? (now.bytes ? sha256(now.bytes) : null);
      changed.push({ scope: r.scope, path: r.path, now: now.sig, raw: digest });
      continue;
    }
    now.sha256 = raw; // equal bytes: the sha256 recorded for them
    if (sync && verifyOfRead(r.path, now, readAt) === null)
      trusted.push({ scope: r.scope, path: r.path, stored: storedSig(r.sig, r.verify), sig: now.sig });
  }
  return { changed, trusted, learned };
}

/** Keeps the bytes verifyContent hashed and found unchanged, and drops those no fingerprint names any more. */
function keepContent(db: Db, learned: { sha256: string; bytes: Buffer }[]): void {
  if (learned.length === 0) return;
  const put = db.prepare('INSERT OR IGNORE INTO registration_content (sha256, bytes) VALUES (?, ?)');
  for (const l of learned) put.run(l.sha256, l.bytes);
  dropUnnamedContent(db);
}

function short(h: string | null): string {
  return h ? h.slice(0, 12) : '-';
}

// ---------------------------------------------------------------------------------------------
// the hook entry point

const TOUCH_ROLES = new Set<Role>(['hooks', 'installed', 'shell', 'path_target']);

const TOUCH_LOG_MAX = 50;

export interface RegistrationCheck {
  status: 'ok' | 'tampered' | 'unrecorded';
  findings: Finding[];
  /** Of a tamper: who could have made it (`agent` unless the caller could tell). */
  origin?: ChangeOrigin;
  /** True when the stat tier saw a change and the full tier ran. */
  escalated: boolean;
  /** True when the findings came from the cached alarm (same stat identities as the last alarm). */
  cached: boolean;
}

/**
 * The resident hook's look at a change it may answer without recording it: only directories of the
 * recorded PATH moved (an entry came or went, as a version manager's rehash does at every login
 * shell), and the full check of them finds nothing (every name Latch resolves on that PATH resolves as
 * recorded). Read-only.
 */
function onlyPathDirsMoved(db: Db, q: QuickResult, workspace: string | null): boolean {
  if (q.status !== 'changed' || q.changed.length === 0) return false;
  const recorded = loadRecorded(db);
  const rows = recorded.files.filter(
    (f) => f.role === 'path_dir' && q.changed.some((c) => c.scope === f.scope && c.path === f.path),
  );
  if (rows.length !== q.changed.length) return false; // a changed row that is no PATH directory
  const full = fullCheck(recorded, { only: rows, workspace, trust: true });
  return full.findings.length === 0 && full.scopeUpdates.length === 0;
}

/**
 * What the guard calls on every hook: `quickCheck`; on a stat change, `fullCheck` of the changed
 * files; a change that is no finding refreshes the recorded identity (a short write transaction), a
 * tamper is cached as the alarm (same identities next time: no re-hash). `db` must be writable.
 */
export function checkRegistration(
  db: Db,
  opts: {
    workspace?: string | null;
    now: string;
    resident?: boolean;
    /** Times a new tamper (its changed files): the hook asks src/contain/jobs.ts. Default: agent. */
    originOf?: (paths: string[]) => ChangeOrigin;
  },
): RegistrationCheck {
  let q = quickCheck(db, opts);
  // The resident hook (src/resident/) answers only when the quick tier finds everything as recorded
  // and trusted: anything this function would write (layers, trust, a refresh, an alarm) is the
  // ordinary hook's, which decides the call from scratch.
  const notServed = (why: string) => {
    if (opts.resident) throw new NotServedError(`a registration check that ${why}`);
  };
  if (q.layersBehind) notServed('has settings layers to record');
  // A session Latch has not seen the layers of (its first hook, normally SessionStart): record them,
  // then compare as usual.
  if (q.layersBehind && opts.workspace && recordClaudeLayers(db, opts.workspace, opts.now) > 0)
    q = quickCheck(db, opts);
  // Nothing recorded to compare (no setup, no Claude Code session here): the warn finding only (a
  // registrations row of the layers' progress alone is no fingerprint).
  if (q.status === 'unrecorded') {
    notServed('found nothing recorded');
    return {
      status: 'unrecorded',
      findings: fullCheck({ scopes: [], files: [], alarm: null }).findings,
      escalated: false,
      cached: false,
    };
  }
  // The identities that do not stand for the content yet are compared (a few small files; none
  // once their ctimes are old, on a filesystem that writes back).
  const v = verifyContent(db, q.verify);
  if (opts.resident && (q.status !== 'ok' || v.changed.length > 0)) {
    if (v.changed.length > 0 || !onlyPathDirsMoved(db, q, opts.workspace ?? null))
      notServed(`found a change (${q.status})`);
    // The identities of the last alarm (its key, with no content change: q.sigs): the ordinary hook
    // answers from it, not from a new look (a shim made inert without moving its directory).
    if (db.prepare('SELECT sigs FROM registration_alarm WHERE id = 1').pluck().get() === q.sigs)
      notServed('found the identities of the last alarm');
    if (v.trusted.length || v.learned.length) notServed('has identities to trust');
    // Answered as the ordinary hook would (nothing found: allowed), without recording the new
    // identities: that is the ordinary hook's, at its next call.
    return { status: 'ok', findings: [], escalated: false, cached: false };
  }
  if (v.trusted.length || v.learned.length) notServed('has identities to trust');
  const promote = (d: Db) => {
    const up = d.prepare('UPDATE registration_files SET sig = ? WHERE scope = ? AND path = ? AND sig = ?');
    for (const t of v.trusted) up.run(t.sig, t.scope, t.path, t.stored);
    keepContent(d, v.learned);
  };
  if (q.status === 'ok' && v.changed.length === 0) {
    if (v.trusted.length || v.learned.length) immediate(db, () => promote(db));
    return { status: 'ok', findings: [], escalated: false, cached: false };
  }
  // The alarm's key: every identity, and the content of a row that changed under a held identity.
  const key = v.changed.length ? `${q.sigs}#${v.changed.map((c) => `${c.path}=${c.raw}`).join('|')}` : q.sigs;
  const alarm = db.prepare('SELECT sigs, findings_json, origin_json FROM registration_alarm WHERE id = 1').get() as
    | { sigs: string; findings_json: string; origin_json: string | null }
    | undefined;
  if (alarm && alarm.sigs === key)
    return {
      status: 'tampered',
      findings: JSON.parse(alarm.findings_json) as Finding[],
      origin: originOfJson(alarm.origin_json),
      escalated: true,
      cached: true,
    };
  const recorded = loadRecorded(db);
  const ws = workspaceRows(recorded, opts.workspace);
  const only = [...q.changed, ...v.changed]
    .map(
      (c) =>
        recorded.files.find((f) => f.scope === c.scope && f.path === c.path) ??
        ws.find((f) => f.scope === c.scope && f.path === c.path),
    )
    .filter((r): r is FileRow => !!r);
  const full = fullCheck(recorded, { only, workspace: opts.workspace, trust: true });
  const tamper = full.findings.filter((f) => f.severity === 'tamper');
  // Timed before the write transaction (it reads /proc): who could have made the change.
  const origin: ChangeOrigin | undefined = tamper.length
    ? (opts.originOf?.([...new Set(tamper.map((f) => f.path))]) ?? { origin: 'agent', why: 'not timed' })
    : undefined;
  immediate(db, () => {
    const up = db.prepare(
      'INSERT INTO registration_files (scope, path, role, sig, sha256, link) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, path) DO UPDATE SET sig = excluded.sig, sha256 = excluded.sha256, link = excluded.link',
    );
    for (const r of full.refresh) up.run(r.scope, r.path, r.role, storedSig(r.sig, r.verify), r.sha256, r.link);
    promote(db);
    // Same content, other stat identity (a touch): accepted, but kept as evidence, since a change
    // reverted before any hook ran (one that blinded the hooks meanwhile) looks the same.
    const touched: Touch[] = full.refresh
      .filter(
        (r) =>
          TOUCH_ROLES.has(r.role) &&
          only.some(
            (o) =>
              o.path === r.path &&
              o.scope === r.scope &&
              o.sha256 !== null &&
              o.sha256 === r.sha256 &&
              o.sig !== 'absent',
          ),
      )
      .map((r) => ({ at: opts.now, path: r.path, role: r.role }));
    if (touched.length) {
      const prev = db.prepare('SELECT json FROM registrations WHERE scope = ?').pluck().get(TOUCH_SCOPE) as
        | string
        | undefined;
      const log = [...(prev ? (JSON.parse(prev) as Touch[]) : []), ...touched].slice(-TOUCH_LOG_MAX);
      db.prepare(
        `INSERT INTO registrations (scope, kind, recorded_at, json) VALUES (?, 'log', ?, ?) ON CONFLICT (scope) DO UPDATE SET json = excluded.json, recorded_at = excluded.recorded_at`,
      ).run(TOUCH_SCOPE, opts.now, JSON.stringify(log));
    }
    for (const u of full.scopeUpdates)
      db.prepare('UPDATE registrations SET json = ? WHERE scope = ?').run(u.json, u.scope);
    if (tamper.length) {
      db.prepare(
        'INSERT INTO registration_alarm (id, sigs, findings_json, at, origin_json) VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET sigs = excluded.sigs, findings_json = excluded.findings_json, at = excluded.at, origin_json = excluded.origin_json',
      ).run(key, JSON.stringify(full.findings), opts.now, JSON.stringify(origin));
    }
  });
  return tamper.length
    ? { status: 'tampered', findings: full.findings, origin, escalated: true, cached: false }
    : { status: 'ok', findings: full.findings, escalated: true, cached: false };
}

// ---------------------------------------------------------------------------------------------
// what a tamper does

export { TAMPER_CODE };

export function summarize(findings: Finding[], max = 3): string {
  const t = findings.filter((f) => f.severity === 'tamper');
  const head = t.slice(0, max).map((f) => `${f.path ? `${f.path}: ` : ''}${f.detail}`);
  return head.join('; ') + (t.length > max ? `; and ${t.length - max} more` : '');
}

/**
 * The setup command that records the fingerprint again, as text (`latch setup codex`), from the hooks
 * files of the registrations (Claude Code's `settings.json`, Codex's `hooks.json`); with none, from the
 * findings (a Claude Code settings layer is recorded by a session, without any setup).
 */
export function setupCommandOf(hooksFiles: readonly string[], findings: readonly Finding[] = []): string {
  const agents = new Set(hooksFiles.map((f) => (basename(f) === 'settings.json' ? 'claude' : 'codex')));
  if (agents.size === 0 && findings.some((f) => f.code.startsWith('claude_'))) agents.add('claude');
  if (agents.size === 0) agents.add('codex');
  return [...agents]
    .sort()
    .map((a) => `\`latch setup ${a}\``)
    .join(' or ');
}

/** Reasons for a deny (the guard's `Reason` shape: code + message), one per tamper finding (at most 5). */
export function tamperReasons(
  findings: Finding[],
  setup = '`latch setup codex`',
  origin: ChangeOrigin['origin'] = 'agent',
): { code: string; message: string }[] {
  const t = findings.filter((f) => f.severity === 'tamper');
  if (t.length === 0) return [];
  const reasons = t.slice(0, 5).map((f) => ({
    code: TAMPER_CODE,
    message: `Latch's registration changed since it was recorded: ${f.path ? `${f.path}: ` : ''}${f.detail} [${f.code}]`,
  }));
  if (t.length > 5)
    reasons.push({ code: TAMPER_CODE, message: `and ${t.length - 5} more change(s); \`latch status\` lists them` });
  reasons.push({
    code: TAMPER_CODE,
    message:
      origin === 'human'
        ? `No agent tool call ran, and no job of one was alive, when this changed: a human's edit. Calls that may change files are refused until a human who made it re-runs ${setup} (that records it); no session was latched.`
        : `Every session of this workspace is latched. A human checks the change (\`latch doctor\`), re-runs ${setup} if it is theirs (that re-records the fingerprint), then runs \`latch verify\`.`,
  });
  return reasons;
}

/**
 * Latches every session of `workspace` for a registration change (event `inherit:latched`, reason
 * `registration_changed: ...`, findings as evidence). Sessions already latched for this reason are
 * left as they are (the hook calls this on every call while the change stands). Returns the sessions
 * whose state changed or whose reason was added. Runs in its own write transaction.
 */
export function latchForTamper(db: Db, workspace: string, findings: Finding[], now: string): string[] {
  const t = findings.filter((f) => f.severity === 'tamper');
  if (t.length === 0) return [];
  const reason = `${TAMPER_CODE}: ${summarize(t)}`;
  return immediate(db, () => {
    const done: string[] = [];
    for (const row of sessionsIn(db, workspace)) {
      if (row.state === 'latched' && row.state_reason?.startsWith(TAMPER_CODE)) continue;
      const r =
        row.state === 'latched' && row.state_reason ? `${reason} (latched before: ${row.state_reason})` : reason;
      transition(db, row, 'inherit:latched', { code: TAMPER_CODE, findings: t }, r, now);
      done.push(row.session_id);
    }
    return done;
  });
}

// ---------------------------------------------------------------------------------------------
// the guard's one call

export interface GuardRegistration {
  status: RegistrationCheck['status'] | 'error';
  findings: Finding[];
  /** Deny reasons (code `registration_changed`), empty unless tampered. */
  reasons: { code: string; message: string }[];
  /** Sessions this call latched (their rows must be re-read). */
  latched: string[];
  /** Of a tamper: `human` latches nothing (src/contain/jobs.ts). */
  origin?: ChangeOrigin['origin'];
  /** This call found the change (not the cached alarm of an earlier one). */
  fresh?: boolean;
  error?: string;
}

/**
 * For every hook, outside any transaction (it opens its own short ones): the registration check, and
 * on a tamper the latch of every session in `workspace`. Never throws: a failure comes back as
 * `status: "error"` (a tracked PreToolUse should then deny; other events go on).
 */
export function guardRegistration(
  db: Db,
  workspace: string,
  now: string,
  opts: { resident?: boolean; originOf?: (paths: string[]) => ChangeOrigin } = {},
): GuardRegistration {
  try {
    // (The resident hook's check throws NotServedError before anything but a plain 'ok'.)
    const r = checkRegistration(db, { workspace, now, resident: opts.resident, originOf: opts.originOf });
    if (r.status !== 'tampered') return { status: r.status, findings: r.findings, reasons: [], latched: [] };
    // A human's edit latches nothing: the tracked calls are refused until `latch setup` records it.
    const origin = r.origin?.origin ?? 'agent';
    const latched = origin === 'human' ? [] : latchForTamper(db, workspace, r.findings, now);
    const files = db
      .prepare(`SELECT scope FROM registrations WHERE kind IN ('user', 'project')`)
      .pluck()
      .all() as string[];
    return {
      status: r.status,
      findings: r.findings,
      origin,
      fresh: !r.cached,
      reasons: tamperReasons(r.findings, setupCommandOf(files, r.findings), origin),
      latched,
    };
  } catch (err) {
    if (isLatchError(err, 'E_NOT_SERVED')) throw err;
    const error = err instanceof Error ? err.message : String(err);
    return {
      status: 'error',
      findings: [],
      reasons: [{ code: TAMPER_CODE, message: `Latch could not compare its registration fingerprint (${error}).` }],
      latched: [],
      error,
    };
  }
}
