import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { CreateTaskResultV2Schema, GetTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { expectWireShape, gatewayClient, listenLoopback, modernRequest, registerServer } from './helpers/gateway.js';
import { startModernUpstream } from './helpers/modern-upstream.js';
import { startTasksUpstream, TASKS_EXTENSION } from './helpers/tasks-upstream.js';
import type { Upstream } from './helpers/upstreams.js';

/**
 * The tasks extension of revision 2026-07-28 (SEP-2663) through a gateway: a v2-SDK
 * upstream that keeps tasks, a host of the revision. The task-creating tools/call is
 * sent as raw JSON-RPC, because the v2 client (2.4.0) refuses `resultType: 'task'`
 * (UnsupportedResultType); tasks/get, tasks/update and tasks/cancel go through the v2
 * client pinned to 2026-07-28, which writes the envelope and the Mcp-Name header.
 */
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let upstream: Awaited<ReturnType<typeof startTasksUpstream>>;
let plain: Upstream;
let url: string;
let token: string;
let connectionGuid: string;
let otherUrl: string;
let otherToken: string;
let plainUrl: string;
let plainToken: string;
const clients: { close(): Promise<void> }[] = [];

const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
const Task = z.looseObject({ taskId: z.string(), status: z.string() });
const Ack = z.looseObject({});

beforeAll(async () => {
  [t, upstream, plain] = await Promise.all([startTestApp(), startTasksUpstream(), startModernUpstream()]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  const { serverGuid } = await registerServer(t, ws, { name: 'Jobs', url: upstream.url, authType: 'none' });
  const { serverGuid: plainGuid } = await registerServer(t, ws, { name: 'Plain', url: plain.url, authType: 'none' });
  const gateway = async (name: string, servers: string[]) => {
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name });
    for (const inboundServerGuid of servers) await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid });
    return gw.body.guid as string;
  };
  const tasksGateway = await gateway('Tasks gateway', [serverGuid, plainGuid]);
  const plainGateway = await gateway('Plain gateway', [plainGuid]);
  const issue = async (gatewayGuid: string) => {
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid });
    return {
      token: issued.body.token as string,
      connectionGuid: issued.body.connectionGuid as string,
      url: (issued.body.url as string).replace(t.config.publicBaseUrl, base),
    };
  };
  ({ token, connectionGuid, url } = await issue(tasksGateway));
  // Another connection of the same gateway: another caller, whose tasks are not the first one's.
  ({ token: otherToken, url: otherUrl } = await issue(tasksGateway));
  ({ token: plainToken, url: plainUrl } = await issue(plainGateway));
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await upstream?.close();
  await plain?.close();
});

async function modernClient(capabilities: Record<string, unknown> = TASKS, at = { url, token }): Promise<Client> {
  const client = new Client({ name: 'tasks-host', version: '1.0.0' }, { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(at.url), { requestInit: { headers: { authorization: `Bearer ${at.token}` } } }));
  clients.push(client);
  return client;
}

/** One raw 2026-07-28 request, declaring the extension unless told otherwise. */
function raw(method: string, params: Record<string, unknown>, opts: { capabilities?: Record<string, unknown>; at?: { url: string; token: string } } = {}) {
  return modernRequest(opts.at ?? { url, token }, method, params, opts.capabilities ?? TASKS);
}

async function createTask(tool: string, args: Record<string, unknown>): Promise<string> {
  const created = await raw('tools/call', { name: tool, arguments: args });
  expect(created.body.result).toMatchObject({ resultType: 'task', status: expect.any(String) });
  expectWireShape(CreateTaskResultV2Schema, created.body.result);
  return created.body.result!.taskId as string;
}

/** tasks/get until the task leaves `from` (the upstream's own pace; no time is asserted). */
async function pollUntilNot(client: Client, taskId: string, from: string[]): Promise<Record<string, any>> {
  for (let i = 0; i < 200; i++) {
    const task = await client.request({ method: 'tasks/get', params: { taskId } }, Task);
    if (!from.includes(task.status)) return task;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`task stayed ${from.join('/')}`);
}

describe('the tasks extension through a gateway (2026-07-28 host, 2026-07-28 upstream)', () => {
  it('offers the extension only to 2026-07-28 callers with an upstream that offers it', async () => {
    expect((await modernClient()).getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    expect((await modernClient(TASKS, { url: plainUrl, token: plainToken })).getServerCapabilities()?.extensions).toBeUndefined();
    // Not offered, not served.
    const unoffered = await raw('tasks/get', { taskId: 'any' }, { at: { url: plainUrl, token: plainToken } });
    expect(unoffered.body.error).toMatchObject({ code: -32601, message: expect.stringMatching(/no server of this gateway offers/) });
    // A 2025 host's tasks on this upstream are bridged (test/gateway-core-tasks.test.ts); without an augmentation a
    // tool that requires a task (the v2 SDK's upstream lists no `execution` in revision 2026-07-28, so the host cannot
    // know) answers the upstream's -32021, as it answers a 2026-07-28 host without the extension.
    const legacy = await gatewayClient(url, token);
    clients.push(legacy);
    await expect(legacy.callTool({ name: 'jobs__confirm_delete', arguments: { filename: 'a.txt' } })).rejects.toThrow(/-32021/);
  });

  it('creates a task under a gateway id, polls it to its result, with the upstream seeing its own id', async () => {
    const taskId = await createTask('jobs__slow_compute', { seconds: 0, label: 'first' });
    const upstreamCall = upstream.requests.findLast((r) => r.method === 'tools/call')!;
    expect(upstreamCall.params.name).toBe('slow_compute');
    // The host's id is the gateway's, not the upstream's.
    expect(taskId).not.toMatch(/^task-/);
    const client = await modernClient();
    const done = await pollUntilNot(client, taskId, ['working']);
    expect(done).toMatchObject({ taskId, status: 'completed', result: { content: [{ type: 'text', text: 'computed first' }] } });
    // As a host of the revision reads it on the wire, the extension's own schema.
    expectWireShape(GetTaskResultV2Schema, (await raw('tasks/get', { taskId })).body.result);
    const get = upstream.requests.findLast((r) => r.method === 'tasks/get')!;
    expect(get.params.taskId).toMatch(/^task-/);
    // The upstream's Mcp-Name names its own task (the SDK's server checks it against the body).
    expect(get.mcpName).toBe(get.params.taskId);
  });

  it('relays an input_required task: tasks/get shows the request, tasks/update answers it', async () => {
    const taskId = await createTask('jobs__confirm_delete', { filename: 'notes.txt' });
    const client = await modernClient();
    const waiting = await client.request({ method: 'tasks/get', params: { taskId } }, Task);
    expect(waiting).toMatchObject({ taskId, status: 'input_required', inputRequests: { confirm: { method: 'elicitation/create' } } });
    const ack = await client.request(
      { method: 'tasks/update', params: { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } } },
      Ack,
    );
    expect(ack.taskId).toBeUndefined();
    const done = await pollUntilNot(client, taskId, ['input_required', 'working']);
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'deleted notes.txt' }] } });
  });

  it('cancels a task', async () => {
    const taskId = await createTask('jobs__slow_compute', { seconds: 600, label: 'long' });
    const client = await modernClient();
    await client.request({ method: 'tasks/cancel', params: { taskId } }, Ack);
    expect(await client.request({ method: 'tasks/get', params: { taskId } }, Task)).toMatchObject({ taskId, status: 'cancelled' });
  });

  it('refuses a forged task id, an altered one, and one issued to another connection, with -32602 in words', async () => {
    const forged = await raw('tasks/get', { taskId: 'upstream-task-0123456789ab' });
    expect(forged.body.error).toMatchObject({ code: -32602, message: 'Invalid taskId: it was not issued by this gateway for this connection.' });
    const taskId = await createTask('jobs__slow_compute', { seconds: 600, label: 'mine' });
    const altered = await raw('tasks/cancel', { taskId: `${taskId.slice(0, -2)}${taskId.endsWith('AA') ? 'AB' : 'AA'}` });
    expect(altered.body.error?.code).toBe(-32602);
    const stranger = await raw('tasks/cancel', { taskId }, { at: { url: otherUrl, token: otherToken } });
    expect(stranger.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/not issued by this gateway for this connection/) });
    // Still running: the other connection's cancel never reached the upstream.
    expect((await raw('tasks/get', { taskId })).body.result).toMatchObject({ status: 'working' });
    await raw('tasks/cancel', { taskId });
  });

  it("refuses tasks requests of a host that did not declare the extension (-32021), and the SDK's removed methods", async () => {
    const taskId = await createTask('jobs__slow_compute', { seconds: 600, label: 'undeclared' });
    const refused = await raw('tasks/get', { taskId }, { capabilities: {} });
    expect(refused.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } });
    // Without the extension the upstream runs the tool at once, as it would for the host directly.
    const sync = await raw('tools/call', { name: 'jobs__slow_compute', arguments: { label: 'now' } }, { capabilities: {} });
    expect(sync.body.result).toMatchObject({ resultType: 'complete', content: [{ text: 'computed now at once' }] });
    // tasks/list and tasks/result are not in the extension.
    for (const method of ['tasks/list', 'tasks/result']) expect((await raw(method, { taskId })).body.error?.code).toBe(-32601);
    await raw('tasks/cancel', { taskId });
  });

  it('logs each tasks request with the task’s tool and server', async () => {
    await t.runtime.services.callLogs.flush();
    const logs = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { gateway_connection_guid: connectionGuid }, includeDetail: true, take: 1000 });
    const items = logs.body.items as { type: string; method: string; tool_name: string | null; status: string; inbound_server_guid: string | null }[];
    const of = (method: string) => items.filter((r) => r.method === method);
    expect(of('tasks/get').length).toBeGreaterThan(0);
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      expect(of(method).length).toBeGreaterThan(0);
      expect(of(method).every((r) => r.type === 'other')).toBe(true);
    }
    expect(of('tasks/update').map((r) => [r.tool_name, r.status])).toContainEqual(['confirm_delete', 'ok']);
    expect(of('tasks/cancel').map((r) => r.tool_name)).toContain('slow_compute');
    // The forged id's row says why, without a server.
    expect(of('tasks/get').filter((r) => r.status === 'error' && r.tool_name === null).length).toBeGreaterThan(0);
  });
});
