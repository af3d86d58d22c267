import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { EgressPolicy } from '../core/egress.js';
import { validationFailed } from '../core/errors.js';
import { keptAcrossOrigins, redirectHop, refuseBodyAcrossOrigins } from '../core/servers/egress-fetch.js';

/** What the gateway sends an upstream: a string body at most (JSON-RPC), never a stream. */
export interface UpstreamHttpInit {
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string>;
  body?: string;
  /** Cuts the exchange when aborted (the host went away, a legacy session closed); the failure is the signal's reason. */
  signal: AbortSignal;
  /** Cuts the whole exchange, body included, after this long, failing with a TimeoutError. */
  timeoutMs?: number | undefined;
}

/** An upstream's answer: status, headers and the body, read in one of three ways. */
export interface UpstreamHttpResponse {
  status: number;
  ok: boolean;
  /** A response header by lower-case name, or null. */
  header(name: string): string | null;
  /** The body's chunks, failing with ResponseTooLargeError past `maxBytes` (the connection is then dropped). */
  chunks(maxBytes: number): AsyncGenerator<Uint8Array>;
  /** The whole body as text, within `maxBytes`. */
  text(maxBytes: number): Promise<string>;
  /** Drops the body: a short one is drained (the connection is reused), a long or endless one is cut off. */
  discard(): void;
}

/** One HTTP exchange with an upstream (the signature every gateway upstream module takes). */
export type UpstreamFetch = (url: string | URL, init: UpstreamHttpInit) => Promise<UpstreamHttpResponse>;

export class ResponseTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the upstream answer exceeded ${limit} bytes`);
  }
}

/** A discarded body up to this size is read to its end so its connection can be reused. */
const DRAINED_BYTES = 64 * 1024;
/** Results of the egress rule for hosts written as IP addresses, and parsed URLs: both are fixed for the life of the process. */
const MAX_REMEMBERED = 1000;

interface Target {
  secure: boolean;
  /** Why the egress rule refuses the host (an IP address); null when allowed or a name (checked at connect). */
  refusal: string | null;
  options: { protocol: string; hostname: string; port: string; path: string };
}

/**
 * The gateway's HTTP client for upstreams: node:http(s) with keep-alive agents,
 * one connection per exchange in flight, reused across calls. It is the gateway's
 * hot path, and fetch (undici's WHATWG layer: Request, Headers, web streams, a
 * chunked request body) cost about three times the CPU per call of a plain
 * http.request on this workload; so did composite abort signals
 * (AbortSignal.any plus AbortSignal.timeout per exchange), hence the exchange's own
 * timer and listener here.
 *
 * The egress rule (EgressPolicy) is applied where an address is actually used:
 * when a connection is opened, to every address the host resolves to (the agents'
 * `lookup`), and to a host written as an IP address (which needs no lookup) before
 * the request. A reused keep-alive connection goes to an address already checked,
 * so a call on a warm connection costs no DNS lookup and no check, and a DNS
 * answer that changes between a check and the connect cannot slip through.
 * Redirects are followed as egressFetch follows them (redirectHop), each hop under
 * the same rule.
 */
export class UpstreamClient {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly targets = new Map<string, Target>();

  constructor(
    private readonly egress: EgressPolicy,
    private readonly field = 'url',
  ) {
    const lookup = egress.connectLookup(field);
    // lifo: the most recently used connection is the one least likely to have been closed by the upstream.
    this.httpAgent = new http.Agent({ keepAlive: true, scheduling: 'lifo', lookup });
    this.httpsAgent = new https.Agent({ keepAlive: true, scheduling: 'lifo', lookup });
  }

  readonly fetch: UpstreamFetch = async (input, init) => {
    let url = typeof input === 'string' ? input : input.href;
    let current = init;
    for (let hop = 0; ; hop++) {
      const res = await this.once(url, current);
      const next = redirectHop(res.status, res.header('location'), url, current.method, hop);
      if (!next) return res;
      res.discard();
      if (next.url.origin !== new URL(url).origin) {
        // To another origin a credential does not follow (an identity's headers), nor a body that would be sent again.
        if (!next.asGet && current.body !== undefined) throw refuseBodyAcrossOrigins(this.field);
        current = { ...current, headers: Object.fromEntries(Object.entries(current.headers).filter(([name]) => keptAcrossOrigins(name))) };
      }
      url = next.url.href;
      if (next.asGet) current = { headers: current.headers, signal: current.signal, timeoutMs: current.timeoutMs, method: 'GET' };
    }
  };

  /** Closes idle connections; later calls open new ones. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private once(url: string, init: UpstreamHttpInit): Promise<UpstreamHttpResponse> {
    let target: Target;
    try {
      target = this.target(url);
    } catch (err) {
      return Promise.reject(err);
    }
    if (target.refusal) return Promise.reject(validationFailed([{ path: this.field, message: `host ${target.options.hostname} ${target.refusal}` }]));
    if (init.signal.aborted) return Promise.reject(init.signal.reason);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...init.headers };
      if (init.body !== undefined) headers['content-length'] = Buffer.byteLength(init.body);
      const agent = target.secure ? this.httpsAgent : this.httpAgent;
      const req = (target.secure ? https : http).request({ ...target.options, method: init.method, headers, agent }, (res) =>
        resolve(new NodeUpstreamResponse(res, exchange)),
      );
      const exchange = new Exchange(req, init.signal, init.timeoutMs);
      req.on('error', (err) => {
        exchange.end();
        reject(exchange.reason ?? err);
      });
      req.end(init.body);
    });
  }

  /** How to reach `url`: parsed once per URL (a gateway calls the same few upstream URLs all the time). */
  private target(url: string): Target {
    let target = this.targets.get(url);
    if (target) return target;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw validationFailed([{ path: this.field, message: 'must be an absolute URL' }]);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw validationFailed([{ path: this.field, message: 'must be an http or https URL' }]);
    const hostname = parsed.hostname.replace(/^\[|\]$/g, '');
    target = {
      secure: parsed.protocol === 'https:',
      refusal: net.isIP(hostname) ? this.egress.refusal(hostname) : null,
      options: { protocol: parsed.protocol, hostname, port: parsed.port, path: parsed.pathname + parsed.search },
    };
    if (this.targets.size >= MAX_REMEMBERED) this.targets.clear();
    this.targets.set(url, target);
    return target;
  }
}

/**
 * One exchange in flight: cut when the caller's signal aborts or the timeout
 * passes, with that reason remembered so that every failure of the exchange
 * (the request's or its body's) reports it rather than the socket's error.
 * It is its own abort listener (handleEvent) and the response an object of a class:
 * no closure is made per exchange (docs/decisions.md, "No named closure made per call
 * on a hot path").
 */
class Exchange {
  reason: unknown = undefined;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: http.ClientRequest,
    private readonly signal: AbortSignal,
    timeoutMs: number | undefined,
  ) {
    signal.addEventListener('abort', this, { once: true });
    if (timeoutMs !== undefined) {
      this.timer = setTimeout(() => this.cut(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
      this.timer.unref();
    }
    // 'close' comes once the answer is read to its end, or the connection is gone.
    req.once('close', () => this.end());
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.cut(this.signal.reason);
  }

  cut(reason: unknown): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.req.destroy(reason instanceof Error ? reason : new Error(String(reason)));
  }

  end(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this);
  }
}

class NodeUpstreamResponse implements UpstreamHttpResponse {
  readonly status: number;
  readonly ok: boolean;

  constructor(
    private readonly res: IncomingMessage,
    private readonly exchange: Exchange,
  ) {
    this.status = res.statusCode ?? 0;
    this.ok = this.status >= 200 && this.status < 300;
  }

  header(name: string): string | null {
    const value = this.res.headers[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  async *chunks(maxBytes: number): AsyncGenerator<Uint8Array> {
    let total = 0;
    try {
      // The stream's iterator destroys it when reading stops early (a limit, a consumer that stops).
      for await (const value of this.res as AsyncIterable<Buffer>) {
        total += value.byteLength;
        if (total > maxBytes) throw new ResponseTooLargeError(maxBytes);
        yield value;
      }
    } catch (err) {
      throw err instanceof ResponseTooLargeError ? err : (this.exchange.reason ?? err);
    }
  }

  async text(maxBytes: number): Promise<string> {
    const parts: Uint8Array[] = [];
    for await (const value of this.chunks(maxBytes)) parts.push(value);
    return Buffer.concat(parts).toString('utf8');
  }

  discard(): void {
    const length = Number(this.res.headers['content-length'] ?? NaN);
    if (this.res.complete || length <= DRAINED_BYTES) this.res.resume();
    else this.res.destroy();
  }
}
