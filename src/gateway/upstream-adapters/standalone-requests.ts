import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { INPUT_METHODS } from '../bridge-input-requests.js';
import { ERRORS } from '../call-model.js';
import { openUpstreamStream, tellUpstream, type UpstreamRequest } from '../upstream-http.js';

/** A call's place among its session's calls in flight: `merged` hands it what it is asked, `leave` ends it. */
export interface StandaloneInbox {
  /** The call's messages with what the session's stream asks it among them; leaves once they are read to the end or let go. */
  merged(messages: AsyncIterable<JSONRPCMessage>): AsyncIterable<JSONRPCMessage>;
  /** The call is no longer in flight (its request failed). */
  leave(): void;
}

/** Messages handed to one call's stream from outside it, in order. */
class Inbox implements StandaloneInbox {
  private readonly queue: JSONRPCMessage[] = [];
  private arrived: PromiseWithResolvers<void> = Promise.withResolvers();

  constructor(readonly leave: () => void) {}

  merged(messages: AsyncIterable<JSONRPCMessage>): AsyncIterable<JSONRPCMessage> {
    return merged(messages, this);
  }

  push(message: JSONRPCMessage): void {
    this.queue.push(message);
    this.arrived.resolve();
  }

  take(): JSONRPCMessage | undefined {
    const message = this.queue.shift();
    if (this.queue.length === 0 && message !== undefined) this.arrived = Promise.withResolvers();
    return message;
  }

  get arrival(): Promise<void> {
    return this.arrived.promise;
  }
}

/** One pooled session's standalone stream, and the calls in flight in the session that may be handed what it asks. */
interface Followed {
  abort: AbortController;
  calls: Set<Inbox>;
  /** Settled once the stream is open (or could not be): what the upstream sends on it before then is lost. */
  open: Promise<void>;
}

/**
 * A 2025 upstream's requests on the standalone stream (GET) of a session a 2026-07-28
 * host's calls share (streamable-pooled.ts). Some servers ask the host outside the
 * call's own stream: server-everything's `get-roots-list` sends `roots/list` with no
 * related request, so it comes on the session's GET stream, which nobody read, and the
 * call waited out the upstream timeout. The stream of a pooled session whose host
 * declared what such a request needs (roots, sampling, elicitation) is followed while
 * the session lives; a request of the host's input methods on it goes to the session's
 * call in flight as if it came on that call's stream (the held-call bridge then asks
 * the host with `input_required`, and answers the upstream in the session), when there
 * is exactly one. With none, or several (which one asked cannot be told), and for any
 * other method, the upstream is answered with an error at once, never left waiting.
 * Notifications on the stream have no way to a host of revision 2026-07-28.
 */
export class StandaloneRequests {
  private readonly followed = new Map<string, Followed>();

  /** Whether a host of these capabilities could be asked anything, so that the session's stream is worth following. */
  static wanted(clientCapabilities: Record<string, unknown>): boolean {
    return clientCapabilities.roots !== undefined || clientCapabilities.sampling !== undefined || clientCapabilities.elicitation !== undefined;
  }

  /**
   * Follows the session `key`'s standalone stream (once), until `stop(key)`; `session`
   * sends answers in the session. Resolves once the stream is open: a server drops
   * what it would send on a stream nobody holds, so a call waits for it.
   */
  follow(key: string, session: () => UpstreamRequest): Promise<void> {
    const known = this.followed.get(key);
    if (known) return known.open;
    const opened = Promise.withResolvers<void>();
    const followed: Followed = { abort: new AbortController(), calls: new Set(), open: opened.promise };
    this.followed.set(key, followed);
    void this.read(key, followed, session, opened.resolve);
    return followed.open;
  }

  /** Stops following the session `key` (it ended or was forgotten). */
  stop(key: string): void {
    this.followed.get(key)?.abort.abort();
    this.followed.delete(key);
  }

  /** Ends every stream followed (the process is closing). */
  close(): void {
    for (const key of [...this.followed.keys()]) this.stop(key);
  }

  /**
   * Makes a call one of the session `key`'s calls in flight, before its request goes
   * out (the upstream may ask before the call's own stream has begun): what the
   * session's stream asks while it is the only one is handed to it. Null when the
   * session's stream is not followed.
   */
  join(key: string): StandaloneInbox | null {
    const followed = this.followed.get(key);
    if (!followed) return null;
    const inbox = new Inbox(() => followed.calls.delete(inbox));
    followed.calls.add(inbox);
    return inbox;
  }

  private async read(key: string, followed: Followed, session: () => UpstreamRequest, opened: () => void): Promise<void> {
    try {
      const messages = await openUpstreamStream({ ...session(), signal: followed.abort.signal, timeoutMs: undefined });
      opened();
      if (!messages) return;
      for await (const message of messages) {
        const request = message as { id?: RequestId; method?: string };
        if (request.method === undefined || request.id === undefined) continue;
        const [call, ...others] = followed.calls;
        if (call && others.length === 0 && INPUT_METHODS.has(request.method)) call.push(message);
        else if (request.method === 'ping') void tellUpstream(session(), { jsonrpc: '2.0', id: request.id, result: {} } as JSONRPCMessage);
        else void tellUpstream(session(), refusal(request as { id: RequestId; method: string }, call !== undefined));
      }
    } catch {
      // The stream ended (the session did, or the upstream closed it): the requests of later calls come on their own streams.
    } finally {
      opened();
      if (this.followed.get(key) === followed) this.followed.delete(key);
    }
  }
}

/** The answer to a request no call can take, so that the upstream does not wait for it. */
function refusal(request: { id: RequestId; method: string }, busy: boolean): JSONRPCMessage {
  const message = !INPUT_METHODS.has(request.method)
    ? `The gateway cannot relay ${request.method} to a host of protocol revision 2026-07-28.`
    : busy
      ? `The gateway cannot tell which of the host's requests in flight ${request.method} belongs to: send it on the request's own stream.`
      : `No request of the host is in flight to ask ${request.method} in: a host of protocol revision 2026-07-28 is asked within a request.`;
  return { jsonrpc: '2.0', id: request.id, error: { code: ERRORS.methodNotFound, message } } as JSONRPCMessage;
}

/** A call's messages with what its inbox is handed among them; it leaves once they are read to the end or let go. */
async function* merged(messages: AsyncIterable<JSONRPCMessage>, inbox: Inbox): AsyncGenerator<JSONRPCMessage> {
  const it = messages[Symbol.asyncIterator]();
  let next = it.next();
  try {
    for (;;) {
      const handed = inbox.take();
      if (handed) {
        yield handed;
        continue;
      }
      const step = await Promise.race([next, inbox.arrival.then(() => null)]);
      if (step === null) continue;
      if (step.done) return;
      yield step.value;
      next = it.next();
    }
  } finally {
    inbox.leave();
    void it.return?.()?.catch(() => undefined);
  }
}
