import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { EgressPolicy } from '../core/egress.js';

/**
 * One POST to a collector, classified for the forwarder. Written on node:http with
 * explicit url and headers and nothing else: no OTEL_* environment variable can add
 * a header or change the endpoint (the OpenTelemetry exporters merge
 * OTEL_EXPORTER_OTLP_HEADERS into every instance, which would hand an operator's own
 * credentials to customers' collectors). The egress policy is enforced on the address
 * actually connected to (DNS can change after the URL was stored).
 */
export type SendOutcome =
  /** The collector took the batch; `rejected` records were refused inside it (OTLP partial success). */
  | { kind: 'accepted'; status: number; rejected: number; message?: string | undefined; headers: http.IncomingHttpHeaders; body: string }
  /**
   * Not taken: every other answer, network errors and timeouts. The batch is sent again
   * later (`headers` and `body`: the collector's answer, for the alert).
   */
  | { kind: 'retry'; status: number | null; retryAfterMs: number | null; reason: string; headers?: http.IncomingHttpHeaders; body?: string };

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  /** The body, or its pieces, sent back to back. */
  body: Uint8Array | string | readonly Uint8Array[];
  contentType: string;
  timeoutMs: number;
  /** OTLP: read partialSuccess from the answer. */
  partialSuccessKey?: 'rejectedLogRecords' | 'rejectedSpans';
}

const MAX_RESPONSE_BYTES = 64 * 1024;
const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 16 }), https: new https.Agent({ keepAlive: true, maxSockets: 16 }) };

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return null;
  if (/^\s*\d+\s*$/.test(raw)) return Number(raw) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/**
 * No answer drops a batch (contract 5: every row delivered at least once). A collector
 * busy or away (408, 429, 5xx), misconfigured (a redirect, which the forwarder does not
 * follow to another address; a credential refused; a wrong path) or refusing the batch
 * (400, 413, 422: a wrong index, a size limit, a format it does not take) is fixed by an
 * admin or by us, and the backlog then drains; a record no collector could ever take
 * is not something this encoder writes (every record is valid JSON of the format).
 */
function partialRejected(body: string, key: SendRequest['partialSuccessKey']): { rejected: number; message?: string } {
  if (!key || !body) return { rejected: 0 };
  try {
    const parsed = JSON.parse(body) as { partialSuccess?: Record<string, unknown> };
    const partial = parsed.partialSuccess;
    if (!partial) return { rejected: 0 };
    const rejected = Number(partial[key] ?? 0);
    return { rejected: Number.isFinite(rejected) ? rejected : 0, message: typeof partial.errorMessage === 'string' ? partial.errorMessage : undefined };
  } catch {
    return { rejected: 0 };
  }
}

export function sendToCollector(egress: EgressPolicy, req: SendRequest): Promise<SendOutcome> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      resolve({ kind: 'retry', status: null, retryAfterMs: null, reason: 'the collector URL is not a valid URL' });
      return;
    }
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(literal)) {
      const why = egress.refusal(literal);
      if (why) {
        resolve({ kind: 'retry', status: null, retryAfterMs: null, reason: `egress refused: ${literal} ${why}` });
        return;
      }
    }
    const pieces = typeof req.body === 'string' ? [Buffer.from(req.body, 'utf8')] : Array.isArray(req.body) ? req.body : [req.body as Uint8Array];
    let length = 0;
    for (const piece of pieces) length += piece.byteLength;
    const client = url.protocol === 'https:' ? https : http;
    let request: http.ClientRequest;
    try {
      request = client.request(
        url,
        {
          method: 'POST',
          agent: url.protocol === 'https:' ? agents.https : agents.http,
          lookup: egress.connectLookup('collectorUrl'),
          headers: { ...req.headers, 'content-type': req.contentType, 'content-length': String(length), 'user-agent': 'mcp-gateway-manager-forwarder/1' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
          });
          res.on('error', (err) => resolve({ kind: 'retry', status: res.statusCode ?? null, retryAfterMs: null, reason: `response error: ${err.message}` }));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const text = Buffer.concat(chunks).toString('utf8');
            if (status >= 200 && status < 300)
              resolve({ kind: 'accepted', status, ...partialRejected(text, req.partialSuccessKey), headers: res.headers, body: text });
            else
              resolve({
                kind: 'retry',
                status,
                retryAfterMs: parseRetryAfter(res.headers['retry-after']),
                reason: `HTTP ${status}`,
                headers: res.headers,
                body: text,
              });
          });
        },
      );
    } catch (err) {
      // Node refuses a header it cannot send (one stored before the header rule refused it): the configuration is wrong, not the data.
      resolve({
        kind: 'retry',
        status: null,
        retryAfterMs: null,
        reason: `the request could not be sent: ${err instanceof Error ? err.message : String(err)}`,
      });
      return;
    }
    // A deadline for the whole exchange, not an idle timeout: a collector that answers a byte now and then must not hold
    // the forwarder's pass (and every other workspace's batches behind it) for ever.
    const deadline = setTimeout(() => {
      resolve({ kind: 'retry', status: null, retryAfterMs: null, reason: `no whole answer within ${req.timeoutMs} ms` });
      request.destroy();
    }, req.timeoutMs);
    request.on('close', () => clearTimeout(deadline));
    request.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ kind: 'retry', status: null, retryAfterMs: null, reason: err.code ? `${err.code}: ${err.message}` : err.message }),
    );
    for (const piece of pieces) request.write(piece);
    request.end();
  });
}

/** Shuts the keep-alive sockets (tests, shutdown). */
export function closeCollectorConnections(): void {
  agents.http.destroy();
  agents.https.destroy();
  agents.http = new http.Agent({ keepAlive: true, maxSockets: 16 });
  agents.https = new https.Agent({ keepAlive: true, maxSockets: 16 });
}
