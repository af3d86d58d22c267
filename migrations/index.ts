import type { Migration } from 'kysely/migration';
import * as people from './2026-11-21-0001-people.js';
import * as serversGateways from './2026-11-21-0002-servers-gateways.js';
import * as serversExtra from './2026-11-21-0004-servers-extra.js';
import * as collectors from './2026-11-21-0005-collectors.js';
import * as toolCuration from './2026-11-24-0001-tool-curation.js';
import * as endedGatewaySessions from './2026-11-25-0002-ended-gateway-sessions.js';
import * as auditForwarding from './2026-11-25-0003-audit-forwarding.js';
import * as oauthIssuer from './2026-11-25-0010-oauth-issuer.js';
import * as endedSessionTimes from './2026-11-29-0001-ended-session-times.js';
import * as alertGates from './2026-11-29-0002-alert-gates.js';
import * as oauthRefreshLease from './2026-11-30-0001-oauth-refresh-lease.js';

/**
 * Every Postgres migration, in order. Listed statically (not read from disk) so the
 * same list works under tsx, vitest and a compiled build.
 */
export const migrations: Record<string, Migration> = {
  '2026-11-21-0001-people': people,
  '2026-11-21-0002-servers-gateways': serversGateways,
  '2026-11-21-0004-servers-extra': serversExtra,
  '2026-11-21-0005-collectors': collectors,
  '2026-11-24-0001-tool-curation': toolCuration,
  '2026-11-25-0002-ended-gateway-sessions': endedGatewaySessions,
  '2026-11-25-0003-audit-forwarding': auditForwarding,
  '2026-11-25-0010-oauth-issuer': oauthIssuer,
  '2026-11-29-0001-ended-session-times': endedSessionTimes,
  '2026-11-29-0002-alert-gates': alertGates,
  '2026-11-30-0001-oauth-refresh-lease': oauthRefreshLease,
};
