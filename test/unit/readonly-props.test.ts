// Property tests for the shell tokenizer and the classifier's parsers (issue 10).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { posix } from 'node:path';
import fc from 'fast-check';
import { classifyCommand, type ClassifyContext } from '../../src/shell/readonly.js';
import { parseCommandList, forbiddenCharacter } from '../../src/shell/words.js';

process.env.GIT_CONFIG_SYSTEM = '/dev/null';
process.env.XDG_CONFIG_HOME = '/nonexistent-xdg';

const HOME = '/nonexistent-home/u';
const LATCH_HOME = `${HOME}/.local/state/latch`;
const LATCH_BIN = '/nonexistent-opt/agent-latch/dist/latch.cjs';
const CWD = `${HOME}/work/proj`;
const ctx: ClassifyContext = { latchHome: LATCH_HOME, latchBin: LATCH_BIN, home: HOME, cwd: CWD };
const RUNS = Number(process.env.FC_RUNS ?? 500);

const G = 'git --no-pager --no-optional-locks -c core.fsmonitor=false -c core.hooksPath=/dev/null';

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Code units that are refused anywhere. */
const forbiddenUnit = fc
  .oneof(
    fc.integer({ min: 0, max: 0x1f }).filter((c) => c !== 0x09 && c !== 0x0a),
    fc.integer({ min: 0x7f, max: 0x9f }),
    fc.integer({ min: 0xd800, max: 0xdfff }),
    fc.constantFrom(
      0x200b,
      0x200c,
      0x200d,
      0x200e,
      0x200f,
      0x202a,
      0x202b,
      0x202c,
      0x202d,
      0x202e,
      0x2066,
      0x2067,
      0x2068,
      0x2069,
      0x2028,
      0x2029,
      0xfeff,
      0xad,
      0x61c,
    ),
  )
  .map((c) => String.fromCharCode(c));

/** Non-ASCII BMP characters that are not forbidden (letters, look-alikes, symbols). */
const nonAscii = fc
  .integer({ min: 0xa0, max: 0xfffd })
  .filter((c) => (c < 0xd800 || c > 0xdfff) && forbiddenCharacter(String.fromCharCode(c)) === null)
  .map((c) => String.fromCharCode(c));

const SAFE = [
  'ls -la',
  'cat a.txt',
  'head -n 3 a.txt',
  'wc -l a.txt b.txt',
  'grep -n foo a.txt',
  'rg -n foo src',
  'find . -name x -type f',
  "sed -n '1,3p' a.txt",
  "awk '{print $1}' a.txt",
  `${G} status --short`,
  `${LATCH_BIN} status`,
  'sort -u a.txt',
  'echo hi',
  'ls 2>/dev/null',
  'cat < a.txt',
  'ls | wc -l',
  'pwd && ls',
];
const safeCommand = fc.constantFrom(...SAFE);

describe('characters', () => {
  test('a forbidden character anywhere makes the command not read-only', () => {
    fc.assert(
      fc.property(safeCommand, forbiddenUnit, fc.nat(), (c, ch, at) => {
        assert.equal(classifyCommand(c, ctx).readOnly, true, c);
        const pos = at % (c.length + 1);
        const s = c.slice(0, pos) + ch + c.slice(pos);
        const v = classifyCommand(s, ctx);
        assert.equal(v.readOnly, false, JSON.stringify(s));
        assert.ok(v.reasons.length > 0);
      }),
      { numRuns: RUNS * 4 },
    );
  });

  test('a non-ASCII character outside quotes makes the command not read-only', () => {
    const unquoted = safeCommand.filter((c) => !c.includes("'") && !c.includes('"'));
    fc.assert(
      fc.property(unquoted, nonAscii, fc.nat(), (c, ch, at) => {
        const pos = at % (c.length + 1);
        const s = c.slice(0, pos) + ch + c.slice(pos);
        assert.equal(classifyCommand(s, ctx).readOnly, false, JSON.stringify(s));
      }),
      { numRuns: RUNS * 4 },
    );
  });

  test('non-ASCII inside a quoted operand is fine; as the program or an option it is not', () => {
    fc.assert(
      fc.property(
        fc.array(nonAscii, { minLength: 1, maxLength: 6 }).map((a) => a.join('')),
        (u) => {
          assert.equal(classifyCommand(`cat ${shQuote('f-' + u)}`, ctx).readOnly, true, u);
          assert.equal(classifyCommand(`echo "x${u.replace(/["$`\\!]/g, '')}"`, ctx).readOnly, true, u);
          assert.equal(classifyCommand(`${shQuote('ls' + u)} x`, ctx).readOnly, false, u);
          assert.equal(classifyCommand(`ls ${shQuote('-l' + u)}`, ctx).readOnly, false, u);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('tokenizer', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((s) => forbiddenCharacter(s) === null);

  test('single-quoted words come back exactly', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 6 }), (words) => {
        const r = parseCommandList(words.map(shQuote).join(' '));
        assert.ok(r.ok, JSON.stringify(words));
        assert.equal(r.commands.length, 1);
        assert.deepEqual(
          r.commands[0]!.words.map((w) => w.value),
          words,
        );
        assert.ok(r.commands[0]!.words.every((w) => !w.glob && !w.tilde));
      }),
      { numRuns: RUNS },
    );
  });

  test('a quoted heredoc body is literal and read-only; unquoted with $ or ` it is not', () => {
    const line = text.filter((l) => !l.includes('\n') && l !== 'EOF');
    fc.assert(
      fc.property(fc.array(line, { maxLength: 5 }), (lines) => {
        const body = lines.map((l) => l + '\n').join('');
        const s = `cat <<'EOF'\n${body}EOF\nls`;
        const r = parseCommandList(s);
        assert.ok(r.ok, JSON.stringify(s));
        assert.equal(r.commands[0]!.redirections[0]!.heredoc, body);
        assert.deepEqual(
          r.commands[1]!.words.map((w) => w.value),
          ['ls'],
        );
        assert.equal(classifyCommand(s, ctx).readOnly, true, JSON.stringify(s));
        const u = `cat <<EOF\n${body}EOF`;
        const expands = body.includes('$') || body.includes('`') || body.includes('\\');
        assert.equal(classifyCommand(u, ctx).readOnly, !expands, JSON.stringify(u));
      }),
      { numRuns: RUNS },
    );
  });

  test('never throws; a refusal always says why', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const r = parseCommandList(s);
        if (!r.ok) assert.ok(r.reason.length > 0);
        const v = classifyCommand(s, ctx);
        if (!v.readOnly || v.touchesLatch) assert.ok(v.reasons.length > 0);
      }),
      { numRuns: RUNS * 4 },
    );
  });
});

describe('sed and awk parsers', () => {
  const addr = fc.constantFrom(
    '',
    '1',
    '$',
    '10',
    '/x/',
    '/a\\/b/',
    '1,5',
    '/a/,/b/',
    '2~3',
    '/a/,+2',
    '0,/re/',
    '3,$',
    '/x/I',
  );
  const safeCmd = fc.constantFrom('p', '=', 'l', 'q', 'Q', 'd', 'q5', 'l 3');
  const safeScript = fc
    .array(fc.tuple(addr, fc.boolean(), safeCmd), { minLength: 1, maxLength: 4 })
    .map((xs) => xs.map(([a, neg, c]) => `${a}${neg && a ? '!' : ''}${c}`).join(';'));

  test('scripts of addresses and p = l q Q d are read-only', () => {
    fc.assert(
      fc.property(safeScript, (sc) => {
        const v = classifyCommand(`sed -n ${shQuote(sc)} a.txt`, ctx);
        assert.equal(v.readOnly, true, `${sc} ${JSON.stringify(v.reasons)}`);
      }),
      { numRuns: RUNS },
    );
  });

  test('any other command among them is refused', () => {
    const bad = fc.constantFrom(
      'w out',
      'W out',
      'r x',
      'R x',
      'e id',
      's/a/b/',
      's/a/b/w x',
      'y/a/b/',
      'a x',
      'i x',
      'c x',
      'N',
      'n',
      'G',
      'H',
      'x',
      'b',
      ':l',
      'F',
      'z',
      'v',
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(addr, safeCmd), { maxLength: 3 }), bad, addr, fc.nat(), (pre, b, a, at) => {
        const parts = pre.map(([x, c]) => `${x}${c}`);
        parts.splice(at % (parts.length + 1), 0, `${a}${b}`);
        const sc = parts.join('\n');
        assert.equal(classifyCommand(`sed -n ${shQuote(sc)} a.txt`, ctx).readOnly, false, sc);
      }),
      { numRuns: RUNS },
    );
  });

  const awkSafe = fc.constantFrom(
    '{print $1}',
    'NR==1',
    '$2 < 3 {c++} END {print c}',
    '{s+=length($0)} END {printf "%d\\n", s}',
    '/re/',
    'BEGIN{FS=":"} {print $NF}',
    '{a[$1]++} END {for (k in a) print k, a[k]}',
  );
  const awkBad = fc.constantFrom(
    'system("id")',
    '"id" | getline',
    'getline x < "f"',
    'print > "f"',
    'print >> "f"',
    'print | "sh"',
    'close("f")',
    'fflush()',
    'ENVIRON["X"]',
    'PROCINFO["pid"]',
    '@f()',
    'ARGV[1]="x"',
    'ARGC=2',
    '"x" |& getline',
  );

  test('awk programs are refused as soon as a forbidden construct appears anywhere', () => {
    fc.assert(
      fc.property(awkSafe, awkBad, fc.nat(), (p, b, at) => {
        assert.equal(classifyCommand(`awk ${shQuote(p)} a.txt`, ctx).readOnly, true, p);
        const pos = at % (p.length + 1);
        const prog = p.slice(0, pos) + ` ${b} ` + p.slice(pos);
        assert.equal(classifyCommand(`awk ${shQuote(prog)} a.txt`, ctx).readOnly, false, prog);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('git spelling', () => {
  const globals = ['--no-pager', '--no-optional-locks', '-c core.fsmonitor=false', '-c core.hooksPath=/dev/null'];
  const gpg = ['-c gpg.program=/dev/null', '-c gpg.ssh.program=/dev/null', '-c gpg.x509.program=/dev/null'];
  const subs: Array<[string, string[], string]> = [
    ['status', [], '--short'],
    ['log', gpg, '--no-ext-diff --no-textconv --oneline'],
    ['show', gpg, '--no-ext-diff --no-textconv HEAD'],
    ['diff', ['-c diff.autoRefreshIndex=false'], '--no-ext-diff --no-textconv --stat'],
    ['blame', [], '--no-textconv a.txt'],
    ['rev-parse', [], 'HEAD'],
  ];

  test('the required global options in any order are accepted; dropping any one is refused', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: subs.length - 1 }), fc.nat(), fc.nat(), (k, seed, drop) => {
        const [sub, extra, rest] = subs[k]!;
        const opts = [...globals, ...extra];
        // a deterministic shuffle
        const order = opts
          .map((o, i) => [((seed + 1) * (i + 7) * 2654435761) % 1000, o] as const)
          .sort((a, b) => a[0] - b[0])
          .map((x) => x[1]);
        const cmd = `git -C ${CWD} ${order.join(' ')} ${sub} ${rest}`;
        const v = classifyCommand(cmd, { ...ctx, cwd: '/' });
        assert.equal(v.readOnly, true, `${cmd} ${JSON.stringify(v.reasons)}`);
        const without = order.filter((_, i) => i !== drop % order.length);
        const w = classifyCommand(`git -C ${CWD} ${without.join(' ')} ${sub} ${rest}`, { ...ctx, cwd: '/' });
        assert.equal(w.readOnly, false, without.join(' '));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('paths', () => {
  const seg = fc.constantFrom(
    '..',
    '.',
    'x',
    'home',
    'u',
    '.local',
    'state',
    'latch',
    'latch.db',
    'work',
    'proj',
    '',
    'nonexistent-home',
  );
  const rel = fc
    .array(seg, { minLength: 1, maxLength: 9 })
    .map((xs) => xs.join('/'))
    .filter((p) => p.length > 0 && !p.startsWith('/'));

  test('a relative path touches Latch exactly when it resolves (against cwd) into the Latch home', () => {
    // The classifier's answer is deliberately a little larger than "resolves into the home" (state.ts,
    // latch-guard.ts): a path that passes through the home on its way (`latch/..`), and a command whose
    // text names the home, touch Latch too. The oracle says exactly that; its core, a path that ends
    // inside the home, is never missed.
    const inHome = (x: string) => x === LATCH_HOME || x.startsWith(LATCH_HOME + '/');
    const passesThrough = (from: string, path: string) => {
      let cur = from;
      for (const s of path.split('/')) {
        if (s === '' || s === '.') continue;
        cur = s === '..' ? posix.dirname(cur) : posix.join(cur, s);
        if (inHome(cur)) return true;
      }
      return false;
    };
    fc.assert(
      fc.property(rel, fc.constantFrom('cat', 'ls', 'head -n 1', 'wc -c'), (p, prog) => {
        const resolved = posix.resolve(CWD, p);
        const inside = inHome(resolved);
        const command = `${prog} ${shQuote(p)}`;
        const v = classifyCommand(command, ctx);
        if (inside) assert.equal(v.touchesLatch, true, `${p} -> ${resolved}: missed`);
        const named = (text: string) => text.includes(LATCH_HOME);
        assert.equal(
          v.touchesLatch,
          passesThrough(CWD, p) || named(command),
          `${p} -> ${resolved} ${JSON.stringify(v.reasons)}`,
        );
        // `cd` first, then the rest of the path. The classifier checks a path against every directory
        // the command may be running in (state.ts, `cwds`: ctx.cwd, then each `cd` target): the rest
        // of the path counts from either.
        const parts = p.split('/');
        const first = parts[0]!;
        const restPath = parts.slice(1).join('/');
        // (A rest that starts with '/' (the path had `//` after its first part) is absolute: no longer
        // the same path from the `cd` target.)
        if (first !== '' && restPath !== '' && first !== '-' && !restPath.startsWith('/')) {
          const command2 = `cd ${shQuote(first)} && ${prog} ${shQuote(restPath)}`;
          const v2 = classifyCommand(command2, ctx);
          if (inside) assert.equal(v2.touchesLatch, true, `${command2}: missed`);
          assert.equal(
            v2.touchesLatch,
            passesThrough(CWD, first) ||
              passesThrough(posix.resolve(CWD, first), restPath) ||
              passesThrough(CWD, restPath) ||
              named(command2),
            `${command2} ${JSON.stringify(v2.reasons)}`,
          );
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  test('without a working directory, a relative path with .. is not read-only', () => {
    const noCwd = { latchHome: LATCH_HOME, home: HOME };
    assert.equal(classifyCommand('cat ../x', noCwd).readOnly, false);
    assert.equal(classifyCommand('cat a/../../x', noCwd).readOnly, false);
    assert.equal(classifyCommand('cat a/b', noCwd).readOnly, true);
    assert.equal(classifyCommand('cd /tmp && cat ../x', noCwd).readOnly, true);
    assert.equal(classifyCommand('cd sub && cat ../x', { ...noCwd, cwd: '/w' }).readOnly, true);
  });
});
