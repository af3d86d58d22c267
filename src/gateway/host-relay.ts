import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { isInputRequired } from './bridge-input-requests.js';
import { inputRounds, type InputRoundsContext, type InputWaiters } from './bridge-input-rounds.js';
import { ERRORS, errorResponse, SessionExpired, thenDone, type HostContext, type Outcome } from './call-model.js';
import type { Route } from './catalog.js';
import { HostCancellations } from './host-cancellations.js';
import { isTaskStatus } from './host-tasks.js';
import { fromUpstream, isAnswerTo } from './relay.js';
import { UpstreamProtocolError } from './upstream-http.js';
import type { Upstreams } from './upstreams.js';

/**
 * One routed host request's exchange with its upstream, as an outcome: a JSON
 * answer as an answer, an event stream as a stream whose last message is the
 * answer. A 2026-07-28 upstream's input_required result for a 2025 host becomes
 * requests on the host's stream (bridge-input-rounds.ts). Writes no call-log row:
 * the outcome goes to settle() (call-outcome.ts).
 */
export class HostRelay {
  /** The requests a 2025 host's notifications/cancelled may still abort. */
  readonly cancellations = new HostCancellations();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly waiters: InputWaiters,
    private readonly timeoutMs: number,
  ) {}

  async relay(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<Outcome> {
    ctx.record.inboundServerGuid = route.serverGuid;
    // A 2025 host's cancellation ends the call here at once: a 2025 upstream also hears it in its session (and, as its
    // revision says, may send no answer at all), a 2026-07-28 upstream's request is closed by it.
    if (!ctx.session) return this.exchange(ctx, route, message);
    const tracked = this.cancellations.track({ ...ctx, session: ctx.session }, (message as { id: RequestId }).id);
    let outcome: Outcome;
    try {
      outcome = await this.exchange(tracked.ctx, route, message);
    } catch (err) {
      tracked.done();
      throw err;
    }
    if (outcome.kind !== 'stream') {
      tracked.done();
      return outcome;
    }
    return { ...outcome, messages: thenDone(outcome.messages, () => tracked.done()) };
  }

  /** A request of the gateway's own to an upstream (for the host's request): the upstream's answer, its stream read through. */
  async answerOf(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<JSONRPCMessage> {
    const id = (message as { id: RequestId }).id;
    let final: JSONRPCMessage | null = null;
    try {
      for await (const msg of (await this.upstreams.send(ctx, route, message)).messages) if (isAnswerTo(id, msg)) final = msg;
    } catch (err) {
      // An upstream session the upstream forgot is the caller's to explain (a task's session, host-tasks.ts): no upstream failure.
      if (err instanceof SessionExpired) throw err;
      throw this.upstreams.failed(ctx, route, message, err);
    }
    if (!final) throw this.upstreams.failed(ctx, route, message, new UpstreamProtocolError('the upstream gave no answer'));
    return final;
  }

  /** A request of the gateway's own whose messages it reads itself (a task's tasks/result stream, bridge-extension-tasks.ts). */
  async messagesOf(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<AsyncIterable<JSONRPCMessage>> {
    return (await this.upstreams.send(ctx, route, message)).messages;
  }

  /** Sends a notification or an answer to an upstream's request, and reads what comes back to its end. */
  async tell(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<void> {
    for await (const _ of (await this.upstreams.send(ctx, route, message)).messages) void _;
  }

  /** Opens the upstream session a 2026-07-28 host's 2025-11-25 task will live in (upstreams.ts, openTaskSession). */
  openTaskSession(ctx: HostContext, route: Route): ReturnType<Upstreams['openTaskSession']> {
    return this.upstreams.openTaskSession(ctx, route);
  }

  /** What asking a 2025 host for an upstream's input needs (bridge-input-rounds.ts). */
  askingContext(ctx: HostContext, route: Route): Omit<InputRoundsContext, 'retry' | 'relayed'> {
    return {
      slug: route.slug,
      serverGuid: route.serverGuid,
      connectionGuid: ctx.caller.connectionGuid,
      hostCapabilities: ctx.session?.clientCapabilities ?? null,
      signal: ctx.signal,
      timeoutMs: this.timeoutMs,
      waiters: this.waiters,
    };
  }

  private async exchange(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<Outcome> {
    const requestId = (message as { id: RequestId }).id;
    const reply = await this.upstreams.send(ctx, route, message);
    if (reply.streamed) return { kind: 'stream', requestId, messages: this.relayStream(ctx, route, message, reply.messages) };
    let final: JSONRPCMessage | null = null;
    try {
      for await (const msg of reply.messages) final = msg;
    } catch (err) {
      throw this.upstreams.failed(ctx, route, message, err);
    }
    if (!final) throw this.upstreams.failed(ctx, route, message, new UpstreamProtocolError('the upstream gave no answer'));
    if (this.asksHost(ctx, final)) return { kind: 'stream', requestId, messages: this.bridgeInput(ctx, route, message, final) };
    this.upstreams.observe(ctx, route, message, final);
    return { kind: 'answer', message: final };
  }

  /** Whether an upstream's answer is an input_required result the gateway turns into requests to a 2025 host. */
  private asksHost(ctx: HostContext, final: JSONRPCMessage): boolean {
    return !ctx.modern && isInputRequired((final as { result?: unknown }).result);
  }

  /**
   * Relays an upstream's event stream to the host: its requests and notifications,
   * then the answer, which is the last message the host gets (the transport ends the
   * stream with it). A failure before the answer becomes the answer.
   */
  private async *relayStream(ctx: HostContext, route: Route, message: JSONRPCMessage, messages: AsyncIterable<JSONRPCMessage>): AsyncGenerator<JSONRPCMessage> {
    const hostId = (message as { id: RequestId }).id;
    let answered = false;
    try {
      for await (const msg of messages) {
        if (answered) continue;
        if (!isAnswerTo(hostId, msg)) {
          if (!isTaskStatus(msg)) yield fromUpstream(route.assignmentGuid, msg);
          continue;
        }
        answered = true;
        if (this.asksHost(ctx, msg)) {
          yield* this.bridgeInput(ctx, route, message, msg);
          continue;
        }
        this.upstreams.observe(ctx, route, message, msg);
        yield msg;
      }
      if (!answered) throw new Error('the upstream closed the stream without an answer');
    } catch (err) {
      if (answered) return;
      const e = this.upstreams.failed(ctx, route, message, err);
      yield errorResponse(hostId, e.code, e.message, e.data);
    }
  }

  /**
   * A 2026-07-28 upstream asked for input (bridge-input-rounds.ts): its requests go to
   * the 2025 host on this call's stream, and its final answer ends the stream.
   */
  private async *bridgeInput(ctx: HostContext, route: Route, message: JSONRPCMessage, first: JSONRPCMessage): AsyncGenerator<JSONRPCMessage> {
    const hostId = (message as { id: RequestId }).id;
    let final: JSONRPCMessage;
    try {
      const rounds = inputRounds(
        {
          ...this.askingContext(ctx, route),
          retry: async (retried) => (await this.upstreams.send(ctx, route, retried)).messages,
          relayed: (notification) => fromUpstream(route.assignmentGuid, notification),
        },
        message,
        (first as { result: Record<string, unknown> }).result,
      );
      for (;;) {
        const step = await rounds.next();
        if (step.done) {
          final =
            'final' in step.value ? step.value.final : errorResponse(hostId, ERRORS.upstream, step.value.refused, { inboundServerGuid: route.serverGuid });
          break;
        }
        yield step.value;
      }
    } catch (err) {
      const e = this.upstreams.failed(ctx, route, message, err);
      final = errorResponse(hostId, e.code, e.message, e.data);
    }
    this.upstreams.observe(ctx, route, message, final);
    yield final;
  }
}
