import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/**
 * The service's whole configuration, parsed once at boot from the environment.
 * `process.env` is read here and nowhere else; everything downstream receives a
 * frozen `Config`.
 */
/**
 * A whole number from the environment, written in decimal digits only: `z.coerce`
 * would read '' as 0 (an empty PORT listened on a random port, an empty rate limit
 * meant unlimited) and '0x1F90' or '1e3' as numbers.
 */
const wholeNumber = (min: number, max: number | null, fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number in decimal digits, ${max === null ? `at least ${min}` : `from ${min} to ${max}`}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min)
        .max(max ?? Number.MAX_SAFE_INTEGER),
    )
    .default(fallback);

/** A URL of one of `schemes`, for a variable named `name` (the message gives an example). */
const urlOf = (name: string, example: string, schemes = ['http:', 'https:']) =>
  z
    .string()
    .refine(
      (v) => URL.canParse(v) && schemes.includes(new URL(v).protocol),
      `${name} must be an ${schemes.map((x) => x.slice(0, -1)).join(' or ')} URL such as ${example}`,
    );

/** A base64 key of 32 bytes, as `openssl rand -base64 32` prints it (standard or URL-safe alphabet). */
const isKey = (v: string): boolean => /^(?:[A-Za-z0-9+/]{43}|[A-Za-z0-9_-]{43})=?$/.test(v.trim()) && Buffer.from(v.trim(), 'base64').length === 32;

/** A host name or IP address to listen on (an IPv6 address without brackets). */
const isListenHost = (v: string): boolean =>
  ipaddr.isValid(v) || /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/.test(v);

/** Whether a CIDR lies within link-local addresses (169.254.0.0/16, fe80::/10: cloud metadata among them), which outbound requests never reach. */
const isLinkLocalCidr = (cidr: string): boolean => {
  const [address] = ipaddr.parseCIDR(cidr);
  return (
    address.range() === 'linkLocal' ||
    (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && (address as ipaddr.IPv6).toIPv4Address().range() === 'linkLocal')
  );
};

const ConfigSchema = z
  .object({
    PORT: wholeNumber(0, 65535, 8080),
    HOST: z.string().refine(isListenHost, 'HOST must be an IP address (IPv6 without brackets) or a host name').default('127.0.0.1'),
    PUBLIC_BASE_URL: urlOf('PUBLIC_BASE_URL', 'https://gateway.example.com')
      .refine(
        (v) => !URL.canParse(v) || (new URL(v).search === '' && new URL(v).hash === '' && !/[?#]/.test(v)),
        'PUBLIC_BASE_URL must have no query or fragment',
      )
      .optional(),
    DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// connection string')
      .optional(),
    CLICKHOUSE_URL: urlOf('CLICKHOUSE_URL', 'http://clickhouse:8123').optional(),
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
    SECRET_KEY: z.string().refine(isKey, 'SECRET_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)').optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    LOG_RETENTION_DAYS: wholeNumber(1, 3650, 90),
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
      )
      .refine(
        (v) =>
          !v
            .split(',')
            .map((c) => c.trim())
            .some((c) => ipaddr.isValidCIDR(c) && isLinkLocalCidr(c)),
        'EGRESS_ALLOWED_CIDRS cannot open link-local addresses (169.254.0.0/16, fe80::/10, cloud metadata among them): outbound requests never reach them',
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
    ADMIN_RATE_LIMIT_PER_MINUTE: wholeNumber(1, null, 60000),
    /** Keys that sealed secrets before SECRET_KEY (comma-separated, base64 32 bytes each); read while `rotate-secret-key` re-encrypts. */
    PREVIOUS_SECRET_KEY: z
      .string()
      .refine((v) => v.split(',').every((k) => k.trim() === '' || isKey(k)), 'PREVIOUS_SECRET_KEY must be base64 32-byte keys, comma-separated')
      .default(''),
    /** How long one server validation (connect, initialize, list) may take before it fails. */
    SERVER_VALIDATION_TIMEOUT_MS: wholeNumber(100, 600_000, 30_000),
    /** How often pending validations left by a stopped or crashed process are looked for. */
    SERVER_VALIDATION_POLL_MS: wholeNumber(50, 3_600_000, 15_000),
    /** Gateway: how long one upstream exchange (a whole tools/call, streamed or not) may take. */
    GATEWAY_UPSTREAM_TIMEOUT_MS: wholeNumber(100, 3_600_000, 60_000),
    /** Gateway: the largest JSON-RPC message a host may send (bytes). */
    GATEWAY_MAX_REQUEST_BYTES: wholeNumber(1024, 64 * 1024 * 1024, 1024 * 1024),
    /** Gateway: the most an upstream may answer to one request (bytes, all streamed messages together). */
    GATEWAY_MAX_RESPONSE_BYTES: wholeNumber(1024, 1024 * 1024 * 1024, 10 * 1024 * 1024),
    /** Gateway: MCP requests per minute per connection (0 = unlimited); enforced by each process. */
    GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: wholeNumber(0, null, 6_000),
    /** Gateway: MCP requests per minute per workspace, all connections together (0 = unlimited); enforced by each process. */
    GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: wholeNumber(0, null, 60_000),
    /** Gateway: how long an authenticated token and a gateway's routing table are reused before they are read again. */
    GATEWAY_CACHE_TTL_MS: wholeNumber(0, 60_000, 1_500),
  })
  .transform((env) => {
    const publicBaseUrl = (env.PUBLIC_BASE_URL ?? defaultBaseUrl(env.HOST, env.PORT)).replace(/\/+$/, '');
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

/** `http://HOST:PORT`, an IPv6 address in brackets. */
function defaultBaseUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

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
