import { newGuid } from '../ids.js';
import type { Services } from '../services.js';
import { weightedPicker, zipfWeights, type Random } from './seed-distributions.js';

/** One tool of the seed's catalog, with what its calls look like. */
export interface SeedTool {
  name: string;
  /** The inbound server the tool belongs to. */
  serverGuid: string;
  medianMs: number;
  /** Spread of the duration's log-normal: p99 is about e^(2.33 sigma) times the median. */
  sigma: number;
  responseMedianBytes: number;
  errorRate: number;
  /** The container its server runs in, or null (a remote server). */
  containerGuid: string | null;
}

/** A user's connection through one gateway: the user and the gateway imply it, and it implies the host and team. */
export interface SeedConnection {
  guid: string;
  userGuid: string;
  gatewayGuid: string;
  hostGuid: string;
  teamGuid: string;
  sessionId: string;
}

export interface SeedPopulation {
  /** In popularity order: the catalog's ranks. */
  tools: SeedTool[];
  /** In popularity order (the sum of their tools' weights). */
  servers: string[];
  /** Weights of `servers`, for calls that name a server but no tool (tools/list, resources/read). */
  serverWeights: number[];
  /** Per server of `servers`: the container it runs in, or null. */
  serverContainers: (string | null)[];
  toolWeights: number[];
  /** Per user (popularity order): its connections, the main one first. */
  users: SeedConnection[][];
  userWeights: number[];
}

// [name, catalog server, median ms, sigma, median response bytes, error rate], most called first.
// Catalog servers: 0 code host, 1 database, 2 chat, 3 web, 4 issue tracker, 5 documents.
const CATALOG: [string, number, number, number, number, number][] = [
  ['search_issues', 0, 180, 0.8, 6000, 0.01],
  ['query_database', 1, 45, 1, 3000, 0.02],
  ['get_file_contents', 0, 90, 0.7, 9000, 0.015],
  ['fetch_url', 3, 650, 1.1, 20_000, 0.05],
  ['send_message', 2, 250, 0.6, 400, 0.01],
  ['list_commits', 0, 120, 0.7, 5000, 0.01],
  ['search_messages', 2, 300, 0.8, 7000, 0.01],
  ['describe_table', 1, 30, 0.6, 1500, 0.005],
  ['create_issue', 4, 400, 0.7, 800, 0.03],
  ['summarize', 5, 2400, 0.7, 1500, 0.04],
  ['create_pull_request', 0, 900, 0.8, 1200, 0.04],
  ['search_docs', 5, 220, 0.9, 8000, 0.01],
  ['list_channels', 2, 80, 0.5, 2500, 0.005],
  ['search_web', 3, 1200, 0.9, 12_000, 0.03],
  ['list_tables', 1, 25, 0.5, 1000, 0.005],
  ['get_weather', 3, 150, 0.6, 600, 0.02],
  ['echo', 5, 2, 0.5, 100, 0.001],
];
const CATALOG_SERVERS = 6;

type Kind = 'gateways' | 'inbound_servers' | 'users' | 'hosts' | 'teams';

/**
 * Who calls what: the workspace's real gateways, servers, users, hosts, teams and
 * connections where it has them (synthetic ids where it has none), arranged so that
 * a user belongs to one team and works from one host, a user and a gateway imply one
 * connection, and a tool belongs to one server. `minUsers` tops the real users up
 * with synthetic ones (benches want a population for "top users").
 */
export async function seedPopulation(services: Pick<Services, 'db'>, organizationGuid: string, random: Random, minUsers = 0): Promise<SeedPopulation> {
  const db = services.db;
  const real = async (table: Kind, limit: number) =>
    (await db.selectFrom(table).select('guid').where('organization_guid', '=', organizationGuid).orderBy('created_at').limit(limit).execute()).map(
      (r) => r.guid,
    );
  const orSynthetic = (list: string[], n: number) => (list.length ? list : Array.from({ length: n }, () => newGuid()));
  const gateways = orSynthetic(await real('gateways', 200), 4);
  const serverList = orSynthetic(await real('inbound_servers', 200), CATALOG_SERVERS);
  const hosts = orSynthetic(await real('hosts', 200), 5);
  const teams = orSynthetic(await real('teams', 200), 4);
  const realUsers = await real('users', 5000);
  const userCount = Math.max(minUsers, realUsers.length || 12);
  const users = [...realUsers, ...Array.from({ length: userCount - realUsers.length }, () => newGuid())];
  const memberships = new Map(
    realUsers.length
      ? (
          await db
            .selectFrom('team_members')
            .innerJoin('teams', 'teams.guid', 'team_members.team_guid')
            .select(['team_members.user_guid', 'team_members.team_guid'])
            .where('teams.organization_guid', '=', organizationGuid)
            .orderBy('team_members.team_guid')
            .execute()
        )
          .reverse()
          .map((m) => [m.user_guid, m.team_guid] as const)
      : [],
  );
  const realConnections = await db
    .selectFrom('connections')
    .select(['guid', 'gateway_guid', 'host_guid', 'creator_guid'])
    .where('organization_guid', '=', organizationGuid)
    .orderBy('created_at')
    .limit(5000)
    .execute();

  // Half the servers run in containers the service manages, the rest are remote.
  const containerOf = new Map(serverList.map((s, i) => [s, i % 2 === 0 ? newGuid() : null]));
  // Tools in catalog order; catalog server k is the workspace's k-th server (wrapping).
  const toolWeights = zipfWeights(CATALOG.length, 1.2);
  const tools = CATALOG.map(([name, server, medianMs, sigma, responseMedianBytes, errorRate]) => ({
    name,
    serverGuid: serverList[server % serverList.length]!,
    medianMs,
    sigma,
    responseMedianBytes,
    errorRate,
    containerGuid: containerOf.get(serverList[server % serverList.length]!) ?? null,
  }));
  const weightOf = new Map<string, number>(serverList.map((s) => [s, 0]));
  tools.forEach((t, i) => weightOf.set(t.serverGuid, weightOf.get(t.serverGuid)! + toolWeights[i]!));
  const servers = [...weightOf.keys()].sort((a, b) => weightOf.get(b)! - weightOf.get(a)!);
  // Servers no tool maps to still answer a few list and read calls.
  const serverWeights = servers.map((s) => weightOf.get(s)! || 0.02);

  const pickGateway = weightedPicker(zipfWeights(gateways.length, 1), random);
  const pickHost = weightedPicker(zipfWeights(hosts.length, 1.2), random);
  const pickTeam = weightedPicker(zipfWeights(teams.length, 0.7), random);
  const connectionsOf = users.map((userGuid) => {
    const teamGuid = memberships.get(userGuid) ?? teams[pickTeam()]!;
    const own = realConnections.filter((c) => c.creator_guid === userGuid);
    const made = (gatewayGuid: string, hostGuid: string, guid = newGuid()): SeedConnection => ({
      guid,
      userGuid,
      gatewayGuid,
      hostGuid,
      teamGuid,
      sessionId: newGuid(),
    });
    if (own.length) return own.map((c) => made(c.gateway_guid, c.host_guid ?? hosts[0]!, c.guid));
    // A user works through a main gateway, a quarter of users through a second one too.
    const hostGuid = hosts[pickHost()]!;
    const main = gateways[pickGateway()]!;
    const second = gateways[pickGateway()]!;
    return random() < 0.25 && second !== main ? [made(main, hostGuid), made(second, hostGuid)] : [made(main, hostGuid)];
  });
  const serverContainers = servers.map((s) => containerOf.get(s) ?? null);
  return { tools, servers, serverWeights, serverContainers, toolWeights, users: connectionsOf, userWeights: zipfWeights(users.length, 0.9) };
}
