// `latch setup claude` / `latch uninstall claude` and `latch doctor`'s Claude Code checks: merging
// into someone else's settings.json (every other byte kept), idempotence, the fail-closed PreToolUse
// wrapper run through a real /bin/sh, and the real Claude Code 2.1.332 running what setup writes.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
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
  CLAUDE_EVENTS,
  claudeHookCommand,
  isClaudeLatchHandler,
  mergeClaudeHooks,
  parseClaudeHookCommand,
  removeClaudeHooks,
  setupClaude,
  skippedSettingsProblem,
  TESTED_CLAUDE_VERSION,
  uninstallClaude,
  type ClaudeSettings,
} from '../../src/agents/claude/setup.js';
import { hookCommand, mergeLatchHooks } from '../../src/agents/codex/setup.js';
import { runChecks, type Check } from '../../src/commands/doctor.js';
import { editJsonText, editJsonTextExact } from '../../src/kit/json-text.js';
import { openStore } from '../../src/store/store.js';
import { parseHookText } from '../../src/contain/match.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRY = join(ROOT, 'dist', 'latch.cjs');
const NODE = process.execPath;
const EVENTS = CLAUDE_EVENTS.map((e) => e.event);

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Box {
  dir: string;
  configDir: string;
  settings: string;
  io: Io & { outText(): string; errText(): string; reset(): void };
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 5 });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

function box(extraEnv: NodeJS.ProcessEnv = {}): Box {
  const dir = tempDir('latch-claude-setup-');
  const configDir = join(dir, 'claude');
  mkdirSync(join(dir, 'home'));
  let out = '';
  let err = '';
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(CLAUDE_|CODEX_|LATCH_|XDG_STATE_HOME$)/.test(k)) env[k] = v;
  Object.assign(env, {
    HOME: join(dir, 'home'),
    CLAUDE_CONFIG_DIR: configDir,
    CODEX_HOME: join(dir, 'codex'),
    LATCH_HOME: join(dir, 'state'),
    ...extraEnv,
  });
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
    reset: () => {
      out = '';
      err = '';
    },
  };
  return { dir, configDir, settings: join(configDir, 'settings.json'), io };
}

const setup = (b: Box, o: Record<string, unknown> = {}) => setupClaude(b.io, { entry: ENTRY, node: NODE, ...o });
const read = (f: string): Json => JSON.parse(readFileSync(f, 'utf8'));
const latchHandler = (event: string, entry = ENTRY) => mergeClaudeHooks({}, NODE, entry).data.hooks![event]![0]!;

/** Someone's settings: other keys, other events, groups with matchers, several handlers per group. */
const FOREIGN = `{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard --strict"}, {"type": "command", "command": "audit-log"}]},
            {"hooks": [{"type": "command", "command": "every-tool", "timeout": 5}]}
        ],
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "say done"}]}]
    },

    "env": {"FOO": "1"}
}
`;

describe('latch setup claude', () => {
  test('a fresh CLAUDE_CONFIG_DIR: settings.json (0600) with one handler per event, no matcher, PreToolUse wrapped fail-closed; the store', async () => {
    const b = box();
    assert.equal(await setup(b), 0, b.io.errText());
    const s = read(b.settings);
    assert.deepEqual(Object.keys(s), ['hooks']);
    assert.deepEqual(Object.keys(s.hooks), EVENTS);
    for (const spec of CLAUDE_EVENTS) {
      const groups = s.hooks[spec.event];
      assert.equal(groups.length, 1, spec.event);
      assert.equal('matcher' in groups[0], false, `${spec.event}: no matcher (every tool)`);
      const [h] = groups[0].hooks;
      assert.equal(h.type, 'command');
      assert.equal(h.command, claudeHookCommand(spec.event, NODE, ENTRY));
      assert.equal(h.timeout, spec.timeout);
      assert.equal(h.onFailure, spec.event === 'PreToolUse' ? 'block' : undefined, spec.event);
      assert.equal(h.command.startsWith('/bin/sh -c '), spec.event === 'PreToolUse', spec.event);
      assert.ok(isClaudeLatchHandler(h));
    }
    assert.ok(EVENTS.includes('PostToolUseFailure'), 'a failed tool call (exit != 0) is closed too');
    assert.ok(s.hooks.PreToolUse[0].hooks[0].timeout > 90, 'above the hook deadline (90 s)');
    assert.equal(statSync(b.settings).mode & 0o777, 0o600);
    assert.equal(statSync(b.configDir).mode & 0o777, 0o700);
    assert.ok(existsSync(join(b.dir, 'state', 'latch.db')), 'the store is created');
    const out = b.io.outText();
    assert.match(out, /Updated .*settings\.json \(Claude Code user settings/);
    for (const e of EVENTS) assert.match(out, new RegExp(`  ${e}: added`));
    assert.match(out, /Next step: start a new `claude` session/);
    assert.match(out, /latch doctor/);
  });

  test("someone else's settings and hooks are kept, byte for byte outside the event lists Latch appends to", async () => {
    const b = box();
    mkdirSync(b.configDir);
    writeFileSync(b.settings, FOREIGN);
    assert.equal(await setup(b), 0);
    const text = readFileSync(b.settings, 'utf8');
    const s = read(b.settings);
    const before = JSON.parse(FOREIGN);
    for (const k of ['model', 'permissions', 'env']) assert.deepEqual(s[k], before[k], k);
    assert.deepEqual(s.hooks.Notification, before.hooks.Notification);
    assert.deepEqual(s.hooks.PreToolUse.slice(0, 2), before.hooks.PreToolUse, 'theirs first, in order');
    assert.deepEqual(s.hooks.PreToolUse[2], latchHandler('PreToolUse'), "Latch's own group appended");
    assert.deepEqual(s.hooks.Stop[0], before.hooks.Stop[0]);
    assert.deepEqual(s.hooks.Stop[1], latchHandler('Stop'));
    // the lines Latch did not need to touch are still there as written (4-space indent, one-line groups)
    for (const line of FOREIGN.split('\n').filter((l) =>
      /Notification|my-guard|every-tool|"model"|"env"|permissions/.test(l),
    ))
      assert.ok(text.includes(line.replace(/,$/, '')), `kept: ${line}`);
    assert.match(
      text,
      /\n {8}"SessionStart": \[\n {12}\{\n {16}"hooks": \[/,
      "new entries in the file's own indentation",
    );
    assert.ok(text.endsWith('}\n'));
  });

  test('setup twice: byte-identical file, every event reported unchanged (and --json says so)', async () => {
    const b = box();
    mkdirSync(b.configDir);
    writeFileSync(b.settings, FOREIGN);
    assert.equal(await setup(b), 0);
    const first = readFileSync(b.settings);
    const mtime = statSync(b.settings).mtimeMs;
    b.io.reset();
    assert.equal(await setup(b), 0);
    assert.deepEqual(readFileSync(b.settings), first);
    assert.equal(statSync(b.settings).mtimeMs, mtime, 'not even rewritten');
    assert.match(b.io.outText(), /^Unchanged: /);
    for (const e of EVENTS) assert.match(b.io.outText(), new RegExp(`  ${e}: unchanged`));
    b.io.reset();
    assert.equal(await setup(b, { json: true }), 0);
    const j = JSON.parse(b.io.outText());
    assert.equal(j.agent, 'claude');
    assert.equal(j.changed, false);
    assert.equal(j.file, b.settings);
    assert.ok(j.changes.every((c: Json) => c.action === 'unchanged'));
  });

  test('an old Latch handler (another entry) is updated in place; copies in narrowed groups go; its own group loses a matcher', async () => {
    const b = box();
    const old = '/opt/old latch/dist/latch.cjs';
    const oldPre = latchHandler('PreToolUse', old).hooks![0] as Record<string, unknown>;
    const oldStop = latchHandler('Stop', old).hooks![0];
    mkdirSync(b.configDir);
    const settings = {
      theme: 'dark',
      hooks: {
        PreToolUse: [
          { hooks: [oldPre, { type: 'command', command: 'mine' }] },
          { matcher: 'Bash', hooks: [{ type: 'command', command: 'bash-guard' }, oldPre] },
        ],
        Stop: [{ matcher: 'x', hooks: [oldStop] }, { hooks: [{ type: 'command', command: 'theirs' }] }],
        PostToolUse: [{ hooks: [{ ...oldPre, command: claudeHookCommand('PostToolUse', NODE, old) }] }],
      },
    };
    writeFileSync(b.settings, JSON.stringify(settings, null, 2) + '\n');
    assert.equal(await setup(b), 0);
    const s = read(b.settings);
    const now = (e: string) => latchHandler(e).hooks![0];
    assert.deepEqual(s.hooks.PreToolUse, [
      { hooks: [now('PreToolUse'), { type: 'command', command: 'mine' }] },
      { matcher: 'Bash', hooks: [{ type: 'command', command: 'bash-guard' }] },
    ]);
    assert.deepEqual(s.hooks.Stop, [{ hooks: [now('Stop')] }, { hooks: [{ type: 'command', command: 'theirs' }] }]);
    assert.deepEqual(s.hooks.PostToolUse, [{ hooks: [now('PostToolUse')] }]);
    assert.equal(s.theme, 'dark');
    for (const e of ['PreToolUse', 'Stop', 'PostToolUse']) assert.match(b.io.outText(), new RegExp(`  ${e}: updated`));
    assert.match(b.io.outText(), / {2}SessionStart: added/);
  });

  test('--dry-run writes nothing (no settings, no store) and prints the file it would write', async () => {
    const b = box();
    assert.equal(await setup(b, { dryRun: true }), 0);
    assert.equal(existsSync(b.settings), false);
    assert.equal(existsSync(join(b.dir, 'state')), false);
    const out = b.io.outText();
    assert.match(out, /^Would update /);
    const text = out.slice(out.indexOf('{\n'), out.lastIndexOf('}\n') + 2);
    assert.deepEqual(JSON.parse(text), mergeClaudeHooks({}, NODE, ENTRY).data);
    assert.match(out, /Dry run: nothing was written/);
    // an existing file is left as it is
    mkdirSync(b.configDir);
    writeFileSync(b.settings, FOREIGN);
    assert.equal(await setup(b, { dryRun: true }), 0);
    assert.equal(readFileSync(b.settings, 'utf8'), FOREIGN);
  });

  test('invalid JSON, a non-object, malformed hooks: exit 1 with the reason, the file untouched', async () => {
    for (const bad of [
      '{"hooks": {',
      '[]',
      '{"hooks": []}',
      '{"hooks": {"Stop": {}}}',
      '{"hooks": {"Stop": [{"hooks": 1}]}}',
    ]) {
      const b = box();
      mkdirSync(b.configDir);
      writeFileSync(b.settings, bad);
      const code = await cliMain(['setup', 'claude'], b.io);
      assert.equal(code, 1, bad);
      assert.match(
        b.io.errText(),
        /latch setup: .*settings\.json.*(not valid JSON|not a JSON object|not an object|not a list).*Latch will not overwrite it/,
        bad,
      );
      assert.equal(readFileSync(b.settings, 'utf8'), bad, bad);
      assert.equal(await cliMain(['uninstall', 'claude'], b.io), 1, `uninstall: ${bad}`);
      assert.equal(readFileSync(b.settings, 'utf8'), bad);
    }
  });

  // Each value below made the real 2.1.332 skip the file whole, hooks included (`claude -p` ran no hook;
  // the last describe repeats one of them on the real binary): setup would install handlers that never run.
  test('a file Claude Code skips whole (wrong types): exit 1 naming the key, the file untouched, nothing recorded', async () => {
    for (const [bad, key] of [
      ['{"model": 5}', /"model" is not a string/],
      ['{"model": null}', /"model" is not a string/],
      ['{"includeCoAuthoredBy": "x"}', /"includeCoAuthoredBy" is not true or false/],
      ['{"cleanupPeriodDays": 0}', /"cleanupPeriodDays" is not a number of at least 1/],
      ['{"cleanupPeriodDays": "x"}', /"cleanupPeriodDays" is not a number of at least 1/],
      ['{"permissions": 5}', /"permissions" is not an object/],
      ['{"permissions": {"allow": 5}}', /"permissions\.allow" is not a list/],
      ['{"permissions": {"deny": "Read"}}', /"permissions\.deny" is not a list/],
      ['{"permissions": {"additionalDirectories": 5}}', /"permissions\.additionalDirectories" is not a list/],
      ['{"permissions": {"defaultMode": 5}}', /"permissions\.defaultMode" is not a string/],
    ] as const) {
      const b = box();
      mkdirSync(b.configDir);
      writeFileSync(b.settings, bad);
      assert.equal(await cliMain(['setup', 'claude'], b.io), 1, bad);
      assert.match(b.io.errText(), key, bad);
      assert.match(b.io.errText(), /Claude Code skips a settings file like this whole, hooks included/, bad);
      assert.equal(readFileSync(b.settings, 'utf8'), bad, bad);
      assert.equal(existsSync(join(b.dir, 'state', 'latch.db')), false, `nothing recorded: ${bad}`);
    }
  });

  test('skippedSettingsProblem: the measured wrong types only; what Claude Code accepts is no problem', () => {
    for (const ok of [
      {},
      { model: 'opus', includeCoAuthoredBy: false, cleanupPeriodDays: 30 },
      { permissions: { allow: ['Bash(ls:*)'], deny: [], additionalDirectories: ['../x'], defaultMode: 'plan' } },
      // Measured accepted by 2.1.332: a list with a non-string rule, an env value that is a number.
      { permissions: { ask: ['Read', 1] }, env: { A: 1 } },
      { someKeyOfANewerRelease: 5 },
    ])
      assert.equal(skippedSettingsProblem(ok), null, JSON.stringify(ok));
    assert.equal(
      skippedSettingsProblem({ cleanupPeriodDays: 0.5 }),
      '"cleanupPeriodDays" is not a number of at least 1',
    );
    assert.equal(
      skippedSettingsProblem({ cleanupPeriodDays: Number.NaN }),
      '"cleanupPeriodDays" is not a number of at least 1',
    );
  });

  test('the existing mode is kept; a symlinked settings.json is written through the link', async () => {
    const b = box();
    mkdirSync(b.configDir);
    const target = join(b.dir, 'dotfiles', 'claude-settings.json');
    mkdirSync(dirname(target));
    writeFileSync(target, '{"model": "x"}\n');
    chmodSync(target, 0o640);
    symlinkSync(target, b.settings);
    assert.equal(await setup(b), 0);
    assert.equal(readlinkSync(b.settings), target, 'still a link');
    assert.equal(statSync(target).mode & 0o777, 0o640);
    assert.equal(read(target).model, 'x');
    assert.ok(read(target).hooks.PreToolUse);
  });

  test('--project DIR writes DIR/.claude/settings.json (not the user settings), through the CLI', async () => {
    const b = box();
    const project = join(b.dir, 'proj');
    mkdirSync(project);
    const code = await cliMain(['setup', 'claude', '--project', project], b.io);
    assert.equal(code, 0, b.io.errText());
    const file = join(project, '.claude', 'settings.json');
    assert.deepEqual(Object.keys(read(file).hooks), EVENTS);
    assert.equal(existsSync(b.settings), false, 'user settings untouched');
    assert.match(b.io.outText(), /Claude Code project settings/);
    assert.match(b.io.outText(), /sessions started in .*proj/);
    b.io.reset();
    assert.equal(await cliMain(['uninstall', 'claude', '--project', project, '--json'], b.io), 0);
    const j = JSON.parse(b.io.outText());
    assert.equal(j.changed, true);
    assert.equal(j.file, file);
    assert.deepEqual(read(file), {});
  });

  test('the CLI: options of the other agent are refused; help mentions Claude Code', async () => {
    const b = box();
    assert.equal(await cliMain(['setup', 'claude', '--trust'], b.io), 2);
    assert.match(b.io.errText(), /--trust is not an option of `latch setup claude`/);
    assert.equal(await cliMain(['setup', 'codex', '--json'], b.io), 2);
    assert.equal(await cliMain(['setup', 'cursor'], b.io), 2);
    assert.equal(await cliMain(['uninstall'], b.io), 2);
    assert.equal(existsSync(b.settings), false);
    b.io.reset();
    assert.equal(await cliMain(['--help'], b.io), 0);
    assert.match(
      b.io.outText(),
      /latch setup codex .*\| latch setup claude \[--project DIR\] \[--dry-run\] \[--json\]/,
    );
    assert.match(b.io.outText(), /latch uninstall codex .*\| latch uninstall claude/);
    assert.match(b.io.outText(), /latch hook codex\|claude --event NAME/);
    assert.match(b.io.outText(), /Claude Code/);
    b.io.reset();
    assert.equal(await cliMain(['setup', '--help'], b.io), 0);
    assert.match(b.io.outText(), /claude: into Claude Code's settings\.json/);
    assert.equal(await cliMain(['doctor', '--agent', 'cursor'], b.io), 2);
  });
});

describe('latch uninstall claude', () => {
  test("removes only Latch's handlers: the file is byte-identical to what it was before setup", async () => {
    for (const original of [
      FOREIGN,
      '{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"a"}]}]}}',
      '{}\n',
      '{\n\t"a": [1, 2]\n}',
    ]) {
      const b = box();
      mkdirSync(b.configDir);
      writeFileSync(b.settings, original);
      assert.equal(await setup(b), 0);
      assert.notEqual(readFileSync(b.settings, 'utf8'), original);
      assert.equal(await uninstallClaude(b.io, {}), 0);
      assert.equal(readFileSync(b.settings, 'utf8'), original);
    }
  });

  test("others' handlers in a group shared with Latch stay (the group too); groups and events only Latch had go", async () => {
    const b = box();
    mkdirSync(b.configDir);
    const mine = latchHandler('PreToolUse').hooks![0];
    writeFileSync(
      b.settings,
      JSON.stringify({
        hooks: {
          PreToolUse: [{ hooks: [mine, { type: 'command', command: 'theirs' }] }, { hooks: [] }],
          Stop: [latchHandler('Stop')],
        },
      }),
    );
    assert.equal(await uninstallClaude(b.io, {}), 0);
    assert.deepEqual(read(b.settings), {
      hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'theirs' }] }, { hooks: [] }] },
    });
    assert.match(b.io.outText(), /Removed Latch handlers from .*: PreToolUse, Stop/);
  });

  test('--dry-run writes nothing; a missing file or one without Latch handlers: exit 0, untouched', async () => {
    const b = box();
    assert.equal(await uninstallClaude(b.io, {}), 0);
    assert.match(b.io.outText(), /does not exist; nothing to remove/);
    assert.equal(existsSync(b.settings), false);
    mkdirSync(b.configDir);
    writeFileSync(b.settings, FOREIGN);
    assert.equal(await uninstallClaude(b.io, {}), 0);
    assert.match(b.io.outText(), /No Latch handlers in /);
    assert.equal(readFileSync(b.settings, 'utf8'), FOREIGN);
    assert.equal(await setup(b), 0);
    const installed = readFileSync(b.settings, 'utf8');
    b.io.reset();
    assert.equal(await uninstallClaude(b.io, { dryRun: true }), 0);
    assert.match(b.io.outText(), /^Would remove Latch handlers/);
    assert.equal(readFileSync(b.settings, 'utf8'), installed);
  });

  test('property: uninstall(setup(x)) equals x, setup is idempotent, and the text outside Latch edits parses back', () => {
    const handler = fc.record({ type: fc.constant('command'), command: fc.constantFrom('a', 'b c', 'latch x') });
    const group = fc.record(
      { matcher: fc.constantFrom('Bash', '', '*', 'Edit|Write'), hooks: fc.array(handler, { maxLength: 3 }) },
      { requiredKeys: ['hooks'] },
    );
    const settings = fc.record(
      {
        model: fc.string(),
        // (an event list, or a `hooks`, that was empty before is not told apart from one Latch emptied)
        hooks: fc.dictionary(
          fc.constantFrom('PreToolUse', 'Stop', 'Notification', 'SessionStart'),
          fc.array(group, { minLength: 1, maxLength: 3 }),
          { minKeys: 1 },
        ),
        env: fc.dictionary(fc.constantFrom('A', 'B', 'C_D'), fc.string()),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(settings, fc.constantFrom(0, 2, 4, '\t'), (generated, indent) => {
        const x = JSON.parse(JSON.stringify(generated)); // plain objects, as read from a file
        const text = JSON.stringify(x, null, indent) + '\n';
        const once = mergeClaudeHooks(x as ClaudeSettings, NODE, ENTRY).data;
        const onceText = editJsonText(text, x, once);
        assert.deepEqual(JSON.parse(onceText), once);
        const twice = mergeClaudeHooks(JSON.parse(onceText), NODE, ENTRY);
        assert.deepEqual(twice.data, once);
        assert.ok(twice.changes.every((c) => c.action === 'unchanged'));
        const back = removeClaudeHooks(once).data;
        assert.deepEqual(back, x);
        assert.equal(editJsonText(onceText, once, back), text, 'byte-identical round trip');
      }),
      { numRuns: 150 },
    );
  });
});

/** JSON text of `v` with whitespace taken in turn from `ws` wherever JSON allows it. */
function messyJson(v: unknown, ws: string[]): string {
  let k = 0;
  const w = () => ws[k++ % ws.length]!;
  const go = (x: unknown): string => {
    if (Array.isArray(x)) return `[${w()}${x.map((i) => go(i)).join(`${w()},${w()}`)}${w()}]`;
    if (x && typeof x === 'object')
      return `{${w()}${Object.entries(x)
        .map(([key, val]) => `${JSON.stringify(key)}${w()}:${w()}${go(val)}`)
        .join(`${w()},${w()}`)}${w()}}`;
    return JSON.stringify(x);
  };
  return w() + go(v) + w();
}

describe('the JSON text edits keep what did not change', () => {
  test('property: on any layout, setup then uninstall edits exactly (no rewrite) and gives back the same bytes', () => {
    const handler = fc.record({ type: fc.constant('command'), command: fc.constantFrom('x', 'y z') });
    const doc = fc.record(
      {
        a: fc.jsonValue({ maxDepth: 2 }),
        hooks: fc.dictionary(
          fc.constantFrom('PreToolUse', 'Stop', 'Notification'),
          fc.array(fc.record({ matcher: fc.constantFrom('Bash', ''), hooks: fc.array(handler, { maxLength: 2 }) }), {
            minLength: 1,
            maxLength: 2,
          }),
          { minKeys: 1 },
        ),
      },
      { requiredKeys: [] },
    );
    const space = fc.array(fc.constantFrom('', ' ', '\n', '\n    ', '\t', '\r\n  '), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(doc, space, (generated, ws) => {
        const x = JSON.parse(JSON.stringify(generated));
        // (an empty document written with whitespace inside, `{\n}`, comes back as `{}`)
        fc.pre(Object.keys(x).length > 0);
        const text = messyJson(x, ws);
        const merged = mergeClaudeHooks(x, NODE, ENTRY).data;
        const installed = editJsonTextExact(text, x, merged);
        assert.notEqual(installed, null, `setup edit of ${JSON.stringify(text)}`);
        const back = editJsonTextExact(installed!, merged, removeClaudeHooks(merged).data);
        assert.equal(back, text);
      }),
      { numRuns: 300 },
    );
  });

  test('replacing one nested value leaves every other byte', () => {
    const text = '{ "a" : [1,2,  3],\n  "b": {"c": true,   "d": "x"} , "e":null}';
    const before = JSON.parse(text);
    const out = editJsonText(text, before, { ...before, b: { ...before.b, d: 'y' } });
    assert.equal(out, '{ "a" : [1,2,  3],\n  "b": {"c": true,   "d": "y"} , "e":null}');
    assert.equal(editJsonText(text, before, { ...before, e: [1] }), text.replace('null', '[1]'));
    const dropped = editJsonText(text, before, { a: before.a, e: null });
    assert.deepEqual(JSON.parse(dropped), { a: [1, 2, 3], e: null });
    assert.ok(dropped.startsWith('{ "a" : [1,2,  3]'));
  });

  test("CRLF files keep CRLF; an added member uses the file's indentation", () => {
    const text = '{\r\n   "x": 1\r\n}\r\n';
    const out = editJsonText(text, { x: 1 }, { x: 1, y: { z: [2] } });
    assert.equal(out, '{\r\n   "x": 1,\r\n   "y": {\r\n      "z": [\r\n         2\r\n      ]\r\n   }\r\n}\r\n');
  });
});

describe('the hook command (fail-closed wrapper)', () => {
  const dir = tempDir("latch-claude-hookcmd-it's-");
  const payload = JSON.stringify({
    session_id: 's',
    transcript_path: join(dir, 't.jsonl'),
    cwd: dir,
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command: 'rm -rf x' },
    tool_use_id: 'toolu_1',
  });
  /** What Claude Code 2.1.332 does with a command handler: `/bin/sh -c <command>`, the payload on stdin. */
  const runAsClaude = (command: string) => {
    const r = spawnSync('/bin/sh', ['-c', command], {
      input: payload,
      env: { ...process.env, LATCH_HOME: join(dir, 'no-store') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const script = (name: string, body: string) => {
    const sub = join(dir, "sub 'q' dir");
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, name), body);
    return join(sub, name);
  };

  test('only PreToolUse is wrapped; the text is parsed back exactly; the wrapper is the one Codex uses', () => {
    for (const e of EVENTS) {
      const c = claudeHookCommand(e, '/n o/node', "/e/it's/latch.cjs");
      assert.equal(c.startsWith('/bin/sh -c '), e === 'PreToolUse');
      assert.deepEqual(parseClaudeHookCommand(c), {
        node: '/n o/node',
        entry: "/e/it's/latch.cjs",
        event: e,
        wrapped: e === 'PreToolUse',
        exact: true,
      });
    }
    assert.equal(
      claudeHookCommand('PreToolUse', '/n', '/e')
        .replace(' hook claude ', ' hook codex ')
        .replace('its claude hooks', 'its codex hooks')
        .replace('uninstall claude', 'uninstall codex')
        .replace('NODE_EXTRA_CA_CERTS= ', ''),
      hookCommand('PreToolUse', '/n', '/e'),
    );
    // A handler written before the text cleared NODE_EXTRA_CA_CERTS: still read, no longer exact
    // (doctor asks for `latch setup claude`), still Latch's own process to containment.
    const old = "'/n' '/e' hook claude --event Stop";
    assert.deepEqual(parseClaudeHookCommand(old), {
      node: '/n',
      entry: '/e',
      event: 'Stop',
      wrapped: false,
      exact: false,
    });
    assert.deepEqual(parseHookText(old), { event: 'Stop', node: '/n', entry: '/e', agent: 'claude' });
    assert.equal(parseHookText(`NODE_EXTRA_CA_CERTS= ${old.replace('claude', 'codex')}`), null);
    assert.equal(parseClaudeHookCommand("'/n' '/e' hook claude --event Stop; rm -rf ~"), null);
    assert.equal(parseClaudeHookCommand('latch hook claude --event Stop'), null);
  });

  test('every handler runs node without NODE_EXTRA_CA_CERTS (Node would load certificates at each start)', () => {
    const entry = script('env.cjs', 'process.stdout.write(JSON.stringify(process.env.NODE_EXTRA_CA_CERTS ?? null))');
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'no-such-ca.pem') };
    // The premise: with the variable set, Node reads the file at start (and warns when it is missing).
    const direct = spawnSync(NODE, [entry], { env, encoding: 'utf8' });
    assert.match(direct.stderr, /Ignoring extra certs/);
    for (const e of EVENTS) {
      const r = spawnSync('/bin/sh', ['-c', claudeHookCommand(e, NODE, entry)], { env, encoding: 'utf8' });
      assert.equal(r.status, 0, `${e}: ${r.stderr}`);
      assert.equal(r.stdout, '""', e);
      assert.doesNotMatch(r.stderr, /extra certs/, e);
    }
  });

  test('an entry that exits 1, is missing (127), or is killed: exit 2 with a reason (Claude Code blocks)', () => {
    for (const [what, entry] of [
      ['exit 1', script('exits1.cjs', 'process.exit(1)')],
      ['throws', script('throws.cjs', "throw new Error('boom')")],
      ['exit 3', script('exits3.cjs', 'process.exit(3)')],
      ['killed', script('killed.cjs', "process.kill(process.pid, 'SIGKILL')")],
    ] as const) {
      const r = runAsClaude(claudeHookCommand('PreToolUse', NODE, entry));
      assert.equal(r.code, 2, what);
      assert.match(
        r.stderr,
        /Latch could not check this call \(hook exited \d+\); blocking it\. Run: latch doctor/,
        what,
      );
    }
    // The package removed without `latch uninstall` (issue 23.3): one sentence naming the command that
    // removes the handlers, no stack trace.
    const gone = join(dir, 'gone', 'latch.cjs');
    const g = runAsClaude(claudeHookCommand('PreToolUse', NODE, gone));
    assert.equal(g.code, 2);
    assert.equal(
      g.stderr,
      `Latch is not installed any more (${gone} is missing), and its claude hooks still run: blocking this call. Remove them with: npx agent-latch uninstall claude\n`,
    );
    const r = runAsClaude(claudeHookCommand('PreToolUse', join(dir, 'no-node'), ENTRY));
    assert.equal(r.code, 2, 'a missing node (127)');
    assert.match(r.stderr, /hook exited 127/);
  });

  test('exit 0 and exit 2 pass through with their output; the payload reaches the entry; other events are not wrapped', () => {
    const copy = join(dir, 'stdin.json');
    const ok = script(
      'ok.cjs',
      `require('fs').writeFileSync(${JSON.stringify(copy)}, require('fs').readFileSync(0)); process.stdout.write(JSON.stringify(process.argv.slice(2)))`,
    );
    const r = runAsClaude(claudeHookCommand('PreToolUse', NODE, ok));
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(r.stdout), ['hook', 'claude', '--event', 'PreToolUse']);
    assert.equal(readFileSync(copy, 'utf8'), payload);
    const two = runAsClaude(
      claudeHookCommand('PreToolUse', NODE, script('two.cjs', "process.stderr.write('no'); process.exit(2)")),
    );
    assert.deepEqual([two.code, two.stderr], [2, 'no']);
    const fail = script('fail.cjs', 'process.exit(1)');
    for (const e of EVENTS.filter((x) => x !== 'PreToolUse')) {
      const x = runAsClaude(claudeHookCommand(e, NODE, fail));
      assert.equal(x.code, 1, `${e}: exit 2 there would block (Stop: keep the turn going)`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// doctor

/** A directory with a fake `claude` printing `version`, for PATH. */
function fakeClaude(version: string): string {
  const bin = tempDir('latch-fake-claude-');
  writeFileSync(join(bin, 'claude'), `#!/bin/sh\necho '${version} (Claude Code)'\n`);
  chmodSync(join(bin, 'claude'), 0o755);
  return bin;
}

const byName = (checks: Check[], name: string) => {
  const c = checks.find((x) => x.name === name);
  assert.ok(c, `no check ${name}: ${checks.map((x) => x.name).join(', ')}`);
  return c;
};

describe('latch doctor: Claude Code', () => {
  test('a good install: every Claude check passes (the probe: Read passes, Bash denied with no store)', async () => {
    const b = box({ PATH: `${fakeClaude(TESTED_CLAUDE_VERSION)}:${process.env.PATH}` });
    assert.equal(await setupClaude(b.io, {}), 0, 'setup with the running node and the default entry');
    const checks = await runChecks(b.io, { claudeManagedSettings: join(b.dir, 'none.json') });
    const names = checks.map((c) => c.name);
    assert.ok(!names.includes('hooks installed (user)'), 'no Codex checks when only Claude Code has Latch');
    assert.deepEqual(names, [
      'claude hooks installed (user)',
      'claude hooks enabled',
      'claude hook command',
      'claude version',
      'store',
      'watchers',
      'resident hooks',
      'containment',
      'claude reads while held',
      'registration',
    ]);
    for (const n of ['claude hooks installed (user)', 'claude hooks enabled', 'claude version', 'store'])
      assert.equal(byName(checks, n).status, 'ok', `${n}: ${byName(checks, n).detail}`);
    assert.match(
      byName(checks, 'claude version').detail,
      /2\.1\.332 \(Claude Code\) .*the release Latch is tested with/,
    );
    const cmd = byName(checks, 'claude hook command');
    assert.equal(cmd.status, 'ok', cmd.detail);
    assert.match(cmd.detail, /Read passes, Bash denied with no store \(fails closed\)/);
    assert.doesNotMatch(cmd.detail, /not what `latch setup claude` writes|does not exist/);
  });

  test('a broken install: unwrapped PreToolUse, a narrowing matcher, a missing handler, a missing entry, hooks disabled, another version', async () => {
    const b = box({ PATH: `${fakeClaude('2.0.14')}:${process.env.PATH}`, CLAUDE_CODE_SIMPLE: '1' });
    assert.equal(await setupClaude(b.io, {}), 0);
    const s = read(b.settings);
    const pre = s.hooks.PreToolUse[0].hooks[0];
    pre.command = claudeHookCommand('SessionStart', NODE, ENTRY).replace('SessionStart', 'PreToolUse'); // unwrapped
    delete pre.onFailure;
    s.hooks.PreToolUse[0].matcher = 'Bash|Write';
    delete s.hooks.Stop;
    s.hooks.SessionStart[0].hooks[0].command = claudeHookCommand(
      'SessionStart',
      NODE,
      join(b.dir, 'gone', 'latch.cjs'),
    );
    s.hooks.PostToolUse[0].hooks[0].async = true;
    s.disableAllHooks = true;
    writeFileSync(b.settings, JSON.stringify(s, null, 2));
    const managed = join(b.dir, 'managed.json');
    writeFileSync(managed, '{"allowManagedHooksOnly": true}');
    const checks = await runChecks(b.io, { agent: 'claude', claudeManagedSettings: managed });
    const inst = byName(checks, 'claude hooks installed (user)');
    assert.equal(inst.status, 'fail');
    assert.match(inst.detail, /PreToolUse: matcher "Bash\|Write" narrows it/);
    assert.match(inst.detail, /PreToolUse: not wrapped fail-closed/);
    assert.match(inst.detail, /PreToolUse: no "onFailure": "block"/);
    assert.match(inst.detail, /Stop: no Latch handler/);
    assert.match(inst.detail, /PostToolUse: runs asynchronously/);
    assert.equal(inst.fix, 'latch setup claude');
    const enabled = byName(checks, 'claude hooks enabled');
    assert.equal(enabled.status, 'fail');
    assert.match(enabled.detail, /"disableAllHooks": true: Claude Code runs no hook/);
    assert.match(enabled.detail, /"allowManagedHooksOnly": true/);
    assert.match(enabled.detail, /CLAUDE_CODE_SIMPLE is set here/);
    const cmd = byName(checks, 'claude hook command');
    assert.equal(cmd.status, 'fail');
    assert.match(cmd.detail, /SessionStart in .*: Latch entry .*gone\/latch\.cjs does not exist/);
    assert.match(cmd.detail, /PreToolUse in .*: the command is not what `latch setup claude` writes/);
    const v = byName(checks, 'claude version');
    assert.equal(v.status, 'warn');
    assert.match(v.detail, /2\.0\.14 \(Claude Code\) .*is not the release Latch is tested with \(2\.1\.332\)/);
    assert.equal(v.fix, 'npm i -g @anthropic-ai/claude-code@2.1.332');
  });

  test('--agent claude with nothing installed: a failing install check; no claude on the PATH: a warning', async () => {
    const b = box({ PATH: '/usr/bin:/bin' });
    const checks = await runChecks(b.io, { agent: 'claude', claudeManagedSettings: join(b.dir, 'none.json') });
    const inst = byName(checks, 'claude hooks installed');
    assert.equal(inst.status, 'fail');
    assert.match(inst.detail, /no Latch handlers in .*claude\/settings\.json/);
    assert.equal(byName(checks, 'store').fix, 'latch setup claude');
    const v = byName(checks, 'claude version');
    // Latch's own node_modules holds the pinned release (a dev dependency): found there when not on the PATH.
    assert.ok(
      v.status === 'ok' ? /from Latch's node_modules/.test(v.detail) : /not found on PATH/.test(v.detail),
      v.detail,
    );
  });

  test('Codex and Claude Code both installed: both sections, the Codex checks first and unchanged', async () => {
    const b = box({ PATH: `${fakeClaude(TESTED_CLAUDE_VERSION)}:${process.env.PATH}` });
    assert.equal(await setupClaude(b.io, {}), 0);
    mkdirSync(join(b.dir, 'codex'));
    writeFileSync(join(b.dir, 'codex', 'hooks.json'), JSON.stringify(mergeLatchHooks({}, NODE, ENTRY).file, null, 2));
    const names = (await runChecks(b.io, { timeoutMs: 5000 })).map((c) => c.name);
    assert.equal(names[0], 'hooks installed (user)');
    assert.ok(names.indexOf('registration') < names.indexOf('claude hooks installed (user)'), names.join(', '));
    const codexOnly = (await runChecks(b.io, { agent: 'codex', timeoutMs: 5000 })).map((c) => c.name);
    assert.ok(!codexOnly.some((n) => n.startsWith('claude')), codexOnly.join(', '));
  });

  test('the JSON report and the exit code (through the CLI)', async () => {
    const b = box({ PATH: `${fakeClaude(TESTED_CLAUDE_VERSION)}:${process.env.PATH}` });
    assert.equal(await setupClaude(b.io, {}), 0);
    b.io.reset();
    const code = await cliMain(['doctor', '--agent', 'claude', '--json'], b.io);
    const j = JSON.parse(b.io.outText());
    assert.equal(j.ok, code === 0);
    assert.ok(j.checks.some((c: Json) => c.name === 'claude version' && c.status === 'ok'));
  });
});

// ---------------------------------------------------------------------------------------------
// the real binary

const CLAUDE_EXE = join(ROOT, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');

/** A hermetic `claude -p` over the project's fake model, with the settings the built `latch setup claude` writes. */
async function realClaude(turns: unknown[], editSettings: (text: string) => string = (t) => t) {
  const { startClaudeFakeModel, toolResultsSeen } = await import('../../src/agents/claude/fake-model.js');
  const base = tempDir('latch-claude-real-');
  const work = join(base, 'work');
  const cfg = join(base, 'config');
  for (const d of [work, cfg, join(base, 'home'), join(base, 'tmp')]) mkdirSync(d, { recursive: true });
  spawnSync('git', ['init', '-q'], { cwd: work });
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(ANTHROPIC_|CLAUDE_|CLAUDECODE$|OTEL_|DISABLE_|MCP_|IS_SANDBOX$|LATCH_|CODEX_)/.test(k)) env[k] = v;
  Object.assign(env, { HOME: join(base, 'home'), CLAUDE_CONFIG_DIR: cfg, LATCH_HOME: join(base, 'state') });
  const s = spawnSync(NODE, [ENTRY, 'setup', 'claude'], { env, cwd: work, encoding: 'utf8' });
  assert.equal(s.status, 0, s.stderr);
  const settings = join(cfg, 'settings.json');
  writeFileSync(settings, editSettings(readFileSync(settings, 'utf8')));
  const fake = await startClaudeFakeModel({ turns: turns as never });
  try {
    Object.assign(env, {
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: 'sk-ant-latch-test',
      CLAUDE_CODE_TMPDIR: join(base, 'tmp'),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}), // root needs it for the bypass mode
    });
    const child = spawn(CLAUDE_EXE, ['-p', 'go', '--output-format', 'json', '--dangerously-skip-permissions'], {
      cwd: work,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    clearTimeout(timer);
    assert.equal(code, 0, `claude -p: ${stderr}${stdout}`);
    return { base, work, cfg, home: join(base, 'state'), stdout, results: toolResultsSeen(fake.requests) };
  } finally {
    await fake.close();
  }
}

const bashTurn = (id: string, command: string) => ({
  content: [{ type: 'tool_use', id, name: 'Bash', input: { command, description: id } }],
});

describe('the real Claude Code 2.1.332 runs the hooks `latch setup claude` writes', {
  skip: !existsSync(CLAUDE_EXE),
}, () => {
  test('claude -p with two Bash calls: the session and both attempts reach the store, the failing one closed too', async () => {
    const r = await realClaude([
      bashTurn('toolu_w', 'echo hi > a.txt'),
      bashTurn('toolu_f', 'echo x > b.txt; exit 3'), // 2.1.332 reports it to PostToolUseFailure
      { content: [{ type: 'text', text: 'done' }] },
    ]);
    assert.deepEqual(Object.keys(read(join(r.cfg, 'settings.json')).hooks), EVENTS);
    const w = r.results.find((x) => x.toolUseId === 'toolu_w');
    assert.equal(w?.isError, false, w?.text);
    assert.equal(readFileSync(join(r.work, 'a.txt'), 'utf8'), 'hi\n');
    const db = openStore(r.home, { create: false, readonly: true });
    try {
      const sessions = db.prepare('SELECT session_id, agent FROM sessions').all() as {
        session_id: string;
        agent: string;
      }[];
      assert.deepEqual(sessions, [{ session_id: JSON.parse(r.stdout).session_id, agent: 'claude' }]);
      const attempts = db.prepare('SELECT tool_use_id, state FROM attempts ORDER BY started_ns').all();
      assert.deepEqual(attempts, [
        { tool_use_id: 'toolu_w', state: 'closed' },
        { tool_use_id: 'toolu_f', state: 'closed' },
      ]);
    } finally {
      db.close();
    }
  });

  test('a settings.json with a wrong type ("model": 5): Claude Code runs no hook at all, and doctor names the key', async () => {
    const r = await realClaude(
      [bashTurn('toolu_s', 'echo hi > a.txt'), { content: [{ type: 'text', text: 'done' }] }],
      (t) => t.replace(/^\{/, '{"model": 5,'),
    );
    // The premise, on the real binary: the write ran and no hook reached Latch (no session recorded).
    assert.equal(readFileSync(join(r.work, 'a.txt'), 'utf8'), 'hi\n');
    const db = openStore(r.home, { create: false, readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT session_id FROM sessions').all(), []);
    } finally {
      db.close();
    }
    const d = spawnSync(NODE, [ENTRY, 'doctor', '--agent', 'claude', '--json'], {
      env: { ...process.env, HOME: join(r.base, 'home'), CLAUDE_CONFIG_DIR: r.cfg, LATCH_HOME: r.home },
      cwd: r.work,
      encoding: 'utf8',
    });
    const checks = (JSON.parse(d.stdout) as { checks: Check[] }).checks;
    const enabled = byName(checks, 'claude hooks enabled');
    assert.equal(enabled.status, 'fail', enabled.detail);
    assert.match(enabled.detail, /settings\.json: "model" is not a string/);
    assert.notEqual(d.status, 0);
  });

  test('a Latch entry that crashes: the Bash call is blocked (the wrapper turns exit 1 into exit 2)', async () => {
    const crash = join(tempDir('latch-claude-crash-'), 'latch.cjs');
    writeFileSync(crash, "process.stderr.write('simulated crash'); process.exit(1)\n");
    const r = await realClaude(
      [bashTurn('toolu_c', 'echo hi > a.txt'), { content: [{ type: 'text', text: 'done' }] }],
      (t) => t.replaceAll(ENTRY, crash),
    );
    const blocked = r.results.find((x) => x.toolUseId === 'toolu_c');
    assert.equal(blocked?.isError, true);
    assert.match(
      blocked!.text,
      /PreToolUse:Bash hook error: .*Latch could not check this call \(hook exited 1\); blocking it/,
    );
    assert.equal(existsSync(join(r.work, 'a.txt')), false, 'the command did not run');
  });
});
