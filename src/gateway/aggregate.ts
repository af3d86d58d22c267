import type { Route } from './catalog.js';
import { qualify, splitQualified, wasCut } from './namespacing.js';

/**
 * The gateway's lists are unions over its routes, each item's name namespaced
 * `<slug>__<name>`. Resource URIs stay as the upstream gave them (hosts and
 * models use them as addresses); reads are routed by looking them up.
 */
export type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';

export const LIST_KEY: Record<ListMethod, 'tools' | 'prompts' | 'resources' | 'resourceTemplates'> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

/** Which upstream capability a list needs; an upstream without it is not asked. */
export const LIST_CAPABILITY: Record<ListMethod, string> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
};

export function namespaceItems(route: Route, items: Record<string, unknown>[]): Record<string, unknown>[] {
  return items.map((item) => (typeof item.name === 'string' ? { ...item, name: qualify(route.slug, item.name) } : item));
}

/**
 * Resolves a namespaced name to its route and the upstream's own name. A cut name
 * is resolved against `knownNames` (the upstream's names, from its list).
 */
export function resolveName(
  bySlug: ReadonlyMap<string, Route>,
  qualified: string,
  knownNames?: (route: Route) => readonly string[],
): { route: Route; name: string } | { slug: string | null } {
  const split = splitQualified(qualified);
  if (!split) return { slug: null };
  const route = bySlug.get(split.slug);
  if (!route) return { slug: split.slug };
  if (!wasCut(qualified) || !knownNames) return { route, name: split.name };
  const original = knownNames(route).find((n) => qualify(route.slug, n) === qualified);
  return { route, name: original ?? split.name };
}

/** A URI template (RFC 6570, simple expressions) as a regular expression that matches its URIs. */
export function templateMatcher(template: string): RegExp {
  const parts = template.split(/(\{[^}]*\})/);
  const source = parts
    .map((p) => (p.startsWith('{') ? (p.startsWith('{+') || p.startsWith('{/') ? '.*' : '[^/]*') : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * The route that serves a resource URI: an upstream that listed the exact URI,
 * else one whose template matches it, else the only route that offers resources.
 */
export function routeForUri(routes: readonly Route[], uri: string): Route | null {
  const withResources = routes.filter((r) => !r.features || r.features.capabilities.resources !== undefined);
  for (const route of withResources) if (route.features?.resources.some((res) => res.uri === uri)) return route;
  for (const route of withResources) {
    if (route.features?.resourceTemplates.some((t) => typeof t.uriTemplate === 'string' && templateMatcher(t.uriTemplate).test(uri))) return route;
  }
  return withResources.length === 1 ? withResources[0]! : null;
}
