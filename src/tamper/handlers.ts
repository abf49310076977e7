// The hook-text matcher: which handlers of a hooks file are Latch's (by their command text), their
// positions and Codex's positional trust keys, and how a recorded hooks file compares with its text now.
import { canonicalJson, clip, type FileNow, kindOfSig, realOr, sha256 } from './fingerprint.js';
import type { CanonHandler, FileRow, Finding, HooksScope } from './types.js';

// ---------------------------------------------------------------------------------------------
// hooks.json

const MARK = / hook [a-z]+ --event /;

/** A handler Latch wrote: its command runs `... hook <agent> --event NAME` of a `latch` entry. */
export function isLatchHandler(h: unknown): boolean {
  if (!h || typeof h !== 'object') return false;
  const c = (h as { command?: unknown }).command;
  return typeof c === 'string' && MARK.test(c) && /latch/.test(c);
}

/** One Latch handler found in a hooks object, where it stands (Codex's trust keys are positional). */
export interface LatchHandlerAt {
  event: string;
  group: number;
  index: number;
  matcher: string | null;
  handler: { command: string; timeout?: unknown; statusMessage?: unknown };
}

/** Every Latch handler of a `hooks` object (`{ Event: [{ matcher, hooks: [...] }] }`), in file order; malformed parts are skipped. */
export function eachLatchHandler(hooks: unknown, fn: (at: LatchHandlerAt) => void): void {
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks)) return;
  for (const [event, groups] of Object.entries(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((g: unknown, group) => {
      if (!g || typeof g !== 'object') return;
      const gr = g as { matcher?: unknown; hooks?: unknown };
      if (!Array.isArray(gr.hooks)) return;
      gr.hooks.forEach((h: unknown, index) => {
        if (!isLatchHandler(h)) return;
        const matcher = typeof gr.matcher === 'string' ? gr.matcher : null;
        fn({ event, group, index, matcher, handler: h as LatchHandlerAt['handler'] });
      });
    });
  }
}

/** Latch's handlers in a parsed hooks file, with their positions (Codex's trust keys are positional). */
export function latchHandlersOf(data: unknown): CanonHandler[] {
  const out: CanonHandler[] = [];
  const hooks = data && typeof data === 'object' ? (data as { hooks?: unknown }).hooks : undefined;
  eachLatchHandler(hooks, ({ event, group, index, matcher, handler }) =>
    out.push({ event, group, index, matcher, json: canonicalJson(handler) }),
  );
  return out;
}

const snake = (event: string) => event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** Codex's trust keys of a handler: `<hooks.json path>:<event_snake>:<group>:<handler>` (path as given and real). */
export function trustKeysOf(hooksFile: string, h: Pick<CanonHandler, 'event' | 'group' | 'index'>): string[] {
  const tail = `:${snake(h.event)}:${h.group}:${h.index}`;
  const real = realOr(hooksFile);
  return real === hooksFile ? [hooksFile + tail] : [hooksFile + tail, real + tail];
}

export function parseHooks(bytes: Buffer): { data: unknown; error?: string } {
  try {
    const data: unknown = JSON.parse(bytes.toString('utf8'));
    if (!data || typeof data !== 'object' || Array.isArray(data)) return { data: null, error: 'not a JSON object' };
    return { data };
  } catch (err) {
    return { data: null, error: `not valid JSON (${(err as Error).message})` };
  }
}

function describeHandlerChange(before: CanonHandler, after: CanonHandler): string {
  const b = JSON.parse(before.json) as Record<string, unknown>;
  const a = JSON.parse(after.json) as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter(
    (k) => canonicalJson(b[k]) !== canonicalJson(a[k]),
  );
  const parts = fields.map((k) =>
    k === 'command'
      ? `command now ${clip(String(a[k]))}`
      : `${k} ${clip(canonicalJson(b[k]))} -> ${clip(canonicalJson(a[k]))}`,
  );
  if (before.matcher !== after.matcher)
    parts.push(`matcher ${JSON.stringify(before.matcher)} -> ${JSON.stringify(after.matcher)}`);
  return parts.join('; ') || 'changed';
}

export function compareHooks(scope: HooksScope, row: FileRow, now: FileNow): Finding[] {
  const path = row.path;
  const f = (code: string, detail: string): Finding => ({ code, severity: 'tamper', path, detail });
  if (now.kind === 'absent')
    return [f('hooks_file_missing', 'hooks.json was removed: Codex runs none of the Latch handlers')];
  if (now.kind === 'error' || now.bytes === null)
    return [f('hooks_file_unreadable', `cannot read it (${now.error ?? now.kind})`)];
  const out: Finding[] = [];
  if (row.link !== now.link || kindOfSig(row.sig) !== kindOfSig(now.sig)) {
    out.push(
      f(
        'file_replaced',
        `was a ${kindOfSig(row.sig)}${row.link ? ` -> ${row.link}` : ''}, now a ${kindOfSig(now.sig)}${now.link ? ` -> ${now.link}` : ''}`,
      ),
    );
  }
  if (now.sha256 === scope.hooks_sha256) return out;
  const parsed = parseHooks(now.bytes);
  if (parsed.error)
    return [...out, f('hooks_file_unreadable', `${parsed.error}: Codex cannot load it, so no Latch handler runs`)];
  const cur = latchHandlersOf(parsed.data);
  const pos = (h: CanonHandler) => `${h.event}:${h.group}:${h.index}`;
  for (const r of scope.handlers) {
    const same = cur.find((c) => pos(c) === pos(r));
    if (same && same.json === r.json && same.matcher === r.matcher) continue;
    if (same) {
      out.push(
        f(
          'handler_changed',
          `${r.event} handler ${describeHandlerChange(r, same)} (Codex skips a changed handler until it is trusted again)`,
        ),
      );
      continue;
    }
    const moved = cur.find((c) => c.event === r.event && c.json === r.json);
    if (moved)
      out.push(
        f(
          'handler_moved',
          `${r.event} handler moved from group ${r.group}/${r.index} to ${moved.group}/${moved.index} (its trust key changed: Codex skips it)`,
        ),
      );
    else out.push(f('handler_removed', `${r.event} handler removed`));
  }
  for (const c of cur) {
    if (
      !scope.handlers.some((r) => pos(r) === pos(c)) &&
      !scope.handlers.some((r) => r.event === c.event && r.json === c.json)
    ) {
      out.push(
        f(
          'handler_added',
          `a Latch-looking ${c.event} handler was added at ${c.group}/${c.index}: ${clip(String((JSON.parse(c.json) as { command?: unknown }).command))}`,
        ),
      );
    }
  }
  if (out.length === 0 && sha256(canonicalJson(parsed.data)) !== scope.hooks_canon_sha256) {
    out.push(
      f(
        'hooks_file_changed',
        'content other than the Latch handlers changed (a hook added, removed or edited: it runs outside any sandbox on every matching event)',
      ),
    );
  }
  return out;
}
