import { ProtocolErrorCode } from '@modelcontextprotocol/server';

/**
 * A JSON-RPC answer for a tools/call whose params the SDK's own schema would refuse
 * with a dump of its issues: the same -32602, in words (contract: bad input is named).
 * Null when the message is not such a call. One rule for every MCP surface: the
 * admin endpoint and the gateways (which must not forward such a call upstream).
 */
export function malformedToolCall(message: unknown): { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string } } | null {
  const m = message as { method?: unknown; id?: unknown; params?: unknown } | null;
  if (!m || typeof m !== 'object' || m.method !== 'tools/call' || m.id === undefined) return null;
  const p = (m.params ?? {}) as { name?: unknown; arguments?: unknown };
  const refuse = (text: string) => ({ jsonrpc: '2.0' as const, id: m.id, error: { code: ProtocolErrorCode.InvalidParams, message: text } });
  if (typeof p.name !== 'string' || p.name === '') return refuse('tools/call needs params.name: the name of a tool from tools/list.');
  if (p.arguments !== undefined && (p.arguments === null || typeof p.arguments !== 'object' || Array.isArray(p.arguments))) {
    const got = Array.isArray(p.arguments) ? 'an array' : p.arguments === null ? 'null' : `a ${typeof p.arguments}`;
    return refuse(`tools/call params.arguments must be an object of the tool's parameters, not ${got}.`);
  }
  return null;
}
