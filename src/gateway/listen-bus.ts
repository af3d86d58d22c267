import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import type { GatewayCaller } from './access.js';
import type { Catalog } from './catalog.js';

/** Who opened a listen stream, and what their gateway looked like then. */
export interface ListenOwner {
  caller: GatewayCaller;
  catalog: Catalog;
  /** The resource URIs the host's listen subscribes to (its filter's resourceSubscriptions). */
  resources: readonly string[];
}

/** One open `subscriptions/listen` stream of a 2026-07-28 host. */
export interface ListenStream extends ListenOwner {
  /** Sends one change event down this stream (the SDK filters it by the host's filter and stamps the subscription id). */
  deliver(event: ServerEvent): void;
}

/**
 * The change-event bus behind the gateways' `subscriptions/listen` (contract 8.1).
 * The SDK's listen router has one bus per handler and events carry no addressee,
 * while every gateway, workspace and caller must hear only of its own lists: so each
 * stream is registered under the caller whose request opened it (the request runs
 * within `as(owner)`, and the router subscribes in that request's async context),
 * and events are sent to chosen streams, never broadcast.
 */
export class GatewayListenBus implements ServerEventBus {
  private readonly owner = new AsyncLocalStorage<ListenOwner>();
  private readonly streams = new Set<ListenStream>();

  constructor(
    /** Called when a stream opens (the return value is called when it closes): upstream subscriptions start and stop here. */
    private readonly onOpen: (stream: ListenStream) => () => void = () => () => undefined,
  ) {}

  /** Runs one host request with `owner` as the owner of any listen stream it opens. */
  as<T>(owner: ListenOwner, fn: () => T): T {
    return this.owner.run(owner, fn);
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    const owner = this.owner.getStore();
    // A stream opened outside a host request has nobody to hear of changes for.
    if (!owner) return () => undefined;
    const stream: ListenStream = { ...owner, deliver: listener };
    this.streams.add(stream);
    const stop = this.onOpen(stream);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.streams.delete(stream);
      stop();
    };
  }

  /** Unaddressed events are not delivered: a gateway's changes go to its own callers' streams (see `open`). */
  publish(_event: ServerEvent): void {}

  /** The open streams of one workspace. */
  *open(organizationGuid: string): Iterable<ListenStream> {
    for (const stream of this.streams) if (stream.caller.organizationGuid === organizationGuid) yield stream;
  }

  get size(): number {
    return this.streams.size;
  }
}
