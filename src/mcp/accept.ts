/**
 * What a 2025 host takes as an answer, by its Accept header. The transport asks every host
 * to accept both JSON and an event stream; the MCP surfaces serve one that accepts either
 * (or sends none, or any type) rather than refusing it (docs/gateway.md, Proxying), with
 * JSON when the host takes it and an event stream only when it asked for one.
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && /text\/event-stream/.test(accept);
}

export function acceptsJson(accept: string | undefined): boolean {
  return accept === undefined || /application\/json|application\/\*|\*\/\*/.test(accept);
}
