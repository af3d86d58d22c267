import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { ClickhouseStore } from '../stores/clickhouse.js';
import type { ConfigDb } from '../stores/postgres.js';
import type { AlertSink } from './alerts.js';
import type { ConfigChanges } from './config-changes.js';
import type { TokenResolver } from './auth/token-resolver.js';
import type { TokenUsage } from './auth/token-usage.js';
import type { EgressPolicy } from './egress.js';
import type { AuditRecordInput } from './audit/audit-record.js';
import type { CallLogSink, SpoolSink } from './logs/call-log-writer.js';
import type { SecretStore } from './secrets/secret-store.js';
import type { Logger } from './logger.js';

export type { Logger } from './logger.js';

/**
 * What operations ask of feature-learning (ServerValidationJobs implements it; the
 * runtime starts and stops it). Declared here so that this module imports nothing
 * that imports it back: consumers take `Pick<Services, ...>` of what they use.
 */
export interface ServerValidation {
  /** Runs the server's due validation now (called right after a handler set it due). */
  kick(serverGuid: string): void;
  /** Resolves when no validation of this server is running in this process (for tests and the CLI). */
  settled(serverGuid: string): Promise<void>;
}

/** Everything an operation handler may use: the stores and process-wide helpers. */
export interface Services {
  config: Config;
  db: ConfigDb;
  clickhouse: ClickhouseStore;
  tokenUsage: TokenUsage;
  logger: Logger;
  /** Seals and opens secrets (header values, OAuth tokens, client secrets). */
  secrets: SecretStore;
  /** Where outbound requests may go (EGRESS_ALLOWED_CIDRS). */
  egress: EgressPolicy;
  alerts: AlertSink;
  /** Feature-learning: asynchronous validation of inbound servers (started by the runtime). */
  serverValidation: ServerValidation;
  /** The one call-log writer every producer uses (batched, spooled to disk, back-pressured). */
  callLogs: CallLogSink;
  /** The admin audit log's writer: the same spool mechanism as call logs, its own segment files. */
  audit: SpoolSink<AuditRecordInput>;
  /** The process's Prometheus registry: /metrics serves it; background workers (the forwarder) add to it. */
  metricsRegistry?: Registry;
  /** In-process notice of configuration changes (posted by the executor and feature-learning; hot-path caches listen). */
  configChanges: ConfigChanges;
  /** The one token resolver (admin access tokens and gateway tokens), with its cache. */
  tokens: TokenResolver;
  /** The key that seals the gateway's session ids, derived from SECRET_KEY (so every replica can open them). */
  gatewaySessionKey: Buffer;
}
