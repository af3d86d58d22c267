import type { Identity } from '../repositories/identities.js';
import type { InboundServer } from '../repositories/inbound-servers.js';
import type { ServerValidation, Services } from '../services.js';
import { secretStringsOf, type HeadersSecret, type OAuthTokenSet } from './credentials.js';
import { egressFetch } from './egress-fetch.js';
import { redactSecretValues } from '../redaction.js';
import { engineDetails, responseDebug } from '../alert-debug.js';
import { freshTokenSet } from './oauth-refresh.js';
import { ProbeError, probeUpstream } from './probe.js';

/** How many due validations one poll picks up; the rest wait for the next poll. */
const POLL_BATCH = 20;
/** A claimed job holds its lease this much longer than its timeout, so no other process takes it meanwhile. */
const LEASE_GRACE_MS = 5_000;

/**
 * Feature-learning: validates inbound servers asynchronously. A pending job is a row
 * state, not a promise: `validation_due_at` is set when a server (or identity) needs
 * validating, so jobs survive a restart and are shared safely by several processes
 * (each job is claimed with a lease). The runner connects with the identity's
 * credential, stores what the upstream offers in `features`, and moves
 * `authenticationStatus` from needs-authentication to authenticated, or to
 * unsupported with an alert. Open servers stay open and still get their features.
 */
export class ServerValidationJobs implements ServerValidation {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private started = false;

  constructor(private readonly services: Pick<Services, 'config' | 'db' | 'logger' | 'alerts' | 'configChanges' | 'egress' | 'secrets'>) {}

  /** Starts taking jobs: those already due (left by a stopped process) at once, then every poll interval. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.abort = new AbortController();
    this.timer = setInterval(() => void this.pollDue(), this.services.config.serverValidationPollMs);
    this.timer.unref();
    void this.pollDue();
  }

  /** Stops taking jobs and aborts the running ones; their servers stay due and are picked up on the next start. */
  async stop(): Promise<void> {
    this.started = false;
    clearInterval(this.timer);
    this.abort.abort();
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /** Runs the server's due validation now (called right after a handler set it due). */
  kick(serverGuid: string): void {
    if (!this.started) return;
    if (this.running.has(serverGuid)) {
      this.again.add(serverGuid);
      return;
    }
    const job = this.runOnce(serverGuid)
      .catch((err: unknown) =>
        this.services.logger.error({ err: err instanceof Error ? err.message : String(err), inboundServerGuid: serverGuid }, 'server validation job crashed'),
      )
      .finally(() => {
        this.running.delete(serverGuid);
        if (this.again.delete(serverGuid)) this.kick(serverGuid);
      });
    this.running.set(serverGuid, job);
  }

  /** Resolves when no validation of this server is running in this process (for tests and the CLI). */
  async settled(serverGuid: string): Promise<void> {
    while (this.running.has(serverGuid)) await this.running.get(serverGuid);
  }

  /** Picks up every validation that is due and not running (at start, and on each poll). */
  async pollDue(): Promise<void> {
    if (!this.started) return;
    try {
      const due = await this.services.db
        .selectFrom('inbound_servers')
        .select('guid')
        .where('validation_due_at', '<=', new Date())
        .where('deleted_at', 'is', null)
        .orderBy('validation_due_at')
        .limit(POLL_BATCH)
        .execute();
      for (const { guid } of due) if (!this.running.has(guid)) this.kick(guid);
    } catch (err) {
      if (this.started) this.services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not look for due server validations');
    }
  }

  private async runOnce(serverGuid: string): Promise<void> {
    const { db, config } = this.services;
    const timeoutMs = config.serverValidationTimeoutMs;
    const lease = new Date(Date.now() + timeoutMs + LEASE_GRACE_MS);
    const server = await db
      .updateTable('inbound_servers')
      .set((eb) => ({ validation_due_at: lease, validation_attempts: eb('validation_attempts', '+', 1) }))
      .where('guid', '=', serverGuid)
      .where('validation_due_at', '<=', new Date())
      .where('deleted_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!server) return; // not due, deleted, or claimed by another process

    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([this.abort.signal, timeout]);
    let identity: Identity | undefined;
    let secrets: string[] = [];
    try {
      identity = await this.identityFor(server);
      const headers: Record<string, string> = {};
      let oauth: Identity | undefined;
      if (server.authentication_type !== 'none') {
        if (!identity) throw new Error('no enabled identity to authenticate with');
        if (identity.kind === 'oauth') {
          const set: OAuthTokenSet = await freshTokenSet(this.services, identity);
          secrets = secretStringsOf(set);
          headers.authorization = `Bearer ${set.accessToken}`;
          if (set.refreshToken) oauth = identity;
        } else {
          const map = (await this.services.secrets.get<HeadersSecret>(db, server.organization_guid, identity.secret_guid ?? '')) ?? {};
          secrets = secretStringsOf(map);
          Object.assign(headers, map);
        }
      }
      const probe = () => probeUpstream(new URL(server.url), { headers, fetch: egressFetch(this.services.egress, 'url'), signal, timeoutMs });
      const features = await probe().catch(async (err: unknown) => {
        // A token refused though its expiry was not known (or not yet reached): refreshed once, then asked again.
        if (!oauth || !(err instanceof ProbeError) || (err.status !== 401 && err.status !== 403)) throw err;
        const set: OAuthTokenSet = await freshTokenSet(this.services, oauth, { force: true });
        secrets = [...secrets, ...secretStringsOf(set)];
        headers.authorization = `Bearer ${set.accessToken}`;
        return probe();
      });
      await db
        .updateTable('inbound_servers')
        .set({
          features: JSON.stringify(features),
          features_updated_at: new Date(),
          status_reason: null,
          authentication_status: server.authentication_type === 'none' ? 'open' : 'authenticated',
          validation_due_at: null,
          validation_identity_guid: null,
          validation_attempts: 0,
        })
        .where('guid', '=', server.guid)
        .where('validation_due_at', '=', lease)
        .execute();
      this.services.configChanges.changed(server.organization_guid);
      this.services.logger.info({ inboundServerGuid: server.guid, tools: features.tools.length, transport: features.transport }, 'inbound server validated');
    } catch (err) {
      if (this.abort.signal.aborted) {
        // Stopping, not failing: leave the job due so the next start takes it again.
        await db
          .updateTable('inbound_servers')
          .set({ validation_due_at: new Date() })
          .where('guid', '=', server.guid)
          .where('validation_due_at', '=', lease)
          .execute();
        return;
      }
      const raw = timeout.aborted ? `timed out after ${timeoutMs} ms` : err instanceof Error ? err.message : String(err);
      const probed = err instanceof ProbeError ? err : undefined;
      const debug = {
        ...responseDebug(probed?.response?.status ?? probed?.status, probed?.response?.headers, probed?.response?.body, secrets, identity?.header_names ?? []),
        // null when the probe never ran (no credential, a refresh refused first).
        ...engineDetails({ transport: probed?.transport ?? null }),
      };
      await this.fail(server, identity, lease, redactSecretValues(raw, secrets).slice(0, 500), debug);
    }
  }

  /** The credential to validate with: the one that caused the job, else the newest enabled identity. */
  private async identityFor(server: InboundServer): Promise<Identity | undefined> {
    let query = this.services.db
      .selectFrom('identities')
      .selectAll()
      .where('organization_guid', '=', server.organization_guid)
      .where('inbound_server_guid', '=', server.guid)
      .where('enabled', '=', true);
    if (server.validation_identity_guid) query = query.where('guid', '=', server.validation_identity_guid);
    return query.orderBy('created_at', 'desc').orderBy('guid', 'desc').limit(1).executeTakeFirst();
  }

  /** Marks the validation failed and alerts; `debug` is the peer's answer and the engine's details, already redacted. */
  private async fail(server: InboundServer, identity: Identity | undefined, lease: Date, reason: string, debug: Record<string, unknown>): Promise<void> {
    // A server that was never validated becomes unsupported; an authenticated one keeps
    // working with its other credentials, and only the alert reports the bad one.
    const status = server.authentication_status === 'needs-authentication' ? 'unsupported' : server.authentication_status;
    await this.services.db
      .updateTable('inbound_servers')
      .set({ authentication_status: status, status_reason: reason, validation_due_at: null, validation_identity_guid: null })
      .where('guid', '=', server.guid)
      .where('validation_due_at', '=', lease)
      .execute();
    this.services.logger.warn({ inboundServerGuid: server.guid, identityGuid: identity?.guid, reason }, 'inbound server validation failed');
    const subject = `Validation of server ${server.name} failed`;
    await this.services.alerts
      .raise({
        organizationGuid: server.organization_guid,
        code: 'server_validation_failed',
        messageType: 'error',
        subject,
        message: `The service could not validate ${server.url}: ${reason}`,
        dynamicContent: {
          subject: 'Validation of server {serverName} failed',
          message: 'The service could not validate {serverUrl}: {reason}',
          values: { serverName: server.name, serverUrl: server.url, reason },
        },
        debugContext: { authenticationType: server.authentication_type, statusAfter: status, ...debug },
        relatedResourceIds: [server.guid, ...(identity ? [identity.guid] : [])],
      })
      .catch((err: unknown) => this.services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not raise alert'));
  }
}
