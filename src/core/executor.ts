import type { z } from 'zod';
import { targetGuidsOf } from './audit/audit-record.js';
import { AppError, EMPTY_NAME_REFUSED, toAppError, validationFailed, type FieldError } from './errors.js';
import { isGuid } from './ids.js';
import { bodyParams, pathParams, queryParams, successStatusOf, type AnyOperation, type OperationContext } from './operation.js';
import { ADMIN_ENTITLEMENT } from './repositories/organizations.js';

export { ADMIN_ENTITLEMENT };

/** Turns zod issues into the contract's `errors: [{path, message}]`, naming every field. */
export function zodFieldErrors(error: z.ZodError): FieldError[] {
  // zod measures the length of a value of the wrong type too (`name: []` is also "expected array to have >=1 items"):
  // past the type, no other fault of that field means anything.
  const mistyped = new Set(error.issues.filter((i) => i.code === 'invalid_type').map((i) => i.path.map(String).join('.')));
  // `.int()` also bounds a number to the safe integers: a value past the field's own bound as well
  // (`fromMs: -1e20`) would be told both, the first naming a bound the caller never set.
  const ownBound = new Set(
    error.issues.filter((i) => (i.code === 'too_small' || i.code === 'too_big') && i.origin !== 'int').map((i) => `${i.code} ${i.path.map(String).join('.')}`),
  );
  return error.issues.flatMap((issue): FieldError[] => {
    const base = issue.path.map(String).join('.');
    if (issue.code !== 'invalid_type' && mistyped.has(base)) return [];
    if ((issue.code === 'too_small' || issue.code === 'too_big') && issue.origin === 'int' && ownBound.has(`${issue.code} ${base}`)) return [];
    if (issue.code === 'unrecognized_keys') {
      // A key with no name (`?=`, `{"": 1}`) would be named by nothing: the message says what it is.
      return issue.keys.map((k) => ({ path: base ? `${base}.${k}` : k, message: k === '' ? EMPTY_NAME_REFUSED : 'unknown field' }));
    }
    // zod says only "Invalid key in record" of a map key it refuses: the key's own issues say why (too long, a prototype key).
    if (issue.code === 'invalid_key') return [{ path: base, message: issue.issues.map((i) => i.message).join('; ') || issue.message }];
    return [{ path: base, message: issue.message }];
  });
}

/**
 * Runs one operation for one caller. This is the single place where entitlement,
 * capability, id format and input validation are decided, so REST and MCP cannot
 * disagree. Returns the handler's result; throws AppError.
 *
 * `refusal` is what a surface found wrong with the request before it could make the
 * input whole (REST: a body that is not JSON, too large, or holds a field no parameter
 * takes): it is thrown where the input's own validation would fail, after the
 * entitlement, capability and id checks, so a caller gets the answer the other surface
 * gives, and the refusal is audited like any other.
 */
export async function executeOperation(
  op: AnyOperation,
  ctx: OperationContext,
  rawInput: Record<string, unknown>,
  refusal: AppError | null = null,
): Promise<unknown> {
  if (op.annotations.readOnlyHint) return run(op, ctx, rawInput, refusal);
  // Every other operation leaves one audit record, whatever its outcome, before it is answered.
  let result: unknown;
  try {
    result = await run(op, ctx, rawInput, refusal);
  } catch (err) {
    const appError = toAppError(err);
    await audit(ctx, op, rawInput, null, appError.code, appError.status);
    throw err;
  }
  await audit(ctx, op, rawInput, result, 'ok', successStatusOf(op, result));
  return result;
}

/** Writes the audit record of one operation call; resolves once it is spooled (as durable as a call-log row). */
async function audit(ctx: OperationContext, op: AnyOperation, input: Record<string, unknown>, result: unknown, outcome: string, status: number): Promise<void> {
  await ctx.services.audit.write([
    {
      organizationGuid: ctx.principal.organizationGuid,
      createdAt: Date.now(),
      actorUserGuid: ctx.principal.userGuid,
      actorTokenPrefix: ctx.principal.tokenPrefix,
      origin: ctx.origin,
      operation: op.name,
      targetGuids: targetGuidsOf(input, result),
      outcome,
      status,
      request: input,
    },
  ]);
}

async function run(op: AnyOperation, ctx: OperationContext, rawInput: Record<string, unknown>, refusal: AppError | null): Promise<unknown> {
  const { principal } = ctx;
  if (!principal.entitled) {
    throw new AppError(
      'entitlement_required',
      `This workspace does not hold the entitlement ${ADMIN_ENTITLEMENT}: the administration interface is not enabled for it.`,
      {
        entitlement: ADMIN_ENTITLEMENT,
      },
    );
  }
  if (op.capability && !principal.capabilities.has(op.capability)) {
    throw new AppError('missing_capability', `${op.name} requires the capability ${op.capability}, which your role does not grant.`, {
      capability: op.capability,
    });
  }
  // A path id that is not of our id format can name no resource: 404, like any unknown id.
  for (const param of pathParams(op)) {
    const value = rawInput[param];
    if (typeof value === 'string' && !isGuid(value)) {
      throw new AppError('not_found', `No resource has the id ${JSON.stringify(value.slice(0, 64))}.`);
    }
  }
  const unfit = unstorableFields(rawInput);
  if (unfit.length > 0) throw validationFailed(unfit);
  // An id field in the body that is not of our id format names nothing either: 404, as in the path.
  const malformed = malformedIdField(op, rawInput);
  if (malformed) throw new AppError('not_found', `No resource has the id ${JSON.stringify(malformed.slice(0, 64))}.`);
  if (refusal) throw refusal;
  const parsed = op.input.safeParse(rawInput);
  if (!parsed.success) throw validationFailed(zodFieldErrors(parsed.error));
  const result = await op.handler(ctx, parsed.data);
  // Hot-path caches (the gateway's) drop what they hold for this workspace at once.
  if (!op.annotations.readOnlyHint) ctx.services.configChanges?.changed(principal.organizationGuid);
  return result;
}

/** C0 and C1 control characters but tab, line feed and carriage return: they belong in no name, filter, header or note. */
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0001-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** Why a text can't be stored as sent, if it can't: Postgres text holds no NUL, and a lone surrogate would be stored as U+FFFD. */
function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain a NUL character';
  if (CONTROL_CHARACTER.test(text)) return 'must not contain control characters (other than tab, line feed and carriage return)';
  if (!text.isWellFormed()) return 'must be well-formed Unicode (it holds a lone surrogate)';
  return null;
}

/**
 * Strings of the input (map keys included) no operation can store as sent: every
 * operation refuses them alike, with a 400 naming the field, whatever the surface.
 */
function unstorableFields(input: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  const visit = (value: unknown, path: string, depth: number): void => {
    if (errors.length >= 20 || depth > 32) return;
    if (typeof value === 'string') {
      const why = unstorableText(value);
      if (why) errors.push({ path, message: why });
    } else if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}.${i}`, depth + 1));
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const at = path ? `${path}.${k}` : k;
        const why = unstorableText(k);
        if (why) errors.push({ path: at, message: `key ${why}` });
        else visit(v, at, depth + 1);
      }
    }
  };
  visit(input, '', 0);
  return errors;
}

/**
 * The first value of an id field outside the path (`...Guid`) that is not
 * of the service's id format, if any: in the body, or in the query of a DELETE
 * (delete_role's reassignToRoleGuid). The filters of a GET keep their own answer (a
 * 400 naming the filter, like any bad filter).
 */
function malformedIdField(op: AnyOperation, input: Record<string, unknown>): string | undefined {
  const checked = new Set(op.method === 'GET' ? [] : [...bodyParams(op), ...queryParams(op)]);
  for (const [key, value] of Object.entries(input)) {
    if (!checked.has(key)) continue;
    if (/Guid$/.test(key) && typeof value === 'string' && !isGuid(value)) return value;
  }
  return undefined;
}
