import path from 'node:path';
import pino from 'pino';
import type { Config } from '../config.js';
import { TokenUsage } from '../core/auth/token-usage.js';
import { EgressPolicy } from '../core/egress.js';
import { ClickhouseAlertStore } from '../core/logs/alert-store.js';
import { CallLogWriter } from '../core/logs/call-log-writer.js';
import { SecretStore } from '../core/secrets/secret-store.js';
import type { Services } from '../core/services.js';
import { migrateClickhouse, openClickhouse } from '../stores/clickhouse.js';
import { migratePostgres, openPostgres } from '../stores/postgres.js';
import { resolveSecretKey } from './secret-key.js';

export interface Runtime {
  services: Services;
  secretKey: Buffer;
  close(): Promise<void>;
}

/**
 * Opens both stores, applies pending migrations to each and assembles the services
 * every operation uses. The caller owns `close()`.
 */
export async function openRuntime(config: Config, opts: { logger?: Services['logger'] } = {}): Promise<Runtime> {
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
  const callLogs = await CallLogWriter.open({ client: clickhouse.client, spoolDir: path.join(config.dataDir, 'spool', 'call-logs'), logger });
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
    alerts: new ClickhouseAlertStore(clickhouse, logger),
    callLogs,
  };
  return {
    services,
    secretKey,
    close: async () => {
      await tokenUsage.stop().catch((err: unknown) => logger.warn({ err }, 'could not flush token usage'));
      // Before ClickHouse closes: the writer waits for its insert in flight and leaves the rest spooled.
      await callLogs.close().catch((err: unknown) => logger.warn({ err }, 'could not flush call logs'));
      await clickhouse.close();
      await pg.close();
    },
  };
}
