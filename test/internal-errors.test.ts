import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOperation, type AnyOperation } from '../src/core/operation.js';
import { operations } from '../src/core/operations/index.js';
import { buildApp } from '../src/http/app.js';
import { mcpClient, newWorkspace, rest, startTestApp, type TestApp } from './helpers/harness.js';

/** An operation that fails the way a defect does: an exception carrying internals. */
const broken = defineOperation({
  name: 'broken_operation',
  title: 'Broken',
  description: 'Fails with an unexpected error.',
  method: 'GET',
  path: '/broken',
  capability: null,
  input: z.strictObject({}),
  output: z.object({}),
  annotations: { readOnlyHint: true },
  handler: async () => {
    throw new Error('SELECT secret_value FROM secrets WHERE token = svcp_leaky');
  },
}) as unknown as AnyOperation;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await t.app.close();
  // The same services, served with one extra operation that breaks.
  t.app = await buildApp({ services: t.runtime.services, operations: [...operations, broken], logger: false });
  await t.app.ready();
});
afterAll(async () => {
  await t?.close();
});

describe('an unexpected error', () => {
  it('is a bare 500 internal on REST and MCP: no message, no SQL, no stack', async () => {
    const ws = await newWorkspace(t);
    const res = await rest(t, ws.token, 'GET', '/broken');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ type: 'urn:svc-admin:problem:internal', title: 'Internal error', status: 500, detail: expect.any(String), code: 'internal' });
    const client = await mcpClient(t, ws.token);
    const result = await client.callTool({ name: 'broken_operation', arguments: {} });
    await client.close();
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { code: string }).code).toBe('internal');
    for (const answer of [JSON.stringify(res.body), JSON.stringify(result)]) {
      expect(answer).not.toContain('SELECT');
      expect(answer).not.toContain('svcp_leaky');
      expect(answer).not.toContain('at ');
    }
  });
});
