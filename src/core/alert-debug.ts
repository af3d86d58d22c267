import pkg from '../../package.json' with { type: 'json' };
import { redactHeaders, redactSecretValues, redactSecretValuesOfCutText } from './redaction.js';

/**
 * The one shape of an alert's debugContext (contract: "response status, headers, body
 * and engine details"): what the peer answered, redacted, and what the engine was
 * when it asked. Every producer (upstream calls, server validation, OAuth refresh,
 * collector export) builds its context from these two pieces.
 */

/** The longest peer text (a body, an error message) an alert keeps, in characters. */
export const ALERT_BODY_CHARS = 1024;

/** Response headers as the HTTP clients give them: node:http and undici repeat a header as an array. */
export type ResponseHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What a peer answered, as an alert shows it. */
export interface ResponseDebug {
  /** null when no answer came (unreachable, timed out). */
  responseStatus: number | null;
  responseHeaders: Record<string, string>;
  responseBody: string;
}

/**
 * A peer's text (a body, an error message) as an alert keeps it: the known secrets
 * masked in the whole text (the readers bound it: 4 KiB of a failed answer, 64 KiB of
 * a collector's; a secret's start where a reader cut it too), then cut to
 * ALERT_BODY_CHARS, so a cut never leaves part of a secret unmatched.
 */
export function alertText(text: string, secrets: Iterable<string>): string {
  const redacted = redactSecretValuesOfCutText(text, secrets);
  return redacted.length > ALERT_BODY_CHARS ? `${redacted.slice(0, ALERT_BODY_CHARS)}…` : redacted;
}

/**
 * A peer's answer for an alert's debugContext: credential headers (authorization,
 * cookies, `sensitiveHeaderNames` such as an identity's own header names) masked by
 * name, and the call's `secrets` masked in every other header value and in the body,
 * since a careless peer echoes what it was sent anywhere.
 */
export function responseDebug(
  status: number | null | undefined,
  headers: ResponseHeaders | undefined,
  body: string | undefined,
  secrets: readonly string[],
  sensitiveHeaderNames: Iterable<string> = [],
): ResponseDebug {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (value !== undefined) flat[name] = typeof value === 'string' ? value : value.join(', ');
  const masked: Record<string, string> = {};
  // A peer can echo a secret in a header's name as well as in its value; HTTP clients give names lower-cased.
  const lowered = secrets.map((secret) => secret.toLowerCase());
  for (const [name, value] of Object.entries(redactHeaders(flat, sensitiveHeaderNames)))
    masked[redactSecretValues(name.toLowerCase(), lowered)] = redactSecretValues(value, secrets);
  return { responseStatus: status ?? null, responseHeaders: masked, responseBody: alertText(body ?? '', secrets) };
}

/** The engine part of a debugContext: which build asked, and `extra`, what it used for that exchange (transport, revision, format). */
export function engineDetails(extra: Record<string, unknown> = {}): { engine: Record<string, unknown> } {
  return { engine: { name: pkg.name, version: pkg.version, node: process.version, ...extra } };
}
