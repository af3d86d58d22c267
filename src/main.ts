import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './http/app.js';
import { DataDirInUseError, listenAdminSocket, refuseIfDataDirInUse } from './runtime/admin-socket.js';
import { bootstrapIfEmpty } from './runtime/bootstrap.js';
import { openRuntime } from './runtime/open.js';
import { MissingChdbError } from './stores/clickhouse.js';

/** Starts the service: stores, first-start bootstrap, HTTP, the admin socket; stops cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  await refuseIfDataDirInUse(config.dataDir);
  const runtime = await openRuntime(config);
  const { services } = runtime;
  const created = await bootstrapIfEmpty(services.db, config.dataDir);
  if (created) {
    // Printed once, on the very first start; later starts say nothing of it.
    process.stdout.write(`Initial admin token: ${created.token}\n`);
  }
  const app = await buildApp({ services });
  const adminSocket = await listenAdminSocket(services, config.dataDir);
  await app.listen({ port: config.port, host: config.host });
  app.log.info(`Admin interface: ${config.publicBaseUrl}/api/v1/svc-admin (MCP at /api/v1/svc-admin/mcp, reference at /api/v1/svc-admin/reference)`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    adminSocket.close();
    await app.close();
    await runtime.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MissingChdbError || err instanceof DataDirInUseError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
