import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import { gatewayServing, listenLoopback } from './gateway.js';
import { closeClients, newWorkspace, startTestApp, type TestApp } from './harness.js';
import { startModernUpstream } from './modern-upstream.js';
import { startEverything, type Upstream } from './upstreams.js';
import { startUpstreamTap, type UpstreamTap } from './upstream-tap.js';

/** A test app with one gateway in front of a 2025 upstream (server-everything, "Everything") and a 2026-07-28-only one ("Modern"). */
export interface TwoEraGateway {
  t: TestApp;
  ws: CreatedWorkspace;
  everything: Upstream;
  modern: Awaited<ReturnType<typeof startModernUpstream>>;
  /** What server-everything is sent (it is registered behind this tap), when asked for with `tapEverything`. */
  tap: UpstreamTap | null;
  token: string;
  url: string;
  close(): Promise<void>;
}

export async function startTwoEraGateway(
  name: string,
  modernOptions: Parameters<typeof startModernUpstream>[0] = {},
  opts: { tapEverything?: boolean } = {},
): Promise<TwoEraGateway> {
  const [t, everything, modern] = await Promise.all([startTestApp(), startEverything('streamableHttp'), startModernUpstream(modernOptions)]);
  const tap = opts.tapEverything ? await startUpstreamTap(everything.url) : null;
  const base = await listenLoopback(t);
  const ws = await newWorkspace(t);
  const { token, url } = await gatewayServing(t, ws, base, name, [
    ['Everything', tap?.url ?? everything.url],
    ['Modern', modern.url],
  ]);
  return {
    t,
    ws,
    everything,
    modern,
    tap,
    token,
    url,
    close: async () => {
      await closeClients();
      await t.close();
      await tap?.close();
      await everything.close();
      await modern.close();
    },
  };
}
