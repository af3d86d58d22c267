import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { InputRequest } from './bridge-input-requests.js';
import { askHost, MAX_INPUT_ROUNDS, type InputRoundsContext } from './bridge-input-rounds.js';
import { ERRORS, errorResponse, GatewayCallError, type HostContext, type Outcome } from './call-model.js';
import type { Route } from './catalog.js';
import type { HostRelay } from './host-relay.js';
import type { TaskMethod } from './host-tasks.js';

/**
 * A 2025-11-25 host's task on a 2026-07-28 upstream (the tasks extension), bridged
 * (contract 8.1): the upstream's task in the shape of revision 2025-11-25, and
 * tasks/result, which revision 2026-07-28 does not have (its tasks/get carries the
 * result), as a 2025-11-25 host expects it: held until the task ends, the requests of
 * an input_required task asked on its stream and answered with tasks/update. What both
 * bridging directions share is here too: a task's shape in either revision, and an
 * upstream's task id renamed in its words (bridge-extension-tasks.ts is the other way).
 */

/** Where revision 2025-11-25 names the task a message is about, in `_meta`. */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/**
 * Words of an upstream (an error's message) with its task id replaced by the host's: an
 * upstream may name its task there. Only an id long enough not to be part of other
 * words (the SDKs' are 32 hex digits).
 */
export function renamedInWords(words: string, upstreamId: string, hostId: string): string {
  return upstreamId.length >= 8 && words.includes(upstreamId) ? words.replaceAll(upstreamId, hostId) : words;
}

/** The pace of tasks/result's polling when the upstream suggests none, and its bounds when it does. */
const DEFAULT_POLL_MS = 500;
const MIN_POLL_MS = 50;
const MAX_POLL_MS = 5_000;
/** The longest tasks/result waits for a task to end: the host may ask again (a host in a session that leaves does not end the wait). */
const MAX_RESULT_WAIT_MS = 3_600_000;

/** Where each revision puts a task's time to live and its polling pace (the other fields are named alike). */
interface TaskFieldNames {
  ttl: string;
  pollInterval: string;
}
const CORE_TASK_FIELDS: TaskFieldNames = { ttl: 'ttl', pollInterval: 'pollInterval' };
const EXTENSION_TASK_FIELDS: TaskFieldNames = { ttl: 'ttlMs', pollInterval: 'pollIntervalMs' };

/** A task of one revision as the other's, named `hostTaskId`: the fields both have, the two that differ renamed. */
function convertTask(task: Record<string, unknown>, hostTaskId: string, from: TaskFieldNames, to: TaskFieldNames): Record<string, unknown> {
  const now = new Date().toISOString();
  const ttl = task[from.ttl];
  const pollInterval = task[from.pollInterval];
  return {
    taskId: hostTaskId,
    status: task.status,
    [to.ttl]: typeof ttl === 'number' ? ttl : null,
    createdAt: typeof task.createdAt === 'string' ? task.createdAt : now,
    lastUpdatedAt: typeof task.lastUpdatedAt === 'string' ? task.lastUpdatedAt : now,
    ...(typeof pollInterval === 'number' ? { [to.pollInterval]: pollInterval } : {}),
    ...(typeof task.statusMessage === 'string' ? { statusMessage: task.statusMessage } : {}),
  };
}

/** A 2026-07-28 task (a CreateTaskResult, or tasks/get's task) as a 2025-11-25 Task named `hostTaskId`. */
export const toCoreTask = (task: Record<string, unknown>, hostTaskId: string): Record<string, unknown> =>
  convertTask(task, hostTaskId, EXTENSION_TASK_FIELDS, CORE_TASK_FIELDS);

/** A 2025-11-25 Task (a CreateTaskResult's `task`, or tasks/get's result) as the extension's task named `hostTaskId`. */
export const toExtensionTask = (task: Record<string, unknown>, hostTaskId: string): Record<string, unknown> =>
  convertTask(task, hostTaskId, CORE_TASK_FIELDS, EXTENSION_TASK_FIELDS);

/** What tasks/result needs: asking the host (as an input round does), and the upstream's tasks/get and tasks/update. */
export interface TaskResultContext extends Omit<InputRoundsContext, 'retry' | 'relayed'> {
  /** The upstream's answer to tasks/get for the task. */
  get(): Promise<JSONRPCMessage>;
  /** The upstream's answer to tasks/update with the host's answers. */
  update(inputResponses: Record<string, unknown>): Promise<JSONRPCMessage>;
}

/**
 * tasks/result of a 2025-11-25 host for a task on a 2026-07-28 upstream: tasks/get at
 * the task's pace until it ends, what an input_required task asks yielded for the host's
 * stream (its answers sent with tasks/update); returns the answer to `requestId`: the
 * tool's result with the related-task `_meta`, or the task's error.
 */
export async function* taskResult(x: TaskResultContext, requestId: RequestId, hostTaskId: string): AsyncGenerator<JSONRPCMessage, JSONRPCMessage> {
  const refused = (message: string) => errorResponse(requestId, ERRORS.upstream, message, { inboundServerGuid: x.serverGuid });
  const upstreamError = (answer: JSONRPCMessage) => ({ ...answer, id: requestId }) as JSONRPCMessage;
  const deadline = Date.now() + MAX_RESULT_WAIT_MS;
  for (let rounds = 0; ;) {
    const got = await x.get();
    if ('error' in got) return upstreamError(got);
    const task = (got as { result: Record<string, unknown> }).result;
    // A tool's error ends a task as `failed` with its result (isError), or `completed`: either way the host gets the result.
    if ((task.status === 'completed' || task.status === 'failed') && typeof task.result === 'object' && task.result !== null) {
      const { resultType: _, ...result } = task.result as Record<string, unknown>;
      const meta = { ...(result._meta as Record<string, unknown> | undefined), [RELATED_TASK]: { taskId: hostTaskId } };
      return { jsonrpc: '2.0', id: requestId, result: { ...result, _meta: meta } } as JSONRPCMessage;
    }
    if (task.status === 'failed') {
      const error = (task.error ?? {}) as { code?: unknown; message?: unknown; data?: Record<string, unknown> };
      return errorResponse(
        requestId,
        typeof error.code === 'number' ? error.code : ERRORS.upstream,
        typeof error.message === 'string' ? error.message : `Task of server ${x.slug} failed.`,
        error.data,
      );
    }
    if (task.status === 'cancelled') return refused(`Task of server ${x.slug} was cancelled.`);
    if (task.status === 'completed') return refused(`Task of server ${x.slug} completed without a result.`);
    const entries = Object.entries((task.inputRequests ?? {}) as Record<string, InputRequest>);
    if (task.status === 'input_required' && entries.length > 0) {
      if (++rounds > MAX_INPUT_ROUNDS) return refused(`Task of server ${x.slug} still required input after ${MAX_INPUT_ROUNDS} rounds.`);
      const asked = yield* askHost(x, entries);
      if ('refused' in asked) return refused(asked.refused);
      const updated = await x.update(asked.inputResponses);
      if ('error' in updated) return upstreamError(updated);
      continue;
    }
    const pace = typeof task.pollIntervalMs === 'number' ? Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, task.pollIntervalMs)) : DEFAULT_POLL_MS;
    if (Date.now() + pace > deadline)
      return refused(`Task of server ${x.slug} had not ended after ${MAX_RESULT_WAIT_MS / 60_000} minutes: ask tasks/result again.`);
    const paused = await sleep(pace, true, { signal: x.signal }).catch(() => false);
    if (!paused) return refused('the host went away while the gateway waited for the task to end');
  }
}

/**
 * A 2025-11-25 host's request about its task on a 2026-07-28 upstream (`ctx` declares
 * the extension to it): tasks/get as the upstream's, in the 2025-11-25 shape;
 * tasks/cancel, which the upstream acknowledges, answered with the task as it is
 * then; tasks/result held until the task ends, on a stream.
 */
export async function serveBridged(
  relays: HostRelay,
  ctx: HostContext,
  route: Route,
  requestId: RequestId,
  method: TaskMethod,
  upstreamTaskId: string,
  hostTaskId: string,
): Promise<Outcome> {
  const ask = (asked: 'tasks/get' | 'tasks/cancel' | 'tasks/update', extra: Record<string, unknown> = {}) =>
    relays.answerOf(ctx, route, {
      jsonrpc: '2.0',
      id: `svcgw-task-${asked}`,
      method: asked,
      params: { taskId: upstreamTaskId, ...extra },
    } as JSONRPCMessage);
  const answer = (upstream: JSONRPCMessage): Outcome => {
    const result = (upstream as { result?: Record<string, unknown> }).result;
    const message = result ? { jsonrpc: '2.0', id: requestId, result: toCoreTask(result, hostTaskId) } : { ...upstream, id: requestId };
    return { kind: 'answer', message: message as JSONRPCMessage };
  };
  ctx.record.inboundServerGuid = route.serverGuid;
  if (method === 'tasks/get') return answer(await ask('tasks/get'));
  if (method === 'tasks/cancel') {
    const cancelled = await ask('tasks/cancel');
    return answer('error' in cancelled ? cancelled : await ask('tasks/get'));
  }
  // On the stream, a failed exchange is the answer (the host already has the stream's status).
  const answered = (exchange: Promise<JSONRPCMessage>) =>
    exchange.catch((err: unknown) => {
      const e = err instanceof GatewayCallError ? err : new GatewayCallError(ERRORS.upstream, `Server ${route.slug} could not be reached.`);
      return errorResponse(requestId, e.code, e.message, e.data);
    });
  const waiting = taskResult(
    {
      ...relays.askingContext(ctx, route),
      get: () => answered(ask('tasks/get')),
      update: (inputResponses) => answered(ask('tasks/update', { inputResponses })),
    },
    requestId,
    hostTaskId,
  );
  return { kind: 'stream', requestId, messages: untilReturned(waiting) };
}

/** A generator's yields and then what it returns: the messages of a stream whose answer comes last. */
async function* untilReturned(messages: AsyncGenerator<JSONRPCMessage, JSONRPCMessage>): AsyncGenerator<JSONRPCMessage> {
  yield yield* messages;
}
