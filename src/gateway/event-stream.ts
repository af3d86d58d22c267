import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Catalog, Catalogs } from './catalog.js';
import { LIST_CHANGES } from './list-changes.js';
import { withoutEchoedSecrets } from './echoed-secrets.js';
import type { HostSubscriptions } from './host-subscriptions.js';
import type { HostTasks } from './host-tasks.js';
import { followingRequest, followModernUpstreams, listsOf, relistenDelay } from './listen-upstreams.js';
import { fromUpstream } from './relay.js';
import type { GatewaySession } from './session-id.js';
import type { UpstreamFetch } from './upstream-client.js';
import { forgotSession, openUpstreamStream } from './upstream-http.js';
import { initializeStreamable, renewUpstreamSession } from './upstream-adapters/streamable-session.js';

/** What a 2025 session's event stream needs to follow the workspace and the session's upstreams. */
export interface HostEventsOptions {
  services: Pick<Services, 'config' | 'configChanges' | 'logger'>;
  catalogs: Catalogs;
  caller: GatewayCaller;
  catalog: Catalog;
  session: GatewaySession;
  /** The session's resource subscriptions to 2026-07-28 upstreams, kept by this process. */
  subscriptions: HostSubscriptions;
  /** The session's tasks, whose status notifications name them by the upstream's ids. */
  tasks: HostTasks;
  fetch: UpstreamFetch;
  /** The session is this process's to change (the legacy transport's): an upstream session the upstream forgot is replaced in it. */
  renewsUpstreamSessions?: boolean;
}

/**
 * What a 2025 session hears besides its answers, handed to `deliver`: the upstreams'
 * own streams merged into one (their server requests relayed with ids that name
 * them; a stream cut is opened again, in a new upstream session where the upstream
 * forgot the session and this process may change it, and its return announced as list
 * changes), list_changed notifications when the workspace's configuration changes in
 * this process, and what 2026-07-28 upstreams announce through their listens (their
 * own list changes, the updates of the resources the session subscribed to on them).
 * The Streamable HTTP host's GET stream and the legacy transport's stream both carry
 * it. Returns the function that stops following.
 */
export function followHostEvents(opts: HostEventsOptions, deliver: (message: JSONRPCMessage) => void): () => void {
  const { caller, session } = opts;
  const abort = new AbortController();
  const unsubscribe = opts.services.configChanges.subscribe((org) => {
    if (org !== caller.organizationGuid) return;
    for (const { method } of LIST_CHANGES) deliver({ jsonrpc: '2.0', method } as JSONRPCMessage);
  });
  for (const route of opts.catalog.routes) {
    if (!session.upstreams[route.assignmentGuid]?.sessionId || route.transport !== 'streamable-http') continue;
    void (async () => {
      // A stream that ends (a proxy cutting an idle stream, the upstream restarting) is opened again while the
      // session lives upstream; its return is announced as list changes (what it said meanwhile is lost).
      let forgotten: string | undefined;
      for (let failures = 0, attempt = 0; !abort.signal.aborted; attempt++) {
        try {
          const credential = await opts.catalogs.credential(route);
          const following = followingRequest(opts.fetch, route, credential, abort.signal);
          if (forgotten !== undefined) {
            const timeoutMs = opts.services.config.gateway.upstreamTimeoutMs;
            await renewUpstreamSession(session, route.assignmentGuid, forgotten, () => initializeStreamable({ ...following, timeoutMs }, session));
            forgotten = undefined;
          }
          // Read at each opening: a session this process may change has a forgotten upstream session replaced in it.
          const upstream = session.upstreams[route.assignmentGuid]!;
          const messages = await openUpstreamStream({ ...following, sessionId: upstream.sessionId, protocolVersion: upstream.protocolVersion }).catch(
            (err: unknown) => {
              if (forgotSession(err)) forgotten = upstream.sessionId;
              throw err;
            },
          );
          // No stream to follow (405): nothing more to hear from it.
          if (!messages) return;
          if (attempt > 0) for (const { method } of listsOf(route)) deliver({ jsonrpc: '2.0', method } as JSONRPCMessage);
          for await (const message of messages) {
            failures = 0;
            const relayed = opts.tasks.statusFor(session, route.assignmentGuid, message);
            if (relayed) deliver(fromUpstream(route.assignmentGuid, withoutEchoedSecrets(relayed, credential.secrets)));
          }
        } catch (err) {
          if (abort.signal.aborted) return;
          // The upstream forgot the session: a host whose session is sealed in its id hears so at its next call and
          // initializes again; a session this process may change gets a new one, followed from then on.
          if (forgotten !== undefined && !opts.renewsUpstreamSessions) return;
          opts.services.logger.debug(
            { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
            'an upstream event stream ended',
          );
        }
        await sleep(relistenDelay(failures++), undefined, { signal: abort.signal }).catch(() => undefined);
      }
    })();
  }
  // A 2026-07-28 upstream has no stream of a session: its list changes and the session's resources on it come through its listen.
  const stopFollowing = followModernUpstreams(
    { catalogs: opts.catalogs, fetch: opts.fetch, logger: opts.services.logger },
    session,
    opts.catalog,
    opts.subscriptions,
    deliver,
  );
  return () => {
    unsubscribe();
    stopFollowing();
    abort.abort();
  };
}
