import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { BATCH_REVISION } from '../gateway/batch.js';

/**
 * The answer (HTTP 400) to a JSON-RPC batch the admin MCP endpoint cannot serve, or null.
 * It is stateless, so the request's MCP-Protocol-Version header names the revision (none
 * means 2025-03-26, as the transport says): only 2025-03-26 has batches, as at the
 * gateways (gateway/batch.ts). The SDK would serve one in any 2025 revision, each message
 * past the rules that answer malformed params in words (request-params.ts).
 */
export function adminBatchRefusal(
  protocolVersion: string | string[] | undefined,
): { jsonrpc: '2.0'; id: null; error: { code: number; message: string } } | null {
  const version = Array.isArray(protocolVersion) ? protocolVersion[0] : protocolVersion;
  if (version === undefined || version === BATCH_REVISION) return null;
  const message = `JSON-RPC batches are not part of revision ${version} (removed in 2025-06-18): send one message per request.`;
  return { jsonrpc: '2.0', id: null, error: { code: ProtocolErrorCode.InvalidRequest, message } };
}
