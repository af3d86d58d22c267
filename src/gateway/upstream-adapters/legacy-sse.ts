import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import { initializeLegacyUpstream, sendToLegacyUpstream } from '../upstream-legacy-sse.js';
import type { InitHost, UpstreamAdapter, UpstreamExchange, UpstreamKit } from './adapter.js';

/** An upstream that speaks only the legacy HTTP+SSE transport (see upstream-legacy-sse.ts): a session per exchange. */
export class LegacySseAdapter implements UpstreamAdapter {
  constructor(private readonly kit: UpstreamKit) {}

  exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamExchange> {
    const liveKey = `${route.assignmentGuid}|${ctx.caller.connectionGuid}|${ctx.session?.id ?? ''}`;
    return sendToLegacyUpstream(this.kit.request(ctx, route, credential), this.kit.hostOf(ctx), liveKey, message);
  }

  /** The upstream's initialize result, for the host's initialize: a legacy session ends with its stream, so nothing is kept. */
  open(ctx: HostContext, route: Route, credential: RouteCredential, host: InitHost): Promise<Record<string, unknown>> {
    return initializeLegacyUpstream(this.kit.request(ctx, route, credential), host);
  }
}
