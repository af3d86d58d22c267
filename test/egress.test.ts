import { describe, expect, it } from 'vitest';
import { EgressPolicy } from '../src/core/egress.js';

/**
 * The egress rule on every address form (contract section 1): what an IPv6 address
 * embeds is judged as that IPv4 address; ranges that are not global unicast are
 * refused; loopback and private ranges only with EGRESS_ALLOWED_CIDRS.
 */
const strict = new EgressPolicy([]);
const loopbackAllowed = new EgressPolicy(['127.0.0.2/32']);

describe('the egress rule', () => {
  it.each([
    ['169.254.169.254', 'link-local metadata'],
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['100.100.100.200', 'Alibaba metadata'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['::1', 'IPv6 loopback'],
    ['fe80::1', 'IPv6 link-local'],
    ['fd00:ec2::254', 'AWS IPv6 metadata'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['64:ff9b::a00:1', 'NAT64 private'],
    ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 loopback'],
    ['2002:a9fe:a9fe::1', '6to4 metadata'],
    ['2001:0:7f00:1::', 'Teredo server loopback'],
    ['2001:0:0808:0808:0:0:80ff:fffe', 'Teredo client 127.0.0.1 (inverted)'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a9fe:a9fe', 'IPv4-compatible metadata'],
    ['2001:db8::1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
  ])('refuses %s (%s)', (address) => {
    expect(strict.refusal(address)).not.toBeNull();
  });

  it.each([['8.8.8.8'], ['2606:4700:4700::1111'], ['64:ff9b::808:808'], ['2002:0808:0808::1'], ['::ffff:8.8.8.8']])(
    'allows the global address %s',
    (address) => {
      expect(strict.refusal(address)).toBeNull();
    },
  );

  it('allows a loopback address only as far as EGRESS_ALLOWED_CIDRS says, in every form', () => {
    expect(loopbackAllowed.refusal('127.0.0.2')).toBeNull();
    expect(loopbackAllowed.refusal('::ffff:127.0.0.2')).toBeNull();
    expect(loopbackAllowed.refusal('64:ff9b::7f00:2')).toBeNull();
    expect(loopbackAllowed.refusal('127.0.0.1')).toMatch(/not allowed by EGRESS_ALLOWED_CIDRS/);
    expect(loopbackAllowed.refusal('64:ff9b::7f00:1')).toMatch(/embeds 127\.0\.0\.1/);
  });

  it.each([['http://[64:ff9b::a9fe:a9fe]/mcp'], ['http://[2002:7f00:1::]/'], ['http://[::127.0.0.1]:8080/'], ['http://[2001:0:7f00:1::]/']])(
    'refuses %s when a URL is stored, naming the field',
    async (url) => {
      await expect(strict.check('url', url)).rejects.toMatchObject({ code: 'validation_failed', extras: { errors: [{ path: 'url' }] } });
    },
  );
});
