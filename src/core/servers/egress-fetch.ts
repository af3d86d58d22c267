import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import type { EgressPolicy } from '../egress.js';
import { AppError } from '../errors.js';

const MAX_REDIRECTS = 5;

/**
 * Where a redirect leads, as browsers follow it: the next URL, and whether it
 * continues as a GET without a body (303, and 301/302 after a POST). Null when
 * the answer is not a redirect to follow (not 3xx, no Location, or past the hop limit).
 */
export function redirectHop(
  status: number,
  location: string | null,
  from: URL | string,
  method: string | undefined,
  hop: number,
): { url: URL; asGet: boolean } | null {
  if (status < 300 || status >= 400 || !location || hop >= MAX_REDIRECTS) return null;
  return { url: new URL(location, from), asGet: status === 303 || ((status === 301 || status === 302) && method !== undefined && method !== 'GET') };
}

/** Headers a request keeps when a redirect leads to another origin: none that could carry a credential. */
const CROSS_ORIGIN_HEADERS = new Set(['accept', 'accept-language', 'content-type', 'user-agent', 'mcp-protocol-version']);
export const keptAcrossOrigins = (headerName: string): boolean => CROSS_ORIGIN_HEADERS.has(headerName.toLowerCase());

/** A redirected request that may not follow to another origin: one whose body would be sent again there. */
export function refuseBodyAcrossOrigins(field: string): AppError {
  return new AppError('validation_failed', `${field}: the server redirected a request with a body to another origin; it is not followed`, {
    errors: [{ path: field, message: 'redirects a request with a body to another origin' }],
  });
}

/**
 * A request redirected to another origin: its credentials stay behind (an identity's
 * headers, an authorization), as the fetch standard drops Authorization; a body that
 * would be sent again (307, 308: an OAuth token request carries a client secret) is
 * refused rather than handed to another site.
 */
function crossOriginHop(request: RequestInit, asGet: boolean, field: string): RequestInit {
  if (!asGet && request.body !== undefined && request.body !== null) throw refuseBodyAcrossOrigins(field);
  const headers = new Headers(request.headers);
  for (const name of [...headers.keys()]) if (!keptAcrossOrigins(name)) headers.delete(name);
  return { ...request, headers };
}

/** An undici Agent whose connections are opened under the egress rule: names resolve through connectLookup, for `field`. */
export function egressAgent(egress: EgressPolicy, field: string, options: Omit<Agent.Options, 'connect'> = {}): Agent {
  return new Agent({ ...options, connect: { lookup: egress.connectLookup(field) } });
}

/** One connection pool per policy and field, shared by every request that names them. */
const dispatchers = new WeakMap<EgressPolicy, Map<string, Agent>>();

function dispatcherFor(egress: EgressPolicy, field: string): Agent {
  let byField = dispatchers.get(egress);
  if (!byField) dispatchers.set(egress, (byField = new Map()));
  let agent = byField.get(field);
  if (!agent) byField.set(field, (agent = egressAgent(egress, field)));
  return agent;
}

/**
 * The fetch for every outbound request that is not the gateway's (server
 * validation and feature learning, OAuth discovery, registration, code exchange and
 * refresh): undici's fetch on an Agent whose connector resolves names through
 * EgressPolicy.connectLookup, so the rule is applied to the address each connection
 * is opened to, not to an earlier answer of DNS (a name that flips between an
 * allowed and a forbidden address cannot slip through between a check and the
 * connect). Every redirect hop is followed here, under the same rule; a host written
 * as an IP address, which is never looked up, is judged before each hop. A refusal
 * is the validation_failed error naming `field`.
 */
/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

/**
 * undici's Response as the platform's: the MCP SDK reads an OAuth error body only from
 * an `instanceof Response` (another class it stringified, "[object Response]", losing
 * the authorization server's error and status). The body stream is handed over, not read.
 */
function asGlobalResponse(res: Awaited<ReturnType<typeof undiciFetch>>): Response {
  const body = NULL_BODY_STATUSES.has(res.status) ? null : (res.body as ReadableStream<Uint8Array> | null);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: [...res.headers] });
}

export function egressFetch(egress: EgressPolicy, field = 'url'): typeof fetch {
  const dispatcher = dispatcherFor(egress, field);
  const send = async (url: URL, init: RequestInit): Promise<Response> => {
    egress.target(field, url.href);
    try {
      return asGlobalResponse(await undiciFetch(url, { ...(init as UndiciRequestInit), dispatcher }));
    } catch (err) {
      // undici reports a failed connect as "fetch failed" with the connector's error as the cause: a refusal stays the error naming the field.
      const cause = (err as { cause?: unknown } | null)?.cause;
      throw cause instanceof AppError ? cause : err;
    }
  };
  return (async (input: string | URL | Request, init?: RequestInit) => {
    let url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    let request = init ?? {};
    for (let hop = 0; ; hop++) {
      // A caller that handles redirects itself (the SDK does, within one origin) sees them as they are.
      if (request.redirect === 'manual' || request.redirect === 'error') return send(url, request);
      const res = await send(url, { ...request, redirect: 'manual' });
      const next = redirectHop(res.status, res.headers.get('location'), url, request.method, hop);
      if (!next) return res;
      // The redirect's own body is not needed; cancelling it frees the connection.
      await res.body?.cancel().catch(() => undefined);
      if (next.url.origin !== url.origin) request = crossOriginHop(request, next.asGet, field);
      url = next.url;
      if (next.asGet) request = { ...request, method: 'GET', body: undefined };
    }
  }) as typeof fetch;
}
