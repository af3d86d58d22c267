/** A peer's failed answer as a fetch saw it, before redaction (alert-debug.ts redacts it). */
export interface FailedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** What is read of a failed answer's body: past alert-debug's limit nothing more is kept anyway. */
const BODY_BYTES = 4096;
/** How long an alert waits for that body: a peer that sends headers and then stalls must not hold the alert. */
const BODY_WAIT_MS = 1000;

/**
 * Wraps the fetch an SDK call is given (the probe's MCP client, the OAuth refresh) so
 * that the last answer that was not a 2xx can go into an alert, with no change to
 * the SDK call: the SDK reads its own response, the recorder a clone of it, in the
 * background (the SDK's call is not delayed by it).
 */
export function recordFailedResponses(fetch: typeof globalThis.fetch): { fetch: typeof globalThis.fetch; lastFailure(): Promise<FailedResponse | null> } {
  let last: Promise<FailedResponse> | null = null;
  const recording = (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    // A 405 to a GET is how a Streamable HTTP server says it offers no standalone stream: an answer, not a failure.
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    if (!res.ok && !(res.status === 405 && method.toUpperCase() === 'GET')) last = failedResponse(res);
    return res;
  }) as typeof globalThis.fetch;
  return {
    fetch: recording,
    async lastFailure() {
      return last;
    },
  };
}

function failedResponse(res: Response): Promise<FailedResponse> {
  const headers = Object.fromEntries(res.headers);
  const body = Promise.race([bodyStart(res.clone()), new Promise<string>((resolve) => setTimeout(resolve, BODY_WAIT_MS, '').unref())]);
  return body.then((text) => ({ status: res.status, headers, body: text }));
}

/** The first BODY_BYTES of a body as text; what cannot be read (a cut connection) is left out. */
async function bodyStart(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.byteLength;
    }
  } catch {
    // The answer was cut (the SDK aborted, the peer went away): what came is kept.
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts).toString('utf8').slice(0, BODY_BYTES);
}
