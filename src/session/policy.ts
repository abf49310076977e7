// Policy configuration: the user's $LATCH_HOME/config.toml and the project's .latch.toml.
// The project file can only tighten what the user config says (an agent can write files in the
// workspace; it must not be able to loosen its own guard). The policy in force is fixed per session
// when Latch first sees the session; a later config change never releases an existing latch.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { parse as parseToml } from 'smol-toml';
import type { Policy } from './authority.js';
import { PROJECT_CONFIG, userConfigPath } from '../base/paths.js';
import { LatchError } from '../base/errors.js';

export type Scope = 'session' | 'workspace';
export type TranscriptRequirement = 'required' | 'optional';
/** How a latch is released: a human's `latch verify`, the evidence alone, or both together. */
export type Reverify = 'human' | 'evidence' | 'both';

export interface ResolvedPolicy {
  policy: Policy;
  scope: Scope;
  transcript: TranscriptRequirement;
  reverify: Reverify;
  /** MCP servers whose tools are read-only (never latched). */
  readOnlyMcpServers: string[];
  sources: string[];
}

const PolicySettings = v.object({
  policy: v.optional(v.picklist(['continue', 'pause', 'fail_closed'])),
  scope: v.optional(v.picklist(['session', 'workspace'])),
  transcript: v.optional(v.picklist(['required', 'optional'])),
  reverify: v.optional(v.picklist(['human', 'evidence', 'both'])),
  mcp: v.optional(v.strictObject({ read_only_servers: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))) })),
});

const UserConfig = v.strictObject({
  ...PolicySettings.entries,
  projects: v.optional(v.record(v.string(), v.strictObject(PolicySettings.entries))),
});

const ProjectConfig = v.strictObject(PolicySettings.entries);

type Settings = v.InferOutput<typeof PolicySettings>;

export const DEFAULT_POLICY: ResolvedPolicy = {
  policy: 'fail_closed',
  scope: 'session',
  transcript: 'required',
  reverify: 'human',
  readOnlyMcpServers: [],
  sources: ['default'],
};

const STRICTNESS: Record<Policy, number> = { continue: 0, pause: 1, fail_closed: 2 };

export class ConfigError extends LatchError {
  constructor(message: string) {
    super('E_CONFIG', message);
    this.name = 'ConfigError';
  }
}

function readToml(file: string): unknown | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return parseToml(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid TOML: ${(err as Error).message.split('\n')[0]}`);
  }
}

function check<T extends v.GenericSchema>(schema: T, data: unknown, file: string): v.InferOutput<T> {
  const r = v.safeParse(schema, data);
  if (!r.success) {
    const issue = r.issues[0];
    const where = issue.path?.map((p: { key: unknown }) => String(p.key)).join('.') ?? '';
    throw new ConfigError(`${file}: ${where ? where + ': ' : ''}${issue.message}`);
  }
  return r.output;
}

function apply(base: ResolvedPolicy, s: Settings, source: string): ResolvedPolicy {
  return {
    policy: s.policy ?? base.policy,
    scope: s.scope ?? base.scope,
    transcript: s.transcript ?? base.transcript,
    reverify: s.reverify ?? base.reverify,
    readOnlyMcpServers: s.mcp?.read_only_servers ?? base.readOnlyMcpServers,
    sources: [...base.sources, source],
  };
}

/** Project settings may only make the policy stricter. */
function tighten(base: ResolvedPolicy, s: Settings, source: string): ResolvedPolicy {
  const policy = s.policy && STRICTNESS[s.policy] > STRICTNESS[base.policy] ? s.policy : base.policy;
  const scope = s.scope === 'workspace' ? 'workspace' : base.scope;
  const transcript = s.transcript === 'required' ? 'required' : base.transcript;
  // Requiring a human is stricter than accepting evidence alone; 'both' is the strictest.
  const REV: Record<Reverify, number> = { evidence: 0, human: 1, both: 2 };
  const reverify = s.reverify && REV[s.reverify] > REV[base.reverify] ? s.reverify : base.reverify;
  const mcp = s.mcp?.read_only_servers
    ? base.readOnlyMcpServers.filter((x) => s.mcp!.read_only_servers!.includes(x))
    : base.readOnlyMcpServers;
  return { policy, scope, transcript, reverify, readOnlyMcpServers: mcp, sources: [...base.sources, source] };
}

export function resolvePolicy(home: string, workspace: string): ResolvedPolicy {
  let out = DEFAULT_POLICY;
  const userFile = userConfigPath(home);
  const user = readToml(userFile);
  if (user !== undefined) {
    const cfg = check(UserConfig, user, userFile);
    out = apply(out, cfg, userFile);
    const perProject = cfg.projects?.[workspace];
    if (perProject) out = apply(out, perProject, `${userFile} [projects."${workspace}"]`);
  }
  const projectFile = join(workspace, PROJECT_CONFIG);
  const project = readToml(projectFile);
  if (project !== undefined) out = tighten(out, check(ProjectConfig, project, projectFile), projectFile);
  return out;
}
