/**
 * A hostile or broken "provider A": real discovery and JWKS, but a token endpoint whose answer
 * each test scripts (ID tokens with the wrong audience, issuer, nonce, signature, algorithm…,
 * or garbage). The authorization step is skipped: tests take `state` and `nonce` from our
 * authorization URL and call our callback directly, as an attacker could.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';

export interface TokenAnswer {
  status?: number;
  contentType?: string;
  body: unknown;
}

export interface RogueOidc {
  issuer: string;
  kid: string;
  /** What the token endpoint answers next (the request's form is given). */
  answer: (form: URLSearchParams) => TokenAnswer | Promise<TokenAnswer>;
  /** When set, the discovery document is this instead (garbage discovery). */
  discovery: TokenAnswer | undefined;
  /** When set, the JWKS endpoint answers this instead of the keys. */
  jwks: TokenAnswer | undefined;
  sign(claims: JWTPayload, opts?: { alg?: string; key?: CryptoKey | Uint8Array; kid?: string }): Promise<string>;
  privateKey: CryptoKey;
  close(): Promise<void>;
}

export async function startRogueOidc(): Promise<RogueOidc> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'rogue-key';
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rogue: RogueOidc = {
    issuer,
    kid,
    privateKey,
    discovery: undefined,
    jwks: undefined,
    answer: () => ({ status: 400, body: { error: 'invalid_grant' } }),
    async sign(claims, opts = {}) {
      const alg = opts.alg ?? 'RS256';
      return new SignJWT(claims).setProtectedHeader({ alg, kid: opts.kid ?? kid, typ: 'JWT' }).sign(opts.key ?? privateKey);
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const send = (res: ServerResponse, a: TokenAnswer) => {
    res.writeHead(a.status ?? 200, { 'content-type': a.contentType ?? 'application/json', 'cache-control': 'no-store' });
    res.end(typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
  };
  server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    if (path === '/.well-known/openid-configuration') {
      return send(
        res,
        rogue.discovery ?? {
          body: {
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
            code_challenge_methods_supported: ['S256'],
          },
        },
      );
    }
    if (path === '/jwks') return send(res, rogue.jwks ?? { body: { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] } });
    if (path === '/token' && req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      return send(res, await rogue.answer(new URLSearchParams(body)));
    }
    send(res, { status: 404, body: { error: 'not_found' } });
  });
  return rogue;
}
