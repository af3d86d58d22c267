import { hkdfSync } from 'node:crypto';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { ERRORS, GATEWAY_CAPABILITIES, GatewayCallError, type HostContext, type Outcome } from './call-model.js';
import type { Catalog, Route } from './catalog.js';
import type { HostRelay } from './host-relay.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { isAnswerTo } from './relay.js';
import { openJson, sealJson } from './sealed.js';

/** The tasks extension of revision 2026-07-28 (SEP-2663), as hosts and servers declare it under `capabilities.extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The requests of the extension that name a task; `tasks/list` and `tasks/result` are not in it (the result comes inline in tasks/get). */
export const TASK_METHODS = ['tasks/get', 'tasks/update', 'tasks/cancel'] as const;
export type TaskMethod = (typeof TASK_METHODS)[number];

/** What a host's task id holds: the caller it was issued to, the upstream it lives on, the upstream's own id, the tool. */
interface SealedTask {
  c: string;
  a: string;
  t: string;
  n: string;
}

/** Whether a route's upstream offers the tasks extension (learned at validation, in its features). */
function offersTasks(route: Route): boolean {
  const extensions = route.features?.capabilities.extensions as Record<string, unknown> | undefined;
  return route.features?.protocolVersion === MODERN_REVISION && typeof extensions?.[TASKS_EXTENSION] === 'object';
}

/**
 * What a gateway offers a 2026-07-28 host (its server/discover): the tasks extension
 * only when one of the caller's upstreams offers it, since every task lives on one.
 */
export function modernCapabilities(catalog: Catalog): Record<string, unknown> {
  return catalog.routes.some(offersTasks) ? { ...GATEWAY_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } } : GATEWAY_CAPABILITIES;
}

/**
 * The tasks extension relayed for 2026-07-28 hosts (contract 8.1). An upstream that
 * answers a tools/call with a task (`resultType: 'task'`) keeps the task; the host
 * gets a task id the gateway seals (AES-256-GCM, sealed.ts, a key of its own derived
 * from the gateway's session key) over the caller's connection, the assignment, the
 * upstream's task id and the tool. tasks/get, tasks/update and tasks/cancel open it
 * (a forged id, or one issued to another connection, is refused with -32602) and go
 * to that upstream with its own id; any replica can serve them. The host's capability
 * envelope travels with each request, so the upstream decides on tasks as it would
 * for the host directly. Notifications of task status are not relayed (they ride on
 * an upstream's listen stream, which passes list changes only): hosts poll tasks/get.
 */
export class HostTasks {
  private readonly key: Buffer;

  constructor(
    gatewaySessionKey: Buffer,
    private readonly relays: HostRelay,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', gatewaySessionKey, Buffer.alloc(0), 'gateway-task-id', 32));
  }

  /** A routed tools/call's outcome for a 2026-07-28 host: a task the upstream created is named by the gateway's id. */
  issued(ctx: HostContext, route: Route, tool: string, requestId: RequestId, outcome: Outcome): Outcome {
    return mapResult(outcome, requestId, (result) => {
      if (result.resultType !== 'task' || typeof result.taskId !== 'string') return result;
      const sealed: SealedTask = { c: ctx.caller.connectionGuid, a: route.assignmentGuid, t: result.taskId, n: tool };
      return { ...result, taskId: sealJson(this.key, sealed) };
    });
  }

  /** tasks/get, tasks/update or tasks/cancel of a 2026-07-28 host: to the upstream that holds the task, with its own id. */
  async serve(ctx: HostContext, message: JSONRPCMessage, method: TaskMethod, params: Record<string, unknown>): Promise<Outcome> {
    // Not offered, not served: a 2025 host (whose revision had tasks in core) and a caller none of whose upstreams has tasks.
    if (!ctx.modern || !ctx.catalog.routes.some(offersTasks))
      throw new GatewayCallError(
        ERRORS.methodNotFound,
        `Method not found: ${method} (no server of this gateway offers the ${TASKS_EXTENSION} extension to this host).`,
      );
    const extensions = ctx.modern.identity.clientCapabilities.extensions as Record<string, unknown> | undefined;
    if (typeof extensions?.[TASKS_EXTENSION] !== 'object')
      throw new GatewayCallError(
        ERRORS.missingClientCapability,
        `${method} needs the ${TASKS_EXTENSION} extension: declare it in the request's client capabilities.`,
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      );
    const hostTaskId = params.taskId;
    if (typeof hostTaskId !== 'string' || hostTaskId === '')
      throw new GatewayCallError(ERRORS.invalidParams, `${method} needs params.taskId: the id of a task this gateway returned.`);
    const task = openJson<SealedTask>(this.key, hostTaskId);
    // Forged, altered, or issued to another connection: the same answer, so a host learns nothing of other callers' tasks.
    if (!task || task.c !== ctx.caller.connectionGuid)
      throw new GatewayCallError(ERRORS.invalidParams, `Invalid taskId: it was not issued by this gateway for this connection.`);
    ctx.record.toolName = task.n.slice(0, 500);
    const route = ctx.catalog.byAssignment.get(task.a);
    if (!route) throw new GatewayCallError(ERRORS.invalidParams, `Task of ${task.n}: its server is no longer available on this gateway.`);
    const requestId = (message as { id: RequestId }).id;
    const outcome = await this.relays.relay(ctx, route, { ...message, params: { ...params, taskId: task.t } } as JSONRPCMessage);
    // The upstream names the task by its own id: the host knows it by the gateway's.
    return mapResult(outcome, requestId, (result) => (typeof result.taskId === 'string' ? { ...result, taskId: hostTaskId } : result));
  }
}

/** An outcome with the result of its answer (a JSON answer, or a stream's last message) passed through `map`. */
function mapResult(outcome: Outcome, requestId: RequestId, map: (result: Record<string, unknown>) => Record<string, unknown>): Outcome {
  const mapped = (message: JSONRPCMessage): JSONRPCMessage => {
    const result = (message as { result?: unknown }).result;
    return typeof result === 'object' && result !== null ? ({ ...message, result: map(result as Record<string, unknown>) } as JSONRPCMessage) : message;
  };
  if (outcome.kind === 'answer') return { ...outcome, message: mapped(outcome.message) };
  if (outcome.kind !== 'stream') return outcome;
  const messages = outcome.messages;
  return {
    ...outcome,
    messages: (async function* () {
      for await (const message of messages) yield isAnswerTo(requestId, message) ? mapped(message) : message;
    })(),
  };
}
