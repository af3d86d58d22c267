import type { AnyOperation } from '../operation.js';
import { identityOperations } from './identities.js';
import { alertOperations } from './alerts.js';
import { logOperations } from './logs.js';
import { reportOperations } from './reports.js';
import { auditOperations } from './audit.js';
import { collectorOperations } from './collector.js';
import { roleOperations } from './roles.js';
import { serverOperations } from './servers.js';
import { sessionOperations } from './session.js';
import { teamOperations } from './teams.js';
import { userOperations } from './users.js';
import { gatewayOperations } from './gateways.js';
import { gatewayTokenOperations } from './gateway-tokens.js';
import { assignmentOperations } from './assignments.js';
import { toolNamingOperations } from './tool-naming.js';
import { hostOperations } from './hosts.js';
import { connectionOperations } from './connections.js';

/**
 * The registry: every operation of the admin interface. The REST routes, the MCP
 * tools and the OpenAPI document are generated from this list and nothing else.
 */
export const operations: readonly AnyOperation[] = [
  ...teamOperations,
  ...roleOperations,
  ...userOperations,
  ...sessionOperations,
  ...gatewayOperations,
  ...gatewayTokenOperations,
  ...assignmentOperations,
  ...toolNamingOperations,
  ...hostOperations,
  ...connectionOperations,
  ...serverOperations,
  ...identityOperations,
  ...logOperations,
  ...reportOperations,
  ...auditOperations,
  ...alertOperations,
  ...collectorOperations,
] as unknown as AnyOperation[];

export const operationsByName: ReadonlyMap<string, AnyOperation> = new Map(operations.map((op) => [op.name, op]));
