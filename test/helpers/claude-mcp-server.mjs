// A tiny stdio MCP server for the Claude Code e2e tests: newline-delimited JSON-RPC 2.0 on stdin and
// stdout, no dependencies. It offers one tool, `write_file` {path, content}, which writes the file
// (a relative path resolves against the server's cwd: the session cwd when Claude Code starts it).
// $MCP_CALLS, if set, gets one JSON line per `tools/call` received, so a test can tell that a denied
// call never reached the server.
import { appendFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

const TOOLS = [
  {
    name: 'write_file',
    description: 'Write text to a file, creating or replacing it.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'the file to write' },
        content: { type: 'string', description: 'the text to write' },
      },
      required: ['path', 'content'],
    },
  },
];

function reply(id, result) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\n');
}

function fail(id, code, message) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }) + '\n');
}

function callTool(params) {
  const name = params?.name;
  const args = params?.arguments ?? {};
  if (process.env.MCP_CALLS) appendFileSync(process.env.MCP_CALLS, JSON.stringify({ name, arguments: args }) + '\n');
  if (name !== 'write_file') return { isError: true, content: [{ type: 'text', text: `no such tool: ${name}` }] };
  try {
    const file = resolve(String(args.path));
    writeFileSync(file, String(args.content));
    return { content: [{ type: 'text', text: `wrote ${file}` }] };
  } catch (err) {
    return { isError: true, content: [{ type: 'text', text: String(err?.message ?? err) }] };
  }
}

function handle(msg) {
  const { id, method, params } = msg;
  if (id === undefined || id === null) return; // notifications: initialized, cancelled, ...
  switch (method) {
    case 'initialize':
      return reply(id, {
        protocolVersion: params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'latch-e2e-writer', version: '1.0.0' },
      });
    case 'ping':
      return reply(id, {});
    case 'tools/list':
      return reply(id, { tools: TOOLS });
    case 'tools/call':
      return reply(id, callTool(params));
    default:
      return fail(id, -32601, `method not found: ${method}`);
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return fail(null, -32700, 'parse error');
  }
  handle(msg);
});
