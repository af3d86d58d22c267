import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { MAX_LIST_PAGES } from '../aggregate.js';
import { GATEWAY_VERSION, type HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import { isParamHeaderMismatch } from '../mcp-param-headers.js';
import { errorAnswerIn, MODERN_REVISION, toLegacyHost, toModernUpstream, withoutUpstreamIdentity } from '../modern-upstream.js';
import { postToUpstream, UpstreamHttpError } from '../upstream-http.js';
import { refusesRevision } from '../upstream-revision.js';
import { singleMessage, type UpstreamAdapter, type UpstreamExchange, type UpstreamKit } from './adapter.js';

/**
 * A 2026-07-28 upstream: no session, no initialize; each request carries the
 * envelope (the host's identity) and the routing headers (modern-upstream.ts). The
 * revision answers a request's JSON-RPC error with an HTTP error status: that error
 * is the upstream's answer, except a refusal of the revision itself, which
 * upstreams.ts learns from.
 */
export class ModernAdapter implements UpstreamAdapter {
  constructor(private readonly kit: UpstreamKit) {}

  /** `relearned`: the call's tool list was just fetched again after a HeaderMismatch; a second one is the answer. */
  async exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage, relearned = false): Promise<UpstreamExchange> {
    const host = ctx.session
      ? this.kit.logLevels.identityOf(ctx.session)
      : (ctx.modern?.identity ?? { clientInfo: { name: ctx.caller.gatewayName, version: GATEWAY_VERSION }, clientCapabilities: {} });
    const m = message as { method?: string; params?: { name?: unknown } };
    const declarations = m.method === 'tools/call' && typeof m.params?.name === 'string' ? this.kit.paramSchemas.declarationsFor(route, m.params.name) : [];
    const modern = toModernUpstream(message, host, declarations);
    try {
      const reply = await postToUpstream(
        { ...this.kit.request(ctx, route, credential, undefined, MODERN_REVISION), routingHeaders: modern.headers },
        modern.message,
      );
      // A 2025 host's answers come in its revision; a 2026-07-28 host's as they are, but in the gateway's name.
      return { ...reply, protocolVersion: MODERN_REVISION, messages: mapMessages(reply.messages, ctx.modern ? withoutUpstreamIdentity : toLegacyHost) };
    } catch (err) {
      const answer = err instanceof UpstreamHttpError && !refusesRevision(err, MODERN_REVISION) ? errorAnswerIn(err.status, err.body, message) : null;
      if (!answer) throw err;
      // The tool's marks changed since the gateway learned them: learn them again, and try once more.
      if (!relearned && m.method === 'tools/call' && isParamHeaderMismatch(answer) && (await this.relearnTools(ctx, route, credential)))
        return this.exchange(ctx, route, credential, message, true);
      return singleMessage(answer, MODERN_REVISION);
    }
  }

  /** Reads the upstream's tools/list (every page) into the shared schemas; false when it could not be read whole. */
  private async relearnTools(ctx: HostContext, route: Route, credential: RouteCredential): Promise<boolean> {
    const tools: Record<string, unknown>[] = [];
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const id = `svcgw-tools-${page}`;
        const request = { jsonrpc: '2.0', id, method: 'tools/list', params: cursor ? { cursor } : {} } as JSONRPCMessage;
        let result: { tools?: unknown; nextCursor?: unknown } | undefined;
        for await (const answer of (await this.exchange(ctx, route, credential, request, true)).messages)
          if ((answer as { id?: unknown }).id === id) result = (answer as { result?: typeof result }).result;
        if (!result || !Array.isArray(result.tools)) return false;
        tools.push(...(result.tools as Record<string, unknown>[]));
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (!cursor) break;
      }
    } catch {
      return false;
    }
    // A list cut off after the last page would hide the marks of the tools beyond it.
    if (cursor) return false;
    this.kit.paramSchemas.learn(route, tools);
    return true;
  }

  /** Whether the upstream speaks 2026-07-28, asked as feature-learning asks it (server/discover). */
  async speaksModern(ctx: HostContext, route: Route, credential: RouteCredential): Promise<boolean> {
    const id = 'svcgw-discover';
    try {
      const reply = await this.exchange(ctx, route, credential, { jsonrpc: '2.0', id, method: 'server/discover', params: {} } as JSONRPCMessage);
      for await (const message of reply.messages) {
        const versions = (message as { id?: unknown; result?: { supportedVersions?: unknown } }).result?.supportedVersions;
        if ((message as { id?: unknown }).id === id) return Array.isArray(versions) && versions.includes(MODERN_REVISION);
      }
    } catch {
      /* not a 2026-07-28 upstream, or not reachable: either way not one to speak 2026-07-28 to */
    }
    return false;
  }
}

async function* mapMessages(messages: AsyncIterable<JSONRPCMessage>, map: (message: JSONRPCMessage) => JSONRPCMessage): AsyncGenerator<JSONRPCMessage> {
  for await (const message of messages) yield map(message);
}
