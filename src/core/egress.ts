import dns from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
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

/** Every address a host name resolves to (`family` 4 or 6 narrows it, as for dns.lookup). */
export type Resolve = (hostname: string, options: { family?: number | 'IPv4' | 'IPv6' | undefined; hints?: number | undefined }) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname, { family, hints }) =>
  dns.lookup(hostname, { family: family ?? 0, ...(hints !== undefined ? { hints } : {}), all: true, order: 'verbatim' });

export class EgressPolicy {
  private readonly allowed: [ipaddr.IPv4 | ipaddr.IPv6, number][];

  /** `resolve` is the system resolver; tests give their own to control what a name resolves to. */
  constructor(
    allowedCidrs: readonly string[],
    private readonly resolve: Resolve = systemResolve,
  ) {
    this.allowed = allowedCidrs.map((c) => ipaddr.parseCIDR(c));
  }

  /** Why an address may not be reached, or null when it may. */
  refusal(address: string): string | null {
    const ip = ipaddr.parse(address);
    // An IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) reaches that IPv4 address: it is judged by the IPv4 rule.
    const embedded = ip.kind() === 'ipv6' ? embeddedIPv4(ip as ipaddr.IPv6) : [];
    if (embedded.length > 0) {
      for (const v4 of embedded) {
        const why = this.refusal(v4.toString());
        if (why) return `embeds ${v4.toString()}, which ${why}`;
      }
      return null;
    }
    if (METADATA_ADDRESSES.has(ip.toString())) return 'is a cloud metadata address';
    const range = ip.range();
    if (range === 'unicast') return null;
    const allowedHere = this.allowed.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
    if (NEEDS_ALLOWANCE.includes(range)) return allowedHere ? null : `is a ${range} address not allowed by EGRESS_ALLOWED_CIDRS`;
    // Every other range (link-local, multicast, reserved, benchmarking, documentation, ...) is not global unicast.
    return ALWAYS_BLOCKED.includes(range) ? `is a ${range} address` : `is a ${range} address, not global unicast`;
  }

  /**
   * A `lookup` for sockets (net.connect, http agents, undici's connector): resolves
   * the name and fails with validation_failed naming `field` when an address it
   * resolves to is not allowed, so the rule holds for the address actually connected
   * to, whatever DNS answered before. Every outbound client of the service uses it.
   * (Hosts written as IP addresses are not looked up: target() checks them.)
   */
  connectLookup(field: string): LookupFunction {
    return (hostname, options, callback) => {
      this.resolve(hostname, options).then(
        (addresses) => {
          const refused = this.refusedAmong(field, hostname, addresses);
          if (refused) return callback(refused as unknown as NodeJS.ErrnoException, '');
          const first = addresses[0];
          if (!first) return callback(Object.assign(new Error(`host ${hostname} does not resolve`), { code: 'ENOTFOUND' }), '');
          return options.all ? callback(null, addresses) : callback(null, first.address, first.family);
        },
        (err: NodeJS.ErrnoException) => callback(err, ''),
      );
    };
  }

  /**
   * What can be judged of a URL for `field` without DNS: it is an absolute http or
   * https URL, and a host written as an IP address is allowed. Throws
   * validation_failed naming the field otherwise. A host name is left to
   * connectLookup, where the address connected to is known.
   */
  target(field: string, rawUrl: string): URL {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw validationFailed([{ path: field, message: 'must be an absolute URL' }]);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw validationFailed([{ path: field, message: 'must be an http or https URL' }]);
    const host = hostOf(url);
    const why = net.isIP(host) ? this.refusal(host) : null;
    if (why) throw validationFailed([{ path: field, message: `host ${host} ${why}` }]);
    return url;
  }

  /**
   * Checks a URL when it is stored (target(), no credentials in it, and every address
   * its host resolves to now) and throws validation_failed naming the field otherwise. Requests do not
   * rely on it: DNS may answer differently when they connect (connectLookup).
   */
  async check(field: string, rawUrl: string): Promise<URL> {
    const url = this.target(field, rawUrl);
    // A stored URL is returned, logged and audited as it is: a password in it would be a secret in the clear.
    if (url.username || url.password)
      throw validationFailed([{ path: field, message: 'must not carry a user name or password: give credentials as headers, which are kept secret' }]);
    const host = hostOf(url);
    if (net.isIP(host)) return url;
    let addresses: LookupAddress[];
    try {
      addresses = await this.resolve(host, {});
      if (addresses.length === 0) throw new Error('no address');
    } catch {
      throw validationFailed([{ path: field, message: `host ${host} does not resolve` }]);
    }
    const refused = this.refusedAmong(field, host, addresses);
    if (refused) throw refused;
    return url;
  }

  /** The validation error for the first refused address `host` resolved to, or null when all are allowed. */
  private refusedAmong(field: string, host: string, addresses: readonly LookupAddress[]) {
    for (const a of addresses) {
      const why = this.refusal(a.address);
      if (why) return validationFailed([{ path: field, message: `host ${host} ${why} (it resolves to ${a.address})` }]);
    }
    return null;
  }
}

const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '');

const v4At = (bytes: number[], at: number): ipaddr.IPv4 => new ipaddr.IPv4(bytes.slice(at, at + 4));

/**
 * The IPv4 addresses an IPv6 address leads to: IPv4-mapped (::ffff:a.b.c.d) and
 * IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96, the last 32 bits; the local-use
 * 64:ff9b:1::/48 places it by prefix length and is refused as not global), 6to4 (2002::/16, bits 16-48) and Teredo (2001::/32: the server, bits 32-64,
 * and the client, the last 32 bits inverted). Empty for any other address.
 */
export function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const bytes = ip.toByteArray();
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (ip.isIPv4MappedAddress()) return [ip.toIPv4Address()];
  // ::a.b.c.d, but not :: and ::1 (unspecified and loopback are IPv6's own).
  if (zeros(0, 12) && !zeros(12, 14)) return [v4At(bytes, 12)];
  if (ip.match(ipaddr.parseCIDR('64:ff9b::/96'))) return [v4At(bytes, 12)];
  if (ip.match(ipaddr.parseCIDR('2002::/16'))) return [v4At(bytes, 2)];
  if (ip.match(ipaddr.parseCIDR('2001::/32'))) return [v4At(bytes, 4), new ipaddr.IPv4(bytes.slice(12, 16).map((b) => b ^ 0xff))];
  return [];
}
