import { setTimeout as sleep } from 'node:timers/promises';
import type { NewAlert } from '../../src/core/alerts.js';
import type { TestApp } from './harness.js';

/** Replaces the app's alert sink with one that keeps every alert, for assertions. */
export function captureAlerts(t: TestApp): NewAlert[] {
  const alerts: NewAlert[] = [];
  t.runtime.services.alerts = {
    raise: async (alert) => {
      alerts.push(alert);
    },
  };
  return alerts;
}

/**
 * Waits for the server's validation job, then returns its stored row. On a database other
 * test files share (the postgres project) another process may claim the job first: its
 * lease (a due time ahead) is waited out too.
 */
export async function validated(t: TestApp, serverGuid: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    await t.runtime.services.serverValidation.settled(serverGuid);
    const row = await t.runtime.services.db.selectFrom('inbound_servers').selectAll().where('guid', '=', serverGuid).executeTakeFirstOrThrow();
    const leasedElsewhere = row.validation_due_at !== null && new Date(row.validation_due_at).getTime() > Date.now();
    if (!leasedElsewhere || Date.now() > deadline) return row;
    await sleep(50);
  }
}
