import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { copyStoreTemplate, storeKind } from './helpers/harness.js';
import { scratchDataDir, serviceEnv, startService as startProcess, stopService, TSX } from './helpers/service-process.js';
import { freePort } from './helpers/ports.js';

/**
 * The service as a user runs it: a real process on embedded stores, the first-start
 * bootstrap, the operator CLI through the admin socket and on its own, and a
 * graceful stop on SIGTERM.
 */
const run = promisify(execFile);
const dataDir = scratchDataDir('mcpgw-proc-');
const children: ChildProcess[] = [];
const baseEnv = (port: number) => serviceEnv(dataDir(), port);

const startService = (port: number) => startProcess(dataDir(), port, children);
const stop = (child: ChildProcess) => stopService(child);

async function admin(args: string[], port: number) {
  const { stdout } = await run(TSX, ['src/cli/admin.ts', ...args, '--json'], { env: baseEnv(port) });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

describe.runIf(storeKind() === 'pglite')('the service process', () => {
  it('bootstraps once, serves the CLI over its socket, stops on SIGTERM, and the CLI works without it', async () => {
    const port = await freePort();
    const first = await startService(port);
    const tokenLine = first
      .output()
      .split('\n')
      .find((l) => l.startsWith('Initial admin token: '));
    expect(tokenLine).toMatch(/^Initial admin token: svcp_[A-Za-z0-9]{8}_[A-Za-z0-9]{43}$/);
    const token = tokenLine!.slice('Initial admin token: '.length);
    // The first start says where to use it, whatever LOG_LEVEL (here warn) hides.
    expect(first.output()).toContain(`\nSign in at http://127.0.0.1:${port}/console/ with it.\n`);
    const tokenFile = path.join(dataDir(), 'initial-admin-token');
    expect(fs.readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir(), 'secret.key')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir(), 'admin.sock')).mode & 0o777).toBe(0o600);

    const whoami = await (await fetch(`http://127.0.0.1:${port}/api/v1/svc-admin/whoami`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(whoami).toMatchObject({ user: { emailAddress: 'admin@localhost' }, organization: { name: 'Default' }, role: { name: 'Administrator' } });

    // Through the running service (embedded stores admit one process).
    const ws = await admin(['create-workspace', '--name', 'Acme', '--admin-email', 'ops@acme.test'], port);
    expect(ws).toEqual({
      organizationGuid: expect.any(String),
      userGuid: expect.any(String),
      roleGuid: expect.any(String),
      token: expect.stringMatching(/^svcp_/),
    });
    const revoked = await admin(['entitlement', 'revoke', '--org', ws.organizationGuid, '--key', 'ff-svc-admin'], port);
    expect(revoked).toEqual({ organizationGuid: ws.organizationGuid, key: 'ff-svc-admin', granted: false });
    const denied = await fetch(`http://127.0.0.1:${port}/api/v1/svc-admin/whoami`, { headers: { authorization: `Bearer ${ws.token}` } });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { code: string }).code).toBe('entitlement_required');
    const minted = await admin(['create-token', '--user', ws.userGuid, '--label', 'cli'], port);
    expect(minted).toMatchObject({ label: 'cli', token: expect.stringMatching(/^svcp_/), alreadyExisted: false });

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('svc_admin_requests_total{operation="whoami",surface="rest",status="200"}');
    expect(metrics).not.toContain(token);

    expect(await stop(first.child)).toBe(0);
    expect(fs.existsSync(path.join(dataDir(), 'admin.sock'))).toBe(false);

    // Without a running service the CLI opens the stores itself; the output is the same shape.
    const granted = await admin(['entitlement', 'grant', '--org', ws.organizationGuid, '--key', 'ff-svc-admin'], port);
    expect(granted).toEqual({ organizationGuid: ws.organizationGuid, key: 'ff-svc-admin', granted: true });
    const migrated = await admin(['migrate'], port);
    expect(migrated).toEqual({ postgres: [], clickhouse: [] });

    // A later start prints no token and keeps the data.
    const second = await startService(port);
    expect(second.output()).not.toContain('Initial admin token');
    // A third process on the same directory says why it cannot start, before it opens any store.
    const refused = await startService(await freePort()).then(
      () => expect.unreachable('a second service started on the same DATA_DIR'),
      (err: Error) => err.message,
    );
    expect(refused).toContain(`Another service already runs on ${dataDir()}`);
    expect(refused).not.toMatch(/Failed to start|Exception|\n\s+at /);
    const again = await fetch(`http://127.0.0.1:${port}/api/v1/svc-admin/whoami`, { headers: { authorization: `Bearer ${ws.token}` } });
    expect(again.status).toBe(200);
    expect(await stop(second.child)).toBe(0);
  }, 180_000);

  // Found by an operator's trial (session 27): with an offline CLI command holding DATA_DIR, a starting service opened
  // PGlite (which has no lock of its own) and ran its migrations there before chDB's lock stopped it.
  it("leaves PGlite alone when another process holds DATA_DIR's embedded ClickHouse", async () => {
    const held = fs.mkdtempSync(path.join(dataDir(), 'held-'));
    const holder = spawn(
      TSX,
      [
        '-e',
        `import(${JSON.stringify(path.resolve('src/stores/clickhouse.ts'))})
           .then((m) => m.openClickhouse({ dataDir: ${JSON.stringify(held)} }))
           .then(() => { process.stdout.write('held\\n'); setInterval(() => {}, 1000); });`,
      ],
      // Its own process group: tsx runs the script in a child of its own, which a kill of tsx alone would leave running.
      { stdio: ['ignore', 'pipe', 'inherit'], detached: true },
    );
    await new Promise<void>((resolve, reject) => {
      holder.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve());
      holder.on('exit', (code) => reject(new Error(`the holder exited (${code})`)));
    });
    try {
      const refused = await startProcess(held, await freePort(), children).then(
        () => expect.unreachable('a service started beside another process on its DATA_DIR'),
        (err: Error) => err.message,
      );
      expect(refused).toMatch(/DATA_DIR: the embedded ClickHouse under .* could not be used/);
      expect(refused).not.toContain('Initial admin token');
      expect(refused).not.toMatch(/Failed to start|\n\s+at /);
      expect(fs.existsSync(path.join(held, 'pg'))).toBe(false);
    } finally {
      process.kill(-holder.pid!, 'SIGKILL');
      holder.stdout!.destroy();
    }
  }, 120_000);

  // Found by a newcomer's trial (session 26): a port in use printed a working admin token, then a stack; a Postgres or
  // data directory the service could not use was a driver's stack that named no variable.
  it('says in one line which variable to change when it cannot start, and prints no token then', async () => {
    // Taken by a program that hangs up at once (the start-up check's requests to /healthz then fail fast).
    const taken = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => expect.unreachable('the service started'),
        (err: Error) => err.message,
      );
    try {
      const fresh = fs.mkdtempSync(path.join(dataDir(), 'fresh-'));
      // Migrated stores, as a restart finds them (a first start's are the first test's): the port is checked after they open.
      copyStoreTemplate(fresh, 'pg');
      copyStoreTemplate(fresh, 'clickhouse');
      const inUse = await failure(startProcess(fresh, port, children));
      expect(inUse).toContain(`PORT: 127.0.0.1:${port} is in use by another program`);
      expect(inUse).not.toContain('Initial admin token');
      expect(fs.existsSync(path.join(fresh, 'initial-admin-token'))).toBe(false);
      expect(inUse).not.toMatch(/Failed to start|\n\s+at /);
    } finally {
      taken.close();
    }
    const noPostgres = await failure(
      startProcess(fs.mkdtempSync(path.join(dataDir(), 'pg-')), await freePort(), children, {
        DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere',
        SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      }),
    );
    expect(noPostgres).toMatch(/DATABASE_URL: the Postgres server could not be used: /);
    expect(noPostgres).not.toMatch(/Failed to start|\n\s+at /);
    const noClickhouse = await failure(
      startProcess(fs.mkdtempSync(path.join(dataDir(), 'ch-')), await freePort(), children, { CLICKHOUSE_URL: 'http://127.0.0.1:1' }),
    );
    expect(noClickhouse).toMatch(/CLICKHOUSE_URL: the ClickHouse server at http:\/\/127\.0\.0\.1:1 could not be used: /);
    expect(noClickhouse).not.toMatch(/Failed to start|\n\s+at |@clickhouse\/client/);
    const file = path.join(dataDir(), 'a-file');
    fs.writeFileSync(file, '');
    const notADirectory = await failure(startProcess(path.join(file, 'data'), await freePort(), children));
    expect(notADirectory).toMatch(/DATA_DIR: .* cannot be created or written by this user \(ENOTDIR\)/);
    // A DATA_DIR too long for the admin socket's path printed a token, then failed to bind the socket with a stack.
    const deep = path.join(dataDir(), 'd'.repeat(120));
    const tooLong = await failure(startProcess(deep, await freePort(), children));
    expect(tooLong).toMatch(/DATA_DIR: .* is too long for its admin socket/);
    expect(tooLong).not.toContain('Initial admin token');
    expect(tooLong).not.toMatch(/Failed to start|\n\s+at /);
  }, 120_000);

  it('the CLI explains bad input without a stack trace', async () => {
    const port = await freePort();
    await expect(run(TSX, ['src/cli/admin.ts', 'create-token', '--user', 'nope', '--label', 'x'], { env: baseEnv(port) })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--user: must be a guid'),
    });
    // Several invalid parameters: each one's reason, not only their names.
    await expect(
      run(TSX, ['src/cli/admin.ts', 'create-workspace', '--name', '', '--admin-email', 'not-an-email'], { env: baseEnv(port) }),
    ).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/2 invalid parameters: --name, --admin-email\n {2}--name: .+\n {2}--admin-email: Invalid email address\n/),
    });
    // A word the command does not take is refused (it was ignored, and the workspace made).
    await expect(
      run(TSX, ['src/cli/admin.ts', 'create-workspace', '--name', 'X', '--admin-email', 'x@x.test', 'extra'], { env: baseEnv(port) }),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("Unexpected argument 'extra' for create-workspace") });
    // A number flag that is not decimal digits is refused as what it is (it was read as 0, never expiring, or NaN).
    for (const days of ['', '0x10', 'abc'])
      await expect(
        run(TSX, ['src/cli/admin.ts', 'create-token', '--user', '00000000-0000-4000-8000-000000000000', '--label', 'x', `--expires-in-days=${days}`], {
          env: baseEnv(port),
        }),
        days,
      ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('--expires-in-days: Invalid input: expected number, received string') });
    // Bad input is answered before the stores are opened: a DATA_DIR that has none is left empty.
    const untouched = fs.mkdtempSync(path.join(dataDir(), 'untouched-'));
    await expect(run(TSX, ['src/cli/admin.ts', 'create-token', '--user', 'nope', '--label', 'x'], { env: serviceEnv(untouched, port) })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--user: must be a guid'),
    });
    expect(fs.readdirSync(untouched)).toEqual([]);
    // On a DATA_DIR with no stores yet (not the running service's, most likely), it says so before making them.
    const elsewhere = fs.mkdtempSync(path.join(dataDir(), 'elsewhere-'));
    const made = await run(TSX, ['src/cli/admin.ts', 'migrate', '--json'], { env: serviceEnv(elsewhere, port) });
    expect(made.stderr).toContain(`note: DATA_DIR=${elsewhere} holds no stores yet`);
    // It reports what it applied, though the opening of the stores applied it (it reported nothing).
    const applied = JSON.parse(made.stdout.trim()) as { postgres: string[]; clickhouse: string[] };
    expect(applied.postgres).toContain('2026-11-25-0002-ended-gateway-sessions');
    expect(applied.clickhouse.length).toBeGreaterThan(10);
    const again = await run(TSX, ['src/cli/admin.ts', 'migrate', '--json'], { env: serviceEnv(elsewhere, port) });
    expect(again.stderr).not.toContain('holds no stores yet');
    expect(JSON.parse(again.stdout.trim())).toEqual({ postgres: [], clickhouse: [] });
    // On a terminal seed-logs draws its bar on stderr, with --json too (stdout keeps only the JSON).
    const created = await run(TSX, ['src/cli/admin.ts', 'create-workspace', '--name', 'Bar', '--admin-email', 'bar@bar.test', '--json'], {
      env: serviceEnv(elsewhere, port),
    });
    const org = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { organizationGuid: string }).organizationGuid;
    const seed = [TSX, 'src/cli/admin.ts', 'seed-logs', '--org', org, '--rows', '3000', '--json'].map((word) => `'${word}'`).join(' ');
    const onTerminal = await run('script', ['-qec', seed, '/dev/null'], { env: serviceEnv(elsewhere, port) });
    expect(onTerminal.stdout).toMatch(/\d+% \| \d+\/3000 rows/);
    expect(onTerminal.stdout).toMatch(/\{"rows":3000,"seconds":[\d.]+\}/);
  }, 120_000);
});
