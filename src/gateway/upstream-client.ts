import net from 'node:net';
import type { Agent, Dispatcher } from 'undici';
import type { EgressPolicy } from '../core/egress.js';
import { validationFailed } from '../core/errors.js';
import { egressAgent, keptAcrossOrigins, redirectHop, refuseBodyAcrossOrigins } from '../core/servers/egress-fetch.js';

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
  /** Every response header, by lower-case name (for an alert's debug context). */
  headers(): Record<string, string | string[] | undefined>;
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
  /** Why the egress rule refuses the host (an IP address); null when allowed or a name (checked at connect). */
  refusal: string | null;
  hostname: string;
  origin: string;
  path: string;
}

/**
 * The gateway's HTTP client for upstreams: undici's dispatcher (its lowest layer: an
 * Agent with keep-alive pools, one connection per exchange in flight, reused across
 * calls) driven by a handler of our own, with no stream in between. It is the
 * gateway's hot path: fetch (undici's WHATWG layer: Request, Headers, web streams, a
 * chunked request body) cost about three times the CPU per call of a plain
 * http.request, and http.request about twice a dispatch (docs/gateway.md, "Session
 * 20"); so did composite abort signals (AbortSignal.any plus AbortSignal.timeout per
 * exchange), hence the exchange's own timer and listener here.
 *
 * The egress rule (EgressPolicy) is applied where an address is actually used:
 * when a connection is opened, to every address the host resolves to (the
 * connector's `lookup`), and to a host written as an IP address (which needs no
 * lookup) before the request. A reused keep-alive connection goes to an address
 * already checked, so a call on a warm connection costs no DNS lookup and no check,
 * and a DNS answer that changes between a check and the connect cannot slip through.
 * Redirects are followed as egressFetch follows them (redirectHop), each hop under
 * the same rule.
 */
export class UpstreamClient {
  private readonly agent: Agent;
  private readonly targets = new Map<string, Target>();

  constructor(
    private readonly egress: EgressPolicy,
    private readonly field = 'url',
  ) {
    // No timeouts of undici's own (300 s for headers, and between two chunks of a body): an exchange has its
    // caller's timeoutMs, and a stream an upstream keeps open (a GET for notifications) may stay quiet for longer.
    // HTTP/1.1 only (undici would offer HTTP/2 to an https upstream): an identity's headers are sent as
    // configured, and HTTP/2 refuses some of them (Connection, Keep-Alive).
    this.agent = egressAgent(egress, field, { headersTimeout: 0, bodyTimeout: 0, allowH2: false });
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
    void this.agent.destroy().catch(() => undefined);
  }

  private once(url: string, init: UpstreamHttpInit): Promise<UpstreamHttpResponse> {
    let target: Target;
    try {
      target = this.target(url);
    } catch (err) {
      return Promise.reject(err);
    }
    if (target.refusal) return Promise.reject(validationFailed([{ path: this.field, message: `host ${target.hostname} ${target.refusal}` }]));
    if (init.signal.aborted) return Promise.reject(init.signal.reason);
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(init.signal, init.timeoutMs, resolve, reject);
      this.agent.dispatch({ origin: target.origin, path: target.path, method: init.method, headers: init.headers, body: init.body ?? null }, exchange);
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
      refusal: net.isIP(hostname) ? this.egress.refusal(hostname) : null,
      hostname,
      origin: parsed.origin,
      path: parsed.pathname + parsed.search,
    };
    if (this.targets.size >= MAX_REMEMBERED) this.targets.clear();
    this.targets.set(url, target);
    return target;
  }
}

const tooLongToDrain = () => new Error('the discarded answer is too long to drain');
const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

/** Past this many bytes read and not yet consumed, the exchange stops reading from the socket until they are. */
const HIGH_WATER_BYTES = 64 * 1024;

/**
 * One exchange: undici's handler for it and, once the status and headers came, the
 * answer its caller reads. The body's chunks wait in a queue for `chunks()`; reading
 * pauses past HIGH_WATER_BYTES. It is cut when the caller's signal aborts or the
 * timeout passes, with that reason remembered so that every failure of the exchange
 * (the request's or its body's) reports it rather than the socket's error. It is its
 * own abort listener (handleEvent): no closure is made per exchange (docs/decisions.md,
 * "No named closure made per call on a hot path").
 */
class Exchange implements Dispatcher.DispatchHandler, UpstreamHttpResponse {
  status = 0;
  private responseHeaders: Record<string, string | string[] | undefined> = {};
  private controller: Dispatcher.DispatchController | null = null;
  private reason: unknown = undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private finished = false;
  private failure: unknown = undefined;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private wake: (() => void) | null = null;
  /** Set by discard(): chunks are dropped as they come, up to DRAINED_BYTES. */
  private draining = false;
  private drainedBytes = 0;

  constructor(
    private readonly signal: AbortSignal,
    timeoutMs: number | undefined,
    private resolve: ((res: UpstreamHttpResponse) => void) | null,
    private reject: ((err: unknown) => void) | null,
  ) {
    signal.addEventListener('abort', this, { once: true });
    if (timeoutMs !== undefined) {
      this.timer = setTimeout(() => this.cut(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
      this.timer.unref();
    }
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.cut(this.signal.reason);
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  header(name: string): string | null {
    const value = this.responseHeaders[name];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }

  headers(): Record<string, string | string[] | undefined> {
    return this.responseHeaders;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Cut while it waited for a connection: its caller has its failure already.
    if (this.reason !== undefined) controller.abort(asError(this.reason));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    this.responseHeaders = headers;
    this.resolve?.(this);
    this.resolve = this.reject = null;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.draining) {
      this.drainedBytes += chunk.byteLength;
      if (this.drainedBytes > DRAINED_BYTES) controller.abort(tooLongToDrain());
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.byteLength;
    if (this.queuedBytes > HIGH_WATER_BYTES) controller.pause();
    this.notify();
  }

  onResponseEnd(): void {
    this.finished = true;
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    const failure = this.reason ?? err;
    // Before the status came its caller still waits for the exchange; after, it reads the failure from chunks().
    this.reject?.(failure);
    this.resolve = this.reject = null;
    this.failure = failure;
    this.finished = true;
    this.settle();
  }

  async *chunks(maxBytes: number): AsyncGenerator<Uint8Array> {
    let total = 0;
    try {
      for (;;) {
        const chunk = this.queue.shift();
        if (chunk) {
          this.queuedBytes -= chunk.byteLength;
          total += chunk.byteLength;
          if (total > maxBytes) throw new ResponseTooLargeError(maxBytes);
          yield chunk;
          continue;
        }
        if (this.finished) {
          if (this.failure !== undefined) throw this.failure;
          return;
        }
        if (this.controller?.paused) {
          // Resuming may hand over chunks at once, before this reader waits: look at the queue again first.
          this.controller.resume();
          continue;
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      // Reading stopped early (a limit, a consumer that stops, a failure): the rest of the answer is not wanted.
      if (!this.finished) this.controller?.abort(new Error('the answer was not read to its end'));
    }
  }

  async text(maxBytes: number): Promise<string> {
    const parts: Uint8Array[] = [];
    for await (const value of this.chunks(maxBytes)) parts.push(value);
    return Buffer.concat(parts).toString('utf8');
  }

  discard(): void {
    if (this.finished) return;
    const length = Number(this.header('content-length') ?? NaN);
    if (length > DRAINED_BYTES) return void this.controller?.abort(tooLongToDrain());
    this.draining = true;
    this.drainedBytes = this.queuedBytes;
    this.queue.length = this.queuedBytes = 0;
    if (this.controller?.paused) this.controller.resume();
  }

  /**
   * Cuts the exchange. One still waiting for a connection fails at once: undici starts
   * it (onRequestStart) only once connected, and it is aborted there.
   */
  private cut(reason: unknown): void {
    if (this.reason !== undefined || this.finished) return;
    this.reason = reason;
    if (this.controller) return void this.controller.abort(asError(reason));
    this.onResponseError(null, asError(reason));
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** The exchange is over (answered, failed or cut): its timer and listener go, a waiting reader wakes. */
  private settle(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this);
    this.notify();
  }
}
