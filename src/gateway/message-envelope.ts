/**
 * The ids a gateway accepts on a host's message. MCP ids are strings or integers,
 * never null, and the answer carries the id back for the host to match: a number
 * JSON cannot carry back exactly (a fraction, a 5,000-digit integer that JSON.parse
 * turns into Infinity, anything past 2^53) would come back as another id, or as
 * `null`. Such a message is refused as an invalid request (-32600, id null, HTTP
 * 400) before anything is served or forwarded.
 */
export function requestIdProblem(message: object): string | null {
  if (!('id' in message)) return null;
  const id = (message as { id: unknown }).id;
  if (typeof id === 'string') return null;
  if (typeof id === 'number') {
    if (Number.isSafeInteger(id)) return null;
    return Number.isInteger(id)
      ? 'The id is an integer too large to be answered exactly: use a string or an integer between -(2^53 - 1) and 2^53 - 1.'
      : 'The id must be a string or an integer, not a fraction or a number JSON cannot carry back.';
  }
  return `The id must be a string or an integer, not ${id === null ? 'null' : Array.isArray(id) ? 'an array' : `a ${typeof id}`}.`;
}
