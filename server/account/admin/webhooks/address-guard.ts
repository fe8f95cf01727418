/**
 * Server-side request forgery guard for webhook endpoints (docs/security.md, "Webhooks"): an
 * admin (or a stolen API key with `webhooks:write`) must not turn the delivery worker into a
 * client of the service's own network — loopback, private ranges, link-local (cloud metadata at
 * 169.254.169.254), carrier-grade NAT, unique-local IPv6 and the rest of the special ranges, as
 * the service's one address classifier judges them (server/common/addresses.ts).
 *
 * Checked twice: when an endpoint is registered or changed (every address the name resolves to),
 * and at every delivery, on the very address the connection is made to (`guardedLookup`), so a
 * name that resolved to a public address at registration and to 127.0.0.1 later (DNS rebinding)
 * is refused then. WEBHOOK_ALLOW_PRIVATE=1 turns the guard off (tests, closed networks; unsafe).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { RefusedAddress, checkedLookup, isPublicAddress } from '../../../common/addresses.js';

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Registration check: every address the URL's host resolves to must be public. Resolves, or
 * rejects with RefusedAddress (or the resolver's own error for a name that does not resolve).
 */
export async function checkEndpointAddress(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = hostOf(url);
  const addresses: LookupAddress[] = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (error, found) => (error ? reject(error) : resolve(found))));
  for (const { address } of addresses) if (!isPublicAddress(address)) throw new RefusedAddress(host, address);
}

/** The `lookup` of a delivery's connection: public addresses only. Node calls no lookup for an IP literal: `deliver` checks those. */
export const guardedLookup = checkedLookup(isPublicAddress);
