import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';

/** What a store template was made with, beside its `pg` and `clickhouse` directories. */
export interface StoreTemplateManifest {
  logRetentionDays: number;
}
export const STORE_TEMPLATE_MANIFEST = 'store-template.json';

/**
 * Once per run, before any test process starts: the embedded stores migrated by the
 * CLI's own `migrate` (in a process of its own: chDB admits one data directory per
 * process). startTestApp copies them into each test's data directory, where a fresh
 * PGlite spends 4-5 s in initdb and chDB 1.5 s in its DDL (docs/decisions.md, "Test
 * start-up"). The directory is named in TEST_STORE_TEMPLATE, which the test processes
 * inherit, and the processes they start too (test/conformance/compare.ts).
 */
export function setup(): () => void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-store-template-'));
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent', SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
  // The template is of the embedded stores, whatever servers the run also uses.
  for (const name of Object.keys(env)) if (name === 'DATABASE_URL' || name.startsWith('CLICKHOUSE_')) delete env[name];
  execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', 'migrate'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const manifest: StoreTemplateManifest = { logRetentionDays: loadConfig(env).logRetentionDays };
  fs.writeFileSync(path.join(dir, STORE_TEMPLATE_MANIFEST), JSON.stringify(manifest));
  process.env.TEST_STORE_TEMPLATE = dir;
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
