// A deliberately small tokenizer/parser for the POSIX-sh subset Latch can reason about.
//
// It understands words (single quotes, double quotes, backslash escapes), the control operators
// `|` `|&` `||` `&&` `;` `&` and newline, comments, and redirections. Everything it cannot reason
// about (expansions, command substitution, subshells, process substitution, brace expansion,
// ANSI-C quoting, ...) is rejected with a human-readable reason instead of being guessed at.
// Heredocs are understood: with a quoted delimiter (`<<'EOF'`) the body is literal; with an
// unquoted one the body may not contain `$` or a backquote (the shell would expand them).
//
// Characters: the command may not contain NUL, CR, other C0 controls (except tab and newline),
// DEL, C1 controls, lone UTF-16 surrogates, or Unicode format / separator characters (bidi
// overrides, zero-width characters, U+2028/U+2029) anywhere; any other non-ASCII character is
// accepted only inside single or double quotes (the word is then marked `nonAscii`, and the
// classifier refuses it as a program name or an option). A look-alike of a shell metacharacter,
// of a program or of an option name therefore never reaches a decision unquoted.
// Single pass, never throws on any string.

export interface Word {
  /** The word after quote removal. */
  value: string;
  /**
   * The word as a glob pattern: every quoted or escaped `*`, `?`, `[`, `]` or `\` is prefixed
   * with a backslash, unquoted glob characters are kept as they are.
   */
  pattern: string;
  /** An unquoted glob character (`*`, `?`, `[`) occurs. */
  glob: boolean;
  /** The word starts with an unquoted `~` that the shell would expand to $HOME. */
  tilde: boolean;
  /** Some part of the word was quoted or escaped. */
  quoted: boolean;
  /** A non-ASCII character occurs (only possible inside quotes). */
  nonAscii: boolean;
  /** Offsets of the word in the source text: [start, end). */
  start: number;
  end: number;
}

export type ControlOp = '|' | '|&' | '||' | '&&' | ';' | '&' | '\n';
export type RedirOp = '<' | '<>' | '<&' | '>' | '>>' | '>|' | '>&' | '&>' | '&>>' | '<<' | '<<-' | '<<<';

export interface Redirection {
  op: RedirOp;
  /** Explicit file descriptor number written before the operator, e.g. `2` in `2>&1`. */
  fd: string | null;
  /** The file, the duplicated descriptor, the heredoc delimiter or the here-string word. */
  target: Word;
  /** For `<<` / `<<-`: the body (literal text fed to the command's input). */
  heredoc?: string;
}

export interface SimpleCommand {
  words: Word[];
  redirections: Redirection[];
}

export type ParseResult = { ok: true; commands: SimpleCommand[]; ops: ControlOp[] } | { ok: false; reason: string };

type Token =
  | { kind: 'word'; word: Word }
  | { kind: 'op'; op: ControlOp }
  | { kind: 'redir'; op: RedirOp; fd: string | null; heredoc?: { body: string } };

type TokenizeResult = { ok: true; tokens: Token[] } | { ok: false; reason: string };

class Unsupported extends Error {}

function fail(reason: string): never {
  throw new Unsupported(reason);
}

const GLOB_SPECIAL = '*?[]\\';

function escapeForPattern(ch: string): string {
  return GLOB_SPECIAL.includes(ch) ? '\\' + ch : ch;
}

/** Characters that end an unquoted word. */
function isWordBreak(ch: string): boolean {
  return (
    ch === ' ' ||
    ch === '\t' ||
    ch === '\n' ||
    ch === ';' ||
    ch === '&' ||
    ch === '|' ||
    ch === '<' ||
    ch === '>' ||
    ch === '(' ||
    ch === ')'
  );
}

function isNameStart(ch: string): boolean {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch === '_';
}

function isDigit(ch: string): boolean {
  return ch >= '0' && ch <= '9';
}

/**
 * Decide what a `$` at src[i] means. Returns normally when the shell would keep it as a literal
 * dollar sign; throws Unsupported for every kind of expansion.
 */
function checkDollar(src: string, i: number, inDoubleQuotes: boolean): void {
  const nx = src[i + 1];
  if (nx === undefined) return;
  if (nx === '(') {
    fail(
      src[i + 2] === '('
        ? 'arithmetic expansion $((...)) is not allowed'
        : 'command substitution $(...) is not allowed',
    );
  }
  if (nx === '{') fail('parameter expansion ${...} is not allowed');
  if (nx === "'" && !inDoubleQuotes) fail("ANSI-C quoting $'...' is not supported");
  if (nx === '"' && !inDoubleQuotes) fail('locale quoting $"..." is not supported');
  if (isNameStart(nx) || isDigit(nx) || '@*#?$!-'.includes(nx)) {
    let j = i + 1;
    if (isNameStart(nx)) {
      while (j < src.length && (isNameStart(src[j]!) || isDigit(src[j]!)) && j - i <= 40) j++;
    } else {
      j = i + 2;
    }
    fail(`variable expansion ${src.slice(i, j)} is not allowed (unknown value)`);
  }
  // `$` followed by whitespace, an operator, a quote that closes the string, `/`, `.` ... is literal.
  // Be strict anyway: only the forms that are certainly literal pass.
  if (
    nx === ' ' ||
    nx === '\t' ||
    nx === '\n' ||
    (inDoubleQuotes && nx === '"') ||
    (!inDoubleQuotes && isWordBreak(nx))
  ) {
    return;
  }
  fail(`\`$${nx}\` is not supported`);
}

function hex(code: number): string {
  return 'U+' + code.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * Characters refused anywhere in a command, quoted or not: the reason, or null. A process may
 * see them differently from this parser (a NUL ends a C string; CR, bidi overrides and
 * zero-width characters hide text from a reader).
 */
export function forbiddenCharacter(src: string): string | null {
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c < 0x20) {
      if (c === 0x09 || c === 0x0a) continue;
      if (c === 0)
        return 'the command contains a NUL character (U+0000), which the shell and the program see differently; remove it';
      if (c === 0x0d) return 'the command contains a carriage return (U+000D); use plain newlines';
      return `the command contains the control character ${hex(c)}; remove it`;
    }
    if (c < 0x7f) continue;
    if (c === 0x7f || (c >= 0x80 && c <= 0x9f))
      return `the command contains the control character ${hex(c)}; remove it`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = src.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff))
        return `the command contains a lone UTF-16 surrogate (${hex(c)}); it is not valid text`;
      i++;
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff)
      return `the command contains a lone UTF-16 surrogate (${hex(c)}); it is not valid text`;
    if (
      c === 0xad ||
      c === 0x34f ||
      c === 0x61c ||
      c === 0x180e ||
      (c >= 0x200b && c <= 0x200f) ||
      (c >= 0x2028 && c <= 0x202e) ||
      (c >= 0x2060 && c <= 0x206f) ||
      c === 0xfeff ||
      (c >= 0xfff0 && c <= 0xfffb)
    ) {
      return `the command contains the invisible or bidirectional formatting character ${hex(c)}; remove it`;
    }
  }
  return null;
}

function tokenizeOrThrow(src: string): Token[] {
  const bad = forbiddenCharacter(src);
  if (bad !== null) fail(bad);
  const tokens: Token[] = [];
  const n = src.length;
  let i = 0;

  const readRedirOp = (fd: string | null): void => {
    const c = src[i];
    const nx = src[i + 1];
    let op: RedirOp;
    if (c === '<') {
      if (nx === '<') {
        if (src[i + 2] === '<') op = '<<<';
        else if (src[i + 2] === '-') op = '<<-';
        else op = '<<';
      } else if (nx === '(') fail('process substitution <(...) is not allowed');
      else if (nx === '&') op = '<&';
      else if (nx === '>') op = '<>';
      else op = '<';
    } else if (c === '>') {
      if (nx === '(') fail('process substitution >(...) is not allowed');
      if (nx === '>') op = '>>';
      else if (nx === '|') op = '>|';
      else if (nx === '&') op = '>&';
      else op = '>';
    } else {
      // '&>' or '&>>'
      op = src[i + 2] === '>' ? '&>>' : '&>';
    }
    i += op.length;
    if (src[i] === '(') fail('process substitution is not allowed');
    if (op === '<<' || op === '<<-') {
      const heredoc = { body: '' };
      tokens.push({ kind: 'redir', op, fd, heredoc });
      pending.delim = { op, heredoc };
      return;
    }
    tokens.push({ kind: 'redir', op, fd });
  };

  // Heredocs: the delimiter is the next word; the body starts after the next newline token.
  const pending: { delim: { op: '<<' | '<<-'; heredoc: { body: string } } | null } = { delim: null };
  const heredocs: Array<{ strip: boolean; delim: string; literal: boolean; heredoc: { body: string } }> = [];
  const readHeredocBodies = (): void => {
    // src[i] is just past the newline.
    for (const h of heredocs) {
      let body = '';
      let found = false;
      while (i < n) {
        let end = src.indexOf('\n', i);
        if (end < 0) end = n;
        let line = src.slice(i, end);
        i = end < n ? end + 1 : n;
        if (h.strip) {
          let k = 0;
          while (k < line.length && line[k] === '\t') k++;
          line = line.slice(k);
        }
        if (line === h.delim) {
          found = true;
          break;
        }
        body += line + '\n';
      }
      if (!found) fail(`heredoc without its closing delimiter line \`${h.delim}\``);
      if (!h.literal) {
        for (const ch of body) {
          if (ch === '$' || ch === '`' || ch === '\\') {
            fail(
              `the heredoc body would be expanded by the shell (it contains \`${ch}\` and the delimiter is unquoted): quote the delimiter, as in <<'${h.delim}'`,
            );
          }
        }
      }
      h.heredoc.body = body;
    }
    heredocs.length = 0;
  };

  while (i < n) {
    const c = src[i]!;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '\\' && src[i + 1] === '\n') {
      i += 2;
      continue;
    }
    if (c === '#') {
      while (i < n && src[i] !== '\n') i++;
      continue;
    }
    if (c === '\n') {
      tokens.push({ kind: 'op', op: '\n' });
      i++;
      if (pending.delim !== null) fail('heredoc `<<` without a delimiter word');
      if (heredocs.length > 0) readHeredocBodies();
      continue;
    }
    if (c === ';') {
      if (src[i + 1] === ';' || src[i + 1] === '&') fail('`case` terminators (`;;`, `;&`) are not supported');
      tokens.push({ kind: 'op', op: ';' });
      i++;
      continue;
    }
    if (c === '&') {
      if (src[i + 1] === '&') {
        tokens.push({ kind: 'op', op: '&&' });
        i += 2;
      } else if (src[i + 1] === '>') {
        readRedirOp(null);
      } else {
        tokens.push({ kind: 'op', op: '&' });
        i++;
      }
      continue;
    }
    if (c === '|') {
      if (src[i + 1] === '|') {
        tokens.push({ kind: 'op', op: '||' });
        i += 2;
      } else if (src[i + 1] === '&') {
        tokens.push({ kind: 'op', op: '|&' });
        i += 2;
      } else {
        tokens.push({ kind: 'op', op: '|' });
        i++;
      }
      continue;
    }
    if (c === '(' || c === ')') fail('subshells, grouping and function definitions with `( )` are not supported');
    if (c === '<' || c === '>') {
      readRedirOp(null);
      continue;
    }

    // A word.
    const start = i;
    let value = '';
    let pattern = '';
    let glob = false;
    let tilde = false;
    let quoted = false;
    let nonAscii = false;
    let braceOpen = false;
    let braceSeparator = false;
    let fdCandidate = true; // only unquoted digits so far

    if (c === '~') {
      const nx = src[i + 1];
      if (nx === undefined || nx === '/' || isWordBreak(nx)) {
        tilde = true;
        value = '~';
        pattern = '~';
        fdCandidate = false;
        i++;
      } else {
        fail('tilde expansion other than `~` or `~/...` is not supported');
      }
    }

    while (i < n) {
      const ch = src[i]!;
      if (isWordBreak(ch)) {
        if ((ch === '<' || ch === '>') && fdCandidate && value.length > 0) {
          // `2>file`, `2>&1`: the digits are a file descriptor, not a word.
          readRedirOp(value);
          value = '';
        }
        break;
      }
      if (ch === '\\') {
        const nx = src[i + 1];
        if (nx === undefined) fail('trailing backslash');
        if (nx.charCodeAt(0) > 0x7e)
          fail(`a backslash-escaped non-ASCII character (\`${nx}\`) is not allowed: put it inside quotes`);
        i += 2;
        if (nx === '\n') continue; // line continuation
        value += nx;
        pattern += escapeForPattern(nx);
        quoted = true;
        fdCandidate = false;
        continue;
      }
      if (ch === "'") {
        const close = src.indexOf("'", i + 1);
        if (close < 0) fail('unterminated single quote');
        const s = src.slice(i + 1, close);
        for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) > 0x7e) nonAscii = true;
        value += s;
        for (const q of s) pattern += escapeForPattern(q);
        quoted = true;
        fdCandidate = false;
        i = close + 1;
        continue;
      }
      if (ch === '"') {
        i++;
        quoted = true;
        fdCandidate = false;
        for (;;) {
          if (i >= n) fail('unterminated double quote');
          const d = src[i]!;
          if (d === '"') {
            i++;
            break;
          }
          if (d === '\\') {
            const nx = src[i + 1];
            if (nx === undefined) fail('unterminated double quote');
            if (nx === '\n') {
              i += 2;
            } else if (nx === '$' || nx === '`' || nx === '"' || nx === '\\') {
              value += nx;
              pattern += escapeForPattern(nx);
              i += 2;
            } else {
              value += '\\';
              pattern += '\\\\';
              i++;
            }
            continue;
          }
          if (d === '`') fail('command substitution `...` is not allowed');
          if (d === '$') checkDollar(src, i, true);
          if (d.charCodeAt(0) > 0x7e) nonAscii = true;
          value += d;
          pattern += escapeForPattern(d);
          i++;
        }
        continue;
      }
      if (ch === '`') fail('command substitution `...` is not allowed');
      if (ch === '$') checkDollar(src, i, false);
      if (ch.charCodeAt(0) > 0x7e) {
        fail(
          `the non-ASCII character \`${ch}\` (${hex(ch.codePointAt(0)!)}) outside quotes is not allowed: it can look like a shell character, a program or an option name; quote it`,
        );
      }
      if (ch === '*' || ch === '?' || ch === '[') glob = true;
      if (ch === '{') {
        braceOpen = true;
        braceSeparator = false;
      } else if (braceOpen && (ch === ',' || (ch === '.' && src[i + 1] === '.'))) {
        braceSeparator = true;
      } else if (ch === '}' && braceOpen && braceSeparator) {
        fail('brace expansion {a,b} / {1..3} is not supported');
      }
      if (!isDigit(ch)) fdCandidate = false;
      value += ch;
      pattern += ch;
      i++;
    }
    if (value.length > 0 || quoted || tilde) {
      const word: Word = { value, pattern, glob, tilde, quoted, nonAscii, start, end: i };
      tokens.push({ kind: 'word', word });
      const pd = pending.delim;
      if (pd !== null) {
        if (word.glob || word.tilde || value.length === 0 || value.includes('\n'))
          fail('unsupported heredoc delimiter');
        heredocs.push({ strip: pd.op === '<<-', delim: value, literal: quoted, heredoc: pd.heredoc });
        pending.delim = null;
      }
    }
  }
  if (pending.delim !== null) fail('heredoc `<<` without a delimiter word');
  if (heredocs.length > 0) fail(`heredoc without its body (no newline after \`<<${heredocs[0]!.delim}\`)`);
  return tokens;
}

function tokenize(src: string): TokenizeResult {
  try {
    return { ok: true, tokens: tokenizeOrThrow(src) };
  } catch (err) {
    if (err instanceof Unsupported) return { ok: false, reason: err.message };
    return { ok: false, reason: 'could not tokenize the command' };
  }
}

const SEQUENTIAL: ReadonlySet<ControlOp> = new Set<ControlOp>([';', '&', '\n']);

/** Split a command string into simple commands and the control operators between them. */
export function parseCommandList(src: string): ParseResult {
  const tok = tokenize(src);
  if (!tok.ok) return tok;
  const raw: SimpleCommand[] = [];
  const ops: ControlOp[] = [];
  let cur: SimpleCommand = { words: [], redirections: [] };
  const tokens = tok.tokens;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.kind === 'word') {
      cur.words.push(t.word);
    } else if (t.kind === 'redir') {
      const next = tokens[k + 1];
      if (!next || next.kind !== 'word') return { ok: false, reason: `redirection \`${t.op}\` without a target` };
      const r: Redirection = { op: t.op, fd: t.fd, target: next.word };
      if (t.heredoc !== undefined) r.heredoc = t.heredoc.body;
      cur.redirections.push(r);
      k++;
    } else {
      raw.push(cur);
      ops.push(t.op);
      cur = { words: [], redirections: [] };
    }
  }
  raw.push(cur);

  // Empty commands are only tolerated next to `;`, `&` and newlines (blank lines, trailing `;`).
  const commands: SimpleCommand[] = [];
  const keptOps: ControlOp[] = [];
  for (let k = 0; k < raw.length; k++) {
    const cmd = raw[k]!;
    const before = k > 0 ? ops[k - 1] : undefined;
    const after = k < ops.length ? ops[k] : undefined;
    if (cmd.words.length === 0 && cmd.redirections.length === 0) {
      if ((before !== undefined && !SEQUENTIAL.has(before)) || (after !== undefined && !SEQUENTIAL.has(after))) {
        return {
          ok: false,
          reason: `syntax error: missing command around \`${(before ?? after) === '\n' ? '\\n' : (before ?? after)}\``,
        };
      }
      continue;
    }
    commands.push(cmd);
    if (after !== undefined) keptOps.push(after);
  }
  return { ok: true, commands, ops: keptOps };
}
