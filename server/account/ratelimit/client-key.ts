/**
 * The bucket a client address counts in (docs/api.md, "Abuse limits").
 *
 * An IPv4 address is one bucket. An IPv6 client is handed a whole /64 (2^64 addresses) by its
 * provider, so keying on the full address would give it unlimited fresh buckets: IPv6 counts per
 * prefix (IPV6_SUBNET, 64 unless configured). An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what
 * a dual-stack socket reports for an IPv4 peer) is that IPv4 address, not a prefix of its own.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The 16 bytes of an IPv6 address (any textual form, zone id ignored), or undefined. */
function ipv6Bytes(address: string): Uint8Array | undefined {
  const text = address.replace(/%.*$/, '');
  if (!isIPv6(text)) return undefined;
  const groups: string[] = [];
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => {
    const out: string[] = [];
    for (const piece of part ? part.split(':') : []) {
      if (piece.includes('.')) {
        const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
        out.push(((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
      } else out.push(piece);
    }
    return out;
  };
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  groups.push(...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back);
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

const isMappedIpv4 = (bytes: Uint8Array) => bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;

/**
 * `1.2.3.4` for IPv4 (mapped or not); `2001:db8:0:0:0:0:0:0/64` for any address of that /64;
 * anything that is not an address (a missing socket address) is its own bucket.
 */
export function clientKey(address: string, ipv6Subnet: number): string {
  if (isIPv4(address)) return address;
  const bytes = ipv6Bytes(address);
  if (!bytes) return address;
  if (isMappedIpv4(bytes)) return bytes.subarray(12).join('.');
  bytes.forEach((byte, i) => {
    const kept = Math.max(0, Math.min(8, ipv6Subnet - i * 8));
    bytes[i] = byte & (0xff00 >> kept);
  });
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16));
  return `${groups.join(':')}/${ipv6Subnet}`;
}
