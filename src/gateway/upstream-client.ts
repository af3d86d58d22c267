import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { EgressPolicy } from '../core/egress.js';
import { validationFailed } from '../core/errors.js';
import { redirectHop } from '../core/servers/egress-fetch.js';

/** What the gateway sends an upstream: a string body at most (JSON-RPC), never a stream. */
export interface UpstreamHttpInit {
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/** An upstream's answer: status, headers, and the body as a Node stream of Buffers. */
export interface UpstreamHttpResponse {
  status: number;
  ok: boolean;
  /** A response header by lower-case name, or null. */
  header(name: string): string | null;
  body: IncomingMessage;
  /** The whole body as text (small answers: errors, acknowledgements). */
  text(): Promise<string>;
  /** Drops the body: a short one is drained (the connection is reused), a long or endless one is cut off. */
  discard(): void;
}

/** One HTTP exchange with an upstream (the signature every gateway upstream module takes, so tests and callers share one client). */
export type UpstreamFetch = (url: string | URL, init: UpstreamHttpInit) => Promise<UpstreamHttpResponse>;

/** A discarded body up to this size is read to its end so its connection can be reused. */
const DRAINED_BYTES = 64 * 1024;
/** Results of the egress rule for hosts written as IP addresses: the policy is fixed for the life of the process. */
const MAX_REMEMBERED_LITERALS = 1000;

/**
 * The gateway's HTTP client for upstreams: node:http(s) with keep-alive agents,
 * one connection per exchange in flight, reused across calls. It is the gateway's
 * hot path, and fetch (undici's WHATWG layer: Request, Headers, web streams, a
 * chunked request body) cost about three times the CPU per call of a plain
 * http.request on this workload.
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
  private readonly literalRefusals = new Map<string, string | null>();

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
    let url = typeof input === 'string' ? new URL(input) : input;
    let current = init;
    for (let hop = 0; ; hop++) {
      const res = await this.once(url, current);
      const next = redirectHop(res.status, res.header('location'), url, current.method, hop);
      if (!next) return res;
      res.discard();
      url = next.url;
      if (next.asGet) current = { headers: current.headers, signal: current.signal, method: 'GET' };
    }
  };

  /** Closes idle connections; later calls open new ones. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private once(url: URL, init: UpstreamHttpInit): Promise<UpstreamHttpResponse> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(validationFailed([{ path: this.field, message: 'must be an http or https URL' }]));
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host)) {
      const why = this.literalRefusal(host);
      if (why) return Promise.reject(validationFailed([{ path: this.field, message: `host ${host} ${why}` }]));
    }
    const { signal } = init;
    if (signal.aborted) return Promise.reject(signal.reason);
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...init.headers };
      if (init.body !== undefined) headers['content-length'] = Buffer.byteLength(init.body);
      const req = (secure ? https : http).request(url, { method: init.method, headers, agent: secure ? this.httpsAgent : this.httpAgent, signal }, (res) => {
        resolve(wrap(res, signal));
      });
      // An abort surfaces as its reason (a TimeoutError for the upstream timeout), as with fetch.
      req.on('error', (err) => reject(signal.aborted ? signal.reason : err));
      req.end(init.body);
    });
  }

  private literalRefusal(address: string): string | null {
    let why = this.literalRefusals.get(address);
    if (why === undefined) {
      why = this.egress.refusal(address);
      if (this.literalRefusals.size >= MAX_REMEMBERED_LITERALS) this.literalRefusals.clear();
      this.literalRefusals.set(address, why);
    }
    return why;
  }
}

function wrap(res: IncomingMessage, signal: AbortSignal): UpstreamHttpResponse {
  const status = res.statusCode ?? 0;
  return {
    status,
    ok: status >= 200 && status < 300,
    header: (name) => {
      const value = res.headers[name];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
    body: res,
    text: async () => {
      let text = '';
      res.setEncoding('utf8');
      try {
        for await (const chunk of res) text += chunk as string;
      } catch (err) {
        throw signal.aborted ? signal.reason : err;
      }
      return text;
    },
    discard: () => {
      const length = Number(res.headers['content-length'] ?? NaN);
      if (res.complete || length <= DRAINED_BYTES) res.resume();
      else res.destroy();
    },
  };
}
