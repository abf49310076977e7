// `latch demo claude`: the demo's Claude Code story on the real pinned binary (2.1.332) over the
// loopback Messages fake, run as a user runs it (`node dist/latch.cjs demo claude`), checked from the
// lines it prints: latched at the checkpoint, the writes denied, `cat` run (inside bubblewrap where it
// works), tree digests equal, verify restores, the resumed session writes. And without Claude Code,
// the demo says what to install and exits 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const LATCH = resolve('dist', 'latch.cjs');

test('latch demo claude: latched at the checkpoint, writes denied, cat runs, tree equal, verify restores, the resumed session writes', {
  timeout: 300_000,
}, () => {
  assert.ok(existsSync(LATCH), 'dist/latch.cjs is missing: run `npm run build` before the e2e tests');
  const r = spawnSync(process.execPath, [LATCH, 'demo', 'claude'], { encoding: 'utf8', timeout: 280_000 });
  const out = r.stdout;
  assert.equal(r.status, 0, `exit ${r.status}\n${out}\n${r.stderr}`);
  const lines = [
    /^Latch demo \(Claude Code\) in \S+$/m,
    /^Claude Code 2\.1\.332 at \S+$/m,
    /^1\. Install Latch into a fresh CLAUDE_CONFIG_DIR \(`latch setup claude`\)/m,
    /^2\. Run a real `claude -p`: two writes, an auto-compaction, then three more calls\.$/m,
    /^ {3}compactions requested by Claude Code: [1-9]$/m,
    /^ {3}session [0-9a-f-]{36}: latched$/m,
    /^ {3}checkpoint \S+ observed via .*post_compact/m,
    /^ {3}tree at checkpoint [0-9a-f]{16}… \(\d+ files\); now [0-9a-f]{16}… \(\d+ files\): EQUAL$/m,
    /^ {3}denied after compaction: 2 call\(s\) \(Bash, Write\); the model received 2 denial message\(s\), e\.g\.:$/m,
    /^ {5}".*Latch.*…"$/m,
    /^ {3}the read-only `cat progress\.txt` ran .* and returned "step 1: parsed the config\\nstep 2: wrote the tests"$/m,
    /^ {3}task brief re-delivered to the model after the compaction: yes$/m,
    /^ {3}progress\.txt is still: "step 1: parsed the config\\nstep 2: wrote the tests\\n"$/m,
    /^3\. A human runs `latch verify --yes`:$/m,
    /^ {3}Restored: session [0-9a-f-]{36}/m,
    /^4\. The session resumes \(`claude -p --resume`\) and may write again:$/m,
    /^ {3}resume exit 0 \(same session: yes; brief re-delivered: yes\); progress\.txt now:$/m,
    /^ {5}step 1: parsed the config\n {5}step 2: wrote the tests\n {5}step 3: verified, continuing$/m,
    /^The latch held across the compaction and was released only by verification\.$/m,
  ];
  for (const re of lines) assert.match(out, re);
  // The read ran in Latch's sandbox (bubblewrap where it works), run by the hook and replayed.
  if (process.platform === 'linux' && existsSync('/usr/bin/bwrap'))
    assert.match(
      out,
      /`cat progress\.txt` ran inside Latch's read-only sandbox \(bubblewrap \+ seccomp\), run by the hook/,
    );
  assert.doesNotMatch(out, /^Latch demo in |codex exec/m, 'only the Claude Code story');
  const base = /^Latch demo \(Claude Code\) in (\S+)$/m.exec(out)![1]!;
  assert.ok(!existsSync(base), `the demo removed ${base}`);
});

test('latch demo claude without Claude Code (no devDependency beside Latch, no `claude` on the PATH): says what to install, exit 1', () => {
  // The built files alone in a scratch directory (no node_modules above them or the cwd), and a PATH of node and git only.
  const base = mkdtempSync(join(tmpdir(), 'latch-demo-noclaude-'));
  try {
    cpSync(resolve('dist'), join(base, 'dist'), { recursive: true });
    const bin = join(base, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    const git = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    assert.ok(git, 'git is on the PATH');
    symlinkSync(git, join(bin, 'git'));
    const env = { ...process.env, PATH: bin, HOME: base, LATCH_HOME: join(base, 'state') };
    const r = spawnSync(process.execPath, [join(base, 'dist', 'latch.cjs'), 'demo', 'claude'], {
      cwd: base,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stderr,
      /^latch demo: the demo drives the real Claude Code CLI, which is not installed here .*Install it: `npm i -g @anthropic-ai\/claude-code@2\.1\.332`.*then run `latch demo claude` again/m,
    );
    assert.equal(r.stdout, '', 'nothing was started');
    // Both: each missing agent is named with what to install; exit 1.
    const all = spawnSync(process.execPath, [join(base, 'dist', 'latch.cjs'), 'demo'], {
      cwd: base,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    assert.equal(all.status, 1, `${all.stdout}\n${all.stderr}`);
    assert.match(
      all.stderr,
      /^latch demo: the demo drives the real Codex CLI, which is not installed here .*Install it: `npm i -g @openai\/codex@0\.171\.0`/m,
    );
    assert.match(
      all.stderr,
      /^latch demo: the demo drives the real Claude Code CLI, which is not installed here .*Install it: `npm i -g @anthropic-ai\/claude-code@2\.1\.332`/m,
    );
    assert.match(
      all.stdout,
      /Codex: not installed, skipped \(see above\)\. Claude Code: not installed, skipped \(see above\)\./,
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
