import { sql } from 'kysely';
import type { ConfigDb } from '../stores/postgres.js';
import type { Logger } from './logger.js';

/** One alert about one cause within this time, by the whole service. */
export const ALERT_COOLDOWN_MS = 10 * 60_000;

/**
 * True when this caller may raise the alert `key` of the workspace now: no replica
 * raised it within `withinMs` (the store's clock decides, one atomic upsert, so two
 * replicas asking at once get one yes). A raiser that watches a cause call by call
 * (the gateway's upstream health, token refreshes) asks here, so a cause seen by
 * every replica is alerted once, not once per replica. When the store cannot answer,
 * the alert is raised: a duplicate is better than a lost alert.
 */
export async function mayRaiseAlert(
  deps: { db: ConfigDb; logger: Logger },
  organizationGuid: string,
  key: string,
  withinMs = ALERT_COOLDOWN_MS,
): Promise<boolean> {
  try {
    const claimed = await deps.db
      .insertInto('alert_gates')
      .values({ organization_guid: organizationGuid, gate_key: key })
      .onConflict((oc) =>
        oc
          .columns(['organization_guid', 'gate_key'])
          .doUpdateSet({ raised_at: sql`now()` })
          .where('alert_gates.raised_at', '<=', sql<Date>`now() - ${withinMs} * interval '1 millisecond'`),
      )
      .returning('gate_key')
      .executeTakeFirst();
    if (claimed) return true;
    deps.logger.debug({ organizationGuid, key }, 'alert already raised within its cooldown: not raised again');
    return false;
  } catch (err) {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err), key }, 'could not consult the alert gate; raising anyway');
    return true;
  }
}
