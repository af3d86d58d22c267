import { randomBytes } from 'node:crypto';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { isInputRequired, missingCapability, toServerRequest, type InputRequest } from './bridge-input-requests.js';
import { isAnswerTo } from './relay.js';

/**
 * Bridging a 2026-07-28 upstream's `input_required` result to a 2025 host (contract
 * 8.1): the embedded requests go to the host as ordinary server-to-client requests
 * on the stream of its call, the host's answers are collected, and the upstream is
 * asked again with them and its `requestState`, round after round, until it gives
 * a result. The host's answers are POSTs of their own, which reach this process's
 * waiting round through InputWaiters.
 */

/** The most rounds one call may take (as the SDK clients' own default). */
export const MAX_INPUT_ROUNDS = 10;
/** Pacing before retrying a round that asks nothing (a requestState-only, load-shedding answer). */
const STATE_ONLY_PACING_MS = 250;
/** Ids of bridged requests: they name a round waiting in one process, not an upstream (compare relay.ts's `svcgw:`). */
const PREFIX = 'svcgw-input:';

/** A round's requests, waiting for the host's answers. */
class WaitingRound {
  readonly id = randomBytes(9).toString('base64url');
  private readonly answers = new Map<number, JSONRPCMessage>();
  private settle: (() => void) | null = null;

  constructor(
    readonly count: number,
    readonly serverGuid: string,
    /** The host's connection: another connection's answer is not taken, even with the right id. */
    readonly connectionGuid: string,
  ) {}

  idOf(index: number): string {
    return `${PREFIX}${this.id}:${index}`;
  }

  /** Takes one answer; false when it is not one this round waits for (a repeat, an index out of range). */
  take(index: number, message: JSONRPCMessage): boolean {
    if (!Number.isInteger(index) || index < 0 || index >= this.count || this.answers.has(index)) return false;
    this.answers.set(index, message);
    if (this.answers.size === this.count) this.settle?.();
    return true;
  }

  /** The answers in request order, once all have come; rejects with why not, at the deadline or when the host leaves. */
  wait(timeoutMs: number, signal: AbortSignal): Promise<JSONRPCMessage[]> {
    const collect = () => Array.from({ length: this.count }, (_, i) => this.answers.get(i)!);
    if (this.answers.size === this.count) return Promise.resolve(collect());
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.settle = null;
      };
      const onAbort = () => {
        done();
        // The host's cancellation says so (host-cancellations.ts); a closed connection does not.
        reject(signal.reason instanceof Error ? signal.reason : new Error('the host went away while the server waited for its input'));
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `the host's answers to the server's requests did not reach this gateway process within ${timeoutMs} ms ` +
              '(with several replicas, the requests of one session must reach the same replica while a server waits for input)',
          ),
        );
      }, timeoutMs);
      timer.unref();
      signal.addEventListener('abort', onAbort, { once: true });
      this.settle = () => {
        done();
        resolve(collect());
      };
    });
  }
}

/** The rounds of this process waiting for a 2025 host's answers. */
export class InputWaiters {
  private readonly rounds = new Map<string, WaitingRound>();

  open(count: number, serverGuid: string, connectionGuid: string): WaitingRound {
    const round = new WaitingRound(count, serverGuid, connectionGuid);
    this.rounds.set(round.id, round);
    return round;
  }

  close(round: WaitingRound): void {
    this.rounds.delete(round.id);
  }

  /** Whether a host's message answers a bridged request (whether or not a round still waits for it here). */
  static answers(message: JSONRPCMessage): boolean {
    const id = (message as { id?: unknown }).id;
    return typeof id === 'string' && id.startsWith(PREFIX);
  }

  /** Hands a host's answer to its round: the upstream it is for, or null when no round of this process waits for it. */
  deliver(message: JSONRPCMessage, connectionGuid: string): { serverGuid: string } | null {
    const id = String((message as { id?: unknown }).id).slice(PREFIX.length);
    const colon = id.lastIndexOf(':');
    const round = this.rounds.get(id.slice(0, colon));
    if (!round || round.connectionGuid !== connectionGuid || !round.take(Number(id.slice(colon + 1)), message)) return null;
    return { serverGuid: round.serverGuid };
  }
}

/** What the rounds of one call need from the proxy. */
export interface InputRoundsContext {
  slug: string;
  serverGuid: string;
  connectionGuid: string;
  /** What the host declared at initialize; null for a host without a session (it can be asked nothing). */
  hostCapabilities: Record<string, unknown> | null;
  signal: AbortSignal;
  /** How long one round waits for the host's answers. */
  timeoutMs: number;
  waiters: InputWaiters;
  /** Sends the request again to the upstream; its messages, the answer last. */
  retry(message: JSONRPCMessage): Promise<AsyncIterable<JSONRPCMessage>>;
  /** An upstream's notification as the host sees it. */
  relayed(message: JSONRPCMessage): JSONRPCMessage;
}

/** What asking the host gave: its answers by the upstream's keys, or why there are none (said to the host). */
export type HostAnswers = { inputResponses: Record<string, unknown> } | { refused: string };

/**
 * Asks a 2025 host what an upstream's `inputRequests` ask (the requests of an
 * input_required result, or of an input_required task): yields them as server-to-client
 * requests for the host's stream, and returns the host's results by the upstream's keys.
 */
export async function* askHost(
  x: Omit<InputRoundsContext, 'retry' | 'relayed'>,
  entries: [string, InputRequest][],
): AsyncGenerator<JSONRPCMessage, HostAnswers> {
  if (!x.hostCapabilities)
    return {
      refused: `Server ${x.slug} needs input from the host (${entries[0]![1].method}), which a request without a session cannot give: initialize first.`,
    };
  for (const [, entry] of entries) {
    const missing = missingCapability(entry, x.hostCapabilities);
    if (missing) return { refused: `Server ${x.slug} needs ${entry.method} from the host, which did not declare the ${missing} capability.` };
  }
  const waiting = x.waiters.open(entries.length, x.serverGuid, x.connectionGuid);
  let answers: JSONRPCMessage[];
  try {
    for (const [i, [, entry]] of entries.entries()) {
      const asked = toServerRequest(entry);
      yield { jsonrpc: '2.0', id: waiting.idOf(i), method: asked.method, ...(asked.params ? { params: asked.params } : {}) } as JSONRPCMessage;
    }
    answers = await waiting.wait(x.timeoutMs, x.signal);
  } catch (err) {
    return { refused: `Server ${x.slug} needs input from the host, but ${err instanceof Error ? err.message : String(err)}.` };
  } finally {
    x.waiters.close(waiting);
  }
  const inputResponses: Record<string, unknown> = {};
  for (const [i, [key, entry]] of entries.entries()) {
    const answer = answers[i] as { result?: unknown; error?: { message?: string } };
    if (answer.error || typeof answer.result !== 'object' || answer.result === null)
      return { refused: `The host refused ${entry.method} for server ${x.slug}: ${String(answer.error?.message ?? 'no result')}.` };
    inputResponses[key] = answer.result;
  }
  return { inputResponses };
}

/** How the rounds end: the upstream's final answer, or why the gateway could not get one (said to the host). */
export type InputRoundsEnd = { final: JSONRPCMessage } | { refused: string };

/**
 * Runs the rounds of one call whose upstream answered `first` (an input_required
 * result): yields what goes to the host (the bridged requests, the upstream's
 * notifications), returns how it ended.
 */
export async function* inputRounds(
  x: InputRoundsContext,
  request: JSONRPCMessage,
  first: Record<string, unknown>,
): AsyncGenerator<JSONRPCMessage, InputRoundsEnd> {
  const hostId = (request as { id: RequestId }).id;
  const params = ((request as { params?: Record<string, unknown> }).params ?? {}) as Record<string, unknown>;
  let result = first;
  for (let round = 1; ; round++) {
    if (round > MAX_INPUT_ROUNDS) return { refused: `Server ${x.slug} still required input after ${MAX_INPUT_ROUNDS} rounds.` };
    const entries = Object.entries((result.inputRequests ?? {}) as Record<string, InputRequest>);
    const requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
    let inputResponses: Record<string, unknown> | undefined;
    if (entries.length === 0) {
      if (requestState === undefined) return { refused: `Server ${x.slug} answered input_required with nothing to ask and no requestState.` };
      await new Promise((resolve) => setTimeout(resolve, STATE_ONLY_PACING_MS));
    } else {
      const asked = yield* askHost(x, entries);
      if ('refused' in asked) return asked;
      inputResponses = asked.inputResponses;
    }
    const retried = {
      ...request,
      params: { ...params, ...(inputResponses ? { inputResponses } : {}), ...(requestState !== undefined ? { requestState } : {}) },
    } as JSONRPCMessage;
    let final: JSONRPCMessage | null = null;
    for await (const message of await x.retry(retried)) {
      if (isAnswerTo(hostId, message)) final = message;
      else if (!final && (message as { method?: string }).method?.startsWith('notifications/')) yield x.relayed(message);
    }
    if (!final) return { refused: `Server ${x.slug} gave no answer.` };
    const next = (final as { result?: unknown }).result;
    if (!isInputRequired(next)) return { final };
    result = next as Record<string, unknown>;
  }
}
