import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { resolveSecretKey } from '../src/runtime/secret-key.js';

/** The key of contract section 1: generated once into DATA_DIR/secret.key (0600) on embedded stores, read on later starts. */
const dirs: string[] = [];
const fresh = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-key-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('the secret key file', () => {
  it('is generated once, mode 0600, and read again on the next start', () => {
    const dataDir = fresh();
    const config = loadConfig({ DATA_DIR: dataDir });
    const key = resolveSecretKey(config);
    expect(key.length).toBe(32);
    expect(fs.statSync(path.join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
    expect(resolveSecretKey(config).equals(key)).toBe(true);
  });

  // A damaged file stopped the service with "Failed to start:" and a stack trace; it is a configuration problem,
  // said in one line like a bad variable.
  it('stops the start with a configuration message when the file holds no 32-byte key', () => {
    const dataDir = fresh();
    fs.writeFileSync(path.join(dataDir, 'secret.key'), 'garbage\n', { mode: 0o600 });
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(() => resolveSecretKey(config)).toThrow(ConfigError);
    expect(() => resolveSecretKey(config)).toThrow(/secret\.key does not hold a base64 32-byte key; restore it or set SECRET_KEY/);
  });
});
