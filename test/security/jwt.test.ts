/**
 * JWT attacks against every place an account token is accepted (a protected call and refresh):
 * alg none, HS256 keyed with the public key, unknown or forged kid, expired, not yet valid,
 * wrong typ / aud / iss, crit/b64 headers, claims of the wrong type, malformed compact forms, and
 * tokens of a revoked session. Each must be a 401 in the documented error shape, never a 5xx. The
 * verifier is our own (node:crypto, server/account/tokens/jwt.ts), so a token a standard library
 * signs correctly must still pass (interop).
 */
import { createHmac, sign } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

describe.each(await accountStoreKinds())('JWT attacks on %s', (kind) => {
  let account: TestAccount;
  let api: string;
  let pair: Pair;
  const post = (path: string, body: unknown) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const me = (token: string) => fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${token}` } });
  const guest = async (device: string) => (await (await post('/auth/guest', { device_id: testDeviceId(device) })).json()) as Pair;

  /** A token signed with the service's own private key: only the claims or header are wrong. */
  const signed = (claims: JWTPayload, header: Record<string, unknown> = {}) => {
    const { keys } = account.services.tokens.issuer;
    return new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: keys.kid, typ: 'JWT', ...header }).sign(keys.privateKey);
  };

  /** Expects 401 with {detail, code} and no stack, both as an access token and as a refresh token. */
  const refused = async (token: string, code?: string) => {
    for (const res of [await me(token), await post('/auth/refresh', { refresh_token: token })]) {
      expect(res.status).toBe(401);
      const text = await res.text();
      expect(text).not.toMatch(/\n\s+at /);
      const body = JSON.parse(text) as { detail: unknown; code: unknown };
      expect(body).toEqual({ detail: expect.any(String), code: expect.any(String) });
      if (code) expect(body.code).toBe(code);
    }
  };

  beforeAll(async () => {
    account = await startTestAccount(kind);
    api = `${account.url}/api/v1`;
    pair = await guest('jwt-attacks');
    expect((await me(pair.access_token)).status).toBe(200);
  });
  afterAll(() => account.stop());

  it('alg none (with and without a signature, any spelling)', async () => {
    const claims = decodeJwt(pair.access_token);
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      await refused(`${b64({ alg, typ: 'JWT' })}.${b64(claims)}.`);
      await refused(`${b64({ alg, typ: 'JWT', kid: decodeProtectedHeader(pair.access_token).kid })}.${b64(claims)}.${pair.access_token.split('.')[2]}`);
    }
  });

  it('HS256 keyed with the public key (JWK x, the JWKS document, the raw key bytes)', async () => {
    const claims = decodeJwt(pair.access_token);
    const jwks = (await (await fetch(`${account.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ x: string; kid: string }> };
    const jwk = jwks.keys[0]!;
    const secrets = [jwk.x, JSON.stringify(jwk), JSON.stringify(jwks), Buffer.from(jwk.x, 'base64url')];
    for (const secret of secrets) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        const head = `${b64({ alg, typ: 'JWT', kid: jwk.kid })}.${b64(claims)}`;
        const mac = createHmac(`sha${alg.slice(2)}`, secret)
          .update(head)
          .digest('base64url');
        await refused(`${head}.${mac}`);
      }
    }
  });

  it('unknown kid, missing kid, kid pointing elsewhere, embedded jwk / jku / x5u headers', async () => {
    const claims = decodeJwt(pair.access_token);
    await refused(await signed(claims, { kid: 'nope' }));
    await refused(await signed(claims, { kid: '../../../../dev/null' }));
    await refused(await signed(claims, { kid: undefined }));
    // An attacker's own key offered in the header: the service must use only its own keys.
    const { generateKeyPair, exportJWK } = await import('jose');
    const attacker = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const attackerJwk = await exportJWK(attacker.publicKey);
    for (const header of [{ jwk: attackerJwk }, { jku: 'http://127.0.0.1:1/jwks.json' }, { x5u: 'http://127.0.0.1:1/cert' }]) {
      const token = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: 'attacker', ...header }).sign(attacker.privateKey);
      await refused(token);
      const withOurKid = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'EdDSA', kid: decodeProtectedHeader(pair.access_token).kid as string, ...header })
        .sign(attacker.privateKey);
      await refused(withOurKid);
    }
  });

  it('expired (TOKEN_EXPIRED) and not yet valid', async () => {
    const claims = decodeJwt(pair.access_token);
    await refused(await signed({ ...claims, iat: now() - 7200, exp: now() - 3600 }), 'TOKEN_EXPIRED');
    await refused(await signed({ ...claims, nbf: now() + 3600 }));
    await refused(await signed({ ...claims, exp: undefined }));
    await refused(await signed({ ...claims, iat: undefined }));
  });

  it('wrong typ (claim), wrong aud, wrong iss, missing sid/sub', async () => {
    const claims = decodeJwt(pair.access_token);
    for (const typ of ['refresh', 'id', 'ACCESS', '', undefined]) await refused(await signed({ ...claims, typ }).then((t) => t));
    // A refresh token as an access token and the reverse.
    expect((await me(pair.refresh_token)).status).toBe(401);
    expect((await post('/auth/refresh', { refresh_token: pair.access_token })).status).toBe(401);
    await refused(await signed({ ...claims, aud: 'https://evil.example' }));
    await refused(await signed({ ...claims, aud: ['https://evil.example'] }));
    await refused(await signed({ ...claims, iss: 'https://evil.example' }));
    await refused(await signed({ ...claims, sid: undefined }));
    await refused(await signed({ ...claims, sub: undefined }));
  });

  it('headers that change how a token is read (crit, b64) and claims of the wrong type', async () => {
    const claims = decodeJwt(pair.access_token);
    // Validly signed with our key, by hand: jose itself refuses to make some of these.
    const kid = decodeProtectedHeader(pair.access_token).kid;
    for (const header of [
      { alg: 'EdDSA', kid, crit: ['exp'], exp: 1 },
      { alg: 'EdDSA', kid, b64: false, crit: ['b64'] },
      { alg: 'EdDSA', kid, b64: true },
    ]) {
      const input = `${b64(header)}.${b64(claims)}`;
      await refused(`${input}.${sign(null, Buffer.from(input), account.services.tokens.issuer.keys.privateKey).toString('base64url')}`);
    }
    await refused(await signed({ ...claims, jti: undefined }));
    for (const wrong of [{ exp: String(now() + 3600) }, { iat: String(now()) }, { nbf: 'tomorrow' }, { sid: 42 }]) {
      await refused(await signed({ ...claims, ...wrong } as JWTPayload));
    }
  });

  it('malformed compact forms: extra segments, padding, other alphabets, whitespace, an oversized signature', async () => {
    const [h, p, s] = pair.access_token.split('.') as [string, string, string];
    for (const token of [
      `${h}.${p}.${s}.${s}`,
      `${h}.${p}`,
      `${h}.${p}.${s}=`,
      `${h}.${p}.${s.replace(/-/g, '+').replace(/_/g, '/')}x`,
      `${h}.${p}. ${s}`,
      `${h}.${p}.${s}${s}`,
      `${h}..${s}`,
    ]) {
      if (token === pair.access_token) continue;
      const res = await me(token);
      expect(res.status).toBe(401);
    }
  });

  it('interop: a token a standard library (jose) signs with our key and our claims is accepted', async () => {
    const claims = decodeJwt(pair.access_token);
    expect((await me(await signed({ ...claims, jti: 'interop-check' }))).status).toBe(200);
  });

  it('a valid signature over a session that does not exist', async () => {
    const claims = decodeJwt(pair.access_token);
    await refused(await signed({ ...claims, sid: '00000000-0000-4000-8000-000000000000' }));
  });

  it('tokens of a revoked session (logout, logout/all, refresh reuse) stop working at once', async () => {
    const a = await guest('jwt-revoked-a');
    expect((await post('/auth/logout', { refresh_token: a.refresh_token })).status).toBe(204);
    await refused(a.access_token);
    await refused(a.refresh_token);

    const b = await guest('jwt-revoked-b');
    const res = await fetch(`${api}/auth/logout/all`, { method: 'POST', headers: { authorization: `Bearer ${b.access_token}` } });
    expect(res.status).toBe(204);
    await refused(b.access_token);
    await refused(b.refresh_token);

    const c = await guest('jwt-revoked-c');
    const rotated = (await (await post('/auth/refresh', { refresh_token: c.refresh_token })).json()) as Pair;
    expect((await me(rotated.access_token)).status).toBe(200);
    // The old refresh token: spent (401), whatever happens to the family.
    expect((await post('/auth/refresh', { refresh_token: c.refresh_token })).status).toBe(401);
  });

  it('a forged token with a self-consistent header still needs our key (tampered payload)', async () => {
    const [h, , s] = pair.access_token.split('.');
    const claims = decodeJwt(pair.access_token);
    await refused(`${h}.${b64({ ...claims, guest: false })}.${s}`);
    await refused(`${h}.${b64({ ...claims, exp: now() + 10 * 365 * 86400 })}.${s}`);
  });
});
