/**
 * The one address classifier (server/common/addresses.ts) that webhooks, the web tools and
 * connectors judge every destination with. Each non-public address is written the ways an attacker
 * would write it in a URL — decimal, hex, octal, short forms, trailing dots, IPv4-mapped,
 * -compatible, -translated, NAT64 and 6to4 IPv6 — and must come out refused with its reason;
 * ordinary public addresses must pass, or the guard would be useless.
 */
import { describe, expect, it } from 'vitest';
import { classifyAddress, describeAddress, inAddressBlocks, isPublicAddress, parseAddressBlock, type AddressClass } from '../../server/common/addresses.js';

/** The host a WHATWG URL parser (what every fetch here uses) makes of a URL, brackets removed. */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');

describe('spellings of one address come out as that address', () => {
  const loopback: string[] = [
    'http://127.0.0.1/',
    'http://2130706433/', // decimal
    'http://0x7f000001/', // hex
    'http://0x7f.0x0.0x0.0x1/',
    'http://0177.0.0.1/', // octal
    'http://0177.0000.0000.0001/',
    'http://127.1/', // short forms
    'http://127.0.1/',
    'http://127.0.0.1./', // trailing dot
    'http://127.000.000.001/',
    'http://user:pw@127.0.0.1/', // userinfo does not move the host
    'http://example.com@127.0.0.1/',
    'http://[::1]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[::ffff:127.0.0.1]/', // IPv4-mapped
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:127.0.0.1]/',
    'http://[::127.0.0.1]/', // IPv4-compatible
    'http://[::ffff:0:7f00:1]/', // IPv4-translated
    'http://[64:ff9b::127.0.0.1]/', // NAT64
    'http://[2002:7f00:1::]/', // 6to4
    'http://[2002:7f00:0001:0000:0000:0000:0000:0001]/',
  ];
  it.each(loopback)('%s is loopback', (url) => {
    expect(classifyAddress(hostOf(url)).class).toBe('loopback');
    expect(isPublicAddress(hostOf(url))).toBe(false);
  });

  const metadata = [
    'http://169.254.169.254/',
    'http://2852039166/',
    'http://0xa9fea9fe/',
    'http://0251.0376.0251.0376/',
    'http://[::ffff:169.254.169.254]/',
    'http://[fd00:ec2::254]/',
    'http://100.100.100.200/',
  ];
  it.each(metadata)('%s is cloud metadata', (url) => {
    expect(classifyAddress(hostOf(url)).class).toBe('cloud-metadata');
  });

  it('0.0.0.0 in its spellings is the unspecified address, which reaches this machine', () => {
    for (const url of ['http://0.0.0.0/', 'http://0/', 'http://0x0/', 'http://000.000.000.000/', 'http://[::]/', 'http://[::ffff:0.0.0.0]/']) {
      expect(classifyAddress(hostOf(url)).class, url).toBe('unspecified');
    }
  });
});

describe('every special-purpose range is refused with its reason', () => {
  const cases: Array<[string, AddressClass]> = [
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['100.127.255.254', 'carrier-grade-nat'],
    ['169.254.1.1', 'link-local'],
    ['169.254.170.2', 'cloud-metadata'],
    ['127.255.255.254', 'loopback'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.10', 'documentation'],
    ['198.18.0.1', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['100::1', 'reserved'],
    ['2001::1', 'reserved'], // Teredo
    ['64:ff9b:1::a00:1', 'private'], // local-use NAT64
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a00:1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
    ['2002:a00:1::1', 'private'],
    ['2002:c0a8:101::', 'private'],
    ['::1.2.3.4', 'reserved'], // IPv4-compatible form of a public address: deprecated
    ['4000::1', 'reserved'], // outside 2000::/3
  ];
  it.each(cases)('%s is %s', (address, expected) => {
    expect(classifyAddress(address).class).toBe(expected);
    expect(isPublicAddress(address)).toBe(false);
  });

  it('public addresses pass, in every form that carries them', () => {
    for (const address of [
      '1.1.1.1',
      '8.8.8.8',
      '93.184.216.34',
      '172.15.255.255',
      '172.32.0.1',
      '100.63.255.255',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001::1',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
    ]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });

  it('names the reason, and the IPv4 address an IPv6 one carries', () => {
    expect(describeAddress('10.0.0.5')).toBe('10.0.0.5 is a private network address');
    expect(describeAddress('::ffff:7f00:1')).toBe('::ffff:7f00:1 carries 127.0.0.1, a loopback address (this machine)');
    expect(describeAddress('169.254.169.254', 'metadata.example')).toBe("metadata.example resolves to 169.254.169.254, a cloud provider's metadata service");
  });

  it('anything that is not an IP literal is not public (names, zone ids, garbage)', () => {
    for (const value of ['localhost', 'example.com', 'fe80::1%eth0', '', '1.2.3', '::ffff:1.2.3.4.5']) expect(isPublicAddress(value), value).toBe(false);
    expect(() => classifyAddress('localhost')).toThrow(TypeError);
  });
});

describe('address blocks of settings', () => {
  it('parses addresses and CIDR blocks, and nothing else', () => {
    expect(parseAddressBlock('127.0.0.1')).toEqual({ address: '127.0.0.1', prefix: 32, family: 4 });
    expect(parseAddressBlock('203.0.113.0/24')).toEqual({ address: '203.0.113.0', prefix: 24, family: 4 });
    expect(parseAddressBlock('::1/128')).toEqual({ address: '::1', prefix: 128, family: 6 });
    for (const bad of ['127.1', '10.0.0.0/33', 'localhost', '10.0.0.0/8/8', 'fe80::1%eth0', '::/129']) expect(parseAddressBlock(bad), bad).toBeUndefined();
  });

  it('matches IPv4 blocks on IPv4-mapped IPv6 addresses too', () => {
    const blocks = ['127.0.0.1', '2001:db8::/32'].map((entry) => parseAddressBlock(entry)!);
    expect(inAddressBlocks('127.0.0.1', blocks)).toBe(true);
    expect(inAddressBlocks('::ffff:127.0.0.1', blocks)).toBe(true);
    expect(inAddressBlocks('127.0.0.2', blocks)).toBe(false);
    expect(inAddressBlocks('2001:db8::5', blocks)).toBe(true);
    expect(inAddressBlocks('2001:db9::5', blocks)).toBe(false);
  });
});
