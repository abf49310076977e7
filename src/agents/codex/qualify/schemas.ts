// Codex's hook JSON Schemas, read from the binary itself, and a small JSON Schema (draft-07 subset)
// validator for them (the package ships no ajv). The binary embeds each schema as pretty-printed JSON
// ({"$schema": ".../draft-07/schema#", ..., "title": "<event>.command.<input|output>"}); the same
// extraction as scripts/extract-hook-schemas.mjs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { packageDataDir } from '../qualification.js';

export type Schema = Record<string, unknown>;

/** End index (exclusive) of the JSON object starting at buf[start] === '{', or -1. */
function objectEnd(buf: Buffer, start: number, limit: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < limit; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return i + 1;
    else if (c === 0) return -1;
  }
  return -1;
}

/** title → schema of every hook schema embedded in a Codex binary. */
export function extractHookSchemas(buf: Buffer): Map<string, Schema> {
  const marker = Buffer.from('"$schema": "http://json-schema.org/draft-07/schema#"');
  const out = new Map<string, Schema>();
  for (let at = buf.indexOf(marker); at !== -1; at = buf.indexOf(marker, at + 1)) {
    const open = buf.lastIndexOf(0x7b, at);
    if (open < 0 || at - open > 16) continue;
    const end = objectEnd(buf, open, Math.min(buf.length, open + 1_000_000));
    if (end < 0) continue;
    let schema: unknown;
    try {
      schema = JSON.parse(buf.subarray(open, end).toString('utf8'));
    } catch {
      continue;
    }
    const title = (schema as { title?: unknown })?.title;
    if (typeof title === 'string' && /^[a-z-]+\.command\.(input|output)$/.test(title)) out.set(title, schema as Schema);
  }
  return out;
}

/** The reference schemas Latch was written against (data/hook-schemas/<version>.json). */
export function referenceSchemas(version = '0.169.0'): Map<string, Schema> | null {
  const dir = packageDataDir();
  const file = dir ? join(dir, 'hook-schemas', `${version}.json`) : null;
  if (!file || !existsSync(file)) return null;
  const data = JSON.parse(readFileSync(file, 'utf8')) as { schemas: Record<string, Schema> };
  return new Map(Object.entries(data.schemas));
}

export interface SchemaDiff {
  same: string[];
  changed: { title: string; detail: string[] }[];
  added: string[];
  removed: string[];
}

/** Compares two schema sets by title; `detail` names the properties added, removed or changed. */
export function diffSchemas(ref: Map<string, Schema>, got: Map<string, Schema>): SchemaDiff {
  const d: SchemaDiff = { same: [], changed: [], added: [], removed: [] };
  for (const [t, s] of ref) {
    const g = got.get(t);
    if (!g) d.removed.push(t);
    else if (isDeepStrictEqual(strip(s), strip(g))) d.same.push(t);
    else d.changed.push({ title: t, detail: propDiff(s, g) });
  }
  for (const t of got.keys()) if (!ref.has(t)) d.added.push(t);
  return d;
}

function strip(s: Schema): Schema {
  const { $schema: _s, ...rest } = s;
  return rest;
}

function propDiff(a: Schema, b: Schema): string[] {
  const out: string[] = [];
  const pa = (a.properties ?? {}) as Record<string, unknown>;
  const pb = (b.properties ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(pb)) if (!(k in pa)) out.push(`+${k}`);
  for (const k of Object.keys(pa)) if (!(k in pb)) out.push(`-${k}`);
  for (const k of Object.keys(pa)) if (k in pb && !isDeepStrictEqual(pa[k], pb[k])) out.push(`~${k}`);
  if (!isDeepStrictEqual(a.required, b.required)) out.push('~required');
  if (!isDeepStrictEqual(a.definitions, b.definitions)) out.push('~definitions');
  if (out.length === 0) out.push('~(other keywords)');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation: the keywords Codex's hook schemas use (type, enum, const, properties, required,
// additionalProperties, allOf, $ref to #/definitions) plus anyOf/oneOf/not/items and the simple
// numeric/string bounds. Any other assertion keyword is reported as unsupported (never ignored).

const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'definitions',
  'readOnly',
  'writeOnly',
  'format',
]);
const SUPPORTED = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'items',
  '$ref',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
]);

export function validate(schema: Schema, value: unknown): string[] {
  const errors: string[] = [];
  check(schema, schema, value, '$', errors);
  return errors;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function check(root: Schema, s: unknown, v: unknown, at: string, errors: string[]): void {
  if (s === true || s === undefined) return;
  if (s === false) {
    errors.push(`${at}: not allowed`);
    return;
  }
  if (!s || typeof s !== 'object') {
    errors.push(`${at}: schema is not an object`);
    return;
  }
  const sc = s as Schema;
  for (const k of Object.keys(sc))
    if (!SUPPORTED.has(k) && !ANNOTATIONS.has(k))
      errors.push(`${at}: schema keyword ${k} is not supported by Latch's validator`);
  if (typeof sc.$ref === 'string') {
    const m = /^#\/definitions\/(.+)$/.exec(sc.$ref);
    const target = m ? ((root.definitions ?? {}) as Record<string, unknown>)[m[1]!] : undefined;
    if (target === undefined) errors.push(`${at}: unresolvable $ref ${sc.$ref}`);
    else check(root, target, v, at, errors);
  }
  if (sc.type !== undefined) {
    const types = Array.isArray(sc.type) ? (sc.type as string[]) : [sc.type as string];
    const t = typeOf(v);
    if (!types.some((x) => x === t || (x === 'number' && t === 'integer'))) {
      errors.push(`${at}: is ${t}, expected ${types.join('|')}`);
      return;
    }
  }
  if (sc.const !== undefined && !isDeepStrictEqual(sc.const, v))
    errors.push(`${at}: ${JSON.stringify(v)} is not the constant ${JSON.stringify(sc.const)}`);
  if (Array.isArray(sc.enum) && !sc.enum.some((e) => isDeepStrictEqual(e, v)))
    errors.push(`${at}: ${JSON.stringify(v)} is not one of ${JSON.stringify(sc.enum)}`);
  if (typeof v === 'number') {
    if (typeof sc.minimum === 'number' && v < sc.minimum) errors.push(`${at}: ${v} < minimum ${sc.minimum}`);
    if (typeof sc.maximum === 'number' && v > sc.maximum) errors.push(`${at}: ${v} > maximum ${sc.maximum}`);
  }
  if (typeof v === 'string') {
    if (typeof sc.minLength === 'number' && v.length < sc.minLength) errors.push(`${at}: shorter than ${sc.minLength}`);
    if (typeof sc.maxLength === 'number' && v.length > sc.maxLength) errors.push(`${at}: longer than ${sc.maxLength}`);
    if (typeof sc.pattern === 'string' && !new RegExp(sc.pattern, 'u').test(v))
      errors.push(`${at}: does not match ${sc.pattern}`);
  }
  if (Array.isArray(v)) {
    if (typeof sc.minItems === 'number' && v.length < sc.minItems)
      errors.push(`${at}: fewer than ${sc.minItems} items`);
    if (typeof sc.maxItems === 'number' && v.length > sc.maxItems) errors.push(`${at}: more than ${sc.maxItems} items`);
    if (sc.items !== undefined) {
      if (Array.isArray(sc.items))
        sc.items.forEach((it, i) => {
          if (i < v.length) check(root, it, v[i], `${at}[${i}]`, errors);
        });
      else
        v.forEach((x, i) => {
          check(root, sc.items, x, `${at}[${i}]`, errors);
        });
    }
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const props = (sc.properties ?? {}) as Record<string, unknown>;
    if (Array.isArray(sc.required))
      for (const r of sc.required as string[]) if (!(r in o)) errors.push(`${at}: missing required property ${r}`);
    for (const [k, x] of Object.entries(o)) {
      if (k in props) check(root, props[k], x, `${at}.${k}`, errors);
      else if (sc.additionalProperties === false) errors.push(`${at}: unknown property ${k}`);
      else if (sc.additionalProperties && typeof sc.additionalProperties === 'object')
        check(root, sc.additionalProperties, x, `${at}.${k}`, errors);
    }
  }
  if (Array.isArray(sc.allOf)) for (const sub of sc.allOf) check(root, sub, v, at, errors);
  if (Array.isArray(sc.anyOf)) {
    if (!sc.anyOf.some((sub) => validateSub(root, sub, v))) errors.push(`${at}: matches none of anyOf`);
  }
  if (Array.isArray(sc.oneOf)) {
    const n = sc.oneOf.filter((sub) => validateSub(root, sub, v)).length;
    if (n !== 1) errors.push(`${at}: matches ${n} of oneOf (expected 1)`);
  }
  if (sc.not !== undefined && validateSub(root, sc.not, v)) errors.push(`${at}: matches "not"`);
}

function validateSub(root: Schema, s: unknown, v: unknown): boolean {
  const e: string[] = [];
  check(root, s, v, '$', e);
  return e.length === 0;
}

/** Codex event name → schema file stem. */
export const EVENT_SCHEMA: Record<string, string> = {
  SessionStart: 'session-start',
  UserPromptSubmit: 'user-prompt-submit',
  PreToolUse: 'pre-tool-use',
  PermissionRequest: 'permission-request',
  PostToolUse: 'post-tool-use',
  PreCompact: 'pre-compact',
  PostCompact: 'post-compact',
  Stop: 'stop',
  SubagentStart: 'subagent-start',
  SubagentStop: 'subagent-stop',
  SessionEnd: 'session-end',
  Interrupt: 'interrupt',
};
