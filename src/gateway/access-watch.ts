import type { ServerResponse } from 'node:http';
import type { ConfigChanges } from '../core/config-changes.js';
import { GatewayAccessError } from './access.js';

/** How often an open stream's caller is admitted again besides the notices: a token expires with nothing changed. */
export const ACCESS_RECHECK_MS = 60_000;

export interface AccessWatchOptions {
  configChanges: ConfigChanges;
  organizationGuid: string;
  /** Admits the stream's caller again (the gateway's access check with the token that opened it); throws GatewayAccessError when refused. */
  readmit: () => Promise<unknown>;
  /** The stream: destroyed when its caller is refused. */
  out: ServerResponse;
  /** What the stream says before it ends, given why (a 2026-07-28 listen's notifications/cancelled); nothing when absent. */
  farewell?: (reason: string) => string;
}

/**
 * Ends a host's long-lived stream (a 2025 session's GET stream, the legacy transport's,
 * a 2026-07-28 listen) once its caller is no longer admitted, so that nothing more of
 * the upstreams (log messages, list changes, requests for input) reaches a token that
 * was revoked, a connection, host or gateway disabled, or a user deactivated. Checked
 * at every configuration notice of the stream's workspace, from any replica (the token
 * resolver has dropped what it kept by then), and every ACCESS_RECHECK_MS besides. A
 * notice during a check runs another after it; a store that cannot answer leaves the
 * stream as it is.
 */
export function endWhenRefused({ configChanges, organizationGuid, readmit, out, farewell }: AccessWatchOptions): void {
  let checking: { again: boolean } | null = null;
  const check = async (): Promise<void> => {
    if (checking) return void (checking.again = true);
    const state = (checking = { again: false });
    try {
      do {
        state.again = false;
        if (out.destroyed) return;
        try {
          await readmit();
        } catch (err) {
          if (!(err instanceof GatewayAccessError)) continue;
          if (!farewell) return void out.destroy();
          // Written, then cut: the stream's own writer (the SDK's) may be mid-way through another event.
          out.write(farewell(err.message), () => out.destroy());
          return;
        }
      } while (state.again);
    } finally {
      checking = null;
    }
  };
  const unsubscribe = configChanges.subscribe((org) => {
    if (org === organizationGuid) void check();
  });
  const timer = setInterval(() => void check(), ACCESS_RECHECK_MS);
  timer.unref();
  out.once('close', () => {
    unsubscribe();
    clearInterval(timer);
  });
}
