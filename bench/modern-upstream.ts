/**
 * The 2026-07-28 upstream of bench:gateway, in a process of its own (forked by
 * bench/gateway.ts with an IPC channel): a v2-SDK server with an echo tool, served by
 * `createMcpHandler` in the revision only (`legacy: 'reject'`), on loopback. It sends
 * `{ type: 'ready', url }` once listening and exits when the parent goes away.
 */
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { serveWebHandler } from '../test/helpers/serve-web-handler.js';

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'bench-modern', version: '1.0.0' });
    server.registerTool('echo', { description: 'Echoes a message', inputSchema: z.object({ message: z.string() }) }, async ({ message }) => ({
      content: [{ type: 'text', text: `Echo: ${message}` }],
    }));
    return server;
  },
  { legacy: 'reject' },
);
const served = await serveWebHandler(handler);
process.send!({ type: 'ready', url: served.url });
process.on('disconnect', () => process.exit(0));
