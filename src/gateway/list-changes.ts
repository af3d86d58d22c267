import type { ServerEvent, SubscriptionFilter } from '@modelcontextprotocol/server';

/**
 * The three list changes an MCP server announces, as each surface names them: the
 * 2025 notification, the SDK's listen event, and the 2026-07-28 listen filter flag
 * that asks for it. The gateway's own changes (listen-changes.ts, event-stream.ts)
 * and the upstreams' (listen-upstreams.ts) are read from here.
 */
export const LIST_CHANGES = [
  { list: 'tools', method: 'notifications/tools/list_changed', event: { kind: 'tools_list_changed' }, flag: 'toolsListChanged' },
  { list: 'prompts', method: 'notifications/prompts/list_changed', event: { kind: 'prompts_list_changed' }, flag: 'promptsListChanged' },
  { list: 'resources', method: 'notifications/resources/list_changed', event: { kind: 'resources_list_changed' }, flag: 'resourcesListChanged' },
] as const satisfies readonly { list: string; method: string; event: ServerEvent; flag: keyof SubscriptionFilter }[];

export type ListKind = (typeof LIST_CHANGES)[number]['list'];
type ListChange = (typeof LIST_CHANGES)[number];

/** A list change by its 2025 notification method; undefined for any other method. */
export const listChangeOf = (method: string | undefined): ListChange | undefined => LIST_CHANGES.find((c) => c.method === method);
