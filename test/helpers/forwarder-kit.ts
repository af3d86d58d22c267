import { afterAll, afterEach, beforeAll } from 'vitest';
import type { NewAlert } from '../../src/core/alerts.js';
import { Forwarder, type ForwarderOptions } from '../../src/forwarder/forwarder.js';
import { closeClients, startTestApp, type TestApp } from './harness.js';
import { HecReceiver } from './hec-receiver.js';
import { OtlpReceiver } from './otlp-receiver.js';

/** Forwarder settings for tests: short polls and backoffs, small batches. */
export const FAST_FORWARDER: ForwarderOptions = {
  pollIntervalMs: 20,
  settleMs: 50,
  batchSize: 50,
  backoffInitialMs: 20,
  backoffMaxMs: 200,
  requestTimeoutMs: 2000,
};

/**
 * What the forwarder's test files share: one app whose own forwarder is stopped (each
 * test starts the forwarders it drives) and whose alerts are recorded, receivers and
 * forwarders stopped after each test. `env` is set before the app starts and removed
 * after. Registers the file's hooks; `onStart` hands the app to the file.
 */
export function forwarderKit(opts: { options?: ForwarderOptions; env?: Record<string, string>; onStart: (t: TestApp) => void }) {
  let t: TestApp;
  const alerts: NewAlert[] = [];
  const forwarders: Forwarder[] = [];
  const receivers: { stop(): Promise<void> }[] = [];
  beforeAll(async () => {
    Object.assign(process.env, opts.env ?? {});
    // A database of its own: the cursors must not be leased by other files' running forwarders.
    t = await startTestApp({}, { ownDatabase: true });
    await t.runtime.forwarder.stop();
    const original = t.runtime.services.alerts;
    t.runtime.services.alerts = {
      raise: async (a) => {
        alerts.push(a);
        await original.raise(a);
      },
    };
    opts.onStart(t);
  });
  afterEach(async () => {
    await Promise.all(forwarders.splice(0).map((f) => f.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
  });
  afterAll(async () => {
    await closeClients();
    await t?.close();
    for (const name of Object.keys(opts.env ?? {})) delete process.env[name];
  });
  return {
    alerts,
    /** A started forwarder over the app's services (stopped after the test). */
    forwarder(extra: ForwarderOptions = {}): Forwarder {
      const f = new Forwarder(t.runtime.services, t.runtime.services.metricsRegistry!, { ...FAST_FORWARDER, ...opts.options, ...extra });
      forwarders.push(f);
      f.start();
      return f;
    },
    async otlp(): Promise<OtlpReceiver> {
      const r = await new OtlpReceiver().start();
      receivers.push(r);
      return r;
    },
    async hec(token: string): Promise<HecReceiver> {
      const r = await new HecReceiver(token).start();
      receivers.push(r);
      return r;
    },
  };
}

/** Polls `check` until it holds, or fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
