import { describe, expect, it } from 'vitest';
import { alertText, responseDebug } from '../src/core/alert-debug.js';
import { isSensitiveHeaderName, lowerCaseName, REDACTED, redactHeaders, redactSecretValues, redactSecretValuesOfCutText } from '../src/core/redaction.js';

/**
 * Known secret values masked in what a peer answers, in the forms a careless peer
 * echoes them (found by a security trial, session 26: percent-encoded, base64 after a
 * prefix as in a Basic header, in a header's name, and cut at a length
 * limit all reached alerts, the service log and hosts).
 */
const SECRET = 'Sup3rS3cret+/=Zq9~value';
const leaked = (text: string) => [SECRET, SECRET.slice(0, 12)].some((s) => text.includes(s));

describe('secret values in peer text', () => {
  it.each([
    ['as sent', SECRET],
    ['percent-encoded', encodeURIComponent(SECRET)],
    ['form-encoded', new URLSearchParams({ refresh_token: SECRET }).toString()],
    ['percent-encoded with lower-case hex', encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())],
    ...[0, 1, 2].map((n) => [`in base64 after ${n} bytes`, Buffer.from(`${'k:'.slice(0, n)}${SECRET}`).toString('base64')] as [string, string]),
    ['in URL-safe base64', Buffer.from(`client1:${SECRET}`).toString('base64url')],
  ])('are masked %s', (_label, echoed) => {
    const text = redactSecretValues(`the peer said: ${echoed} (end)`, [SECRET]);
    expect(text).toContain(REDACTED);
    expect(leaked(text) || text.includes(echoed.slice(-14, -4))).toBe(false);
    expect(text).toMatch(/^the peer said: /);
  });

  it('are masked when a cut leaves only their start', () => {
    expect(redactSecretValuesOfCutText(`body … ${SECRET.slice(0, 9)}`, [SECRET])).toBe(`body … ${REDACTED}`);
    // A text that was not cut keeps what merely looks like a secret's start (a header named x-collector-key, the key collector-key-…).
    expect(redactSecretValues(`x-${SECRET.slice(0, 9)}`, [SECRET])).toBe(`x-${SECRET.slice(0, 9)}`);
    // Masked before the cut: a secret straddling the limit leaves nothing of itself.
    const cut = alertText(`${'x'.repeat(1020)}${SECRET}`, [SECRET]);
    expect(leaked(cut)).toBe(false);
    expect(cut.startsWith('x'.repeat(1020))).toBe(true);
  });

  it("are masked in a header's name as in its value, and credential headers by name", () => {
    const debug = responseDebug(
      401,
      { [`x-k-${SECRET.toLowerCase().replace(/[^a-z0-9]/g, '')}`]: '1', 'x-echo': encodeURIComponent(SECRET), 'www-authenticate': 'Basic', authorization: 'x' },
      `{"refresh_token":"${SECRET}"}`,
      [SECRET.replace(/[^A-Za-z0-9]/g, ''), SECRET],
    );
    expect(leaked(JSON.stringify(debug))).toBe(false);
    expect(debug.responseHeaders).toMatchObject({ 'x-echo': REDACTED, authorization: REDACTED });
    expect(Object.keys(debug.responseHeaders)).toContain(`x-k-${REDACTED}`);
  });

  // Found by a regression review (session 26): matching in any case masked a header value that is a word in every case.
  it('match a value in its own case only: a word in another case is ordinary text', () => {
    expect(redactSecretValues('Production production PRODUCTION', ['Production'])).toBe(`${REDACTED} production PRODUCTION`);
  });

  it('leave ordinary text alone', () => {
    // Its first few characters (fewer than 8) at the end of a text give nothing away.
    const text = 'tools/call search ok in 42 ms; nothing secret here, not even Sup3rS3';
    expect(redactSecretValues(text, [SECRET])).toBe(text);
  });
});

describe('sensitive header names', () => {
  // Names are compared in lower case whatever their case; one already in lower case is used as it is (no copy).
  it('matches the fixed list, svc- names and the extra names in any case, from an array or any iterable', () => {
    for (const name of ['authorization', 'Authorization', 'COOKIE', 'Svc-Anything', 'svc-x']) expect(isSensitiveHeaderName(name)).toBe(true);
    for (const name of ['content-type', 'Accept', 'x-api-keys', 'mcp-session-id']) expect(isSensitiveHeaderName(name)).toBe(false);
    expect(isSensitiveHeaderName('x-tenant-key', ['X-Tenant-Key'])).toBe(true);
    expect(isSensitiveHeaderName('X-TENANT-KEY', new Set(['x-tenant-key']))).toBe(true);
    expect(isSensitiveHeaderName('x-tenant', ['X-Tenant-Key'])).toBe(false);
    expect(isSensitiveHeaderName('\u00C5-Key', ['\u00E5-key'])).toBe(true);
    const name = ['mcp', 'protocol', 'version'].join('-');
    expect(lowerCaseName(name)).toBe(name);
    expect(lowerCaseName('Mcp-Session-Id')).toBe('mcp-session-id');
    expect(redactHeaders({ Authorization: 'Bearer x', 'X-Tenant-Key': 'k', accept: '*/*' }, ['x-tenant-key'])).toEqual({
      Authorization: REDACTED,
      'X-Tenant-Key': REDACTED,
      accept: '*/*',
    });
  });
});
