import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { BATCH_REVISION } from '../gateway/batch.js';
import { adminParamsRefusal } from './admin-params.js';

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

/** A message the endpoint answers itself, and its answer. */
export interface RefusedMessage {
  message: unknown;
  answer: { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string } };
}

/**
 * The messages of a request (one, or each of a batch), each past the rules it would meet
 * alone (admin-params.ts): the ones refused with their answers, and the rest for the SDK
 * (which would answer a bad cursor -32603 and bad arguments -32602 with its zod issues dumped).
 */
export function screenMessages(messages: readonly unknown[], protocolVersion: string | string[] | undefined): { refused: RefusedMessage[]; rest: unknown[] } {
  const refused: RefusedMessage[] = [];
  const rest: unknown[] = [];
  for (const message of messages) {
    const answer = adminParamsRefusal(message, protocolVersion);
    if (answer) refused.push({ message, answer });
    else rest.push(message);
  }
  return { refused, rest };
}
