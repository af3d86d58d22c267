import { ADMIN_METHODS } from './admin-tools.js';
import { isModernMessage } from './request-revision.js';
import { malformedRequestParams, malformedTaskAugmentation } from './request-params.js';

type RpcRefusal = { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string } };

/**
 * The admin endpoint's answer (-32602 in words) to a message whose params its SDK would
 * refuse with a dump of its issues, or null: the rules every MCP surface applies
 * (request-params.ts) and, on a 2025 request, the task augmentation its SDK's schema checks.
 * One rule for a message sent alone and for each message of a batch.
 */
export function adminParamsRefusal(message: unknown, protocolVersion: string | string[] | undefined): RpcRefusal | null {
  // A method the endpoint does not serve, or a 2026-07-28 request of one that revision dropped, is the SDK's to refuse (-32601), whatever its params.
  const modern = isModernMessage(message, protocolVersion);
  return malformedRequestParams(message, modern ? '2026-07-28' : 'any', ADMIN_METHODS) ?? (modern ? null : malformedTaskAugmentation(message));
}
