import { acceptedContent, inputRequired, inputResponse, McpServer, type InputRequests, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { clientCapabilities, text, type Shared } from './fixture-features.js';

/**
 * Tools that need the client's input. Written once as input_required handlers: a
 * 2026-07-28 client answers the input_required result and retries; on a 2025 session
 * the SDK's shim sends the embedded requests as server-to-client requests.
 */
export function registerAskingTools(server: McpServer): void {
  server.registerTool(
    'test_sampling',
    { description: 'Asks the client for a completion', inputSchema: z.object({ prompt: z.string() }) },
    ({ prompt }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'sample');
      if (answer.kind !== 'sampling')
        return inputRequired({
          inputRequests: { sample: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 }) },
        });
      const content = answer.result.content as { text?: string };
      return text(`LLM response: ${content.text ?? 'No response'}`);
    },
  );
  const elicitingTool = (name: string, description: string, params: { message: string; requestedSchema: Record<string, unknown> }, label: string) =>
    server.registerTool(name, { description }, (ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'form');
      if (answer.kind !== 'elicit')
        // Raw params: the SDK's schema type does not model every variant these scenarios send (enumNames, titled multi-select).
        return inputRequired({ inputRequests: { form: { method: 'elicitation/create', params: { mode: 'form', ...params } } } as unknown as InputRequests });
      return text(`${label}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    });
  server.registerTool('test_elicitation', { description: 'Asks the user for input', inputSchema: z.object({ message: z.string() }) }, ({ message }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'form');
    if (answer.kind !== 'elicit')
      return inputRequired({
        inputRequests: {
          form: inputRequired.elicit({
            message,
            requestedSchema: { type: 'object', properties: { response: { type: 'string', description: "User's response" } }, required: ['response'] },
          }),
        },
      });
    return text(`User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
  });
  elicitingTool(
    'test_elicitation_sep1034_defaults',
    'Asks for input with a default for every primitive type',
    {
      message: 'Please review and update the form fields with defaults',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
        required: [],
      },
    },
    'Elicitation completed',
  );
  elicitingTool(
    'test_elicitation_sep1330_enums',
    'Asks for input with every enum variant',
    {
      message: 'Please select options from the enum fields',
      requestedSchema: {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            description: 'Select one option with titles',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: {
            type: 'string',
            description: 'Select one option (legacy)',
            enum: ['opt1', 'opt2', 'opt3'],
            enumNames: ['Option One', 'Option Two', 'Option Three'],
          },
          untitledMulti: {
            type: 'array',
            description: 'Select multiple options',
            minItems: 1,
            maxItems: 3,
            items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          },
          titledMulti: {
            type: 'array',
            description: 'Select multiple options with titles',
            minItems: 1,
            maxItems: 3,
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
        required: [],
      },
    },
    'Elicitation completed',
  );
  server.registerTool('test_streaming_elicitation', { description: 'Asks for input after a log message' }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'value');
    if (answer) return text(`got ${JSON.stringify(answer)}`);
    await ctx.mcpReq.log('info', 'about to ask');
    return inputRequired({
      inputRequests: { value: inputRequired.elicit({ message: 'A value?', requestedSchema: { type: 'object', properties: { value: { type: 'string' } } } }) },
    });
  });
}

const nameSchema = { type: 'object' as const, properties: { name: { type: 'string' as const } }, required: ['name'] };
const askName = (message: string) => inputRequired.elicit({ message, requestedSchema: nameSchema });
const elicited = (ctx: ServerContext, key: string): Record<string, unknown> | undefined => {
  const answer = inputResponse(ctx.mcpReq.inputResponses, key);
  return answer.kind === 'elicit' && answer.action === 'accept' ? (answer.content ?? {}) : undefined;
};

/** The SEP-2322 scenarios' tools (multi-round-trip input_required results). */
export function registerInputRequiredTools(server: McpServer, shared: Shared): void {
  server.registerTool('test_input_required_result_elicitation', { description: 'Asks for a name' }, (ctx) => {
    const content = elicited(ctx, 'user_name');
    if (typeof content?.name !== 'string') return inputRequired({ inputRequests: { user_name: askName('What is your name?') } });
    return text(`Hello, ${content.name}!`);
  });
  server.registerTool('test_input_required_result_sampling', { description: 'Asks for a completion' }, (ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'capital_question');
    if (answer.kind !== 'sampling')
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
            maxTokens: 100,
          }),
        },
      });
    return text(`Sampling result: ${(answer.result.content as { text?: string }).text ?? ''}`);
  });
  server.registerTool('test_input_required_result_list_roots', { description: "Lists the client's roots" }, (ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (answer.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${answer.roots.map((r) => r.uri).join(', ')}`);
  });
  server.registerTool('test_input_required_result_request_state', { description: 'Asks for a confirmation, with state' }, async (ctx) => {
    const state = ctx.mcpReq.requestState<Record<string, unknown>>();
    const confirmed = elicited(ctx, 'confirm');
    if (state?.kind === 'request-state' && confirmed) return text(`state-ok: ok=${String(confirmed.ok)}`);
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: await shared.codec.mint({ kind: 'request-state' }),
    });
  });
  server.registerTool('test_input_required_result_multiple_inputs', { description: 'Asks for a name, a completion and the roots' }, async (ctx) => {
    const name = elicited(ctx, 'user_name');
    const greeting = inputResponse(ctx.mcpReq.inputResponses, 'greeting');
    const roots = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (ctx.mcpReq.requestState() !== undefined && name && greeting.kind === 'sampling' && roots.kind === 'roots')
      return text(`Name: ${String(name.name)}; Greeting: ${(greeting.result.content as { text?: string }).text ?? ''}; Roots: ${roots.roots.length}`);
    return inputRequired({
      inputRequests: {
        user_name: askName('What is your name?'),
        greeting: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await shared.codec.mint({ kind: 'multiple-inputs' }),
    });
  });
  server.registerTool('test_input_required_result_multi_round', { description: 'Asks twice' }, async (ctx) => {
    const state = ctx.mcpReq.requestState<Record<string, unknown>>();
    const step2 = elicited(ctx, 'step2');
    if (state?.round === 2 && step2) return text(`Multi-round complete for ${String(state.name)} who likes ${String(step2.color)}`);
    const step1 = elicited(ctx, 'step1');
    if (state?.round === 1 && step1)
      return inputRequired({
        inputRequests: {
          step2: inputRequired.elicit({
            message: 'Step 2: What is your favorite color?',
            requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
          }),
        },
        requestState: await shared.codec.mint({ round: 2, name: step1.name }),
      });
    return inputRequired({ inputRequests: { step1: askName('Step 1: What is your name?') }, requestState: await shared.codec.mint({ round: 1 }) });
  });
  server.registerTool('test_input_required_result_tampered_state', { description: 'Asks for a confirmation, with sealed state' }, async (ctx) => {
    // A forged state never reaches here: the codec's verify refuses it with -32602.
    if (ctx.mcpReq.requestState() !== undefined && elicited(ctx, 'confirm')) return text('state verified');
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: await shared.codec.mint({ kind: 'sealed' }),
    });
  });
  server.registerTool('test_input_required_result_capabilities', { description: 'Asks only for what the client declared' }, (ctx) => {
    const declared = clientCapabilities(server, ctx);
    const name = elicited(ctx, 'user_name');
    const sample = inputResponse(ctx.mcpReq.inputResponses, 'greeting');
    if (name || sample.kind === 'sampling') return text('thanks');
    const requests: InputRequests = {};
    if (declared.elicitation) requests.user_name = askName('What is your name?');
    if (declared.sampling)
      requests.greeting = inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 });
    if (Object.keys(requests).length === 0) return text('nothing to ask: the client declared neither elicitation nor sampling');
    return inputRequired({ inputRequests: requests });
  });
  // SEP-2322 on a request other than tools/call.
  server.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that asks for context' }, (ctx) => {
    const content = elicited(ctx, 'user_context');
    if (typeof content?.context !== 'string')
      return inputRequired({
        inputRequests: {
          user_context: inputRequired.elicit({
            message: 'What context should the prompt use?',
            requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
          }),
        },
      });
    return { messages: [{ role: 'user', content: { type: 'text', text: `Prompt with context: ${content.context}` } }] };
  });
}
