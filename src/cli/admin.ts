import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { ConfigError, loadConfig } from '../config.js';
import { parseAdminCommand } from '../core/admin-command-input.js';
import { toAppError, validationFailed } from '../core/errors.js';
import { sendAdminCommand, type AdminResponse } from '../runtime/admin-socket-client.js';

const USAGE = `Usage: npm run admin -- <command> [options] [--json]

Commands:
  create-workspace --name N --admin-email E [--partner]
  entitlement grant|revoke --org GUID --key ff-svc-admin
  create-token --user GUID --label L [--expires-in-days D]
  migrate
  rotate-secret-key [--org GUID]
                      re-encrypts every secret under SECRET_KEY; start with the
                      new key as SECRET_KEY and the old one as PREVIOUS_SECRET_KEY
  seed-logs --org GUID --rows N [--days D] [--users U]
                      synthetic call logs through the ingest path; U tops the
                      workspace's users up with synthetic ones

While the service runs on the same DATA_DIR, the command is carried out by it
(over DATA_DIR/admin.sock); otherwise this process opens the stores itself.`;

/**
 * The command flags: each one's argument key (camelCase, as the commands' schemas
 * name it) and kind. One table for reading the command line and for naming a refused
 * argument by the flag the operator typed.
 */
const FLAGS = {
  name: { key: 'name', kind: 'text' },
  'admin-email': { key: 'adminEmail', kind: 'text' },
  partner: { key: 'partner', kind: 'switch' },
  org: { key: 'org', kind: 'text' },
  key: { key: 'key', kind: 'text' },
  user: { key: 'user', kind: 'text' },
  label: { key: 'label', kind: 'text' },
  'expires-in-days': { key: 'expiresInDays', kind: 'number' },
  rows: { key: 'rows', kind: 'number' },
  days: { key: 'days', kind: 'number' },
  users: { key: 'users', kind: 'number' },
} as const satisfies Record<string, { key: string; kind: 'text' | 'switch' | 'number' }>;

/** The flag that sets an argument (`adminEmail` is `--admin-email`); other names (command, action) as they are. */
const flagOf = (key: string): string => {
  const flag = Object.entries(FLAGS).find(([, f]) => f.key === key)?.[0];
  return flag ? `--${flag}` : key;
};

/** Turns argv into the command's name and arguments (camelCase keys). */
function parseCommandLine(argv: string[]): { command: string; args: Record<string, unknown>; json: boolean } {
  const flagOptions = Object.fromEntries(Object.entries(FLAGS).map(([flag, f]) => [flag, { type: f.kind === 'switch' ? 'boolean' : 'string' } as const]));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...flagOptions, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command = 'help', ...rest] = positionals;
  if (values.help) return { command: 'help', args: {}, json: false };
  const args: Record<string, unknown> = {};
  for (const [flag, f] of Object.entries(FLAGS)) {
    const value = (values as Record<string, string | boolean | undefined>)[flag];
    if (value === undefined || value === false) continue;
    args[f.key] = f.kind === 'number' ? wholeNumber(String(value)) : value;
  }
  // Words a command does not take are refused, as parseArgs refuses an unknown option (they were ignored).
  const extra = command === 'entitlement' ? rest.slice(1) : rest;
  if (extra.length > 0) throw new Error(`Unexpected argument${extra.length > 1 ? 's' : ''} '${extra.join(' ')}' for ${command}: see --help.`);
  if (command === 'entitlement') args.action = rest[0];
  return { command, args, json: Boolean(values.json) };
}

/**
 * A numeric flag: decimal digits become a number; anything else ('', '0x10', 'abc')
 * stays text, which the command's schema refuses in words, the same over the admin
 * socket as here (Number() made '' a 0 and 'abc' a NaN, which JSON sends as null).
 */
const wholeNumber = (value: string): number | string => (/^\d+$/.test(value) ? Number(value) : value);

/** A progress bar on stderr when it is a terminal (with --json too: stdout holds only the JSON); a no-op otherwise. */
function progressBar(): { update: (done: number, total: number) => void; stop: () => void } {
  if (!process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  let bar: cliProgress.SingleBar | null = null;
  return {
    update: (done, total) => {
      if (!bar) {
        bar = new cliProgress.SingleBar(
          { stream: process.stderr, format: '{bar} {percentage}% | {value}/{total} rows | {eta_formatted} left' },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, 0);
      }
      bar.update(done);
    },
    stop: () => {
      bar?.stop();
      bar = null;
    },
  };
}

function print(result: Record<string, unknown>, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(result) + '\n');
    return;
  }
  for (const [k, v] of Object.entries(result)) process.stdout.write(`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}\n`);
}

async function main(): Promise<number> {
  const { command, args, json } = parseCommandLine(process.argv.slice(2));
  if (command === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const config = loadConfig();
  const progress = progressBar();
  let response: AdminResponse | null;
  try {
    // seed-logs may run for many minutes inside the service; progress lines keep the socket alive.
    response = await sendAdminCommand(config.dataDir, { command, args }, command === 'seed-logs' ? 24 * 3600_000 : undefined, progress.update);
  } finally {
    progress.stop();
  }
  // No service answers on this DATA_DIR: bad input is answered before the stores are opened (a refusal there changes
  // nothing, so nothing is audited; through the service it is, as its interface's refusals are).
  const refused = response ? undefined : parseAdminCommand(command, args).refusal;
  if (refused) response = { ok: false, error: { code: refused.code, detail: refused.message, errors: refused.extras.errors } };
  if (!response) {
    // No service answers on this DATA_DIR: the CLI works on its stores itself. Where there are none yet, it is most
    // likely another directory than the running service's, whose data this command would never reach.
    if (!config.databaseUrl && !fs.existsSync(path.join(config.dataDir, 'pg')))
      process.stderr.write(
        `note: DATA_DIR=${config.dataDir} holds no stores yet: new ones are made there. A service running with another DATA_DIR will not see this command's result.\n`,
      );
    // Loaded only here: a command handed to the running service, or refused, needs none of the stores' modules.
    const [{ openRuntime }, { runAdminCommand }] = await Promise.all([import('../runtime/open.js'), import('../core/admin-commands.js')]);
    const runtime = await openRuntime(config, { backgroundJobs: false, logger: { info() {}, warn() {}, debug() {}, error: (o: unknown) => console.error(o) } });
    try {
      response = {
        ok: true,
        result: await runAdminCommand(runtime.services, command, args, { onProgress: progress.update, appliedOnOpen: runtime.migrationsApplied }),
      };
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'internal') console.error(err);
      response = { ok: false, error: { code: e.code, detail: e.message, errors: e.extras.errors } };
    } finally {
      progress.stop();
      await runtime.close();
    }
  }
  if (!response.ok) {
    if (json) process.stdout.write(JSON.stringify({ error: response.error }) + '\n');
    const fieldErrors = Array.isArray(response.error.errors) ? (response.error.errors as { path: string; message: string }[]) : [];
    // The arguments named by the flags typed (the schemas, and a running service, name `adminEmail` for `--admin-email`).
    const detail = fieldErrors.length > 0 ? validationFailed(fieldErrors.map((e) => ({ ...e, path: flagOf(e.path) }))).message : response.error.detail;
    process.stderr.write(`error (${response.error.code}): ${detail}\n`);
    // With several invalid parameters the detail lists only their names: each one's reason follows on its own line.
    if (fieldErrors.length > 1) for (const e of fieldErrors) process.stderr.write(`  ${flagOf(e.path)}: ${e.message}\n`);
    if (response.error.code === 'validation_failed') process.stderr.write(USAGE + '\n');
    return 1;
  }
  print(response.result, json);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
