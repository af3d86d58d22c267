import { LEADING_HTTP_TOKEN } from './http-token.js';

/**
 * The one redaction module: every secret that could reach a stored or returned text
 * (call-log headers and bodies, alert context, audit records, service logs, collector
 * answers, what the gateway relays) is replaced here by the one marker. Header names
 * compare case-insensitively.
 */
export const REDACTED = '[REDACTED]';

/** Header names whose values are credentials wherever they appear. */
const SENSITIVE_HEADER_NAMES = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
  'x-access-token',
  'mcp-gateway-token',
]);

const NO_NAMES: readonly string[] = [];

/**
 * A header name in lower case, the name itself when it is already (Node hands every request's names so): every
 * call-log row's headers are named twice over, and toLowerCase makes a new string each time.
 */
export function lowerCaseName(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 65 && c <= 90) || c > 127) return name.toLowerCase();
  }
  return name;
}

/** True when a header of this name carries a credential: the fixed list, any `svc-` name, or one of `extraNames`. */
export function isSensitiveHeaderName(name: string, extraNames: Iterable<string> = NO_NAMES): boolean {
  const lower = lowerCaseName(name);
  if (SENSITIVE_HEADER_NAMES.has(lower) || lower.startsWith('svc-')) return true;
  // Most calls name no extra: an array is walked by index, without an iterator a header.
  if (Array.isArray(extraNames)) {
    for (let i = 0; i < extraNames.length; i++) if (lowerCaseName(extraNames[i] as string) === lower) return true;
    return false;
  }
  for (const extra of extraNames) if (lowerCaseName(extra) === lower) return true;
  return false;
}

/**
 * A header map's key as it may be shown or recorded: a key that is not a header name
 * is cut where its name ends, since a whole header line pasted as the name
 * (`Authorization: Splunk <token>`) carries its credential after the name.
 */
export function shownHeaderName(key: string): string {
  const name = LEADING_HTTP_TOKEN.exec(key.trim())?.[0] ?? '';
  return name === key.trim() ? key : `${name}…`;
}

/**
 * Fields whose values are secrets (contract section 7), by name, wherever a structure
 * holds them (an operation's input, an alert's debug context): `clientSecret`,
 * `oauthAccessToken`, `refresh_token`, `password`. A name merely starting with
 * "token" (`tokenId`, `oauthTokenEndpoint`) names no secret, and a boolean
 * (`rotateSecret: true`) is none.
 */
const SECRET_FIELD = /secret|password|token$/i;

export function isSecretField(name: string, value: unknown): boolean {
  return SECRET_FIELD.test(name) && typeof value !== 'boolean';
}

/**
 * The service log's redaction (pino's `redact` option, for fastify's logger and the
 * runtime's): header values a log line carries are censored by the same rule as
 * everywhere else, so a line that logs request or response headers shows names only;
 * a request's URL (fastify logs each) keeps its credential-named query values masked.
 */
export const SERVICE_LOG_REDACTION = {
  paths: ['req.headers.*', 'res.headers.*', 'headers.*', 'req.url'],
  censor: (value: unknown, path: string[]): unknown =>
    path.at(-1) === 'url' && path.length === 2 ? maskUrlSecrets(String(value)) : isSensitiveHeaderName(path.at(-1) ?? '') ? REDACTED : value,
};

/** A query parameter whose name says it carries a credential (`token`, `access_token`, `api_key`, `secret`, `password`). */
const CREDENTIAL_PARAMETER = /([?&][^=&#]*(?:token|key|secret|password|auth)[^=&#]*=)[^&#]*/gi;

/** A request URL as a log line may show it: tokens of ours, a URL's password and credential-named query values masked. */
export const maskUrlSecrets = (url: string): string => maskSecretsIn(url).replace(CREDENTIAL_PARAMETER, `$1${REDACTED}`);

/**
 * Returns a copy of `headers` in which the value of every sensitive header is
 * replaced by `[REDACTED]` (names stay, so a reader still sees that it was sent).
 * `extraNames` adds names known to be secret, e.g. an identity's header names.
 */
export function redactHeaders(headers: Record<string, string> | undefined, extraNames: Iterable<string> = []): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  const extra = Array.isArray(extraNames) ? (extraNames as readonly string[]) : [...extraNames];
  // Every call-log row's headers pass here: for...in walks them without an array a header.
  for (const name in headers) if (Object.hasOwn(headers, name)) out[name] = isSensitiveHeaderName(name, extra) ? REDACTED : String(headers[name]);
  return out;
}

const BEARER = /\b(Bearer|Basic|Splunk)\s+[A-Za-z0-9._~+/=-]+/gi;
const TOKEN_LIKE = /\bsvc[pg]_[A-Za-z0-9]+_[A-Za-z0-9_-]+/g;
/** The password of a URL's userinfo (`scheme://user:password@host`). */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)[^/\s@]+@/gi;

/** A text with the secrets that cannot be mistaken masked: our own token format, a URL's password. */
const maskSecretsIn = (text: string): string => text.replace(TOKEN_LIKE, REDACTED).replace(URL_PASSWORD, `$1${REDACTED}@`);

/**
 * A free text (an upstream's or collector's words) with the credentials spelled out in it
 * masked: `Bearer …` and its kin too, which in an admin's own input ("Splunk admins", a
 * team) would be words.
 */
export const maskCredentialsIn = (text: string): string => maskSecretsIn(text.replace(BEARER, (_m, scheme: string) => `${scheme} ${REDACTED}`));

/**
 * Redacts a free-form structure (an alert's debug context): every property named
 * like a sensitive header, at any depth, loses its value; credentials spelled out
 * in strings (`Bearer ...`, our own token format) are masked too.
 */
export function redactDeep(value: unknown, extraNames: Iterable<string> = [], depth = 0): unknown {
  const extra = [...extraNames];
  if (depth > 20) return REDACTED;
  if (typeof value === 'string') return maskCredentialsIn(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, extra, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSensitiveHeaderName(k, extra) || isSecretField(k, v) ? REDACTED : redactDeep(v, extra, depth + 1);
    }
    return out;
  }
  return value;
}

/**
 * Input fields holding a map of header names to values: every value is a secret, the
 * names are not. Compared in lower case and singular too: a refused input spelled
 * `Headers` or `header` is recorded as well and carries the same secrets.
 */
const HEADER_MAP_FIELDS = new Set(['headers', 'header']);

/**
 * An operation's input as it may be recorded (the audit log's `request`): every
 * secret field and every value of a header map replaced by the marker, and the
 * secrets spelled out in any text masked (a URL's password, a token of ours).
 */
export function redactInput(value: unknown, depth = 0): unknown {
  if (depth > 20) return REDACTED;
  // A refused input is recorded too: a URL with a password in it, say.
  if (typeof value === 'string') return maskSecretsIn(value);
  if (Array.isArray(value)) return value.map((v) => redactInput(v, depth + 1));
  if (!value || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === null || v === undefined) out[k] = v;
    else if (HEADER_MAP_FIELDS.has(k.toLowerCase()))
      // Names stay (cut where a name ends), values go; anything but a map (a string, a list of pairs: refused input, still recorded) goes whole.
      out[k] =
        typeof v === 'object' && !Array.isArray(v)
          ? Object.fromEntries(Object.keys(v as Record<string, unknown>).map((name) => [shownHeaderName(name), REDACTED]))
          : REDACTED;
    // A credential header's name as a key (`Authorization`, `X-Api-Key`) holds a secret wherever it sits.
    else if (isSecretField(k, v) || isSensitiveHeaderName(k)) out[k] = REDACTED;
    else out[k] = redactInput(v, depth + 1);
  }
  return out;
}

/** Whitespace-separated parts of a secret this long are secrets too (the token of `Splunk <token>`). */
const SECRET_PART_MIN = 8;
/** Shorter secret values are not searched for: they would mask ordinary words. */
const SECRET_VALUE_MIN = 4;

/** Encoded forms shorter than this are not searched for (a base64 core of a short secret would match by chance). */
const ENCODED_MIN = 8;

/**
 * What is searched for to redact known secret values: each value of at least 4
 * characters and each long whitespace-separated part of it, and the forms a peer that
 * echoes what it was sent writes them in: percent-encoded (a query string, a form
 * body), and base64 wherever it starts (an `Authorization: Basic` header of
 * `client:secret`, a debug dump). Matched as they are: a value is case-sensitive, and
 * matching words in any case masked ordinary text (a header value `Production`); only
 * percent-encoding has both cases of hex digits, so both are searched. Computed once
 * when the same secrets are searched in many texts (every message of an upstream's
 * reply).
 */
export function secretSearchTerms(secrets: Iterable<string>): string[] {
  // The same credentials are searched for in every text of their calls: their terms are made once.
  const list = [...secrets];
  const key = list.join('\u0000');
  let terms = termsOfSecrets.get(key);
  if (!terms) {
    terms = searchTermsOf(list);
    if (termsOfSecrets.size >= 1000) termsOfSecrets.clear();
    termsOfSecrets.set(key, terms);
  }
  return terms;
}

const termsOfSecrets = new Map<string, string[]>();

function searchTermsOf(secrets: readonly string[]): string[] {
  const terms = new Set<string>();
  for (const secret of secrets) {
    if (!secret || secret.length < SECRET_VALUE_MIN) continue;
    for (const value of [secret, ...secret.split(/\s+/).filter((p) => p.length >= SECRET_PART_MIN && p !== secret)]) {
      terms.add(value);
      const percent = [encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2)];
      for (const encoded of [...percent, ...percent.map(lowerHex), ...base64Cores(value)]) if (encoded.length >= ENCODED_MIN) terms.add(encoded);
    }
  }
  return [...terms];
}

/**
 * The base64 characters that encode `value` whatever bytes precede it: for each of the
 * three alignments, the encoding of `value` after 0, 1 or 2 other bytes, without the
 * characters that also carry bits of those bytes or of what follows. Standard and
 * URL-safe alphabets.
 */
function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const cores: string[] = [];
  for (let before = 0; before < 3; before++) {
    const encoded = Buffer.concat([Buffer.alloc(before), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const first = Math.ceil((before * 8) / 6);
    const last = Math.floor(((before + bytes.length) * 8) / 6);
    const core = encoded.slice(first, last);
    if (core.length >= ENCODED_MIN) cores.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return cores;
}

/** Percent-encoding with lower-case hex digits (`%2f`), as some encoders write it. */
const lowerHex = (encoded: string): string => encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());

/** Replaces every occurrence of the search terms (secretSearchTerms) in `text`; a text without any is returned as it is. */
export function redactSearchTerms(text: string, terms: readonly string[]): string {
  let out = text;
  for (const term of terms) if (out.includes(term)) out = out.split(term).join(REDACTED);
  return out;
}

/**
 * Replaces every occurrence of a known secret value in `text` (an upstream's or a
 * collector's answer echoing a credential, an error message quoting one): each value
 * of at least 4 characters and each long part of it; and any token of ours (a host
 * that puts its gateway or access token in a tool's arguments: contract 7, never in a
 * call log row).
 */
export function redactSecretValues(text: string, secrets: Iterable<string>): string {
  return withoutOurTokens(redactSearchTerms(text, secretSearchTerms(secrets)));
}

/** redactSecretValues for a text a length limit may have cut (a peer's answer as read): a secret's start at its end is masked too. */
export function redactSecretValuesOfCutText(text: string, secrets: Iterable<string>): string {
  const terms = secretSearchTerms(secrets);
  return withoutOurTokens(withoutCutSecret(redactSearchTerms(text, terms), terms));
}

const withoutOurTokens = (text: string): string => (text.includes('svc') ? text.replace(TOKEN_LIKE, REDACTED) : text);

/**
 * A text whose end is the start of a secret (a peer's answer cut at a length limit in
 * the middle of an echoed credential) with that end masked: what was cut cannot be
 * matched whole. Only starts of at least 8 characters are looked for: a text may end
 * with a few characters a secret starts with, and fewer do not give a secret away.
 */
function withoutCutSecret(text: string, terms: readonly string[]): string {
  for (const term of terms) {
    // Where the text's last (term length - 1) characters could begin the term: at its first character, rarely found there.
    for (let at = Math.max(0, text.length - term.length + 1); at <= text.length - SECRET_PART_MIN; at++)
      if (text.charCodeAt(at) === term.charCodeAt(0) && term.startsWith(text.slice(at))) return `${text.slice(0, at)}${REDACTED}`;
  }
  return text;
}
