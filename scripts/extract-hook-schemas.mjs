#!/usr/bin/env node
// Re-extracts Codex's hook JSON Schemas from the installed native binary.
// The binary embeds each schema as pretty-printed JSON text ({"$schema": ".../draft-07/schema#", ...,
// "title": "<event>.command.<input|output>"}). We locate every such object, cut it out with a
// string-aware brace matcher, JSON.parse it and write <title>.json.
// Usage: node scripts/extract-hook-schemas.mjs [outDir] [--check refDir]
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const PLATFORM_PACKAGES = {
  'linux-x64': ['@openai/codex-linux-x64', 'x86_64-unknown-linux-musl'],
  'linux-arm64': ['@openai/codex-linux-arm64', 'aarch64-unknown-linux-musl'],
  'darwin-x64': ['@openai/codex-darwin-x64', 'x86_64-apple-darwin'],
  'darwin-arm64': ['@openai/codex-darwin-arm64', 'aarch64-apple-darwin'],
  'win32-x64': ['@openai/codex-win32-x64', 'x86_64-pc-windows-msvc'],
  'win32-arm64': ['@openai/codex-win32-arm64', 'aarch64-pc-windows-msvc'],
};

export function findCodexBinary() {
  const entry = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!entry) throw new Error(`unsupported platform ${process.platform}-${process.arch}`);
  const [pkg, triple] = entry;
  // Resolve the platform package the way @openai/codex's launcher does: from @openai/codex itself.
  const req = createRequire(createRequire(import.meta.url).resolve('@openai/codex/package.json'));
  const root = dirname(req.resolve(`${pkg}/package.json`));
  const bin = join(root, 'vendor', triple, 'bin', process.platform === 'win32' ? 'codex.exe' : 'codex');
  if (!existsSync(bin)) throw new Error(`codex binary not found at ${bin}`);
  return bin;
}

/** End index (exclusive) of the JSON object starting at buf[start] === '{', or -1. */
function objectEnd(buf, start, limit) {
  let depth = 0;
  let inString = false;
  for (let i = start; i < limit; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip escaped char
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i + 1;
    else if (c === 0) return -1; // left the text section
  }
  return -1;
}

/** Map title -> { schema, text } of every hook schema embedded in the binary. */
export function extractSchemas(buf) {
  const marker = Buffer.from('"$schema": "http://json-schema.org/draft-07/schema#"');
  const schemas = new Map();
  for (let at = buf.indexOf(marker); at !== -1; at = buf.indexOf(marker, at + 1)) {
    const open = buf.lastIndexOf(0x7b, at); // the '{' just before the marker
    if (open < 0 || at - open > 16) continue;
    const end = objectEnd(buf, open, Math.min(buf.length, open + 1_000_000));
    if (end < 0) continue;
    let schema;
    try {
      schema = JSON.parse(buf.subarray(open, end).toString('utf8'));
    } catch {
      continue;
    }
    if (typeof schema?.title === 'string' && /^[a-z-]+\.command\.(input|output)$/.test(schema.title)) {
      schemas.set(schema.title, { schema, text: buf.subarray(open, end).toString('utf8') });
    }
  }
  return schemas;
}

function main() {
  const args = process.argv.slice(2);
  const checkAt = args.indexOf('--check');
  const refDir = checkAt >= 0 ? args.splice(checkAt, 2)[1] : undefined;
  const outDir =
    args[0] ?? join(dirname(new URL(import.meta.url).pathname), '..', 'test', 'fixtures', 'codex-hook-schemas');
  const bin = findCodexBinary();
  const schemas = extractSchemas(readFileSync(bin));
  if (schemas.size === 0) throw new Error(`no hook schemas found in ${bin}`);
  mkdirSync(outDir, { recursive: true });
  // Written byte-for-byte as embedded in the binary (pretty-printed, no trailing newline).
  for (const [title, { text }] of [...schemas].sort()) writeFileSync(join(outDir, `${title}.json`), text);
  console.log(`extracted ${schemas.size} hook schemas from ${bin} into ${outDir}`);
  if (refDir) {
    let bad = 0;
    const refNames = readdirSync(refDir)
      .filter((n) => n.endsWith('.json'))
      .sort();
    for (const name of new Set([...refNames, ...[...schemas.keys()].map((t) => `${t}.json`)])) {
      const ref = existsSync(join(refDir, name)) ? JSON.parse(readFileSync(join(refDir, name), 'utf8')) : undefined;
      const got = schemas.get(name.replace(/\.json$/, ''))?.schema;
      if (!isDeepStrictEqual(ref, got)) {
        bad++;
        console.error(
          `MISMATCH ${name}: ${ref === undefined ? 'not in reference' : got === undefined ? 'not extracted' : 'differs'}`,
        );
      }
    }
    console.log(bad ? `${bad} schema(s) differ from ${refDir}` : `all ${refNames.length} schemas equal ${refDir}`);
    if (bad) process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
