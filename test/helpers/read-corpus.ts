// The read corpus: real read-only shell commands typed by coding agents (public trajectories), kept because running
// them in the workspace made here left it unchanged (not a byte, inode or timestamp). See test/fixtures/read-corpus/README.md.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CorpusCommand {
  cmd: string;
  source: string;
  agent: string;
  exit: number;
}

/** What build.ts derived from the commands: the files and directories they name, and the identifiers they grep for. */
export interface CorpusPaths {
  files: string[];
  dirs: string[];
  executables: string[];
  identifiers: string[];
  byPath: Record<string, string[]>;
  modified: string;
  untracked: string;
}

export const CORPUS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/read-corpus');

function readJsonl<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

export function loadReadCorpus(file = path.join(CORPUS_DIR, 'commands.jsonl')): CorpusCommand[] {
  return readJsonl<CorpusCommand & { raw?: string }>(file).map((c) => ({
    cmd: c.cmd,
    source: c.source,
    agent: c.agent,
    exit: c.exit,
  }));
}

/** The rejected writers (same shape), for a second check. */
export function loadWriteCorpus(): CorpusCommand[] {
  return readJsonl<CorpusCommand>(path.join(CORPUS_DIR, 'writes.jsonl'));
}

export function loadCorpusPaths(): CorpusPaths {
  return JSON.parse(readFileSync(path.join(CORPUS_DIR, 'paths.json'), 'utf8')) as CorpusPaths;
}

/** All files get this mtime (and the commit this date), so the workspace is the same on every run. */
export const CORPUS_EPOCH = new Date('2024-01-02T03:04:05Z');
const LINES = 60;

const PY_KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield print self cls'
  ).split(' '),
);

/** FNV-1a, for deterministic choices. */
function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The identifiers a file mentions: those grepped for together with it first, then a deterministic pick of the rest. */
function idsFor(file: string, p: CorpusPaths): string[] {
  const own = p.byPath[file] ?? [];
  const out = [...own];
  const pool = p.identifiers;
  for (let i = 0; out.length < 24 && pool.length > 0 && i < 64; i++) {
    const id = pool[fnv(`${file}#${i}`) % pool.length]!;
    if (!out.includes(id)) out.push(id);
  }
  if (out.length === 0) out.push('value');
  return out;
}

function pad(lines: string[], filler: (i: number) => string): string[] {
  for (let i = lines.length; lines.length < LINES; i++) lines.push(filler(i));
  return lines.slice(0, LINES);
}

/** Deterministic content for one corpus file: 60 lines shaped by its extension, naming identifiers from the corpus. */
export function corpusFileContent(file: string, p: CorpusPaths): string {
  const ids = idsFor(file, p);
  const id = (i: number) => ids[i % ids.length]!;
  const ext = path.extname(file).toLowerCase();
  const base = path.basename(file);
  let lines: string[];
  if (ext === '.py' || ext === '.pyi') {
    const names = ids.filter((n) => !PY_KEYWORDS.has(n) && /^[A-Za-z_]\w*$/.test(n));
    if (names.length === 0) names.push('value');
    const nm = (i: number) => names[i % names.length]!;
    lines = [`"""Fixture module ${file} for the Latch read corpus."""`, 'import os', 'import sys', ''];
    lines.push(`${nm(0).toUpperCase()}_NAME = "${nm(0)}"`, '');
    for (let i = 0; lines.length < LINES - 6; i++) {
      if (i % 3 === 0) {
        lines.push(`class ${nm(i)}:`, `    """${nm(i)} keeps ${nm(i + 1)}."""`, '');
        lines.push(
          `    def ${nm(i + 1)}(self, value=None):`,
          `        # TODO: ${nm(i + 2)}`,
          '        return value',
          '',
        );
      } else {
        lines.push(`def ${nm(i)}(*args, **kwargs):`, `    return ${JSON.stringify(nm(i + 1))}`, '');
      }
    }
    lines.push('', "if __name__ == '__main__':", `    print(${JSON.stringify(`${base} ${nm(1)}`)})`);
    lines = pad(lines, (i) => `# ${nm(i)}`);
  } else if (ext === '.json' || ext === '.ipynb') {
    const body = ids
      .slice(0, LINES - 2)
      .map((n, i) => `  ${JSON.stringify(n)}: ${JSON.stringify(`${id(i + 1)}-${i}`)}`);
    lines = ['{', ...body.map((l, i) => (i < body.length - 1 ? `${l},` : l)), '}'];
  } else if (ext === '.sh' || ext === '.bash') {
    lines = pad(['#!/bin/sh', `# Fixture script ${file} for the Latch read corpus.`], (i) =>
      i % 2 === 0 ? `# ${id(i)} ${id(i + 1)}` : `echo ${JSON.stringify(`${id(i)}`).replace(/\$/g, '')}`,
    );
  } else if (ext === '.csv' || ext === '.tsv') {
    const sep = ext === '.csv' ? ',' : '\t';
    lines = pad([['id', id(0), id(1), id(2)].join(sep)], (i) => [String(i), id(i), id(i + 1), String(i * 7)].join(sep));
  } else if (ext === '.yml' || ext === '.yaml') {
    lines = pad([`# ${file}`], (i) => `${id(i).replace(/[^\w-]/g, '_')}_${i}: ${id(i + 1).replace(/[^\w-]/g, '_')}`);
  } else if (['.md', '.rst', '.txt', '.log', '.cfg', '.ini', '.toml', '.in', '.out'].includes(ext) || ext === '') {
    lines = pad(
      [`${base} — fixture text for the Latch read corpus`, ''],
      (i) => `${id(i)} ${i}: ${id(i + 1)} ${id(i + 2)}`,
    );
  } else {
    // Source-like files in other languages: comments and declarations naming the identifiers.
    lines = pad([`// Fixture ${file} for the Latch read corpus.`, ''], (i) =>
      i % 4 === 0 ? `// ${id(i)}: ${id(i + 1)}` : `  ${id(i)}(${id(i + 1)}); // line ${i}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function gitIn(dir: string, args: string[]): void {
  const date = CORPUS_EPOCH.toISOString();
  execFileSync('git', args, {
    cwd: dir,
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    },
  });
}

/**
 * Builds the corpus workspace in `dir` (which must be empty or absent): every file and directory named in paths.json
 * with deterministic content, committed on `main`; then one tracked file modified and one untracked file added, so
 * `git status` and `git diff` have output. All mtimes are CORPUS_EPOCH, and core.checkStat=minimal /
 * core.trustctime=false keep a copied workspace clean for git (a copy changes inode and ctime), so a plain
 * `git status` does not need to rewrite the index.
 */
export function makeCorpusWorkspace(dir: string, p: CorpusPaths = loadCorpusPaths()): void {
  mkdirSync(dir, { recursive: true });
  gitIn(dir, ['init', '-q', '-b', 'main']);
  gitIn(dir, ['config', 'core.checkStat', 'minimal']);
  gitIn(dir, ['config', 'core.trustctime', 'false']);
  for (const d of p.dirs) mkdirSync(path.join(dir, d), { recursive: true });
  const exec = new Set(p.executables);
  const touched: string[] = [];
  for (const f of p.files) {
    const abs = path.join(dir, f);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, corpusFileContent(f, p));
    chmodSync(abs, exec.has(f) ? 0o755 : 0o644);
    touched.push(abs);
  }
  for (const f of touched) utimesSync(f, CORPUS_EPOCH, CORPUS_EPOCH);
  gitIn(dir, ['add', '-A']);
  gitIn(dir, ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'corpus workspace']);
  const modified = path.join(dir, p.modified);
  writeFileSync(modified, `${readFileSync(modified, 'utf8')}# uncommitted change for the read corpus\n`);
  const untracked = path.join(dir, p.untracked);
  writeFileSync(untracked, 'untracked file for the read corpus\n');
  utimesSync(modified, CORPUS_EPOCH, CORPUS_EPOCH);
  utimesSync(untracked, CORPUS_EPOCH, CORPUS_EPOCH);
  // Directory mtimes too, last (writing files above moved them).
  const dirs = new Set<string>(['.']);
  for (const f of [...p.files, ...p.dirs, p.untracked]) {
    for (let d = path.dirname(f); d !== '.' && d !== '/'; d = path.dirname(d)) dirs.add(d);
    if (p.dirs.includes(f)) dirs.add(f);
  }
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    utimesSync(path.join(dir, d), CORPUS_EPOCH, CORPUS_EPOCH);
  }
}
