import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { HostContext } from './call-model.js';
import type { GatewaySession } from './session-id.js';

/**
 * A 2025 host cancels a request of its session with `notifications/cancelled`, a POST
 * of its own that arrives while the request is still being served. A 2025 upstream
 * hears it in its session (the proxy broadcasts it), and need send no answer after it;
 * a 2026-07-28 upstream has no session, and its revision cancels a request by closing
 * it. So the requests of 2025 sessions in flight in this process are kept here, and
 * the cancellation aborts the one it names: its upstream exchange is closed and its
 * row says it was cancelled, at once, instead of waiting out the upstream timeout for
 * an answer that will not come. A cancellation that reaches another replica finds
 * nothing here (docs/gateway.md).
 */
export class HostCancellations {
  private readonly inFlight = new Map<string, AbortController>();

  /** `ctx` with a signal that the host's cancellation of `id` aborts too, and `done`, which forgets it. */
  track(ctx: HostContext & { session: GatewaySession }, id: RequestId): { ctx: HostContext; done: () => void } {
    const key = keyOf(ctx.session, id);
    const cancel = new AbortController();
    this.inFlight.set(key, cancel);
    return {
      ctx: { ...ctx, signal: AbortSignal.any([ctx.signal, cancel.signal]) },
      done: () => {
        if (this.inFlight.get(key) === cancel) this.inFlight.delete(key);
      },
    };
  }

  /** Aborts the session's request named by a host's `notifications/cancelled`, if it is in flight here. */
  cancel(session: GatewaySession, message: JSONRPCMessage): void {
    const requestId = (message as { params?: { requestId?: unknown } }).params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    this.inFlight.get(keyOf(session, requestId))?.abort(new Error('the host cancelled the request'));
  }
}

const keyOf = (session: GatewaySession, id: RequestId): string => `${session.id}:${JSON.stringify(id)}`;
