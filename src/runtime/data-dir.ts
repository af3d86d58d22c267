import fs from 'node:fs';
import { ConfigError } from '../config.js';

/**
 * Makes DATA_DIR (and checks it can be written) before anything is opened in it, so a
 * directory the service may not use is said in the variable's name, not as a stack
 * from whichever store tried first.
 */
export function ensureWritableDataDir(dataDir: string): void {
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    fs.accessSync(dataDir, fs.constants.W_OK | fs.constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw new ConfigError(`DATA_DIR: ${dataDir} cannot be created or written by this user (${code}); point DATA_DIR at a directory it may write.`);
  }
}
