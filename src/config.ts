import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/**
 * The service's whole configuration, parsed once at boot from the environment.
 * `process.env` is read here and nowhere else; everything downstream receives a
 * frozen `Config`.
 */
const ConfigSchema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().min(1).default('127.0.0.1'),
    PUBLIC_BASE_URL: z.string().url('PUBLIC_BASE_URL must be an absolute URL such as https://gateway.example.com').optional(),
    DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// connection string')
      .optional(),
    CLICKHOUSE_URL: z.string().url('CLICKHOUSE_URL must be an http(s) URL of a ClickHouse server').optional(),
    CLICKHOUSE_USER: z.string().optional(),
    CLICKHOUSE_PASSWORD: z.string().optional(),
    CLICKHOUSE_DATABASE: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'CLICKHOUSE_DATABASE must be a plain identifier')
      .default('default'),
    CLICKHOUSE_CLUSTER: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'CLICKHOUSE_CLUSTER must be a plain identifier')
      .optional(),
    SECRET_KEY: z
      .string()
      .refine((v) => Buffer.from(v, 'base64').length === 32, 'SECRET_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)')
      .optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
    EGRESS_ALLOWED_CIDRS: z
      .string()
      .default('')
      .refine(
        (v) =>
          v
            .split(',')
            .map((c) => c.trim())
            .filter(Boolean)
            .every((c) => ipaddr.isValidCIDR(c)),
        'EGRESS_ALLOWED_CIDRS must be comma-separated CIDRs such as 10.0.0.0/8,127.0.0.1/32',
      ),
    /** Browser origins besides PUBLIC_BASE_URL's that may call the MCP endpoints (comma-separated, e.g. https://console.example.com). */
    ALLOWED_ORIGINS: z
      .string()
      .default('')
      .refine(
        (v) =>
          v
            .split(',')
            .map((o) => o.trim())
            .filter(Boolean)
            .every((o) => URL.canParse(o) && new URL(o).origin === o.replace(/\/+$/, '')),
        'ALLOWED_ORIGINS must be comma-separated origins such as https://app.example.com (scheme, host and port only)',
      ),
    /** Requests per minute per access token on the admin interface. */
    ADMIN_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60000),
    /** Keys that sealed secrets before SECRET_KEY (comma-separated, base64 32 bytes each); read while `rotate-secret-key` re-encrypts. */
    PREVIOUS_SECRET_KEY: z
      .string()
      .refine(
        (v) => v.split(',').every((k) => k.trim() === '' || Buffer.from(k.trim(), 'base64').length === 32),
        'PREVIOUS_SECRET_KEY must be base64 32-byte keys, comma-separated',
      )
      .default(''),
    /** How long one server validation (connect, initialize, list) may take before it fails. */
    SERVER_VALIDATION_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    /** How often pending validations left by a stopped or crashed process are looked for. */
    SERVER_VALIDATION_POLL_MS: z.coerce.number().int().min(50).max(3_600_000).default(15_000),
    /** Gateway: how long one upstream exchange (a whole tools/call, streamed or not) may take. */
    GATEWAY_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    /** Gateway: the largest JSON-RPC message a host may send (bytes). */
    GATEWAY_MAX_REQUEST_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** Gateway: the most an upstream may answer to one request (bytes, all streamed messages together). */
    GATEWAY_MAX_RESPONSE_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024)
      .default(10 * 1024 * 1024),
    /** Gateway: MCP requests per minute per connection (0 = unlimited); enforced by each process. */
    GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: z.coerce.number().int().min(0).default(6_000),
    /** Gateway: MCP requests per minute per workspace, all connections together (0 = unlimited); enforced by each process. */
    GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: z.coerce.number().int().min(0).default(60_000),
    /** Gateway: how long an authenticated token and a gateway's routing table are reused before they are read again. */
    GATEWAY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(1_500),
  })
  .transform((env) => {
    const publicBaseUrl = (env.PUBLIC_BASE_URL ?? `http://${env.HOST}:${env.PORT}`).replace(/\/+$/, '');
    return {
      port: env.PORT,
      host: env.HOST,
      publicBaseUrl,
      dataDir: path.resolve(env.DATA_DIR),
      databaseUrl: env.DATABASE_URL,
      clickhouse: env.CLICKHOUSE_URL
        ? {
            url: env.CLICKHOUSE_URL,
            username: env.CLICKHOUSE_USER,
            password: env.CLICKHOUSE_PASSWORD,
            database: env.CLICKHOUSE_DATABASE,
            cluster: env.CLICKHOUSE_CLUSTER,
          }
        : undefined,
      secretKey: env.SECRET_KEY,
      logLevel: env.LOG_LEVEL,
      logRetentionDays: env.LOG_RETENTION_DAYS,
      egressAllowedCidrs: env.EGRESS_ALLOWED_CIDRS.split(',')
        .map((c) => c.trim())
        .filter(Boolean),
      adminRateLimitPerMinute: env.ADMIN_RATE_LIMIT_PER_MINUTE,
      /** The origins a browser may call the MCP endpoints from: PUBLIC_BASE_URL's and ALLOWED_ORIGINS. */
      allowedOrigins: [
        new URL(publicBaseUrl).origin,
        ...env.ALLOWED_ORIGINS.split(',')
          .map((o) => o.trim())
          .filter(Boolean)
          .map((o) => new URL(o).origin),
      ],
      previousSecretKeys: env.PREVIOUS_SECRET_KEY.split(',')
        .map((k) => k.trim())
        .filter(Boolean),
      serverValidationTimeoutMs: env.SERVER_VALIDATION_TIMEOUT_MS,
      serverValidationPollMs: env.SERVER_VALIDATION_POLL_MS,
      gateway: {
        upstreamTimeoutMs: env.GATEWAY_UPSTREAM_TIMEOUT_MS,
        maxRequestBytes: env.GATEWAY_MAX_REQUEST_BYTES,
        maxResponseBytes: env.GATEWAY_MAX_RESPONSE_BYTES,
        rateLimitPerConnectionPerMinute: env.GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE,
        rateLimitPerWorkspacePerMinute: env.GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE,
        cacheTtlMs: env.GATEWAY_CACHE_TTL_MS,
      },
    };
  });

export type Config = Readonly<z.output<typeof ConfigSchema>>;

export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError whose message names every bad variable and why. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  if (parsed.data.databaseUrl && !parsed.data.secretKey) {
    throw new ConfigError(
      'SECRET_KEY is required when DATABASE_URL is set: several processes share that database and must encrypt secrets with the same key. Generate one with `openssl rand -base64 32`.',
    );
  }
  return Object.freeze(parsed.data);
}
