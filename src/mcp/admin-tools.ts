import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type McpHttpHandler, type Tool } from '@modelcontextprotocol/server';
import { echoed } from '../core/echoed.js';
import { toAppError } from '../core/errors.js';
import { executeOperation } from '../core/executor.js';
import { inputJsonSchema, outputJsonSchema, ProblemSchema } from '../core/json-schema.js';
import type { AnyOperation, OperationContext } from '../core/operation.js';

export const ADMIN_SERVER_INFO = { name: 'svc-admin', version: '1.0.0' };

/**
 * The requests the admin endpoint serves: its tools (createAdminMcpHandler), and the
 * SDK's own handshake and ping. Any other is method not found, whatever its params
 * (the route's params check skips it).
 */
export const ADMIN_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'server/discover', 'tools/list', 'tools/call']);

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
    // Refused before it runs (the rate limit), the call is still the operation's refusal: the executor decides and audits it, as on REST.
    const refusal = ctx.refusedBeforehand ? toAppError(ctx.refusedBeforehand) : (ctx.inputRefusal ?? null);
    const result = (await executeOperation(op, ctx, args, refusal)) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (err) {
    const appError = toAppError(err);
    if (appError.status >= 500) ctx.services.logger.error({ err, operation: op.name }, 'operation failed');
    const problem = appError.toProblem();
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }], structuredContent: problem };
  }
}

/**
 * The admin MCP endpoint's handler (contract sections 3 and 8.1), served by the v2
 * SDK: revision 2026-07-28 (server/discover, the per-request envelope) and, through
 * its stateless legacy leg, the 2025 revisions, on the same URL. One server is made
 * per request from the caller's context, which the route passes as authInfo.extra.
 */
export function createAdminMcpHandler(operations: readonly AnyOperation[]): McpHttpHandler {
  const tools = buildToolList(operations);
  const byName = new Map(operations.map((op) => [op.name, op]));
  return createMcpHandler(
    (request) => {
      const ctx = request.authInfo?.extra?.operationContext as OperationContext | undefined;
      const server = new Server(ADMIN_SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
      server.setRequestHandler('tools/list', () => ({ tools }));
      server.setRequestHandler('tools/call', async (request) => {
        const op = byName.get(request.params.name);
        if (!op) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${echoed(request.params.name)}. tools/list names every tool.`);
        if (!ctx) throw new ProtocolError(ProtocolErrorCode.InternalError, 'The request carries no caller.');
        return callTool(op, ctx, (request.params.arguments ?? {}) as Record<string, unknown>);
      });
      return server;
    },
    { legacy: 'stateless' },
  );
}
