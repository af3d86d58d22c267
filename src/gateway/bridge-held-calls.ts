import { randomBytes } from 'node:crypto';
import { ProtocolError, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/server';
import type { GatewayCaller } from './access.js';
import { INPUT_METHODS, isInputRequired, missingCapability, toInputRequest } from './bridge-input-requests.js';
import type { RequestStateBinding, RequestStateContent, RequestStates } from './bridge-request-state.js';
import type { CallRecord } from './call-record.js';
import type { Catalog } from './catalog.js';
import type { HostIdentity } from './modern-upstream.js';
import { ERRORS, errorResponse, type HostContext } from './call-model.js';
import { settle } from './call-outcome.js';
import type { GatewayProxy } from './proxy.js';
import { isAnswerTo } from './relay.js';
import type { TraceContext } from './trace-context.js';

/**
 * The id the proxied message of a 2026-07-28 host's request carries (the SDK holds the
 * host's own): unique in this process, since the calls of one connection share an
 * upstream session (upstream-session-pool.ts), where ids must not repeat while in flight.
 */
let lastProxiedId = 0;
const nextProxiedId = (): number => (lastProxiedId = (lastProxiedId % Number.MAX_SAFE_INTEGER) + 1);
/** How many calls one process holds open for hosts' input at most: each holds an upstream connection. */
const MAX_HELD_CALLS = 1_000;
/** How long a wrapped upstream requestState is accepted back (the upstream still judges its own state). */
const UPSTREAM_STATE_TTL_MS = 60 * 60_000;

/** One request of a 2026-07-28 host, a first leg or a retry with the input it was asked for. */
export interface ModernLeg {
  caller: GatewayCaller;
  catalog: Catalog;
  trace: TraceContext;
  /** Aborted when this leg's HTTP request goes away. */
  signal: AbortSignal;
  /** The call log's row of this leg, made only when the leg is a call of its own (a retry that resumes a held call writes none). */
  record: (message: JSONRPCMessage) => CallRecord;
  identity: HostIdentity;
  method: string;
  /** The request's params, without the retry fields (the SDK lifts them off). */
  params: Record<string, unknown>;
  requestState: string | undefined;
  inputResponses: Record<string, unknown> | undefined;
  /** Sends a notification (progress, logging) to the host on this leg's response. */
  notify(notification: JSONRPCMessage): Promise<void>;
}

/** A 2025 upstream's call kept open while the host answers the upstream's request. */
interface HeldCall {
  /** Named when first held (most calls never are: their answer comes straight back). */
  id: string | null;
  /** The id of the call's message to the upstream, which its answer carries. */
  proxiedId: number;
  ctx: HostContext;
  abort: AbortController;
  messages: AsyncIterator<JSONRPCMessage>;
  binding: RequestStateBinding;
  round: number;
  /** The upstream's request this round asks the host (its key in inputRequests, its relayed id). */
  pending: { key: string; id: RequestId } | null;
  deadline: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Serves a 2026-07-28 host's requests through the proxy, bridging what an upstream
 * needs from the host (contract 8.1):
 *
 * - A 2025 upstream's server-to-client request (elicitation, sampling, roots) during
 *   a call becomes an `input_required` result carrying it, with a sealed
 *   `requestState` (bridge-request-state.ts). The upstream's call stays open in this
 *   process, in the upstream session opened for it, until the host's retry brings
 *   the answer (which goes to the upstream in that session) or the hold ends (the
 *   upstream timeout): one request per round, so an upstream asking several things
 *   takes several rounds. A retry that reaches another process is told so.
 * - A 2026-07-28 upstream's own `input_required` passes to the host with its
 *   requestState sealed inside the gateway's, and the host's retry goes to the
 *   upstream with the upstream's state and the host's answers.
 *
 * The call's row is the first leg's, written once when the call ends (its final
 * answer, or why it ended); a retry that resumes a held call writes none, a retry
 * that is refused writes its own.
 */
export class HeldCalls {
  private readonly held = new Map<string, HeldCall>();
  /** Which process holds a call (in its requestState). */
  private readonly replica = randomBytes(6).toString('hex');

  constructor(
    private readonly proxy: GatewayProxy,
    private readonly states: RequestStates,
    /** How long a call waits for the host's input, counted from its first request (the upstream timeout cuts it then anyway). */
    private readonly holdMs: number,
  ) {}

  async serve(leg: ModernLeg): Promise<Record<string, unknown>> {
    const binding: RequestStateBinding = { connectionGuid: leg.caller.connectionGuid, method: leg.method, target: targetOf(leg.method, leg.params) };
    if (leg.requestState === undefined) return this.call(leg, binding, leg.inputResponses ? { inputResponses: leg.inputResponses } : {});
    const opened = this.states.open(leg.requestState, binding);
    if (!opened.ok) throw this.refuse(leg, binding, ERRORS.invalidParams, `Invalid requestState: ${opened.reason}.`);
    if (opened.content.kind === 'held') return this.resume(leg, binding, opened.content);
    return this.call(leg, binding, { ...(leg.inputResponses ? { inputResponses: leg.inputResponses } : {}), requestState: opened.content.state });
  }

  /** Ends every held call (the process is closing). */
  close(): void {
    for (const call of [...this.held.values()]) this.abandon(call, 'the gateway process closed while the call waited for the host');
  }

  /** A new call through the proxy (`retryFields`: what a 2026-07-28 upstream asked to get back). */
  private async call(leg: ModernLeg, binding: RequestStateBinding, retryFields: Record<string, unknown>): Promise<Record<string, unknown>> {
    const proxiedId = nextProxiedId();
    const message = { jsonrpc: '2.0', id: proxiedId, method: leg.method, params: { ...leg.params, ...retryFields } } as JSONRPCMessage;
    const abort = new AbortController();
    const ctx: HostContext = {
      caller: leg.caller,
      catalog: leg.catalog,
      session: null,
      trace: leg.trace,
      signal: abort.signal,
      record: leg.record(message),
      modern: { identity: leg.identity, upstreams: new Map() },
    };
    const unlink = follow(leg.signal, abort);
    let reply;
    try {
      reply = await this.proxy.handle(ctx, message);
    } finally {
      unlink();
    }
    if (reply.kind === 'json') return this.resultOf(reply.message, binding);
    if (reply.kind !== 'stream') throw new ProtocolError(ERRORS.internal, 'The gateway got no answer for this request.');
    const call: HeldCall = {
      id: null,
      proxiedId,
      ctx,
      abort,
      messages: reply.messages[Symbol.asyncIterator](),
      binding,
      round: 0,
      pending: null,
      deadline: Date.now() + this.holdMs,
      timer: undefined,
    };
    return this.drive(call, leg);
  }

  /** A retry that brings the answer a held call waits for. */
  private async resume(leg: ModernLeg, binding: RequestStateBinding, state: Extract<RequestStateContent, { kind: 'held' }>): Promise<Record<string, unknown>> {
    const call = this.held.get(state.call);
    if (!call) {
      const elsewhere = state.replica !== this.replica;
      throw this.refuse(
        leg,
        binding,
        ERRORS.upstream,
        elsewhere
          ? 'The upstream call waiting for this input is held by another gateway replica: a retry must reach the replica that answered input_required (sticky routing), or send the request again without requestState.'
          : 'No upstream call waits for this input any more (it was answered already, or it ended): send the request again without requestState.',
        { reason: elsewhere ? 'held_by_another_replica' : 'no_longer_waiting' },
      );
    }
    if (call.round !== state.round)
      throw this.refuse(leg, binding, ERRORS.invalidParams, 'Invalid requestState: it is of an earlier round of this call; use the latest one.');
    this.release(call);
    const pending = call.pending!;
    const response = leg.inputResponses?.[pending.key];
    await this.answerUpstream(
      call,
      typeof response === 'object' && response !== null
        ? ({ jsonrpc: '2.0', id: pending.id, result: response } as JSONRPCMessage)
        : ({ jsonrpc: '2.0', id: pending.id, error: { code: ERRORS.invalidParams, message: `The host sent no answer for ${pending.key}.` } } as JSONRPCMessage),
    );
    return this.drive(call, leg);
  }

  /** Reads the call's messages until its answer, or until the upstream asks the host something (the call is then held). */
  private async drive(call: HeldCall, leg: ModernLeg): Promise<Record<string, unknown>> {
    const unlink = follow(leg.signal, call.abort);
    try {
      for (;;) {
        const step = await call.messages.next();
        if (step.done) throw new ProtocolError(ERRORS.internal, 'The gateway got no answer for this request.');
        const message = step.value as { id?: RequestId; method?: string; params?: Record<string, unknown> };
        // The answer ends the call's stream (its row is written, the rest of the upstream's stream is read by call-outcome.ts).
        if (isAnswerTo(call.proxiedId, step.value)) return this.resultOf(step.value, call.binding);
        if (message.method !== undefined && message.id !== undefined) {
          const asked = await this.upstreamRequest(call, message as { id: RequestId; method: string; params?: Record<string, unknown> });
          if (asked) return asked;
        } else if (message.method === 'notifications/progress') {
          // The call's progress goes to the leg serving it now, under that leg's own token (a retry names a new one, or none).
          const token = (leg.params._meta as { progressToken?: unknown } | undefined)?.progressToken;
          if (token !== undefined)
            await leg.notify({ ...step.value, params: { ...message.params, progressToken: token } } as JSONRPCMessage).catch(() => undefined);
        } else if (message.method === 'notifications/message') {
          await leg.notify(step.value).catch(() => undefined);
        }
      }
    } finally {
      unlink();
    }
  }

  /** An upstream's request during the call: asked of the host (the call is held), or answered here. */
  private async upstreamRequest(
    call: HeldCall,
    request: { id: RequestId; method: string; params?: Record<string, unknown> },
  ): Promise<Record<string, unknown> | null> {
    const fail = (code: number, text: string) =>
      this.answerUpstream(call, { jsonrpc: '2.0', id: request.id, error: { code, message: text } } as JSONRPCMessage);
    if (request.method === 'ping') {
      await this.answerUpstream(call, { jsonrpc: '2.0', id: request.id, result: {} } as JSONRPCMessage);
      return null;
    }
    if (!INPUT_METHODS.has(request.method)) {
      await fail(ERRORS.methodNotFound, `The gateway cannot relay ${request.method} to a host of protocol revision 2026-07-28.`);
      return null;
    }
    const missing = missingCapability(request, call.ctx.modern!.identity.clientCapabilities);
    if (missing) {
      await fail(ERRORS.invalidRequest, `The host did not declare the ${missing} capability.`);
      return null;
    }
    return this.hold(call, request);
  }

  /** Holds the call for the host's answer to `request`: the input_required result the host gets. */
  private hold(call: HeldCall, request: { id: RequestId; method: string; params?: Record<string, unknown> }): Record<string, unknown> {
    if (this.held.size >= MAX_HELD_CALLS) {
      this.abandon(call, `too many calls wait for hosts' input in this gateway process (${MAX_HELD_CALLS})`);
      throw new ProtocolError(
        ERRORS.upstream,
        'The server needs input from the host, but too many calls already wait for input at this gateway: try again shortly.',
      );
    }
    call.round += 1;
    const key = `input-${call.round}`;
    call.pending = { key, id: request.id };
    call.id ??= randomBytes(12).toString('base64url');
    this.held.set(call.id, call);
    const reason = `the host did not send the input the server asked for within ${this.holdMs} ms`;
    call.timer = setTimeout(() => this.abandon(call, reason), Math.max(0, call.deadline - Date.now()));
    call.timer.unref();
    const requestState = this.states.seal(call.binding, { kind: 'held', call: call.id, replica: this.replica, round: call.round }, call.deadline);
    return { resultType: 'input_required', inputRequests: { [key]: toInputRequest(request) }, requestState };
  }

  private release(call: HeldCall): void {
    if (call.id) this.held.delete(call.id);
    clearTimeout(call.timer);
  }

  /** Ends a held call the host did not come back for: its row says why, its upstream exchange is cut. */
  private abandon(call: HeldCall, reason: string): void {
    this.release(call);
    settle(call.ctx.record, { kind: 'ended', failure: reason });
    call.abort.abort(new Error(reason));
    void drain(call.messages);
  }

  private async answerUpstream(call: HeldCall, message: JSONRPCMessage): Promise<void> {
    // A failure here surfaces as the call's own failure (its stream ends in an error), which the host then gets.
    await this.proxy.answerUpstream(call.ctx, message).catch(() => undefined);
  }

  /** The answer as the SDK renders it: an error as a protocol error; an upstream's input_required with its state sealed in ours. */
  private resultOf(message: JSONRPCMessage, binding: RequestStateBinding): Record<string, unknown> {
    const answer = message as { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
    if (answer.error) throw new ProtocolError(answer.error.code, answer.error.message, answer.error.data);
    if (!answer.result) throw new ProtocolError(ERRORS.internal, 'The gateway got no answer for this request.');
    const result = answer.result;
    if (!isInputRequired(result) || typeof result.requestState !== 'string') return result;
    return { ...result, requestState: this.states.seal(binding, { kind: 'upstream', state: result.requestState }, Date.now() + UPSTREAM_STATE_TTL_MS) };
  }

  /** A refused retry: its own row says why, and the host gets the error. */
  private refuse(leg: ModernLeg, binding: RequestStateBinding, code: number, text: string, data?: Record<string, unknown>): ProtocolError {
    const id = nextProxiedId();
    const message = { jsonrpc: '2.0', id, method: leg.method, params: leg.params } as JSONRPCMessage;
    const record = leg.record(message);
    record.toolName = binding.target.slice(0, 500);
    settle(record, { kind: 'answer', message: errorResponse(id, code, text, data) });
    return new ProtocolError(code, text, data);
  }
}

/** What a request names (a tool, a prompt, a resource), which its requestState is bound to. */
function targetOf(method: string, params: Record<string, unknown>): string {
  const named = method === 'resources/read' ? params.uri : params.name;
  return typeof named === 'string' ? named : '';
}

/** Aborts `controller` when `signal` aborts, until the returned function is called. */
function follow(signal: AbortSignal, controller: AbortController): () => void {
  if (signal.aborted) {
    controller.abort(signal.reason);
    return () => undefined;
  }
  // A listener object, not a named closure (docs/decisions.md, "No named closure made per call on a hot path").
  const onAbort = {
    handleEvent() {
      controller.abort(signal.reason);
    },
  };
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

async function drain(messages: AsyncIterator<JSONRPCMessage>): Promise<void> {
  try {
    while (!(await messages.next()).done);
  } catch {
    /* the call has ended: its row is written */
  }
}
