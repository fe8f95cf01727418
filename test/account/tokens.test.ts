import { createHash, generateKeyPairSync, verify } from 'node:crypto';
import { generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_PLACE_MAX_CORES, SIGN_IN_PLACE_MAX_MICROS, signers, signingMicros, signingPlace } from '../../server/account/tokens/jwt.js';
import { revokeIfStolen } from '../../server/account/tokens/sessions.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

const kinds = await accountStoreKinds();

describe.each(kinds)('tokens on %s', (kind) => {
  let account: TestAccount;
  let api: string;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const me = (access: string) => fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${access}` } });
  const guest = async (deviceId: string): Promise<Pair> => {
    const res = await post('/auth/guest', { device_id: testDeviceId(deviceId) });
    expect(res.status).toBe(200);
    return (await res.json()) as Pair;
  };

  beforeAll(async () => {
    account = await startTestAccount(kind);
    api = `${account.url}/api/v1`;
  });
  afterAll(() => account.stop());

  it('issues the documented pair with EdDSA, kid and the designed claims', async () => {
    const pair = await guest('device-claims');
    expect(pair).toEqual({ access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', expires_in: 900 });
    const header = decodeProtectedHeader(pair.access_token);
    expect(header.alg).toBe('EdDSA');
    const jwks = (await (await fetch(`${account.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string; d?: string }> };
    expect(jwks.keys.map((k) => k.kid)).toContain(header.kid);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
    const access = decodeJwt(pair.access_token);
    expect(access).toMatchObject({ iss: account.services.config.baseUrl, aud: account.services.config.baseUrl, typ: 'access', guest: true });
    expect((access.exp ?? 0) - (access.iat ?? 0)).toBe(900);
    const refresh = decodeJwt(pair.refresh_token);
    expect((refresh.exp ?? 0) - (refresh.iat ?? 0)).toBe(30 * 24 * 3600);
    expect(refresh.sid).toBe(access.sid);
  });

  it('maps one device id to one guest account', async () => {
    const a = await guest('device-same');
    const b = await guest('device-same');
    const c = await guest('device-other');
    const id = async (p: Pair) => ((await (await me(p.access_token)).json()) as { user_id: string }).user_id;
    expect(await id(a)).toBe(await id(b));
    expect(await id(a)).not.toBe(await id(c));
  });

  it.each([[''], ['x'.repeat(15)], ['x'.repeat(201)], ['has space'], ['tab\there'], ['ünïcode']])('refuses device id %j', async (deviceId) => {
    const res = await post('/auth/guest', { device_id: deviceId });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('rotates refresh tokens: the new one works, the old one does not', async () => {
    const first = await guest('device-rotate');
    const res = await post('/auth/refresh', { refresh_token: first.refresh_token });
    expect(res.status).toBe(200);
    const second = (await res.json()) as Pair;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const replay = await post('/auth/refresh', { refresh_token: first.refresh_token });
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: 'INVALID_REFRESH_TOKEN' });
    expect((await post('/auth/refresh', { refresh_token: second.refresh_token })).status).toBe(200);
  });

  it("a refresh stamps the user's last activity behind the answer, to the minute: within a minute of the last stamp it leaves the row alone", async () => {
    const pair = await guest('device-last-active');
    const { user_id: userId } = (await (await me(pair.access_token)).json()) as { user_id: string };
    const { db } = account.services.store;
    const stampedAgo = async (ms: number) => {
      const at = new Date(Date.now() - ms);
      await db.user.update({ where: { id: userId }, data: { lastActiveAt: at } });
      return at;
    };
    const lastActive = async () => (await db.user.findUniqueOrThrow({ where: { id: userId }, select: { lastActiveAt: true } })).lastActiveAt.getTime();

    const { usage } = account.services.tokens;
    await usage.flush();

    const recent = await stampedAgo(30_000);
    const second = (await (await post('/auth/refresh', { refresh_token: pair.refresh_token })).json()) as Pair;
    expect(await usage.flush()).toEqual({ sessions: 0, users: 1 });
    expect(await lastActive()).toBe(recent.getTime());

    const stale = await stampedAgo(61_000);
    const before = Date.now();
    expect((await post('/auth/refresh', { refresh_token: second.refresh_token })).status).toBe(200);
    // Not on the refresh's own path: the row changes at the flush.
    expect(await lastActive()).toBe(stale.getTime());
    expect(await usage.flush()).toEqual({ sessions: 0, users: 1 });
    expect(await lastActive()).toBeGreaterThanOrEqual(before);
  });

  it('gives exactly one new pair to 20 concurrent refreshes of one token', async () => {
    const pair = await guest('device-race');
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('/auth/refresh', { refresh_token: pair.refresh_token })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(19);
  });

  it('treats a reuse after the grace period as theft and ends the whole session', async () => {
    const pair = await guest('device-theft');
    const rotated = (await (await post('/auth/refresh', { refresh_token: pair.refresh_token })).json()) as Pair;
    const claims = decodeJwt(pair.refresh_token);
    const later = new Date(Date.now() + 11_000);
    expect(await revokeIfStolen(account.services.store, claims.sid as string, claims.gen as number, later)).toBe(true);
    const stolenFamily = await post('/auth/refresh', { refresh_token: rotated.refresh_token });
    expect(stolenFamily.status).toBe(401);
  });

  it('a reuse over the API more than one generation back revokes the family', async () => {
    const p0 = await guest('device-theft-2');
    const p1 = (await (await post('/auth/refresh', { refresh_token: p0.refresh_token })).json()) as Pair;
    const p2 = (await (await post('/auth/refresh', { refresh_token: p1.refresh_token })).json()) as Pair;
    const reuse = await post('/auth/refresh', { refresh_token: p0.refresh_token });
    expect(await reuse.json()).toMatchObject({ code: 'REFRESH_TOKEN_REUSED' });
    expect((await post('/auth/refresh', { refresh_token: p2.refresh_token })).status).toBe(401);
    expect((await me(p2.access_token)).status).toBe(401);
  });

  it('logout ends one session at once, for refresh and access tokens; unknown tokens still get 204', async () => {
    const a = await guest('device-logout');
    const b = await guest('device-logout');
    const res = await post('/auth/logout', { refresh_token: a.refresh_token });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect((await me(a.access_token)).status).toBe(401);
    expect((await post('/auth/refresh', { refresh_token: a.refresh_token })).status).toBe(401);
    expect((await me(b.access_token)).status).toBe(200);
    expect((await post('/auth/logout', { refresh_token: a.refresh_token })).status).toBe(204);
    expect((await post('/auth/logout', { refresh_token: 'not.a.jwt' })).status).toBe(204);
  });

  it('logout/all ends every session of the user', async () => {
    const a = await guest('device-all');
    const b = await guest('device-all');
    const other = await guest('device-all-other');
    expect((await post('/auth/logout/all', undefined, { authorization: 'Bearer nope' })).status).toBe(401);
    const res = await fetch(`${api}/auth/logout/all`, { method: 'POST', headers: { authorization: `Bearer ${a.access_token}` } });
    expect(res.status).toBe(204);
    for (const pair of [a, b]) {
      expect((await me(pair.access_token)).status).toBe(401);
      expect((await post('/auth/refresh', { refresh_token: pair.refresh_token })).status).toBe(401);
    }
    expect((await me(other.access_token)).status).toBe(200);
  });

  describe('hostile tokens', () => {
    let pair: Pair;
    beforeAll(async () => {
      pair = await guest('device-hostile');
    });

    it('an access token is not a refresh token, and the reverse', async () => {
      expect((await post('/auth/refresh', { refresh_token: pair.access_token })).status).toBe(401);
      expect((await me(pair.refresh_token)).status).toBe(401);
    });

    it.each([
      ['no header', undefined],
      ['empty', ''],
      ['bearer only', 'Bearer'],
      ['wrong scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['garbage', 'Bearer !!!'],
      ['two tokens', 'Bearer a.b.c d.e.f'],
    ])('refuses Authorization %s', async (_name, header) => {
      const res = await fetch(`${api}/auth/me`, { headers: header === undefined ? {} : { authorization: header } });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ detail: expect.any(String), code: expect.any(String) });
    });

    it('refuses alg none, another key, a forged kid and tampered claims', async () => {
      const claims = decodeJwt(pair.access_token);
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const kid = decodeProtectedHeader(pair.access_token).kid as string;
      const otherKey = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid }).sign(privateKey);
      const unknownKid = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: 'nope' }).sign(privateKey);
      const [h, , s] = pair.access_token.split('.');
      const tampered = `${h}.${b64({ ...claims, sub: '00000000-0000-0000-0000-000000000000' })}.${s}`;
      for (const token of [none, otherKey, unknownKid, tampered]) {
        expect((await me(token)).status).toBe(401);
        expect((await post('/auth/refresh', { refresh_token: token })).status).toBe(401);
      }
    });

    describe('refresh by digest (sessions.ts)', () => {
      const sessionRow = (sid: string) =>
        account.services.store.db.session.findUnique({ where: { id: sid }, select: { generation: true, refreshDigest: true, revokedAt: true } });
      const sha256 = (token: string) => createHash('sha256').update(token).digest('base64url');
      const refreshed = async (p: Pair) => {
        const res = await post('/auth/refresh', { refresh_token: p.refresh_token });
        expect(res.status).toBe(200);
        return (await res.json()) as Pair;
      };
      /** The same token with its signature's first character changed (still 64 bytes). */
      const withOtherSignature = (token: string) => {
        const [h, p, sig] = token.split('.') as [string, string, string];
        return `${h}.${p}.${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
      };
      /** Each token must be refused with `code`, and leave the session as it was. */
      const refusedWithoutHarm = async (sid: string, tokens: string[], code: string) => {
        const before = await sessionRow(sid);
        for (const token of tokens) {
          const res = await post('/auth/refresh', { refresh_token: token });
          expect(res.status).toBe(401);
          expect(await res.json()).toMatchObject({ code });
        }
        expect(await sessionRow(sid)).toEqual(before);
      };

      it('stores only the digest of the refresh token each rotation hands out; a new session holds none', async () => {
        const p0 = await guest('digest-store');
        const sid = decodeJwt(p0.refresh_token).sid as string;
        expect(await sessionRow(sid)).toEqual({ generation: 0, refreshDigest: null, revokedAt: null });
        const p1 = await refreshed(p0);
        expect(await sessionRow(sid)).toEqual({ generation: 1, refreshDigest: sha256(p1.refresh_token), revokedAt: null });
        const p2 = await refreshed(p1);
        expect(await sessionRow(sid)).toEqual({ generation: 2, refreshDigest: sha256(p2.refresh_token), revokedAt: null });
        // The guest flag is the access token's; a refresh reads it from the user row.
        expect(decodeJwt(p2.refresh_token)).not.toHaveProperty('guest');
        expect(decodeJwt(p2.access_token)).toMatchObject({ sid, typ: 'access', guest: true });
      });

      it('a rotated session takes only the exact token it issued; altered or re-signed tokens are refused and end nothing', async () => {
        const p1 = await refreshed(await guest('digest-tamper'));
        const claims = decodeJwt(p1.refresh_token);
        const sid = claims.sid as string;
        const { keys } = account.services.tokens.issuer;
        const { privateKey: attackerKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
        const attackerSigned = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: keys.kid, typ: 'JWT' }).sign(attackerKey);
        await refusedWithoutHarm(sid, [withOtherSignature(p1.refresh_token), attackerSigned], 'INVALID_TOKEN');
        // Even our own signature does not stand in for the digest: a token of this generation that the session did not issue.
        const notIssued = await new SignJWT({ ...claims, jti: crypto.randomUUID() })
          .setProtectedHeader({ alg: 'EdDSA', kid: keys.kid, typ: 'JWT' })
          .sign(keys.privateKey);
        await refusedWithoutHarm(sid, [notIssued], 'INVALID_REFRESH_TOKEN');
        const p2 = await refreshed(p1);
        expect((await me(p2.access_token)).status).toBe(200);
      });

      it('a never-rotated session checks the signature: an altered one is refused and ends nothing', async () => {
        const p0 = await guest('digest-new-tamper');
        await refusedWithoutHarm(decodeJwt(p0.refresh_token).sid as string, [withOtherSignature(p0.refresh_token)], 'INVALID_TOKEN');
        await refreshed(p0);
      });

      it('a session stored before digests (rotated, none held) rotates with its genuine token, then holds a digest', async () => {
        const p1 = await refreshed(await guest('digest-legacy'));
        const sid = decodeJwt(p1.refresh_token).sid as string;
        await account.services.store.db.session.update({ where: { id: sid }, data: { refreshDigest: null } });
        await refusedWithoutHarm(sid, [withOtherSignature(p1.refresh_token)], 'INVALID_TOKEN');
        const p2 = await refreshed(p1);
        expect(await sessionRow(sid)).toEqual({ generation: 2, refreshDigest: sha256(p2.refresh_token), revokedAt: null });
        expect((await post('/auth/refresh', { refresh_token: p1.refresh_token })).status).toBe(401);
      });

      it('a forged token of a spent generation is refused as invalid and does not count as a reuse (the session lives on)', async () => {
        const p1 = await refreshed(await guest('digest-forged-reuse'));
        const p3 = await refreshed(await refreshed(p1));
        const claims = decodeJwt(p1.refresh_token);
        const sid = claims.sid as string;
        // Two generations back: a genuine p1 would revoke the family at once, grace or not.
        const { privateKey: attackerKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
        const { kid } = account.services.tokens.issuer.keys;
        const attackerSigned = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' }).sign(attackerKey);
        await refusedWithoutHarm(sid, [withOtherSignature(p1.refresh_token), attackerSigned], 'INVALID_TOKEN');
        const p4 = await refreshed(p3);
        expect((await me(p4.access_token)).status).toBe(200);
      });
    });

    it('refuses expired tokens with TOKEN_EXPIRED', async () => {
      const { keys } = account.services.tokens.issuer;
      const claims = decodeJwt(pair.access_token);
      const past = Math.floor(Date.now() / 1000) - 3600;
      const expired = await new SignJWT({ ...claims, iat: past - 900, exp: past }).setProtectedHeader({ alg: 'EdDSA', kid: keys.kid }).sign(keys.privateKey);
      const res = await me(expired);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'TOKEN_EXPIRED' });
    });
  });
});

describe('where a token is signed (tokens/jwt.ts)', () => {
  it('a key signs in place on few cores when a signature is cheap there, on the thread pool otherwise', () => {
    const cheap = () => SIGN_IN_PLACE_MAX_MICROS - 8;
    expect(signingPlace(SIGN_IN_PLACE_MAX_CORES, cheap)).toBe('in place');
    expect(signingPlace(1, () => SIGN_IN_PLACE_MAX_MICROS)).toBe('in place');
    expect(signingPlace(SIGN_IN_PLACE_MAX_CORES, () => SIGN_IN_PLACE_MAX_MICROS + 0.5)).toBe('pool');
    expect(signingPlace(SIGN_IN_PLACE_MAX_CORES, () => 130)).toBe('pool');
    // With cores to spare the pool's thread runs beside the event loop: nothing is timed.
    let timed = 0;
    expect(
      signingPlace(SIGN_IN_PLACE_MAX_CORES + 1, () => {
        timed++;
        return 1;
      }),
    ).toBe('pool');
    expect(timed).toBe(0);
    const { privateKey } = generateKeyPairSync('ed25519');
    const micros = signingMicros(privateKey);
    expect(micros).toBeGreaterThan(0);
    expect(micros).toBeLessThan(100_000);
  });

  it('both places make the same Ed25519 signature, which the public key verifies', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const data = Buffer.from('header.payload');
    const [inPlace, onPool] = await Promise.all([signers['in place'](privateKey)(data), signers.pool(privateKey)(data)]);
    expect(inPlace.equals(onPool)).toBe(true);
    expect(verify(null, data, publicKey, inPlace)).toBe(true);
    expect(verify(null, Buffer.from('header.payloaD'), publicKey, onPool)).toBe(false);
  });
});
