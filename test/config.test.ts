import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('defaults to embedded stores on 127.0.0.1:8080 under ./data', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      publicBaseUrl: 'http://127.0.0.1:8080',
      databaseUrl: undefined,
      clickhouse: undefined,
      logRetentionDays: 90,
    });
    expect(c.dataDir.endsWith('/data')).toBe(true);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('refuses a Postgres server without SECRET_KEY, saying how to fix it', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://localhost/x' })).toThrow(/SECRET_KEY is required when DATABASE_URL is set.*openssl rand -base64 32/s);
  });

  it('names every bad variable and why', () => {
    try {
      loadConfig({
        PORT: 'eighty',
        SECRET_KEY: 'short',
        EGRESS_ALLOWED_CIDRS: '10.0.0.0/8,not-a-cidr',
        ALLOWED_ORIGINS: 'https://ok.example.com,https://x.example.com/path',
      });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message).toContain('PORT');
      expect(message).toContain('SECRET_KEY: SECRET_KEY must be 32 bytes');
      expect(message).toContain('EGRESS_ALLOWED_CIDRS');
      expect(message).toContain('ALLOWED_ORIGINS must be comma-separated origins');
    }
  });

  it('reads numbers in decimal digits only: an empty value, hex or an exponent stops the service naming the variable', () => {
    for (const [name, value] of [
      ['PORT', ''],
      ['PORT', '0x1F90'],
      ['PORT', '1e3'],
      ['GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE', ''],
      ['GATEWAY_CACHE_TTL_MS', ' '],
      ['LOG_RETENTION_DAYS', '9.5'],
    ] as const)
      expect(() => loadConfig({ [name]: value }), `${name}=${value}`).toThrow(new RegExp(`${name}: must be a whole number in decimal digits`));
    expect(loadConfig({ PORT: '9000', GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: '0' })).toMatchObject({
      port: 9000,
      gateway: { rateLimitPerConnectionPerMinute: 0 },
    });
  });

  it('takes an IPv6 HOST (the default PUBLIC_BASE_URL brackets it) and refuses what cannot be listened on or linked to', () => {
    expect(loadConfig({ HOST: '::1' }).publicBaseUrl).toBe('http://[::1]:8080');
    for (const host of ['[::1]', 'not a host!']) expect(() => loadConfig({ HOST: host }), host).toThrow(/HOST: HOST must be an IP address/);
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'ftp://x.example' })).toThrow(/PUBLIC_BASE_URL must be an http or https URL/);
    expect(() => loadConfig({ PUBLIC_BASE_URL: 'https://x.example/base?q=1#f' })).toThrow(/PUBLIC_BASE_URL must have no query or fragment/);
    for (const url of ['clickhouse:8123', 'ftp://ch.example'])
      expect(() => loadConfig({ CLICKHOUSE_URL: url }), url).toThrow(/CLICKHOUSE_URL must be an http or https URL/);
  });

  it('refuses link-local CIDRs in EGRESS_ALLOWED_CIDRS and a SECRET_KEY with characters outside base64', () => {
    for (const cidrs of ['169.254.0.0/16', '10.0.0.0/8,fe80::/10', '169.254.169.254/32'])
      expect(() => loadConfig({ EGRESS_ALLOWED_CIDRS: cidrs }), cidrs).toThrow(/EGRESS_ALLOWED_CIDRS cannot open link-local addresses/);
    expect(() => loadConfig({ SECRET_KEY: `!!!${'A'.repeat(43)}=` })).toThrow(/SECRET_KEY must be 32 bytes/);
    expect(loadConfig({ SECRET_KEY: Buffer.alloc(32, 7).toString('base64') }).secretKey).toBeDefined();
    expect(loadConfig({ SECRET_KEY: Buffer.alloc(32, 7).toString('base64url') }).secretKey).toBeDefined();
  });

  it('reads the ClickHouse server settings and trims PUBLIC_BASE_URL', () => {
    const c = loadConfig({
      CLICKHOUSE_URL: 'http://ch:8123',
      CLICKHOUSE_USER: 'u',
      CLICKHOUSE_DATABASE: 'logs',
      PUBLIC_BASE_URL: 'https://gw.example.com/',
      EGRESS_ALLOWED_CIDRS: ' 10.0.0.0/8 , 127.0.0.1/32',
      ALLOWED_ORIGINS: 'https://console.example.com , http://localhost:5173/',
    });
    expect(c.allowedOrigins).toEqual(['https://gw.example.com', 'https://console.example.com', 'http://localhost:5173']);
    expect(c.clickhouse).toMatchObject({ url: 'http://ch:8123', username: 'u', database: 'logs' });
    expect(c.publicBaseUrl).toBe('https://gw.example.com');
    expect(c.egressAllowedCidrs).toEqual(['10.0.0.0/8', '127.0.0.1/32']);
  });
});
