import type { ConfigChanges } from '../config-changes.js';
import type { Principal } from '../operation.js';

interface Entry {
  principal: Principal;
  /** Token expiry (epoch ms), or null for a token that never expires. */
  tokenExpiresAt: number | null;
  cachedAt: number;
}

/**
 * Resolved admin callers, by token hash, for embedded stores only. There the service
 * is the one process that can change the database (the operator CLI hands its
 * commands to it), and every change posts its workspace on ConfigChanges, which
 * drops that workspace's entries at once: a revoke, a deactivation, a role or
 * entitlement change is still effective on the very next request. With a Postgres
 * server other processes change data unseen, so no cache is used there.
 */
export class PrincipalCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    changes: ConfigChanges,
    private readonly maxEntries = 10_000,
    /** A safety net only: correctness comes from the change notices. */
    private readonly ttlMs = 60_000,
  ) {
    changes.subscribe((organizationGuid) => {
      for (const [hash, entry] of this.entries) if (entry.principal.organizationGuid === organizationGuid) this.entries.delete(hash);
    });
  }

  get(tokenHash: string, now = Date.now()): Principal | undefined {
    const entry = this.entries.get(tokenHash);
    if (!entry) return undefined;
    if (now - entry.cachedAt > this.ttlMs || (entry.tokenExpiresAt !== null && entry.tokenExpiresAt <= now)) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return entry.principal;
  }

  set(tokenHash: string, principal: Principal, tokenExpiresAt: Date | null, now = Date.now()): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(tokenHash, { principal, tokenExpiresAt: tokenExpiresAt ? tokenExpiresAt.getTime() : null, cachedAt: now });
  }
}
