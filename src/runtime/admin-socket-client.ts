import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * The CLI's side of the admin socket: what it needs to hand a command to a running
 * service, without the modules the service's side imports (the CLI answers in a
 * fraction of the time when it does not load them).
 */

/** Where a service on DATA_DIR listens for operator commands. */
export const adminSocketPath = (dataDir: string): string => path.join(dataDir, 'admin.sock');

export interface AdminRequest {
  command: string;
  args: Record<string, unknown>;
}
export type AdminResponse = { ok: true; result: Record<string, unknown> } | { ok: false; error: { code: string; detail: string; errors?: unknown } };

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
