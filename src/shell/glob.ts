// Glob matching against protected paths, for the read-only classifier (readonly.ts): a bash-style
// pattern split into path segments and matched without touching the file system (for
// `cat ~/.local/state/lat*/latch.db`). Expanding a glob on disk (expandGlob) is in latch-guard.ts,
// as it spends the classification's file-system budget.

type GlobItem =
  | { k: 'lit'; c: string }
  | { k: 'any' }
  | { k: 'star' }
  | { k: 'set'; neg: boolean; chars: string; ranges: Array<[string, string]> };

function setMatches(it: { neg: boolean; chars: string; ranges: Array<[string, string]> }, ch: string): boolean {
  const inSet = it.chars.includes(ch) || it.ranges.some(([a, b]) => ch >= a && ch <= b);
  return it.neg ? !inSet : inSet;
}

function compileSegment(pat: string): GlobItem[] {
  const items: GlobItem[] = [];
  const lastClose = pat.lastIndexOf(']');
  for (let i = 0; i < pat.length; i++) {
    const ch = pat[i]!;
    if (ch === '\\' && i + 1 < pat.length) {
      items.push({ k: 'lit', c: pat[i + 1]! });
      i++;
    } else if (ch === '*') {
      if (items.length === 0 || items[items.length - 1]!.k !== 'star') items.push({ k: 'star' });
    } else if (ch === '?') {
      items.push({ k: 'any' });
    } else if (ch === '[' && i < lastClose) {
      // A bracket expression matches one character: its set, or "any" when it uses a character
      // class or an equivalence class (over-approximation).
      let j = i + 1;
      const neg = pat[j] === '!' || pat[j] === '^';
      if (neg) j++;
      let chars = '';
      const ranges: Array<[string, string]> = [];
      let vague = false;
      let first = true;
      let closed = false;
      while (j < pat.length) {
        let c = pat[j]!;
        if (c === ']' && !first) {
          closed = true;
          break;
        }
        first = false;
        if (c === '[' && (pat[j + 1] === ':' || pat[j + 1] === '=' || pat[j + 1] === '.')) vague = true;
        if (c === '\\' && j + 1 < pat.length) {
          j++;
          c = pat[j]!;
        }
        if (pat[j + 1] === '-' && pat[j + 2] !== undefined && pat[j + 2] !== ']') {
          let hi = pat[j + 2]!;
          let skip = 2;
          if (hi === '\\' && pat[j + 3] !== undefined) {
            hi = pat[j + 3]!;
            skip = 3;
          }
          ranges.push([c, hi]);
          j += skip + 1;
          continue;
        }
        chars += c;
        j++;
      }
      if (closed) {
        items.push(vague ? { k: 'any' } : { k: 'set', neg, chars, ranges });
        i = j;
      } else {
        items.push({ k: 'lit', c: '[' });
      }
    } else {
      items.push({ k: 'lit', c: ch });
    }
  }
  return items;
}

/** Wildcard match with single-star backtracking: O(len(pattern) * len(text)), no regex. */
export function segmentMatches(pat: string, text: string): boolean {
  const items = compileSegment(pat);
  let pi = 0;
  let si = 0;
  let starPi = -1;
  let starSi = 0;
  while (si < text.length) {
    const it = items[pi];
    if (
      it !== undefined &&
      (it.k === 'any' || (it.k === 'lit' && it.c === text[si]) || (it.k === 'set' && setMatches(it, text[si]!)))
    ) {
      pi++;
      si++;
    } else if (it !== undefined && it.k === 'star') {
      starPi = pi++;
      starSi = si;
    } else if (starPi >= 0) {
      pi = starPi + 1;
      si = ++starSi;
    } else {
      return false;
    }
  }
  while (pi < items.length && items[pi]!.k === 'star') pi++;
  return pi === items.length;
}

/** Split a glob pattern into path segments (escapes kept). */
export function patternSegments(p: string): string[] {
  const segs: string[] = [];
  let cur = '';
  for (let i = 0; i < p.length; i++) {
    const ch = p[i]!;
    if (ch === '\\' && i + 1 < p.length) {
      cur += ch + p[i + 1]!;
      i++;
    } else if (ch === '/') {
      segs.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  segs.push(cur);
  return segs;
}

/** Apply `.`, `..` and empty segments of `rel` on top of `base` (both already split). */
export function resolveSegments(base: readonly string[], rel: readonly string[]): string[] {
  const out = [...base];
  for (const s of rel) {
    if (s === '' || s === '.') continue;
    if (s === '..') out.pop();
    else out.push(s);
  }
  return out;
}

/** Could the glob pattern (split, absolute) match the target path (split) or something inside it? */
export function globReaches(segs: readonly string[], tsegs: readonly string[]): boolean {
  if (segs.length < tsegs.length) return false;
  for (let i = 0; i < tsegs.length; i++) if (!segmentMatches(segs[i]!, tsegs[i]!)) return false;
  return true;
}

/** A pattern segment without unescaped glob characters, unescaped; null if it is a glob. */
export function literalSegment(seg: string): string | null {
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    const ch = seg[i]!;
    if (ch === '\\' && i + 1 < seg.length) {
      out += seg[i + 1]!;
      i++;
    } else if (ch === '*' || ch === '?' || ch === '[') {
      return null;
    } else {
      out += ch;
    }
  }
  return out;
}
