import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { issueAccessToken } from '../src/core/auth/issue-access-token.js';
import { CALL_LOG_INSERT_FORMAT, THIN_INSERT_COLUMNS } from '../src/core/logs/call-log-row.js';
import { SEGMENT_ROWS, segmentInsertSettings } from '../src/core/logs/call-log-writer.js';
import { seedCallLogs } from '../src/core/logs/seed.js';
import type { Services } from '../src/core/services.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { loadAverage } from './bench-config.js';

/** Rows a read of the floor's bodies takes at a time. */
const PAGE_ROWS = 50_000;

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

/**
 * The seed's floor, measured in the same run: up to `wanted` rows the seed wrote into
 * `organizationGuid`, read back as bodies of one segment each in the writer's format (under a workspace
 * of their own, with new guids) and inserted back to back through the store's insert
 * with the writer's format and settings. What the insert path alone takes, with no
 * row generated, encoded or spooled: rows/s and CPU microseconds a row (every thread,
 * the merges the inserts cause included, as in the seed's own figure).
 */
export async function measureInsertPath(
  services: Pick<Services, 'db' | 'clickhouse'>,
  organizationGuid: string,
  wanted = 6 * SEGMENT_ROWS,
): Promise<{ rowsPerSecond: number; cpuMicrosPerRow: number }> {
  const floor = await writeFloorBodies(services, organizationGuid, wanted);
  try {
    const started = performance.now();
    const cpu = process.cpuUsage();
    let rows = 0;
    await insertFloorBodies(services, floor, undefined, (inserted) => (rows += inserted));
    const used = process.cpuUsage(cpu);
    return { rowsPerSecond: Math.round(rows / ((performance.now() - started) / 1000)), cpuMicrosPerRow: (used.user + used.system) / rows };
  } finally {
    floor.remove();
  }
}

/** Segment bodies made from a seed's rows, in files, for a workspace of their own. */
export interface FloorBodies {
  workspace: string;
  files: { file: string; rows: number }[];
  remove(): void;
}

/** Up to `wanted` of the rows the seed wrote into `organizationGuid`, as SEGMENT_ROWS-row bodies in files (new guids, a workspace of their own). */
export async function writeFloorBodies(services: Pick<Services, 'db' | 'clickhouse'>, organizationGuid: string, wanted: number): Promise<FloorBodies> {
  const counted = await services.clickhouse.client.query({
    query: 'SELECT count() AS n FROM call_logs WHERE organization_guid = {from:String}',
    query_params: { from: organizationGuid },
    format: 'JSONEachRow',
  });
  const rows = Math.min(wanted, Number((await counted.json<{ n: string }>())[0]!.n));
  const target = await createWorkspace(services.db, { name: 'insert-path', adminEmail: 'insert-path@example.test' });
  // Aliases of their own: one named as a column would stand for it in the WHERE too.
  const columns = THIN_INSERT_COLUMNS.map((c) =>
    c === 'organization_guid' ? '{to:String} AS to_workspace' : c === 'guid' ? 'generateUUIDv7() AS new_guid' : c,
  );
  // Read in the table's own order, one stream (max_threads 1: each page continues the
  // last unless a merge ends between them, and a row read twice costs the same to
  // insert): ordered by time, each read merged every part's stream with a buffer per
  // column, and that, not the service, made the largest resident memory of a 100M-row
  // run (docs/call-logs.md, "The largest resident memory was the bench's").
  // Each segment's body goes to a file, as the writer's spool holds it, read in pages of
  // 50k rows so the bench holds no more than one page.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'insert-path-'));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    const files: { file: string; rows: number }[] = [];
    for (let offset = 0; offset < rows; offset += PAGE_ROWS) {
      if (offset % SEGMENT_ROWS === 0) files.push({ file: path.join(dir, `${files.length}.body`), rows: 0 });
      const take = Math.min(PAGE_ROWS, rows - offset);
      const result = await services.clickhouse.client.query({
        query: `SELECT ${columns.join(', ')} FROM call_logs WHERE organization_guid = {from:String} LIMIT {take:UInt32} OFFSET {skip:UInt32} SETTINGS max_threads = 1`,
        query_params: { from: organizationGuid, to: target.organizationGuid, take, skip: offset },
        format: CALL_LOG_INSERT_FORMAT,
      });
      fs.appendFileSync(files.at(-1)!.file, await result.text());
      files.at(-1)!.rows += take;
    }
    return { workspace: target.organizationGuid, files, remove };
  } catch (err) {
    remove();
    throw err;
  }
}

/**
 * Inserts `bodies` as many at once as the writer's lanes, each lane taking the next body
 * when its last is in; with `until`, over and over (each time under a new deduplication
 * token) until it aborts; `onInserted` hears each body's rows once in.
 */
export async function insertFloorBodies(
  services: Pick<Services, 'clickhouse'>,
  bodies: FloorBodies,
  until?: AbortSignal,
  onInserted?: (rows: number) => void,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; until ? !until.aborted : i < bodies.files.length; i = next++) {
      const body = bodies.files[i % bodies.files.length]!;
      await services.clickhouse.insertEncoded({
        table: 'call_logs',
        columns: THIN_INSERT_COLUMNS,
        format: CALL_LOG_INSERT_FORMAT,
        body: { file: body.file },
        settings: segmentInsertSettings('call_logs', `insert-path-${bodies.workspace}-${i}`),
      });
      onInserted?.(body.rows);
    }
  };
  await Promise.all(Array.from({ length: services.clickhouse.insertLanes }, lane));
}

/** measureInsertPath as the line a bench prints under its seed's. */
export async function insertPathFigure(services: Pick<Services, 'db' | 'clickhouse'>, organizationGuid: string): Promise<string> {
  const floor = await measureInsertPath(services, organizationGuid);
  return (
    `insert path alone (the seed's rows again as ${SEGMENT_ROWS}-row bodies, ${services.clickhouse.insertLanes} at a time as the writer's lanes, nothing generated, encoded or spooled; ${loadAverage()}): ` +
    `${floor.rowsPerSecond} rows/s, ${floor.cpuMicrosPerRow.toFixed(1)} µs of CPU a row`
  );
}
