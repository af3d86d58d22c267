import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../src/config.js';

/** A logger for benches: they print figures, so the service's own log shows errors only. */
export const silentLogger = { info() {}, warn() {}, debug() {}, error: (o: unknown) => console.error(o) };

/**
 * A bench run's configuration: a fresh data directory under the OS temp directory
 * (the bench removes it when done), a fixed secret key, quiet logs, then `env`.
 */
export function benchConfig(name: string, env: Record<string, string> = {}): { config: Config; dataDir: string } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-${name}-`));
  return { dataDir, config: loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', SECRET_KEY: Buffer.alloc(32, 3).toString('base64'), ...env }) };
}

/** The machine's load averages (1, 5, 15 minutes), printed next to each phase: the machine is shared. */
export const loadAverage = (): string =>
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
