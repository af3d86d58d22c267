import type { z } from 'zod';
import type { RequestOrigin } from './audit/audit-record.js';
import type { AppError } from './errors.js';
import type { Services } from './services.js';

/** Who is calling, resolved from an access token once per request. */
export interface Principal {
  userGuid: string;
  emailAddress: string;
  displayName: string;
  organizationGuid: string;
  organizationName: string;
  organizationType: 'standard' | 'partner';
  roleGuid: string;
  roleName: string;
  capabilities: ReadonlySet<string>;
  /** Whether the workspace holds the `ff-svc-admin` entitlement. */
  entitled: boolean;
  tokenId: string;
  /** The token's non-secret prefix (svcp_<prefix>_...), recorded in the audit log. */
  tokenPrefix: string;
}

export interface OperationContext {
  services: Services;
  principal: Principal;
  /** The surface, address and user agent of the request (audit log). */
  origin: RequestOrigin;
  /** Why the request is refused before the operation runs (the admin rate limit, on MCP): its answer, as the operation's failure, audited by the executor like REST's. */
  refusedBeforehand?: Error;
  /** What is wrong with the input that its validation cannot see (a refused key in MCP arguments): executeOperation's refusal. */
  inputRefusal?: AppError;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface OperationAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * One operation of the admin interface, declared once. REST routes, MCP tools and
 * the OpenAPI document are all generated from these records; the handler knows
 * nothing of HTTP or MCP.
 */
export interface Operation<I extends z.ZodObject = z.ZodObject, O extends z.ZodType = z.ZodType> {
  /** The MCP tool name, exactly as in admin-api.md. */
  name: string;
  title: string;
  /** Written for a reader who sees only the tool list: becomes the MCP tool text and the OpenAPI summary. */
  description: string;
  method: HttpMethod;
  /** Path under P (`/api/v1/svc-admin`), with `:param` segments. */
  path: string;
  /** The capability the caller's role must grant; null means any authenticated caller. */
  capability: string | null;
  /** Path, query and body parameters flattened into one strict object. */
  input: I;
  /** Keys of `input` sent in the query string (GET and DELETE send every non-path key there). */
  queryKeys?: readonly string[];
  output: O;
  annotations: OperationAnnotations;
  /** HTTP status of a success; 200 unless given. */
  successStatus?: number | ((result: z.output<O>) => number);
  handler: (ctx: OperationContext, input: z.output<I>) => Promise<z.input<O>>;
}

/** Declares an operation; the identity function exists so TypeScript infers the handler's types. */
export function defineOperation<I extends z.ZodObject, O extends z.ZodType>(op: Operation<I, O>): Operation<I, O> {
  return op;
}

export type AnyOperation = Operation<z.ZodObject, z.ZodType>;

/** The HTTP status of an operation's success (200 unless it declares one). */
export function successStatusOf(op: AnyOperation, result: unknown): number {
  return typeof op.successStatus === 'function' ? op.successStatus(result as never) : (op.successStatus ?? 200);
}

/** The `:param` names of an operation's path, in order. */
export function pathParams(op: Pick<AnyOperation, 'path'>): string[] {
  return [...op.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
}

/** The keys a REST caller sends in the query string. */
export function queryParams(op: AnyOperation): string[] {
  const inPath = new Set(pathParams(op));
  if (op.method === 'GET' || op.method === 'DELETE') {
    return Object.keys(op.input.shape).filter((k) => !inPath.has(k));
  }
  return [...(op.queryKeys ?? [])];
}

/** The keys a REST caller sends in the JSON body. */
export function bodyParams(op: AnyOperation): string[] {
  if (op.method === 'GET' || op.method === 'DELETE') return [];
  const elsewhere = new Set([...pathParams(op), ...(op.queryKeys ?? [])]);
  return Object.keys(op.input.shape).filter((k) => !elsewhere.has(k));
}
