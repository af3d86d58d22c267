import { Client, SSEClientTransport, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { recordFailedResponses, type FailedResponse } from './failed-response-recorder.js';

/** What feature-learning found on an upstream, stored in inbound_servers.features. */
export interface ServerFeatures {
  transport: 'streamable-http' | 'sse';
  protocolVersion: string | null;
  serverInfo: { name: string; version: string; title?: string } | null;
  capabilities: Record<string, unknown>;
  instructions: string | null;
  tools: Record<string, unknown>[];
  prompts: Record<string, unknown>[];
  resources: Record<string, unknown>[];
  resourceTemplates: Record<string, unknown>[];
}

export interface ProbeOptions {
  headers: Record<string, string>;
  fetch: typeof fetch;
  signal: AbortSignal;
  timeoutMs: number;
}

/**
 * A probe failure; `status` is the upstream's HTTP status when it answered one,
 * `transport` the one whose attempt failed and `response` the last answer of that
 * attempt that was not a 2xx (for the alert; not redacted).
 */
export class ProbeError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly transport?: ServerFeatures['transport'],
    readonly response?: FailedResponse | null,
  ) {
    super(message);
  }
}

/** One way of connecting, with the fetch that remembers its failed answers. */
interface Attempt {
  transport: ServerFeatures['transport'];
  recorder: ReturnType<typeof recordFailedResponses>;
}

const CLIENT_INFO = { name: 'svc-gateway-validator', version: '1.0.0' };
/** Bounds on what one probe reads: a server listing endlessly must not hold a job forever. */
const MAX_PAGES = 20;

const httpStatusOf = (err: unknown): number | undefined => {
  // The SDK's HTTP errors carry the status (SdkHttpError.status, as the version probe throws them); older ones put it in `code`.
  const e = err as { code?: unknown; status?: unknown } | null;
  for (const value of [e?.status, e?.code]) if (typeof value === 'number' && value >= 100 && value < 600) return value;
  return undefined;
};

/**
 * Connects to an upstream MCP server the way the gateway will (Streamable HTTP,
 * falling back to the older HTTP+SSE transport), negotiates the newest revision both
 * speak (learned here, remembered in the features' protocolVersion) and lists what it
 * offers: tools always, prompts, resources and resource templates when its
 * capabilities say so. Throws ProbeError; the message can carry upstream text, so
 * callers redact it before storing or logging.
 */
export async function probeUpstream(url: URL, opts: ProbeOptions): Promise<ServerFeatures> {
  const requestInit = { headers: opts.headers };
  const streamable: Attempt = { transport: 'streamable-http', recorder: recordFailedResponses(opts.fetch) };
  let attempt = streamable;
  let client: Client;
  try {
    client = await connect(new StreamableHTTPClientTransport(url, { requestInit, fetch: streamable.recorder.fetch }), opts);
  } catch (first) {
    const status = httpStatusOf(first);
    // A refused credential is final; anything else may be an older server that speaks only SSE.
    if (status === 401 || status === 403 || opts.signal.aborted) throw await asProbeError(first, streamable);
    const sse: Attempt = { transport: 'sse', recorder: recordFailedResponses(opts.fetch) };
    try {
      client = await connect(new SSEClientTransport(url, { requestInit, fetch: sse.recorder.fetch }), opts);
      attempt = sse;
    } catch (second) {
      const secondStatus = httpStatusOf(second);
      throw secondStatus === 401 || secondStatus === 403 ? await asProbeError(second, sse) : await asProbeError(first, streamable);
    }
  }
  const transport = attempt.transport;
  try {
    const caps = client.getServerCapabilities() ?? {};
    const request = { signal: opts.signal, timeout: opts.timeoutMs };
    const tools = await listAll(
      (cursor) => client.listTools(cursor ? { cursor } : {}, request),
      (r) => r.tools,
    );
    const prompts = caps.prompts
      ? await listAll(
          (cursor) => client.listPrompts(cursor ? { cursor } : {}, request),
          (r) => r.prompts,
        )
      : [];
    const resources = caps.resources
      ? await listAll(
          (cursor) => client.listResources(cursor ? { cursor } : {}, request),
          (r) => r.resources,
        )
      : [];
    const resourceTemplates = caps.resources
      ? await listAll(
          (cursor) => client.listResourceTemplates(cursor ? { cursor } : {}, request),
          (r) => r.resourceTemplates,
        ).catch(() => [])
      : [];
    const info = client.getServerVersion();
    return {
      transport,
      protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
      serverInfo: info ? { name: info.name, version: info.version, ...(info.title ? { title: info.title } : {}) } : null,
      capabilities: caps as Record<string, unknown>,
      instructions: client.getInstructions() ?? null,
      tools,
      prompts,
      resources,
      resourceTemplates,
    };
  } catch (err) {
    throw await asProbeError(err, attempt);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** What the probe declares it can do (its answers are empty: it asks the server's lists, nothing more). */
const PROBE_CAPABILITIES = { roots: { listChanged: true }, sampling: {}, elicitation: { form: {}, url: {} } };

async function connect(transport: Transport, opts: ProbeOptions): Promise<Client> {
  // The newest revision both sides speak: server/discover first (2026-07-28), the 2025 initialize when the server does not know it.
  // Every host capability a server may gate tools on: the lists learned here are what a host may be shown, and the
  // gateway resolves a plain (when-needed) name by them (server-everything lists get-roots-list only to hosts with roots).
  const client = new Client(CLIENT_INFO, { capabilities: PROBE_CAPABILITIES, versionNegotiation: { mode: 'auto' } });
  // A server may ask for the roots as soon as it knows of them: the probe has none.
  client.setRequestHandler('roots/list', () => ({ roots: [] }));
  try {
    await client.connect(transport, { signal: opts.signal, timeout: opts.timeoutMs });
    return client;
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}

async function listAll<R extends { nextCursor?: string }>(
  page: (cursor?: string) => Promise<R>,
  items: (r: R) => unknown[],
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const r = await page(cursor);
    out.push(...(items(r) as Record<string, unknown>[]));
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}

async function asProbeError(err: unknown, attempt: Attempt): Promise<ProbeError> {
  if (err instanceof ProbeError) return err;
  const status = httpStatusOf(err);
  const message = err instanceof Error ? err.message : String(err);
  const response = await attempt.recorder.lastFailure();
  if (status === 401 || status === 403) return new ProbeError(`the upstream refused the credentials (HTTP ${status})`, status, attempt.transport, response);
  return new ProbeError(message, status, attempt.transport, response);
}
