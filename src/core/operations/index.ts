import type { AnyOperation } from '../operation.js';
import { collectorOperations } from './collector.js';
import { roleOperations } from './roles.js';
import { sessionOperations } from './session.js';
import { teamOperations } from './teams.js';
import { userOperations } from './users.js';

/**
 * The registry: every operation of the admin interface. The REST routes, the MCP
 * tools and the OpenAPI document are generated from this list and nothing else.
 */
export const operations: readonly AnyOperation[] = [
  ...teamOperations,
  ...roleOperations,
  ...userOperations,
  ...sessionOperations,
  ...collectorOperations,
] as unknown as AnyOperation[];

export const operationsByName: ReadonlyMap<string, AnyOperation> = new Map(operations.map((op) => [op.name, op]));
