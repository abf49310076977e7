// A loopback HTTP server for the agents' fake model APIs (tests, the demo): it listens on 127.0.0.1
// at a free port and closes at once (open connections dropped); with the pieces every fake needs to
// read a request and answer it as server-sent events. Zero dependencies beyond node:http.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Loopback {
  port: number;
  /** Stops listening and destroys every open connection; the same promise on every call. */
  close(): Promise<void>;
}

/**
 * Serves `handle` on 127.0.0.1 at a port the system picks. A handler that rejects has its error sent
 * to `onError` and its response ended (500 when nothing was sent yet).
 */
export async function startLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  opts: { requestTimeoutMs: number; onError: (err: unknown) => void },
): Promise<Loopback> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      opts.onError(err);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.keepAliveTimeout = 1000;
  server.requestTimeout = opts.requestTimeoutMs;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closing;
    },
  };
}

/** The request's body; null when it grew past `maxBytes` (then 413 has been answered). */
export async function readBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      res.writeHead(413).end();
      return null;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The body as JSON; undefined when it is not JSON. */
export function jsonBody(body: Buffer): any {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The request URL's path, without its query. */
export function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

/** Starts a 200 text/event-stream answer; `headers` follow the content type and `cache-control: no-cache`. */
export function startSse(res: ServerResponse, headers: Record<string, string>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
}

/** Writes one server-sent event, named by its data's `type`. */
export function sseEvent(res: ServerResponse, data: Record<string, unknown>): void {
  res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
}
