import { randomBytes } from 'node:crypto';

/**
 * What an upstream may need from a host, in both revisions: MCP 2025 sends it as
 * server-to-client requests, 2026-07-28 embeds the same requests in an
 * `input_required` result. The rules shared by both bridging directions live here:
 * which methods, which host capability each needs, and the one shape difference.
 */
export const INPUT_METHODS: ReadonlySet<string> = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

/** An embedded input request (2026-07-28) or the method and params of a server-to-client request (2025). */
export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/**
 * Why a host cannot be asked `request` (the capability it did not declare), or null
 * when it can. An elicitation's mode must be one the host declared: `elicitation: {}`
 * means form only, as the 2025-11-25 revision says.
 */
export function missingCapability(request: InputRequest, capabilities: Record<string, unknown>): string | null {
  switch (request.method) {
    case 'elicitation/create': {
      const elicitation = capabilities.elicitation as Record<string, unknown> | undefined;
      if (!elicitation || typeof elicitation !== 'object') return 'elicitation';
      const mode = request.params?.mode === 'url' ? 'url' : 'form';
      const modes = 'form' in elicitation || 'url' in elicitation ? elicitation : { form: {} };
      return mode in modes ? null : `elicitation (${mode} mode)`;
    }
    case 'sampling/createMessage':
      return capabilities.sampling ? null : 'sampling';
    case 'roots/list':
      return capabilities.roots ? null : 'roots';
    default:
      return `${request.method} (not an input request either revision defines)`;
  }
}

/** A 2026-07-28 input request as a 2025 host takes it: URL elicitation carries an `elicitationId` there. */
export function toServerRequest(request: InputRequest): InputRequest {
  if (request.method !== 'elicitation/create' || request.params?.mode !== 'url' || typeof request.params.elicitationId === 'string') return request;
  return { ...request, params: { ...request.params, elicitationId: randomBytes(12).toString('hex') } };
}

/** A 2025 server-to-client request as a 2026-07-28 input request: URL elicitation has no `elicitationId` there. */
export function toInputRequest(request: InputRequest): InputRequest {
  const params = request.params;
  if (request.method !== 'elicitation/create' || !params || !('elicitationId' in params)) return { method: request.method, ...(params ? { params } : {}) };
  const { elicitationId: _dropped, ...rest } = params;
  void _dropped;
  return { method: request.method, params: rest };
}

/** Whether a result is 2026-07-28's `input_required`. */
export const isInputRequired = (result: unknown): result is { resultType: 'input_required'; inputRequests?: Record<string, unknown>; requestState?: string } =>
  typeof result === 'object' && result !== null && (result as { resultType?: unknown }).resultType === 'input_required';
