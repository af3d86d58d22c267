import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invoke } from './helpers/harness.js';
import { startTwoEraGateway, type TwoEraGateway } from './helpers/two-era-gateway.js';

/**
 * The MCP Inspector's CLI (`@modelcontextprotocol/inspector`, built on the v2 client) as the host: the tool people
 * reach for first to try a server. Through a gateway in front of a 2025 upstream (server-everything) and a
 * 2026-07-28-only one (across the bridge: the CLI opens a 2025-11-25 session), it lists and calls tools, lists prompts and resources, and its calls are logged. It only
 * connects out, to the gateway on loopback; its HOME is a scratch directory (it writes its settings there).
 */
const inspectorBin = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json')),
  'clients/launcher/build/index.js',
);
const run = promisify(execFile);

let g: TwoEraGateway;
let home: string;

beforeAll(async () => {
  g = await startTwoEraGateway('Inspected');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'inspector-home-'));
}, 120_000);

afterAll(async () => {
  await g?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** One Inspector CLI command against the gateway: whether it succeeded, and what it printed. */
async function inspector(args: string[], bearer = g.token): Promise<{ ok: boolean; out: string }> {
  const argv = [inspectorBin, '--cli', g.url, '--header', `Authorization: Bearer ${bearer}`, '--format', 'json', ...args];
  try {
    const { stdout } = await run(process.execPath, argv, { env: { PATH: process.env.PATH ?? '', HOME: home }, timeout: 60_000 });
    return { ok: true, out: stdout };
  } catch (err) {
    const failed = err as { stdout?: string; stderr?: string };
    return { ok: false, out: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

/** The result the CLI prints (`{"result": ...}` with --format json). */
const resultOf = (out: string): any => (JSON.parse(out) as { result: unknown }).result;

describe('the MCP Inspector CLI through a gateway', () => {
  it('lists the tools of both upstreams and calls each', async () => {
    const listed = await inspector(['--method', 'tools/list']);
    expect(listed.ok, listed.out).toBe(true);
    const names = (resultOf(listed.out) as { tools: { name: string }[] }).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['everything__echo', 'modern__shout']));

    const echoed = await inspector(['--method', 'tools/call', '--tool-name', 'everything__echo', '--tool-arg', 'message=inspected']);
    expect(echoed.ok, echoed.out).toBe(true);
    expect(resultOf(echoed.out).content[0].text).toBe('Echo: inspected');

    const shouted = await inspector(['--method', 'tools/call', '--tool-name', 'modern__shout', '--tool-arg', 'text=inspected']);
    expect(shouted.ok, shouted.out).toBe(true);
    expect(resultOf(shouted.out).content[0].text).toBe('INSPECTED');
  }, 120_000);

  it('lists prompts and resources', async () => {
    const prompts = await inspector(['--method', 'prompts/list']);
    expect(prompts.ok, prompts.out).toBe(true);
    expect((resultOf(prompts.out) as { prompts: { name: string }[] }).prompts.map((p) => p.name)).toContain('modern__haiku');
    const resources = await inspector(['--method', 'resources/list']);
    expect(resources.ok, resources.out).toBe(true);
    expect((resultOf(resources.out) as { resources: { uri: string }[] }).resources.map((r) => r.uri)).toContain('modern://motd');
  }, 120_000);

  it('logs its calls, with the revision it spoke', async () => {
    await g.t.runtime.services.callLogs.flush();
    const logs = await invoke(g.t, 'rest', g.ws.token, 'query_logs', { filters: { type: 'tool_call' }, take: 100 });
    const rows = logs.body.items as { tool_name: string; status: string; protocol_version: string | null }[];
    const echo = rows.find((r) => r.tool_name === 'echo');
    expect(echo).toMatchObject({ status: 'ok' });
    // Inspector 2.12's client opens a 2025-11-25 session; the 2026-07-28-only upstream is reached across the bridge.
    expect(echo!.protocol_version).toBe('2025-11-25');
    expect(rows.find((r) => r.tool_name === 'shout')).toMatchObject({ status: 'ok', protocol_version: '2025-11-25' });
  });

  it('is refused with a g.token that is not the gateway’s, and the g.token it sent is not echoed back', async () => {
    const forged = 'mcpgw_' + 'x'.repeat(40);
    const refused = await inspector(['--method', 'tools/list'], forged);
    expect(refused.ok).toBe(false);
    expect(refused.out).not.toContain(forged);
  }, 120_000);
});
