import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** A fastify request as the web-standard Request a fetch-style handler (the MCP SDK's) takes; the body is the parsed JSON, sent again as text. */
export function toWebRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && request.body !== undefined;
  // A fixed origin: the handler routes by path, and a Host header it could not parse (`x:99999`) must not throw here.
  return new Request(new URL(request.url, 'http://localhost'), {
    method: request.method,
    headers,
    ...(hasBody ? { body: JSON.stringify(request.body) } : {}),
  });
}

/** Sends a web-standard Response through fastify: status, headers, and the body as a stream (an SSE answer flows as it comes). */
export function sendWebResponse(reply: FastifyReply, response: Response): FastifyReply {
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'content-length') reply.header(name, value);
  });
  if (!response.body) return reply.send();
  return reply.send(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream));
}
