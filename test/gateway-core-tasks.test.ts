import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, gatewayServing, legacySseClient, listenLoopback } from './helpers/gateway.js';
import { startUpstreamTap, type UpstreamTap } from './helpers/upstream-tap.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * Revision 2025-11-25's core tasks through a gateway: server-everything (whose
 * `simulate-research-query` requires a task) behind a tap that records what the
 * upstream is sent, and the 1.x SDK's client as the 2025-11-25 host, following tasks
 * the way it does with a server directly (`callToolStream`: tasks/get until a
 * terminal or input_required status, then tasks/result).
 */
let t: TestApp;
let ws: CreatedWorkspace;
let everything: Upstream;
let tap: UpstreamTap;
let at: { url: string; token: string; gatewayGuid: string };
const clients: Client[] = [];

const RESEARCH = 'everything__simulate-research-query';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

beforeAll(async () => {
  [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
  tap = await startUpstreamTap(everything.url);
  const base = await listenLoopback(t);
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
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .find((l) => l.startsWith('data:'))!
        .slice(5)
    : text;
  return { body: JSON.parse(json), sessionId: res.headers.get('mcp-session-id') };
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
    const heard: unknown[] = [];
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
    expect(tap.messages.findLast((m) => m.method === 'tasks/cancel')?.params?.taskId).not.toBe(taskId);
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
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { outbound_gateway_guid: at.gatewayGuid }, take: 1000 });
    const items = logs.body.items as { type: string; method: string; tool_name: string | null; status: string }[];
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const rows = items.filter((r) => r.method === method && r.status === 'ok');
      expect(rows.length, method).toBeGreaterThan(0);
      expect(rows.every((r) => r.type === 'other' && r.tool_name === 'simulate-research-query')).toBe(true);
    }
  });
});
