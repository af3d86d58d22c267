import { curateTools, toolAllowed, type CuratedTool } from '../core/gateways/tool-curation.js';
import type { ToolNamingMode } from '../stores/schema.js';
import type { Catalog, Route } from './catalog.js';
import { qualify, splitQualified, wasRewritten } from './namespacing.js';

/**
 * The gateway's lists are unions over its routes, each item named by the gateway's
 * naming mode (`<slug>__<name>` or the upstream's name) after the assignment's tool
 * curation. Resource URIs stay as the upstream gave them (hosts and models use them
 * as addresses); reads are routed by looking them up.
 */
export type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';

export const LIST_KEY: Record<ListMethod, 'tools' | 'prompts' | 'resources' | 'resourceTemplates'> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

/** A list is read from each upstream in at most this many pages. */
export const MAX_LIST_PAGES = 20;

/** Which upstream capability a list needs; an upstream without it is not asked. */
export const LIST_CAPABILITY: Record<ListMethod, string> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resources',
};

/** A route's list as hosts see it before the naming mode: tools curated by the assignment, other lists as given. */
export interface ExposedItems {
  route: Route;
  items: CuratedTool<Record<string, unknown>>[];
}

export function exposeItems(route: Route, key: (typeof LIST_KEY)[ListMethod], items: Record<string, unknown>[]): ExposedItems {
  if (key === 'tools') return { route, items: curateTools(route.toolFilter, route.toolOverrides, items) };
  return { route, items: items.map((item) => ({ upstreamName: String(item.name ?? ''), name: String(item.name ?? ''), item })) };
}

/**
 * The gateway's list: every route's exposed items, named by the gateway's mode
 * (contract 8.2, `prefixedNames`). Items without a name (none in MCP's named lists)
 * pass as they are. What a tools or prompts list named is remembered for the catalog
 * (`servedName`): a call resolves a name by the list the host was shown.
 */
export function nameItems(
  catalog: Pick<Catalog, 'naming' | 'routes'>,
  key: (typeof LIST_KEY)[ListMethod],
  perRoute: readonly ExposedItems[],
): Record<string, unknown>[] {
  const prefixed = prefixedNames(
    catalog.naming,
    perRoute.map((r) => ({ slug: r.route.slug, names: r.items.map((i) => i.name) })),
  );
  const served = new Map<string, { route: Route; name: string }>();
  const items = perRoute.flatMap(({ route, items }) =>
    items.map(({ name, upstreamName, item }) => {
      if (typeof item.name !== 'string') return item;
      const shown = prefixed(name) ? qualify(route.slug, name) : name;
      served.set(shown, { route, name: upstreamName });
      return { ...item, name: shown };
    }),
  );
  if (key === 'tools' || key === 'prompts') {
    let ofRoutes = servedByRoutes.get(catalog.routes);
    if (!ofRoutes) servedByRoutes.set(catalog.routes, (ofRoutes = {}));
    ofRoutes[key] = served;
  }
  return items;
}

/**
 * The names the last tools and prompts lists of a catalog showed, each with its route
 * and upstream name. The lists are read live from the upstreams, while the learned
 * lists (feature-learning at validation) may be older: a name the host was shown is
 * resolved by what it was shown (a server that added a tool since validation must
 * not send a listed name to another server). Kept as long as the catalog (its
 * routes) is; another replica, or a host that never listed, resolves by the learned
 * lists.
 */
const servedByRoutes = new WeakMap<readonly Route[], Partial<Record<'tools' | 'prompts', Map<string, { route: Route; name: string }>>>>();

/**
 * The names the gateway shows as `<slug>__<name>`. Under `prefixed`, every name.
 * Under `when-needed`, the names two or more routes share (all of their holders), and
 * then any name a route shows plain that equals a prefixed name the gateway shows (an
 * override, or an upstream's own name shaped `<slug>__<name>`), until none does: no
 * two items of a list share a name, and each name resolves to one tool.
 */
export function prefixedNames(naming: ToolNamingMode, perRoute: readonly { slug: string; names: readonly string[] }[]): (name: string) => boolean {
  if (naming === 'prefixed') return () => true;
  const holders = new Map<string, number>();
  for (const { names } of perRoute) for (const name of new Set(names)) holders.set(name, (holders.get(name) ?? 0) + 1);
  const prefixed = new Set([...holders].filter(([, count]) => count > 1).map(([name]) => name));
  for (let added = prefixed; added.size > 0;) {
    const shown = new Set<string>();
    for (const { slug, names } of perRoute) for (const name of names) if (added.has(name)) shown.add(qualify(slug, name));
    added = new Set([...shown].filter((name) => holders.has(name) && !prefixed.has(name)));
    for (const name of added) prefixed.add(name);
  }
  return (name) => prefixed.has(name);
}

/**
 * The gateway's instructions to a host: what each server says of itself, under its
 * slug, after a line on how the gateway names things (the naming mode's rule). Null
 * when no server says anything. The same for a 2025 host's initialize and a
 * 2026-07-28 host's server/discover.
 */
export function gatewayInstructions(naming: ToolNamingMode, texts: readonly { slug: string; text: string | null | undefined }[]): string | null {
  const parts = texts.filter((t) => typeof t.text === 'string' && t.text !== '').map((t) => `## ${t.slug}\n${t.text}`);
  if (parts.length === 0) return null;
  const names =
    naming === 'prefixed'
      ? 'Tools, prompts and resources of several servers, each named <server>__<name>.'
      : 'Tools, prompts and resources of several servers, named as each server names them, or <server>__<name> where two servers share a name.';
  return `${names}\n\n${parts.join('\n\n')}`;
}

/**
 * What an exposed name names: a route and the upstream's own name; a refusal in words
 * (with the route and upstream name when the refusal is that route's curation, for the
 * call log); or no route (`slug`: the prefix it had, if any).
 */
export type Resolution = { route: Route; name: string } | { refused: string; of?: { route: Route; name: string } } | { slug: string | null };

/** A route's learned tools or prompts as its hosts see them (curated), and the same by name (the first of a name). */
interface KnownItems {
  items: CuratedTool<Record<string, unknown>>[];
  byName: Map<string, CuratedTool<Record<string, unknown>>>;
}

/**
 * Each route's KnownItems, made at the first call that resolves a name against it. A
 * catalog's routes are never changed once built (a change of configuration or of the
 * learned features builds a new catalog), so they are kept as long as the route is: a
 * call finds its name by a lookup, whatever the size of the gateway's lists.
 */
const knownByRoute = new WeakMap<Route, Partial<Record<'tools' | 'prompts', KnownItems>>>();

function knownItems(route: Route, key: 'tools' | 'prompts'): KnownItems {
  let ofRoute = knownByRoute.get(route);
  if (!ofRoute) knownByRoute.set(route, (ofRoute = {}));
  let known = ofRoute[key];
  if (!known) {
    const items = exposeItems(route, key, (route.features?.[key] ?? []) as Record<string, unknown>[]).items;
    const byName = new Map<string, CuratedTool<Record<string, unknown>>>();
    for (const item of items) if (!byName.has(item.name)) byName.set(item.name, item);
    known = ofRoute[key] = { items, byName };
  }
  return known;
}

/**
 * Resolves a host's tool or prompt name to its route and the upstream's own name,
 * by the routes' lists as feature-learning found them. A prefixed name is always
 * understood; a plain one under when-needed. A filtered-out tool, an overridden
 * tool's old name and a name several routes share (without its prefix) resolve to
 * nothing, like an unknown name; `refused` says why for the call log.
 */
export function resolveExposedName(catalog: Pick<Catalog, 'naming' | 'routes' | 'bySlug'>, key: 'tools' | 'prompts', hostName: string): Resolution {
  const served = servedByRoutes.get(catalog.routes)?.[key]?.get(hostName);
  if (served) return { route: served.route, name: served.name };
  // Under when-needed a name one server shows plain is that server's, even when it looks prefixed (an upstream's
  // own `other__tool`, as a gateway in front of a gateway has): the list the host saw decides, not the name's shape.
  const holders = catalog.naming === 'when-needed' ? catalog.routes.filter((route) => knownItems(route, key).byName.has(hostName)) : [];
  if (holders.length === 1 && !learnedPrefixed(catalog, key)(hostName)) return upstreamNameOf(holders[0]!, key, hostName, knownItems(holders[0]!, key));
  const split = splitQualified(hostName);
  const prefixedRoute = split ? catalog.bySlug.get(split.slug) : undefined;
  if (split && prefixedRoute) {
    const known = knownItems(prefixedRoute, key);
    const name = wasRewritten(hostName) ? rewrittenName(prefixedRoute, key, hostName, known) : split.name;
    if (name === null) return { slug: split.slug };
    return upstreamNameOf(prefixedRoute, key, name, known);
  }
  if (catalog.naming === 'when-needed') {
    if (holders.length > 1) return { refused: `${hostName} is offered by several servers of this gateway: call it by its prefixed name` };
    // Not in any list learned at validation: a single server with such lists is asked anyway (it may have added the name since).
    const offering = catalog.routes.filter((r) => !r.features || r.features.capabilities[key] !== undefined);
    if (offering.length === 1) return upstreamNameOf(offering[0]!, key, hostName, knownItems(offering[0]!, key));
  }
  return { slug: split?.slug ?? null };
}

/**
 * The name a rewritten `<slug>__<name>` (cut, or made of MCP's tool-name alphabet) was made
 * from: a name the route shows, else one of the server's own names (a filtered-out or
 * renamed tool, refused with its reason by `upstreamNameOf`), else the name as written when
 * it was never rewritten (an upstream's own `build-0badcafe`). Null when it names nothing:
 * a rewritten name cannot be asked of the upstream, which never had it.
 */
function rewrittenName(route: Route, key: 'tools' | 'prompts', hostName: string, known: KnownItems): string | null {
  const shown = known.items.find((i) => qualify(route.slug, i.name) === hostName);
  if (shown) return shown.name;
  const own = (route.features?.[key] ?? []).find((i) => typeof i.name === 'string' && qualify(route.slug, i.name) === hostName);
  if (own) return own.name as string;
  const written = splitQualified(hostName)!.name;
  return qualify(route.slug, written) === hostName ? written : null;
}

const prefixedByRoutes = new WeakMap<readonly Route[], Partial<Record<'tools' | 'prompts', (name: string) => boolean>>>();

/** `prefixedNames` over the routes' learned lists, made once per catalog (its routes never change). */
function learnedPrefixed(catalog: Pick<Catalog, 'naming' | 'routes'>, key: 'tools' | 'prompts'): (name: string) => boolean {
  let ofRoutes = prefixedByRoutes.get(catalog.routes);
  if (!ofRoutes) prefixedByRoutes.set(catalog.routes, (ofRoutes = {}));
  return (ofRoutes[key] ??= prefixedNames(
    catalog.naming,
    catalog.routes.map((route) => ({ slug: route.slug, names: knownItems(route, key).items.map((i) => i.name) })),
  ));
}

/** The upstream's own name of an exposed name on one route: overrides resolve back, filtered tools are refused. */
function upstreamNameOf(route: Route, key: 'tools' | 'prompts', name: string, known: KnownItems): Resolution {
  const listed = known.byName.get(name);
  if (listed) return { route, name: listed.upstreamName };
  if (key !== 'tools') return { route, name };
  // Not in the list learned at validation: the overrides and the filter still decide.
  const renamedTo = Object.entries(route.toolOverrides ?? {}).find(([, o]) => o.name === name)?.[0];
  const upstreamName = renamedTo ?? name;
  if (!renamedTo && route.toolOverrides?.[name]?.name !== undefined)
    return { refused: `tool ${name} of ${route.serverName} is offered under another name`, of: { route, name } };
  if (!toolAllowed(route.toolFilter, upstreamName))
    return { refused: `the tool filter of ${route.serverName} on this gateway excludes ${upstreamName}`, of: { route, name: upstreamName } };
  return { route, name: upstreamName };
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
