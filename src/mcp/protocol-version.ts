import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { MODERN_REVISION } from '../gateway/modern-upstream.js';

/**
 * The answer (HTTP 400) to a 2025-style request whose MCP-Protocol-Version header names a
 * revision the endpoint does not speak, or null. The revision asks a server to refuse it
 * (400); the words and code are the 1.x SDK's, which hosts already know. One rule for
 * every MCP surface: the gateways and the admin endpoint (whose v2 SDK would otherwise take
 * an unknown revision for a modern one and ask for its envelope).
 */
export function unsupportedProtocolVersion(
  header: string | string[] | undefined,
): { jsonrpc: '2.0'; id: null; error: { code: number; message: string } } | null {
  if (header === undefined) return null;
  const version = String(header);
  if (version === MODERN_REVISION || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null;
  // A header line is up to 8 KB: named, not echoed whole.
  const message = `Bad Request: Unsupported protocol version: ${version.slice(0, 64)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`;
  return { jsonrpc: '2.0', id: null, error: { code: -32000, message } };
}
