import { describe, expect, it } from 'vitest';
import { nameItems, exposeItems, resolveExposedName } from '../src/gateway/aggregate.js';
import type { Catalog, Route } from '../src/gateway/catalog.js';
import type { ToolNamingMode } from '../src/stores/schema.js';

/**
 * Name resolution on the routes' learned lists, without a network: what a host sees in
 * tools/list must be what tools/call resolves, in both naming modes, including an
 * upstream whose own names look prefixed (a gateway in front of a gateway).
 */
function route(slug: string, tools: string[]): Route {
  return {
    slug,
    assignmentGuid: `a-${slug}`,
    serverGuid: `s-${slug}`,
    serverName: slug,
    url: `http://127.0.0.1/${slug}`,
    transport: 'streamable-http',
    authenticationType: 'none',
    identityScheme: null,
    identity: null,
    features: {
      transport: 'streamable-http',
      protocolVersion: '2025-11-25',
      serverInfo: null,
      capabilities: { tools: {} },
      instructions: null,
      tools: tools.map((name) => ({ name, inputSchema: { type: 'object' } })),
      prompts: [],
      resources: [],
      resourceTemplates: [],
    },
    toolFilter: null,
    toolOverrides: null,
  };
}

function catalog(naming: ToolNamingMode, routes: Route[]): Pick<Catalog, 'naming' | 'routes' | 'bySlug'> {
  return { naming, routes, bySlug: new Map(routes.map((r) => [r.slug, r])) };
}

const listed = (c: Pick<Catalog, 'naming' | 'routes'>) =>
  nameItems(
    c.naming,
    c.routes.map((r) => exposeItems(r, 'tools', r.features!.tools)),
  ).map((t) => t.name as string);

describe('tool name resolution', () => {
  // "nested" fronts another gateway whose tools are already prefixed with "beta__".
  const routes = [route('nested', ['beta__echo', 'shared']), route('beta', ['echo', 'shared'])];

  it.each(['prefixed', 'when-needed'] as const)('every name %s lists resolves to the route and upstream name it came from', (mode) => {
    const c = catalog(mode, routes);
    const names = listed(c);
    expect(new Set(names).size).toBe(names.length);
    const resolved = names.map((name) => {
      const r = resolveExposedName(c, 'tools', name);
      return 'route' in r ? `${r.route.slug}:${r.name}` : JSON.stringify(r);
    });
    expect(resolved.sort()).toEqual(['beta:echo', 'beta:shared', 'nested:beta__echo', 'nested:shared'].sort());
  });

  it('when-needed shows an upstream name that looks prefixed as it is, and routes it to its own server', () => {
    const c = catalog('when-needed', routes);
    expect(listed(c)).toEqual(['beta__echo', 'nested__shared', 'echo', 'beta__shared']);
    expect(resolveExposedName(c, 'tools', 'beta__echo')).toMatchObject({ route: { slug: 'nested' }, name: 'beta__echo' });
    expect(resolveExposedName(c, 'tools', 'echo')).toMatchObject({ route: { slug: 'beta' }, name: 'echo' });
    expect(resolveExposedName(c, 'tools', 'shared')).toEqual({ refused: expect.stringContaining('several servers') });
  });
});
