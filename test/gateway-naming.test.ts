import { describe, expect, it } from 'vitest';
import { nameItems, exposeItems, resolveExposedName } from '../src/gateway/aggregate.js';
import type { Catalog, Route } from '../src/gateway/catalog.js';
import type { ToolNamingMode } from '../src/stores/schema.js';
import { uniqueSlugs } from '../src/gateway/namespacing.js';

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

/** The names a host is shown; `remember` false: a list another replica served (this one resolves by the learned lists). */
const listed = (c: Pick<Catalog, 'naming' | 'routes'>, remember = false) =>
  nameItems(
    remember ? c : { ...c, routes: [...c.routes] },
    'tools',
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

describe('when-needed: a plain name equal to a prefixed one', () => {
  // "other" renames its get-sum to what the gateway shows for every's get-tiny-image, which both servers offer.
  const every = route('every', ['get-tiny-image', 'echo']);
  const other = { ...route('other', ['get-tiny-image', 'get-sum']), toolOverrides: { 'get-sum': { name: 'every__get-tiny-image' } } };
  // A gateway in front of a gateway: "nested" offers `beta__shared`, the name beta's shared tool gets here.
  const nested = route('nested', ['beta__shared']);
  const beta = route('beta', ['shared']);
  const alpha = route('alpha', ['shared']);

  it('is prefixed too: no two listed tools share a name, and each resolves to the tool it lists', () => {
    const c = catalog('when-needed', [every, other, nested, beta, alpha]);
    const names = listed(c);
    expect(names.sort()).toEqual(
      [
        'every__get-tiny-image',
        'echo',
        'other__get-tiny-image',
        'other__every__get-tiny-image',
        'nested__beta__shared',
        'beta__shared',
        'alpha__shared',
      ].sort(),
    );
    const resolved = Object.fromEntries(
      names.map((name) => {
        const r = resolveExposedName(c, 'tools', name);
        return [name, 'route' in r ? `${r.route.slug}:${r.name}` : JSON.stringify(r)];
      }),
    );
    expect(resolved).toEqual({
      'every__get-tiny-image': 'every:get-tiny-image',
      echo: 'every:echo',
      'other__get-tiny-image': 'other:get-tiny-image',
      'other__every__get-tiny-image': 'other:get-sum',
      nested__beta__shared: 'nested:beta__shared',
      beta__shared: 'beta:shared',
      alpha__shared: 'alpha:shared',
    });
  });

  it('stays plain while nothing else shows that name', () => {
    const c = catalog('when-needed', [nested, beta]);
    expect(listed(c).sort()).toEqual(['beta__shared', 'shared'].sort());
    expect(resolveExposedName(c, 'tools', 'beta__shared')).toMatchObject({ route: { slug: 'nested' }, name: 'beta__shared' });
  });
});

describe('slugs', () => {
  const a = (serverName: string, guid: string) => ({ serverName, guid });

  it('are the server names, bare where one assignment alone has a slug', () => {
    expect(uniqueSlugs([a('GitHub', '0001'), a('Linear Issues', '0002')])).toEqual(['github', 'linear-issues']);
  });

  it("tell apart servers whose names give one slug by their assignment's guid, so removing one renames no other", () => {
    const three = [
      a('hdr', '019a0000-0000-7000-8000-00000000aaaa'),
      a('HDR', '019a0000-0000-7000-8000-00000000bbbb'),
      a('Hdr!', '019a0000-0000-7000-8000-00000000cccc'),
    ];
    expect(uniqueSlugs(three)).toEqual(['hdr--aaaa', 'hdr--bbbb', 'hdr--cccc']);
    // The first removed: the others keep their slugs (the old "hdr-2" became "hdr", and its callers reached another server).
    expect(uniqueSlugs(three.slice(1))).toEqual(['hdr--bbbb', 'hdr--cccc']);
    // One left: its names become bare, and the suffixed ones stop resolving rather than reach another server.
    expect(uniqueSlugs(three.slice(2))).toEqual(['hdr']);
  });

  it("never equal another server's bare slug, whatever names come and go", () => {
    // A server named "hdr aaaa" is hdr-aaaa, never hdr--aaaa: adding it moves no name of the suffixed one.
    const two = [a('hdr', '0000aaaa'), a('hdr', '1111bbbb')];
    expect(uniqueSlugs([...two, a('hdr aaaa', '0001')])).toEqual(['hdr--aaaa', 'hdr--bbbb', 'hdr-aaaa']);
    expect(uniqueSlugs(two)).toEqual(['hdr--aaaa', 'hdr--bbbb']);
    // Two guids ending alike: the suffix grows until they differ.
    expect(uniqueSlugs([a('hdr', '0000aaaa'), a('hdr', '1111aaaa')])).toEqual(['hdr--0aaaa', 'hdr--1aaaa']);
  });
});

describe('names resolved by the list the host was shown', () => {
  // Found by a protocol trial (session 26): "dup" learned [echo, gamma] at validation and offers x since; the live list
  // prefixes x for dup and beta, so beta's x is shown as beta__x, which the learned lists gave to nested's own beta__x.
  const nested = route('nested', ['echo', 'beta__x']);
  const dup = route('dup', ['echo', 'gamma']);
  const beta = route('beta', ['echo', 'x']);
  const live = (r: Route, tools: string[]) =>
    exposeItems(
      r,
      'tools',
      tools.map((name) => ({ name, inputSchema: { type: 'object' } })),
    );

  it('resolves each listed name to the tool it was listed for, even where the learned lists are older', () => {
    const c = catalog('when-needed', [nested, dup, beta]);
    const shown = nameItems(c, 'tools', [live(nested, ['echo', 'beta__x']), live(dup, ['echo', 'gamma', 'x']), live(beta, ['echo', 'x'])]).map(
      (t) => t.name as string,
    );
    expect(shown.sort()).toEqual(['nested__echo', 'nested__beta__x', 'dup__echo', 'gamma', 'dup__x', 'beta__echo', 'beta__x'].sort());
    const resolved = Object.fromEntries(
      shown.map((name) => {
        const r = resolveExposedName(c, 'tools', name);
        return [name, 'route' in r ? `${r.route.slug}:${r.name}` : JSON.stringify(r)];
      }),
    );
    expect(resolved).toMatchObject({ beta__x: 'beta:x', nested__beta__x: 'nested:beta__x', dup__x: 'dup:x', gamma: 'dup:gamma' });
  });
});
