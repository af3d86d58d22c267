import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { storeKind } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';
import { scratchDataDir, startService } from './helpers/service-process.js';

/**
 * The container image holds what the service reads at run time. There is no Docker
 * engine here, so the test builds the image's /app by hand: exactly the files the
 * Dockerfile's COPY lines name, the checkout's node_modules beside them (what its
 * `npm install` provides), and starts the service from there as its CMD does.
 */
const scratch = scratchDataDir('mcpgw-image-');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

/** The sources of the Dockerfile's COPY lines, as the build context names them. */
function copiedPaths(dockerfile: string): string[] {
  return dockerfile
    .split('\n')
    .filter((line) => /^COPY\s/.test(line))
    .flatMap((line) => line.trim().split(/\s+/).slice(1, -1));
}

describe.runIf(storeKind() === 'pglite')('the Dockerfile', () => {
  it('copies everything the service needs: started from the image layout, it serves the API and the console', async () => {
    const app = path.join(scratch(), 'app');
    fs.mkdirSync(app);
    for (const source of copiedPaths(fs.readFileSync('Dockerfile', 'utf8'))) fs.cpSync(source, path.join(app, source), { recursive: true });
    fs.symlinkSync(path.resolve('node_modules'), path.join(app, 'node_modules'));
    const port = await freePort();
    const service = await startService(path.join(scratch(), 'data'), port, children, {}, app);
    for (const page of ['/console/', '/console/app.js', '/api/v1/svc-admin/openapi.json']) {
      const res = await fetch(`http://127.0.0.1:${port}${page}`);
      expect(res.status, `${page}: ${service.output()}`).toBe(200);
    }
  }, 120_000);
});
