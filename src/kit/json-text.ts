// A JSON document's text edited to hold a new value while keeping every byte it can: the parts of the
// value that did not change keep their text (formatting, key order, spacing), only what changed is
// written, in the document's own style. For users' settings files, where Latch owns a few entries.

/** Where one value sits in the text; an object's members (key and value) or an array's items. */
export interface JsonSpan {
  kind: 'object' | 'array' | 'scalar';
  start: number;
  /** One past the value's last character. */
  end: number;
  members: { key: string; start: number; colonEnd: number; value: JsonSpan }[];
  items: JsonSpan[];
}

/** The spans of a valid JSON text (check it with JSON.parse first: this scanner does not validate). */
export function jsonSpans(text: string): JsonSpan {
  let i = 0;
  const skip = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const str = () => {
    i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
  };
  const value = (): JsonSpan => {
    skip();
    const start = i;
    const span: JsonSpan = { kind: 'scalar', start, end: start, members: [], items: [] };
    const c = text[i];
    if (c === '{' || c === '[') {
      span.kind = c === '{' ? 'object' : 'array';
      const close = c === '{' ? '}' : ']';
      i++;
      skip();
      if (text[i] === close) i++;
      else
        for (;;) {
          skip();
          if (span.kind === 'object') {
            const keyStart = i;
            str();
            const key = JSON.parse(text.slice(keyStart, i)) as string;
            skip();
            i++; // ':'
            while (text[i] === ' ' || text[i] === '\t') i++;
            const colonEnd = i;
            span.members.push({ key, start: keyStart, colonEnd, value: value() });
          } else span.items.push(value());
          skip();
          if (text[i++] === close) break; // else ','
        }
    } else if (c === '"') str();
    else while (i < text.length && !/[,\]}\s]/.test(text[i]!)) i++;
    span.end = i;
    return span;
  };
  return value();
}

/** The document's layout: its indentation unit (null: one line) and line ending. */
interface Style {
  unit: string | null;
  eol: string;
}

function styleOf(text: string, root: JsonSpan): Style {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const first = root.kind === 'object' ? root.members[0]?.start : root.items[0]?.start;
  if (first === undefined) return { unit: '  ', eol };
  if (!text.slice(root.start, first).includes('\n')) return { unit: null, eol };
  return { unit: lineIndent(text, first) || '  ', eol };
}

/** The whitespace that starts the line holding position `pos`. */
function lineIndent(text: string, pos: number): string {
  const lineStart = text.lastIndexOf('\n', pos - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart, pos))![0];
}

function render(value: unknown, unit: string | null, eol: string, indent: string): string {
  if (unit === null) return JSON.stringify(value);
  return JSON.stringify(value, null, unit).replace(/\n/g, eol + indent);
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, k) => deepEqual(x, b[k]));
  }
  if (!isObj(a) || !isObj(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

/** One entry of a rebuilt container: its text, and its position in the original (null: new). */
type Piece = { text: string; from: number | null };

/**
 * The container's text with `pieces` as its entries: the original's opening and closing whitespace,
 * and between two entries that were neighbours in the original, the original separator; elsewhere
 * the first original separator (or one in the document's style).
 */
function assemble(text: string, span: JsonSpan, starts: number[], ends: number[], pieces: Piece[], s: Style): string {
  const open = text[span.start]!;
  const close = text[span.end - 1]!;
  if (pieces.length === 0) return open + close;
  const flat = !text.slice(span.start, span.end).includes('\n') && starts.length > 0;
  const base = lineIndent(text, span.start);
  let head: string;
  let tail: string;
  let sep: string;
  if (starts.length) {
    head = text.slice(span.start + 1, starts[0]);
    tail = text.slice(ends[ends.length - 1], span.end - 1);
    sep =
      starts.length > 1
        ? text.slice(ends[0], starts[1])
        : flat
          ? s.unit === null
            ? ','
            : ', '
          : `,${s.eol}${lineIndent(text, starts[0]!)}`;
  } else if (s.unit === null) {
    head = tail = '';
    sep = ',';
  } else {
    head = s.eol + base + s.unit;
    tail = s.eol + base;
    sep = `,${s.eol}${base}${s.unit}`;
  }
  let out = open + head;
  pieces.forEach((p, k) => {
    if (k > 0) {
      const prev = pieces[k - 1]!;
      out +=
        p.from !== null && prev.from !== null && p.from === prev.from + 1
          ? text.slice(ends[prev.from], starts[p.from])
          : sep;
    }
    out += p.text;
  });
  return out + tail + close;
}

/** The indentation and style for entries new to a container. */
function entryStyle(text: string, span: JsonSpan, starts: number[], s: Style): { unit: string | null; indent: string } {
  if (starts.length && !text.slice(span.start, span.end).includes('\n')) return { unit: null, indent: '' };
  if (starts.length) return { unit: s.unit ?? '  ', indent: lineIndent(text, starts[0]!) };
  return { unit: s.unit, indent: lineIndent(text, span.start) + (s.unit ?? '') };
}

/** The longest common subsequence of two lists under deep equality: pairs of indices. */
function lcs(a: unknown[], b: unknown[]): [number, number][] {
  const n = a.length;
  const m = b.length;
  const t: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let x = n - 1; x >= 0; x--)
    for (let y = m - 1; y >= 0; y--)
      t[x]![y] = deepEqual(a[x], b[y]) ? t[x + 1]![y + 1]! + 1 : Math.max(t[x + 1]![y]!, t[x]![y + 1]!);
  const out: [number, number][] = [];
  let x = 0;
  let y = 0;
  while (x < n && y < m) {
    if (deepEqual(a[x], b[y])) out.push([x++, y++]);
    else if (t[x + 1]![y]! >= t[x]![y + 1]!) x++;
    else y++;
  }
  return out;
}

function edit(text: string, span: JsonSpan, before: unknown, after: unknown, s: Style): string {
  if (deepEqual(before, after)) return text.slice(span.start, span.end);
  if (span.kind === 'array' && Array.isArray(before) && Array.isArray(after)) {
    const starts = span.items.map((it) => it.start);
    const ends = span.items.map((it) => it.end);
    const st = entryStyle(text, span, starts, s);
    const fresh = (v: unknown): Piece => ({ text: render(v, st.unit, s.eol, st.indent), from: null });
    const pieces: Piece[] = [];
    const anchors = [...lcs(before, after), [before.length, after.length] as [number, number]];
    let x = 0;
    let y = 0;
    for (const [ax, ay] of anchors) {
      // the gap before this anchor: entries paired in place (edited inside), the rest removed or added
      while (x < ax && y < ay) {
        const k = x++;
        pieces.push({ text: edit(text, span.items[k]!, before[k], after[y++], s), from: k });
      }
      x = ax;
      while (y < ay) pieces.push(fresh(after[y++]));
      if (ax < before.length) pieces.push({ text: text.slice(starts[ax], ends[ax]), from: ax });
      x = ax + 1;
      y = ay + 1;
    }
    return assemble(text, span, starts, ends, pieces, s);
  }
  if (span.kind === 'object' && isObj(before) && isObj(after)) {
    // the member JSON.parse keeps is the last of a key; earlier duplicates stay as they are
    const last = new Map(span.members.map((m, k) => [m.key, k]));
    const starts = span.members.map((m) => m.start);
    const ends = span.members.map((m) => m.value.end);
    const st = entryStyle(text, span, starts, s);
    const colon = span.members[0]
      ? text.slice(span.members[0].start, span.members[0].colonEnd).replace(/^"(?:[^"\\]|\\.)*"/, '')
      : st.unit === null
        ? ':'
        : ': ';
    const pieces: Piece[] = [];
    span.members.forEach((m, k) => {
      if (last.get(m.key) !== k) pieces.push({ text: text.slice(m.start, m.value.end), from: k });
      else if (!Object.hasOwn(after, m.key)) return;
      else
        pieces.push({
          text: text.slice(m.start, m.value.start) + edit(text, m.value, before[m.key], after[m.key], s),
          from: k,
        });
    });
    for (const key of Object.keys(after)) {
      if (last.has(key)) continue;
      pieces.push({ text: JSON.stringify(key) + colon + render(after[key], st.unit, s.eol, st.indent), from: null });
    }
    return assemble(text, span, starts, ends, pieces, s);
  }
  return render(after, s.unit, s.eol, lineIndent(text, span.start));
}

/**
 * `text` (valid JSON for `before`) edited to hold `after`, keeping the text of every part that did not
 * change; null if the edited text does not parse back to `after` (a bug: the caller writes it anew).
 */
export function editJsonTextExact(text: string, before: unknown, after: unknown): string | null {
  const root = jsonSpans(text);
  const out = text.slice(0, root.start) + edit(text, root, before, after, styleOf(text, root)) + text.slice(root.end);
  try {
    return deepEqual(JSON.parse(out), after) ? out : null;
  } catch {
    return null;
  }
}

/** `editJsonTextExact`, else the whole document written anew in the text's style. */
export function editJsonText(text: string, before: unknown, after: unknown): string {
  const out = editJsonTextExact(text, before, after);
  if (out !== null) return out;
  const s = styleOf(text, jsonSpans(text));
  return `${JSON.stringify(after, null, s.unit ?? undefined)}${/\n$/.test(text) ? s.eol : ''}`;
}
