import type { ToolFilter, ToolNamingMode, ToolOverrides } from '../../stores/schema.js';

/**
 * The rules of tool curation (contract 8.2), defined once: the admin operations
 * check and describe assignments with them, the gateway applies them to every list
 * and call. A filter and the overrides name the upstream's own tool names.
 */
export const TOOL_NAMING_MODES = ['prefixed', 'when-needed'] as const satisfies readonly ToolNamingMode[];

/** MCP's tool-name alphabet (2025-11-25: 1-128 of A-Z a-z 0-9 _ - .): what an override may name a tool for hosts. */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The longest upstream tool name a filter or an override may mention. Upstreams are
 * held to MCP's alphabet only by a SHOULD, and a tool whose name hosts would refuse
 * (a space, a slash, 130 characters) is the one most in need of a filter or a new name.
 */
export const MAX_UPSTREAM_TOOL_NAME = 1024;

const globCache = new Map<string, RegExp>();

/** A name or `*` glob as a matcher of whole names. */
function globRegExp(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (!re) {
    re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\-]/g, '\\$&').replaceAll('*', '.*')}$`);
    if (globCache.size > 10_000) globCache.clear();
    globCache.set(pattern, re);
  }
  return re;
}

/** Whether a filter lets the upstream tool `name` through (no filter: every tool). */
export function toolAllowed(filter: ToolFilter | null | undefined, name: string): boolean {
  if (!filter) return true;
  const matched = filter.tools.some((p) => globRegExp(p).test(name));
  return filter.mode === 'allow' ? matched : !matched;
}

/** A curated tool of one assignment: what the host sees, and what the upstream calls it. */
export interface CuratedTool<T> {
  upstreamName: string;
  /** The name after the override, before the gateway's naming mode. */
  name: string;
  item: T;
}

/**
 * An upstream's tool list as one assignment exposes it: filtered, renamed and
 * re-described. Items keep every other field as the upstream gave them.
 */
export function curateTools<T extends { name?: unknown; description?: unknown }>(
  filter: ToolFilter | null | undefined,
  overrides: ToolOverrides | null | undefined,
  tools: readonly T[],
): CuratedTool<T>[] {
  const out: CuratedTool<T>[] = [];
  for (const tool of tools) {
    if (typeof tool.name !== 'string' || !toolAllowed(filter, tool.name)) continue;
    const override = overrides?.[tool.name];
    const name = override?.name ?? tool.name;
    const item = override ? { ...tool, name, ...(override.description !== undefined ? { description: override.description } : {}) } : tool;
    out.push({ upstreamName: tool.name, name, item });
  }
  return out;
}

/** Names a filter or the overrides mention that the server does not offer today (they are kept: servers change). */
export function unknownToolNames(filter: ToolFilter | null | undefined, overrides: ToolOverrides | null | undefined, offered: readonly string[]): string[] {
  const unknown = new Set<string>();
  for (const pattern of filter?.tools ?? []) if (!offered.some((n) => globRegExp(pattern).test(n))) unknown.add(pattern);
  for (const name of Object.keys(overrides ?? {})) if (!offered.includes(name)) unknown.add(name);
  return [...unknown];
}

/** A tool as one assignment shows it to hosts, before the gateway's naming mode. */
export interface ShownTool {
  upstreamName: string;
  name: string;
  /** An override gave the tool this name: such a name must be the gateway's alone. */
  renamed: boolean;
}

/**
 * The tools one assignment shows hosts: the offered tools its filter lets through,
 * under their overridden names, plus the renamed tools the server does not offer
 * today (their new names are reserved: they apply once it does).
 */
export function shownTools(filter: ToolFilter | null | undefined, overrides: ToolOverrides | null | undefined, offered: readonly string[]): ShownTool[] {
  const known = new Set(offered);
  const renamedLater = Object.keys(overrides ?? {}).filter((n) => overrides?.[n]?.name !== undefined && !known.has(n));
  return curateTools(
    filter,
    overrides,
    [...offered, ...renamedLater].map((name) => ({ name })),
  ).map(({ upstreamName, name }) => ({ upstreamName, name, renamed: overrides?.[upstreamName]?.name !== undefined }));
}

/**
 * The first pair of tools, one of `own` and one of `other` (another assignment of
 * the gateway, or `own` itself), that would show hosts the same name where an
 * override gave at least one of them that name: a 409 (contract 8.2), whichever was
 * saved first. Two servers' own names that coincide are not a collision: the naming
 * mode tells them apart. The check ignores the naming mode (which can change), so a
 * mode change never creates such a collision.
 */
export function overrideCollision(own: readonly ShownTool[], other: readonly ShownTool[], sameAssignment: boolean): [ShownTool, ShownTool] | null {
  const byName = new Map<string, ShownTool[]>();
  for (const tool of other) byName.set(tool.name, [...(byName.get(tool.name) ?? []), tool]);
  // An override of `own` is reported first: it is what the caller is most likely changing.
  for (const pass of [true, false]) {
    for (const mine of own) {
      if (mine.renamed !== pass) continue;
      const clash = byName.get(mine.name)?.find((t) => (mine.renamed || t.renamed) && !(sameAssignment && t.upstreamName === mine.upstreamName));
      if (clash) return [mine, clash];
    }
  }
  return null;
}
