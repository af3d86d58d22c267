import type { z } from 'zod';
import { targetGuidsOf } from './audit/audit-record.js';
import { AppError, toAppError, validationFailed, type FieldError } from './errors.js';
import { isGuid } from './ids.js';
import { bodyParams, pathParams, successStatusOf, type AnyOperation, type OperationContext } from './operation.js';

export const ADMIN_ENTITLEMENT = 'ff-svc-admin';

/** Turns zod issues into the contract's `errors: [{path, message}]`, naming every field. */
export function zodFieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((issue): FieldError[] => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ path: base ? `${base}.${k}` : k, message: 'unknown field' }));
    }
    return [{ path: base, message: issue.message }];
  });
}

/**
 * Runs one operation for one caller. This is the single place where entitlement,
 * capability, id format and input validation are decided, so REST and MCP cannot
 * disagree. Returns the handler's result; throws AppError.
 */
export async function executeOperation(op: AnyOperation, ctx: OperationContext, rawInput: Record<string, unknown>): Promise<unknown> {
  if (op.annotations.readOnlyHint) return run(op, ctx, rawInput);
  // Every other operation leaves one audit record, whatever its outcome, before it is answered.
  let result: unknown;
  try {
    result = await run(op, ctx, rawInput);
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

async function run(op: AnyOperation, ctx: OperationContext, rawInput: Record<string, unknown>): Promise<unknown> {
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
  const parsed = op.input.safeParse(rawInput);
  if (!parsed.success) throw validationFailed(zodFieldErrors(parsed.error));
  const result = await op.handler(ctx, parsed.data);
  // Hot-path caches (the gateway's) drop what they hold for this workspace at once.
  if (!op.annotations.readOnlyHint) ctx.services.configChanges?.changed(principal.organizationGuid);
  return result;
}

/** A NUL character in any string of the input: Postgres text cannot hold one, so every operation refuses it alike, naming the field. */
function unstorableFields(input: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  const visit = (value: unknown, path: string, depth: number): void => {
    if (errors.length >= 20 || depth > 32) return;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) errors.push({ path, message: 'must not contain a NUL character' });
    } else if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${path}.${i}`, depth + 1));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) visit(v, path ? `${path}.${k}` : k, depth + 1);
  };
  for (const [key, value] of Object.entries(input)) visit(value, key, 0);
  return errors;
}

/**
 * The first value of an id field of the body (`...Guid`, `...Guids`) that is not of
 * the service's id format, if any. Query filters keep their own answer (a 400 naming
 * the filter, like any bad filter).
 */
function malformedIdField(op: AnyOperation, input: Record<string, unknown>): string | undefined {
  const inBody = new Set(bodyParams(op));
  for (const [key, value] of Object.entries(input)) {
    if (!inBody.has(key)) continue;
    const ids = /Guid$/.test(key) ? [value] : /Guids$/.test(key) && Array.isArray(value) ? value : [];
    const bad = ids.find((id) => typeof id === 'string' && !isGuid(id));
    if (bad !== undefined) return bad as string;
  }
  return undefined;
}
