import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { TASK_TOOLS, TASKS_EXTENSION, type TaskStore } from '../helpers/task-store.js';

export { TASKS_EXTENSION };

type Handler = (request: { params: Record<string, unknown> }, ctx: ServerContext) => unknown;

/**
 * The tasks extension (SEP-2663) on the fixture's 2026-07-28 side: the runner's task
 * tools (test/helpers/task-store.ts) next to the McpServer's own, and tasks/get,
 * tasks/update and tasks/cancel. Call it before the first registerTool, on a server
 * constructed without the `tools` capability (given it, McpServer installs its tools
 * handlers at construction).
 *
 * The task tools are not McpServer tools: McpServer answers every error its tool
 * callbacks throw with an `isError` result, where a `taskSupport: 'required'` tool
 * called without the extension must be a JSON-RPC -32021 error. So the McpServer's own
 * tools/list and tools/call handlers are wrapped as it installs them (its server's
 * `setRequestHandler`, the one seam the SDK leaves): the list gains the task tools, and
 * a call of one goes to the task store. Both stay inside the SDK's own handler chain
 * (request validation, the input_required seam, the 2026-07-28 encoding).
 */
export function registerTaskTools(server: McpServer, tasks: TaskStore): void {
  const low = server.server as unknown as { setRequestHandler(method: string, ...rest: unknown[]): void };
  const set = low.setRequestHandler.bind(low);
  const byName = new Map(TASK_TOOLS.map((tool) => [tool.definition.name, tool]));
  const wrap: Record<string, (own: Handler) => Handler> = {
    'tools/list': (own) => async (request, ctx) => {
      const listed = (await own(request, ctx)) as { tools: unknown[] };
      return { ...listed, tools: [...listed.tools, ...TASK_TOOLS.map((tool) => tool.definition)] };
    },
    'tools/call': (own) => (request, ctx) => {
      const tool = byName.get(String(request.params.name));
      return tool ? tool.call((request.params.arguments as Record<string, unknown> | undefined) ?? {}, ctx, tasks) : own(request, ctx);
    },
  };
  low.setRequestHandler = (method, ...rest) => set(method, ...(wrap[method] && rest.length === 1 ? [wrap[method](rest[0] as Handler)] : rest));
  tasks.serve(server.server);
}
