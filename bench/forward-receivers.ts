/**
 * The bench's collectors, in a worker thread: the strict OTLP and HEC test receivers
 * (validation on, exactly the classes the tests use) with their own event loop, so
 * their JSON parsing and validation do not compete with the forwarder's on one thread,
 * as a real collector would run in its own process.
 *
 * Counts of accepted records are shared with the bench thread through a
 * SharedArrayBuffer (polled without messages); ingest-to-delivery lags of requests
 * under /lag/ and the reasons of refused requests are sent back on request. Accepted items are counted, then dropped, so
 * a long run does not hold every parsed record in memory.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { ReceivedRequest } from '../test/helpers/receiver-base.js';
import { HecReceiver } from '../test/helpers/hec-receiver.js';
import { OtlpReceiver } from '../test/helpers/otlp-receiver.js';

/** Slots of the shared counters (bench/forward.ts reads them by the same numbers). */
const COUNTER = { otlpLogs: 0, otlpSpans: 1, hecEvents: 2 } as const;

const counters = new Int32Array(workerData.counters as SharedArrayBuffer);
const lags: number[] = [];

class CountingOtlpReceiver extends OtlpReceiver {
  protected override accept(req: ReceivedRequest, partial?: { rejected: number }): void {
    super.accept(req, partial);
    Atomics.add(counters, COUNTER.otlpLogs, this.logs.length);
    Atomics.add(counters, COUNTER.otlpSpans, this.spans.length);
    if (req.path.startsWith('/lag/')) {
      for (const l of this.logs) lags.push(l.receivedAt - Number(BigInt(l.record.observedTimeUnixNano as string) / 1_000_000n));
    }
    this.items.length = 0;
    this.logs.length = 0;
    this.spans.length = 0;
    this.requests.length = 0;
  }
}

class CountingHecReceiver extends HecReceiver {
  protected override accept(): void {
    super.accept();
    Atomics.add(counters, COUNTER.hecEvents, this.events.length);
    this.events.length = 0;
    this.requests.length = 0;
  }
}

const otlp = await new CountingOtlpReceiver().start();
const hec = await new CountingHecReceiver(workerData.hecToken as string).start();
parentPort!.on('message', (msg: 'report' | 'stop') => {
  if (msg === 'report') parentPort!.postMessage({ lags: lags.splice(0), invalid: [...otlp.invalid, ...hec.invalid].map((i) => i.reason) });
  if (msg === 'stop') void Promise.all([otlp.stop(), hec.stop()]).then(() => parentPort!.close());
});
parentPort!.postMessage({ otlpPort: otlp.port, hecPort: hec.port });
