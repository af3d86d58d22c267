import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Registry } from 'prom-client';
import { findCollectorConfiguration, openCollectorHeaders } from '../core/collector/config-repository.js';
import { resolveLogsFormat } from '../core/collector/rules.js';
import type { Services } from '../core/services.js';
import { alertText, engineDetails, responseDebug, type ResponseHeaders } from '../core/alert-debug.js';
import type { CollectorConfiguration, ForwardedSignal, LogsFormat } from '../stores/schema.js';
import { AuditSource } from './audit-source.js';
import { CallLogSource } from './call-log-source.js';
import { deliveryHorizon, type Checkpoint } from './checkpoint-queries.js';
import { sendToCollector, type SendOutcome } from './collector-client.js';
import { advanceCursor, claimCursor, listCursorsInTurn, postponeCursor, releaseLeases } from './cursors.js';
import type { EncodedBatch } from './encoded-batch.js';
import { createForwarderMetrics, type ForwarderMetrics } from './metrics.js';
import type { BodyKind } from './record-sql.js';

/**
 * Delivers every call-log row of every workspace with a collector, at least once, in
 * batches: logs as OTLP/HTTP JSON or HEC, traces as OTLP/HTTP JSON; and every admin
 * audit record the same way, to the logs collector in its format (signal `audit`).
 *
 * - Progress is a checkpoint per workspace and signal in Postgres, moved only after
 *   the collector accepted a batch, so a crash or restart resends at most the batch
 *   in flight (same records, same `log.record.uid`).
 * - A lease on the cursor row (one atomic UPDATE) lets several processes share the
 *   work without ever both sending the same workspace's batch.
 * - Any answer but a 2xx, and network errors, hold the batch: it is retried for ever,
 *   with exponential backoff or the collector's Retry-After, and the backlog drains
 *   when the collector takes it (no answer drops a row: collector-client.ts). The third
 *   failure in a row raises collector_export_failed (once per collector URL). A 413
 *   halves this workspace's batches until one fits. An OTLP partial success is counted
 *   and alerted.
 * - Configuration (URL, format, headers) is read before every batch.
 */
export interface ForwarderOptions {
  /** Lease owner id; unique per process by default. */
  owner?: string;
  /** Pause between passes when there was nothing to send. */
  pollIntervalMs?: number;
  /**
   * Pause between passes while no workspace forwards (no cursor this process may take);
   * a configuration change anywhere ends it at once.
   */
  idlePollIntervalMs?: number;
  batchSize?: number;
  /**
   * Rows younger than this are left for a later pass, on top of the delivery horizon
   * (rows of running INSERTs). Default 0 on a single ClickHouse (chDB or one server),
   * where the horizon alone is exact; 1000 on a cluster, where it cannot see
   * asynchronous Distributed sends and replication.
   */
  settleMs?: number;
  leaseMs?: number;
  requestTimeoutMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Workspaces forwarded in parallel. */
  concurrency?: number;
  /** Time one cursor may keep sending before others get their turn. */
  passBudgetMs?: number;
}

const DEFAULTS: Required<Omit<ForwarderOptions, 'owner' | 'settleMs'>> = {
  pollIntervalMs: 250,
  idlePollIntervalMs: 5_000,
  batchSize: 2000,
  leaseMs: 30_000,
  requestTimeoutMs: 10_000,
  backoffInitialMs: 500,
  backoffMaxMs: 60_000,
  concurrency: 4,
  passBudgetMs: 2000,
};
/** Settle window on a cluster: Distributed tables send to shards asynchronously and replicas fetch parts later. */
const CLUSTER_SETTLE_MS = 1000;
const MAX_RETRY_AFTER_MS = 15 * 60_000;
/** Failed tries in a row (3xx, 408, 429, 5xx, unreachable) after which a workspace is told its collector is not taking its records. */
const RETRY_ALERT_AFTER = 3;
/** Signals sent to one collector URL (logs and audit) share its outage: one alert for it in this time. */
const RETRY_ALERT_EVERY_MS = 10 * 60_000;
const PARTIAL_ALERT_EVERY_MS = 5 * 60_000;
/** Shortest sleep between passes when waking for a settling row (clock skew with ClickHouse). */
const MIN_WAKE_MS = 20;

type Deps = Pick<Services, 'db' | 'clickhouse' | 'secrets' | 'egress' | 'alerts' | 'logger' | 'configChanges'>;

/** Where a signal's records are read from: call_logs for logs and traces, audit_log for audit. */
type RecordSource = Pick<CallLogSource, 'nextEncodedBatch' | 'haveRowsAfter' | 'oldestPending'>;
/** The tables the pass's one delivery horizon covers: every table a source reads. */
const FORWARDED_TABLES = ['call_logs', 'audit_log'];

interface Target {
  url: string;
  format: LogsFormat;
}

/** The endpoint and wire format of one signal, or null when the signal is not configured. Audit records go where the call logs go. */
function targetOf(config: CollectorConfiguration | undefined, signal: ForwardedSignal): Target | null {
  if (!config) return null;
  if (signal === 'traces') return config.traces_url ? { url: config.traces_url, format: 'otlp' } : null;
  return config.logs_url ? { url: config.logs_url, format: resolveLogsFormat(config.logs_format) } : null;
}

/** What a signal's batches are written as. */
const bodyKindOf = (signal: ForwardedSignal, format: LogsFormat): BodyKind =>
  signal === 'traces' ? 'otlp_traces' : format === 'collector_hec' ? 'hec' : 'otlp_logs';

/** Where an OTLP answer counts the records it refused (partial success); HEC has none. */
const PARTIAL_SUCCESS_KEY: Record<BodyKind, 'rejectedLogRecords' | 'rejectedSpans' | undefined> = {
  otlp_logs: 'rejectedLogRecords',
  otlp_traces: 'rejectedSpans',
  hec: undefined,
};

/** A batch read (and written by ClickHouse) ahead of its turn, in the body kind configured then. */
type PreparedBatch = EncodedBatch & { kind: BodyKind };

/**
 * A collector's answer for an alert: every configured header value is a secret (a
 * token, an API key) and every configured header name a credential header, wherever
 * the collector echoes them.
 */
const answerDebug = (outcome: { status: number | null; headers?: ResponseHeaders | undefined; body?: string | undefined }, headers: Record<string, string>) =>
  responseDebug(outcome.status, outcome.headers, outcome.body, Object.values(headers), Object.keys(headers));

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class Forwarder {
  readonly owner: string;
  readonly metrics: ForwarderMetrics;
  private readonly opts: Required<Omit<ForwarderOptions, 'owner'>>;
  private readonly sources: Record<ForwardedSignal, RecordSource>;
  private running = false;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly lastPartialAlert = new Map<string, number>();
  private readonly lastRetryAlert = new Map<string, number>();
  /** Workspaces and signals whose collector answered 413: their batches are held to the size that fits (this process). */
  private readonly batchSizes = new Map<string, number>();
  /** Earliest time a row seen pending in this pass leaves its settle window (epoch ms). */
  private wakeAt: number | undefined;
  /** Cursors (`org:signal`) this process left caught up: the next pass asks ClickHouse once whether they have new rows. */
  private readonly caughtUp = new Set<string>();
  /** The last pass found no cursor this process may take: nothing to forward until a configuration changes. */
  private idleNow = false;
  /** Configuration changes seen: one during a pass's listing may be a cursor that listing missed. */
  private changes = 0;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly deps: Deps,
    registry: Registry,
    options: ForwarderOptions = {},
  ) {
    this.owner = options.owner ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const given = Object.fromEntries(Object.entries(options).filter(([k, v]) => k !== 'owner' && v !== undefined));
    this.opts = { ...DEFAULTS, settleMs: deps.clickhouse.cluster ? CLUSTER_SETTLE_MS : 0, ...given };
    this.metrics = createForwarderMetrics(registry);
    const calls = new CallLogSource(deps.clickhouse);
    this.sources = { logs: calls, traces: calls, audit: new AuditSource(deps.clickhouse) };
  }

  /** Whether the last pass found nothing this process may forward (it then polls at idlePollIntervalMs). */
  get idle(): boolean {
    return this.idleNow;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // A collector configured (a cursor made) ends an idle sleep: its workspace is forwarded at once.
    this.unsubscribe = this.deps.configChanges.subscribe(() => {
      this.changes++;
      this.wake?.();
    });
    this.loop = this.run();
  }

  /** Finishes the batch in flight, stops, and hands this process's leases back. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopping = true;
    this.unsubscribe?.();
    this.wake?.();
    await this.loop;
    await releaseLeases(this.deps.db, this.owner).catch((err: unknown) =>
      this.deps.logger.warn({ err: String(err) }, 'forwarder could not release its leases'),
    );
  }

  private async run(): Promise<void> {
    while (this.running) {
      let sent = 0;
      try {
        sent = await this.runOnce();
      } catch (err) {
        this.deps.logger.warn({ err: errorText(err) }, 'forwarder pass failed');
      }
      if (!this.running) break;
      if (sent === 0) {
        // Sleep until the next poll, or less when a pending row leaves its settle window sooner;
        // with nothing to forward, for the idle interval (docs/forwarding.md, "Nothing to forward").
        const pollMs = this.idleNow ? this.opts.idlePollIntervalMs : this.opts.pollIntervalMs;
        const wakeInMs = this.wakeAt === undefined ? pollMs : Math.min(pollMs, Math.max(MIN_WAKE_MS, this.wakeAt - Date.now()));
        this.wakeAt = undefined;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wakeInMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  /** One pass over every due cursor; returns how many records were handed to collectors. */
  async runOnce(): Promise<number> {
    const changesBefore = this.changes;
    const inTurn = await listCursorsInTurn(this.deps.db, this.owner, 64);
    this.idleNow = inTurn.length === 0 && this.changes === changesBefore;
    const listed = inTurn.filter((c) => c.due);
    if (listed.length === 0) return 0;
    // One horizon for the pass: a cut-off that is safe once stays safe (later INSERTs stamp later rows).
    const horizon = await deliveryHorizon(this.deps.clickhouse, this.opts.settleMs, FORWARDED_TABLES);
    const due = await this.withNewRows(listed, horizon);
    let total = 0;
    let next = 0;
    const worker = async () => {
      while (next < due.length) {
        const { organization_guid, signal } = due[next++]!;
        const key = `${organization_guid}:${signal}`;
        // One workspace's failure must not end the pass while others' batches are on the wire: the
        // next pass would claim those cursors again (same owner) and send their batches twice.
        const { records, caughtUp } = await this.forwardCursor(organization_guid, signal, horizon).catch((err: unknown) => {
          this.deps.logger.warn({ organization: organization_guid, signal, err: errorText(err) }, 'forwarder could not forward a workspace');
          return { records: 0, caughtUp: false };
        });
        total += records;
        if (caughtUp) this.caughtUp.add(key);
        else this.caughtUp.delete(key);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.concurrency, due.length) }, worker));
    return total;
  }

  /**
   * The due cursors worth a turn: all of them but those left caught up in an earlier
   * pass that still have nothing before the horizon (one ClickHouse query for all of
   * those per source table, instead of a lease, a configuration read and an empty
   * batch read each).
   */
  private async withNewRows<C extends { organization_guid: string; signal: ForwardedSignal; checkpoint_at: Date; checkpoint_guid: string }>(
    due: C[],
    horizon: Date,
  ): Promise<C[]> {
    const idle = due.filter((c) => this.caughtUp.has(`${c.organization_guid}:${c.signal}`));
    if (idle.length === 0) return due;
    const quiet = new Set<C>();
    for (const source of new Set(idle.map((c) => this.sources[c.signal]))) {
      const asked = idle.filter((c) => this.sources[c.signal] === source);
      const pending = await source.haveRowsAfter(
        asked.map((c) => ({ organizationGuid: c.organization_guid, at: c.checkpoint_at, guid: c.checkpoint_guid })),
        horizon,
      );
      asked.forEach((c, i) => !pending[i] && quiet.add(c));
    }
    for (const c of quiet) this.metrics.lag.set({ organization: c.organization_guid, signal: c.signal }, 0);
    return due.filter((c) => !quiet.has(c));
  }

  /** Reads the signal's batch after `after` as the body to send (ClickHouse writes the records). */
  private prepare(organizationGuid: string, signal: ForwardedSignal, kind: BodyKind, after: Checkpoint, horizon: Date): Promise<PreparedBatch> {
    const size = this.batchSizeOf(organizationGuid, signal);
    return this.sources[signal].nextEncodedBatch(organizationGuid, after, size, horizon, kind).then((batch) => ({ ...batch, kind }));
  }

  /** The batch size of a workspace's signal: the configured one, or less where its collector answered 413. */
  private batchSizeOf(organizationGuid: string, signal: ForwardedSignal): number {
    return this.batchSizes.get(`${organizationGuid}:${signal}`) ?? this.opts.batchSize;
  }

  /**
   * Sends one workspace's signal batch after batch until it is caught up, its pass
   * budget is spent, or a batch is not accepted.
   *
   * Pipelined: while batch N is on the wire, batch N+1 (the rows after N's last row)
   * is already being read and written by ClickHouse. Nothing about delivery changes:
   * the checkpoint still moves only after the collector accepted N, N+1 is sent only
   * after that, and when N is not accepted the read-ahead is dropped and read again
   * on the next attempt. The configuration is still read before every batch is sent:
   * a read-ahead written for a format that changed meanwhile is read again.
   */
  private async forwardCursor(organizationGuid: string, signal: ForwardedSignal, horizon: Date): Promise<{ records: number; caughtUp: boolean }> {
    const { db, logger } = this.deps;
    const cursor = await claimCursor(db, organizationGuid, signal, this.owner, this.opts.leaseMs);
    if (!cursor) return { records: 0, caughtUp: false };
    const labels = { organization: organizationGuid, signal };
    const key = `${organizationGuid}:${signal}`;
    const deadline = Date.now() + this.opts.passBudgetMs;
    let total = 0;
    /** What the pass answers: the records sent so far, and whether the cursor was left caught up. */
    const done = (caughtUp = false) => ({ records: total, caughtUp });
    let attempts = cursor.attempts;
    let checkpoint: Checkpoint = { at: cursor.checkpoint_at, guid: cursor.checkpoint_guid };
    let ahead: Promise<PreparedBatch> | undefined;
    try {
      while (!this.stopping) {
        // Read before every batch: a changed URL, format or header set applies from the next batch on.
        const config = await findCollectorConfiguration(db, organizationGuid);
        const target = targetOf(config, signal);
        if (!config || !target) return done();
        const kind = bodyKindOf(signal, target.format);
        let batch = await (ahead ?? this.prepare(organizationGuid, signal, kind, checkpoint, horizon));
        ahead = undefined;
        if (batch.kind !== kind) batch = await this.prepare(organizationGuid, signal, kind, checkpoint, horizon);
        const records = batch.count;
        if (records === 0) {
          this.metrics.lag.set(labels, 0);
          await this.notePending(organizationGuid, signal, checkpoint);
          return done(true);
        }
        this.metrics.lag.set(labels, Math.max(0, (Date.now() - batch.firstIngestedMs) / 1000));
        const full = records === this.batchSizeOf(organizationGuid, signal);
        if (full && Date.now() < deadline && !this.stopping) {
          ahead = this.prepare(organizationGuid, signal, kind, batch.end, horizon);
          ahead.catch(() => undefined); // awaited (and its error surfaced) on the next turn, or dropped
        }
        const headers = await openCollectorHeaders(db, this.deps.secrets, config);
        const outcome = await sendToCollector(this.deps.egress, {
          url: target.url,
          headers,
          timeoutMs: this.opts.requestTimeoutMs,
          body: batch.body,
          contentType: 'application/json',
          partialSuccessKey: PARTIAL_SUCCESS_KEY[kind],
        });

        if (outcome.kind === 'retry') {
          attempts++;
          if (outcome.status === 413) this.batchSizes.set(key, Math.max(1, Math.floor(records / 2)));
          const delayMs = Math.min(MAX_RETRY_AFTER_MS, Math.max(outcome.retryAfterMs ?? 0, this.backoff(attempts)));
          this.metrics.retried.inc(labels, records);
          await postponeCursor(db, organizationGuid, signal, this.owner, {
            delayMs,
            attempts,
            retried: records,
            lastError: outcome.reason,
            configSavedAt: config.updated_at,
          });
          logger.warn(
            { organization: organizationGuid, signal, status: outcome.status, reason: outcome.reason, attempts, retryInMs: delayMs },
            'collector export postponed',
          );
          // The backlog is held for as long as it takes, but a workspace must hear of it: once per run of failures.
          if (attempts === RETRY_ALERT_AFTER) await this.raiseUnreachable(organizationGuid, signal, target, outcome, headers, records, attempts);
          return done();
        }
        const rejected = Math.min(records, outcome.rejected);
        const advanced = await advanceCursor(db, organizationGuid, signal, this.owner, this.opts.leaseMs, {
          checkpointAt: batch.end.at,
          checkpointGuid: batch.end.guid,
          sent: records - rejected,
          rejected,
          lastError: rejected > 0 ? `partial success: ${rejected} rejected` : null,
        });
        if (!advanced) {
          logger.warn({ organization: organizationGuid, signal }, 'forwarder lease lost; another process continues this workspace');
          return done();
        }
        this.metrics.sent.inc(labels, records - rejected);
        if (rejected > 0) {
          this.metrics.rejected.inc(labels, rejected);
          await this.raisePartial(organizationGuid, signal, target, outcome, headers, records, rejected);
        }
        attempts = 0;
        checkpoint = batch.end;
        total += records;
        if (!ahead) {
          if (!full) await this.notePending(organizationGuid, signal, checkpoint);
          return done(!full);
        }
        // No separate lease renewal: advanceCursor just extended the lease it is fenced on.
      }
      return done();
    } catch (err) {
      // The batch could not be read, written or its headers opened (a store failing, a secret that no longer
      // decrypts): held with backoff like a failed send, instead of being tried again on every pass.
      attempts++;
      const delayMs = this.backoff(attempts);
      logger.warn({ organization: organizationGuid, signal, err: errorText(err), attempts, retryInMs: delayMs }, 'forwarder could not prepare a batch');
      await postponeCursor(db, organizationGuid, signal, this.owner, { delayMs, attempts, retried: 0, lastError: 'the forwarder could not prepare the batch' });
      return done();
    } finally {
      // Never leave a ClickHouse read running behind us (closing the store under a running query aborts chDB).
      if (ahead) await ahead.catch(() => undefined);
    }
  }

  /**
   * Caught up: when rows are waiting out the settle window, remember when the first
   * of them is due, so the loop wakes then rather than a whole poll interval later
   * (the lag from ingest to delivery stays close to the settle window).
   */
  private async notePending(organizationGuid: string, signal: ForwardedSignal, checkpoint: Checkpoint): Promise<void> {
    if (this.opts.settleMs <= 0) return;
    const oldest = await this.sources[signal].oldestPending(organizationGuid, checkpoint);
    if (!oldest) return;
    const dueAt = oldest.getTime() + this.opts.settleMs;
    this.wakeAt = this.wakeAt === undefined ? dueAt : Math.min(this.wakeAt, dueAt);
  }

  private backoff(attempts: number): number {
    const base = Math.min(this.opts.backoffMaxMs, this.opts.backoffInitialMs * 2 ** Math.max(0, attempts - 1));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  /** Raises collector_export_failed from a template; a failing alert sink never stops forwarding. */
  private async raiseExportAlert(
    organizationGuid: string,
    messageType: 'warning' | 'error',
    template: { subject: string; message: string },
    values: Record<string, string>,
    debugContext: Record<string, unknown>,
  ): Promise<void> {
    const fill = (s: string) => s.replace(/\{(\w+)\}/g, (_m, k: string) => values[k] ?? '');
    try {
      await this.deps.alerts.raise({
        organizationGuid,
        code: 'collector_export_failed',
        messageType,
        subject: fill(template.subject),
        message: fill(template.message),
        dynamicContent: { ...template, values },
        debugContext,
        relatedResourceIds: [],
      });
    } catch (err) {
      this.deps.logger.warn({ err: errorText(err), code: 'collector_export_failed' }, 'could not raise alert');
    }
  }

  /** The batch is held and retried (nothing is lost): the alert says so, with the last status or network error. */
  private async raiseUnreachable(
    organizationGuid: string,
    signal: ForwardedSignal,
    target: Target,
    outcome: Extract<SendOutcome, { kind: 'retry' }>,
    headers: Record<string, string>,
    held: number,
    attempts: number,
  ): Promise<void> {
    const key = `${organizationGuid} ${target.url}`;
    const lastAt = this.lastRetryAlert.get(key);
    if (lastAt !== undefined && Date.now() - lastAt < RETRY_ALERT_EVERY_MS) return;
    this.lastRetryAlert.set(key, Date.now());
    const reason = alertText(outcome.reason, Object.values(headers));
    await this.raiseExportAlert(
      organizationGuid,
      'error',
      {
        subject: 'Collector not taking {signal}',
        message: 'The {signal} collector failed {attempts} times in a row ({reason}); the records are held and sent again with backoff.',
      },
      { signal, attempts: String(attempts), reason },
      {
        ...answerDebug(outcome, headers),
        ...engineDetails({ signal, format: target.format }),
        reason,
        signal,
        format: target.format,
        attempts,
        heldRecords: held,
      },
    );
  }

  /** At most one partial-success alert per workspace and signal every few minutes; the counters keep every one. */
  private async raisePartial(
    organizationGuid: string,
    signal: ForwardedSignal,
    target: Target,
    outcome: Extract<SendOutcome, { kind: 'accepted' }>,
    headers: Record<string, string>,
    batch: number,
    rejected: number,
  ): Promise<void> {
    const key = `${organizationGuid}:${signal}`;
    const lastAt = this.lastPartialAlert.get(key);
    if (lastAt !== undefined && Date.now() - lastAt < PARTIAL_ALERT_EVERY_MS) return;
    this.lastPartialAlert.set(key, Date.now());
    await this.raiseExportAlert(
      organizationGuid,
      'warning',
      {
        subject: 'Collector rejected part of the {signal}',
        message: 'The {signal} collector accepted a batch of {batch} records but rejected {rejected} of them (OTLP partial success).',
      },
      { signal, rejected: String(rejected), batch: String(batch) },
      {
        ...answerDebug(outcome, headers),
        ...engineDetails({ signal, format: target.format }),
        partialSuccess: { rejected, errorMessage: alertText(outcome.message ?? '', Object.values(headers)) },
        signal,
        batchRecords: batch,
      },
    );
  }
}
