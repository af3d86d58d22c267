import { engineDetails, responseDebug, type ResponseHeaders } from '../core/alert-debug.js';
import { ALERT_COOLDOWN_MS, mayRaiseAlert } from '../core/alert-gate.js';
import { redactDeep, redactSecretValues } from '../core/redaction.js';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Route } from './catalog.js';

/** upstream_call_failed fires when, within WINDOW_MS, a server failed at least MIN_FAILURES times and at least half its calls failed. */
const WINDOW_MS = 60_000;
const MIN_FAILURES = 5;
const FAILURE_RATIO = 0.5;

export interface UpstreamFailure {
  /** HTTP status from the upstream, when it answered one. */
  status?: number;
  /** The upstream's answer to an HTTP error status, not yet redacted. */
  headers?: ResponseHeaders;
  body?: string;
  reason: string;
  method: string;
  /** Secret strings that must not reach the alert (the credential). */
  secrets: string[];
  headerNames: string[];
  traceId: string;
}

/**
 * Watches upstream outcomes and raises alerts: upstream_auth_failed on a 401/403
 * (once per identity per cooldown), upstream_call_failed when a server keeps
 * failing (a rate over a sliding window, not one alert per failure). Counts are
 * per process; the cooldown is kept here (no store round trip per failing call) and
 * in the shared alert gate, so replicas that all see the failure alert once.
 */
export class UpstreamHealth {
  private readonly windows = new Map<string, { at: number; ok: boolean }[]>();
  private readonly lastAlert = new Map<string, number>();

  constructor(private readonly services: Pick<Services, 'alerts' | 'logger' | 'db'>) {}

  succeeded(route: Route): void {
    this.record(route.serverGuid, true);
  }

  failed(caller: GatewayCaller, route: Route, failure: UpstreamFailure): void {
    const now = Date.now();
    if (failure.status === 401 || failure.status === 403) {
      const key = `upstream_auth_failed ${route.identity?.guid ?? route.serverGuid}`;
      if (this.cool(key, now)) this.raise(caller, route, failure, key);
      return;
    }
    const window = this.record(route.serverGuid, false);
    const failures = window.filter((e) => !e.ok).length;
    const key = `upstream_call_failed ${route.serverGuid}`;
    if (failures >= MIN_FAILURES && failures / window.length >= FAILURE_RATIO && this.cool(key, now)) {
      this.raise(caller, route, failure, key, { failures, calls: window.length, windowSeconds: WINDOW_MS / 1000 });
    }
  }

  private record(serverGuid: string, ok: boolean): { at: number; ok: boolean }[] {
    const now = Date.now();
    let window = this.windows.get(serverGuid);
    if (!window) this.windows.set(serverGuid, (window = []));
    window.push({ at: now, ok });
    while (window.length > 0 && (window[0]!.at < now - WINDOW_MS || window.length > 1000)) window.shift();
    return window;
  }

  private cool(key: string, now: number): boolean {
    const last = this.lastAlert.get(key);
    if (last !== undefined && now - last < ALERT_COOLDOWN_MS) return false;
    this.lastAlert.set(key, now);
    return true;
  }

  private raise(caller: GatewayCaller, route: Route, failure: UpstreamFailure, gateKey: string, rate?: Record<string, number>): void {
    const code = rate ? 'upstream_call_failed' : 'upstream_auth_failed';
    const reason = redactSecretValues(failure.reason, failure.secrets).slice(0, 500);
    const auth = code === 'upstream_auth_failed';
    const subject = auth ? `Server ${route.serverName} refused the gateway's credentials` : `Calls to server ${route.serverName} keep failing`;
    const message = auth
      ? `The upstream ${route.url} answered HTTP ${failure.status} to ${failure.method} through gateway ${caller.gatewayName}: ${reason}`
      : `${rate!.failures} of the last ${rate!.calls} calls to ${route.url} through gateway ${caller.gatewayName} failed within ${rate!.windowSeconds} s; last error: ${reason}`;
    const related = [route.serverGuid, caller.gatewayGuid, route.assignmentGuid, ...(route.identity ? [route.identity.guid] : []), caller.connectionGuid];
    void mayRaiseAlert(this.services, caller.organizationGuid, gateKey)
      .then(async (mine) => {
        if (!mine) return;
        await this.services.alerts.raise({
          organizationGuid: caller.organizationGuid,
          code,
          messageType: 'error',
          subject,
          message,
          dynamicContent: {
            subject: auth ? "Server {serverName} refused the gateway's credentials" : 'Calls to server {serverName} keep failing',
            message: auth
              ? 'The upstream {serverUrl} answered HTTP {status} to {method} through gateway {gatewayName}: {reason}'
              : '{failures} of the last {calls} calls to {serverUrl} through gateway {gatewayName} failed within {windowSeconds} s; last error: {reason}',
            values: {
              serverName: route.serverName,
              serverUrl: route.url,
              status: String(failure.status ?? ''),
              method: failure.method,
              gatewayName: caller.gatewayName,
              reason,
              ...(rate ? Object.fromEntries(Object.entries(rate).map(([k, v]) => [k, String(v)])) : {}),
            },
          },
          debugContext: redactDeep(
            {
              ...responseDebug(failure.status, failure.headers, failure.body, failure.secrets, failure.headerNames),
              ...engineDetails({ transport: route.transport, protocolVersion: route.features?.protocolVersion ?? null }),
              method: failure.method,
              reason,
              traceId: failure.traceId,
              ...(rate ?? {}),
            },
            failure.headerNames,
          ) as Record<string, unknown>,
          relatedResourceIds: related,
          relatedContext: {
            inboundServerGuid: route.serverGuid,
            gatewayGuid: caller.gatewayGuid,
            assignmentGuid: route.assignmentGuid,
            identityGuid: route.identity?.guid ?? null,
            connectionGuid: caller.connectionGuid,
          },
        });
      })
      .catch((err: unknown) => this.services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not raise alert'));
  }
}
