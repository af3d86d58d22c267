import { createMcpHandler, ProtocolError, Server } from '@modelcontextprotocol/server';
import { jsonOf, serveWebHandler } from './serve-web-handler.js';
import { TASK_TOOLS, TASKS_EXTENSION, TaskStore } from './task-store.js';
import type { Upstream } from './upstreams.js';

export { TASKS_EXTENSION };

/**
 * An upstream of revision 2026-07-28 offering the tasks extension (SEP-2663), written
 * with the v2 SDK's low-level Server over the shared task store (task-store.ts, whose
 * tools and wire shapes are those of the conformance runner's `tasks-*` scenarios):
 * `slow_compute` becomes a task when the request's client capabilities declare the
 * extension (else it runs at once), `confirm_delete` needs it (-32021 without) and waits
 * in `input_required` for a tasks/update. tasks/get, tasks/update and tasks/cancel
 * refuse an unknown id with -32602. `requests` keeps each request's method, Mcp-Name
 * header and params.
 */
export async function startTasksUpstream(): Promise<
  Upstream & { requests: { method: string; mcpName: string | undefined; params: Record<string, unknown> }[] }
> {
  const tasks = new TaskStore();
  const requests: { method: string; mcpName: string | undefined; params: Record<string, unknown> }[] = [];
  const handler = createMcpHandler(
    () => {
      const server = new Server(
        { name: 'tasks-upstream', version: '1.0.0' },
        { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } as Record<string, unknown> },
      );
      server.setRequestHandler('tools/list', () => ({ tools: TASK_TOOLS.map((tool) => tool.definition) }));
      server.setRequestHandler('tools/call', async (request, ctx) => {
        const tool = TASK_TOOLS.find((t) => t.definition.name === request.params.name);
        if (!tool) throw new ProtocolError(-32602, `Unknown tool: ${request.params.name}`);
        return (await tool.call(request.params.arguments ?? {}, ctx, tasks)) as never;
      });
      tasks.serve(server);
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
      tasks.close();
      await handler.close();
      await served.close();
    },
  };
}
