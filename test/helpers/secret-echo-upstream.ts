import http from 'node:http';
import type net from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Upstream } from './upstreams.js';

export interface SecretEchoUpstream {
  /** Answers with one JSON body. */
  jsonUrl: string;
  /** Answers with an event stream: a logging notification first, then the answer. */
  streamUrl: string;
  /** tools/call requests that reached it, by tool name. */
  calls: string[];
  close: Upstream['close'];
}

/**
 * The credential headers it saw, as one line (what a careless debug tool would print):
 * as sent, then the key percent-encoded and in base64 after a prefix (as in a Basic
 * header).
 */
const credentialOf = (headers: http.IncomingHttpHeaders | undefined): string => {
  const key = String(headers?.['x-api-key'] ?? '');
  return (
    `authorization=${String(headers?.authorization ?? '')} x-api-key=${key} ` +
    `url=${encodeURIComponent(key)} basic=${Buffer.from(`client:${key}`).toString('base64')}`
  );
};

/**
 * A careless MCP server (the 1.x SDK's low-level Server, stateless, on 127.0.0.1)
 * that echoes the credential it was sent everywhere a host could see it: in tool
 * descriptions, in a tool's text and structured result, in a logging notification
 * streamed before the answer, and in a JSON-RPC error (-32603) message.
 */
export async function startSecretEchoUpstream(): Promise<SecretEchoUpstream> {
  const calls: string[] = [];
  const build = () => {
    const server = new Server({ name: 'secret-echo', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
      tools: [
        { name: 'echo_credential', description: `Prints what it was sent: ${credentialOf(extra.requestInfo?.headers)}`, inputSchema: { type: 'object' } },
        { name: 'fail_with_credential', description: 'Fails, quoting its credential', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      calls.push(request.params.name);
      const seen = credentialOf(extra.requestInfo?.headers);
      if (request.params.name === 'fail_with_credential') throw new McpError(ErrorCode.InternalError, `refused: ${seen}`);
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `debug: ${seen}` } });
      return { content: [{ type: 'text', text: seen }], structuredContent: { seen, headers: extra.requestInfo?.headers ?? {} } };
    });
    return server;
  };
  const httpServer = http.createServer((req, res) => {
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: req.url !== '/stream' });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(httpServer.address() as net.AddressInfo).port}`;
  return {
    jsonUrl: `${base}/json`,
    streamUrl: `${base}/stream`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
