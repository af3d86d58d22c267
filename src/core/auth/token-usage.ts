import { sql } from 'kysely';
import type { ConfigDb } from '../../stores/postgres.js';

/**
 * Keeps access tokens' lastUsedAt without a database write per request: uses are
 * noted in memory and flushed in one statement every few seconds (and at shutdown).
 * Readers merge the pending values, so list_access_tokens is exact in this process.
 */
export class TokenUsage {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: ConfigDb,
    private readonly flushEveryMs = 5000,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(() => undefined), this.flushEveryMs);
    this.timer.unref();
  }

  note(tokenId: string, at = new Date()): void {
    this.pending.set(tokenId, at);
  }

  /** The newest use of a token known here, pending or stored. */
  lastUsed(tokenId: string, stored: Date | null): Date | null {
    const p = this.pending.get(tokenId);
    if (!p) return stored;
    return !stored || p > stored ? p : stored;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const rows = [...batch].map(([id, at]) => sql`(${id}::uuid, ${at.toISOString()}::timestamptz)`);
    // One statement for the whole batch; greatest() keeps a newer value written by another process.
    await sql`update access_tokens t set last_used_at = greatest(t.last_used_at, u.at)
              from (values ${sql.join(rows)}) as u(id, at) where t.id = u.id`
      .execute(this.db)
      .catch((err: unknown) => {
        // Put the batch back so a transient failure loses nothing.
        for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
        throw err;
      });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
