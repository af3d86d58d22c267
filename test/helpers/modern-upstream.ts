import { acceptedContent, completable, createMcpHandler, inputRequired, inputResponse, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { jsonOf, serveWebHandler } from './serve-web-handler.js';
import type { Upstream } from './upstreams.js';

/**
 * An upstream of revision 2026-07-28 only, built with the v2 SDK
 * (`createMcpHandler(factory, { legacy: 'reject' })`): a 2025 initialize is refused
 * with -32022. Tools: `shout` (text), `measure` (structured output); a prompt and a
 * resource. Listens on 127.0.0.1. `publicCache` marks every cacheable result of it
 * `cacheScope: public` (what a gateway must not pass on); `notify` publishes change
 * events to its own `subscriptions/listen` streams. `asksForInput` adds tools that
 * need the host's input (input_required results; see registerInputTools).
 * `protocolFeatures` adds a prompt with completions, tools that report progress, log
 * and wait to be cancelled, and the `logging` capability (registerFeatureTools). `port`:
 * where to listen (another server's port, to replace it), any free one by default.
 */
export async function startModernUpstream(opts: { publicCache?: boolean; asksForInput?: boolean; protocolFeatures?: boolean; port?: number } = {}): Promise<
  Upstream & {
    requests: { method: string; protocol: string | undefined; params?: Record<string, unknown> }[];
    /** What became of each `wait {tag}` call: waiting, cancelled (its request's abort signal fired) or finished (nobody cancelled it). */
    waits: Map<string, 'waiting' | 'cancelled' | 'finished'>;
    notify: McpHttpHandler['notify'];
    /** Cuts every open connection (its listens end, as when the server restarts) and goes on serving. */
    dropConnections: () => void;
  }
> {
  const requests: { method: string; protocol: string | undefined; params?: Record<string, unknown> }[] = [];
  const waits = new Map<string, 'waiting' | 'cancelled' | 'finished'>();
  const handler = createMcpHandler(
    () => {
      const hint = { ttlMs: 60_000, cacheScope: 'public' as const };
      const cacheHints = { 'tools/list': hint, 'prompts/list': hint, 'resources/list': hint, 'resources/templates/list': hint, 'resources/read': hint };
      const server = new McpServer(
        { name: 'modern-only', version: '2.0.0' },
        { ...(opts.publicCache ? { cacheHints } : {}), ...(opts.protocolFeatures ? { capabilities: { logging: {} } } : {}) },
      );
      server.registerTool('shout', { description: 'Upper-cases a text', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
        content: [{ type: 'text', text: text.toUpperCase() }],
      }));
      server.registerTool(
        'measure',
        { description: 'Measures a text', inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ length: z.number() }) },
        async ({ text }) => ({ content: [{ type: 'text', text: String(text.length) }], structuredContent: { length: text.length } }),
      );
      server.registerPrompt('haiku', { description: 'A haiku prompt' }, () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'Write a haiku.' } }],
      }));
      server.registerResource('motd', 'modern://motd', { mimeType: 'text/plain' }, async () => ({
        contents: [{ uri: 'modern://motd', text: 'hello from 2026' }],
      }));
      if (opts.asksForInput) registerInputTools(server);
      if (opts.protocolFeatures) registerFeatureTools(server, waits);
      return server;
    },
    { legacy: 'reject' },
  );
  const served = await serveWebHandler(handler, {
    port: opts.port,
    seen: (body, req) => {
      const parsed = jsonOf<{ method?: unknown; params?: Record<string, unknown> }>(body);
      if (parsed) requests.push({ method: String(parsed.method), protocol: req.headers['mcp-protocol-version'] as string | undefined, params: parsed.params });
    },
  });
  return {
    url: served.url,
    requests,
    waits,
    notify: handler.notify,
    dropConnections: served.dropConnections,
    close: async () => {
      await handler.close();
      await served.close();
    },
  };
}

/**
 * Tools that need the host's input, the 2026-07-28 way (an `input_required` result,
 * then the retry with `inputResponses` and the echoed `requestState`):
 * `confirm` (form elicitation), `sample` (sampling), `roots` (roots), `slow-confirm`
 * (progress, then an elicitation), `two-step` (an elicitation, then sampling: two
 * rounds). Each answer says which requestState came back, so a test sees that the
 * upstream got its own state.
 */
function registerInputTools(server: McpServer): void {
  const confirmation = z.object({ ok: z.boolean() });
  server.registerTool(
    'confirm',
    { description: 'Asks the host to confirm an action', inputSchema: z.object({ action: z.string() }) },
    async ({ action }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
      if (!answer)
        return inputRequired({
          inputRequests: { confirm: inputRequired.elicit({ message: `Confirm ${action}?`, requestedSchema: confirmation }) },
          requestState: `confirm:${action}`,
        });
      return { content: [{ type: 'text', text: `${action} ${answer.ok ? 'confirmed' : 'refused'} (state ${String(ctx.mcpReq.requestState())})` }] };
    },
  );
  server.registerTool('sample', { description: 'Asks the host for a completion', inputSchema: z.object({ prompt: z.string() }) }, async ({ prompt }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'sample');
    if (answer.kind !== 'sampling')
      return inputRequired({
        inputRequests: { sample: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 20 }) },
        requestState: 'sample',
      });
    const content = answer.result.content as { type: string; text?: string };
    return { content: [{ type: 'text', text: `model ${answer.result.model} said ${content.text ?? ''} (state ${String(ctx.mcpReq.requestState())})` }] };
  });
  server.registerTool('roots', { description: "Lists the host's roots", inputSchema: z.object({}) }, async (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'roots');
    if (answer.kind !== 'roots') return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    return { content: [{ type: 'text', text: `roots: ${answer.roots.map((r) => r.uri).join(', ')}` }] };
  });
  // Progress first (the answer then comes as an event stream), then the same question as confirm.
  server.registerTool('slow-confirm', { description: 'Reports progress, then asks to confirm', inputSchema: z.object({}) }, async (_args, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'go', confirmation);
    if (!answer)
      return inputRequired({ inputRequests: { go: inputRequired.elicit({ message: 'Go on?', requestedSchema: confirmation }) }, requestState: 'slow' });
    return { content: [{ type: 'text', text: `slow ${answer.ok ? 'confirmed' : 'refused'} (state ${String(ctx.mcpReq.requestState())})` }] };
  });
  server.registerTool('two-step', { description: 'Asks for a name, then for a completion', inputSchema: z.object({}) }, async (_args, ctx) => {
    const state = ctx.mcpReq.requestState<string>();
    if (state === undefined)
      return inputRequired({
        inputRequests: { name: inputRequired.elicit({ message: 'Your name?', requestedSchema: z.object({ name: z.string() }) }) },
        requestState: 'step-1',
      });
    if (state === 'step-1') {
      const named = acceptedContent(ctx.mcpReq.inputResponses, 'name', z.object({ name: z.string() }));
      return inputRequired({
        inputRequests: {
          greet: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: `Greet ${named?.name ?? '?'}` } }], maxTokens: 20 }),
        },
        requestState: `step-2:${named?.name ?? '?'}`,
      });
    }
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'greet');
    const text = answer.kind === 'sampling' ? ((answer.result.content as { text?: string }).text ?? '') : '(no greeting)';
    return { content: [{ type: 'text', text: `${state}: ${text}` }] };
  });
}

/** How long `wait` waits for its cancellation before it answers anyway (a test's bound, not a feature). */
const WAIT_LIMIT_MS = 30_000;

/**
 * The protocol's other features, the 2026-07-28 way: the prompt `greet` whose `name`
 * argument completes (Ada, Alan, Grace), `count {steps}` (a progress notification per
 * step, then the answer), `log` (an `info` and an `error` message, which the SDK sends
 * only at or above the level in the request's envelope, then the answer) and
 * `wait {tag}`, which waits until its request's abort signal fires (the client closed
 * the request) and records it in `waits`.
 */
function registerFeatureTools(server: McpServer, waits: Map<string, 'waiting' | 'cancelled' | 'finished'>): void {
  const names = ['Ada', 'Alan', 'Grace'];
  server.registerPrompt(
    'greet',
    { description: 'Greets someone', argsSchema: z.object({ name: completable(z.string(), (value) => names.filter((n) => n.startsWith(value))) }) },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}.` } }] }),
  );
  server.registerTool('count', { description: 'Counts steps, reporting progress', inputSchema: z.object({ steps: z.number() }) }, async ({ steps }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let step = 1; step <= steps; step++)
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: step, total: steps } });
    return { content: [{ type: 'text', text: `counted ${steps}` }] };
  });
  server.registerTool('log', { description: 'Logs at two levels', inputSchema: z.object({}) }, async (_args, ctx) => {
    await ctx.mcpReq.log('info', 'quiet detail');
    await ctx.mcpReq.log('error', 'loud failure');
    return { content: [{ type: 'text', text: 'logged' }] };
  });
  server.registerTool('wait', { description: 'Waits until cancelled', inputSchema: z.object({ tag: z.string() }) }, async ({ tag }, ctx) => {
    waits.set(tag, 'waiting');
    const cancelled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), WAIT_LIMIT_MS);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(true);
      };
      if (ctx.mcpReq.signal.aborted) onAbort();
      else ctx.mcpReq.signal.addEventListener('abort', onAbort, { once: true });
    });
    waits.set(tag, cancelled ? 'cancelled' : 'finished');
    return { content: [{ type: 'text', text: cancelled ? 'cancelled' : 'waited' }] };
  });
}
