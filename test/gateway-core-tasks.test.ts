import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { CancelTaskResultV2Schema, CreateTaskResultV2Schema, GetTaskResultV2Schema, UpdateTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { answerOf, expectWireShape, gatewayClient, gatewayServing, legacySseClient, listenLoopback, modernRequest, startReplica } from './helpers/gateway.js';
import { startUpstreamTap, type UpstreamTap } from './helpers/upstream-tap.js';
import { startTasksUpstream, TASKS_EXTENSION } from './helpers/tasks-upstream.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * Revision 2025-11-25's core tasks through a gateway: server-everything (whose
 * `simulate-research-query` requires a task) behind a tap that records what the
 * upstream is sent, and the 1.x SDK's client as the 2025-11-25 host, following tasks
 * the way it does with a server directly (`callToolStream`: tasks/get until a
 * terminal or input_required status, then tasks/result). Then the same host's tasks on
 * the v2-SDK upstream of gateway-tasks.test.ts, which has the tasks extension of
 * revision 2026-07-28 only: bridged.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let tap: UpstreamTap;
let at: { url: string; token: string; gatewayGuid: string };
const clients: { close(): Promise<void> }[] = [];

const RESEARCH = 'everything__simulate-research-query';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

beforeAll(async () => {
  [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
  tap = await startUpstreamTap(everything.url);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  at = await gatewayServing(t, ws, base, 'Tasks 2025', [['Everything', tap.url]]);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await tap?.close();
  await everything?.close();
});

async function host(capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = await gatewayClient(at.url, at.token, { capabilities });
  clients.push(client);
  return client;
}

/** One raw JSON-RPC request to the gateway (in `sessionId` when given); the answer and the session id it named. */
async function raw(
  method: string,
  params: Record<string, unknown>,
  sessionId?: string,
): Promise<{ body: { result?: Record<string, any>; error?: { code: number; message: string } }; sessionId: string | null }> {
  const res = await fetch(at.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${at.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(sessionId ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { body: await answerOf(res), sessionId: res.headers.get('mcp-session-id') };
}

/** The ids of the tasks the upstream was asked about, in the order asked: the upstream's own. */
const upstreamTaskIds = (): string[] => tap.messages.filter((m) => m.method?.startsWith('tasks/')).map((m) => String(m.params?.taskId));

async function startResearch(client: Client, topic: string): Promise<string> {
  const created = await client.request(
    { method: 'tools/call', params: { name: RESEARCH, arguments: { topic }, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  return created.task.taskId;
}

/**
 * The answered tasks requests of a gateway's call log, after checking that each of
 * tasks/get, tasks/result and tasks/cancel has rows, typed `other`, with a tool and a server.
 */
async function tasksRows(gatewayGuid: string): Promise<{ method: string; tool_name: string | null }[]> {
  await t.runtime.services.callLogs.flush();
  const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { outbound_gateway_guid: gatewayGuid }, take: 1000 });
  const items = logs.body.items as { type: string; method: string; tool_name: string | null; status: string; inbound_server_guid: string | null }[];
  const rows = items.filter((r) => r.method.startsWith('tasks/') && r.status === 'ok');
  for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) expect(rows.filter((r) => r.method === method).length, method).toBeGreaterThan(0);
  expect(rows.every((r) => r.type === 'other' && r.tool_name !== null && r.inbound_server_guid !== null)).toBe(true);
  return rows;
}

describe('core tasks of revision 2025-11-25 through a gateway (2025-11-25 host, server-everything)', () => {
  it('offers tasks to a 2025-11-25 host with an upstream that has them, and to no older revision', async () => {
    const client = await host();
    expect(client.getServerCapabilities()?.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const older = await raw('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'older', version: '1' } });
    expect(older.body.result?.protocolVersion).toBe('2025-06-18');
    expect(older.body.result?.capabilities.tasks).toBeUndefined();
    const refused = await raw('tasks/get', { taskId: 'any' }, older.sessionId!);
    expect(refused.body.error).toMatchObject({ code: -32601, message: expect.stringMatching(/revision 2025-11-25/) });
    // tasks/list is not offered: the gateway's tasks live on several upstreams, and the capability does not name it.
    await expect(client.experimental.tasks.listTasks()).rejects.toThrow(/-32601/);
  });

  it('runs a task to its result: the host knows it by the gateway’s id, the upstream by its own', async () => {
    const client = await host();
    // What the session hears besides its answers (its GET stream): the upstream's status notifications name its own ids.
    const heard: { method: string; params?: Record<string, any> }[] = [];
    client.fallbackNotificationHandler = async (notification) => void heard.push(notification);
    const before = upstreamTaskIds().length;
    const messages: { type: string; task?: { taskId: string; status: string }; result?: { content: { text?: string }[]; _meta?: Record<string, any> } }[] = [];
    for await (const message of client.experimental.tasks.callToolStream({ name: RESEARCH, arguments: { topic: 'tides' } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    }))
      messages.push(message as (typeof messages)[number]);
    const created = messages.find((m) => m.type === 'taskCreated')!;
    const hostId = created.task!.taskId;
    expect(messages.filter((m) => m.task).every((m) => m.task!.taskId === hostId)).toBe(true);
    expect(messages.map((m) => m.task?.status).filter(Boolean)).toContain('working');
    const result = messages.at(-1)!;
    expect(result.type).toBe('result');
    expect(result.result!.content[0]!.text).toMatch(/# Research Report: tides/);
    // The upstream had the augmentation and was asked with its own id; the host never saw that id.
    const call = tap.messages.findLast((m) => m.method === 'tools/call')!;
    expect(call.params).toMatchObject({ name: 'simulate-research-query', task: { ttl: 60_000 } });
    const asked = upstreamTaskIds().slice(before);
    expect(new Set(asked).size).toBe(1);
    expect(asked[0]).not.toBe(hostId);
    // Its status notifications reach the session's event stream naming the task by the host's id.
    const statuses = () => heard.filter((n) => n.method === 'notifications/tasks/status');
    await vi.waitFor(() => expect(statuses().map((n) => n.params!.status)).toContain('completed'), { timeout: 10_000 });
    expect(statuses().every((n) => n.params!.taskId === hostId)).toBe(true);
    expect(JSON.stringify([messages, heard])).not.toContain(asked[0]);
    expect(tap.messages.findLast((m) => m.method === 'tasks/result')?.params?.taskId).toBe(asked[0]);
  }, 30_000);

  it('relays the input a task asks for on its tasks/result stream, naming the task by the host’s id', async () => {
    const asked: ElicitRequest[] = [];
    const client = await host({ elicitation: { form: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request);
      return { action: 'accept', content: { interpretation: 'snake' } };
    });
    let hostId = '';
    let text = '';
    for await (const message of client.experimental.tasks.callToolStream(
      { name: RESEARCH, arguments: { topic: 'python', ambiguous: true } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      if (message.type === 'taskCreated') hostId = message.task.taskId;
      if (message.type === 'result') text = String((message.result.content[0] as { text: string }).text);
    }
    expect(text).toMatch(/Research Report: python \(snake\)/);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.params._meta?.[RELATED_TASK]).toEqual({ taskId: hostId });
  }, 30_000);

  it('runs a task for a host on the legacy HTTP+SSE endpoint (which negotiates 2025-11-25 too)', async () => {
    const client = await legacySseClient(at.url.replace(/\/mcp$/, '/sse'), at.token);
    clients.push(client);
    expect(client.getServerCapabilities()?.tasks).toBeDefined();
    const types: string[] = [];
    let text = '';
    for await (const message of client.experimental.tasks.callToolStream({ name: RESEARCH, arguments: { topic: 'reefs' } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    })) {
      types.push(message.type);
      if (message.type === 'result') text = String((message.result.content[0] as { text: string }).text);
    }
    expect(types[0]).toBe('taskCreated');
    expect(text).toMatch(/# Research Report: reefs/);
  }, 30_000);

  it('cancels a task', async () => {
    const client = await host();
    const taskId = await startResearch(client, 'glaciers');
    expect(await client.experimental.tasks.cancelTask(taskId)).toMatchObject({ taskId, status: 'cancelled' });
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'cancelled' });
    const upstreamId = String(tap.messages.findLast((m) => m.method === 'tasks/cancel')?.params?.taskId);
    expect(upstreamId).not.toBe(taskId);
    // The upstream's answer for a task without a result names it: by the host's id.
    const noResult = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).catch((err: Error) => err);
    expect(String(noResult)).toContain(`Task ${taskId} has no result stored`);
    expect(String(noResult)).not.toContain(upstreamId);
  });

  it('ends the host’s session (404) when server-everything forgot the upstream one (it answers 400, not 404)', async () => {
    const opened = await raw('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'forgotten', version: '1' } });
    const before = tap.messages.length;
    const echo = () =>
      fetch(at.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${at.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': opened.sessionId!,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'everything__echo', arguments: { message: 'hi' } } }),
      });
    expect((await echo()).status).toBe(200);
    const { sessionId } = tap.messages.slice(before).find((m) => m.method === 'tools/call')!;
    await fetch(tap.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' } });
    // As the revision says of a session the server no longer has: the host initializes again.
    expect((await echo()).status).toBe(404);
  });

  it('refuses a forged id and one issued to another session or connection, before any upstream hears of it', async () => {
    const client = await host();
    const taskId = await startResearch(client, 'dunes');
    const asked = tap.messages.length;
    await expect(client.experimental.tasks.getTask('upstream-task-0123456789ab')).rejects.toThrow(/-32602.*not issued by this gateway/);
    // The same connection's next session: its upstream session holds none of the first one's tasks.
    const another = await host();
    await expect(another.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/-32602/);
    // Another connection of the same gateway.
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: at.gatewayGuid });
    const stranger = await gatewayClient(at.url, issued.body.token);
    clients.push(stranger);
    await expect(stranger.experimental.tasks.getTask(taskId)).rejects.toThrow(/-32602/);
    expect(tap.messages.slice(asked).filter((m) => m.method?.startsWith('tasks/'))).toEqual([]);
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'working' });
    await client.experimental.tasks.cancelTask(taskId);
  });

  it('relays a task the host runs for the upstream (a task-augmented elicitation, polled by the upstream)', async () => {
    const client = new Client(
      { name: 'task-runner', version: '1' },
      { capabilities: { elicitation: { form: {} }, tasks: { requests: { elicitation: { create: {} } } } }, taskStore: new InMemoryTaskStore() },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(at.url), { requestInit: { headers: { authorization: `Bearer ${at.token}` } } }));
    clients.push(client);
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      if (!request.params.task) return { action: 'accept', content: { name: 'sync' } };
      const task = await extra.taskStore!.createTask({ ttl: 60_000 });
      setTimeout(() => void extra.taskStore!.storeTaskResult(task.taskId, 'completed', { action: 'accept', content: { name: 'Ada' } }), 300);
      return { task };
    });
    // server-everything lists the tool only to a host that can run elicitations as tasks.
    const result = await client.callTool({ name: 'everything__trigger-elicitation-request-async', arguments: {} }, undefined, { timeout: 30_000 });
    const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
    expect(text).toMatch(/\[COMPLETED\][\s\S]*Name: Ada/);
    // The upstream polled the host's task by the host's own id (the gateway relays these requests as they are).
    expect(text).toMatch(/Poll \d+: completed/);
  }, 40_000);

  it('logs each tasks request with the task’s tool and server', async () => {
    const rows = await tasksRows(at.gatewayGuid);
    expect(rows.every((r) => r.tool_name === 'simulate-research-query')).toBe(true);
  });
});

describe('a 2026-07-28 host’s tasks on server-everything (2025-11-25 core tasks), bridged to the tasks extension', () => {
  const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
  const asHost = (method: string, params: Record<string, unknown>, capabilities: Record<string, unknown> = TASKS) =>
    modernRequest(at, method, params, capabilities);

  async function createTask(args: Record<string, unknown>, capabilities: Record<string, unknown> = TASKS): Promise<string> {
    const created = await asHost('tools/call', { name: RESEARCH, arguments: args }, capabilities);
    expect(created.body.result, JSON.stringify(created.body)).toMatchObject({ resultType: 'task', status: 'working', ttlMs: expect.any(Number) });
    expectWireShape(CreateTaskResultV2Schema, created.body.result);
    return created.body.result!.taskId as string;
  }

  /** tasks/get until the task leaves `from` (the upstream's own pace; no time is asserted), through `via` (a replica) when given. */
  async function pollUntilNot(
    taskId: string,
    from: string[],
    capabilities: Record<string, unknown> = TASKS,
    via: { url: string; token: string } = at,
  ): Promise<Record<string, any>> {
    for (let i = 0; i < 300; i++) {
      const got = await modernRequest(via, 'tasks/get', { taskId }, capabilities);
      expect(got.body.error).toBeUndefined();
      expectWireShape(GetTaskResultV2Schema, got.body.result);
      if (!from.includes(got.body.result!.status)) return got.body.result!;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`task stayed ${from.join('/')}`);
  }

  it('offers the extension, and runs the task to its result under the gateway’s id, in an upstream session of its own', async () => {
    const modern = new ModernClient({ name: 'modern-host', version: '1.0.0' }, { capabilities: TASKS, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await modern.connect(new ModernTransport(new URL(at.url), { requestInit: { headers: { authorization: `Bearer ${at.token}` } } }));
    clients.push(modern);
    expect(modern.getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    const before = tap.messages.length;
    const taskId = await createTask({ topic: 'tides' });
    const call = tap.messages.slice(before).find((m) => m.method === 'tools/call')!;
    expect(call.params).toMatchObject({ name: 'simulate-research-query', task: { ttl: 3_600_000 } });
    const done = await pollUntilNot(taskId, ['working']);
    expect(done).toMatchObject({ taskId, status: 'completed', resultType: 'complete', result: { content: [{ type: 'text' }] } });
    expect(done.result.content[0].text).toMatch(/# Research Report: tides/);
    // The upstream was asked with its own id, which the host never saw (nor its related-task _meta).
    const asked = new Set(
      tap.messages
        .slice(before)
        .filter((m) => m.method?.startsWith('tasks/'))
        .map((m) => String(m.params?.taskId)),
    );
    expect(asked.size).toBe(1);
    const [upstreamId] = [...asked];
    expect(upstreamId).not.toBe(taskId);
    expect(JSON.stringify(done)).not.toContain(upstreamId);
    expect(done.result._meta?.[RELATED_TASK]).toBeUndefined();
    // The task's requests went in the session its call opened, not in a session shared with other calls.
    const sessionOf = (m: (typeof tap.messages)[number]) => m.sessionId;
    const taskMessages = tap.messages.slice(before).filter((m) => m.method === 'tools/call' || m.params?.taskId === upstreamId);
    expect(new Set(taskMessages.map(sessionOf)).size).toBe(1);
    expect(sessionOf(taskMessages[0]!)).toBeTruthy();
    // It outlives the call: the task lives there until its time to live ends.
    expect(tap.ended).not.toContain(sessionOf(taskMessages[0]!));
  }, 30_000);

  it('ends the session it opened at once when the call makes no task', async () => {
    const before = tap.messages.length;
    const answer = await asHost('tools/call', { name: RESEARCH, arguments: { topic: 42 } });
    expect(answer.body.result?.resultType).not.toBe('task');
    const call = tap.messages.slice(before).find((m) => m.method === 'tools/call')!;
    expect(call.params).toMatchObject({ task: { ttl: 3_600_000 } });
    await vi.waitFor(() => expect(tap.ended).toContain(call.sessionId), { timeout: 5_000 });
  });

  it('asks for the extension a host did not declare (-32021), before the upstream hears of the call', async () => {
    const before = tap.messages.length;
    const refused = await asHost('tools/call', { name: RESEARCH, arguments: { topic: 'tides' } }, {});
    expect(refused.body.error).toMatchObject({
      code: -32021,
      message: expect.stringMatching(/simulate-research-query of server everything runs only as a task/),
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
    expect(tap.messages.slice(before).filter((m) => m.method === 'tools/call')).toEqual([]);
    // Its other tools serve it as ever.
    const echo = await asHost('tools/call', { name: 'everything__echo', arguments: { message: 'hi' } }, {});
    expect(echo.body.result).toMatchObject({ content: [{ text: 'Echo: hi' }] });
  });

  it('shows what an input_required task asks in tasks/get, and sends the tasks/update answer to the upstream', async () => {
    const capabilities = { ...TASKS, elicitation: { form: {} } };
    const taskId = await createTask({ topic: 'python', ambiguous: true }, capabilities);
    const waiting = await pollUntilNot(taskId, ['working'], capabilities);
    expect(waiting).toMatchObject({ taskId, status: 'input_required' });
    const entries = Object.entries(waiting.inputRequests as Record<string, { method: string; params: { message: string } }>);
    expect(entries).toHaveLength(1);
    const [key, request] = entries[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { message: expect.stringMatching(/python/i) } });
    // The request reaches the host as the extension's: no related-task _meta naming the upstream's task.
    expect(JSON.stringify(request)).not.toContain(RELATED_TASK);
    // A key the gateway did not issue for this task is refused, and nothing reaches the upstream.
    const forged = await asHost('tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: {} } } }, capabilities);
    expect(forged.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/names no request of this task/) });
    const ack = await asHost('tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { interpretation: 'snake' } } } }, capabilities);
    expectWireShape(UpdateTaskResultV2Schema, ack.body.result);
    expect(ack.body.result!.taskId).toBeUndefined();
    const done = await pollUntilNot(taskId, ['input_required', 'working'], capabilities);
    expect(done.status).toBe('completed');
    expect(done.result.content[0].text).toMatch(/Research Report: python \(snake\)/);
  }, 30_000);

  it('serves the task from another replica: the id names the upstream session the task lives in', async () => {
    const taskId = await createTask({ topic: 'reefs' });
    const replica = await startReplica(t.runtime.services);
    try {
      const done = await pollUntilNot(taskId, ['working'], TASKS, { url: at.url.replace(base, replica.base), token: at.token });
      expect(done.result.content[0].text).toMatch(/# Research Report: reefs/);
    } finally {
      await replica.app.close();
    }
  }, 30_000);

  it('says so when the upstream no longer has the task’s session', async () => {
    const before = tap.messages.length;
    const taskId = await createTask({ topic: 'estuaries' });
    const { sessionId } = tap.messages.slice(before).find((m) => m.method === 'tools/call')!;
    // The upstream forgets the session (as a restarted server would).
    const forgot = await fetch(tap.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' } });
    expect(forgot.status).toBeLessThan(300);
    const gone = await asHost('tasks/get', { taskId });
    expect(gone.body.error).toMatchObject({ code: -32000, message: expect.stringMatching(/no longer has the session the task lived in/) });
  });

  it('opens another pooled session when server-everything forgot the one its calls shared (it answers 400, not 404)', async () => {
    const echo = () => asHost('tools/call', { name: 'everything__echo', arguments: { message: 'again' } }, {});
    const before = tap.messages.length;
    expect((await echo()).body.result).toMatchObject({ content: [{ text: 'Echo: again' }] });
    const { sessionId } = tap.messages.slice(before).find((m) => m.method === 'tools/call')!;
    await fetch(tap.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' } });
    const after = tap.messages.length;
    expect((await echo()).body.result).toMatchObject({ content: [{ text: 'Echo: again' }] });
    const calls = tap.messages.slice(after).filter((m) => m.method === 'tools/call');
    expect(calls.map((m) => m.sessionId)).toEqual([sessionId, expect.not.stringMatching(sessionId!)]);
  });

  it('cancels a task, and refuses its id to another connection', async () => {
    const taskId = await createTask({ topic: 'glaciers' });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: at.gatewayGuid });
    const stranger = await modernRequest({ url: at.url, token: issued.body.token }, 'tasks/cancel', { taskId }, TASKS);
    expect(stranger.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/not issued by this gateway for this connection/) });
    const cancelled = await asHost('tasks/cancel', { taskId });
    expectWireShape(CancelTaskResultV2Schema, cancelled.body.result);
    expect(cancelled.body.result!.taskId).toBeUndefined();
    expect((await asHost('tasks/get', { taskId })).body.result).toMatchObject({ taskId, status: 'cancelled' });
  });
});

describe('a 2025-11-25 host’s tasks on a 2026-07-28 upstream with the tasks extension, bridged', () => {
  let modern: Awaited<ReturnType<typeof startTasksUpstream>>;
  let jobs: { url: string; token: string; gatewayGuid: string };
  const JOBS = 'jobs__';

  beforeAll(async () => {
    modern = await startTasksUpstream();
    jobs = await gatewayServing(t, ws, base, 'Tasks bridged', [['Jobs', modern.url]]);
  }, 60_000);

  afterAll(async () => {
    await modern?.close();
  });

  async function jobsHost(capabilities: Record<string, unknown> = {}): Promise<Client> {
    const client = await gatewayClient(jobs.url, jobs.token, { capabilities });
    clients.push(client);
    return client;
  }

  /** callToolStream's messages for one tool called as a task. */
  async function follow(client: Client, name: string, args: Record<string, unknown>) {
    const messages: { type: string; task?: { taskId: string; status: string }; result?: Record<string, any>; error?: { code: number; message: string } }[] = [];
    for await (const message of client.experimental.tasks.callToolStream({ name: `${JOBS}${name}`, arguments: args }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    }))
      messages.push(message as (typeof messages)[number]);
    return messages;
  }

  it('offers tasks, and runs one to its result: the upstream hears the extension declared, the host gets 2025-11-25 shapes', async () => {
    const client = await jobsHost();
    expect(client.getServerCapabilities()?.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const messages = await follow(client, 'slow_compute', { seconds: 0.3, label: 'bridged' });
    const created = messages[0]!;
    expect(created).toMatchObject({ type: 'taskCreated', task: { status: 'working', ttl: 600_000, createdAt: expect.any(String) } });
    expect(created.task!.taskId).not.toMatch(/^task-/);
    expect(messages.at(-1)).toMatchObject({ type: 'result', result: { content: [{ type: 'text', text: 'computed bridged' }] } });
    expect(messages.at(-1)!.result!._meta?.[RELATED_TASK]).toEqual({ taskId: created.task!.taskId });
    const call = modern.requests.findLast((r) => r.method === 'tools/call')!;
    expect(call.params.task).toBeUndefined();
    expect((call.params._meta as Record<string, unknown>)['io.modelcontextprotocol/clientCapabilities']).toMatchObject({
      extensions: { [TASKS_EXTENSION]: {} },
    });
    // tasks/result is not a method of the upstream's revision: it was polled with its own tasks/get and its own id.
    expect(modern.requests.some((r) => r.method === 'tasks/result')).toBe(false);
    expect(modern.requests.findLast((r) => r.method === 'tasks/get')!.params.taskId).toMatch(/^task-/);
  }, 30_000);

  it('asks the host what an input_required task asks, on the tasks/result stream, and answers with tasks/update', async () => {
    const asked: ElicitRequest[] = [];
    const client = await jobsHost({ elicitation: { form: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request);
      return { action: 'accept', content: { confirm: true } };
    });
    const messages = await follow(client, 'confirm_delete', { filename: 'notes.txt' });
    expect(messages.map((m) => m.task?.status).filter(Boolean)).toContain('input_required');
    expect(messages.at(-1)).toMatchObject({ type: 'result', result: { content: [{ text: 'deleted notes.txt' }] } });
    expect(asked.map((r) => r.params.message)).toEqual(['Delete notes.txt?']);
    expect(modern.requests.findLast((r) => r.method === 'tasks/update')!.params).toMatchObject({
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
  }, 30_000);

  it('refuses an input_required task’s request to a host without the capability, in words', async () => {
    const client = await jobsHost();
    const messages = await follow(client, 'confirm_delete', { filename: 'kept.txt' });
    expect(messages.at(-1)).toMatchObject({ type: 'error' });
    expect(String(messages.at(-1)!.error!.message)).toMatch(/needs elicitation\/create from the host, which did not declare the elicitation capability/);
  }, 30_000);

  it('gives a tool error as the result and a protocol error as the error', async () => {
    const client = await jobsHost();
    expect((await follow(client, 'failing_job', {})).at(-1)).toMatchObject({
      type: 'result',
      result: { isError: true, content: [{ text: 'the job failed' }] },
    });
    // The SDK's client says a failed task failed without asking; tasks/result gives the task's own error (held until it ends).
    const created = await client.request(
      { method: 'tools/call', params: { name: `${JOBS}protocol_error_job`, arguments: {}, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await expect(client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema)).rejects.toThrow(/-32603.*the job crashed/);
  }, 30_000);

  it('cancels a task and answers tasks/get and tasks/cancel with the task as it is', async () => {
    const client = await jobsHost();
    const created = await client.request(
      { method: 'tools/call', params: { name: `${JOBS}slow_compute`, arguments: { seconds: 600, label: 'long' }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(await client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'working' });
    expect(await client.experimental.tasks.cancelTask(taskId)).toMatchObject({ taskId, status: 'cancelled' });
    await expect(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/was cancelled/);
    // Another session's request never reaches the upstream.
    const other = await jobsHost();
    const asked = modern.requests.length;
    await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(/-32602/);
    expect(modern.requests.length).toBe(asked);
  }, 30_000);

  it('logs each bridged tasks request with the task’s tool and server', async () => {
    const rows = await tasksRows(jobs.gatewayGuid);
    expect(rows.filter((r) => r.method === 'tasks/result').map((r) => r.tool_name)).toContain('confirm_delete');
  });
});
