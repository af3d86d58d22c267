import type { z } from 'zod';
import { AppError, validationFailed, type FieldError } from './errors.js';
import { isGuid } from './ids.js';
import { pathParams, type AnyOperation, type OperationContext } from './operation.js';

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
  const parsed = op.input.safeParse(rawInput);
  if (!parsed.success) throw validationFailed(zodFieldErrors(parsed.error));
  const result = await op.handler(ctx, parsed.data);
  // Hot-path caches (the gateway's) drop what they hold for this workspace at once.
  if (!op.annotations.readOnlyHint) ctx.services.configChanges?.changed(principal.organizationGuid);
  return result;
}
