import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';

/**
 * Whether a POSTed message is of revision 2026-07-28: it carries the per-request
 * envelope or the revision's header. One rule for both MCP surfaces (the admin
 * endpoint and the gateways), which must agree on which revision's rules a request
 * is answered by.
 */
export function isModernMessage(body: unknown, protocolHeader: string | string[] | undefined): boolean {
  const meta = (body as { params?: { _meta?: unknown } } | null)?.params?._meta;
  // `_meta` of any other type (0, "x") is the host's mistake, not an envelope: the request is served as a 2025 one.
  return (typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META_KEY in meta) || protocolHeader === '2026-07-28';
}
