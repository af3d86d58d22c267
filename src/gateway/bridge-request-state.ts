import { hkdfSync } from 'node:crypto';
import { openJson, sealJson } from './sealed.js';

/**
 * The `requestState` a gateway hands a 2026-07-28 host with an `input_required`
 * result. The host echoes it on its retry, so it is attacker-controlled input: it
 * is sealed (AES-256-GCM, sealed.ts) under a key of its own derived from the
 * gateway's session key, bound to the connection and the request it was issued
 * for, and it expires.
 *
 * Two kinds: `held`, a 2025 upstream's call this process keeps open while the host
 * answers the upstream's requests (bridge-held-calls.ts); `upstream`, a 2026-07-28
 * upstream's own requestState, wrapped so that every state a host holds from the
 * gateway is the gateway's and cannot be replayed on another connection or tool.
 */
export type RequestStateContent =
  | {
      kind: 'held';
      /** The held call's id in the process that holds it. */
      call: string;
      /** Which process holds it (a retry that reaches another replica is told so). */
      replica: string;
      /** The round it answers: a state of an earlier round no longer fits the call. */
      round: number;
    }
  | { kind: 'upstream'; state: string };

/** What a state is bound to: a state issued for one connection and request fits no other. */
export interface RequestStateBinding {
  connectionGuid: string;
  method: string;
  /** The tool or prompt name, or the resource URI, as the host named it. */
  target: string;
}

interface Sealed {
  c: string;
  m: string;
  t: string;
  /** Expiry, epoch ms. */
  e: number;
  s: RequestStateContent;
}

export type OpenedRequestState = { ok: true; content: RequestStateContent } | { ok: false; reason: string };

export class RequestStates {
  private readonly key: Buffer;

  constructor(gatewaySessionKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', gatewaySessionKey, Buffer.alloc(0), 'gateway-request-state', 32));
  }

  seal(binding: RequestStateBinding, content: RequestStateContent, expiresAt: number): string {
    return sealJson(this.key, { c: binding.connectionGuid, m: binding.method, t: binding.target, e: expiresAt, s: content } satisfies Sealed);
  }

  /** Opens a host's echoed state for the request it came with; the reason is said to the host when it does not fit. */
  open(sealed: string, binding: RequestStateBinding, now = Date.now()): OpenedRequestState {
    const opened = openJson<Sealed>(this.key, sealed);
    // Forged, altered, or issued for another connection: the same answer, so a host learns nothing of other connections' states.
    if (!opened || opened.c !== binding.connectionGuid) return { ok: false, reason: 'the requestState was not issued by this gateway for this connection' };
    if (opened.m !== binding.method || opened.t !== binding.target)
      return { ok: false, reason: `the requestState was issued for ${opened.m} ${opened.t}, not for this request` };
    if (opened.e <= now) return { ok: false, reason: 'the requestState has expired: send the request again without it' };
    return { ok: true, content: opened.s };
  }
}
