import type { EgressPolicy } from '../egress.js';

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

/**
 * A fetch for talking to upstreams (MCP servers, OAuth endpoints) that checks the
 * egress policy at connect time, for the first URL and for every redirect hop, so
 * neither DNS changes nor a redirect can lead to a forbidden address.
 */
export function egressFetch(egress: EgressPolicy, field = 'url'): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    let url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    let request = init ?? {};
    for (let hop = 0; ; hop++) {
      await egress.check(field, url.href);
      // A caller that handles redirects itself (the SDK does, within one origin) sees them as they are.
      if (request.redirect === 'manual' || request.redirect === 'error') return fetch(url, request);
      const res = await fetch(url, { ...request, redirect: 'manual' });
      const next = redirectHop(res.status, res.headers.get('location'), url, request.method, hop);
      if (!next) return res;
      url = next.url;
      if (next.asGet) request = { ...request, method: 'GET', body: undefined };
    }
  }) as typeof fetch;
}
