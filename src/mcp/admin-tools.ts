import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { toAppError } from '../core/errors.js';
import { executeOperation } from '../core/executor.js';
import { inputJsonSchema, outputJsonSchema, ProblemSchema } from '../core/json-schema.js';
import type { AnyOperation, OperationContext } from '../core/operation.js';

export const ADMIN_SERVER_INFO = { name: 'svc-admin', version: '1.0.0' };

/**
 * The MCP tool list, generated once from the registry. A tool's outputSchema admits
 * the problem object too: SDK clients validate structuredContent against it even on
 * isError results, and the contract puts the problem there.
 */
export function buildToolList(operations: readonly AnyOperation[]): Tool[] {
  const problem = outputJsonSchema(ProblemSchema);
  return operations.map((op) => ({
    name: op.name,
    title: op.title,
    description: op.description,
    inputSchema: inputJsonSchema(op.input) as Tool['inputSchema'],
    outputSchema: { type: 'object', anyOf: [outputJsonSchema(op.output), problem] } as Tool['outputSchema'],
    annotations: { title: op.title, ...op.annotations },
  }));
}

/** Renders an operation's outcome as the contract's tool result. */
export async function callTool(op: AnyOperation, ctx: OperationContext, args: Record<string, unknown>): Promise<CallToolResult> {
  try {
    const result = (await executeOperation(op, ctx, args)) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (err) {
    const appError = toAppError(err);
    if (appError.code === 'internal') ctx.services.logger.error({ err, operation: op.name }, 'operation failed');
    const problem = appError.toProblem();
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }], structuredContent: problem };
  }
}

/**
 * An MCP server for one caller's request. Stateless: the tool list is shared and
 * the server is cheap, so one is made per HTTP request, bound to that caller.
 */
export function createAdminMcpServer(operations: ReadonlyMap<string, AnyOperation>, tools: Tool[], ctx: OperationContext): Server {
  const server = new Server(ADMIN_SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const op = operations.get(request.params.name);
    if (!op) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    return callTool(op, ctx, request.params.arguments ?? {});
  });
  return server;
}
