import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createOAuthMetadata, mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { AuthRouterOptions } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { z } from 'zod';
import { freePort } from './ports.js';

/**
 * Real MCP peers for tests, all on 127.0.0.1: the reference server-everything (child
 * process, Streamable HTTP or SSE), a small SDK server that demands a header, and an
 * SDK server protected by a local OAuth authorization server.
 */
const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

export interface Upstream {
  url: string;
  /** The upstream's own process, when it runs in one (bench:gateway reads its CPU time). */
  pid?: number | undefined;
  close(): Promise<void>;
}

/** server-everything in `mode`, forced onto loopback, with a minimal environment (its get-env tool prints it). */
export async function startEverything(mode: 'streamableHttp' | 'sse'): Promise<Upstream> {
  const port = await freePort();
  const bin = path.resolve(here, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  const child: ChildProcess = spawn(process.execPath, ['-r', path.join(here, 'loopback-preload.cjs'), bin, mode], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${output}`)), 30_000);
    child.stderr!.on('data', (d: Buffer) => {
      output += d.toString();
      if (/listening on port|running on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited with ${code}: ${output}`));
    });
  });
  child.stderr!.resume();
  return {
    url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`,
    pid: child.pid,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A tiny MCP server with one tool, `whoami`, which says which caller it saw. */
export function buildToolServer(label: string): McpServer {
  const server = new McpServer({ name: `test-${label}`, version: '1.0.0' });
  server.registerTool('whoami', { description: 'Says which upstream answered', inputSchema: { note: z.string().optional() } }, async () => ({
    content: [{ type: 'text', text: label }],
  }));
  server.registerPrompt('greet', { description: 'A greeting' }, () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }));
  return server;
}

export async function serveStateless(server: McpServer, req: http.IncomingMessage, res: http.ServerResponse, body?: unknown): Promise<void> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

export async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

export const closeServer = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

export interface HeaderUpstream extends Upstream {
  /** Header names each request carried, lower-case, in arrival order. */
  seenHeaderNames: string[][];
}

/** An SDK MCP server that answers 401 unless `headerName: headerValue` is sent. */
export async function startHeaderServer(headerName: string, headerValue: string): Promise<HeaderUpstream> {
  const seenHeaderNames: string[][] = [];
  const httpServer = http.createServer((req, res) => {
    seenHeaderNames.push(Object.keys(req.headers));
    if (req.headers[headerName.toLowerCase()] !== headerValue) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'missing or wrong credential' }));
      return;
    }
    serveStateless(buildToolServer('header-server'), req, res).catch(() => res.destroy());
  });
  const port = await listen(httpServer);
  return { url: `http://127.0.0.1:${port}/mcp`, seenHeaderNames, close: () => closeServer(httpServer) };
}

/**
 * An open MCP server (no credential) whose tools share names with any other such
 * server (whoami, search_docs, search_code, prompt greet) plus one of its own,
 * `<label>_only`; every tool answers `<label>:<tool as the upstream knows it>`.
 */
export async function startToolServer(label: string): Promise<Upstream> {
  const build = () => {
    const server = new McpServer({ name: `tools-${label}`, version: '1.0.0' });
    for (const name of ['whoami', 'search_docs', 'search_code', `${label}_only`]) {
      server.registerTool(name, { description: `${name} of ${label}`, inputSchema: { note: z.string().optional() } }, async () => ({
        content: [{ type: 'text', text: `${label}:${name}` }],
      }));
    }
    server.registerPrompt('greet', { description: `greet of ${label}` }, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: `hello from ${label}` } }],
    }));
    return server;
  };
  const httpServer = http.createServer((req, res) => {
    serveStateless(build(), req, res).catch(() => res.destroy());
  });
  const port = await listen(httpServer);
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => closeServer(httpServer) };
}

/**
 * A 2025 server (1.x SDK, stateless) in front of which the HTTP layer refuses a call of
 * its `picky` tool as malformed: HTTP 400 with a JSON-RPC error, as a stricter server
 * refuses params it cannot take. Its other tools answer.
 */
export async function startPickyServer(): Promise<Upstream> {
  const httpServer = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown; method?: string; params?: { name?: string } }) : undefined;
    if (body?.method === 'tools/call' && body.params?.name === 'picky') {
      res.writeHead(400, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id ?? null, error: { code: -32602, message: 'picky refuses these params' } }));
    }
    const server = buildToolServer('picky');
    server.registerTool('picky', { description: 'Refused by the HTTP layer' }, async () => ({ content: [{ type: 'text', text: 'never' }] }));
    serveStateless(server, req, res, body).catch(() => res.destroy());
  });
  const port = await listen(httpServer);
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => closeServer(httpServer) };
}

/** A server that accepts connections and never answers: for validation timeouts. */
export async function startSilentServer(): Promise<Upstream> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The SDK's demo provider (auto-approves, no browser) with what tests need on top:
 * refresh tokens, short-lived access tokens on demand, InvalidTokenError for bad
 * tokens (the demo answers 500), and counters.
 */
export class RefreshingAuthProvider extends DemoInMemoryAuthProvider {
  accessTtlSeconds = 3600;
  refreshCount = 0;
  /** RFC 9207: what the authorization response carries as `iss` (set by startOAuthServer's modes). */
  issInResponse: () => string | undefined = () => undefined;
  readonly refreshTokens = new Map<string, string>(); // refresh token -> client id
  private readonly accessTokens = new Map<string, { clientId: string; expiresAt: number; resource?: URL }>();

  private mint(clientId: string, resource?: URL): OAuthTokens {
    const accessToken = `at-${randomUUID()}`;
    const refreshToken = `rt-${randomUUID()}`;
    this.accessTokens.set(accessToken, { clientId, expiresAt: Date.now() + this.accessTtlSeconds * 1000, resource });
    this.refreshTokens.set(refreshToken, clientId);
    return { access_token: accessToken, token_type: 'bearer', expires_in: this.accessTtlSeconds, refresh_token: refreshToken };
  }

  override async authorize(client: OAuthClientInformationFull, params: Parameters<DemoInMemoryAuthProvider['authorize']>[1], res: any): Promise<void> {
    // The demo redirects with code and state only; RFC 9207 adds the issuer.
    const redirect = res.redirect.bind(res);
    res.redirect = (location: string) => {
      const iss = this.issInResponse();
      if (iss === undefined) return redirect(location);
      const url = new URL(location);
      url.searchParams.set('iss', iss);
      return redirect(url.href);
    };
    return super.authorize(client, params, res);
  }

  override async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    await super.exchangeAuthorizationCode(client, code, verifier);
    void redirectUri;
    return this.mint(client.client_id, resource);
  }

  override async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, _scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    if (this.refreshTokens.get(refreshToken) !== client.client_id) throw new InvalidGrantError('unknown refresh token');
    this.refreshTokens.delete(refreshToken);
    this.refreshCount += 1;
    return this.mint(client.client_id, resource);
  }

  override async verifyAccessToken(token: string): Promise<AuthInfo> {
    const data = this.accessTokens.get(token);
    if (!data || data.expiresAt < Date.now()) throw new InvalidTokenError('invalid or expired token');
    return { token, clientId: data.clientId, scopes: [], expiresAt: Math.floor(data.expiresAt / 1000), ...(data.resource ? { resource: data.resource } : {}) };
  }

  /** Ends every access token now, as an authorization server revoking them before their time. */
  revokeAccessTokens(): void {
    this.accessTokens.clear();
  }

  /** Registers a public client for `redirectUri`, as an administrator registering the service by hand would. */
  async registerPublicClient(redirectUri: string): Promise<string> {
    const clientId = `client-${randomUUID()}`;
    await this.clientsStore.registerClient({
      client_id: clientId,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
    } as OAuthClientInformationFull);
    return clientId;
  }

  /** Registers a public client and issues it tokens directly, as a headless setup would have them. */
  async issueDirect(ttlSeconds: number): Promise<{ clientId: string; tokens: OAuthTokens }> {
    const clientId = `client-${randomUUID()}`;
    await this.clientsStore.registerClient({
      client_id: clientId,
      redirect_uris: ['http://127.0.0.1/unused'],
      token_endpoint_auth_method: 'none',
    } as OAuthClientInformationFull);
    const previous = this.accessTtlSeconds;
    this.accessTtlSeconds = ttlSeconds;
    const tokens = this.mint(clientId);
    this.accessTtlSeconds = previous;
    return { clientId, tokens };
  }
}

/** What the authorization server of startOAuthServer supports; changeable while it runs. */
export interface OAuthServerModes {
  /** Advertises client_id_metadata_document_supported and takes an http(s) URL as a client_id, fetching the document it names. */
  clientIdMetadataDocuments: boolean;
  /** Advertises and serves dynamic client registration (RFC 7591). */
  registration: boolean;
  /** Advertises authorization_response_iss_parameter_supported (RFC 9207). */
  issParameterSupported: boolean;
  /** The `iss` of its authorization responses: its issuer, none, or another one. */
  issInResponse: 'issuer' | 'absent' | 'wrong';
  /** The authorization servers its protected-resource metadata names; its own when unset. */
  authorizationServers?: string[];
}

/** An issuer that is not the server's, as a mix-up attacker would send. */
export const FOREIGN_ISSUER = 'https://attacker.example/';

export interface OAuthUpstream extends Upstream {
  /** The origin of its authorization server. */
  issuer: string;
  /** Its issuer identifier as its metadata and its `iss` write it (RFC 8414: the origin with a slash). */
  issuerIdentifier: string;
  tokenEndpoint: string;
  provider: RefreshingAuthProvider;
  modes: OAuthServerModes;
  /** Bearer tokens the MCP endpoint accepted. */
  acceptedTokens: string[];
  /** Dynamic registrations received. */
  registrations: number;
  /** Client ID Metadata Document URLs it fetched, in order. */
  fetchedClientMetadata: string[];
  /** Every token request's form fields, in order (grant_type, refresh_token, client_id, ...). */
  tokenRequests: Record<string, string>[];
  /** Awaited before a token request is answered (a slow authorization server, or something done meanwhile). */
  beforeTokenAnswer?: (fields: Record<string, string>) => Promise<void>;
  /** Makes its MCP endpoint accept the access tokens of another authorization server too. */
  trust(other: RefreshingAuthProvider): void;
}

/**
 * The authorization server's side of a Client ID Metadata Document: the client_id is
 * an https URL (or http on loopback, for a setup on one machine), the document it
 * names is JSON whose client_id is that URL, and its redirect URIs are the client's.
 */
async function clientFromMetadataDocument(clientId: string, fetched: string[]): Promise<OAuthClientInformationFull | undefined> {
  const url = new URL(clientId);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))) return undefined;
  fetched.push(clientId);
  const res = await fetch(url, { redirect: 'error', headers: { accept: 'application/json' } });
  if (!res.ok || !/^application\/json\b/.test(res.headers.get('content-type') ?? '')) return undefined;
  const document = (await res.json()) as Partial<OAuthClientInformationFull>;
  if (document.client_id !== clientId || !Array.isArray(document.redirect_uris) || document.redirect_uris.length === 0) return undefined;
  if ((document.token_endpoint_auth_method ?? 'none') !== 'none') return undefined;
  return document as OAuthClientInformationFull;
}

/**
 * An MCP server at /mcp protected by bearer tokens, with its own authorization
 * server on the same origin (mcpAuthRouter: metadata, dynamic registration,
 * authorize, token), advertising itself through RFC 9728 metadata. `modes` says
 * which of Client ID Metadata Documents, dynamic registration and RFC 9207 it
 * supports (by default: registration only, as before revision 2025-11-25).
 */
export async function startOAuthServer(initial: Partial<OAuthServerModes> = {}): Promise<OAuthUpstream> {
  const express = require('express') as any;
  const app = express();
  const httpServer = http.createServer(app);
  const port = await listen(httpServer);
  const base = `http://127.0.0.1:${port}`;
  const mcpUrl = new URL(`${base}/mcp`);
  const provider = new RefreshingAuthProvider();
  const modes: OAuthServerModes = { clientIdMetadataDocuments: false, registration: true, issParameterSupported: false, issInResponse: 'absent', ...initial };
  const trusted: RefreshingAuthProvider[] = [provider];
  const upstream: OAuthUpstream = {
    url: mcpUrl.href,
    issuer: base,
    issuerIdentifier: new URL(base).href,
    tokenEndpoint: `${base}/token`,
    provider,
    modes,
    acceptedTokens: [],
    registrations: 0,
    fetchedClientMetadata: [],
    tokenRequests: [],
    trust: (other) => void trusted.push(other),
    close: () => closeServer(httpServer),
  };
  provider.issInResponse = () => ({ issuer: upstream.issuerIdentifier, absent: undefined, wrong: FOREIGN_ISSUER })[modes.issInResponse];
  const registeredClient = provider.clientsStore.getClient.bind(provider.clientsStore);
  provider.clientsStore.getClient = async (clientId: string) =>
    modes.clientIdMetadataDocuments && /^https?:\/\//.test(clientId)
      ? clientFromMetadataDocument(clientId, upstream.fetchedClientMetadata)
      : registeredClient(clientId);
  const options: AuthRouterOptions = {
    provider,
    issuerUrl: new URL(base),
    resourceServerUrl: mcpUrl,
    scopesSupported: ['mcp:tools'],
    authorizationOptions: { rateLimit: false },
    clientRegistrationOptions: { rateLimit: false },
    tokenOptions: { rateLimit: false },
    revocationOptions: { rateLimit: false },
  };
  // Ahead of mcpAuthRouter: the metadata as the modes say, and what tests count.
  app.get('/.well-known/oauth-authorization-server', (_req: any, res: any) => {
    const { registration_endpoint, ...metadata } = createOAuthMetadata(options);
    res.json({
      ...metadata,
      ...(modes.registration ? { registration_endpoint } : {}),
      ...(modes.clientIdMetadataDocuments ? { client_id_metadata_document_supported: true } : {}),
      ...(modes.issParameterSupported ? { authorization_response_iss_parameter_supported: true } : {}),
    });
  });
  app.get('/.well-known/oauth-protected-resource/mcp', (_req: any, res: any) => {
    res.json({ resource: mcpUrl.href, authorization_servers: modes.authorizationServers ?? [upstream.issuerIdentifier], scopes_supported: ['mcp:tools'] });
  });
  app.post('/register', (_req: any, res: any, next: any) => {
    if (!modes.registration) return res.status(404).end();
    upstream.registrations += 1;
    next();
  });
  app.post('/token', express.urlencoded({ extended: false }), (req: any, _res: any, next: any) => {
    upstream.tokenRequests.push({ ...req.body });
    Promise.resolve(upstream.beforeTokenAnswer?.({ ...req.body })).then(() => next(), next);
  });
  app.use(mcpAuthRouter(options));
  const verifier = {
    verifyAccessToken: async (token: string) => {
      for (const p of trusted) {
        const info = await p.verifyAccessToken(token).catch(() => undefined);
        if (info) return info;
      }
      throw new InvalidTokenError('invalid or expired token');
    },
  };
  const bearer = requireBearerAuth({ verifier, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  app.post('/mcp', express.json(), bearer, (req: any, res: any) => {
    upstream.acceptedTokens.push(req.auth.token);
    serveStateless(buildToolServer('oauth-server'), req, res, req.body).catch(() => res.destroy());
  });
  return upstream;
}
