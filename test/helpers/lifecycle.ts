import { afterAll, beforeAll } from 'vitest';
import { closeClients, startTestApp, type TestApp } from './harness.js';

/**
 * Starts one application for the test file (beforeAll) and closes it with the
 * cached MCP clients (afterAll). `onReady` receives it: `useTestApp((app) => (t = app))`.
 */
export function useTestApp(onReady: (t: TestApp) => void, env: Record<string, string> = {}): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await startTestApp(env);
    onReady(app);
  });
  afterAll(async () => {
    await closeClients();
    await app?.close();
  });
}
