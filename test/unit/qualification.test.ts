// The one source of truth for qualified Codex versions (src/agents/codex/qualification.ts), the records
// `latch qualify codex` writes, the hook-schema reader/validator (src/agents/codex/qualify/schemas.ts), the
// `latch qualify` usage errors, and `latch doctor FILE`'s exit codes (damage vs age).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import Database from 'better-sqlite3';
import { decompress } from 'fzstd';
import {
  compareVersions,
  loadRecords,
  parseCodexVersion,
  qualifiedVersions,
  RECORD_SCHEMA,
  recordProblem,
  shippedQualifiedVersions,
  versionStatus,
  type QualificationRecord,
} from '../../src/agents/codex/qualification.js';
import { doctorExit, gradeFindings } from '../../src/agents/codex/qualification-doctor.js';
import { QUALIFIED_VERSIONS, qualifiedVersionsOfStore } from '../../src/agents/codex/qualify.js';
import { fsckFile } from '../../src/agents/codex/fsck/fsck.js';
import { transcriptDoctor } from '../../src/agents/codex/fsck/command.js';
import { cliMain } from '../../src/cli.js';
import type { Io } from '../../src/kit/io.js';
import { CHECKS } from '../../src/agents/codex/qualify/run.js';
import {
  diffSchemas,
  extractHookSchemas,
  referenceSchemas,
  validate,
  type Schema,
} from '../../src/agents/codex/qualify/schemas.js';

const created: string[] = [];
test.after(() => {
  for (const d of created) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'latch-qualification-'));
  created.push(d);
  return d;
}

function record(version: string, ok = true, extra: Partial<QualificationRecord> = {}): QualificationRecord {
  return {
    schema: RECORD_SCHEMA,
    version,
    version_output: `codex-cli ${version}`,
    binary: { path: '/x/codex', sha256: 'a'.repeat(64), size: 1, launcher: null },
    latch_version: '0.1.0',
    date: '2026-12-01T00:00:00.000Z',
    platform: 'linux-x64',
    duration_ms: 1,
    qualified: ok,
    checks: CHECKS.map((name, i) => ({ name, ok: ok || i !== 3, evidence: 'e' })),
    ...extra,
  };
}

function homeWith(records: Record<string, unknown>): string {
  const home = join(tmp(), 'latch');
  mkdirSync(join(home, 'qualified'), { recursive: true, mode: 0o700 });
  for (const [name, rec] of Object.entries(records))
    writeFileSync(join(home, 'qualified', name), typeof rec === 'string' ? rec : JSON.stringify(rec));
  return home;
}

function captureIo(env: NodeJS.ProcessEnv = {}): { io: Io; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: {
      out: (t) => (out += t),
      err: (t) => (err += t),
      env,
      cwd: process.cwd(),
      interactive: false,
      ask: async () => '',
      now: () => new Date().toISOString(),
    },
    out: () => out,
    err: () => err,
  };
}

// ---------------------------------------------------------------------------------------------
// the source of truth

test('the package ships a passing record for 0.169.0; QUALIFIED_VERSIONS is read from it, not written in code', () => {
  assert.ok(shippedQualifiedVersions().includes('0.169.0'));
  // 0.153.4 was run and refused: its SessionStart has no `fork` source (the record says so).
  const old = versionStatus('0.153.4', null);
  assert.equal(old.qualified, false);
  assert.match(old.rejected[0]?.problem ?? '', /hook-payloads/);
  assert.deepEqual([...QUALIFIED_VERSIONS], shippedQualifiedVersions());
  const shipped = loadRecords(null);
  assert.ok(shipped.length >= 1);
  for (const l of shipped) {
    assert.equal(l.source, 'package');
    assert.deepEqual(
      l.record!.checks.map((c) => c.name),
      [...CHECKS],
      'a shipped record holds every check of this Latch',
    );
    assert.ok(l.record!.checks.every((c) => c.evidence.length > 0));
    if (l.problem !== null) {
      // A release the project ran and refused ships its record too, with the reason.
      assert.equal(l.record!.qualified, false, `${l.path}: ${l.problem}`);
      assert.match(l.problem, /failed check\(s\): /);
      continue;
    }
    assert.ok(l.record!.checks.every((c) => c.ok));
    assert.match(l.record!.binary.sha256, /^[0-9a-f]{64}$/);
    assert.notEqual(l.record!.provisional, true);
  }
  const src = readFileSync(join('src', 'agents', 'codex', 'qualify.ts'), 'utf8');
  assert.doesNotMatch(src, /\[\s*'0\.\d+\.\d+'/, 'no hard-coded version list');
});

test("a machine's passing record qualifies its version; a failed, mismatched or unreadable one does not", () => {
  const home = homeWith({
    '0.172.0.json': record('0.172.0'),
    '0.170.0.json': record('0.170.0', false),
    '0.158.0.json': record('0.157.0'),
    '0.150.0.json': '{ not json',
    'notes.json': record('0.151.0'),
  });
  const v = qualifiedVersions(home);
  assert.ok(v.includes('0.172.0'));
  assert.ok(v.includes('0.169.0'), 'the shipped records still count');
  for (const no of ['0.170.0', '0.158.0', '0.157.0', '0.150.0', '0.151.0']) assert.ok(!v.includes(no), no);
  assert.deepEqual(v, [...v].sort(compareVersions));
  const failed = versionStatus('0.170.0', home);
  assert.equal(failed.qualified, false);
  assert.match(failed.rejected[0]!.problem, /failed check\(s\): hook-order/);
  assert.match(versionStatus('0.158.0', home).rejected[0]!.problem, /for 0\.157\.0, not 0\.158\.0/);
  assert.match(versionStatus('0.150.0', home).rejected[0]!.problem, /unreadable/);
  const ok = versionStatus('0.172.0', home);
  assert.equal(ok.qualified, true);
  assert.equal(ok.by!.source, 'machine');
  assert.equal(versionStatus('0.169.0', home).by!.source, 'package');
  assert.equal(qualifiedVersions(join(tmp(), 'nothing-here')).join(), shippedQualifiedVersions().join());
});

test('recordProblem: schema, version, every check ok and qualified:true are all required', () => {
  assert.equal(recordProblem(record('0.171.0'), '0.171.0'), null);
  assert.match(recordProblem({ ...record('0.171.0'), schema: 'x' }, null)!, /schema/);
  assert.match(recordProblem({ ...record('0.171.0'), version: '0.171' }, null)!, /not x\.y\.z/);
  assert.match(recordProblem({ ...record('0.171.0'), checks: [] }, null)!, /no checks/);
  assert.match(recordProblem({ ...record('0.171.0'), qualified: false }, null)!, /qualified is not true/);
  assert.match(recordProblem(record('0.171.0', false), null)!, /failed check/);
  assert.match(recordProblem([], null)!, /not a JSON object/);
});

test("native resume reads the store's $LATCH_HOME records (qualifiedVersionsOfStore)", () => {
  const home = homeWith({ '0.172.0.json': record('0.172.0') });
  const db = new Database(join(home, 'latch.db'));
  try {
    const v = qualifiedVersionsOfStore(db);
    assert.ok(v.includes('0.172.0') && v.includes('0.169.0'));
    assert.ok(!qualifiedVersions(null).includes('0.172.0'), 'only through that store');
  } finally {
    db.close();
  }
});

test('versions: parse `codex --version`, compare numerically', () => {
  assert.equal(parseCodexVersion('codex-cli 0.169.0'), '0.169.0');
  assert.equal(parseCodexVersion('codex-cli 0.172.0-alpha.3\n'), '0.172.0-alpha.3');
  assert.equal(parseCodexVersion('nothing'), null);
  assert.ok(compareVersions('0.99.0', '0.169.0') < 0);
  assert.ok(compareVersions('0.171.0', '0.169.1') > 0);
  assert.ok(compareVersions('0.171.0-alpha.1', '0.171.0') < 0);
});

// ---------------------------------------------------------------------------------------------
// hook schemas

const FIXTURE_SCHEMAS = join('test', 'fixtures', 'codex-hook-schemas');
function fixtureSchemas(): Map<string, Schema> {
  return new Map(
    readdirSync(FIXTURE_SCHEMAS).map((n) => [
      n.replace(/\.json$/, ''),
      JSON.parse(readFileSync(join(FIXTURE_SCHEMAS, n), 'utf8')) as Schema,
    ]),
  );
}

test('the shipped reference schemas are the 0.169.0 fixtures, and the shipped record digests match them', () => {
  const ref = referenceSchemas('0.169.0')!;
  const fx = fixtureSchemas();
  assert.deepEqual(diffSchemas(fx, ref), { same: [...fx.keys()], changed: [], added: [], removed: [] });
  const rec = JSON.parse(readFileSync(join('data', 'qualified', '0.169.0.json'), 'utf8')) as QualificationRecord;
  const data = rec.checks.find((c) => c.name === 'hook-schemas')!.data as { sha256: Record<string, string> };
  const canon = (x: unknown): string =>
    Array.isArray(x)
      ? `[${x.map(canon).join(',')}]`
      : x && typeof x === 'object'
        ? `{${Object.keys(x)
            .filter((k) => k !== '$schema')
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canon((x as Record<string, unknown>)[k])}`)
            .join(',')}}`
        : JSON.stringify(x);
  for (const [t, s] of ref) assert.equal(data.sha256[t], createHash('sha256').update(canon(s)).digest('hex'), t);
});

test('extractHookSchemas finds schemas embedded in binary bytes', () => {
  const text = readFileSync(join(FIXTURE_SCHEMAS, 'pre-compact.command.input.json'), 'utf8');
  const buf = Buffer.concat([
    Buffer.from([0, 1, 2, 0x7b, 0]),
    Buffer.from(text),
    Buffer.from([0, 0x7d, 9]),
    Buffer.from('{"$schema": "http://json-schema.org/draft-07/schema#", "title": "x"}'),
  ]);
  const got = extractHookSchemas(buf);
  assert.deepEqual([...got.keys()], ['pre-compact.command.input']);
  assert.equal(extractHookSchemas(Buffer.from('#!/bin/sh\nexec codex "$@"\n')).size, 0);
});

test('validate agrees with ajv on the captured 0.169.0 payloads and on broken ones', () => {
  const ajv = new Ajv.default({ strict: false, allErrors: true });
  const schemas = fixtureSchemas();
  const dir = join('test', 'fixtures', 'codex-payloads');
  const stem: Record<string, string> = {
    SessionStart: 'session-start',
    UserPromptSubmit: 'user-prompt-submit',
    PreToolUse: 'pre-tool-use',
    PostToolUse: 'post-tool-use',
    PreCompact: 'pre-compact',
    PostCompact: 'post-compact',
    Stop: 'stop',
    SessionEnd: 'session-end',
  };
  let n = 0;
  for (const f of readdirSync(dir)) {
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>;
    const s = schemas.get(`${stem[p.hook_event_name as string]}.command.input`)!;
    const { $schema: _, ...forAjv } = s;
    const check = ajv.compile(forAjv);
    const variants: unknown[] = [
      p,
      { ...p, extra_field: 1 },
      { ...p, session_id: 5 },
      Object.fromEntries(Object.entries(p).filter(([k]) => k !== 'cwd')),
      { ...p, hook_event_name: 'Nope' },
    ];
    if ('source' in p) variants.push({ ...p, source: 'teleport' });
    if ('trigger' in p) variants.push({ ...p, trigger: 'sometimes' });
    for (const v of variants) {
      assert.equal(
        validate(s, v).length === 0,
        check(v) as boolean,
        `${f}: ${JSON.stringify(v).slice(0, 120)} ${validate(s, v).join('; ')}`,
      );
      n++;
    }
    assert.deepEqual(validate(s, p), [], f);
  }
  assert.ok(n >= 70);
  // Replies (output schemas): the unknown-key rule that makes a hook fail open.
  const out = schemas.get('pre-tool-use.command.output')!;
  assert.deepEqual(
    validate(out, {
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'x' },
    }),
    [],
  );
  assert.match(
    validate(out, { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', why: 'x' } }).join(),
    /unknown property why/,
  );
  assert.match(validate({ type: 'object', patternProperties: {} }, {}).join(), /not supported/);
});

test('diffSchemas names the changed properties', () => {
  const ref = fixtureSchemas();
  const got = new Map(ref);
  const s = structuredClone(got.get('session-start.command.input')!) as { properties: Record<string, unknown> };
  s.properties.new_field = { type: 'string' };
  delete s.properties.model;
  got.set('session-start.command.input', s as Schema);
  got.delete('interrupt.command.input');
  got.set('future.command.input', { type: 'object' });
  const d = diffSchemas(ref, got);
  assert.deepEqual(d.changed, [{ title: 'session-start.command.input', detail: ['+new_field', '-model'] }]);
  assert.deepEqual(d.removed, ['interrupt.command.input']);
  assert.deepEqual(d.added, ['future.command.input']);
});

// ---------------------------------------------------------------------------------------------
// `latch qualify` usage (exit 2) without running anything

test('latch qualify: usage errors and a missing binary exit 2', async () => {
  const home = join(tmp(), 'latch');
  const run = async (args: string[], env: NodeJS.ProcessEnv = { LATCH_HOME: home, PATH: '' }) => {
    const c = captureIo(env);
    return { code: await cliMain(args, c.io), err: c.err() };
  };
  assert.equal((await run(['qualify'])).code, 2);
  assert.equal((await run(['qualify', 'claude'])).code, 2);
  const bad = await run(['qualify', 'codex', 'latest']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /not a Codex version/);
  const nofile = await run(['qualify', 'codex', '--codex', join(home, 'nope', 'codex')]);
  assert.equal(nofile.code, 2);
  assert.match(nofile.err, /no such file/);
  const nopath = await run(['qualify', 'codex']);
  assert.equal(nopath.code, 2);
  assert.match(nopath.err, /no `codex` on PATH/);
  const missing = await run(['qualify', 'codex', '0.1.0']);
  assert.equal(missing.code, 2);
  assert.match(missing.err, /--install/);
  assert.equal((await run(['qualify', 'codex', '--install'])).code, 2, '--install needs a VERSION');
  const help = await run(['qualify', '--help']);
  assert.equal(help.code, 0);
});

// ---------------------------------------------------------------------------------------------
// `latch doctor FILE`: 0 healthy, 1 damage, 2 unreadable, 3 healthy but unqualified writer

const REAL = join('test', 'fixtures', 'doctor', 'hooked-session.jsonl');
const damaged = (name: string) => join('test', 'fixtures', 'doctor', 'damaged', `${name}.jsonl.zst`);

function asWriter(version: string, source = REAL): string {
  const text = source.endsWith('.zst')
    ? Buffer.from(decompress(readFileSync(source))).toString('utf8')
    : readFileSync(source, 'utf8');
  const f = join(tmp(), `rollout-${version}.jsonl`);
  writeFileSync(f, text.replace('"cli_version":"0.169.0"', `"cli_version":"${version}"`));
  return f;
}

test('doctor FILE exit 0: a healthy rollout of a qualified release', async () => {
  const r = await fsckFile(REAL, { latchHome: null });
  assert.equal(r.exit_code, 0);
  assert.deepEqual(r.findings, []);
});

test('doctor FILE exit 3: a healthy rollout of an unqualified release is age, not damage', async () => {
  const f = asWriter('0.171.5');
  const r = await fsckFile(f, { latchHome: null });
  assert.equal(r.exit_code, 3);
  assert.deepEqual(
    r.findings.map((x) => [x.code, x.severity]),
    [['unqualified_writer', 'notice']],
  );
  assert.match(r.findings[0]!.message, /latch qualify codex 0\.171\.5/);
  const c = captureIo({ LATCH_HOME: join(tmp(), 'none') });
  assert.equal(await transcriptDoctor(c.io, { file: f }), 3);
  assert.match(c.out(), /NOTE  unqualified_writer/);
  assert.match(c.out(), /age, not damage/);
  // The same file once this machine qualified 0.171.5: exit 0.
  const home = homeWith({ '0.171.5.json': record('0.171.5') });
  assert.equal((await fsckFile(f, { latchHome: home })).exit_code, 0);
  const q = captureIo({ LATCH_HOME: home });
  assert.equal(await transcriptDoctor(q.io, { file: f }), 0);
});

test('doctor FILE: an unknown record type is a notice from an unqualified writer, an error from a qualified one', async () => {
  const qualified = await fsckFile(damaged('unknown-record-type'), { latchHome: null });
  assert.equal(qualified.exit_code, 1);
  assert.equal(qualified.findings.find((x) => x.code === 'unknown_record_type')!.severity, 'error');
  const newer = await fsckFile(asWriter('0.180.0', damaged('unknown-record-type')), { latchHome: null });
  assert.equal(newer.exit_code, 3);
  assert.deepEqual(newer.findings.map((x) => [x.code, x.severity]).sort(), [
    ['unknown_record_type', 'notice'],
    ['unqualified_writer', 'notice'],
  ]);
});

test('doctor FILE exit 1: damage wins over age; exit 2: unreadable', async () => {
  const both = await fsckFile(asWriter('0.171.5', damaged('garbage-line')), { latchHome: null });
  assert.equal(both.exit_code, 1);
  assert.deepEqual(both.findings.map((x) => [x.code, x.severity]).sort(), [
    ['parse_error', 'error'],
    ['unqualified_writer', 'notice'],
  ]);
  const c = captureIo({ LATCH_HOME: join(tmp(), 'none') });
  assert.equal(await transcriptDoctor(c.io, { file: damaged('truncated-last-line') }), 1);
  const gone = captureIo({ LATCH_HOME: join(tmp(), 'none') });
  assert.equal(await transcriptDoctor(gone.io, { file: join(tmp(), 'missing.jsonl') }), 2);
  // a missing session_meta is damage (its writer is unknown: the notice does not hide it)
  assert.equal((await fsckFile(damaged('missing-session-meta'), { latchHome: null })).exit_code, 1);
});

test('doctorExit and gradeFindings: the order 2 > 1 > 3 > 0', () => {
  assert.equal(doctorExit(false, []), 0);
  assert.equal(doctorExit(false, [{ severity: 'notice' }]), 3);
  assert.equal(doctorExit(false, [{ severity: 'notice' }, { severity: 'warning' }]), 1);
  assert.equal(doctorExit(false, [{ severity: 'error' }]), 1);
  assert.equal(doctorExit(true, [{ severity: 'notice' }]), 2);
  const g = gradeFindings([{ code: 'unknown_method', severity: 'warning', message: 'm' }], {
    cli_version: '0.169.0',
    qualified: true,
  });
  assert.equal(g[0]!.severity, 'warning', 'a qualified writer keeps its warnings');
});
