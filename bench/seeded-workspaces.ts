import { issueAccessToken } from '../src/core/auth/issue-access-token.js';
import { seedCallLogs } from '../src/core/logs/seed.js';
import type { Services } from '../src/core/services.js';
import { createWorkspace } from '../src/core/workspaces.js';

/**
 * The call log a bench measures: `rows` seeded rows over `days` days in one workspace
 * through the ingest path, then a tenth as many in three other workspaces (the noise
 * every query must skip). Returns the workspace, its admin token and what the main
 * seed cost: wall seconds and CPU microseconds per row.
 */
export async function seedBenchWorkspaces(
  services: Pick<Services, 'db' | 'callLogs' | 'alerts'>,
  opts: { rows: number; days: number; users?: number; onProgress?: (done: number) => void },
): Promise<{ organizationGuid: string; token: string; ingestSeconds: number; cpuMicrosPerRow: number; noiseRows: number }> {
  const ws = await createWorkspace(services.db, { name: 'bench', adminEmail: 'bench@example.test' });
  const started = performance.now();
  const cpu = process.cpuUsage();
  await seedCallLogs(services, { organizationGuid: ws.organizationGuid, rows: opts.rows, days: opts.days, users: opts.users, onProgress: opts.onProgress });
  const ingestSeconds = (performance.now() - started) / 1000;
  // CPU of every thread of the process (chDB parses and merges on its own threads): less sensitive to a shared machine's load than rows/s.
  const used = process.cpuUsage(cpu);
  const cpuMicrosPerRow = (used.user + used.system) / opts.rows;
  const noise = Math.floor(Math.max(1000, Math.floor(opts.rows / 10)) / 3);
  for (let i = 0; i < 3; i++) {
    const other = await createWorkspace(services.db, { name: `noise-${i}`, adminEmail: `noise${i}@example.test` });
    await seedCallLogs(services, { organizationGuid: other.organizationGuid, rows: noise, days: opts.days, users: opts.users });
  }
  return { organizationGuid: ws.organizationGuid, token: ws.token, ingestSeconds, cpuMicrosPerRow, noiseRows: 3 * noise };
}

/**
 * The bench workspace a former run seeded and kept (`--keep`, then `--data-dir`):
 * its organization and a new admin token, so a bench measures it again without seeding.
 */
export async function reopenBenchWorkspace(services: Pick<Services, 'db'>, label: string): Promise<{ organizationGuid: string; token: string }> {
  const admin = await services.db
    .selectFrom('users')
    .innerJoin('organizations', 'organizations.guid', 'users.organization_guid')
    .select(['users.guid as userGuid', 'organizations.guid as organizationGuid'])
    .where('organizations.name', '=', 'bench')
    .executeTakeFirstOrThrow();
  const issued = await issueAccessToken(services.db, {
    organizationGuid: admin.organizationGuid,
    userGuid: admin.userGuid,
    label: `${label}-${Date.now()}`,
    expiresInDays: 0,
  });
  return { organizationGuid: admin.organizationGuid, token: issued.token! };
}
