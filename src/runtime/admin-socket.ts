import fs from 'node:fs';
import net from 'node:net';
import { ConfigError } from '../config.js';
import { runAdminCommand, type AdminCommandServices } from '../core/admin-commands.js';
import { toAppError } from '../core/errors.js';
import type { Services } from '../core/services.js';
import { adminSocketPath, type AdminRequest, type AdminResponse } from './admin-socket-client.js';

/** The longest path a Unix socket may have (sun_path less its final NUL): 103 bytes on macOS and the BSDs, 107 elsewhere. */
const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' || process.platform.endsWith('bsd') ? 103 : 107;

/**
 * Refuses a DATA_DIR too long for its admin socket's path, before anything is opened
 * or bootstrapped: binding the socket after the first start's bootstrap failed with
 * a stack trace, once the initial admin token had been printed.
 */
export function ensureAdminSocketPath(dataDir: string): void {
  const socketPath = adminSocketPath(dataDir);
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES)
    throw new ConfigError(
      `DATA_DIR: ${dataDir} is too long for its admin socket (${socketPath} is ${bytes} bytes; a Unix socket's path may have at most ${MAX_SOCKET_PATH_BYTES}); choose a shorter path.`,
    );
}

/**
 * Serves operator commands over a Unix socket (mode 0600) so `npm run admin` can
 * reach the one process that holds the embedded stores. One JSON line in, one out.
 */
export async function listenAdminSocket(services: AdminCommandServices & Pick<Services, 'logger'>, dataDir: string): Promise<net.Server> {
  const socketPath = adminSocketPath(dataDir);
  await refuseIfDataDirInUse(dataDir);
  // A socket file left by a process that died is removed.
  fs.rmSync(socketPath, { force: true });
  const server = net.createServer((socket) => {
    let buffer = '';
    // The CLI hanging up (Ctrl-C) ends its command here too, not only its own process.
    const hungUp = new AbortController();
    socket.on('close', () => hungUp.abort());
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      buffer += chunk;
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      const line = buffer.slice(0, nl);
      buffer = '';
      void (async () => {
        let response: AdminResponse;
        try {
          const req = JSON.parse(line) as AdminRequest;
          // Progress goes out as {"progress":{done,total}} lines before the one answer line.
          const onProgress = (done: number, total: number) => void socket.write(JSON.stringify({ progress: { done, total } }) + '\n');
          response = { ok: true, result: await runAdminCommand(services, req.command, req.args ?? {}, { onProgress, signal: hungUp.signal }) };
        } catch (err) {
          const e = toAppError(err);
          if (e.status >= 500) services.logger.error({ err }, 'admin command failed');
          response = { ok: false, error: { code: e.code, detail: e.message, errors: e.extras.errors } };
        }
        socket.end(JSON.stringify(response) + '\n');
      })();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, 0o600);
  return server;
}

/** Another service process holds the data directory. */
export class DataDirInUseError extends Error {}

/**
 * Refuses a data directory whose admin socket answers: another service holds its
 * embedded stores. Checked before the stores open (the second process would fail on
 * chDB's lock with a stack trace, after opening PGlite beside the first) and again
 * when the socket is bound.
 */
export async function refuseIfDataDirInUse(dataDir: string): Promise<void> {
  const socketPath = adminSocketPath(dataDir);
  if (!fs.existsSync(socketPath)) return;
  const alive = await new Promise<boolean>((resolve) => {
    const probe = net.connect(socketPath, () => {
      probe.end();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
  if (alive) throw new DataDirInUseError(`Another service already runs on ${dataDir} (its admin socket answers). Embedded stores admit one process.`);
}
