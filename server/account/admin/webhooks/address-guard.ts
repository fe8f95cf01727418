/**
 * Server-side request forgery guard for webhook endpoints (docs/security.md, "Webhooks"): an
 * admin (or a stolen API key with `webhooks:write`) must not turn the delivery worker into a
 * client of the service's own network — loopback, private ranges, link-local (cloud metadata at
 * 169.254.169.254), carrier-grade NAT, unique-local IPv6 and the rest of the special ranges,
 * whether spelt as IPv4 or inside any IPv6 form that carries an IPv4 address.
 *
 * Checked twice: when an endpoint is registered or changed (every address the name resolves to),
 * and at every delivery, on the very address the connection is made to (`guardedLookup`), so a
 * name that resolved to a public address at registration and to 127.0.0.1 later (DNS rebinding)
 * is refused then. WEBHOOK_ALLOW_PRIVATE=1 turns the guard off (tests, closed networks; unsafe).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48], // NAT64 local use (RFC 8215)
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const)
  blocked.addSubnet(network, prefix, 'ipv6');

/** The 16 bytes of an IPv6 address in any spelling (`::`, a trailing dotted quad, a zone), or undefined. */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.split('%')[0] ?? '';
  let quad: number[] = [];
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    quad = dotted.slice(2, 6).map(Number);
    text = `${dotted[1]}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const gap = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const all = [...head, ...Array<string>(Math.max(gap, 0)).fill('0'), ...tail];
  if (all.length !== 8 || !all.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  const bytes = all.flatMap((group) => {
    const n = Number.parseInt(group, 16);
    return [n >> 8, n & 255];
  });
  if (quad.length) bytes.splice(12, 4, ...quad);
  return bytes;
}

/**
 * The IPv4 address an IPv6 one carries, in every form that reaches an IPv4 host: IPv4-compatible
 * (::a.b.c.d) and mapped (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d, RFC 2765), NAT64 with
 * the well-known prefix (64:ff9b::/96, RFC 6052), 6to4 (2002:aabb:ccdd::/16, RFC 3056) and Teredo
 * (2001:0::/32, the client's address inverted, RFC 4380). NAT64's local-use prefix
 * (64:ff9b:1::/48, RFC 8215) may embed the address at any of RFC 6052's offsets, so it is refused
 * whole (the blocked list above), as are Teredo's and the other IETF assignments in 2001::/23.
 */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  if (!b) return undefined;
  const zero = (from: number, to: number) => b.slice(from, to).every((byte) => byte === 0);
  const last = b.slice(12, 16).join('.');
  if (zero(0, 10) && ((b[10] === 0 && b[11] === 0) || (b[10] === 255 && b[11] === 255))) return last;
  if (zero(0, 8) && b[8] === 255 && b[9] === 255 && zero(10, 12)) return last;
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return last;
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  if (b[0] === 0x20 && b[1] === 0x01 && zero(2, 4))
    return b
      .slice(12, 16)
      .map((byte) => byte ^ 255)
      .join('.');
  return undefined;
}

/** True for an address on the public internet; false for everything the guard refuses. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  // An IPv6 address that carries an IPv4 one is public only when both are.
  const v4 = embeddedIpv4(address);
  if (v4 && !isPublicAddress(v4)) return false;
  return !blocked.check(address, 'ipv6');
}

export class ForbiddenAddress extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, which is not a public address`);
    this.name = 'ForbiddenAddress';
  }
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Registration check: every address the URL's host resolves to must be public. Resolves, or
 * rejects with ForbiddenAddress (or the resolver's own error for a name that does not resolve).
 */
export async function checkEndpointAddress(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = hostOf(url);
  const addresses: LookupAddress[] = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (error, found) => (error ? reject(error) : resolve(found))));
  for (const { address } of addresses) if (!isPublicAddress(address)) throw new ForbiddenAddress(host, address);
}

/**
 * The `lookup` of a delivery's connection: resolves as usual, then refuses when an address it
 * would connect to is not public. Node calls no lookup for an IP literal: `deliver` checks those.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true, verbatim: true }, (error, found) => {
    if (error) return callback(error, '', 0);
    const bad = found.find(({ address }) => !isPublicAddress(address));
    if (bad) return callback(new ForbiddenAddress(hostname, bad.address), '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
    const first = found[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
    callback(null, first.address, first.family);
  });
};
