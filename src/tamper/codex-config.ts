// The hook-related parts of a Codex config.toml (feature flags, trust entries, inline hooks, the project's
// trust level), how a change of them is judged, and the rules for a workspace's own .codex/ files.
import { canonicalJson, clip, type FileNow, isTable, parseToml, realOr, sha256 } from './fingerprint.js';
import { latchHandlersOf, parseHooks } from './handlers.js';
import type { ConfigPart, FileRow, Finding } from './types.js';

// ---------------------------------------------------------------------------------------------
// config.toml

const FEATURE_FLAGS = ['hooks', 'codex_hooks'];

/** The hook-related parts of a config.toml: the flags that turn hooks off, Latch's trust entries, the rest of [hooks]. */
export function configPart(bytes: Buffer | null, latchKeys: string[], project: string | null): ConfigPart {
  if (bytes === null) return { exists: false, features: {}, state: {}, foreign: [], inline: null };
  let cfg: Record<string, unknown>;
  try {
    cfg = parseToml(bytes.toString('utf8'));
  } catch (err) {
    return {
      exists: true,
      error: (err as Error).message.split('\n')[0] ?? 'parse error',
      features: {},
      state: {},
      foreign: [],
      inline: null,
    };
  }
  const features: Record<string, unknown> = {};
  if (isTable(cfg.features)) for (const k of FEATURE_FLAGS) if (k in cfg.features) features[k] = cfg.features[k];
  const hooks = isTable(cfg.hooks) ? cfg.hooks : {};
  const stateTable = isTable(hooks.state) ? hooks.state : {};
  const state: Record<string, unknown> = {};
  const foreign: string[] = [];
  for (const [k, v] of Object.entries(stateTable)) {
    if (latchKeys.includes(k)) state[k] = JSON.parse(canonicalJson(v));
    else if (isTable(v) && typeof v.trusted_hash === 'string' && v.enabled !== false)
      foreign.push(`${k}=${v.trusted_hash}`);
  }
  const rest = Object.fromEntries(Object.entries(hooks).filter(([k]) => k !== 'state'));
  const part: ConfigPart = {
    exists: true,
    features,
    state,
    foreign: foreign.sort(),
    inline: Object.keys(rest).length ? sha256(canonicalJson(rest)) : null,
  };
  if (project) {
    const projects = isTable(cfg.projects) ? cfg.projects : {};
    const p = projects[project] ?? projects[realOr(project)];
    part.project_trust = isTable(p) ? (p.trust_level ?? null) : null;
  }
  return part;
}

/** Findings for a config change, and whether the change may be accepted as the new baseline. */
export function compareConfig(path: string, before: ConfigPart, after: ConfigPart): Finding[] {
  const out: Finding[] = [];
  const f = (code: string, detail: string): Finding => ({ code, severity: 'tamper', path, detail });
  if (after.error)
    return [
      f(
        'config_unreadable',
        `not valid TOML (${after.error}): Codex falls back to defaults, which drops every trust entry`,
      ),
    ];
  for (const k of FEATURE_FLAGS) {
    const b = before.features[k];
    const a = after.features[k];
    if (a !== undefined && a !== true && canonicalJson(a) !== canonicalJson(b))
      out.push(
        f(
          'feature_disabled',
          `features.${k} = ${canonicalJson(a)} (was ${b === undefined ? 'unset' : canonicalJson(b)}): Codex runs no hooks`,
        ),
      );
  }
  for (const [k, b] of Object.entries(before.state)) {
    const a = after.state[k];
    const bh = isTable(b) ? b.trusted_hash : undefined;
    const ah = isTable(a) ? a.trusted_hash : undefined;
    if (typeof bh === 'string' && ah === undefined)
      out.push(f('trust_removed', `[hooks.state."${k}"] trust entry removed: Codex skips this Latch handler`));
    else if (typeof bh === 'string' && ah !== bh)
      out.push(
        f(
          'trust_changed',
          `[hooks.state."${k}"] trusted_hash ${String(bh)} -> ${String(ah)}: Codex skips this Latch handler`,
        ),
      );
  }
  for (const [k, a] of Object.entries(after.state)) {
    const b = before.state[k];
    if (isTable(a) && a.enabled === false && !(isTable(b) && b.enabled === false))
      out.push(f('hook_disabled', `[hooks.state."${k}"] enabled = false: Codex skips this Latch handler`));
  }
  const added = after.foreign.filter((x) => !before.foreign.includes(x));
  for (const x of added)
    out.push(f('trust_added', `a hook outside Latch is now trusted (${clip(x)}): it runs outside any sandbox`));
  if (after.inline !== before.inline)
    out.push(
      f(
        'inline_hooks_changed',
        `the inline [hooks] tables changed (hook definitions in config.toml run outside any sandbox)`,
      ),
    );
  if ('project_trust' in before && before.project_trust === 'trusted' && after.project_trust !== 'trusted') {
    out.push(
      f(
        'project_untrusted',
        `the project is no longer trusted (trust_level ${canonicalJson(after.project_trust ?? null)}): Codex stops loading its .codex/hooks.json`,
      ),
    );
  }
  return out;
}

/** Rules for a workspace's own .codex/ files (no baseline): anything that turns hooks off or adds hooks. */
export function ruleCheckWorkspace(row: FileRow, now: FileNow, latchKeys: string[]): Finding[] {
  if (now.kind === 'absent') return [];
  const path = row.path;
  if (now.bytes === null)
    return [
      {
        code: 'project_config_unreadable',
        severity: 'warn',
        path,
        detail: `cannot read it (${now.error ?? now.kind})`,
      },
    ];
  if (row.role === 'ws_config') {
    const part = configPart(now.bytes, latchKeys, null);
    if (part.error)
      return [
        { code: 'project_config_unreadable', severity: 'tamper', path, detail: `not valid TOML (${part.error})` },
      ];
    const out: Finding[] = [];
    for (const k of FEATURE_FLAGS) {
      const v = part.features[k];
      if (v !== undefined && v !== true)
        out.push({
          code: 'feature_disabled',
          severity: 'tamper',
          path,
          detail: `features.${k} = ${canonicalJson(v)} in the project's config: Codex runs no hooks here`,
        });
    }
    for (const [k, v] of Object.entries(part.state)) {
      if (isTable(v) && v.enabled === false)
        out.push({ code: 'hook_disabled', severity: 'tamper', path, detail: `[hooks.state."${k}"] enabled = false` });
    }
    if (part.inline)
      out.push({
        code: 'project_hooks',
        severity: 'warn',
        path,
        detail: 'the project config defines hooks inline (they run only once trusted)',
      });
    return out;
  }
  const parsed = parseHooks(now.bytes);
  if (parsed.error)
    return [{ code: 'project_hooks', severity: 'warn', path, detail: `project hooks file: ${parsed.error}` }];
  const latch = latchHandlersOf(parsed.data);
  const hooks = (parsed.data as { hooks?: unknown }).hooks;
  const total = isTable(hooks)
    ? Object.values(hooks).reduce<number>(
        (n, gs) =>
          n +
          (Array.isArray(gs)
            ? gs.reduce<number>((m, g) => m + (isTable(g) && Array.isArray(g.hooks) ? g.hooks.length : 0), 0)
            : 0),
        0,
      )
    : 0;
  if (total === 0) return [];
  return [
    {
      code: 'project_hooks',
      severity: 'warn',
      path,
      detail: `the workspace has a project hooks file (${total} handler(s), ${latch.length} Latch-looking) that \`latch setup codex --project\` did not record; Codex runs it only when the project and each hook are trusted, and \`latch doctor\` never runs it`,
    },
  ];
}
