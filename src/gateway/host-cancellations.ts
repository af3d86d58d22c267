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

  /** The request `id` of `ctx`'s session, tracked until its `done()`: its `ctx` has a signal the host's cancellation aborts too. */
  track(ctx: HostContext & { session: GatewaySession }, id: RequestId): TrackedRequest {
    return new TrackedRequest(this.inFlight, keyOf(ctx.session, id), ctx);
  }

  /** Aborts the session's request named by a host's `notifications/cancelled`, if it is in flight here. */
  cancel(session: GatewaySession, message: JSONRPCMessage): void {
    const requestId = (message as { params?: { requestId?: unknown } }).params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    this.inFlight.get(keyOf(session, requestId))?.abort(new Error('the host cancelled the request'));
  }
}

/**
 * One tracked request (every tools/call of a 2025 session makes one). Its signal follows
 * the host's own through a listener (this object's handleEvent), removed at `done()`,
 * rather than `AbortSignal.any`, whose composite signal costs several times as much a
 * call and leaves weak references for the garbage collector; and it is an object with
 * methods, not closures, which tsx would name as they are made (docs/decisions.md, "No
 * named closure made per call on a hot path").
 */
export class TrackedRequest {
  readonly ctx: HostContext;
  private readonly cancel = new AbortController();
  private readonly host: AbortSignal;

  constructor(
    private readonly inFlight: Map<string, AbortController>,
    private readonly key: string,
    ctx: HostContext,
  ) {
    this.host = ctx.signal;
    inFlight.set(key, this.cancel);
    if (this.host.aborted) this.cancel.abort(this.host.reason);
    else this.host.addEventListener('abort', this, { once: true });
    this.ctx = { ...ctx, signal: this.cancel.signal };
  }

  /** The host's signal aborted: so does the request's. */
  handleEvent(): void {
    this.cancel.abort(this.host.reason);
  }

  /** The request is over: forgotten, and no longer follows the host's signal. */
  done(): void {
    this.host.removeEventListener('abort', this);
    if (this.inFlight.get(this.key) === this.cancel) this.inFlight.delete(this.key);
  }
}

const keyOf = (session: GatewaySession, id: RequestId): string => `${session.id}:${JSON.stringify(id)}`;
