// `latch qualify codex [VERSION | --codex PATH] [--json] [--install] [--keep]`: qualify a Codex
// release on this machine by driving the real binary through Latch's matrix (src/agents/codex/qualify/run.ts).
// The record goes to $LATCH_HOME/qualified/<version>.json; only a record whose every check passed
// qualifies the version (src/agents/codex/qualification.ts). A run in which a step ran out of time (a
// busy machine) is inconclusive, not failed: it is run again (--retries, default 1) and, if it stays
// inconclusive, reported as such and never recorded over an earlier record. Exit 0 all passed, 1 a
// check failed, 2 usage or binary not found, 75 inconclusive (EX_TEMPFAIL: try again later).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { EXIT, ExitError } from '../base/errors.js';
import {
  isVersion,
  machineRecordsDir,
  type QualificationRecord,
  versionStatus,
} from '../agents/codex/qualification.js';
import {
  codexVersionOf,
  platformBinaryOf,
  resolveCodexPath,
  runQualification,
  type ResolvedCodex,
} from '../agents/codex/qualify/run.js';
import { resolveOnPath } from '../tamper/records.js';
import { homeOf, json, type Io } from '../kit/io.js';

export interface QualifyOptions {
  version?: string;
  codex?: string;
  json?: boolean;
  install?: boolean;
  keep?: boolean;
  /** Runs after an inconclusive one (default 1). */
  retries?: number;
  /** How long one `codex exec` of the matrix may take (default 180 s). */
  timeoutMs?: number;
}

/** The first executable `codex` on the PATH (resolved as the shell would, not run). */
function onPath(env: NodeJS.ProcessEnv): string | null {
  return resolveOnPath('codex', (env.PATH ?? '').split(delimiter).filter(Boolean));
}

/** $LATCH_HOME/cache/codex/<version>: where --install puts @openai/codex@<version>. */
export function cacheDir(home: string, version: string): string {
  return join(home, 'cache', 'codex', version);
}

function cachedLauncher(home: string, version: string): string | null {
  const p = join(cacheDir(home, version), 'node_modules', '@openai', 'codex', 'bin', 'codex.js');
  return existsSync(p) ? p : null;
}

function install(io: Io, home: string, version: string): string {
  const dir = cacheDir(home, version);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  io.err(`latch qualify: npm install --prefix ${dir} @openai/codex@${version}\n`);
  const r = spawnSync(
    'npm',
    ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', `@openai/codex@${version}`],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
      env: io.env,
      timeout: 15 * 60_000,
    },
  );
  if (r.error || r.status !== 0)
    throw new ExitError(
      EXIT.usage,
      `npm install of @openai/codex@${version} failed: ${r.error?.message ?? (r.stderr ?? '').trim().slice(-800)}`,
    );
  const launcher = cachedLauncher(home, version);
  if (!launcher) throw new ExitError(EXIT.usage, `npm installed nothing usable at ${dir}`);
  if (!platformBinaryOf(launcher))
    throw new ExitError(
      EXIT.usage,
      `@openai/codex@${version} has no native binary for ${process.platform}-${process.arch} in ${dir}`,
    );
  return launcher;
}

export async function qualifyCodex(io: Io, opts: QualifyOptions): Promise<number> {
  const home = homeOf(io);
  if (opts.version !== undefined && !isVersion(opts.version))
    throw new ExitError(EXIT.usage, `not a Codex version: ${JSON.stringify(opts.version)} (expected x.y.z)`);
  if (opts.version && opts.codex) throw new ExitError(EXIT.usage, 'give a VERSION or --codex PATH, not both');
  if (opts.install && !opts.version) throw new ExitError(EXIT.usage, '--install needs a VERSION');

  let path: string | null;
  if (opts.codex) {
    if (!existsSync(opts.codex)) throw new ExitError(EXIT.usage, `no such file: ${opts.codex}`);
    path = opts.codex;
  } else if (opts.version) {
    path = cachedLauncher(home, opts.version);
    if (!path) {
      const p = onPath(io.env);
      const v = p ? codexVersionOf(p).version : null;
      if (p && v === opts.version) path = p;
      else if (opts.install) path = install(io, home, opts.version);
      else
        throw new ExitError(
          EXIT.usage,
          `Codex ${opts.version} not found (${p ? `codex on PATH is ${v ?? 'of unknown version'}` : 'no codex on PATH'}, nothing in ${cacheDir(home, opts.version)}); run \`latch qualify codex ${opts.version} --install\` to install it there with npm`,
        );
    }
  } else {
    path = onPath(io.env);
    if (!path) throw new ExitError(EXIT.usage, 'no `codex` on PATH; give --codex PATH or a VERSION (with --install)');
  }

  let codex: ResolvedCodex;
  try {
    codex = resolveCodexPath(path);
  } catch (err) {
    throw new ExitError(EXIT.usage, `cannot resolve ${path}: ${(err as Error).message}`);
  }
  const v = codexVersionOf(codex.run);
  if (!v.version) throw new ExitError(EXIT.usage, `\`${codex.run} --version\` failed: ${v.error}`);
  if (opts.version && v.version !== opts.version)
    throw new ExitError(EXIT.usage, `${codex.run} reports ${v.version}, not ${opts.version}`);

  io.err(`latch qualify: Codex ${v.version} (${codex.binary}); driving it over a loopback fake model…\n`);
  const retries = opts.retries ?? 1;
  const run = () =>
    runQualification({
      codex,
      version: v.version!,
      versionOutput: v.output,
      log: (l) => io.err(`${l}\n`),
      keep: opts.keep,
      timeoutMs: opts.timeoutMs,
    });
  let rec = await run();
  for (let attempt = 1; rec.inconclusive && attempt <= retries; attempt++) {
    io.err(`latch qualify: inconclusive (${whyInconclusive(rec)}); running it again (${attempt} of ${retries})…\n`);
    rec = await run();
  }
  if (rec.inconclusive) return inconclusive(io, rec, opts, home);

  const dir = machineRecordsDir(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${rec.version}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(rec, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);

  const failed = rec.checks.filter((c) => !c.ok);
  if (opts.json) json(io, { ...rec, record_path: file });
  else {
    io.out(
      `Codex ${rec.version} — ${codex.binary}\n  sha256 ${rec.binary.sha256}, Latch ${rec.latch_version}, ${(rec.duration_ms / 1000).toFixed(1)} s\n\n`,
    );
    for (const c of rec.checks) io.out(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.evidence}\n`);
    const st = versionStatus(rec.version, home);
    io.out(`\nrecord: ${file}\n`);
    if (failed.length === 0)
      io.out(`Codex ${rec.version} is qualified on this machine: a resume of its sessions can be native.\n`);
    else {
      io.out(`Codex ${rec.version} did NOT pass: ${failed.map((c) => c.name).join(', ')}.\n`);
      io.out(
        st.qualified && st.by
          ? `(${rec.version} stays qualified by the ${st.by.source === 'package' ? "package's" : "machine's"} record ${st.by.path}; this binary is not the one qualified there.)\n`
          : `Native resume stays off for ${rec.version}: every resume re-delivers the brief.\n`,
      );
    }
  }
  if (failed.length) io.err(`latch qualify: failed check(s): ${failed.map((c) => c.name).join(', ')}\n`);
  return failed.length === 0 ? EXIT.ok : EXIT.failure;
}

/** A run that stayed inconclusive: said as such, recorded nowhere (an earlier record stays as it was). */
function inconclusive(io: Io, rec: QualificationRecord, opts: QualifyOptions, home: string): number {
  const open = rec.checks.filter((c) => c.inconclusive);
  const why = whyInconclusive(rec);
  const st = versionStatus(rec.version, home);
  if (opts.json) json(io, { ...rec, record_path: null });
  else {
    for (const c of rec.checks)
      io.out(`  ${c.ok ? 'ok  ' : c.inconclusive ? '??  ' : 'FAIL'} ${c.name}: ${c.evidence.split('\n')[0]}\n`);
    io.out(
      `\nCodex ${rec.version}: INCONCLUSIVE, ${open.length} check(s) not evaluated (${why}). This says nothing about the release; ` +
        `the machine was too slow for the run. Nothing was recorded${st.qualified ? ` (${rec.version} stays qualified as before)` : ''}. ` +
        'Run it again when the machine is less busy, or with a longer `--timeout SECONDS`.\n',
    );
  }
  io.err(`latch qualify: inconclusive after ${(opts.retries ?? 1) + 1} run(s): ${why}\n`);
  return EXIT.inconclusive;
}

/** The step that ran out of time, in a few words ("codex (run) did not finish within 180 s"). */
function whyInconclusive(rec: QualificationRecord): string {
  const e = rec.checks.find((c) => c.inconclusive)?.evidence ?? '';
  return e.replace(/^inconclusive: /, '').replace(/ \(its stderr: [\s\S]*$/, '') || 'a step ran out of time';
}
