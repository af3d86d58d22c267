import { hkdfSync } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { INPUT_METHODS, toInputRequest, type InputRequest } from './bridge-input-requests.js';
import { RELATED_TASK, renamedInWords, toExtensionTask } from './bridge-core-tasks.js';
import { ERRORS, GatewayCallError, SessionExpired, type HostContext, type Outcome } from './call-model.js';
import { isPlainObject } from '../mcp/request-params.js';
import type { Route } from './catalog.js';
import type { HostRelay } from './host-relay.js';
import { isAnswerTo } from './relay.js';
import { openJson, sealJson } from './sealed.js';

/**
 * A 2026-07-28 host's task on a 2025-11-25 upstream with core tasks, bridged (contract
 * 8.1; the mirror of bridge-core-tasks.ts): the upstream's Task in the shape of the tasks
 * extension, and the extension's tasks/get, which carries the result of an ended task and
 * the requests of an `input_required` one, made of the upstream's tasks/get and
 * tasks/result. A 2025-11-25 task asks for input on its tasks/result stream: this
 * process holds that stream, shows what it asks in tasks/get's `inputRequests`, and
 * sends the host's tasks/update answers to the upstream in the task's session.
 */

/** The time to live the gateway asks for a task (the revision lets the upstream grant less); also how long its session is kept. */
export const CORE_TASK_TTL_MS = 3_600_000;
/** How long tasks/get of an `input_required` task waits for the upstream's tasks/result stream to bring what it asks. */
const INPUT_WAIT_MS = 2_000;
/** How many tasks' tasks/result streams one process holds at most (each holds an upstream connection), and for how long unread. */
const MAX_HELD_STREAMS = 1_000;
const HELD_UNUSED_MS = 3_600_000;

/** A 2026-07-28 host's request context with the upstream session its task lives in, for the route's exchanges. */
export function inTaskSession(ctx: HostContext, route: Route, session: { sessionId?: string; protocolVersion?: string }): HostContext {
  return { ...ctx, modern: { ...ctx.modern!, upstreams: new Map([[route.assignmentGuid, session]]) } };
}

/** A task's tasks/result stream this process reads, and the requests it brought that the host has not answered. */
interface HeldInputs {
  pending: Map<string, InputRequest>;
  reading: Promise<void> | null;
  abort: AbortController;
  /** Settled when the stream brings a request or ends. */
  woken: PromiseWithResolvers<void>;
  lastUsed: number;
}

/** What a key of `inputRequests` holds: the upstream's task and its request's id. */
interface SealedInput {
  t: string;
  i: RequestId;
}

let lastStreamId = 0;

/** The extension's task requests for a 2026-07-28 host's task on a 2025-11-25 upstream. */
export class ExtensionTasksBridge {
  private readonly held = new Map<string, HeldInputs>();
  /** Seals the keys of `inputRequests`: a tasks/update may reach any replica, which sends the answer in the task's session. */
  private readonly key: Buffer;

  constructor(
    private readonly relays: HostRelay,
    gatewaySessionKey: Buffer,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', gatewaySessionKey, Buffer.alloc(0), 'gateway-task-input', 32));
  }

  /**
   * tasks/get, tasks/update or tasks/cancel of the task `upstreamTaskId` (`ctx` in its
   * upstream session): the answer to `requestId` in the extension's shapes.
   */
  async serve(
    ctx: HostContext,
    route: Route,
    requestId: RequestId,
    method: 'tasks/get' | 'tasks/update' | 'tasks/cancel',
    params: Record<string, unknown>,
    upstreamTaskId: string,
    hostTaskId: string,
  ): Promise<Outcome> {
    ctx.record.inboundServerGuid = route.serverGuid;
    const answer = (result: Record<string, unknown>): Outcome => ({
      kind: 'answer',
      message: { jsonrpc: '2.0', id: requestId, result: { resultType: 'complete', ...result } } as JSONRPCMessage,
    });
    const failed = (upstream: JSONRPCMessage): Outcome => ({ kind: 'answer', message: { ...upstream, id: requestId } as JSONRPCMessage });
    try {
      if (method === 'tasks/cancel') {
        this.drop(hostTaskId);
        const cancelled = await this.ask(ctx, route, 'tasks/cancel', upstreamTaskId);
        return 'error' in cancelled ? failed(cancelled) : answer({});
      }
      if (method === 'tasks/update') {
        await this.update(ctx, route, params, upstreamTaskId, hostTaskId);
        return answer({});
      }
      const got = await this.ask(ctx, route, 'tasks/get', upstreamTaskId);
      if ('error' in got) return failed(got);
      const task = toExtensionTask((got as { result: Record<string, unknown> }).result, hostTaskId);
      if (task.status === 'completed' || task.status === 'failed') {
        this.drop(hostTaskId);
        // Ended: tasks/result answers at once. A tool's result (an error result too) completes the task; a protocol error fails it.
        const ended = await this.ask(ctx, route, 'tasks/result', upstreamTaskId);
        if ('error' in ended) {
          const error = (ended as { error: { message?: unknown } }).error;
          const words = typeof error.message === 'string' ? renamedInWords(error.message, upstreamTaskId, hostTaskId) : error.message;
          return answer({ ...task, status: 'failed', error: { ...error, message: words } });
        }
        return answer({ ...task, status: 'completed', result: withoutRelatedTask((ended as { result: Record<string, unknown> }).result) });
      }
      if (task.status === 'input_required') return answer({ ...task, inputRequests: await this.inputRequests(ctx, route, upstreamTaskId, hostTaskId) });
      return answer(task);
    } catch (err) {
      if (err instanceof SessionExpired)
        throw new GatewayCallError(ERRORS.upstream, `Task of server ${route.slug}: the server no longer has the session the task lived in, nor the task.`, {
          inboundServerGuid: route.serverGuid,
        });
      throw err;
    }
  }

  /** Ends every held tasks/result stream (the process is closing). */
  close(): void {
    for (const hostTaskId of [...this.held.keys()]) this.drop(hostTaskId);
  }

  private ask(ctx: HostContext, route: Route, method: 'tasks/get' | 'tasks/result' | 'tasks/cancel', upstreamTaskId: string): Promise<JSONRPCMessage> {
    return this.relays.answerOf(ctx, route, { jsonrpc: '2.0', id: `svcgw-task-${method}`, method, params: { taskId: upstreamTaskId } } as JSONRPCMessage);
  }

  /**
   * What an `input_required` task asks the host: the requests its tasks/result stream
   * brought (the stream opened, and held, if no request waits yet).
   */
  private async inputRequests(ctx: HostContext, route: Route, upstreamTaskId: string, hostTaskId: string): Promise<Record<string, InputRequest>> {
    let held = this.held.get(hostTaskId);
    if (!held) {
      this.makeRoom();
      held = { pending: new Map(), reading: null, abort: new AbortController(), woken: Promise.withResolvers(), lastUsed: Date.now() };
      this.held.set(hostTaskId, held);
    }
    held.lastUsed = Date.now();
    if (held.pending.size === 0) {
      held.reading ??= this.read({ ...ctx, signal: held.abort.signal }, route, upstreamTaskId, hostTaskId, held);
      await Promise.race([held.woken.promise, sleep(INPUT_WAIT_MS, undefined, { ref: false })]);
    }
    return Object.fromEntries(held.pending);
  }

  /**
   * Reads the task's tasks/result stream: each input request it brings waits in `pending`
   * under a sealed key until the host answers; a ping is answered, any other request
   * refused. The stream ends with the task's result (the task is then forgotten here) or
   * when the upstream's timeout cuts it (what waits stays; a later tasks/get reads again).
   */
  private async read(ctx: HostContext, route: Route, upstreamTaskId: string, hostTaskId: string, held: HeldInputs): Promise<void> {
    const id = `svcgw-task-result-${++lastStreamId}`;
    try {
      const messages = await this.relays.messagesOf(ctx, route, {
        jsonrpc: '2.0',
        id,
        method: 'tasks/result',
        params: { taskId: upstreamTaskId },
      } as JSONRPCMessage);
      for await (const message of messages) {
        if (isAnswerTo(id, message)) {
          if (this.held.get(hostTaskId) === held) this.held.delete(hostTaskId);
          break;
        }
        const request = message as { id?: RequestId; method?: string; params?: Record<string, unknown> };
        // Notifications (progress, status) have no way to a 2026-07-28 host outside a request of its own.
        if (request.method === undefined || request.id === undefined) continue;
        if (INPUT_METHODS.has(request.method)) {
          const asked = toInputRequest(request as InputRequest);
          // The extension names the task by the request it answers: the related-task _meta would name it by the upstream's id.
          if (asked.params) asked.params = withoutRelatedTask(asked.params);
          held.pending.set(sealJson(this.key, { t: upstreamTaskId, i: request.id } satisfies SealedInput), asked);
          wake(held);
          continue;
        }
        const reply =
          request.method === 'ping'
            ? { jsonrpc: '2.0', id: request.id, result: {} }
            : {
                jsonrpc: '2.0',
                id: request.id,
                error: { code: ERRORS.methodNotFound, message: `The gateway cannot relay ${request.method} to a host of protocol revision 2026-07-28.` },
              };
        await this.relays.tell(ctx, route, reply as JSONRPCMessage).catch(() => undefined);
      }
    } catch {
      // Cut (the upstream's timeout, the task cancelled, the process closing): what waits stays for the host's answer.
    } finally {
      held.reading = null;
      wake(held);
    }
  }

  /** tasks/update: each answer to the request its key names, sent to the upstream in the task's session. */
  private async update(ctx: HostContext, route: Route, params: Record<string, unknown>, upstreamTaskId: string, hostTaskId: string): Promise<void> {
    const responses = params.inputResponses;
    if (!isPlainObject(responses) || Object.keys(responses).length === 0)
      throw new GatewayCallError(
        ERRORS.invalidParams,
        'tasks/update needs params.inputResponses: the answers, by the keys of the inputRequests tasks/get gave.',
      );
    const answers: { key: string; id: RequestId; result: Record<string, unknown> }[] = [];
    for (const [key, result] of Object.entries(responses)) {
      const input = openJson<SealedInput>(this.key, key);
      if (!input || input.t !== upstreamTaskId)
        throw new GatewayCallError(
          ERRORS.invalidParams,
          'tasks/update: a key of inputResponses names no request of this task (use the keys of its inputRequests).',
        );
      if (!isPlainObject(result))
        throw new GatewayCallError(ERRORS.invalidParams, 'tasks/update: each of inputResponses must be an object, the answer to its request.');
      answers.push({ key, id: input.i, result });
    }
    const held = this.held.get(hostTaskId);
    for (const { key, id, result } of answers) {
      await this.relays.tell(ctx, route, { jsonrpc: '2.0', id, result } as JSONRPCMessage);
      held?.pending.delete(key);
    }
  }

  /** Forgets a task's held stream and what it asked (the task ended, or was cancelled). */
  private drop(hostTaskId: string): void {
    const held = this.held.get(hostTaskId);
    if (!held) return;
    this.held.delete(hostTaskId);
    held.abort.abort();
  }

  /** Drops streams unread for an hour, and the oldest past the limit. */
  private makeRoom(): void {
    const unusedSince = Date.now() - HELD_UNUSED_MS;
    for (const [hostTaskId, held] of this.held) if (held.lastUsed < unusedSince) this.drop(hostTaskId);
    if (this.held.size >= MAX_HELD_STREAMS) this.drop(this.held.keys().next().value!);
  }
}

function wake(held: HeldInputs): void {
  held.woken.resolve();
  held.woken = Promise.withResolvers();
}

/** A result or a request's params without the related-task `_meta` of revision 2025-11-25, which names the task by the upstream's id. */
function withoutRelatedTask(value: Record<string, unknown>): Record<string, unknown> {
  if (!isPlainObject(value._meta) || !(RELATED_TASK in value._meta)) return value;
  const { [RELATED_TASK]: _, ...meta } = value._meta;
  const { _meta: __, ...rest } = value;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}
