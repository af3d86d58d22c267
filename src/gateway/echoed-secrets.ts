import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { REDACTED, redactSearchTerms, secretSearchTerms } from '../core/redaction.js';
import { isInputRequired } from './bridge-input-requests.js';

/** Nesting deeper than this is not walked: such a part is searched as text, and goes as the marker when it holds a secret. */
const MAX_DEPTH = 100;

/**
 * An upstream's message as a host may see it: every value of the credential the
 * gateway sent that upstream (a shared identity's header values, an OAuth access
 * token) replaced by `[REDACTED]` wherever the upstream echoed it, in any string or
 * key at any depth. A host user must never see a shared identity's secret, and the
 * gateway knows the values it sent, so this is a search: the parsed message is
 * walked (no serialization), and a message that echoes nothing is handed on as the
 * same object. An input_required result's `requestState` is the upstream's own, and
 * must come back to it as it was: no host sees it (a 2026-07-28 host gets it sealed in
 * the gateway's own state, bridge-request-state.ts; for a 2025 host the gateway keeps
 * it, bridge-input-rounds.ts), so it is left whole.
 */
export function withoutEchoedSecrets(message: JSONRPCMessage, secrets: readonly string[]): JSONRPCMessage {
  return secrets.length === 0 ? message : redactMessage(message, secretSearchTerms(secrets));
}

/** The messages of an upstream's reply, each without the secrets it echoed. */
export async function* withoutEchoedSecretsIn(messages: AsyncIterable<JSONRPCMessage>, secrets: readonly string[]): AsyncGenerator<JSONRPCMessage> {
  const terms = secretSearchTerms(secrets);
  for await (const message of messages) yield terms.length === 0 ? message : redactMessage(message, terms);
}

function redactMessage(message: JSONRPCMessage, terms: readonly string[]): JSONRPCMessage {
  const result = (message as { result?: unknown }).result;
  if (!isInputRequired(result) || typeof result.requestState !== 'string') return redactStrings(message, terms, 0) as JSONRPCMessage;
  const { requestState, ...rest } = result;
  const redacted = redactStrings(rest, terms, 1);
  return redacted === rest ? message : ({ ...message, result: { ...(redacted as object), requestState } } as JSONRPCMessage);
}

/** A parsed JSON value with the terms redacted from every string and key; the value itself when there was nothing to redact. */
function redactStrings(value: unknown, terms: readonly string[], depth: number): unknown {
  if (typeof value === 'string') return redactSearchTerms(value, terms);
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_DEPTH) {
    const text = JSON.stringify(value);
    return redactSearchTerms(text, terms.map(jsonEscaped)) === text ? value : REDACTED;
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const redacted = redactStrings(value[i], terms, depth + 1);
      if (redacted !== value[i]) (copy ??= value.slice())[i] = redacted;
    }
    return copy ?? value;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, v]) => {
    const k = redactSearchTerms(key, terms);
    const r = redactStrings(v, terms, depth + 1);
    if (k !== key || r !== v) changed = true;
    return [k, r] as const;
  });
  // fromEntries defines each key as its own property (a `__proto__` key stays a key, not a prototype).
  return changed ? Object.fromEntries(entries) : value;
}

/** A term as it appears inside JSON text, where quotes and backslashes are escaped. */
const jsonEscaped = (term: string): string => JSON.stringify(term).slice(1, -1);
