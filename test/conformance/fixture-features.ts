import {
  CLIENT_CAPABILITIES_META_KEY,
  completable,
  createRequestStateCodec,
  fromJsonSchema,
  inputRequired,
  inputResponse,
  McpServer,
  ResourceTemplate,
  type ClientCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * What the conformance runner's server scenarios call by name (`test_*` tools and
 * prompts, `test://…` resources), for test/conformance/fixture-server.ts. One factory
 * for both eras.
 */

// A 1x1 PNG and a minimal WAV, as the scenarios only check type and mime type.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

// The keywords the json-schema-2020-12 scenario looks for in the advertised inputSchema.
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
} as const;

export const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the fixture shares across its per-request (modern) and per-session (2025) server instances. */
export interface Shared {
  /** Seals requestState (the tampered-state scenario expects a forged one refused). */
  codec: ReturnType<typeof createRequestStateCodec<Record<string, unknown>>>;
  /** Announces a list change to both eras: the modern listen streams and every 2025 session. */
  listChanged(kind: 'tools' | 'prompts'): void;
}

/** The client's declared capabilities: the request envelope (2026-07-28) or the session's initialize (2025). */
export function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCapabilities {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return (envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined) ?? server.server.getClientCapabilities() ?? {};
}

/** Tools that answer with one kind of content each. */
export function registerContentTools(server: McpServer): void {
  server.registerTool('test_simple_text', { description: 'Returns simple text' }, () => text('This is a simple text response for testing.'));
  server.registerTool('test_image_content', { description: 'Returns an image' }, () => ({
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
  }));
  server.registerTool('test_audio_content', { description: 'Returns audio' }, () => ({
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
  }));
  server.registerTool('test_embedded_resource', { description: 'Returns an embedded resource' }, () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  server.registerTool('test_multiple_content_types', { description: 'Returns text, an image and a resource' }, () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) },
      },
    ],
  }));
  server.registerTool('test_error_handling', { description: 'Always fails' }, () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  // SEP-2243: an argument mirrored into an `Mcp-Param-Region` header, which the SDK checks against the body.
  server.registerTool(
    'test_custom_headers',
    {
      description: 'Echoes an argument that travels in a custom header too',
      inputSchema: fromJsonSchema({ type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] } as Record<
        string,
        unknown
      >),
    },
    (args) => text(`region ${String((args as { region?: unknown }).region)}`),
  );
  server.registerTool(
    'json_schema_2020_12_tool',
    { description: 'Tool with JSON Schema 2020-12 features', inputSchema: fromJsonSchema(SCHEMA_2020_12 as Record<string, unknown>) },
    () => text('ok'),
  );
}

/** Tools that emit notifications while they run, or change the server's lists. */
export function registerNotifyingTools(server: McpServer, shared: Shared): void {
  const logThrice = async (ctx: ServerContext) => {
    for (const [i, message] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await sleep(50);
      await ctx.mcpReq.log('info', message);
    }
    return text('Tool with logging executed successfully');
  };
  server.registerTool('test_tool_with_logging', { description: 'Logs three messages while it runs' }, logThrice);
  server.registerTool('test_logging_tool', { description: 'Logs three messages while it runs' }, logThrice);
  server.registerTool('test_tool_with_progress', { description: 'Reports progress 0, 50, 100 of 100' }, async (ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progress > 0) await sleep(50);
      if (progressToken !== undefined)
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
        });
    }
    return text(String(progressToken ?? 'no progress token'));
  });
  // SEP-1699 (2025): closes the call's SSE stream mid-call; the client resumes with Last-Event-ID and gets the result.
  server.registerTool('test_reconnection', { description: 'Closes its SSE stream before answering' }, async (ctx) => {
    ctx.http?.closeSSE?.();
    await sleep(100);
    return text('Reconnection test completed successfully.');
  });
  server.registerTool('test_trigger_tool_change', { description: 'Announces a tool list change' }, () => {
    shared.listChanged('tools');
    return text('tools changed');
  });
  server.registerTool('test_trigger_prompt_change', { description: 'Announces a prompt list change' }, () => {
    shared.listChanged('prompts');
    return text('prompts changed');
  });
  // Asks for a completion: the SDK refuses that with -32021 when the client did not declare sampling.
  server.registerTool('test_missing_capability', { description: 'Needs the sampling capability' }, (ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'sample');
    if (answer.kind === 'sampling') return text('sampled');
    return inputRequired({
      inputRequests: { sample: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 10 }) },
    });
  });
}

export function registerResources(server: McpServer): void {
  server.registerResource('static-text', 'test://static-text', { description: 'A static text resource', mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('static-binary', 'test://static-binary', { description: 'A static binary resource', mimeType: 'image/png' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }],
  }));
  server.registerResource('watched-resource', 'test://watched-resource', { description: 'A resource to subscribe to', mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }],
  }));
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'A resource template', mimeType: 'application/json' },
    (uri, { id }) => ({
      contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) }],
    }),
  );
  // 2025 subscriptions: accepted and remembered per session (nothing changes, so no update is sent).
  const subscribed = new Set<string>();
  server.server.setRequestHandler('resources/subscribe', (request) => {
    subscribed.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', (request) => {
    subscribed.delete(request.params.uri);
    return {};
  });
}

export function registerPrompts(server: McpServer): void {
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (value) => ['paris', 'park', 'party'].filter((v) => v.startsWith(value))),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    ({ arg1, arg2 }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'A prompt embedding a resource', argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }) },
    ({ resourceUri }) => ({
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
}
