import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError, type Config } from '../config.js';

/**
 * The key that encrypts secrets at rest. SECRET_KEY wins; in embedded mode a key is
 * generated once into DATA_DIR/secret.key (mode 0600) and reused. With a Postgres
 * server, config already refused to start without SECRET_KEY.
 */
export function resolveSecretKey(config: Config): Buffer {
  if (config.secretKey) return Buffer.from(config.secretKey, 'base64');
  const file = path.join(config.dataDir, 'secret.key');
  if (fs.existsSync(file)) {
    const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
    // A damaged file is the operator's to mend, said in one line like a bad variable (not a stack trace).
    if (key.length !== 32) throw new ConfigError(`SECRET_KEY: ${file} does not hold a base64 32-byte key; restore it or set SECRET_KEY.`);
    return key;
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  fs.writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
