/**
 * Server-side request forgery guard for webhook endpoints (docs/security.md, "Webhooks"): an
 * admin (or a stolen API key with `webhooks:write`) must not turn the delivery worker into a
 * client of the service's own network — loopback, private ranges, link-local (cloud metadata at
 * 169.254.169.254), carrier-grade NAT, unique-local IPv6 and the rest of the special ranges.
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
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const)
  blocked.addSubnet(network, prefix, 'ipv6');

/** An IPv6 address that carries an IPv4 one (mapped, compatible, NAT64): the IPv4 address decides. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const [high, low] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** True for an address on the public internet; false for everything the guard refuses. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(address);
  if (v4) return isPublicAddress(v4);
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
