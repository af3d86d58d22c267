import type { IncomingHttpHeaders } from 'node:http';
import { echoed } from '../core/echoed.js';

/**
 * Why a POST's body is not one a gateway reads (HTTP 415), or null: the transport sends each message as
 * application/json, uncompressed. Without this, a text/plain body was "not one JSON-RPC message" and a compressed one
 * "not UTF-8", neither naming the header that was wrong.
 */
export function bodyTypeProblem(headers: IncomingHttpHeaders): string | null {
  const type = headers['content-type'];
  if (type?.split(';')[0]!.trim().toLowerCase() !== 'application/json')
    return type
      ? `Content-Type ${echoed(type)} is not accepted: send the message as application/json.`
      : 'Content-Type is missing: send the message as application/json.';
  const coding = headers['content-encoding']?.trim().toLowerCase();
  if (coding && coding !== 'identity') return `Content-Encoding ${echoed(coding)} is not accepted: send the message uncompressed.`;
  return null;
}
