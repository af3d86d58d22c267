import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ConfigError } from '../config.js';
import { runAdminCommand, type AdminCommandServices } from '../core/admin-commands.js';
import { toAppError } from '../core/errors.js';
import type { Services } from '../core/services.js';

export const adminSocketPath = (dataDir: string): string => path.join(dataDir, 'admin.sock');

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

export interface AdminRequest {
  command: string;
  args: Record<string, unknown>;
}
export type AdminResponse = { ok: true; result: Record<string, unknown> } | { ok: false; error: { code: string; detail: string; errors?: unknown } };

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

/** Sends one command to a running service; null when none listens on DATA_DIR. */
export function sendAdminCommand(
  dataDir: string,
  request: AdminRequest,
  timeoutMs = 120_000,
  onProgress?: (done: number, total: number) => void,
): Promise<AdminResponse | null> {
  const socketPath = adminSocketPath(dataDir);
  if (!fs.existsSync(socketPath)) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    let answer = '';
    let connected = false;
    const socket = net.connect(socketPath, () => {
      connected = true;
      socket.write(JSON.stringify(request) + '\n');
    });
    socket.setEncoding('utf8');
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error('The running service did not answer the admin command in time.')));
    socket.on('data', (chunk) => {
      answer += chunk;
      // Every complete line but the answer is a progress report.
      let nl: number;
      while ((nl = answer.indexOf('\n')) >= 0 && answer.startsWith('{"progress"')) {
        const { progress } = JSON.parse(answer.slice(0, nl)) as { progress: { done: number; total: number } };
        onProgress?.(progress.done, progress.total);
        answer = answer.slice(nl + 1);
      }
    });
    socket.on('end', () => {
      try {
        resolve(JSON.parse(answer) as AdminResponse);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    socket.on('error', (err) => (connected ? reject(err) : resolve(null)));
  });
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
