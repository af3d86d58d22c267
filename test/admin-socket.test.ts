import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { listenAdminSocket } from '../src/runtime/admin-socket.js';
import { adminSocketPath } from '../src/runtime/admin-socket-client.js';
import { invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { countRows } from './helpers/call-logs.js';

/** The service's side of `npm run admin`: commands handed over DATA_DIR/admin.sock. */
let t: TestApp;
useTestApp((app) => (t = app));
let server: net.Server | undefined;
afterAll(() => server?.close());

describe('the admin socket', () => {
  // An operator's Ctrl-C ended the CLI while the service went on writing every row asked for (up to a billion).
  it('stops a seed-logs whose CLI hung up, keeping what it wrote', async () => {
    server = await listenAdminSocket(t.runtime.services, t.config.dataDir);
    const ws = await newWorkspace(t);
    const rows = 1_000_000;
    // The CLI: one request line, then it goes away at the first progress line.
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(adminSocketPath(t.config.dataDir), () =>
        socket.write(JSON.stringify({ command: 'seed-logs', args: { org: ws.organizationGuid, rows } }) + '\n'),
      );
      socket.once('data', () => {
        socket.destroy();
        resolve();
      });
      socket.on('error', reject);
    });
    // The command ends (early, with the fix) and is audited; wait for its record.
    let audited: unknown[] = [];
    for (let i = 0; i < 1200 && audited.length === 0; i++) {
      const res = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { operation: 'seed-logs' } });
      audited = res.body.items;
      if (audited.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(audited).toHaveLength(1);
    const written = await countRows(t, ws.organizationGuid);
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(rows);
  }, 400_000);
});
