import dns from 'node:dns/promises';
import { lookup as lookupCallback, type LookupAddress } from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { validationFailed } from './errors.js';

/**
 * The egress rule of contract section 1: outbound requests never go to link-local or
 * cloud-metadata addresses, and go to loopback or private ranges only when
 * EGRESS_ALLOWED_CIDRS allows them. Checked when a URL is stored and again at
 * connect time, because DNS can change.
 */
const ALWAYS_BLOCKED = ['linkLocal', 'unspecified', 'broadcast', 'multicast', 'reserved'];
const NEEDS_ALLOWANCE = ['loopback', 'private', 'uniqueLocal', 'carrierGradeNat'];
/** Metadata endpoints that are not link-local (Alibaba, Oracle's v6 alias). */
const METADATA_ADDRESSES = new Set(['100.100.100.200', 'fd00:ec2::254']);

export class EgressPolicy {
  private readonly allowed: [ipaddr.IPv4 | ipaddr.IPv6, number][];

  constructor(allowedCidrs: readonly string[]) {
    this.allowed = allowedCidrs.map((c) => ipaddr.parseCIDR(c));
  }

  /** Why an address may not be reached, or null when it may. */
  refusal(address: string): string | null {
    let ip = ipaddr.parse(address);
    if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    if (METADATA_ADDRESSES.has(ip.toString())) return 'is a cloud metadata address';
    const range = ip.range();
    if (ALWAYS_BLOCKED.includes(range)) return `is a ${range} address`;
    const allowedHere = this.allowed.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
    if (NEEDS_ALLOWANCE.includes(range) && !allowedHere) return `is a ${range} address not allowed by EGRESS_ALLOWED_CIDRS`;
    return null;
  }

  /**
   * A `lookup` for sockets (net.connect, http agents): resolves like dns.lookup and
   * fails with validation_failed naming `field` when an address it resolves to is
   * not allowed, so the rule holds for the address actually connected to. (Hosts
   * written as IP addresses are not looked up: check them with refusal().)
   */
  connectLookup(field: string): LookupFunction {
    return (hostname, options, callback) => {
      lookupCallback(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
        if (err) return callback(err, '');
        for (const a of addresses) {
          const why = this.refusal(a.address);
          if (why) return callback(validationFailed([{ path: field, message: `host ${hostname} ${why}` }]) as unknown as NodeJS.ErrnoException, '');
        }
        if (options.all) return callback(null, addresses);
        const first = addresses[0];
        if (!first) return callback(Object.assign(new Error(`host ${hostname} does not resolve`), { code: 'ENOTFOUND' }), '');
        return callback(null, first.address, first.family);
      });
    };
  }

  /**
   * Checks a URL for `field` (http or https, every resolved address allowed) and
   * throws validation_failed naming the field otherwise.
   */
  async check(field: string, rawUrl: string): Promise<URL> {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw validationFailed([{ path: field, message: 'must be an absolute URL' }]);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw validationFailed([{ path: field, message: 'must be an http or https URL' }]);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (net.isIP(host)) addresses = [host];
    else {
      try {
        addresses = (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);
      } catch {
        throw validationFailed([{ path: field, message: `host ${host} does not resolve` }]);
      }
    }
    for (const address of addresses) {
      const why = this.refusal(address);
      if (why) throw validationFailed([{ path: field, message: `host ${host} ${why}` }]);
    }
    return url;
  }
}
