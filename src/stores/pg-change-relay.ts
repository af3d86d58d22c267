import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The channel every service process on one Postgres database listens on. */
export const CHANGE_CHANNEL = 'mcpgw_config_changes';
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

interface RelayLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Carries configuration-change notices between the service processes that share
 * one Postgres server, with LISTEN/NOTIFY on a connection of its own. Each process
 * tags what it publishes with a random origin id and ignores its own notices (it
 * has already told its local listeners). NOTIFY is not durable: a notice sent while
 * this connection is down is lost, so whatever caches on it must still expire on a
 * TTL; the relay makes them exact in the common case, not in every case.
 */
export class PgChangeRelay {
  private readonly origin = randomBytes(6).toString('hex');
  private client: pg.Client | null = null;
  private closed = false;
  private reconnectDelay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly connectionString: string,
    private readonly onNotice: (organizationGuid: string) => void,
    private readonly logger: RelayLogger,
  ) {}

  /** Connects and starts listening; resolves once LISTEN is in place (throws when Postgres cannot be reached). */
  static async open(opts: { connectionString: string; onNotice: (organizationGuid: string) => void; logger: RelayLogger }): Promise<PgChangeRelay> {
    const relay = new PgChangeRelay(opts.connectionString, opts.onNotice, opts.logger);
    await relay.connect();
    return relay;
  }

  /** Tells the other processes that `organizationGuid` changed. Never throws: a lost notice falls back to the TTLs. */
  publish(organizationGuid: string): void {
    const client = this.client;
    if (!client) return;
    client.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, `${this.origin} ${organizationGuid}`]).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (n) => {
      if (n.channel !== CHANGE_CHANNEL || !n.payload) return;
      const space = n.payload.indexOf(' ');
      if (space < 0 || n.payload.slice(0, space) === this.origin) return;
      this.onNotice(n.payload.slice(space + 1));
    });
    // A dropped connection is replaced; until then notices are lost (see the class comment).
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      client.end().catch(() => undefined);
      if (this.closed) return;
      this.logger.warn({ err: err?.message ?? 'connection ended', retryInMs: this.reconnectDelay }, 'config change relay: lost its Postgres connection');
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    this.client = client;
    this.reconnectDelay = RECONNECT_MIN_MS;
  }

  private scheduleReconnect(): void {
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.closed) return;
      this.connect().then(
        () => this.logger.info({}, 'config change relay: listening again'),
        () => {
          this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_MS);
          this.scheduleReconnect();
        },
      );
    }, this.reconnectDelay);
    this.reconnectTimer.unref();
  }
}
