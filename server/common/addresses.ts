/**
 * Which IP addresses are on the public internet, and why the others are not: one classifier for
 * every place the service connects somewhere a user, an admin or an agent named (webhook
 * endpoints, the agents' web tools, connectors; docs/security.md, "Addresses the service will not
 * reach"). The tables follow IANA's special-purpose address registries (RFC 6890 and its
 * updates), row by row, with the RFC of each block beside it.
 *
 * An address is given as a literal (`127.0.0.1`, `::ffff:7f00:1`): what DNS answered, or what a
 * WHATWG URL parser made of a host (it already turns `2130706433`, `0x7f.1`, `0177.0.0.1` and
 * `127.1` into `127.0.0.1`, and `[::ffff:127.0.0.1]` into `[::ffff:7f00:1]`). IPv6 addresses that
 * carry an IPv4 one (mapped, compatible, translated, NAT64, 6to4) are judged by the IPv4 address
 * they carry, as a host with such a route would reach it.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/** Why an address is not public ('public' when it is). */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'carrier-grade-nat'
  | 'link-local'
  | 'cloud-metadata'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'reserved';

/** How an answer names each class (after "… is "). */
const CLASS_WORDS: Record<Exclude<AddressClass, 'public'>, string> = {
  unspecified: 'an unspecified address, which reaches this machine',
  loopback: 'a loopback address (this machine)',
  private: 'a private network address',
  'carrier-grade-nat': 'a carrier-grade NAT address (100.64.0.0/10)',
  'link-local': 'a link-local address',
  'cloud-metadata': "a cloud provider's metadata service",
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  documentation: 'a documentation address',
  reserved: 'a reserved or special-purpose address',
};

interface Block {
  /** The network as a bigint of 32 (IPv4) or 128 (IPv6) bits. */
  network: bigint;
  prefix: number;
  class: Exclude<AddressClass, 'public'>;
}

function ipv4Bits(address: string): bigint {
  return address.split('.').reduce((bits, part) => (bits << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 literal (no zone id) as 128 bits; `::`, and a dotted IPv4 tail, expanded. */
function ipv6Bits(address: string): bigint {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = ipv4Bits(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((bits, group) => (bits << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function blocks(width: 32 | 128, rows: Array<[string, number, Exclude<AddressClass, 'public'>]>): Block[] {
  const bits = width === 32 ? ipv4Bits : ipv6Bits;
  // Longest prefix first, so a host route (cloud metadata) wins over the block around it.
  return rows.map(([network, prefix, cls]) => ({ network: bits(network), prefix, class: cls })).sort((a, b) => b.prefix - a.prefix);
}

const IPV4 = blocks(32, [
  ['0.0.0.0', 8, 'unspecified'], // RFC 791 "this network"; connecting to 0.0.0.0 reaches this host
  ['10.0.0.0', 8, 'private'], // RFC 1918
  ['100.64.0.0', 10, 'carrier-grade-nat'], // RFC 6598
  ['100.100.100.200', 32, 'cloud-metadata'], // Alibaba Cloud
  ['127.0.0.0', 8, 'loopback'], // RFC 1122
  ['169.254.0.0', 16, 'link-local'], // RFC 3927
  ['169.254.169.254', 32, 'cloud-metadata'], // AWS, Google Cloud, Azure, OpenStack, DigitalOcean…
  ['169.254.170.2', 32, 'cloud-metadata'], // AWS ECS task metadata
  ['169.254.170.23', 32, 'cloud-metadata'], // AWS EKS pod identity
  ['172.16.0.0', 12, 'private'], // RFC 1918
  ['192.0.0.0', 24, 'reserved'], // RFC 6890 IETF protocol assignments
  ['192.0.2.0', 24, 'documentation'], // RFC 5737 TEST-NET-1
  ['192.31.196.0', 24, 'reserved'], // RFC 7535 AS112-v4
  ['192.52.193.0', 24, 'reserved'], // RFC 7450 AMT
  ['192.88.99.0', 24, 'reserved'], // RFC 7526 deprecated 6to4 relay anycast
  ['192.168.0.0', 16, 'private'], // RFC 1918
  ['192.175.48.0', 24, 'reserved'], // RFC 7534 direct delegation AS112
  ['198.18.0.0', 15, 'reserved'], // RFC 2544 benchmarking
  ['198.51.100.0', 24, 'documentation'], // RFC 5737 TEST-NET-2
  ['203.0.113.0', 24, 'documentation'], // RFC 5737 TEST-NET-3
  ['224.0.0.0', 4, 'multicast'], // RFC 5771
  ['240.0.0.0', 4, 'reserved'], // RFC 1112 future use
  ['255.255.255.255', 32, 'broadcast'], // RFC 919
]);

const IPV6 = blocks(128, [
  ['::', 128, 'unspecified'], // RFC 4291
  ['::1', 128, 'loopback'], // RFC 4291
  ['100::', 64, 'reserved'], // RFC 6666 discard-only
  ['2001::', 23, 'reserved'], // RFC 2928 IETF protocol assignments (Teredo 2001::/32 among them)
  ['2001:db8::', 32, 'documentation'], // RFC 3849
  ['3fff::', 20, 'documentation'], // RFC 9637
  ['5f00::', 16, 'reserved'], // RFC 9602 SRv6 SIDs
  ['64:ff9b:1::', 48, 'private'], // RFC 8215 local-use NAT64: translated into the operator's own network
  ['fc00::', 7, 'private'], // RFC 4193 unique local
  ['fd00:ec2::254', 128, 'cloud-metadata'], // AWS (IPv6)
  ['fd00:ec2::23', 128, 'cloud-metadata'], // AWS EKS pod identity (IPv6)
  ['fe80::', 10, 'link-local'], // RFC 4291
  ['fec0::', 10, 'private'], // RFC 3879 deprecated site-local
  ['ff00::', 8, 'multicast'], // RFC 4291
]);

/** Only 2000::/3 is global unicast (RFC 4291); the rest of the IPv6 space is unassigned or special. */
const GLOBAL_UNICAST = { network: 0x2n << 124n, prefix: 3 };

function within(bits: bigint, width: number, network: bigint, prefix: number): boolean {
  const shift = BigInt(width - prefix);
  return bits >> shift === network >> shift;
}

function lookupClass(bits: bigint, width: 32 | 128): AddressClass {
  for (const block of width === 32 ? IPV4 : IPV6) if (within(bits, width, block.network, block.prefix)) return block.class;
  return 'public';
}

const ipv4Text = (bits: bigint) => [24n, 16n, 8n, 0n].map((shift) => Number((bits >> shift) & 0xffn)).join('.');

/**
 * The IPv4 address an IPv6 one carries, and how: IPv4-mapped `::ffff:0:0/96` (RFC 4291),
 * IPv4-compatible `::/96` (RFC 4291, deprecated), IPv4-translated `::ffff:0:0:0/96` (RFC 2765),
 * NAT64 `64:ff9b::/96` (RFC 6052), 6to4
 * `2002::/16` (RFC 3056, bits 16..47).
 */
function embeddedIpv4(bits: bigint): { v4: bigint; form: 'mapped' | 'compatible' | 'translated' | 'nat64' | '6to4' } | undefined {
  const low32 = bits & 0xffffffffn;
  if (bits >> 32n === 0xffffn) return { v4: low32, form: 'mapped' };
  if (bits >> 32n === 0n && bits > 1n) return { v4: low32, form: 'compatible' };
  if (bits >> 32n === 0xffff0000n) return { v4: low32, form: 'translated' };
  if (bits >> 32n === 0x64ff9b0000000000000000n) return { v4: low32, form: 'nat64' };
  if (bits >> 112n === 0x2002n) return { v4: (bits >> 80n) & 0xffffffffn, form: '6to4' };
  return undefined;
}

export interface AddressVerdict {
  class: AddressClass;
  /** The IPv4 address an IPv6 address carries, when that decided. */
  carries?: string;
}

/** The class of an IP literal (IPv4 dotted quad or IPv6, no brackets or zone); throws for anything else. */
export function classifyAddress(address: string): AddressVerdict {
  const family = isIP(address);
  if (family === 4) return { class: lookupClass(ipv4Bits(address), 32) };
  if (family !== 6 || address.includes('%')) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  const bits = ipv6Bits(address);
  const direct = lookupClass(bits, 128);
  if (direct !== 'public') return { class: direct };
  const embedded = embeddedIpv4(bits);
  if (embedded) {
    const carried = lookupClass(embedded.v4, 32);
    if (carried !== 'public') return { class: carried, carries: ipv4Text(embedded.v4) };
    // A public IPv4 address in a deprecated form is still not an address a host should be sent to.
    return { class: embedded.form === 'compatible' || embedded.form === 'translated' ? 'reserved' : 'public', carries: ipv4Text(embedded.v4) };
  }
  return { class: within(bits, 128, GLOBAL_UNICAST.network, GLOBAL_UNICAST.prefix) ? 'public' : 'reserved' };
}

/** True for an address on the public internet; false for everything classified otherwise. */
export function isPublicAddress(address: string): boolean {
  return isIP(address) !== 0 && !address.includes('%') && classifyAddress(address).class === 'public';
}

/** "a private network address", "carries 127.0.0.1, a loopback address (this machine)". */
function verdictWords(verdict: AddressVerdict): string {
  if (verdict.class === 'public') return 'a public address';
  const words = CLASS_WORDS[verdict.class];
  return verdict.carries ? `carries ${verdict.carries}, ${words}` : words;
}

/**
 * Why an address is refused, in words an answer can carry: "10.0.0.5 is a private network
 * address", "::ffff:7f00:1 carries 127.0.0.1, a loopback address (this machine)", or with the
 * name that resolved to it, "db.example resolves to 10.0.0.5, a private network address".
 */
export function describeAddress(address: string, host = address, verdict: AddressVerdict = classifyAddress(address)): string {
  const words = verdictWords(verdict);
  if (host === address) return verdict.carries ? `${address} ${words}` : `${address} is ${words}`;
  return verdict.carries ? `${host} resolves to ${address}, which ${words}` : `${host} resolves to ${address}, ${words}`;
}

/** A connection refused for the address it would go to. */
export class RefusedAddress extends Error {
  readonly verdict: AddressVerdict;

  constructor(
    readonly host: string,
    readonly address: string,
    verdict?: AddressVerdict,
  ) {
    const judged = verdict ?? classifyAddress(address);
    super(`${describeAddress(address, host, judged)}, not a public address`);
    this.name = 'RefusedAddress';
    this.verdict = judged;
  }
}

/**
 * A `lookup` for node:net, node:http(s) and undici connections: resolves as usual, then refuses
 * (RefusedAddress) when any address the name has fails `allowed`, and otherwise hands exactly the
 * addresses it checked to the connection. So the check and the connect see the same answer: a name
 * that resolves to a public address now and to 127.0.0.1 a moment later (DNS rebinding) cannot
 * slip between them. Node calls no lookup for an IP literal: callers check those themselves.
 */
export function checkedLookup(allowed: (address: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (error, found) => {
      if (error) return callback(error, '', 0);
      const bad = found.find(({ address }) => !allowed(address));
      if (bad) return callback(new RefusedAddress(hostname, bad.address), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
      const first = found[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

/** An IP literal, or a CIDR block of one: `203.0.113.0/24`, `::1`. For settings that name addresses. */
export function parseAddressBlock(entry: string): { address: string; prefix: number; family: 4 | 6 } | undefined {
  const [address = '', prefix, ...more] = entry.trim().split('/');
  const family = address.includes('%') ? 0 : isIP(address);
  if ((family !== 4 && family !== 6) || more.length > 0) return undefined;
  const width = family === 4 ? 32 : 128;
  if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= width)) return undefined;
  return { address, prefix: prefix === undefined ? width : Number(prefix), family };
}

/** Whether `address` lies in one of `entries` (from `parseAddressBlock`); IPv4-mapped IPv6 counts as its IPv4 address. */
export function inAddressBlocks(address: string, entries: ReadonlyArray<{ address: string; prefix: number; family: 4 | 6 }>): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  const bits = family === 4 ? ipv4Bits(address) : ipv6Bits(address);
  const v4 = family === 6 && bits >> 32n === 0xffffn ? bits & 0xffffffffn : undefined;
  return entries.some((entry) => {
    if (entry.family === 4) {
      const candidate = family === 4 ? bits : v4;
      return candidate !== undefined && within(candidate, 32, ipv4Bits(entry.address), entry.prefix);
    }
    return family === 6 && within(bits, 128, ipv6Bits(entry.address), entry.prefix);
  });
}
