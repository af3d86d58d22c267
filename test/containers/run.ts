import { spawnSync } from 'node:child_process';
import { getContainerRuntimeClient } from 'testcontainers';

/**
 * `npm run test:containers`: the same suite against a Postgres server and a
 * ClickHouse server in containers, which covers @clickhouse/client's HTTP path as
 * production uses it. Needs a Docker engine; without one it says so and skips.
 */
async function main(): Promise<number> {
  try {
    await getContainerRuntimeClient();
  } catch (err) {
    console.error(
      `test:containers skipped: no container engine is reachable (${(err as Error).message.split('\n')[0]}). ` +
        'It needs Docker (or Podman) to start Postgres and ClickHouse servers; `npm test` covers PGlite, chDB and a Postgres server given by DATABASE_URL.',
    );
    return 0;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { ClickHouseContainer } = await import('@testcontainers/clickhouse');
  const [pg, ch] = await Promise.all([
    new PostgreSqlContainer('postgres:17-alpine').start(),
    new ClickHouseContainer('clickhouse/clickhouse-server:25.8').start(),
  ]);
  try {
    const result = spawnSync('npx', ['vitest', 'run', '--project', 'postgres'], {
      stdio: 'inherit',
      env: {
        ...process.env,
        DATABASE_URL: pg.getConnectionUri(),
        TEST_CLICKHOUSE_URL: ch.getHttpUrl(),
        TEST_CLICKHOUSE_USER: ch.getUsername(),
        TEST_CLICKHOUSE_PASSWORD: ch.getPassword(),
      },
    });
    return result.status ?? 1;
  } finally {
    await Promise.all([pg.stop(), ch.stop()]);
  }
}

main().then((code) => process.exit(code));
