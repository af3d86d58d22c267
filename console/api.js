// The console calls the REST interface only, by operation name: method, path and
// parameter places come from the service's own OpenAPI document, which is generated
// from the operation registry. No path is written here.
const PREFIX = '/api/v1/svc-admin';
const TOKEN_KEY = 'svc-admin-token';

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.problem = problem ?? {};
  }
}

let operations = null;
const listeners = new Set();

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Called with no argument when a request comes back 401: the console returns to sign-in. */
export const onUnauthenticated = (fn) => listeners.add(fn);

/** Operations that may change what the signed-in caller may do (their own role, or the role's grants). */
const CHANGES_RIGHTS = new Set(['set_user_role', 'modify_role', 'delete_role']);
const rightsListeners = new Set();
/** Called when the caller's rights may have changed: such an operation succeeded, or a call was refused for a capability. */
export const onRightsMayHaveChanged = (fn) => rightsListeners.add(fn);

async function loadOperations() {
  if (operations) return operations;
  const res = await fetch(`${PREFIX}/openapi.json`);
  const doc = await res.json();
  const ops = new Map();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      ops.set(op.operationId, {
        method: method.toUpperCase(),
        path,
        capability: op['x-capability'] ?? null,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        hasBody: Boolean(op.requestBody),
      });
    }
  }
  operations = ops;
  return ops;
}

/** The capability an operation needs, or null. */
export async function capabilityOf(name) {
  return (await loadOperations()).get(name)?.capability ?? null;
}

/** The same, at once: undefined until the document is loaded (it is before any page shows: signing in loads it). */
export function loadedCapabilityOf(name) {
  return operations ? (operations.get(name)?.capability ?? null) : undefined;
}

export async function hasOperation(name) {
  return (await loadOperations()).has(name);
}

/** Calls one operation with its flattened input, as the MCP tool of the same name would take it. */
export async function call(name, input = {}) {
  const op = (await loadOperations()).get(name);
  if (!op) throw new ApiError(404, { detail: `This service does not offer ${name}.`, code: 'not_found' });
  const rest = { ...input };
  let path = op.path;
  for (const p of op.pathParams) {
    path = path.replace(`{${p}}`, encodeURIComponent(String(rest[p] ?? '')));
    delete rest[p];
  }
  const query = new URLSearchParams();
  for (const q of op.queryParams) {
    if (rest[q] !== undefined && rest[q] !== '') query.set(q, String(rest[q]));
    delete rest[q];
  }
  const headers = { authorization: `Bearer ${token.get() ?? ''}` };
  let body;
  if (op.hasBody) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(rest);
  }
  let res;
  try {
    res = await fetch(path + (query.size ? `?${query}` : ''), { method: op.method, headers, body });
  } catch {
    throw new ApiError(0, { detail: 'The service cannot be reached: check the connection, then try again.', code: 'unreachable' });
  }
  const data = parsed(await res.text());
  if (res.status === 401) {
    token.clear();
    for (const fn of listeners) fn();
  }
  if (data === undefined)
    throw new ApiError(res.status, {
      detail: `The service answered HTTP ${res.status} with something other than its JSON (a proxy in between?): try again shortly.`,
    });
  if (!res.ok) {
    if (data?.code === 'missing_capability') for (const fn of rightsListeners) fn();
    throw new ApiError(res.status, data);
  }
  if (CHANGES_RIGHTS.has(name)) for (const fn of rightsListeners) fn();
  return data;
}

/** A response body as JSON: null when empty, undefined when it is not JSON (a proxy's HTML error page, say). */
function parsed(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
