/**
 * Token signing keys (docs/security.md, "Tokens and sessions": EdDSA/Ed25519, `kid` in the header, JWKS published).
 *
 * Keys live in `signing-keys.json` in the data directory (or SIGNING_KEYS_FILE), newest first,
 * generated on first start. Instances that share the file share the keys. To rotate, prepend a
 * new key (`npm run keys -- rotate`): the newest signs, the older ones keep verifying until the
 * tokens they signed have expired, after which they can be dropped.
 */
import { createPrivateKey, createPublicKey, randomUUID, type JsonWebKey as NodeJsonWebKey, type KeyObject } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

export const TOKEN_ALG = 'EdDSA';

export interface SigningKeys {
  kid: string;
  /** Node key objects: tokens are signed and verified with node:crypto (jwt.ts says where and why). */
  privateKey: KeyObject;
  publicKeys: Map<string, KeyObject>;
  /** The public half of every key, as served at /.well-known/jwks.json. */
  jwks: { keys: JWK[] };
}

async function newPrivateJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(TOKEN_ALG, { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: TOKEN_ALG, use: 'sig' };
}

async function readKeyFile(file: string): Promise<JWK[] | undefined> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (text === undefined) return undefined;
  const keys = JSON.parse(text) as unknown;
  if (!Array.isArray(keys) || keys.length === 0) throw new Error(`${file}: expected a non-empty JSON array of private JWKs`);
  return keys as JWK[];
}

/** Writes atomically (temp file + rename) with owner-only permissions. */
async function writeKeyFile(file: string, keys: JWK[]): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = `${file}.${randomUUID()}.tmp`;
  await writeFile(temp, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
}

export async function loadSigningKeys(file: string): Promise<SigningKeys> {
  let keys = await readKeyFile(file);
  if (!keys) {
    keys = [await newPrivateJwk()];
    await writeKeyFile(file, keys);
    // Two instances starting at once on one data directory: whoever renamed last wins; both re-read.
    keys = (await readKeyFile(file)) ?? keys;
  }
  const publicKeys = new Map<string, KeyObject>();
  const jwks: JWK[] = [];
  for (const jwk of keys) {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.d || !jwk.kid) throw new Error(`${file}: every key must be a private Ed25519 JWK with a kid`);
    const { d: _private, ...publicJwk } = jwk;
    publicKeys.set(jwk.kid, createPublicKey({ key: publicJwk as NodeJsonWebKey, format: 'jwk' }));
    jwks.push({ kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x, kid: publicJwk.kid, alg: TOKEN_ALG, use: 'sig' });
  }
  const newest = keys[0] as JWK;
  return {
    kid: newest.kid as string,
    privateKey: createPrivateKey({ key: newest as NodeJsonWebKey, format: 'jwk' }),
    publicKeys,
    jwks: { keys: jwks },
  };
}

/** Prepends a fresh key: it signs from the next start on; the old ones keep verifying. */
export async function rotateSigningKeys(file: string): Promise<string> {
  const fresh = await newPrivateJwk();
  await writeKeyFile(file, [fresh, ...((await readKeyFile(file)) ?? [])]);
  return fresh.kid as string;
}
