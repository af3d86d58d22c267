import type { ServerResponse } from 'node:http';

/**
 * Per-connection and per-workspace request budgets (token buckets refilled
 * continuously, capacity one minute's worth). Each process keeps its own buckets:
 * behind N replicas a caller gets at most N times the budget (docs/decisions.md).
 */
export interface RateDecision {
  allowed: boolean;
  /** Seconds until one more request is allowed, when refused. */
  retryAfterSeconds: number;
  /** Which budget refused: 'connection' or 'workspace'. */
  scope?: 'connection' | 'workspace';
  limitPerMinute?: number;
}

class Buckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  /** Takes one token; returns 0 when taken, else the ms until one is available. */
  take(key: string, now: number): number {
    if (this.perMinute <= 0) return 0;
    const ratePerMs = this.perMinute / 60_000;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size > 100_000) this.buckets.clear();
      bucket = { tokens: this.perMinute, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * ratePerMs);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) / ratePerMs);
  }
}

export class GatewayRateLimits {
  private readonly connections: Buckets;
  private readonly workspaces: Buckets;

  constructor(private readonly limits: { perConnectionPerMinute: number; perWorkspacePerMinute: number }) {
    this.connections = new Buckets(limits.perConnectionPerMinute);
    this.workspaces = new Buckets(limits.perWorkspacePerMinute);
  }

  /** Counts one request of the connection (and its workspace) and says whether it may go on. */
  check(organizationGuid: string, connectionGuid: string, now = Date.now()): RateDecision {
    const connWait = this.connections.take(connectionGuid, now);
    if (connWait > 0)
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(connWait / 1000)),
        scope: 'connection',
        limitPerMinute: this.limits.perConnectionPerMinute,
      };
    const wsWait = this.workspaces.take(organizationGuid, now);
    if (wsWait > 0)
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(wsWait / 1000)),
        scope: 'workspace',
        limitPerMinute: this.limits.perWorkspacePerMinute,
      };
    return { allowed: true, retryAfterSeconds: 0 };
  }
}

/**
 * Event streams one connection may hold open at once in a process: a GET in a 2025 session (a resumption too), the
 * legacy `/sse` and a 2026-07-28 `subscriptions/listen`. A host opens one or two; without a cap one token could open
 * them without bound, and each follows upstreams (host-event-streams.ts, listen-upstreams.ts). Behind N replicas, N times
 * this.
 */
export const MAX_OPEN_STREAMS_PER_CONNECTION = 32;
/** What a host refused a stream is told to wait: a slot frees when one of its streams closes, which no clock says. */
export const OPEN_STREAMS_RETRY_AFTER_SECONDS = 5;

/** The event streams each connection holds open in this process (MAX_OPEN_STREAMS_PER_CONNECTION). */
export class OpenStreams {
  private readonly open = new Map<string, number>();

  constructor(private readonly max = MAX_OPEN_STREAMS_PER_CONNECTION) {}

  /** Takes a slot of the connection until `out` closes (however it ends); false when all are taken. */
  hold(connectionGuid: string, out: ServerResponse): boolean {
    // A host gone before its stream opened: 'close' came already, and nothing is held.
    if (out.closed) return true;
    const held = this.open.get(connectionGuid) ?? 0;
    if (held >= this.max) return false;
    this.open.set(connectionGuid, held + 1);
    out.once('close', () => {
      const left = this.open.get(connectionGuid)! - 1;
      if (left === 0) this.open.delete(connectionGuid);
      else this.open.set(connectionGuid, left);
    });
    return true;
  }
}

/**
 * Options of every gateway route: the admin interface's rate limit (a plugin hook
 * on every route, which hashes the token) does not apply; the gateway has its own
 * limits per connection and workspace (GatewayRateLimits above). As an MCP endpoint
 * it checks Origin (src/http/origin-check.ts). No HEAD twin of a GET route: fastify's
 * would open the event stream of a HEAD request, which MCP does not define.
 */
export const GATEWAY_ROUTE_OPTIONS = { config: { rateLimit: false as const, mcpEndpoint: true }, exposeHeadRoute: false };
