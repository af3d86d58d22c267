import type { ServerResponse } from 'node:http';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Catalog, Catalogs } from './catalog.js';
import { LIST_CHANGES } from './list-changes.js';
import { withoutEchoedSecrets } from './echoed-secrets.js';
import type { HostSubscriptions } from './host-subscriptions.js';
import { followingRequest, followModernUpstreams } from './listen-upstreams.js';
import { fromUpstream } from './relay.js';
import type { GatewaySession } from './session-id.js';
import { sseMessage } from './sse.js';
import type { UpstreamFetch } from './upstream-client.js';
import { openUpstreamStream } from './upstream-http.js';

const KEEPALIVE_MS = 25_000;

/**
 * The host's standalone event stream (GET): the upstreams' own streams merged into
 * one (their server requests relayed with ids that name them), plus list_changed
 * notifications when the workspace's configuration changes in this process, plus
 * what 2026-07-28 upstreams announce through their listens: their own list changes
 * and the updates of the resources the session subscribed to on them.
 * Resolves when the host goes away.
 */
export async function openHostEventStream(opts: {
  services: Pick<Services, 'configChanges' | 'logger'>;
  catalogs: Catalogs;
  caller: GatewayCaller;
  catalog: Catalog;
  session: GatewaySession;
  /** The session's resource subscriptions to 2026-07-28 upstreams, kept by this process. */
  subscriptions: HostSubscriptions;
  out: ServerResponse;
  fetch: UpstreamFetch;
}): Promise<void> {
  const { out, caller, session } = opts;
  const abort = new AbortController();
  const closed = new Promise<void>((resolve) => out.on('close', () => resolve()));
  const write = (message: unknown) => {
    if (!out.destroyed) out.write(sseMessage(message));
  };
  const keepalive = setInterval(() => !out.destroyed && out.write(': keepalive\n\n'), KEEPALIVE_MS);
  const unsubscribe = opts.services.configChanges.subscribe((org) => {
    if (org !== caller.organizationGuid) return;
    for (const { method } of LIST_CHANGES) write({ jsonrpc: '2.0', method });
  });
  for (const route of opts.catalog.routes) {
    const upstream = session.upstreams[route.assignmentGuid];
    if (!upstream?.sessionId || route.transport !== 'streamable-http') continue;
    void (async () => {
      try {
        const credential = await opts.catalogs.credential(route);
        const messages = await openUpstreamStream({
          ...followingRequest(opts.fetch, route, credential, abort.signal),
          sessionId: upstream.sessionId,
          protocolVersion: upstream.protocolVersion,
        });
        if (!messages) return;
        for await (const message of messages) write(fromUpstream(route.assignmentGuid, withoutEchoedSecrets(message, credential.secrets)));
      } catch (err) {
        if (!abort.signal.aborted)
          opts.services.logger.debug(
            { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
            'an upstream event stream ended',
          );
      }
    })();
  }
  // A 2026-07-28 upstream has no stream of a session: its list changes and the session's resources on it come through its listen.
  const stopFollowing = followModernUpstreams(
    { catalogs: opts.catalogs, fetch: opts.fetch, logger: opts.services.logger },
    session,
    opts.catalog,
    opts.subscriptions,
    write,
  );
  await closed;
  clearInterval(keepalive);
  unsubscribe();
  stopFollowing();
  abort.abort();
}
