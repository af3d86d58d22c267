import { randomHex } from '../core/logs/random-hex.js';

/** W3C trace context for one call: continued from the host's `traceparent`, else a new trace. */
export interface TraceContext {
  traceId: string;
  /** The gateway's own span for this call (the call log row's span_id). */
  spanId: string;
  /** The host's span, when it sent one. */
  parentSpanId: string | null;
  flags: string;
  tracestate: string | null;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function traceContextFrom(traceparent: string | undefined, tracestate: string | undefined): TraceContext {
  const spanId = randomHex(8);
  const m = traceparent ? TRACEPARENT.exec(traceparent.trim().toLowerCase()) : null;
  // All-zero ids and version ff are invalid (W3C): start a new trace instead.
  if (m && m[1] !== 'ff' && !/^0+$/.test(m[2]!) && !/^0+$/.test(m[3]!)) {
    return { traceId: m[2]!, spanId, parentSpanId: m[3]!, flags: m[4]!, tracestate: tracestate?.slice(0, 512) ?? null };
  }
  return { traceId: randomHex(16), spanId, parentSpanId: null, flags: '01', tracestate: null };
}

/** The `traceparent` to send upstream: same trace, the gateway's span as parent. */
export const upstreamTraceparent = (ctx: TraceContext): string => `00-${ctx.traceId}-${ctx.spanId}-${ctx.flags}`;

type WithMeta = { params?: { _meta?: Record<string, unknown> } & Record<string, unknown> } & Record<string, unknown>;

/**
 * The host's trace context: its `traceparent` header, else the one its request
 * carries in `_meta` (SEP-414, as the v2 SDK's clients send it), continued; else a
 * new trace.
 */
export function hostTraceContext(traceparent: string | undefined, tracestate: string | undefined, message: unknown): TraceContext {
  if (traceparent === undefined) {
    const meta = (message as WithMeta | null)?.params?._meta;
    if (meta && typeof meta.traceparent === 'string')
      return traceContextFrom(meta.traceparent, typeof meta.tracestate === 'string' ? meta.tracestate : undefined);
  }
  return traceContextFrom(traceparent, tracestate);
}

/**
 * A message for an upstream whose `_meta` names the host's trace context: the
 * gateway's instead, as its `traceparent` header says (an upstream must not hear two
 * parents). A message without one is returned as it is.
 */
export function withUpstreamTrace<M>(message: M, traceparent: string, tracestate: string | null | undefined): M {
  const params = (message as WithMeta).params;
  const meta = params?._meta;
  if (!meta || (meta.traceparent === undefined && meta.tracestate === undefined)) return message;
  const { tracestate: _, ...rest } = meta;
  return { ...message, params: { ...params, _meta: { ...rest, traceparent, ...(tracestate ? { tracestate } : {}) } } };
}
