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
  /** The record's attributes as a map (decoded on first use: validation does not need it). */
  readonly attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  record: Record<string, any>;
  receivedAt: number;
}

const NANOS = /^\d{1,20}$/;
const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const ALL_ZERO = /^0+$/;
const INTEGER_TEXT = /^-?\d+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Where a value sits in the request, built only when a rule fails: validating a
 * large batch must not pay for a path string (or a closure) per field (the bench
 * pushes tens of thousands of records a second through these checks).
 */
type Path = () => string;

class Invalid extends Error {}
const fail = (at: Path, what: string): never => {
  throw new Invalid(`${at()}${what}`);
};
const isInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v);
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNanos = (v: unknown) => typeof v === 'string' && NANOS.test(v);

/**
 * Checks one AnyValue: exactly one member, of the member's type. `key` names the
 * attribute it belongs to (the path is `at` + `[key]`), so checking an attribute
 * allocates nothing.
 */
/** The path of an attribute's value: `at` + `[key]`, composed only when a rule fails. */
const here = (at: Path, key: string | undefined): Path => (key === undefined ? at : () => `${at()}[${key}]`);

function checkAnyValue(v: unknown, at: Path, key?: string): void {
  if (!isObj(v)) fail(here(at, key), ': AnyValue must be an object');
  const o = v as Record<string, any>;
  let k: string | undefined;
  let count = 0;
  for (const member in o) {
    k = member;
    count++;
  }
  if (count !== 1) fail(here(at, key), `: AnyValue must have exactly one member, has ${Object.keys(o).join(',') || 'none'}`);
  const x = o[k!];
  switch (k) {
    case 'stringValue':
      if (typeof x !== 'string') fail(here(at, key), '.stringValue');
      return;
    case 'boolValue':
      if (typeof x !== 'boolean') fail(here(at, key), '.boolValue');
      return;
    case 'intValue':
      if (!(isInt(x) || (typeof x === 'string' && INTEGER_TEXT.test(x)))) fail(here(at, key), '.intValue must be an integer');
      return;
    case 'doubleValue':
      if (typeof x !== 'number') fail(here(at, key), '.doubleValue');
      return;
    case 'bytesValue':
      if (!(typeof x === 'string' && BASE64.test(x))) fail(here(at, key), '.bytesValue must be base64');
      return;
    case 'arrayValue': {
      if (!(isObj(x) && Array.isArray(x.values))) fail(here(at, key), '.arrayValue.values');
      const values = x.values as unknown[];
      for (let i = 0; i < values.length; i++) checkAnyValue(values[i], () => `${here(at, key)()}.arrayValue.values[${i}]`);
      return;
    }
    case 'kvlistValue':
      if (!(isObj(x) && Array.isArray(x.values))) fail(here(at, key), '.kvlistValue.values');
      checkKeyValues(x.values, () => `${here(at, key)()}.kvlistValue`);
      return;
    default:
      fail(here(at, key), `: unknown AnyValue member ${k}`);
  }
}

/** A checked AnyValue as a JS value (intValue as a number, lists decoded). */
function anyValueOf(v: Record<string, any>): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('arrayValue' in v) return (v.arrayValue.values as Record<string, any>[]).map(anyValueOf);
  if ('kvlistValue' in v) return keyValueMap(v.kvlistValue.values);
  return Object.values(v)[0];
}

/** A checked KeyValue list as a map. */
const keyValueMap = (list: { key: string; value: Record<string, any> }[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValueOf(kv.value)]));

/** A KeyValue list: an array (or absent) of {key, value} with non-empty, distinct keys and valid values. */
function checkKeyValues(list: unknown, at: Path): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) fail(at, ': attributes must be an array');
  const kvs = list as unknown[];
  for (let i = 0; i < kvs.length; i++) {
    const kv = kvs[i];
    if (!(isObj(kv) && typeof kv.key === 'string' && kv.key.length > 0)) fail(() => `${at()}[${i}]`, ': KeyValue needs a key');
    const k = (kv as any).key as string;
    // Attribute lists are short: comparing with the keys before is cheaper than a set (measured).
    for (let j = 0; j < i; j++) if ((kvs[j] as any).key === k) fail(at, `: duplicate attribute ${k}`);
    checkAnyValue((kv as any).value, at, k);
  }
}

const optUint = (v: unknown, at: Path, what: string) => {
  if (!(v === undefined || (isInt(v) && (v as number) >= 0))) fail(at, `${what} must be a non-negative integer`);
};

function checkResource(r: unknown, at: Path): Record<string, unknown> {
  if (!(r === undefined || isObj(r))) fail(at, '.resource');
  optUint((r as any)?.droppedAttributesCount, at, '.resource.droppedAttributesCount');
  checkKeyValues((r as any)?.attributes, () => `${at()}.resource.attributes`);
  return keyValueMap((r as any)?.attributes);
}

function checkScope(s: unknown, at: Path): void {
  if (!(s === undefined || (isObj(s) && (s.name === undefined || typeof s.name === 'string')))) fail(at, '.scope');
}

function checkLogRecord(r: unknown, at: Path): void {
  if (!isObj(r)) fail(at, '');
  const o = r as Record<string, any>;
  if (!isNanos(o.timeUnixNano)) fail(at, '.timeUnixNano must be a decimal string of nanoseconds');
  if (!isNanos(o.observedTimeUnixNano)) fail(at, '.observedTimeUnixNano must be a decimal string');
  if (!(o.severityNumber === undefined || (isInt(o.severityNumber) && o.severityNumber >= 0 && o.severityNumber <= 24)))
    fail(at, '.severityNumber must be an integer 0..24');
  if (!(o.severityText === undefined || typeof o.severityText === 'string')) fail(at, '.severityText');
  if (o.body !== undefined) checkAnyValue(o.body, () => `${at()}.body`);
  optUint(o.flags, at, '.flags');
  optUint(o.droppedAttributesCount, at, '.droppedAttributesCount');
  if (!(o.traceId === undefined || o.traceId === '' || (typeof o.traceId === 'string' && HEX32.test(o.traceId))))
    fail(at, '.traceId must be 32 lowercase hex digits');
  if (!(o.spanId === undefined || o.spanId === '' || (typeof o.spanId === 'string' && HEX16.test(o.spanId))))
    fail(at, '.spanId must be 16 lowercase hex digits');
  checkKeyValues(o.attributes, () => `${at()}.attributes`);
}

function checkSpan(s: unknown, at: Path): void {
  if (!isObj(s)) fail(at, '');
  const o = s as Record<string, any>;
  if (!(typeof o.traceId === 'string' && HEX32.test(o.traceId) && !ALL_ZERO.test(o.traceId)))
    fail(at, '.traceId must be 32 lowercase hex digits, not all zero');
  if (!(typeof o.spanId === 'string' && HEX16.test(o.spanId) && !ALL_ZERO.test(o.spanId))) fail(at, '.spanId must be 16 lowercase hex digits, not all zero');
  if (!(o.parentSpanId === undefined || o.parentSpanId === '' || (typeof o.parentSpanId === 'string' && HEX16.test(o.parentSpanId)))) fail(at, '.parentSpanId');
  if (!(typeof o.name === 'string' && o.name.length > 0)) fail(at, '.name');
  if (!(isInt(o.kind) && o.kind >= 0 && o.kind <= 5)) fail(at, '.kind must be an integer enum 0..5');
  if (!isNanos(o.startTimeUnixNano)) fail(at, '.startTimeUnixNano must be a decimal string');
  if (!isNanos(o.endTimeUnixNano)) fail(at, '.endTimeUnixNano must be a decimal string');
  if (!endsAfterStart(o.startTimeUnixNano, o.endTimeUnixNano)) fail(at, ': end before start');
  if (!(o.status === undefined || (isObj(o.status) && isInt(o.status.code) && o.status.code >= 0 && o.status.code <= 2)))
    fail(at, '.status.code must be an integer enum 0..2');
  if (!(o.status?.message === undefined || typeof o.status.message === 'string')) fail(at, '.status.message');
  if (!(o.events === undefined || Array.isArray(o.events))) fail(at, '.events');
  if (!(o.links === undefined || Array.isArray(o.links))) fail(at, '.links');
  optUint(o.flags, at, '.flags');
  checkKeyValues(o.attributes, () => `${at()}.attributes`);
}

/** end >= start for two decimal nanosecond strings, without BigInt (same length: text order is numeric order). */
function endsAfterStart(start: string, end: string): boolean {
  // Leading zeros are rare: strip them only when there are some.
  const a = start.charCodeAt(0) === 0x30 ? start.replace(/^0+(?=\d)/, '') : start;
  const b = end.charCodeAt(0) === 0x30 ? end.replace(/^0+(?=\d)/, '') : end;
  return a.length !== b.length ? b.length > a.length : b >= a;
}

class Item implements ReceivedItem {
  private decoded: Record<string, unknown> | undefined;

  constructor(
    readonly signal: 'logs' | 'traces',
    readonly path: string,
    readonly resource: Record<string, unknown>,
    readonly record: Record<string, any>,
    readonly receivedAt: number,
  ) {}

  get attributes(): Record<string, unknown> {
    return (this.decoded ??= keyValueMap(this.record.attributes));
  }
}

export class OtlpReceiver extends ScriptedReceiver {
  readonly items: ReceivedItem[] = [];
  /** The accepted log records and spans, kept apart as they arrive (polled often by tests and the bench). */
  readonly logs: ReceivedItem[] = [];
  readonly spans: ReceivedItem[] = [];
  private lastParsed: ReceivedItem[] = [];

  protected validate(req: ReceivedRequest) {
    try {
      const root: Path = () => '';
      if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) fail(root, 'content-type must be application/json');
      let doc: unknown;
      try {
        doc = JSON.parse(req.body);
      } catch {
        throw new Invalid('body is not JSON');
      }
      if (!isObj(doc)) fail(root, 'body must be an object');
      const d = doc as Record<string, any>;
      const keys = Object.keys(d);
      if (!(keys.length === 1 && (keys[0] === 'resourceLogs' || keys[0] === 'resourceSpans')))
        fail(root, `body must hold exactly resourceLogs or resourceSpans, has ${keys.join(',')}`);
      const items: ReceivedItem[] = [];
      const receivedAt = Date.now();
      // The two signals share one shape: resource{Logs,Spans} > scope{Logs,Spans} > {logRecords,spans}.
      const shape = d.resourceLogs
        ? { signal: 'logs' as const, top: 'resourceLogs', scope: 'scopeLogs', leaf: 'logRecords', check: checkLogRecord }
        : { signal: 'traces' as const, top: 'resourceSpans', scope: 'scopeSpans', leaf: 'spans', check: checkSpan };
      if (!Array.isArray(d[shape.top])) fail(root, `${shape.top} must be an array`);
      const resources = d[shape.top] as any[];
      for (let i = 0; i < resources.length; i++) {
        const rx = resources[i];
        const at: Path = () => `${shape.top}[${i}]`;
        if (!(isObj(rx) && Array.isArray(rx[shape.scope]))) fail(at, `.${shape.scope} must be an array`);
        const resource = checkResource(rx.resource, at);
        const scopes = rx[shape.scope] as any[];
        for (let j = 0; j < scopes.length; j++) {
          const sx = scopes[j];
          const scopeAt: Path = () => `${at()}.${shape.scope}[${j}]`;
          if (!(isObj(sx) && Array.isArray(sx[shape.leaf]))) fail(scopeAt, `.${shape.leaf} must be an array`);
          checkScope(sx.scope, scopeAt);
          const records = sx[shape.leaf] as any[];
          for (let k = 0; k < records.length; k++) {
            const record = records[k];
            shape.check(record, () => `${scopeAt()}.${shape.leaf}[${k}]`);
            items.push(new Item(shape.signal, req.path, resource, record, receivedAt));
          }
        }
      }
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
    const bySignal = this.lastParsed[0]?.signal === 'traces' ? this.spans : this.logs;
    for (const item of kept) {
      this.items.push(item);
      bySignal.push(item);
    }
  }

  protected successBody(partial?: { rejected: number; message?: string }): string {
    if (!partial) return '{}';
    const key = this.lastParsed[0]?.signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
    return JSON.stringify({ partialSuccess: { [key]: String(partial.rejected), errorMessage: partial.message ?? 'some records were rejected' } });
  }
}
