import pino from 'pino';
import { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { TokenUsage } from '../core/auth/token-usage.js';
import { EgressPolicy } from '../core/egress.js';
import { SecretStore } from '../core/secrets/secret-store.js';
import type { Services } from '../core/services.js';
import { migrateClickhouse, openClickhouse } from '../stores/clickhouse.js';
import { migratePostgres, openPostgres } from '../stores/postgres.js';
import { Forwarder, type ForwarderOptions } from '../forwarder/forwarder.js';
import { resolveSecretKey } from './secret-key.js';

export interface Runtime {
  services: Services;
  secretKey: Buffer;
  /** Delivers call logs and traces to workspaces' collectors (stopped by close). */
  forwarder: Forwarder;
  close(): Promise<void>;
}

/**
 * Opens both stores, applies pending migrations to each and assembles the services
 * every operation uses. The caller owns `close()`.
 */
export async function openRuntime(config: Config, opts: { logger?: Services['logger']; forwarder?: ForwarderOptions & { start?: boolean } } = {}): Promise<Runtime> {
  const logger = opts.logger ?? pino({ level: config.logLevel });
  const secretKey = resolveSecretKey(config);
  const pg = await openPostgres({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  let clickhouse;
  try {
    await migratePostgres(pg.db);
    clickhouse = await openClickhouse({ dataDir: config.dataDir, server: config.clickhouse });
    await migrateClickhouse(clickhouse, { retentionDays: config.logRetentionDays, cluster: clickhouse.cluster });
  } catch (err) {
    await clickhouse?.close().catch(() => undefined);
    await pg.close().catch(() => undefined);
    throw err;
  }
  const tokenUsage = new TokenUsage(pg.db);
  tokenUsage.start();
  const services: Services = {
    config,
    db: pg.db,
    clickhouse,
    tokenUsage,
    logger,
    secrets: new SecretStore(secretKey),
    egress: new EgressPolicy(config.egressAllowedCidrs),
    metricsRegistry: new Registry(),
    // Until the call-log store lands, alerts go to the log (never with a secret in them).
    alerts: { raise: async (alert) => logger.warn({ alert: { code: alert.code, subject: alert.subject, related: alert.relatedResourceIds } }, 'alert raised') },
  };
  const forwarder = new Forwarder(services, services.metricsRegistry!, opts.forwarder);
  if (opts.forwarder?.start !== false) forwarder.start();
  return {
    services,
    secretKey,
    forwarder,
    close: async () => {
      // First: the forwarder must not be mid-query when the stores close.
      await forwarder.stop().catch((err: unknown) => logger.warn({ err: String(err) }, 'could not stop the forwarder'));
      await tokenUsage.stop().catch((err: unknown) => logger.warn({ err }, 'could not flush token usage'));
      await clickhouse.close();
      await pg.close();
    },
  };
}
