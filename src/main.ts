import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './http/app.js';
import { DataDirInUseError, ensureAdminSocketPath, listenAdminSocket, refuseIfDataDirInUse } from './runtime/admin-socket.js';
import { bootstrapIfEmpty } from './runtime/bootstrap.js';
import { ensureWritableDataDir } from './runtime/data-dir.js';
import { openRuntime } from './runtime/open.js';
import { MissingChdbError } from './stores/clickhouse.js';

/** Starts the service: stores, first-start bootstrap, HTTP, the admin socket; stops cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  ensureWritableDataDir(config.dataDir);
  ensureAdminSocketPath(config.dataDir);
  await refuseIfDataDirInUse(config.dataDir);
  const runtime = await openRuntime(config);
  const { services } = runtime;
  const app = await buildApp({ services });
  // Listening comes before the first start's bootstrap: a port in use stops the service before it prints a token
  // for a workspace nobody can reach.
  await listenOn(app, config);
  const created = await bootstrapIfEmpty(services.db, config.dataDir);
  if (created) {
    // Printed once, on the very first start; later starts say nothing of it.
    process.stdout.write(`Initial admin token: ${created.token}\n`);
    // Where to use it: the log below names only addresses, at a level LOG_LEVEL may hide.
    process.stdout.write(`Sign in at ${config.publicBaseUrl}/console/ with it.\n`);
  }
  const adminSocket = await listenAdminSocket(services, config.dataDir);
  app.log.info(`Admin interface: ${config.publicBaseUrl}/api/v1/svc-admin (MCP at /api/v1/svc-admin/mcp, reference at /api/v1/svc-admin/reference)`);
  app.log.info(`Console: ${config.publicBaseUrl}/console/`);

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

/** Listens on HOST:PORT; an address in use or not available here is said in the variables' names. */
async function listenOn(app: Awaited<ReturnType<typeof buildApp>>, config: ReturnType<typeof loadConfig>): Promise<void> {
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ConfigError(`PORT: ${config.host}:${config.port} is in use by another program; stop it or set PORT to a free port.`);
    if (code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new ConfigError(`HOST, PORT: this machine cannot listen on ${config.host}:${config.port} (${code}).`);
    throw err;
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MissingChdbError || err instanceof DataDirInUseError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
