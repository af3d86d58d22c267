import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * A fastify request as the web-standard Request a fetch-style handler (the MCP SDK's) takes, without its body: the
 * caller hands the handler the body fastify parsed (the SDK's `parsedBody`), which it reads instead of the request's,
 * so the body is neither serialised again nor parsed twice. `replaced` holds headers the handler is to see instead (lower case).
 */
export function toWebRequest(request: FastifyRequest, replaced: Record<string, string> = {}): Request {
  const headers = new Headers(replaced);
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || Object.hasOwn(replaced, name)) continue;
    if (typeof value === 'string') headers.append(name, value);
    else for (const v of value) headers.append(name, v);
  }
  // A fixed origin, joined as text: the handler routes by path, a Host header it could not parse (`x:99999`) must not
  // throw here, and a path such as `//other/x` stays a path (resolved against a base URL it would name another host).
  return new Request(`http://localhost${request.url}`, { method: request.method, headers });
}

/**
 * Sends a web-standard Response through fastify. An event stream flows as it comes; any other answer (a JSON-RPC
 * message, already whole in memory) is sent in one write with its length, not streamed in chunks: on loopback each
 * write to the socket costs about as much as the rest of a small call.
 */
export async function sendWebResponse(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'content-length') reply.header(name, value);
  });
  if (!response.body) return reply.send();
  if (!/^\s*text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return reply.send(await response.text());
  return reply.send(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream));
}
