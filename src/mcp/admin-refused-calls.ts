import { validationFailed } from '../core/errors.js';
import { executeOperation } from '../core/executor.js';
import type { AnyOperation, OperationContext } from '../core/operation.js';
import type { RefusedMessage } from './admin-batch.js';
import { isPlainObject } from './request-params.js';

/**
 * Audits the tools/call messages of a request that the endpoint answers -32602 before the
 * SDK sees them (screenMessages: arguments null, an array or a string). Such a call of a
 * known operation is that operation refused after authentication (contract 8.4), as REST's
 * body that is not an object is: the executor decides it (entitlement, capability, then the
 * refusal as validation_failed) and writes its record. The caller's answer stays the
 * JSON-RPC error. One message, or each message of a batch.
 */
export async function auditRefusedToolCalls(operations: readonly AnyOperation[], refused: readonly RefusedMessage[], ctx: OperationContext): Promise<void> {
  for (const { message, answer } of refused) {
    if (!isPlainObject(message) || message.method !== 'tools/call' || !isPlainObject(message.params)) continue;
    const op = operations.find((o) => o.name === (message.params as Record<string, unknown>).name);
    if (!op) continue;
    await executeOperation(op, ctx, {}, validationFailed([{ path: 'arguments', message: answer.error.message }])).catch(() => undefined);
  }
}
