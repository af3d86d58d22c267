import { sqlString } from '../stores/clickhouse.js';

/**
 * The pieces ClickHouse SQL is written from to produce a forwarded record as
 * finished JSON text: constants and SQL strings joined by concat(), strings quoted by
 * toJSONString, attributes rendered as OTLP KeyValues or flat HEC fields, OTLP's
 * nanosecond times. Shared by the call-log records (record-sql.ts) and the audit
 * records (audit-record-sql.ts); each of those declares its own attribute list.
 *
 * toJSONString escapes like JSON.stringify except that it also escapes U+2028/U+2029
 * and writes other control characters as upper-case `\u001F`: the same JSON values,
 * different bytes. Forward slashes are left alone by the batch query's
 * `output_format_json_escape_forward_slashes = 0`.
 */

/** A piece of a record: SQL that yields a String, or constant text. */
export type Part = { sql: string } | { text: string };
export const sql = (s: string): Part => ({ sql: s });
export const lit = (s: string): Part => ({ text: s });

/** concat() of the parts, adjacent constants merged into one literal. */
export function concat(parts: Part[]): string {
  const merged: string[] = [];
  let pending = '';
  for (const p of parts) {
    if ('text' in p) pending += p.text;
    else {
      if (pending) merged.push(sqlString(pending));
      pending = '';
      merged.push(p.sql);
    }
  }
  if (pending) merged.push(sqlString(pending));
  return merged.length === 1 ? `toString(${merged[0]})` : `concat(${merged.join(', ')})`;
}

/** A string as a quoted, escaped JSON string. */
export const jsonText = (expr: string): Part => sql(`toJSONString(${expr})`);

export const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
/** The UUID and Enum columns as String. */
export const col = (name: string): string => `toString(${name})`;
/** Set: neither empty nor the zero UUID (how the log tables store "absent"). */
export const present = (expr: string): string => `(${expr} != '' AND ${expr} != '${ZERO_UUID}')`;

export interface Attribute {
  key: string;
  /** SQL of the value: a String, an integer for `int`, an Array(String) for `strings`. */
  value: string;
  type: 'string' | 'int' | 'strings';
  /** SQL condition; the attribute is left out where it is false. */
  when?: string;
}

/** The attributes as parts, each written by `item`; optional ones through if(), comma first (the first attribute must always be set). */
export function attributeParts(attributes: readonly Attribute[], item: (a: Attribute) => Part[]): Part[] {
  return attributes.flatMap((a, i): Part[] => {
    const parts = i === 0 ? item(a) : [lit(','), ...item(a)];
    return a.when ? [sql(`if(${a.when}, ${concat(parts)}, '')`)] : parts;
  });
}

/** An OTLP KeyValue, the value an AnyValue as the serializer maps a JS string, integer or array of strings. */
export function keyValue(a: Attribute): Part[] {
  const head = `{"key":${JSON.stringify(a.key)},"value":`;
  if (a.type === 'int') return [lit(`${head}{"intValue":`), sql(`toString(${a.value})`), lit('}}')];
  if (a.type === 'strings')
    return [
      lit(`${head}{"arrayValue":{"values":[`),
      sql(`arrayStringConcat(arrayMap(v -> concat('{"stringValue":', toJSONString(v), '}'), ${a.value}), ',')`),
      lit(']}}}'),
    ];
  return [lit(`${head}{"stringValue":`), jsonText(a.value), lit('}}')];
}

/** A HEC field: flat, every value a string (an array of strings stays one: HEC takes multi-valued fields). */
export const hecField = (a: Attribute): Part[] => [
  lit(`${JSON.stringify(a.key)}:`),
  a.type === 'strings' ? sql(`toJSONString(${a.value})`) : jsonText(a.type === 'int' ? `toString(${a.value})` : a.value),
];

/** Epoch milliseconds as OTLP's decimal nanoseconds (exact: text, no multiplication). */
export const nanos = (ms: string): Part => sql(`if(${ms} = 0, '0', concat(toString(${ms}), '000000'))`);

/** HEC `time` of an epoch-milliseconds expression: seconds with three decimals, written as text so it is never in scientific notation. */
export const hecTime = (ms: string): string => `concat(toString(intDiv(${ms}, 1000)), '.', leftPad(toString(${ms} % 1000), 3, '0'))`;

/** OTLP severity numbers and texts as they appear on the wire. */
export const SEVERITY = { info: 9, warn: 13, error: 17 } as const;
