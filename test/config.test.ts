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
