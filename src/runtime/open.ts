import { hkdfSync } from 'node:crypto';
import path from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { ConfigError, type Config } from '../config.js';
import { TokenUsage } from '../core/auth/token-usage.js';
import { ConfigChanges } from '../core/config-changes.js';
import { TokenResolver } from '../core/auth/token-resolver.js';
import { EgressPolicy } from '../core/egress.js';
import { SERVICE_LOG_REDACTION } from '../core/redaction.js';
import { ClickhouseAlertStore } from '../core/logs/alert-store.js';
import { CallLogWriter, EMBEDDED_FLUSH_INTERVAL_MS, SpoolWriter } from '../core/logs/call-log-writer.js';
import { AUDIT_TABLES, encodeAuditRecord } from '../core/audit/audit-record.js';
import { SecretStore } from '../core/secrets/secret-store.js';
import { ServerValidationJobs } from '../core/servers/validation-jobs.js';
import type { Services } from '../core/services.js';
import { migrateClickhouse, MissingChdbError, openClickhouse } from '../stores/clickhouse.js';
import { PgChangeRelay } from '../stores/pg-change-relay.js';
import { migratePostgres, openPostgres } from '../stores/postgres.js';
import { Forwarder, type ForwarderOptions } from '../forwarder/forwarder.js';
import { resolveSecretKey } from './secret-key.js';
import type { MigrationsApplied } from '../core/admin-commands.js';

/** A safety net only for kept admin callers: correctness comes from the change notices. */
const ADMIN_CALLER_TTL_MS = 60_000;

export interface Runtime {
  services: Services;
  secretKey: Buffer;
  /** Delivers call logs and traces to workspaces' collectors (stopped by close). */
  forwarder: Forwarder;
  /** Feature-learning's job runner (services.serverValidation is its view for operations; stopped by close). */
  serverValidation: ServerValidationJobs;
  /** The migrations opening the stores applied (what an offline `migrate` reports). */
  migrationsApplied: MigrationsApplied;
  close(): Promise<void>;
}

/**
 * Opens both stores, applies pending migrations to each and assembles the services
 * every operation uses. The caller owns `close()`.
 */
export async function openRuntime(
  config: Config,
  opts: { logger?: Services['logger']; backgroundJobs?: boolean; forwarder?: ForwarderOptions & { start?: boolean } } = {},
): Promise<Runtime> {
  const logger = opts.logger ?? pino({ level: config.logLevel, redact: SERVICE_LOG_REDACTION });
  const secretKey = resolveSecretKey(config);
  const configChanges = new ConfigChanges();
  let clickhouse: Awaited<ReturnType<typeof openClickhouse>> | undefined;
  let pg: Awaited<ReturnType<typeof openPostgres>> | undefined;
  let relay: PgChangeRelay | null = null;
  const migrationsApplied: MigrationsApplied = { postgres: [], clickhouse: [] };
  try {
    // ClickHouse first: embedded, it locks DATA_DIR for this process (chDB), and PGlite has no lock of its own; a
    // second process on the directory (an offline CLI beside a starting service) is stopped before it opens PGlite.
    clickhouse = await asStartupError(whereCallLogs(config), () => openClickhouse({ dataDir: config.dataDir, server: config.clickhouse }));
    pg = await asStartupError(whereConfiguration(config), () =>
      openPostgres({
        databaseUrl: config.databaseUrl,
        dataDir: config.dataDir,
        onConnectionError: (err) => logger.warn({ err: err.message }, 'postgres: a pooled connection was dropped; it is replaced on the next use'),
      }),
    );
    const openedPg = pg;
    const pgResults = await asStartupError(whereConfiguration(config), () => migratePostgres(openedPg.db));
    migrationsApplied.postgres = (pgResults.results ?? []).map((r) => r.migrationName);
    const opened = clickhouse;
    migrationsApplied.clickhouse = await asStartupError(whereCallLogs(config), () =>
      migrateClickhouse(opened, { retentionDays: config.logRetentionDays, cluster: opened.cluster }),
    );
    // Other service processes on the same Postgres server hear of this one's changes, and it of theirs.
    if (config.databaseUrl) {
      const opened = await PgChangeRelay.open({ connectionString: config.databaseUrl, onNotice: (org) => configChanges.deliver(org), logger });
      relay = opened;
      configChanges.relayTo((org) => opened.publish(org));
    }
  } catch (err) {
    await relay?.close().catch(() => undefined);
    await pg?.close().catch(() => undefined);
    await clickhouse?.close().catch(() => undefined);
    throw err;
  }
  const interval = clickhouse.kind === 'chdb' ? { flushIntervalMs: EMBEDDED_FLUSH_INTERVAL_MS } : {};
  const callLogs = await CallLogWriter.open({
    ...interval,
    insert: clickhouse.insertEncoded,
    lanes: clickhouse.insertLanes,
    spoolDir: path.join(config.dataDir, 'spool', 'call-logs'),
    logger,
  });
  const audit = await SpoolWriter.open({
    ...interval,
    insert: clickhouse.insertEncoded,
    spoolDir: path.join(config.dataDir, 'spool', 'audit'),
    logger,
    encode: encodeAuditRecord,
    tables: AUDIT_TABLES,
  });
  const tokenUsage = new TokenUsage(pg.db);
  tokenUsage.start();
  const metricsRegistry = new Registry();
  const base: Omit<Services, 'serverValidation'> = {
    config,
    db: pg.db,
    clickhouse,
    tokenUsage,
    logger,
    secrets: new SecretStore(
      secretKey,
      config.previousSecretKeys.map((k) => Buffer.from(k, 'base64')),
    ),
    egress: new EgressPolicy(config.egressAllowedCidrs),
    metricsRegistry,
    alerts: new ClickhouseAlertStore(clickhouse, logger),
    callLogs,
    audit,
    configChanges,
    tokens: new TokenResolver(pg.db, configChanges, {
      // Admin callers are kept only where change notices are exact: embedded stores belong to this
      // process alone. With a Postgres server other processes change data, and a notice lost on the
      // way must not leave a revoked admin token working, so every admin request reads its row.
      access: pg.kind === 'pglite' ? ADMIN_CALLER_TTL_MS : 0,
      // The gateway's hot path: a notice lost on the way is covered by this short TTL.
      gateway: config.gateway.cacheTtlMs,
    }),
    gatewaySessionKey: Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'gateway-session-id', 32)),
  };
  // One object: the job runner sees a service replaced later (tests swap the alert sink or the egress policy) as operations do.
  const serverValidation = new ServerValidationJobs(base);
  const services: Services = Object.assign(base, { serverValidation });
  const forwarder = new Forwarder(services, metricsRegistry, opts.forwarder);
  // The operator CLI opens the stores for one command: it must not start probing upstreams or forwarding.
  if (opts.backgroundJobs !== false) {
    serverValidation.start();
    if (opts.forwarder?.start !== false) forwarder.start();
  }
  return {
    services,
    secretKey,
    forwarder,
    serverValidation,
    migrationsApplied,
    close: async () => {
      // First: background workers must not be mid-query when the stores close.
      await forwarder.stop().catch((err: unknown) => logger.warn({ err: String(err) }, 'could not stop the forwarder'));
      await serverValidation.stop();
      await tokenUsage.stop().catch((err: unknown) => logger.warn({ err }, 'could not flush token usage'));
      // Before ClickHouse closes: the writer waits for its insert in flight and leaves the rest spooled.
      await callLogs.close().catch((err: unknown) => logger.warn({ err }, 'could not flush call logs'));
      await audit.close().catch((err: unknown) => logger.warn({ err }, 'could not flush audit records'));
      await clickhouse.close();
      await relay?.close();
      await pg.close();
    },
  };
}

/** Where the configuration is kept, as the variable that names it. */
const whereConfiguration = (config: Config): string =>
  config.databaseUrl ? 'DATABASE_URL: the Postgres server' : `DATA_DIR: the embedded Postgres under ${path.join(config.dataDir, 'pg')}`;

/** Where call logs are kept, as the variable that names it (the server's URL without its credentials). */
const whereCallLogs = (config: Config): string =>
  config.clickhouse
    ? `CLICKHOUSE_URL: the ClickHouse server at ${new URL(config.clickhouse.url).origin}`
    : `DATA_DIR: the embedded ClickHouse under ${config.dataDir}`;

/**
 * A store that cannot be opened or migrated stops the service with one line naming its
 * variable and why (unreachable, refused, missing), not a stack from the driver.
 */
async function asStartupError<T>(where: string, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (err) {
    if (err instanceof ConfigError || err instanceof MissingChdbError) throw err;
    const why = err instanceof Error ? err.message.split('\n')[0]!.slice(0, 300) : String(err);
    throw new ConfigError(`${where} could not be used: ${why}`);
  }
}
