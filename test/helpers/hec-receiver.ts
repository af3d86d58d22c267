import { ScriptedReceiver, type ReceivedRequest } from './receiver-base.js';

/**
 * A loopback Splunk HTTP Event Collector that enforces HEC's rules:
 * `Authorization: Splunk <token>` with the token it was given, a body of
 * concatenated JSON objects (not an array), a non-empty `event` in each, `time` as
 * epoch seconds in plain decimal form (never scientific notation), and `fields` flat
 * with string or string-array values. It answers as Splunk does (code 0 on success,
 * 401/403 on auth, 400 with code 6 or 15 on bad events).
 */
export interface HecEvent {
  time: number;
  rawTime: string;
  event: unknown;
  fields: Record<string, string | string[]>;
  host?: string;
  source?: string;
  sourcetype?: string;
  receivedAt: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
/** JSON's whitespace between events: space, tab, line feed, carriage return. */
const isJsonSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Splits concatenated JSON objects, returning each object's raw text. */
export function splitConcatenatedJson(body: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = -1;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string in one go: find its closing quote, stepping over escapes.
      if (depth === 0) throw new Error('unexpected " between events');
      let j = i + 1;
      for (;;) {
        j = body.indexOf('"', j);
        if (j < 0) throw new Error('truncated event');
        let backslashes = 0;
        while (body.charCodeAt(j - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
        j++;
      }
      i = j;
    } else if (c === OPEN) {
      if (depth === 0) start = i;
      depth++;
    } else if (c === CLOSE) {
      depth--;
      if (depth === 0) out.push(body.slice(start, i + 1));
      if (depth < 0) throw new Error('unbalanced braces');
    } else if (depth === 0 && !isJsonSpace(c)) throw new Error(`unexpected ${body[i]} between events`);
  }
  if (depth !== 0) throw new Error('truncated event');
  return out;
}

const RAW_TIME = /"time"\s*:\s*([^,}\s]+)/;
const DECIMAL_TIME = /^"?\d+(\.\d{1,6})?"?$/;

export class HecReceiver extends ScriptedReceiver {
  readonly events: HecEvent[] = [];
  private parsed: HecEvent[] = [];

  constructor(readonly token: string) {
    super();
  }

  protected validate(req: ReceivedRequest) {
    const auth = req.headers.authorization;
    if (!auth) return { status: 401, reason: 'no Authorization header', body: JSON.stringify({ text: 'Token is required', code: 2 }) };
    if (auth !== `Splunk ${this.token}`) return { status: 403, reason: 'wrong Authorization header', body: JSON.stringify({ text: 'Invalid token', code: 4 }) };
    let raws: string[];
    try {
      raws = splitConcatenatedJson(req.body);
    } catch (err) {
      return { status: 400, reason: (err as Error).message, body: JSON.stringify({ text: 'Invalid data format', code: 6, 'invalid-event-number': 0 }) };
    }
    if (raws.length === 0) return { status: 400, reason: 'no data', body: JSON.stringify({ text: 'No data', code: 5 }) };
    const events: HecEvent[] = [];
    const receivedAt = Date.now();
    for (const [i, raw] of raws.entries()) {
      const bad = (code: number, text: string, reason: string) => ({
        status: 400,
        reason: `event ${i}: ${reason}`,
        body: JSON.stringify({ text, code, 'invalid-event-number': i }),
      });
      let e: Record<string, any>;
      try {
        e = JSON.parse(raw) as Record<string, any>;
      } catch {
        return bad(6, 'Invalid data format', 'not JSON');
      }
      if (e.event === undefined || e.event === '' || e.event === null) return bad(13, 'Event field cannot be blank', 'empty event');
      const rawTime = RAW_TIME.exec(raw)?.[1];
      if (rawTime !== undefined && !DECIMAL_TIME.test(rawTime)) return bad(6, 'Invalid data format', `time ${rawTime} is not epoch seconds in decimal form`);
      const fields = e.fields ?? {};
      if (typeof fields !== 'object' || Array.isArray(fields)) return bad(6, 'Invalid data format', 'fields must be an object');
      for (const k in fields) {
        const v = fields[k];
        const flat = typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
        if (!flat) return bad(15, 'Error in handling indexed fields', `field ${k} is not a string or string array`);
      }
      events.push({
        time: Number(String(rawTime ?? '0').replaceAll('"', '')),
        rawTime: rawTime ?? '',
        event: e.event,
        fields,
        host: e.host,
        source: e.source,
        sourcetype: e.sourcetype,
        receivedAt,
      });
    }
    this.parsed = events;
    return null;
  }

  protected accept(): void {
    this.events.push(...this.parsed);
  }

  protected successBody(): string {
    return JSON.stringify({ text: 'Success', code: 0 });
  }
}
