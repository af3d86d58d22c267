import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a test receiver answers next. Answers queued with `answerNext` are used once
 * each, in order; after that the receiver accepts. `stop()` closes the port (the
 * forwarder sees connection refused) and `start()` reopens it on the same port.
 */
export type ScriptedAnswer =
  | { kind: 'status'; status: number; retryAfter?: string; body?: string; headers?: Record<string, string> }
  | { kind: 'partial'; rejected: number; message?: string }
  /** A slow collector: the request is read, then answered once `until` settles, as usual or with `then`. */
  | { kind: 'hold'; until: Promise<void>; then?: { kind: 'status'; status: number; retryAfter?: string } };

export interface ReceivedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export abstract class ScriptedReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** Requests that broke the wire format, with the reason: a test expects none. */
  readonly invalid: { reason: string; body: string }[] = [];
  /** Every request read so far, answered or not (a held one counts). */
  arrived = 0;
  private readonly queue: ScriptedAnswer[] = [];
  private server: http.Server | undefined;
  private readonly sockets = new Set<import('node:net').Socket>();
  port = 0;

  async start(): Promise<this> {
    const server = http.createServer((req, res) => void this.onRequest(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops listening and drops open connections: the collector is down. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  answerNext(...answers: ScriptedAnswer[]): void {
    this.queue.push(...answers);
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const request = { path: req.url ?? '', headers: req.headers, body };
    this.arrived++;
    let scripted = this.queue.shift();
    if (scripted?.kind === 'hold') {
      await scripted.until;
      scripted = scripted.then;
    }
    if (scripted?.kind === 'status') {
      res.writeHead(scripted.status, {
        'content-type': 'application/json',
        ...(scripted.retryAfter !== undefined ? { 'retry-after': scripted.retryAfter } : {}),
        ...scripted.headers,
      });
      res.end(scripted.body ?? '{}');
      return;
    }
    const problem = this.validate(request);
    if (problem) {
      this.invalid.push({ reason: problem.reason, body: body.slice(0, 2000) });
      res.writeHead(problem.status, { 'content-type': 'application/json' });
      res.end(problem.body);
      return;
    }
    this.requests.push(request);
    this.accept(request, scripted?.kind === 'partial' ? scripted : undefined);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(this.successBody(scripted?.kind === 'partial' ? scripted : undefined));
  }

  /** Checks one request against the wire format; returns the refusal, or null. */
  protected abstract validate(req: ReceivedRequest): { status: number; reason: string; body: string } | null;
  /** Records the accepted items of a valid request. */
  protected abstract accept(req: ReceivedRequest, partial?: { rejected: number; message?: string }): void;
  protected abstract successBody(partial?: { rejected: number; message?: string }): string;
}
