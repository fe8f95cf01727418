/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com, "Signature scheme"), each rule
 * of the spec one line here:
 * - the secret is `whsec_` + base64 of random bytes (32 here); the HMAC key is those bytes;
 * - the signed content is `${webhook-id}.${webhook-timestamp}.${body}`, the timestamp in integer
 *   seconds since the epoch, the body exactly as sent;
 * - a signature is `v1,` + base64 of HMAC-SHA256 over it;
 * - `webhook-signature` holds one or more of them separated by spaces: during a secret rotation
 *   the previous secret signs too, so a receiver holding either one verifies (docs/admin.md,
 *   "Webhooks").
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

export const newWebhookSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('not a whsec_ secret');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt, signed with every secret that is valid now (newest first). */
export function signedHeaders(secrets: string[], id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => sign(secret, id, timestamp, body)).join(' '),
  };
}
