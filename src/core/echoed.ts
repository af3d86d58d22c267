import { truncateUtf8 } from './logs/call-log-row.js';

/** The most of a caller's text (a tool's name, a URI) an error repeats, in bytes of UTF-8. */
export const MAX_ECHOED_BYTES = 200;

/**
 * A caller's text as an error repeats it: whole when short, else cut on a character
 * boundary and marked with an ellipsis. A name can be as long as the request (megabytes):
 * the answer names it, it does not send it back.
 */
export function echoed(text: string, maxBytes = MAX_ECHOED_BYTES): string {
  const cut = truncateUtf8(text, maxBytes);
  return cut.truncated ? `${cut.text}…` : text;
}
