import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * The service as a user runs it: `tsx src/main.ts` as a child process on embedded
 * stores under `dataDir`, listening on 127.0.0.1 only.
 */
export const TSX = path.resolve('node_modules/.bin/tsx');
/** The project's Node (npm scripts put it first on PATH), else the one running the tests. */
export const NODE = fs.existsSync(path.resolve('node_modules/.bin/node')) ? path.resolve('node_modules/.bin/node') : process.execPath;

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output: () => string;
}

/**
 * The data directory of the service processes a test file (or a describe) starts:
 * made in beforeAll, when the tests run, not when the file is collected (a file or
 * describe the other store's run skips never reaches afterAll, and would leave it
 * behind), and removed in afterAll. Call it before registering the hooks that stop
 * the processes: after-hooks run last-registered first, so the processes are gone
 * before their directory is.
 */
export function scratchDataDir(prefix: string): () => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => dir!;
}

/** The environment of a service on embedded stores (never a DATABASE_URL or SECRET_KEY of the test run). */
export function serviceEnv(dataDir: string, port: number): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, SECRET_KEY: _key, ...env } = process.env;
  return { ...env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
}

/**
 * Starts the service and resolves once it has started (/healthz answers and the admin
 * socket listens); `children` collects it for the caller's cleanup. `cwd`: the
 * directory it runs from (the checkout by default).
 */
export async function startService(
  dataDir: string,
  port: number,
  children: ChildProcess[],
  extraEnv: NodeJS.ProcessEnv = {},
  cwd?: string,
): Promise<ServiceProcess> {
  // Node with tsx's loader, not the tsx launcher: the launcher runs the service in a
  // child of its own, which a SIGKILL of the launcher would leave running.
  const child = spawn(NODE, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...serviceEnv(dataDir, port), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  for (let i = 0; i < 240; i++) {
    // Started: /healthz answers once the service listens, which comes before the first start's bootstrap (and the
    // token it prints); the admin socket comes last.
    const ok =
      fs.existsSync(path.join(dataDir, 'admin.sock')) &&
      (await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
    if (ok) return { child, output: () => out };
    if (child.exitCode !== null) throw new Error(`service exited: ${out}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`service did not become healthy: ${out}`);
}

const INITIAL_TOKEN = 'Initial admin token: ';

/** The bootstrap token a first start prints, or undefined. */
export function initialAdminToken(output: string): string | undefined {
  return output
    .split('\n')
    .find((l) => l.startsWith(INITIAL_TOKEN))
    ?.slice(INITIAL_TOKEN.length);
}

/** Sends `signal` and resolves with the exit code (null when a signal ended it). */
export async function stopService(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  return exited;
}
