import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A path inside the checkout (console/, clickhouse/): found from this module's place
 * by walking up to the directory holding package-lock.json (not package.json, which
 * tsc copies into dist/), so it is the same whether the service runs from src/ (tsx)
 * or from dist/src/ (`npm run build`, then node).
 */
export function projectPath(...parts: string[]): string {
  return path.join(PROJECT_DIR, ...parts);
}

const PROJECT_DIR = (() => {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package-lock.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error('package-lock.json not found above the service: run it from its checkout');
  }
})();
