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

/** Waits for the server's validation job in this process, then returns its stored row. */
export async function validated(t: TestApp, serverGuid: string) {
  await t.runtime.services.serverValidation.settled(serverGuid);
  return t.runtime.services.db.selectFrom('inbound_servers').selectAll().where('guid', '=', serverGuid).executeTakeFirstOrThrow();
}
