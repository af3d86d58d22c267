import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { runAdminCommand } from '../src/core/admin-commands.js';
import { keyIdOf, SecretKeyMismatchError } from '../src/core/secrets/envelope.js';
import { SecretStore } from '../src/core/secrets/secret-store.js';
import { newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('rotate-secret-key', () => {
  it('re-encrypts every secret from the previous key to the new one, and is safe to run again', async () => {
    const { services } = t.runtime;
    const oldStore = services.secrets;
    const ws = await newWorkspace(t);
    const values = [{ Authorization: 'Bearer rotate-me-1' }, { accessToken: 'rotate-me-2', tokenEndpoint: 'http://127.0.0.1/token', clientId: 'c' }];
    const guids = [];
    for (const v of values) guids.push(await oldStore.put(services.db, ws.organizationGuid, v));

    const newKey = randomBytes(32);
    const oldKey = Buffer.from(t.config.secretKey!, 'base64');
    // What the service runs with after the operator sets SECRET_KEY=new, PREVIOUS_SECRET_KEY=old.
    services.secrets = new SecretStore(newKey, [oldKey]);
    try {
      expect(await services.secrets.get(services.db, ws.organizationGuid, guids[0]!)).toEqual(values[0]);
      const first = await runAdminCommand(services, 'rotate-secret-key', { org: ws.organizationGuid });
      expect(first).toMatchObject({ keyId: keyIdOf(newKey), unreadable: [] });
      expect(first.rotated).toBeGreaterThanOrEqual(2);
      const rows = await services.db.selectFrom('secrets').select('key_id').where('organization_guid', '=', ws.organizationGuid).execute();
      expect(new Set(rows.map((r) => r.key_id))).toEqual(new Set([keyIdOf(newKey)]));

      // The new key alone now opens everything; the old one opens nothing.
      const newOnly = new SecretStore(newKey);
      for (const [i, guid] of guids.entries()) expect(await newOnly.get(services.db, ws.organizationGuid, guid)).toEqual(values[i]);
      await expect(new SecretStore(oldKey).get(services.db, ws.organizationGuid, guids[0]!)).rejects.toBeInstanceOf(SecretKeyMismatchError);

      const second = await runAdminCommand(services, 'rotate-secret-key', { org: ws.organizationGuid });
      expect(second).toMatchObject({ rotated: 0, alreadyCurrent: rows.length, unreadable: [] });
    } finally {
      // Rotating back is the same procedure with the keys swapped.
      services.secrets = new SecretStore(oldKey, [newKey]);
      await runAdminCommand(services, 'rotate-secret-key', { org: ws.organizationGuid });
      services.secrets = oldStore;
    }
    expect(await oldStore.get(services.db, ws.organizationGuid, guids[1]!)).toEqual(values[1]);
  });

  it('reports secrets sealed under a key it does not know instead of failing', async () => {
    const { services } = t.runtime;
    const ws = await newWorkspace(t);
    const stranger = new SecretStore(randomBytes(32));
    const guid = await stranger.put(services.db, ws.organizationGuid, { a: 'b' });
    const report = await runAdminCommand(services, 'rotate-secret-key', { org: ws.organizationGuid });
    expect(report.unreadable).toContain(guid);
    await services.db.deleteFrom('secrets').where('guid', '=', guid).execute();
  });

  it('rotates every workspace when no --org is given', async () => {
    const { services } = t.runtime;
    const ws = await newWorkspace(t);
    await services.secrets.put(services.db, ws.organizationGuid, { a: 'b' });
    // Same key as the service: everything is already current, nothing is rewritten.
    const report = await runAdminCommand(services, 'rotate-secret-key', {});
    expect(report.rotated).toBe(0);
    expect(report.alreadyCurrent).toBeGreaterThanOrEqual(1);
  });

  it('refuses arguments and malformed previous keys', async () => {
    await expect(runAdminCommand(t.runtime.services, 'rotate-secret-key', { org: 'not-a-guid' })).rejects.toMatchObject({ code: 'validation_failed' });
    expect(() => loadConfig({ PREVIOUS_SECRET_KEY: 'short' })).toThrow(/PREVIOUS_SECRET_KEY/);
    const k = randomBytes(32).toString('base64');
    expect(loadConfig({ PREVIOUS_SECRET_KEY: `${k}, ${k}` }).previousSecretKeys).toEqual([k, k]);
  });
});
