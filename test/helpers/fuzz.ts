import fc from 'fast-check';
import type { z } from 'zod';
import { codeToStatus, ERROR_CODES } from '../../src/core/errors.js';
import { pathParams, queryParams, type AnyOperation } from '../../src/core/operation.js';

/**
 * What the fuzz suites share: the seed and run count, JSON text that JSON.stringify
 * cannot write, the shape of an operation's input read from its zod schema, bad
 * values derived from that shape, and the check that an answer is a contract problem.
 */

/** Fixed, so CI runs the same inputs every time; FUZZ_SEED replays another run, FUZZ_RUNS makes it larger (npm run fuzz). */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 17);
export const fuzzRuns = (defaultRuns: number): number => Number(process.env.FUZZ_RUNS) || defaultRuns;
export const fuzzParams = (defaultRuns: number): fc.Parameters<unknown> => ({ seed: FUZZ_SEED, numRuns: fuzzRuns(defaultRuns) });

/** A piece of JSON text written as is: nesting 100,000 deep, `1e400`, a 5,000-digit number. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** Stands for bytes that are not UTF-8 until the request is written (a JS string cannot hold them). */
export const INVALID_UTF8_MARK = '\uE000invalid-utf8\uE000';
const INVALID_UTF8_SEQUENCES = [[0xc3, 0x28], [0xff], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xe2, 0x82]];

/** JSON text of a value that may hold RawJson parts and own `__proto__` keys. */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Text as a query string or a path carries it. */
export const toText = (value: unknown): string => (typeof value === 'string' ? value : toJsonText(value));

/** The request bytes, with every INVALID_UTF8_MARK replaced by a byte sequence that is not UTF-8. */
export function withInvalidUtf8(text: string): Buffer {
  const parts = text.split(INVALID_UTF8_MARK);
  const out: Buffer[] = [];
  parts.forEach((part, i) => {
    out.push(Buffer.from(part));
    if (i < parts.length - 1) out.push(Buffer.from(INVALID_UTF8_SEQUENCES[i % INVALID_UTF8_SEQUENCES.length]!));
  });
  return Buffer.concat(out);
}

/** An object with one more own key, even `__proto__` (an assignment would set the prototype instead). */
export function withOwnKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...target };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** The shape of one field of an operation's input, read from its zod schema. */
export interface FieldShape {
  type: string;
  optional: boolean;
  nullable: boolean;
  /** Objects: unknown keys are refused (a strictObject), not stripped. */
  strict?: boolean;
  maxLength?: number;
  format?: string;
  min?: number;
  max?: number;
  int?: boolean;
  options?: string[];
  shape?: Record<string, FieldShape>;
  element?: FieldShape;
  value?: FieldShape;
}

export function shapeOf(schema: z.ZodType): FieldShape {
  let s = schema as z.ZodType & Record<string, any>;
  let optional = false;
  let nullable = false;
  for (;;) {
    const def = s.def as Record<string, any>;
    if (def.type === 'optional' || def.type === 'default' || def.type === 'prefault') optional = true;
    else if (def.type === 'nullable') nullable = true;
    else if (def.type !== 'pipe') break;
    s = def.type === 'pipe' ? def.in : def.innerType;
  }
  const def = s.def as Record<string, any>;
  const base: FieldShape = { type: def.type, optional, nullable };
  switch (def.type) {
    case 'string':
      return { ...base, maxLength: s.maxLength ?? undefined, format: s.format ?? undefined };
    case 'number':
      return { ...base, min: s.minValue ?? undefined, max: s.maxValue ?? undefined, int: s.isInt };
    case 'enum':
      return { ...base, options: [...s.options] };
    case 'record':
      return { ...base, value: shapeOf(def.valueType) };
    case 'array':
      return { ...base, element: shapeOf(def.element) };
    case 'object':
      return {
        ...base,
        strict: (def.catchall as z.ZodType | undefined)?.def.type === 'never',
        shape: Object.fromEntries(Object.entries(s.shape as Record<string, z.ZodType>).map(([k, v]) => [k, shapeOf(v)])),
      };
    default:
      return base;
  }
}

export const inputShape = (op: AnyOperation): Record<string, FieldShape> =>
  Object.fromEntries(Object.entries(op.input.shape as Record<string, z.ZodType>).map(([k, v]) => [k, shapeOf(v)]));

/** Fields that hold ids: the path's, and `...Guid`/`...Guids` anywhere else. */
export const isIdField = (op: AnyOperation, name: string): boolean => pathParams(op).includes(name) || /Guids?$/.test(name);

/** Stands for a resource no id names (a well-formed id of nothing). */
export const UNKNOWN_GUID = '00000000-0000-7000-8000-000000000000';

/** A value the field accepts, for the fields a mutation leaves alone; ids come from `ids` (real resources) when known. */
export function plausible(name: string, field: FieldShape, ids: Record<string, string>): unknown {
  if (/Guid$/.test(name) || name === 'id') return ids[name] ?? UNKNOWN_GUID;
  if (name === 'teamGuids') return ids.teamGuid ?? '';
  switch (field.type) {
    case 'string':
      if (field.format === 'email' || name === 'email') return 'fuzz-invitee@example.test';
      if (/url$/i.test(name)) return 'http://127.0.0.1:1/mcp';
      return 'fuzz name';
    case 'enum':
      return field.options![0];
    case 'number':
      return Math.max(field.min ?? 0, 1);
    case 'boolean':
      return false;
    case 'record':
      return {};
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries(
        Object.entries(field.shape!)
          .filter(([, f]) => !f.optional)
          .map(([k, f]) => [k, plausible(k, f, ids)]),
      );
    default:
      return 'fuzz';
  }
}

/** The input every mutation starts from: each required field with a value it accepts. */
export function baseInput(op: AnyOperation, ids: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(inputShape(op))
      .filter(([k, f]) => !f.optional || pathParams(op).includes(k))
      .map(([k, f]) => [k, plausible(k, f, ids)]),
  );
}

/**
 * One change that makes an input bad. `path` is the field (dotted inside an object);
 * request-level kinds (`invalidUtf8`, `invalidUtf8Query`, `duplicateQuery`, `rawPath`,
 * `bodyNotObject`, `wrongContentType`, `argumentsNotObject`) change how the request is
 * written rather than a value.
 */
export interface Mutation {
  kind: string;
  path: string;
  value?: unknown;
}

/** Text with a character no stored text may hold: NUL, another control character, a lone surrogate. */
const unstorableText = fc
  .tuple(
    fc.string({ maxLength: 8 }),
    fc.constantFrom('\u0000', '\u0001', '\u0007', '\u001b[31m', '\u007f', '\u0085', '\u009b', '\ud800', '\udfff'),
    fc.string({ maxLength: 8 }),
  )
  .map(([a, bad, b]) => `${a}${bad}${b}`);

/** Strings no id field accepts as an id (a 404, or a 400 for a filter). */
const wrongFormIds = fc.oneof(
  fc.constantFrom('12', '   ', 'not-an-id', "' OR 1=1 --", '../..', '{}', 'null', '0', '-1', 'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ'),
  fc.uuid().map((u) => `${u}0`),
  fc.uuid().map((u) => u.slice(1)),
  fc.uuid().map((u) => `{${u}}`),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => ` ${u}`),
  fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/^[0-9a-f-]{36}$/i.test(s)),
);

/** Nested arrays (no field of any operation takes one), deep enough to overflow a recursive walk. */
const deepArray = fc.constantFrom(40, 200, 5_000, 100_000).map((n) => new RawJson('['.repeat(n) + ']'.repeat(n)));
const deepObject = fc.constantFrom(40, 200, 5_000, 50_000).map((n) => new RawJson('{"a":'.repeat(n) + '1' + '}'.repeat(n)));

/** Longer than the field's maximum; one run in twenty past the 1 MiB body limit. */
const tooLong = (field: FieldShape) =>
  fc.oneof(
    { weight: 19, arbitrary: fc.integer({ min: 1, max: 64 }).map((extra) => 'x'.repeat((field.maxLength ?? 20_000) + extra)) },
    { weight: 1, arbitrary: fc.constant('x'.repeat(1024 * 1024 + 1)) },
  );

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/** JSON values that are not of the field's type (null only where the field refuses null). */
function wrongTypes(field: FieldShape): fc.Arbitrary<unknown> {
  const all: unknown[] = ['x', 1, -1.5, true, false, [], {}, [[1]], { a: 1 }, null];
  const fits = (v: unknown): boolean => {
    if (v === null) return field.nullable;
    switch (field.type) {
      case 'string':
        return typeof v === 'string' && field.format !== 'email';
      case 'enum':
        return false;
      case 'number':
        return typeof v === 'number' && (!field.int || Number.isInteger(v)) && v >= (field.min ?? -Infinity) && v <= (field.max ?? Infinity);
      case 'boolean':
        return typeof v === 'boolean';
      case 'record':
        return !!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
      case 'array':
        return Array.isArray(v) && v.length === 0;
      case 'object':
        // Whether an object fits depends on its keys; the nested mutations cover those.
        return !!v && typeof v === 'object' && !Array.isArray(v);
      default:
        return true;
    }
  };
  return fc.constantFrom(...all.filter((v) => !fits(v)));
}

/** Numbers out of range, not whole where a whole one is asked, or beyond any double (JSON text only). */
function badNumbers(field: FieldShape, asText: boolean): fc.Arbitrary<unknown> {
  const values: unknown[] = [];
  if (field.min !== undefined) values.push(field.min - 1);
  if (field.max !== undefined && field.max < Number.MAX_SAFE_INTEGER) values.push(field.max + 1);
  if (field.int) values.push(1.5);
  values.push(new RawJson('1e400'), new RawJson('-1e400'), new RawJson('9'.repeat(5000)));
  if (asText) values.push('abc', '', '0x10', 'Infinity', 'NaN', ' ');
  return fc.constantFrom(...values.map((v) => (asText && v instanceof RawJson ? v.text : v)));
}

/**
 * The bad values of one field. `asText`: the field travels in a query string, where
 * only text exists (a wrong JSON type is not expressible).
 */
export function badValues(name: string, field: FieldShape, opts: { isId: boolean; asText: boolean; inPath: boolean }): fc.Arbitrary<Mutation>[] {
  const at = (kind: string, arb: fc.Arbitrary<unknown>) => arb.map((value): Mutation => ({ kind, path: name, value }));
  const out: fc.Arbitrary<Mutation>[] = [];
  if (opts.isId) out.push(at('wrongFormId', wrongFormIds));
  if (opts.inPath) {
    out.push(at('unstorableText', unstorableText));
    return out;
  }
  const textual = field.type === 'string' || field.type === 'enum';
  if (textual) out.push(at('unstorableText', unstorableText));
  if (field.type === 'string' && (field.maxLength !== undefined || !opts.asText)) out.push(at('tooLong', tooLong(field)));
  if (field.type === 'enum') out.push(at('notAnOption', fc.constantFrom('not-an-option', field.options![0]!.toUpperCase() + '!', ` ${field.options![0]}`)));
  if (field.type === 'number') out.push(at('badNumber', badNumbers(field, opts.asText)));
  if (field.type === 'boolean' && opts.asText) out.push(at('badBoolean', fc.constantFrom('yes', '1', 'TRUE', '', 'null')));
  if (opts.asText) return out;
  out.push(at('wrongType', wrongTypes(field)), at('deepNesting', deepArray));
  if (field.type === 'record') {
    out.push(
      at(
        'prototypeKey',
        fc.constantFrom(...PROTOTYPE_KEYS).map((k) => withOwnKey({}, k, { x: 'y' })),
      ),
      at(
        'unstorableKey',
        unstorableText.map((k) => ({ [k]: 'v' })),
      ),
      at(
        'wrongValueType',
        wrongTypes(field.value!).map((v) => ({ key: v })),
      ),
    );
  }
  if (field.type === 'object') {
    out.push(
      at(
        'unknownNestedKey',
        fc.constantFrom('bogus', ...PROTOTYPE_KEYS).map((k) => withOwnKey({}, k, 1)),
      ),
    );
    for (const [k, f] of Object.entries(field.shape!)) {
      for (const arb of badValues(k, f, { isId: false, asText: false, inPath: false })) {
        out.push(arb.map((m) => ({ ...m, path: `${name}.${m.path}` })));
      }
    }
  }
  if (field.type === 'array')
    out.push(
      at(
        'wrongElement',
        wrongTypes(field.element!).map((v) => [v]),
      ),
    );
  return out;
}

/** Every kind of bad input one operation can be sent on a surface. */
export function mutationsFor(op: AnyOperation, surface: 'rest' | 'mcp'): fc.Arbitrary<Mutation> {
  const shape = inputShape(op);
  const inPath = new Set(pathParams(op));
  const inQuery = new Set(queryParams(op));
  const hasBody = op.method !== 'GET' && op.method !== 'DELETE';
  const all: fc.Arbitrary<Mutation>[] = [];
  for (const [name, field] of Object.entries(shape)) {
    const rest = surface === 'rest';
    all.push(...badValues(name, field, { isId: isIdField(op, name), asText: rest && inQuery.has(name), inPath: rest && inPath.has(name) }));
  }
  // An unknown field, its name sometimes a prototype key; in a query string on REST for GET and DELETE.
  const extraName = fc.oneof(fc.constantFrom('bogusField', 'Name', 'guid', ...PROTOTYPE_KEYS), fc.stringMatching(/^[a-z][A-Za-z0-9_]{0,20}$/));
  all.push(
    fc
      .tuple(
        extraName.filter((k) => !(k in shape)),
        fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.constant(null), deepObject),
      )
      .map(([path, value]): Mutation => ({ kind: 'unknownField', path, value })),
  );
  if (surface === 'mcp' || hasBody) {
    const textFields = Object.entries(shape).filter(
      ([k, f]) => (f.type === 'string' || f.type === 'enum') && !(surface === 'rest' && (inPath.has(k) || inQuery.has(k))),
    );
    if (textFields.length > 0) all.push(fc.constantFrom(...textFields.map(([k]) => k)).map((path): Mutation => ({ kind: 'invalidUtf8', path })));
  }
  if (surface === 'rest') {
    if (!hasBody || inQuery.size > 0) {
      const names = inQuery.size > 0 ? [...inQuery] : ['bogusField'];
      all.push(fc.constantFrom(...names).map((path): Mutation => ({ kind: 'duplicateQuery', path })));
      all.push(fc.constantFrom(...names).map((path): Mutation => ({ kind: 'invalidUtf8Query', path })));
    }
    if (hasBody) {
      all.push(fc.constantFrom('[]', '"x"', '1', 'null', 'true', '[{}]').map((value): Mutation => ({ kind: 'bodyNotObject', path: 'body', value })));
      // A charset parameter is not among them: JSON is UTF-8 whatever it says, and bytes that are not UTF-8 are refused anyway.
      all.push(
        fc
          .constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/jsonx')
          .map((value): Mutation => ({ kind: 'wrongContentType', path: 'body', value })),
      );
    }
    // Dot segments (`..`, `%2e%2e`) are left out: a client resolves them into another URL, which is another operation's.
    if (inPath.size > 0) {
      all.push(
        fc
          .tuple(fc.constantFrom(...inPath), fc.constantFrom('%ZZ', '%C0%AF', '%FF', '%00', '%2F', '%2F..%2F', '%', '%E0%80%AF', '%ED%A0%80', '%20'))
          .map(([path, value]): Mutation => ({ kind: 'rawPath', path, value })),
      );
    }
  } else {
    all.push(fc.constantFrom(null, [], 'x', 1).map((value): Mutation => ({ kind: 'argumentsNotObject', path: '', value })));
  }
  return fc.oneof(...all);
}

/** Text that is odd but may be valid: it must be stored as sent or refused, never break anything. */
export const oddText = (maxLength: number | undefined): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.constantFrom(
      "'; drop table teams; --",
      "' OR '1'='1",
      '\\',
      "\\'",
      '"',
      '%',
      '_%_',
      '%s%n%x',
      '${7*7}',
      '{{7*7}}',
      '<script>alert(1)</script>',
      '\u202Eevil',
      '\u200B',
      '\uFEFF',
      '👩‍👩‍👧‍👦',
      'ｆｕｌｌ',
      'a\tb\nc\r',
      ' ',
      'null',
      '\\N',
      '\u00e9\u0301',
      '../../etc/passwd',
      'http://127.0.0.1:1/mcp',
    ),
    fc.constant('y'.repeat(maxLength ?? 1000)),
  );

/** One odd text in one text field (filters and map keys and values included); null when the operation has none. */
export function oddTextFor(op: AnyOperation): fc.Arbitrary<Mutation> | null {
  const all: fc.Arbitrary<Mutation>[] = [];
  const visit = (name: string, field: FieldShape, path: string): void => {
    if (field.type === 'string' && !isIdField(op, name)) all.push(oddText(field.maxLength).map((value) => ({ kind: 'oddText', path, value })));
    if (field.type === 'record') {
      all.push(fc.tuple(oddText(100), oddText(100)).map(([k, v]) => ({ kind: 'oddText', path, value: withOwnKey({}, k, v) })));
    }
    if (field.type === 'object') for (const [k, f] of Object.entries(field.shape!)) visit(k, f, `${path}.${k}`);
  };
  for (const [name, field] of Object.entries(inputShape(op))) visit(name, field, name);
  return all.length > 0 ? fc.oneof(...all) : null;
}

/** Sets a dotted path of an input to a value, copying the objects on the way. */
export function setPath(input: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const [head, ...rest] = path.split('.');
  if (rest.length === 0) return withOwnKey(input, head!, value);
  const inner = input[head!];
  const obj = inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {};
  return withOwnKey(input, head!, setPath(obj, rest.join('.'), value));
}

const CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** Why a problem object is not the contract's answer to bad input (null when it is). */
export function problemDefect(problem: any, status: number): string | null {
  if (status < 400 || status >= 500) return `status ${status}`;
  if (!problem || typeof problem !== 'object') return 'no problem object';
  if (!CODES.has(problem.code)) return `code ${JSON.stringify(problem.code)} is not the contract's`;
  if (problem.status !== status) return `problem.status ${problem.status} but HTTP ${status}`;
  if (codeToStatus(problem.code) !== status && !(problem.code === 'validation_failed' && (status === 414 || status === 431))) {
    return `code ${problem.code} with status ${status}`;
  }
  for (const k of ['type', 'title', 'detail']) if (typeof problem[k] !== 'string') return `problem.${k} missing`;
  if (problem.code === 'validation_failed') {
    const errors = problem.errors;
    if (!Array.isArray(errors) || errors.length === 0) return 'validation_failed without errors';
    if (!errors.every((e: any) => typeof e?.path === 'string' && typeof e?.message === 'string')) return 'errors not [{path, message}]';
  }
  return null;
}

/** Percent-encodes the UTF-8 bytes of a text (a lone surrogate becomes U+FFFD, as any client would send it). */
export const percentEncode = (text: string): string =>
  [...Buffer.from(text)]
    .map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');

/** A value for a failure message: long strings cut, so a 1 MiB counterexample stays readable. */
export function summarize(value: unknown): string {
  const text =
    typeof value === 'string'
      ? value
      : value instanceof RawJson
        ? value.text
        : (() => {
            try {
              return toJsonText(value);
            } catch {
              return String(value);
            }
          })();
  return text.length > 300 ? `${JSON.stringify(text.slice(0, 120))}… (${text.length} characters)` : text;
}

/** fc.assert with the suite's seed and runs, and a failure report that names seed and path and cuts long values. */
export async function assertProperty<T>(property: fc.IAsyncPropertyWithHooks<T> | fc.IAsyncProperty<T>, defaultRuns: number): Promise<void> {
  await fc.assert(property, {
    ...fuzzParams(defaultRuns),
    reporter: (details) => {
      if (!details.failed) return;
      throw new Error(
        `fuzz failure (FUZZ_SEED=${details.seed}, path ${details.counterexamplePath}) after ${details.numRuns} runs: ${String(
          details.errorInstance instanceof Error ? details.errorInstance.message : details.errorInstance,
        ).slice(0, 2000)}\ncounterexample: ${summarize(details.counterexample)}`,
      );
    },
  });
}
