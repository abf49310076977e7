// Format sniffing (src/cli.ts routes `latch doctor FILE` with it).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * Which doctor reads FILE: `claude` when one of its first lines is a Claude Code transcript record (a
 * top-level string `sessionId` and `type`, no Codex `payload`, no JSON-RPC fields) and none is a Codex
 * rollout or app-server line; `codex` otherwise (a zstd file, a missing or unreadable file, anything
 * else: the Codex doctor's reading and messages are unchanged).
 */
export function sniffTranscriptFormat(file: string): 'claude' | 'codex' {
  let fd = -1;
  try {
    fd = openSync(file, 'r');
    if (!fstatSync(fd).isFile()) return 'codex';
    const buf = Buffer.alloc(256 << 10);
    const n = readSync(fd, buf, 0, buf.length, 0);
    if (n >= 4 && buf.readUInt32BE(0) === 0x28b52ffd) return 'codex';
    const text = buf.toString('utf8', 0, n);
    let claude = 0;
    let seen = 0;
    for (const line of text.split('\n')) {
      if (seen >= 20) break;
      const t = line.trim();
      if (!t) continue;
      seen++;
      let o: unknown;
      try {
        o = JSON.parse(t);
      } catch {
        continue;
      }
      if (!o || typeof o !== 'object' || Array.isArray(o)) continue;
      const r = o as Record<string, unknown>;
      // A Codex rollout line has no top-level sessionId (its id is inside a payload), nor has a JSON-RPC message.
      if (typeof r.sessionId === 'string' && typeof r.type === 'string' && !('payload' in r)) claude++;
      else if ('payload' in r || 'jsonrpc' in r || 'method' in r || 'result' in r) return 'codex';
    }
    return claude > 0 ? 'claude' : 'codex';
  } catch {
    return 'codex';
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}
