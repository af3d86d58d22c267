import { ScriptedReceiver, type ReceivedRequest } from './receiver-base.js';

/**
 * A loopback OTLP/HTTP JSON receiver that validates every request strictly against
 * the OTLP JSON encoding: the resourceLogs/scopeLogs/logRecords and
 * resourceSpans/scopeSpans/spans shapes, lowercase hex ids of the right length,
 * nanosecond times as decimal strings, enums as integers, AnyValue with exactly one
 * member. A request that breaks a rule is answered 400 and listed in `invalid`.
 */
export interface ReceivedItem {
  signal: 'logs' | 'traces';
  path: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  record: Record<string, any>;
  receivedAt: number;
}

const NANOS = /^\d{1,20}$/;
const hex = (len: number) => new RegExp(`^[0-9a-f]{${len}}$`);
const HEX32 = hex(32);
const HEX16 = hex(16);

class Invalid extends Error {}
const must = (ok: unknown, what: string): void => {
  if (!ok) throw new Invalid(what);
};
const isInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v);
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

function anyValue(v: unknown, at: string): unknown {
  must(isObj(v), `${at}: AnyValue must be an object`);
  const o = v as Record<string, any>;
  const keys = Object.keys(o);
  must(keys.length === 1, `${at}: AnyValue must have exactly one member, has ${keys.join(',') || 'none'}`);
  const [k] = keys;
  const x = o[k!];
  switch (k) {
    case 'stringValue':
      must(typeof x === 'string', `${at}.stringValue`);
      return x;
    case 'boolValue':
      must(typeof x === 'boolean', `${at}.boolValue`);
      return x;
    case 'intValue':
      must(isInt(x) || (typeof x === 'string' && /^-?\d+$/.test(x)), `${at}.intValue must be an integer`);
      return Number(x);
    case 'doubleValue':
      must(typeof x === 'number', `${at}.doubleValue`);
      return x;
    case 'bytesValue':
      must(typeof x === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(x), `${at}.bytesValue must be base64`);
      return x;
    case 'arrayValue':
      must(isObj(x) && Array.isArray(x.values), `${at}.arrayValue.values`);
      return (x.values as unknown[]).map((e, i) => anyValue(e, `${at}.arrayValue.values[${i}]`));
    case 'kvlistValue':
      must(isObj(x) && Array.isArray(x.values), `${at}.kvlistValue.values`);
      return keyValues(x.values, `${at}.kvlistValue`);
    default:
      throw new Invalid(`${at}: unknown AnyValue member ${k}`);
  }
}

function keyValues(list: unknown, at: string): Record<string, unknown> {
  must(list === undefined || Array.isArray(list), `${at}: attributes must be an array`);
  const out: Record<string, unknown> = {};
  for (const [i, kv] of ((list as unknown[]) ?? []).entries()) {
    must(isObj(kv) && typeof kv.key === 'string' && kv.key.length > 0, `${at}[${i}]: KeyValue needs a key`);
    const k = (kv as any).key as string;
    must(!(k in out), `${at}: duplicate attribute ${k}`);
    out[k] = anyValue((kv as any).value, `${at}[${k}]`);
  }
  return out;
}

const optUint = (v: unknown, at: string) => must(v === undefined || (isInt(v) && (v as number) >= 0), `${at} must be a non-negative integer`);

function checkResource(r: unknown, at: string): Record<string, unknown> {
  must(r === undefined || isObj(r), `${at}.resource`);
  optUint((r as any)?.droppedAttributesCount, `${at}.resource.droppedAttributesCount`);
  return keyValues((r as any)?.attributes, `${at}.resource.attributes`);
}

function checkScope(s: unknown, at: string): void {
  must(s === undefined || (isObj(s) && (s.name === undefined || typeof s.name === 'string')), `${at}.scope`);
}

function checkLogRecord(r: unknown, at: string): Record<string, unknown> {
  must(isObj(r), at);
  const o = r as Record<string, any>;
  must(typeof o.timeUnixNano === 'string' && NANOS.test(o.timeUnixNano), `${at}.timeUnixNano must be a decimal string of nanoseconds`);
  must(typeof o.observedTimeUnixNano === 'string' && NANOS.test(o.observedTimeUnixNano), `${at}.observedTimeUnixNano must be a decimal string`);
  must(o.severityNumber === undefined || (isInt(o.severityNumber) && o.severityNumber >= 0 && o.severityNumber <= 24), `${at}.severityNumber must be an integer 0..24`);
  must(o.severityText === undefined || typeof o.severityText === 'string', `${at}.severityText`);
  if (o.body !== undefined) anyValue(o.body, `${at}.body`);
  optUint(o.flags, `${at}.flags`);
  optUint(o.droppedAttributesCount, `${at}.droppedAttributesCount`);
  must(o.traceId === undefined || o.traceId === '' || HEX32.test(o.traceId), `${at}.traceId must be 32 lowercase hex digits`);
  must(o.spanId === undefined || o.spanId === '' || HEX16.test(o.spanId), `${at}.spanId must be 16 lowercase hex digits`);
  return keyValues(o.attributes, `${at}.attributes`);
}

function checkSpan(s: unknown, at: string): Record<string, unknown> {
  must(isObj(s), at);
  const o = s as Record<string, any>;
  must(typeof o.traceId === 'string' && HEX32.test(o.traceId) && !/^0+$/.test(o.traceId), `${at}.traceId must be 32 lowercase hex digits, not all zero`);
  must(typeof o.spanId === 'string' && HEX16.test(o.spanId) && !/^0+$/.test(o.spanId), `${at}.spanId must be 16 lowercase hex digits, not all zero`);
  must(o.parentSpanId === undefined || o.parentSpanId === '' || HEX16.test(o.parentSpanId), `${at}.parentSpanId`);
  must(typeof o.name === 'string' && o.name.length > 0, `${at}.name`);
  must(isInt(o.kind) && o.kind >= 0 && o.kind <= 5, `${at}.kind must be an integer enum 0..5`);
  must(typeof o.startTimeUnixNano === 'string' && NANOS.test(o.startTimeUnixNano), `${at}.startTimeUnixNano must be a decimal string`);
  must(typeof o.endTimeUnixNano === 'string' && NANOS.test(o.endTimeUnixNano), `${at}.endTimeUnixNano must be a decimal string`);
  must(BigInt(o.endTimeUnixNano) >= BigInt(o.startTimeUnixNano), `${at}: end before start`);
  must(o.status === undefined || (isObj(o.status) && isInt(o.status.code) && o.status.code >= 0 && o.status.code <= 2), `${at}.status.code must be an integer enum 0..2`);
  must(o.status?.message === undefined || typeof o.status.message === 'string', `${at}.status.message`);
  must(o.events === undefined || Array.isArray(o.events), `${at}.events`);
  must(o.links === undefined || Array.isArray(o.links), `${at}.links`);
  optUint(o.flags, `${at}.flags`);
  return keyValues(o.attributes, `${at}.attributes`);
}

export class OtlpReceiver extends ScriptedReceiver {
  readonly items: ReceivedItem[] = [];
  private lastParsed: ReceivedItem[] = [];

  get logs(): ReceivedItem[] {
    return this.items.filter((i) => i.signal === 'logs');
  }
  get spans(): ReceivedItem[] {
    return this.items.filter((i) => i.signal === 'traces');
  }

  protected validate(req: ReceivedRequest) {
    try {
      must(String(req.headers['content-type'] ?? '').startsWith('application/json'), 'content-type must be application/json');
      let doc: unknown;
      try {
        doc = JSON.parse(req.body);
      } catch {
        throw new Invalid('body is not JSON');
      }
      must(isObj(doc), 'body must be an object');
      const d = doc as Record<string, any>;
      const keys = Object.keys(d);
      must(keys.length === 1 && (keys[0] === 'resourceLogs' || keys[0] === 'resourceSpans'), `body must hold exactly resourceLogs or resourceSpans, has ${keys.join(',')}`);
      const items: ReceivedItem[] = [];
      const receivedAt = Date.now();
      // The two signals share one shape: resource{Logs,Spans} > scope{Logs,Spans} > {logRecords,spans}.
      const shape = d.resourceLogs
        ? { signal: 'logs' as const, top: 'resourceLogs', scope: 'scopeLogs', leaf: 'logRecords', check: checkLogRecord }
        : { signal: 'traces' as const, top: 'resourceSpans', scope: 'scopeSpans', leaf: 'spans', check: checkSpan };
      must(Array.isArray(d[shape.top]), `${shape.top} must be an array`);
      d[shape.top].forEach((rx: any, i: number) => {
        const at = `${shape.top}[${i}]`;
        must(isObj(rx) && Array.isArray(rx[shape.scope]), `${at}.${shape.scope} must be an array`);
        const resource = checkResource(rx.resource, at);
        rx[shape.scope].forEach((sx: any, j: number) => {
          const scopeAt = `${at}.${shape.scope}[${j}]`;
          must(isObj(sx) && Array.isArray(sx[shape.leaf]), `${scopeAt}.${shape.leaf} must be an array`);
          checkScope(sx.scope, scopeAt);
          sx[shape.leaf].forEach((record: any, k: number) => {
            const attributes = shape.check(record, `${scopeAt}.${shape.leaf}[${k}]`);
            items.push({ signal: shape.signal, path: req.path, attributes, resource, record, receivedAt });
          });
        });
      });
      this.lastParsed = items;
      return null;
    } catch (err) {
      if (!(err instanceof Invalid)) throw err;
      return { status: 400, reason: err.message, body: JSON.stringify({ code: 3, message: err.message }) };
    }
  }

  protected accept(_req: ReceivedRequest, partial?: { rejected: number }): void {
    // A partial success keeps all but the last `rejected` items, as a collector would drop them.
    const kept = partial ? this.lastParsed.slice(0, Math.max(0, this.lastParsed.length - partial.rejected)) : this.lastParsed;
    this.items.push(...kept);
  }

  protected successBody(partial?: { rejected: number; message?: string }): string {
    if (!partial) return '{}';
    const key = this.lastParsed[0]?.signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
    return JSON.stringify({ partialSuccess: { [key]: String(partial.rejected), errorMessage: partial.message ?? 'some records were rejected' } });
  }
}
