import type { IncomingHttpHeaders } from 'node:http';
import { echoed } from '../core/echoed.js';

/** A Content-Type's charset parameter (quoted or not). */
const CHARSET = /;\s*charset\s*=\s*"?([^";]*)/i;

/**
 * Why a POST's body is not one a gateway reads (HTTP 415), or null: the transport sends each message as
 * application/json, uncompressed. Without this, a text/plain body was "not one JSON-RPC message" and a compressed one
 * "not UTF-8", neither naming the header that was wrong. A charset other than UTF-8 is refused too: the body is read as
 * UTF-8 (RFC 8259 asks it of JSON exchanged between systems), so a Latin-1 body was read as something it is not.
 */
export function bodyTypeProblem(headers: IncomingHttpHeaders): string | null {
  const type = headers['content-type'];
  if (type?.split(';')[0]!.trim().toLowerCase() !== 'application/json')
    return type
      ? `Content-Type ${echoed(type)} is not accepted: send the message as application/json.`
      : 'Content-Type is missing: send the message as application/json.';
  const charset = CHARSET.exec(type)?.[1]!.trim().toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    return `Content-Type ${echoed(type)} is not accepted: send the message as application/json in UTF-8 (charset=utf-8, or no charset).`;
  const coding = headers['content-encoding']?.trim().toLowerCase();
  if (coding && coding !== 'identity') return `Content-Encoding ${echoed(coding)} is not accepted: send the message uncompressed.`;
  return null;
}
