import { hkdfSync } from 'node:crypto';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { ERRORS, GATEWAY_CAPABILITIES, GatewayCallError, type HostContext, type Outcome } from './call-model.js';
import type { Catalog, Route } from './catalog.js';
import { isPlainObject, taskAugmentationProblem } from '../mcp/request-params.js';
import { RELATED_TASK, renamedInWords, serveBridged, toCoreTask, toExtensionTask } from './bridge-core-tasks.js';
import { CORE_TASK_TTL_MS, ExtensionTasksBridge, inTaskSession } from './bridge-extension-tasks.js';
import type { HostRelay } from './host-relay.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { isAnswerTo } from './relay.js';
import { openJson, sealJson } from './sealed.js';
import type { GatewaySession } from './session-id.js';
import { TtlCache } from './ttl-cache.js';

/** The tasks extension of revision 2026-07-28 (SEP-2663), as hosts and servers declare it under `capabilities.extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The revision whose core has tasks (SEP-1686): a `tasks` capability, `params.task` on tools/call, tasks/get, tasks/result, tasks/cancel. */
export const CORE_TASKS_REVISION = '2025-11-25';

/** What the gateway offers a 2025-11-25 host when one of its upstreams has tasks: task-augmented tools/call and tasks/cancel; no tasks/list (docs/gateway.md). */
const CORE_TASKS_CAPABILITY = { cancel: {}, requests: { tools: { call: {} } } };

/** The requests that name a task, in either era: the extension has tasks/update, 2025-11-25's core tasks/result. */
export const TASK_METHODS = ['tasks/get', 'tasks/update', 'tasks/cancel', 'tasks/result'] as const;
export type TaskMethod = (typeof TASK_METHODS)[number];
const MODERN_METHODS: readonly TaskMethod[] = ['tasks/get', 'tasks/update', 'tasks/cancel'];
const CORE_METHODS: readonly TaskMethod[] = ['tasks/get', 'tasks/result', 'tasks/cancel'];

/**
 * What a host's task id holds: the caller it was issued to, the upstream it lives on,
 * the upstream's own id, the tool; for a 2025-11-25 host's task also the host's session,
 * since the task lives in the upstream session the gateway opened for it; for a
 * 2026-07-28 host's task on a 2025-11-25 upstream the upstream session opened for the
 * task (bridge-extension-tasks.ts).
 */
interface SealedTask {
  c: string;
  a: string;
  t: string;
  n: string;
  s?: string;
  u?: string;
}

/** How long, and how many, host ids of 2025-11-25 tasks a process keeps for their status notifications. */
const TASK_IDS_KEPT_MS = 3_600_000;
const MAX_TASK_IDS_KEPT = 10_000;

/**
 * An upstream's notification of a task's status (2025-11-25's `notifications/tasks/status`),
 * which names the task by the upstream's id (HostTasks.statusFor).
 */
export const isTaskStatus = (message: JSONRPCMessage): boolean => (message as { method?: unknown }).method === 'notifications/tasks/status';

/** Whether a route's upstream offers the tasks extension (learned at validation, in its features). */
function offersTasks(route: Route): boolean {
  const extensions = route.features?.capabilities.extensions as Record<string, unknown> | undefined;
  return route.features?.protocolVersion === MODERN_REVISION && isPlainObject(extensions?.[TASKS_EXTENSION]);
}

/** Whether a route's upstream, learned as 2025-11-25, takes task-augmented tools/call. */
function offersCoreTasks(route: Route): boolean {
  const tasks = route.features?.capabilities.tasks as { requests?: { tools?: { call?: unknown } } } | undefined;
  return route.features?.protocolVersion === CORE_TASKS_REVISION && isPlainObject(tasks?.requests?.tools?.call);
}

/** Whether a route's tool, as learned at validation, runs only as a task (`execution.taskSupport: 'required'`). */
function requiresTask(route: Route, tool: string): boolean {
  const learned = route.features?.tools.find((t) => t.name === tool) as { execution?: { taskSupport?: unknown } } | undefined;
  return learned?.execution?.taskSupport === 'required';
}

/** Whether a route's upstream can hold a 2025-11-25 host's task: its own core tasks, or the extension, bridged. */
const offersTasksTo2025 = (route: Route): boolean => offersCoreTasks(route) || offersTasks(route);

/**
 * Whether a route's upstream can hold a 2026-07-28 host's task: the extension, or core
 * tasks bridged (over Streamable HTTP: the task lives in a session the gateway opens for
 * it, and a legacy HTTP+SSE session ends with its stream).
 */
const offersTasksToModern = (route: Route): boolean => offersTasks(route) || (offersCoreTasks(route) && route.transport !== 'sse');

/** Whether a 2026-07-28 host declared the tasks extension in its request's client capabilities. */
function declaresTasks(ctx: HostContext): boolean {
  const extensions = ctx.modern?.identity.clientCapabilities.extensions as Record<string, unknown> | undefined;
  return isPlainObject(extensions?.[TASKS_EXTENSION]);
}

/** The refusal of a 2026-07-28 host's request that needs the tasks extension it did not declare. */
const undeclaredTasks = (what: string): GatewayCallError =>
  new GatewayCallError(ERRORS.missingClientCapability, `${what} needs the ${TASKS_EXTENSION} extension: declare it in the request's client capabilities.`, {
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });

/** Whether this host is served 2025-11-25's core tasks: a 2025-11-25 session (a 2025 upstream holds its tasks in the upstream session of that session). */
const coreTasksHost = (ctx: HostContext): boolean => !ctx.modern && ctx.session?.protocolVersion === CORE_TASKS_REVISION;

/** A 2025 host's request context as a 2026-07-28 upstream hears it with the tasks extension declared (a bridged task). */
function declaringTasks(ctx: HostContext): HostContext {
  const capabilities = ctx.session!.clientCapabilities;
  const extensions = { ...(capabilities.extensions as Record<string, unknown> | undefined), [TASKS_EXTENSION]: {} };
  return { ...ctx, session: { ...ctx.session!, clientCapabilities: { ...capabilities, extensions } } };
}

/**
 * What a gateway offers a 2026-07-28 host (its server/discover): the tasks extension
 * only when one of the caller's upstreams offers it, since every task lives on one.
 */
export function modernCapabilities(catalog: Catalog): Record<string, unknown> {
  return catalog.routes.some(offersTasksToModern) ? { ...GATEWAY_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } } : GATEWAY_CAPABILITIES;
}

/** What a gateway offers a 2025 host at initialize: core tasks to a 2025-11-25 host when one of its upstreams has tasks (of either era). */
export function sessionCapabilities(catalog: Catalog, protocolVersion: string): Record<string, unknown> {
  return protocolVersion === CORE_TASKS_REVISION && catalog.routes.some(offersTasksTo2025)
    ? { ...GATEWAY_CAPABILITIES, tasks: CORE_TASKS_CAPABILITY }
    : GATEWAY_CAPABILITIES;
}

/**
 * Tasks relayed in both eras (contract 8.1): the tasks extension between 2026-07-28
 * hosts and upstreams, 2025-11-25's core tasks between 2025-11-25 hosts and upstreams,
 * and a 2025-11-25 host's tasks on a 2026-07-28 upstream bridged (bridge-core-tasks.ts).
 * An upstream that answers a tools/call with a task keeps the task; the host gets a
 * task id the gateway seals (AES-256-GCM, sealed.ts, a key of its own derived from the
 * gateway's session key) over the caller's connection (and session, for a 2025-11-25
 * task), the assignment, the upstream's task id and the tool. The requests naming a
 * task open it (a forged id, or one issued to another connection, is refused with
 * -32602) and go to that upstream with its own id; the answers, and the messages of a
 * tasks/result stream that name the task, name it by the host's id again. A status
 * notification names a task by the upstream's id alone, from which the host's id (it
 * carries the tool, under a random nonce) cannot be sealed again: a 2025 session's event
 * stream relays those of the tasks this process issued or served (statusFor), and
 * drops the rest; the extension's, on an upstream's listen, are not relayed. Hosts poll
 * tasks/get. docs/gateway.md, "The tasks extension" and "Core tasks of revision 2025-11-25".
 */
export class HostTasks {
  private readonly key: Buffer;
  /**
   * The host's ids of the 2025-11-25 tasks this process issued or served, by session,
   * assignment and upstream id: an upstream's status notification names the task by
   * its own id only, and the host's id cannot be sealed again from it.
   */
  private readonly hostIds = new TtlCache<string>(TASK_IDS_KEPT_MS, MAX_TASK_IDS_KEPT);
  /** A 2026-07-28 host's tasks on 2025-11-25 upstreams. */
  private readonly extensionBridge: ExtensionTasksBridge;

  constructor(
    gatewaySessionKey: Buffer,
    private readonly relays: HostRelay,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', gatewaySessionKey, Buffer.alloc(0), 'gateway-task-id', 32));
    this.extensionBridge = new ExtensionTasksBridge(relays, gatewaySessionKey);
  }

  /** Ends what this process holds of tasks (the process is closing). */
  close(): void {
    this.extensionBridge.close();
  }

  /**
   * A routed tools/call, as far as tasks go. A 2026-07-28 upstream decides on a task
   * from the host's capabilities; a 2025-11-25 host's augmentation (`params.task`) goes
   * to a 2025-11-25 upstream with core tasks, becomes the extension declared to a
   * 2026-07-28 upstream that offers it (a bridged task), and is dropped otherwise (as the
   * revision says of a receiver without the capability, the call runs as a plain one).
   * A task the upstream created is named by the gateway's id.
   */
  async callTool(ctx: HostContext, route: Route, tool: string, message: JSONRPCMessage, params: Record<string, unknown>): Promise<Outcome> {
    const requestId = (message as { id: RequestId }).id;
    if (ctx.modern && offersCoreTasks(route) && requiresTask(route, tool)) return this.callAsCoreTask(ctx, route, tool, message, params);
    const augmentation = params.task;
    const asked = augmentation !== undefined && coreTasksHost(ctx);
    // Refused here, in words, rather than forwarded for an upstream's schema to fail on.
    const problem = asked ? taskAugmentationProblem(augmentation) : null;
    if (problem) throw new GatewayCallError(ERRORS.invalidParams, problem);
    const kept = asked && offersCoreTasks(route);
    const bridged = asked && offersTasks(route);
    const routed = { ...message, params: { ...params, name: tool } } as { params: Record<string, unknown> } & JSONRPCMessage;
    if (augmentation !== undefined && !kept) delete routed.params.task;
    const outcome = await this.relays.relay(bridged ? declaringTasks(ctx) : ctx, route, routed);
    if (ctx.modern || bridged)
      return mapResult(outcome, requestId, (result) => {
        if (result.resultType !== 'task' || typeof result.taskId !== 'string') return result;
        const hostTaskId = this.seal(ctx, route, tool, result.taskId);
        return ctx.modern ? { ...result, taskId: hostTaskId } : { task: toCoreTask(result, hostTaskId) };
      });
    if (!kept) return outcome;
    return mapResult(outcome, requestId, (result) =>
      isPlainObject(result.task) && typeof result.task.taskId === 'string'
        ? { ...result, task: { ...result.task, taskId: this.seal(ctx, route, tool, result.task.taskId) } }
        : result,
    );
  }

  /**
   * A 2026-07-28 host's call of a tool its 2025-11-25 upstream runs only as a task
   * (bridge-extension-tasks.ts): augmented, in an upstream session of its own, which the
   * host's id for the task names. Said by the gateway, rather than the upstream's refusal
   * of a call without a task, when it cannot be bridged.
   */
  private async callAsCoreTask(ctx: HostContext, route: Route, tool: string, message: JSONRPCMessage, params: Record<string, unknown>): Promise<Outcome> {
    if (route.transport === 'sse')
      throw new GatewayCallError(
        ERRORS.methodNotFound,
        `Tool ${tool} of server ${route.slug} runs only as a task of revision ${CORE_TASKS_REVISION}, which this gateway bridges to hosts of revision ${MODERN_REVISION} over Streamable HTTP only, and this server is reached over HTTP+SSE.`,
      );
    if (!declaresTasks(ctx)) throw undeclaredTasks(`Tool ${tool} of server ${route.slug} runs only as a task, which`);
    const { session, endAfter } = await this.relays.openTaskSession(ctx, route);
    // Until the answer says otherwise, the session lives as long as the task may.
    endAfter(CORE_TASK_TTL_MS);
    const routed = { ...message, params: { ...params, name: tool, task: { ttl: CORE_TASK_TTL_MS } } } as JSONRPCMessage;
    let outcome: Outcome;
    try {
      outcome = await this.relays.relay(inTaskSession(ctx, route, session), route, routed);
    } catch (err) {
      endAfter(0);
      throw err;
    }
    const requestId = (message as { id: RequestId }).id;
    return mapOutcome(outcome, (answer) => {
      if (!isAnswerTo(requestId, answer)) return answer;
      const result = (answer as { result?: unknown }).result;
      const task = isPlainObject(result) ? result.task : undefined;
      // No task came of it (an error, a refusal): nothing lives in the session.
      if (!isPlainObject(task) || typeof task.taskId !== 'string') {
        endAfter(0);
        return answer;
      }
      endAfter(typeof task.ttl === 'number' && task.ttl >= 0 ? Math.min(task.ttl, CORE_TASK_TTL_MS) : CORE_TASK_TTL_MS);
      const hostTaskId = this.seal(ctx, route, tool, task.taskId, session.sessionId ?? '');
      return { ...answer, result: { resultType: 'task', ...toExtensionTask(task, hostTaskId) } } as JSONRPCMessage;
    });
  }

  /** A request naming a task (TASK_METHODS): to the upstream that holds the task, with its own id. */
  async serve(ctx: HostContext, message: JSONRPCMessage, method: TaskMethod, params: Record<string, unknown>): Promise<Outcome> {
    this.checkOffered(ctx, method);
    const hostTaskId = params.taskId;
    if (typeof hostTaskId !== 'string' || hostTaskId === '')
      throw new GatewayCallError(ERRORS.invalidParams, `${method} needs params.taskId: the id of a task this gateway returned.`);
    const task = openJson<SealedTask>(this.key, hostTaskId);
    // Forged, altered, or issued to another connection or session: the same answer, so a host learns nothing of other callers' tasks.
    if (!task || task.c !== ctx.caller.connectionGuid || task.s !== (ctx.modern ? undefined : ctx.session?.id))
      throw new GatewayCallError(ERRORS.invalidParams, `Invalid taskId: it was not issued by this gateway for this connection.`);
    ctx.record.toolName = task.n.slice(0, 500);
    this.remember(ctx, task, hostTaskId);
    const route = ctx.catalog.byAssignment.get(task.a);
    if (!route) throw new GatewayCallError(ERRORS.invalidParams, `Task of ${task.n}: its server is no longer available on this gateway.`);
    const requestId = (message as { id: RequestId }).id;
    const outcome =
      ctx.modern && task.u !== undefined
        ? await this.extensionBridge.serve(
            inTaskSession(ctx, route, { ...(task.u ? { sessionId: task.u } : {}), protocolVersion: CORE_TASKS_REVISION }),
            route,
            requestId,
            method as 'tasks/get' | 'tasks/update' | 'tasks/cancel',
            params,
            task.t,
            hostTaskId,
          )
        : !ctx.modern && route.features?.protocolVersion === MODERN_REVISION
          ? await serveBridged(this.relays, declaringTasks(ctx), route, requestId, method, task.t, hostTaskId)
          : await this.relays.relay(ctx, route, { ...message, params: { ...params, taskId: task.t } } as JSONRPCMessage);
    // The upstream names the task by its own id: the host knows it by the gateway's.
    return mapOutcome(outcome, (answer) => renamedTask(answer, task.t, hostTaskId));
  }

  /** Refuses a task request the host's era or upstreams do not offer it, as the revision says. */
  private checkOffered(ctx: HostContext, method: TaskMethod): void {
    if (ctx.modern) {
      if (!MODERN_METHODS.includes(method) || !ctx.catalog.routes.some(offersTasksToModern))
        throw new GatewayCallError(
          ERRORS.methodNotFound,
          `Method not found: ${method} (no server of this gateway offers it in the ${TASKS_EXTENSION} extension to this host).`,
        );
      if (!declaresTasks(ctx)) throw undeclaredTasks(method);
      return;
    }
    if (!CORE_METHODS.includes(method) || !coreTasksHost(ctx) || !ctx.catalog.routes.some(offersTasksTo2025))
      throw new GatewayCallError(
        ERRORS.methodNotFound,
        `Method not found: ${method} (tasks are offered to hosts of revision ${CORE_TASKS_REVISION} in a session, when a server of this gateway has them).`,
      );
  }

  /**
   * An upstream's message on a 2025 session's event stream, as the host gets it: a task
   * status notification names the task by the host's id, and is dropped when this
   * process does not know it (a task issued and served by other replicas only).
   */
  statusFor(session: Pick<GatewaySession, 'id'>, assignmentGuid: string, message: JSONRPCMessage): JSONRPCMessage | null {
    if (!isTaskStatus(message)) return message;
    const params = (message as { params?: { taskId?: unknown } }).params;
    const hostId = typeof params?.taskId === 'string' ? this.hostIds.get(`${session.id}|${assignmentGuid}|${params.taskId}`) : undefined;
    return hostId ? ({ ...message, params: { ...params, taskId: hostId } } as JSONRPCMessage) : null;
  }

  private seal(ctx: HostContext, route: Route, tool: string, upstreamTaskId: string, upstreamSessionId?: string): string {
    const sealed: SealedTask = { c: ctx.caller.connectionGuid, a: route.assignmentGuid, t: upstreamTaskId, n: tool };
    if (!ctx.modern && ctx.session) sealed.s = ctx.session.id;
    if (upstreamSessionId !== undefined) sealed.u = upstreamSessionId;
    const hostId = sealJson(this.key, sealed);
    this.remember(ctx, sealed, hostId);
    return hostId;
  }

  /** Keeps a 2025-11-25 task's host id for its status notifications (statusFor). */
  private remember(ctx: HostContext, task: SealedTask, hostId: string): void {
    if (task.s !== undefined) this.hostIds.set(`${task.s}|${task.a}|${task.t}`, ctx.caller.organizationGuid, hostId);
  }
}

/**
 * A task's answer or message with the upstream's task id replaced by the host's where
 * the revisions put it: `taskId` of a task's fields (tasks/get, tasks/cancel, the
 * extension's results), the related-task `_meta` of 2025-11-25 (tasks/result, and the
 * requests and notifications of its stream), and an error's words (an upstream may
 * name its task there).
 */
function renamedTask(message: JSONRPCMessage, upstreamId: string, hostId: string): JSONRPCMessage {
  const m = message as { result?: unknown; params?: unknown; error?: { message?: unknown } };
  if (isPlainObject(m.result)) return { ...message, result: renameTask(m.result, upstreamId, hostId) } as JSONRPCMessage;
  if (isPlainObject(m.params)) return { ...message, params: renameTask(m.params, upstreamId, hostId) } as JSONRPCMessage;
  if (isPlainObject(m.error) && typeof m.error.message === 'string') {
    const words = renamedInWords(m.error.message, upstreamId, hostId);
    if (words !== m.error.message) return { ...message, error: { ...m.error, message: words } } as JSONRPCMessage;
  }
  return message;
}

function renameTask(value: Record<string, unknown>, upstreamId: string, hostId: string): Record<string, unknown> {
  let renamed = value.taskId === upstreamId ? { ...value, taskId: hostId } : value;
  const related = isPlainObject(value._meta) ? value._meta[RELATED_TASK] : undefined;
  if (isPlainObject(related) && related.taskId === upstreamId)
    renamed = { ...renamed, _meta: { ...(value._meta as Record<string, unknown>), [RELATED_TASK]: { ...related, taskId: hostId } } };
  return renamed;
}

/** An outcome with the result of its answer (a JSON answer, or a stream's last message) passed through `map`. */
function mapResult(outcome: Outcome, requestId: RequestId, map: (result: Record<string, unknown>) => Record<string, unknown>): Outcome {
  return mapOutcome(outcome, (message) => {
    const result = (message as { result?: unknown }).result;
    if (!isAnswerTo(requestId, message) || !isPlainObject(result)) return message;
    // Most results are no task's and come back as they were: the message is copied only when its result changed.
    const mapped = map(result);
    return mapped === result ? message : ({ ...message, result: mapped } as JSONRPCMessage);
  });
}

/** An outcome with its answer, or every message of its stream, passed through `map`. */
function mapOutcome(outcome: Outcome, map: (message: JSONRPCMessage) => JSONRPCMessage): Outcome {
  if (outcome.kind === 'answer') return { ...outcome, message: map(outcome.message) };
  if (outcome.kind !== 'stream') return outcome;
  const messages = outcome.messages;
  return {
    ...outcome,
    messages: (async function* () {
      for await (const message of messages) yield map(message);
    })(),
  };
}
