import { sql } from 'kysely';
import type { ConfigDb } from '../stores/postgres.js';
import type { ForwardedSignal, ForwarderCursor } from '../stores/schema.js';

/**
 * The forwarder's durable state in Postgres (table forwarder_cursors). Every write
 * after the lease is taken is fenced on `lease_owner = me AND lease_expires_at >
 * now()`: a process whose lease ran out cannot move a checkpoint another process now
 * owns.
 */
const after = (ms: number) => sql<Date>`now() + make_interval(secs => ${ms / 1000}::double precision)`;

/**
 * The cursors this process may take (not leased by someone else), soonest due first, each
 * marked whether it is due now: none at all means nothing to forward here until a
 * collector is configured (the forwarder then sleeps longer between passes).
 */
export async function listCursorsInTurn(
  db: ConfigDb,
  owner: string,
  limit: number,
): Promise<(Pick<ForwarderCursor, 'organization_guid' | 'signal' | 'checkpoint_at' | 'checkpoint_guid'> & { due: boolean })[]> {
  return db
    .selectFrom('forwarder_cursors')
    .select(['organization_guid', 'signal', 'checkpoint_at', 'checkpoint_guid', sql<boolean>`next_attempt_at <= now()`.as('due')])
    .where((eb) => eb.or([eb('lease_expires_at', '<', sql<Date>`now()`), eb('lease_owner', '=', owner)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute();
}

/** Takes or renews the lease in one atomic UPDATE; undefined when another process holds it or it is not due. */
export async function claimCursor(
  db: ConfigDb,
  organizationGuid: string,
  signal: ForwardedSignal,
  owner: string,
  leaseMs: number,
): Promise<ForwarderCursor | undefined> {
  return db
    .updateTable('forwarder_cursors')
    .set({ lease_owner: owner, lease_expires_at: after(leaseMs) })
    .where('organization_guid', '=', organizationGuid)
    .where('signal', '=', signal)
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where((eb) => eb.or([eb('lease_expires_at', '<', sql<Date>`now()`), eb('lease_owner', '=', owner)]))
    .returningAll()
    .executeTakeFirst();
}

export interface Advance {
  checkpointAt: Date;
  checkpointGuid: string;
  sent: number;
  rejected: number;
  lastError: string | null;
}

/** Moves the checkpoint past a batch the collector took. False when the lease was lost. */
export async function advanceCursor(
  db: ConfigDb,
  organizationGuid: string,
  signal: ForwardedSignal,
  owner: string,
  leaseMs: number,
  a: Advance,
): Promise<boolean> {
  const res = await db
    .updateTable('forwarder_cursors')
    .set((eb) => ({
      checkpoint_at: a.checkpointAt,
      checkpoint_guid: a.checkpointGuid,
      attempts: 0,
      next_attempt_at: new Date(0),
      last_error: a.lastError,
      lease_expires_at: after(leaseMs),
      sent_total: eb('sent_total', '+', a.sent),
      rejected_total: eb('rejected_total', '+', a.rejected),
      updated_at: sql<Date>`now()`,
    }))
    .where('organization_guid', '=', organizationGuid)
    .where('signal', '=', signal)
    .where('lease_owner', '=', owner)
    .where('lease_expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Records a failed attempt and when to try again; the checkpoint stays. With
 * `configSavedAt` (the updated_at of the configuration the attempt used), nothing is
 * recorded when the configuration was saved again since: the save made the cursor due
 * at once (syncForwarderCursors), and a failure of the collector it replaced must not
 * put it back into that collector's backoff.
 */
export async function postponeCursor(
  db: ConfigDb,
  organizationGuid: string,
  signal: ForwardedSignal,
  owner: string,
  p: { delayMs: number; attempts: number; retried: number; lastError: string; configSavedAt?: Date },
): Promise<void> {
  let q = db
    .updateTable('forwarder_cursors')
    .set((eb) => ({
      attempts: p.attempts,
      next_attempt_at: after(p.delayMs),
      last_error: p.lastError,
      retried_total: eb('retried_total', '+', p.retried),
      updated_at: sql<Date>`now()`,
    }))
    .where('organization_guid', '=', organizationGuid)
    .where('signal', '=', signal)
    .where('lease_owner', '=', owner);
  const savedAt = p.configSavedAt;
  if (savedAt) {
    // Read back as a Date, the stored time lost its microseconds: compare at that precision.
    q = q.where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('collector_configurations')
            .select(sql`1`.as('one'))
            .where('organization_guid', '=', organizationGuid)
            .where(sql<boolean>`date_trunc('milliseconds', updated_at) <> ${savedAt}`),
        ),
      ),
    );
  }
  await q.execute();
}

/** Gives up every lease of this process (graceful stop), so another process takes over at once. */
export async function releaseLeases(db: ConfigDb, owner: string): Promise<void> {
  await db
    .updateTable('forwarder_cursors')
    .set({ lease_owner: null, lease_expires_at: new Date(0) })
    .where('lease_owner', '=', owner)
    .execute();
}
