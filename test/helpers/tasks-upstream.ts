import { randomBytes } from 'node:crypto';
import { CLIENT_CAPABILITIES_META_KEY, createMcpHandler, ProtocolError, Server, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { jsonOf, serveWebHandler } from './serve-web-handler.js';
import type { Upstream } from './upstreams.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface Task {
  taskId: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  result?: Record<string, unknown>;
  inputRequests?: Record<string, unknown>;
  /** What the task does once its input arrives. */
  onInput?: (responses: Record<string, unknown>) => void;
  timer?: NodeJS.Timeout;
}

const TERMINAL: ReadonlySet<Status> = new Set(['completed', 'failed', 'cancelled']);
const TOOLS = [
  { name: 'greet', description: 'Greets, at once', inputSchema: { type: 'object', properties: { name: { type: 'string' } } } },
  {
    name: 'slow_compute',
    description: 'Computes for `seconds` seconds, as a task when the host has the extension',
    inputSchema: { type: 'object', properties: { seconds: { type: 'number' }, label: { type: 'string' } } },
    execution: { taskSupport: 'optional' },
  },
  {
    name: 'confirm_delete',
    description: 'Asks the host to confirm, as a task',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
    execution: { taskSupport: 'required' },
  },
];

/**
 * An upstream of revision 2026-07-28 offering the tasks extension (SEP-2663), written
 * with the v2 SDK's low-level Server: the SDK has no task store, so this one keeps
 * its tasks in memory (the wire shapes are those of the conformance runner's
 * `tasks-*` scenarios). `slow_compute` becomes a task when the request's client
 * capabilities declare the extension (else it runs at once), `confirm_delete` needs it
 * (-32021 without) and waits in `input_required` for a tasks/update. tasks/get,
 * tasks/update and tasks/cancel refuse an unknown id with -32602. `requests` keeps
 * each request's method, Mcp-Name header and params.
 */
export async function startTasksUpstream(): Promise<
  Upstream & { requests: { method: string; mcpName: string | undefined; params: Record<string, unknown> }[] }
> {
  const tasks = new Map<string, Task>();
  const requests: { method: string; mcpName: string | undefined; params: Record<string, unknown> }[] = [];
  const now = () => new Date().toISOString();
  const settle = (task: Task, status: Status, result?: Record<string, unknown>) => {
    if (TERMINAL.has(task.status)) return;
    clearTimeout(task.timer);
    task.status = status;
    task.lastUpdatedAt = now();
    delete task.inputRequests;
    if (result) task.result = result;
  };
  const create = (): Task => {
    const task: Task = {
      taskId: `upstream-task-${randomBytes(6).toString('hex')}`,
      status: 'working',
      createdAt: now(),
      lastUpdatedAt: now(),
      ttlMs: 600_000,
      pollIntervalMs: 50,
    };
    tasks.set(task.taskId, task);
    return task;
  };
  const created = (task: Task) => ({
    resultType: 'task',
    taskId: task.taskId,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  });
  const hasExtension = (ctx: ServerContext) => {
    const caps = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
      { extensions?: Record<string, unknown> } | undefined;
    return typeof caps?.extensions?.[TASKS_EXTENSION] === 'object';
  };
  const needExtension = (ctx: ServerContext, method: string) => {
    if (!hasExtension(ctx))
      throw new ProtocolError(-32021, `${method} needs the ${TASKS_EXTENSION} extension`, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
  };
  const known = (taskId: unknown): Task => {
    const task = typeof taskId === 'string' ? tasks.get(taskId) : undefined;
    if (!task) throw new ProtocolError(-32602, `Unknown task: ${String(taskId)}`);
    return task;
  };
  const text = (value: string) => ({ content: [{ type: 'text', text: value }] });
  const taskSchemas = { params: z.looseObject({ taskId: z.string() }), result: z.looseObject({}) };

  const handler = createMcpHandler(
    () => {
      const server = new Server(
        { name: 'tasks-upstream', version: '1.0.0' },
        { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } as Record<string, unknown> },
      );
      server.setRequestHandler('tools/list', async () => ({ tools: TOOLS }) as never);
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const { name, arguments: args = {} } = request.params as { name: string; arguments?: Record<string, unknown> };
        if (name === 'greet') return text(`Hello, ${String(args.name)}!`) as never;
        if (name === 'slow_compute') {
          const seconds = Number(args.seconds ?? 0);
          const label = String(args.label ?? '');
          if (!hasExtension(ctx)) return text(`computed ${label} at once`) as never;
          const task = create();
          task.timer = setTimeout(() => settle(task, 'completed', text(`computed ${label}`)), seconds * 1000);
          return created(task) as never;
        }
        if (name === 'confirm_delete') {
          needExtension(ctx, 'confirm_delete');
          const task = create();
          task.status = 'input_required';
          task.inputRequests = {
            confirm: {
              method: 'elicitation/create',
              params: { message: `Delete ${String(args.filename)}?`, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
            },
          };
          task.onInput = (responses) => {
            const answer = responses.confirm as { action?: string; content?: { ok?: boolean } } | undefined;
            if (!answer) return;
            settle(task, 'completed', text(answer.action === 'accept' && answer.content?.ok ? `deleted ${String(args.filename)}` : 'kept'));
          };
          return created(task) as never;
        }
        throw new ProtocolError(-32602, `Unknown tool: ${name}`);
      });
      server.setRequestHandler('tasks/get', taskSchemas, async (params, ctx) => {
        needExtension(ctx, 'tasks/get');
        const { onInput: _onInput, timer: _timer, ...task } = known(params.taskId);
        return task;
      });
      server.setRequestHandler('tasks/update', taskSchemas, async (params, ctx) => {
        needExtension(ctx, 'tasks/update');
        const task = known(params.taskId);
        if (task.status === 'input_required') task.onInput?.(ctx.mcpReq.inputResponses ?? {});
        return {};
      });
      server.setRequestHandler('tasks/cancel', taskSchemas, async (params, ctx) => {
        needExtension(ctx, 'tasks/cancel');
        settle(known(params.taskId), 'cancelled');
        return {};
      });
      return server;
    },
    { legacy: 'reject' },
  );
  const served = await serveWebHandler(handler, {
    seen: (body, req) => {
      const parsed = jsonOf<{ method?: unknown; params?: Record<string, unknown> }>(body);
      if (parsed) requests.push({ method: String(parsed.method), mcpName: req.headers['mcp-name'] as string | undefined, params: parsed.params ?? {} });
    },
  });
  return {
    url: served.url,
    requests,
    close: async () => {
      for (const task of tasks.values()) clearTimeout(task.timer);
      await handler.close();
      await served.close();
    },
  };
}
