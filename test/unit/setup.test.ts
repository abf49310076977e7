// `latch setup codex` / `latch uninstall codex`: merging into someone else's hooks.json, idempotence,
// the shape Codex accepts, and the fail-closed PreToolUse wrapper run through a real /bin/sh.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { cliMain } from '../../src/cli.js';
import type { Io } from '../../src/kit/io.js';
import {
  hookCommand,
  isLatchHandler,
  LATCH_EVENTS,
  mergeLatchHooks,
  removeLatchHooks,
  setupCodex,
  uninstallCodex,
} from '../../src/agents/codex/setup.js';
import { listCodexHooks, resolveCodex } from '../../src/agents/codex/app-server.js';
import { TRACKED_TOOL_MATCHER } from '../../src/agents/codex/tools.js';
import { openStore } from '../../src/store/store.js';
import { loadRecorded } from '../../src/tamper/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(ROOT, 'dist', 'latch.cjs');
const NODE = process.execPath;
const LATCH_EVENT_NAMES = LATCH_EVENTS.map((e) => e.event);

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Box {
  dir: string;
  codexHome: string;
  hooksFile: string;
  io: Io & { outText(): string; errText(): string };
}

const boxes: string[] = [];
after(() => {
  for (const d of boxes) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

function box(): Box {
  const dir = mkdtempSync(join(tmpdir(), 'latch-setup-test-'));
  boxes.push(dir);
  const codexHome = join(dir, 'codex');
  mkdirSync(codexHome);
  let out = '';
  let err = '';
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(CODEX_|LATCH_|XDG_STATE_HOME$)/.test(k)) env[k] = v;
  env.LATCH_HOME = join(dir, 'state');
  const io = {
    out: (t: string) => void (out += t),
    err: (t: string) => void (err += t),
    env,
    cwd: dir,
    interactive: false,
    ask: async () => '',
    now: () => new Date().toISOString(),
    outText: () => out,
    errText: () => err,
  };
  return { dir, codexHome, hooksFile: join(codexHome, 'hooks.json'), io };
}

const cmd = (command: string, extra: Record<string, unknown> = {}) => ({ type: 'command', command, ...extra });

/** A hooks.json with other people's handlers on Latch's events and others, matchers or not, extra keys. */
function foreignFile(): Json {
  return {
    hooks: {
      PreToolUse: [
        {
          matcher: 'Bash',
          hooks: [
            cmd('audit-bash --log /var/log/a', { timeout: 5 }),
            cmd('notify pre', { statusMessage: 'notifying' }),
          ],
          comment: 'team policy',
        },
        { hooks: [cmd('trace-all')], _owner: 'sre' },
      ],
      SessionStart: [{ matcher: 'startup|resume', hooks: [cmd('motd')] }],
      Stop: [{ hooks: [cmd('say done', { timeout: 3 })] }],
      PostToolUse: [{ matcher: 'apply_patch', hooks: [cmd('fmt --check'), cmd('lint')] }],
      UserPromptSubmit: [
        { hooks: [cmd('redact-secrets', { timeout: 10 })] },
        { matcher: 'ignored', hooks: [cmd('log-prompt')] },
      ],
    },
  };
}

function writeJson(file: string, data: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n');
}

const read = (file: string): Json => JSON.parse(readFileSync(file, 'utf8'));

/** The handlers of an event, flattened with their group's matcher, in file order. */
function handlers(file: Json, event: string): { matcher: string | null; command: string; latch: boolean }[] {
  return (file.hooks?.[event] ?? []).flatMap((g: Json) =>
    (g.hooks ?? []).map((h: Json) => ({ matcher: g.matcher ?? null, command: h.command, latch: isLatchHandler(h) })),
  );
}

/** The shape rules Codex 0.169 enforces when it parses hooks.json (a violation makes it skip the WHOLE file). */
function assertCodexShape(file: Json, opts: { onlyHooksKey?: boolean } = {}): void {
  assert.ok(file && typeof file === 'object' && !Array.isArray(file));
  if (opts.onlyHooksKey !== false) assert.deepEqual(Object.keys(file), ['hooks']);
  assert.ok(file.hooks && typeof file.hooks === 'object' && !Array.isArray(file.hooks));
  for (const [event, groups] of Object.entries<Json>(file.hooks)) {
    assert.ok(Array.isArray(groups), `${event} is a list`);
    for (const g of groups) {
      assert.ok(g && typeof g === 'object' && !Array.isArray(g), `${event} group is an object`);
      if ('matcher' in g) assert.equal(typeof g.matcher, 'string', `${event} matcher is a string`);
      assert.ok(Array.isArray(g.hooks), `${event} group has a hooks list`);
      for (const h of g.hooks) {
        assert.equal(h.type, 'command', `${event} handler type`);
        assert.equal(typeof h.command, 'string');
        if ('timeout' in h)
          assert.ok(
            Number.isInteger(h.timeout) && h.timeout >= 0,
            `${event} timeout is a u64 number, got ${JSON.stringify(h.timeout)}`,
          );
        if ('statusMessage' in h) assert.equal(typeof h.statusMessage, 'string');
      }
    }
  }
}

function assertLatchInstalled(file: Json, entry = ENTRY): void {
  for (const spec of LATCH_EVENTS) {
    const mine = handlers(file, spec.event).filter((h) => h.latch);
    assert.equal(mine.length, 1, `exactly one Latch handler for ${spec.event}`);
    assert.equal(mine[0]!.command, hookCommand(spec.event, NODE, entry));
    assert.equal(mine[0]!.matcher, spec.matcher, `${spec.event} matcher`);
    const h = file.hooks[spec.event].flatMap((g: Json) => g.hooks).find((x: Json) => isLatchHandler(x));
    assert.equal(h.timeout, spec.timeout);
    assert.equal(h.type, 'command');
  }
}

before(() => {
  assert.ok(existsSync(ENTRY), `${ENTRY} is missing: run \`npm run build\` first`);
});

describe('latch setup codex: merging', () => {
  test('fresh CODEX_HOME: creates hooks.json with only the `hooks` key, one handler per Latch event, and the store', async () => {
    const b = box();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const file = read(b.hooksFile);
    assertCodexShape(file);
    assertLatchInstalled(file);
    assert.deepEqual(Object.keys(file.hooks), LATCH_EVENT_NAMES);
    assert.equal(TRACKED_TOOL_MATCHER, null, 'every tool reaches Latch (a new tool name is classified, never skipped)');
    assert.ok(!('matcher' in file.hooks.PreToolUse[0]), 'no matcher: every tool');
    assert.ok(!('matcher' in file.hooks.SessionStart[0]), 'no matcher: every session start');
    assert.ok(existsSync(join(b.io.env.LATCH_HOME!, 'latch.db')), 'store created');
    for (const e of LATCH_EVENT_NAMES) assert.match(b.io.outText(), new RegExp(`${e}: added`));
    assert.match(b.io.outText(), /trust/);
  });

  test("other users' handlers are kept in order (matchers, several per group, extra group keys); Latch's are appended", async () => {
    const b = box();
    const before = foreignFile();
    writeJson(b.hooksFile, before);
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const after = read(b.hooksFile);
    assertCodexShape(after);
    assertLatchInstalled(after);
    // Every foreign group is still there, at the same index, byte-for-byte in structure.
    for (const [event, groups] of Object.entries<Json[]>(before.hooks)) {
      assert.deepEqual(
        after.hooks[event].slice(0, groups.length),
        groups,
        `${event}: foreign groups unchanged and first`,
      );
    }
    assert.ok(!LATCH_EVENT_NAMES.includes('UserPromptSubmit'));
    assert.deepEqual(
      after.hooks.UserPromptSubmit,
      before.hooks.UserPromptSubmit,
      'events Latch does not use are untouched',
    );
    for (const [event, groups] of Object.entries<Json[]>(before.hooks)) {
      const latchGroups = LATCH_EVENT_NAMES.includes(event) ? 1 : 0;
      assert.equal(after.hooks[event].length, groups.length + latchGroups, `${event}: one group appended for Latch`);
    }
    assert.equal(after.hooks.PreToolUse.length, 3);
    assert.deepEqual(
      after.hooks.PreToolUse[2].hooks.map((h: Json) => isLatchHandler(h)),
      [true],
    );
  });

  test('setup twice: byte-identical file, every event reported unchanged', async () => {
    const b = box();
    writeJson(b.hooksFile, foreignFile());
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const first = readFileSync(b.hooksFile);
    const b2 = { ...b.io, out: (t: string) => void (text += t) };
    let text = '';
    assert.equal(await setupCodex(b2, { codexHome: b.codexHome, entry: ENTRY }), 0);
    assert.ok(readFileSync(b.hooksFile).equals(first), 'second run writes the same bytes');
    for (const e of LATCH_EVENT_NAMES) assert.match(text, new RegExp(`${e}: unchanged`));
    assert.doesNotMatch(text, /: (added|updated)/);
  });

  test('an old Latch handler (other entry path) is updated in place, keeping its position; duplicates are collapsed', async () => {
    const b = box();
    const old = '/opt/old latch/dist/latch.cjs';
    const oldHandler = (event: string) =>
      cmd(hookCommand(event, '/usr/bin/node', old), { timeout: 1, statusMessage: 'old' });
    writeJson(b.hooksFile, {
      hooks: {
        PreToolUse: [
          { matcher: 'Bash', hooks: [cmd('audit-bash')] },
          { matcher: '^(Bash|apply_patch)$', hooks: [oldHandler('PreToolUse')] },
          { hooks: [cmd('trace-all')] },
          { matcher: TRACKED_TOOL_MATCHER, hooks: [oldHandler('PreToolUse')] }, // duplicate, alone in its group
        ],
        PreCompact: [{ hooks: [oldHandler('PreCompact'), cmd('backup'), oldHandler('PreCompact')] }],
      },
    });
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const after = read(b.hooksFile);
    assertCodexShape(after);
    assertLatchInstalled(after);
    assert.deepEqual(
      handlers(after, 'PreToolUse').map((h) => (h.latch ? 'LATCH' : h.command)),
      ['audit-bash', 'LATCH', 'trace-all'],
      'the Latch handler stays second; the duplicate group is gone',
    );
    assert.ok(!('matcher' in after.hooks.PreToolUse[1]), 'its group matcher is brought up to date (none: every tool)');
    assert.equal(after.hooks.PreToolUse.length, 3);
    assert.deepEqual(
      handlers(after, 'PreCompact').map((h) => (h.latch ? 'LATCH' : h.command)),
      ['LATCH', 'backup'],
      'first occurrence updated in place, the second dropped',
    );
    assert.match(b.io.outText(), /PreToolUse: updated/);
    assert.match(b.io.outText(), /PreCompact: updated/);
    assert.match(b.io.outText(), /SessionStart: added/);
  });

  test('a current Latch handler with a duplicate is reported as a change, not `unchanged`', async () => {
    const b = box();
    const current = mergeLatchHooks({}, NODE, ENTRY).file;
    current.hooks!.PostCompact!.push(structuredClone(current.hooks!.PostCompact![0]!));
    writeJson(b.hooksFile, current);
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    assert.equal(read(b.hooksFile).hooks.PostCompact.length, 1);
    assert.match(b.io.outText(), /PostCompact: updated/);
    assert.match(b.io.outText(), /PreToolUse: unchanged/);
  });

  test("a Latch handler sharing a group with someone else's handler never changes that group's matcher", () => {
    // The matcher is part of a handler's trust hash in Codex: changing it would silently un-trust the other handler.
    const shared = {
      matcher: 'Bash',
      hooks: [cmd('audit-bash'), cmd(hookCommand('PreToolUse', NODE, '/old/dist/latch.cjs'))],
    };
    const sessionShared = {
      matcher: 'startup',
      hooks: [cmd(hookCommand('SessionStart', NODE, '/old/dist/latch.cjs')), cmd('motd')],
    };
    const { file } = mergeLatchHooks({ hooks: { PreToolUse: [shared], SessionStart: [sessionShared] } }, NODE, ENTRY);
    assertCodexShape(file);
    assertLatchInstalled(file);
    assert.deepEqual(file.hooks!.PreToolUse![0], { matcher: 'Bash', hooks: [cmd('audit-bash')] });
    assert.deepEqual(file.hooks!.SessionStart![0], { matcher: 'startup', hooks: [cmd('motd')] });
  });

  test("someone else's empty groups are kept: Codex counts them in trust keys (<file>:<event>:<group>:<handler>)", () => {
    const input = {
      hooks: {
        PreToolUse: [
          { matcher: 'x', hooks: [] },
          { matcher: 'Bash', hooks: [cmd('audit-bash')] },
        ],
        UserPromptSubmit: [],
      },
    };
    const { file } = mergeLatchHooks(input, NODE, ENTRY);
    assert.deepEqual(file.hooks!.PreToolUse!.slice(0, 2), input.hooks.PreToolUse, 'audit-bash keeps group index 1');
    assert.deepEqual(file.hooks!.UserPromptSubmit, []);
    assert.deepEqual(removeLatchHooks(file).file, input);
  });

  test('unknown top-level keys are preserved (Codex 0.169 ignores them); the result is still a valid hooks file', async () => {
    const b = box();
    writeJson(b.hooksFile, {
      $schema: 'https://example.invalid/hooks.json',
      description: 'team hooks',
      ...foreignFile(),
    });
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const after = read(b.hooksFile);
    assert.deepEqual(Object.keys(after), ['$schema', 'description', 'hooks']);
    assertCodexShape(after, { onlyHooksKey: false });
    assertLatchInstalled(after);
    assert.equal(await uninstallCodex(b.io, { codexHome: b.codexHome }), 0);
    assert.deepEqual(read(b.hooksFile), {
      $schema: 'https://example.invalid/hooks.json',
      description: 'team hooks',
      ...foreignFile(),
    });
  });

  test('--project DIR writes DIR/.codex/hooks.json and leaves CODEX_HOME alone (through cliMain)', async () => {
    const b = box();
    const project = join(b.dir, 'proj with space');
    mkdirSync(project);
    b.io.env.CODEX_HOME = b.codexHome;
    assert.equal(await cliMain(['setup', 'codex', '--project', project], b.io), 0, b.io.errText());
    const file = join(project, '.codex', 'hooks.json');
    assertCodexShape(read(file));
    assertLatchInstalled(read(file));
    assert.ok(!existsSync(b.hooksFile), 'user hooks.json not created');
    assert.ok(b.io.outText().includes(file));
  });

  test('--dry-run writes nothing (no hooks.json, no store), prints the would-be file', async () => {
    const b = box();
    assert.equal(await cliMain(['setup', 'codex', '--codex-home', b.codexHome, '--dry-run'], b.io), 0, b.io.errText());
    assert.ok(!existsSync(b.hooksFile));
    assert.ok(!existsSync(b.io.env.LATCH_HOME!), 'no store either');
    assert.match(b.io.outText(), /Would update/);
    assert.match(b.io.outText(), /"PreToolUse"/);

    writeJson(b.hooksFile, foreignFile());
    const bytes = readFileSync(b.hooksFile);
    assert.equal(await cliMain(['setup', 'codex', '--codex-home', b.codexHome, '--dry-run'], b.io), 0);
    assert.ok(readFileSync(b.hooksFile).equals(bytes));
    assert.deepEqual(readdirSync(b.codexHome), ['hooks.json'], 'no temp file left');
  });

  test('invalid JSON, a non-object, or malformed groups: error, file untouched', async () => {
    for (const text of [
      '{"hooks": {',
      '[]',
      '{"hooks": []}',
      '{"hooks": {"PreToolUse": {"matcher": "x"}}}',
      '{"hooks": {"PreToolUse": [null]}}',
      '{"hooks": {"PreCompact": [{"hooks": "x"}]}}',
    ]) {
      const b = box();
      writeFileSync(b.hooksFile, text);
      const code = await cliMain(['setup', 'codex', '--codex-home', b.codexHome], b.io);
      assert.equal(code, 1, `${text}: ${b.io.errText()}`);
      assert.match(b.io.errText(), /latch setup: .*hooks\.json/);
      assert.equal(readFileSync(b.hooksFile, 'utf8'), text, 'untouched');
      assert.equal(await cliMain(['uninstall', 'codex', '--codex-home', b.codexHome], b.io), 1, text);
      assert.equal(readFileSync(b.hooksFile, 'utf8'), text);
    }
  });

  test('the entry must exist', async () => {
    const b = box();
    await assert.rejects(
      setupCodex(b.io, { codexHome: b.codexHome, entry: join(b.dir, 'nope.cjs') }),
      /does not exist/,
    );
    assert.ok(!existsSync(b.hooksFile));
  });
});

describe('latch uninstall codex', () => {
  test("removes only Latch's handlers and the groups/events it emptied; the rest is unchanged in structure", async () => {
    const b = box();
    const original = foreignFile();
    writeJson(b.hooksFile, original);
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    // A Latch handler that shares a group with a foreign one (hand-edited): only the handler goes.
    const withShared = read(b.hooksFile);
    withShared.hooks.PostToolUse[0].hooks.push(cmd(hookCommand('PostToolUse', NODE, ENTRY)));
    writeJson(b.hooksFile, withShared);
    assert.equal(await uninstallCodex(b.io, { codexHome: b.codexHome }), 0);
    const after = read(b.hooksFile);
    assert.deepEqual(after, original);
    assertCodexShape(after);
    const removed = /Removed Latch handlers from .*: (.*)\n/.exec(b.io.outText());
    assert.deepEqual(removed![1]!.split(', ').sort(), [...new Set([...LATCH_EVENT_NAMES, 'PostToolUse'])].sort());
  });

  test('a file with only Latch handlers ends as {"hooks": {}}', async () => {
    const b = box();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    assert.equal(await cliMain(['uninstall', 'codex', '--codex-home', b.codexHome], b.io), 0);
    assert.deepEqual(read(b.hooksFile), { hooks: {} });
    assertCodexShape(read(b.hooksFile));
  });

  test('--dry-run writes nothing; no file / no Latch handlers: exit 0, file untouched', async () => {
    const b = box();
    assert.equal(await uninstallCodex(b.io, { codexHome: b.codexHome }), 0);
    assert.match(b.io.outText(), /does not exist/);
    assert.ok(!existsSync(b.hooksFile));

    writeJson(b.hooksFile, foreignFile());
    const foreignBytes = readFileSync(b.hooksFile);
    assert.equal(await uninstallCodex(b.io, { codexHome: b.codexHome }), 0);
    assert.match(b.io.outText(), /No Latch handlers/);
    assert.ok(readFileSync(b.hooksFile).equals(foreignBytes));

    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const installed = readFileSync(b.hooksFile);
    assert.equal(await cliMain(['uninstall', 'codex', '--codex-home', b.codexHome, '--dry-run'], b.io), 0);
    assert.ok(readFileSync(b.hooksFile).equals(installed));
    assert.match(b.io.outText(), /Would remove/);
  });

  test('--project DIR', async () => {
    const b = box();
    const project = join(b.dir, 'p');
    const file = join(project, '.codex', 'hooks.json');
    writeJson(file, foreignFile());
    assert.equal(await cliMain(['setup', 'codex', '--project', project], b.io), 0);
    assert.equal(await cliMain(['uninstall', 'codex', '--project', project], b.io), 0);
    assert.deepEqual(read(file), foreignFile());
  });
});

describe('setup/uninstall properties', () => {
  const word = fc.stringMatching(/^[a-z][a-z0-9 _./-]{0,15}$/);
  const foreignCommand = word.filter((c) => !isLatchHandler({ command: c }));
  const handler = fc.record(
    {
      type: fc.constant('command'),
      command: foreignCommand,
      timeout: fc.nat({ max: 600 }),
      statusMessage: word,
      async: fc.boolean(),
    },
    { requiredKeys: ['type', 'command'], noNullPrototype: true },
  );
  const group = fc.record(
    {
      matcher: fc.constantFrom('Bash', 'apply_patch', '*', 'startup', '^mcp__.*$'),
      hooks: fc.array(handler, { maxLength: 3 }),
      note: word,
    },
    { requiredKeys: ['hooks'], noNullPrototype: true },
  );
  const events = fc.constantFrom(
    ...new Set([...LATCH_EVENT_NAMES, 'PostToolUse', 'Stop', 'UserPromptSubmit', 'SubagentStart', 'PermissionRequest']),
  );
  const hooksFile = fc.record(
    {
      hooks: fc.dictionary(events, fc.array(group, { maxLength: 3 }), { maxKeys: 7, noNullPrototype: true }),
      description: word,
    },
    { requiredKeys: ['hooks'], noNullPrototype: true },
  );

  test('uninstall(setup(x)) deep-equals x (but for Latch events that were empty lists); setup is idempotent; shape holds', () => {
    fc.assert(
      fc.property(hooksFile, fc.constantFrom(ENTRY, "/home/o'brien/my latch/dist/latch.cjs"), (x, entry) => {
        const once = mergeLatchHooks(x, NODE, entry).file;
        const twice = mergeLatchHooks(JSON.parse(JSON.stringify(once)), NODE, entry);
        assert.equal(JSON.stringify(twice.file), JSON.stringify(once), 'idempotent to the byte');
        assert.ok(twice.changes.every((c) => c.action === 'unchanged'));
        assertCodexShape(once, { onlyHooksKey: false });
        assertLatchInstalled(once, entry);
        const back = removeLatchHooks(JSON.parse(JSON.stringify(once))).file;
        const expected = structuredClone(x);
        for (const e of LATCH_EVENT_NAMES) if (expected.hooks[e]?.length === 0) delete expected.hooks[e];
        assert.deepEqual(back, expected);
        // Foreign groups keep their indices (Codex trust keys are positional).
        for (const [event, groups] of Object.entries(x.hooks))
          assert.deepEqual(once.hooks![event]!.slice(0, groups.length), groups);
      }),
      { numRuns: 300 },
    );
  });

  test('uninstall never touches a file without Latch handlers', () => {
    fc.assert(
      fc.property(hooksFile, (x) => {
        const r = removeLatchHooks(x);
        assert.deepEqual(r.changes, []);
        assert.deepEqual(r.file, x);
      }),
      { numRuns: 200 },
    );
  });
});

describe('real Codex 0.169 reads what setup writes', () => {
  test('all handlers load without warnings; foreign trust keys and hashes are unchanged by setup and uninstall', async () => {
    const b = box();
    const env = {
      ...b.io.env,
      CODEX_HOME: b.codexHome,
      PATH: [dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
    };
    const codex = resolveCodex(env);
    assert.ok(codex, 'the Codex in node_modules');
    const cwd = join(b.dir, 'w');
    mkdirSync(cwd);
    const original = foreignFile();
    original.hooks.PreToolUse.unshift({ matcher: 'unused', hooks: [] }); // an empty group still takes an index
    writeJson(b.hooksFile, original);
    const list = async () => {
      const [entry] = await listCodexHooks(codex, { env, codexHome: b.codexHome, cwds: [cwd] });
      assert.ok(entry);
      assert.deepEqual(entry.warnings, []);
      assert.deepEqual(entry.errors, []);
      return entry.hooks;
    };
    const foreign = (hs: Awaited<ReturnType<typeof list>>) =>
      hs.filter((h) => !/latch\.cjs/.test(h.command ?? '')).map((h) => [h.key, h.currentHash]);
    const beforeHooks = await list();
    assert.equal(beforeHooks.length, 9);
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    const installed = await list();
    assert.deepEqual(foreign(installed), foreign(beforeHooks), 'foreign handlers keep key and hash: still trusted');
    const mine = installed.filter((h) => /latch\.cjs/.test(h.command ?? ''));
    const camel = (e: string) => e[0]!.toLowerCase() + e.slice(1);
    assert.deepEqual(
      mine.map((h) => h.eventName).sort(),
      LATCH_EVENT_NAMES.map(camel).sort(),
      'Codex loads a handler for every Latch event',
    );
    assert.equal(mine.find((h) => h.eventName === 'preToolUse')!.matcher, TRACKED_TOOL_MATCHER);
    assert.equal(await uninstallCodex(b.io, { codexHome: b.codexHome }), 0);
    assert.deepEqual(foreign(await list()), foreign(beforeHooks));
  });
});

describe('the hook command text', () => {
  let dir: string;
  let bashPayload: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "latch-hookcmd-it's a dir-"));
    boxes.push(dir);
    const p = JSON.parse(
      readFileSync(join(ROOT, 'test', 'fixtures', 'codex-payloads', 'pre-tool-use-bash.json'), 'utf8'),
    );
    bashPayload = JSON.stringify({ ...p, cwd: dir, transcript_path: join(dir, 'rollout.jsonl') });
  });

  /** What Codex does with a command handler: `sh -c <command>`, payload on stdin. */
  function runAsCodex(command: string, env: NodeJS.ProcessEnv = { ...process.env, LATCH_HOME: join(dir, 'no-store') }) {
    const r = spawnSync('/bin/sh', ['-c', command], { input: bashPayload, env, encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
  }

  function script(name: string, body: string): string {
    const sub = join(dir, "sub dir 'q'");
    mkdirSync(sub, { recursive: true });
    const p = join(sub, name);
    writeFileSync(p, body);
    return p;
  }

  test('only PreToolUse is wrapped; the others run the entry directly', () => {
    for (const e of ['SessionStart', 'PreCompact', 'PostCompact', 'Stop', 'UserPromptSubmit']) {
      assert.equal(hookCommand(e, '/n', '/e.cjs'), `'/n' '/e.cjs' hook codex --event ${e}`);
    }
    assert.match(hookCommand('PreToolUse', '/n', '/e.cjs'), /^\/bin\/sh -c '/);
  });

  test('(a) PreToolUse with a missing entry (the package removed without uninstall): exit 2, one sentence naming the command that removes the handlers, no stack trace', () => {
    const entry = join(dir, 'missing', 'latch.cjs');
    const r = runAsCodex(hookCommand('PreToolUse', NODE, entry));
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `Latch is not installed any more (${entry} is missing), and its codex hooks still run: blocking this call. Remove them with: npx agent-latch uninstall codex\n`,
    );
  });

  test('(b) an entry that throws: exit 2', () => {
    const r = runAsCodex(hookCommand('PreToolUse', NODE, script('throws.cjs', "throw new Error('boom')\n")));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /boom/);
    assert.match(r.stderr, /blocking it/);
  });

  test('(c) an entry that exits 1 (or 3, or dies by a signal): exit 2', () => {
    for (const body of [
      'process.exit(1)',
      'process.exit(3)',
      'process.exit(127)',
      "process.kill(process.pid, 'SIGKILL')",
    ]) {
      const r = runAsCodex(hookCommand('PreToolUse', NODE, script('exits.cjs', body)));
      assert.equal(r.code, 2, body);
      assert.match(r.stderr, /blocking it/, body);
    }
  });

  test('(d) an entry that exits 0 with no output: exit 0, nothing printed; its exit 2 and stdout pass through', () => {
    const r = runAsCodex(
      hookCommand(
        'PreToolUse',
        NODE,
        script('ok.cjs', 'process.stdin.resume(); process.stdin.on("end", () => process.exit(0))'),
      ),
    );
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, '');
    const two = runAsCodex(
      hookCommand(
        'PreToolUse',
        NODE,
        script('two.cjs', "process.stdout.write('{\"x\":1}\\n'); process.stderr.write('no'); process.exit(2)"),
      ),
    );
    assert.equal(two.code, 2);
    assert.equal(two.stdout, '{"x":1}\n');
    assert.equal(two.stderr, 'no', 'exit 2 is passed through without the wrapper message');
  });

  test('the entry receives the payload on stdin', () => {
    const out = join(dir, 'stdin-copy.json');
    const entry = script(
      'copy.cjs',
      `require('fs').writeFileSync(${JSON.stringify(out)}, require('fs').readFileSync(0)); console.log(process.argv.slice(2).join(' '))`,
    );
    const r = runAsCodex(hookCommand('PreToolUse', NODE, entry));
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'hook codex --event PreToolUse\n');
    assert.equal(readFileSync(out, 'utf8'), bashPayload);
  });

  test('(e) the real dist/latch.cjs with a missing store: a JSON deny on stdout', () => {
    const r = runAsCodex(hookCommand('PreToolUse', NODE, ENTRY));
    assert.equal(r.code, 0, r.stderr);
    const reply = JSON.parse(r.stdout);
    assert.equal(reply.hookSpecificOutput.hookEventName, 'PreToolUse');
    assert.equal(reply.hookSpecificOutput.permissionDecision, 'deny');
    assert.match(reply.hookSpecificOutput.permissionDecisionReason, /fail closed/);
  });

  test('Stop and other events are NOT wrapped: a crash there does not become exit 2 (which would block)', () => {
    const failing = script('fail.cjs', 'process.exit(1)');
    for (const e of ['Stop', 'SessionStart', 'PreCompact', 'PostCompact']) {
      const r = runAsCodex(hookCommand(e, NODE, failing));
      assert.equal(r.code, 1, e);
      assert.doesNotMatch(r.stderr, /blocking/);
    }
    const missing = runAsCodex(hookCommand('Stop', NODE, join(dir, 'missing.cjs')));
    assert.notEqual(missing.code, 2);
  });

  test('node and entry paths with spaces and single quotes are quoted for sh', () => {
    const binDir = join(dir, "my 'node' bin");
    mkdirSync(binDir, { recursive: true });
    const node = join(binDir, 'node');
    if (!existsSync(node)) symlinkSync(NODE, node);
    const entry = script("it's ok.cjs", 'console.log(JSON.stringify(process.argv.slice(2)))');
    chmodSync(entry, 0o644);
    for (const e of ['PreToolUse', 'Stop']) {
      const r = runAsCodex(hookCommand(e, node, entry));
      assert.equal(r.code, 0, `${e}: ${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout), ['hook', 'codex', '--event', e]);
    }
    const missing = runAsCodex(hookCommand('PreToolUse', node, join(binDir, "gone 'x'.cjs")));
    assert.equal(missing.code, 2);
  });

  test('setup writes exactly these commands: the PreToolUse one is wrapped, the rest are not', () => {
    const { file } = mergeLatchHooks({}, NODE, ENTRY);
    for (const spec of LATCH_EVENTS) {
      const c = file.hooks![spec.event]![0]!.hooks![0]!.command!;
      assert.equal(c, hookCommand(spec.event, NODE, ENTRY));
      assert.equal(c.startsWith('/bin/sh -c '), spec.event === 'PreToolUse', spec.event);
    }
  });
});

test("uninstall keeps an emptied Latch group as a placeholder when someone else's group follows it (trust keys are positional)", () => {
  const latchFirst = mergeLatchHooks({}, NODE, ENTRY).file;
  const foreign = { hooks: [{ type: 'command', command: 'echo theirs' }] };
  latchFirst.hooks!.Stop!.push(foreign);
  const { file } = removeLatchHooks(latchFirst);
  assert.deepEqual(file.hooks!.Stop, [{ hooks: [] }, foreign], 'their handler stays at group index 1');
  assert.equal(file.hooks!.PreToolUse, undefined, 'an event with only Latch groups is removed');
});

describe('setup records the registration fingerprint (src/tamper/index.ts)', () => {
  test('user setup: the hooks file, config.toml, the installed files; the output says how to re-record', async () => {
    const b = box();
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY }), 0);
    assert.match(b.io.outText(), /Registration fingerprint recorded \(\d+ files/);
    assert.match(b.io.outText(), /re-run `latch setup codex` to record it again/);
    const db = openStore(b.io.env.LATCH_HOME!, { create: false });
    try {
      const rec = loadRecorded(db);
      assert.deepEqual(rec.scopes.map((s) => [s.scope, s.kind]).sort(), [
        ['*', 'install'],
        [b.hooksFile, 'user'],
      ]);
      const roles = new Map(rec.files.map((f) => [f.path, f.role]));
      assert.equal(roles.get(b.hooksFile), 'hooks');
      assert.equal(roles.get(join(b.codexHome, 'config.toml')), 'config');
      assert.equal(roles.get(ENTRY), 'installed');
      assert.equal(roles.get(join(ROOT, 'dist', 'main.cjs.v8cache')), 'installed');
      assert.equal(roles.get(join(ROOT, 'bin', 'latch.cjs')), 'installed');
      const install = JSON.parse(rec.scopes.find((s) => s.kind === 'install')!.json);
      assert.equal(install.entry, ENTRY);
      assert.equal(install.node, process.execPath);
    } finally {
      db.close();
    }
  });

  test('--project: the project hooks file with its .codex/config.toml and the user config.toml; --dry-run records nothing', async () => {
    const b = box();
    const project = join(b.dir, 'proj');
    mkdirSync(project);
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, dryRun: true }), 0);
    assert.ok(!existsSync(b.io.env.LATCH_HOME!));
    assert.equal(await setupCodex(b.io, { codexHome: b.codexHome, entry: ENTRY, project }), 0);
    const db = openStore(b.io.env.LATCH_HOME!, { create: false });
    try {
      const rec = loadRecorded(db);
      const file = join(project, '.codex', 'hooks.json');
      assert.deepEqual(rec.scopes.find((s) => s.scope === file)?.kind, 'project');
      const configs = rec.files
        .filter((f) => f.scope === file && f.role === 'config')
        .map((f) => f.path)
        .sort();
      for (const c of [
        join(b.codexHome, 'config.toml'),
        join(project, '.codex', 'config.toml'),
        join(b.codexHome, 'managed_config.toml'),
      ])
        assert.ok(configs.includes(c), c);
    } finally {
      db.close();
    }
    assert.match(
      b.io.outText(),
      new RegExp(`re-run \`latch setup codex\` --project ${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
  });
});
