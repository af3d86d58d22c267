import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import { gatewayServing, listenLoopback } from './gateway.js';
import { closeClients, newWorkspace, startTestApp, type TestApp } from './harness.js';
import { startModernUpstream } from './modern-upstream.js';
import { startEverything, type Upstream } from './upstreams.js';

/** A test app with one gateway in front of a 2025 upstream (server-everything, "Everything") and a 2026-07-28-only one ("Modern"). */
export interface TwoEraGateway {
  t: TestApp;
  ws: CreatedWorkspace;
  everything: Upstream;
  modern: Awaited<ReturnType<typeof startModernUpstream>>;
  token: string;
  url: string;
  close(): Promise<void>;
}

export async function startTwoEraGateway(name: string, modernOptions: Parameters<typeof startModernUpstream>[0] = {}): Promise<TwoEraGateway> {
  const [t, everything, modern] = await Promise.all([startTestApp(), startEverything('streamableHttp'), startModernUpstream(modernOptions)]);
  const base = await listenLoopback(t);
  const ws = await newWorkspace(t);
  const { token, url } = await gatewayServing(t, ws, base, name, [
    ['Everything', everything.url],
    ['Modern', modern.url],
  ]);
  return {
    t,
    ws,
    everything,
    modern,
    token,
    url,
    close: async () => {
      await closeClients();
      await t.close();
      await everything.close();
      await modern.close();
    },
  };
}
