/**
 * Real identity providers on loopback, for the OAuth tests (vitest and Playwright).
 *
 * - Provider A: `oidc-provider` (a certified OpenID provider) with its own login and consent
 *   pages (`input[name=login]`, `input[name=password]`, `button[type=submit]`; "[ Cancel ]"
 *   denies). Its signing key is generated here, so tests can also mint ID tokens as provider A
 *   would (`signIdToken`) for the native sign-in endpoint.
 * - Provider B: a small GitHub-shaped OAuth 2 server (RFC 6749 authorization code + RFC 7636
 *   PKCE S256, client_secret_post/basic, `GET /user`, `GET /user/emails`), with a login page of
 *   the same shape and a "Cancel" link. `misbehave` makes it fail in the ways real providers do.
 *
 * Accounts on both: any login with any password. `<name>` → `<name>@example.test`, verified;
 * a login starting with `unverified-` asserts an unverified address; `noemail-` none at all.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface TestClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export function accountClaims(login: string): { sub: string; email?: string; email_verified?: boolean; name: string } {
  const sub = login;
  if (login.startsWith('noemail-')) return { sub, name: login };
  const local = login.replace(/^unverified-/, '');
  return { sub, email: `${local}@example.test`, email_verified: !login.startsWith('unverified-'), name: login };
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A server that answers 503 until its handler is installed (readiness probes can come early). */
function deferredServer(): { server: Server; handle(handler: Handler): void } {
  let current: Handler = (_req, res) => {
    res.writeHead(503, { 'retry-after': '1' }).end();
  };
  const server = createServer((req, res) => current(req, res));
  return { server, handle: (handler) => (current = handler) };
}

async function listenOn(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// ---------------------------------------------------------------- provider A (oidc-provider)

export interface ProviderA {
  issuer: string;
  port: number;
  /** Mints an ID token signed with provider A's key (overrides win; `header` to tamper). */
  signIdToken(claims: JWTPayload, options?: { header?: Record<string, unknown>; key?: 'provider' | 'foreign' }): Promise<string>;
  close(): Promise<void>;
}

export async function startProviderA(options: { port?: number; clients: TestClient[] }): Promise<ProviderA> {
  const { server, handle } = deferredServer();
  const port = await listenOn(server, options.port ?? 0);
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };

  const provider = new Provider(issuer, {
    clients: options.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      redirect_uris: c.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, claims: () => accountClaims(id) };
    },
  });
  // Quiet: oidc-provider reports every refused request as an event; the tests assert outcomes.
  provider.on('server_error', (_ctx: unknown, error: unknown) => console.error('provider A server_error', error));
  handle(provider.callback());

  return {
    issuer,
    port,
    async signIdToken(claims, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      const key = opts.key === 'foreign' ? foreign.privateKey : privateKey;
      // A `jti` as real providers send (Google does): two tokens minted in one second differ.
      return new SignJWT({ iss: issuer, iat: now, exp: now + 300, jti: randomUUID(), ...claims })
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT', ...opts.header })
        .sign(key);
    },
    close: () => closeServer(server),
  };
}

// ---------------------------------------------------------------- provider B (GitHub-shaped)

export type Misbehaviour =
  | undefined
  | 'token-error' // token endpoint answers 400 {error: invalid_grant}
  | 'token-garbage' // token endpoint answers HTML with 200
  | 'user-500' // user endpoint fails
  | 'user-garbage' // user endpoint answers JSON without an id
  | 'slow'; // token endpoint never answers in time

export interface ProviderB {
  url: string;
  port: number;
  authorizeUrl: string;
  tokenUrl: string;
  userUrl: string;
  emailsUrl: string;
  misbehave: Misbehaviour;
  /** Whether the token endpoint insists on a PKCE verifier (GitHub accepts PKCE). */
  requirePkce: boolean;
  /** How many token requests were answered (to check that nothing is retried or skipped). */
  tokenRequests: number;
  close(): Promise<void>;
}

interface Grant {
  clientId: string;
  redirectUri: string;
  login: string;
  challenge: string | undefined;
  expires: number;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return new URLSearchParams(body);
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

export async function startProviderB(options: { port?: number; clients: TestClient[] }): Promise<ProviderB> {
  const codes = new Map<string, Grant>();
  const tokens = new Map<string, string>();
  const ids = new Map<string, number>();
  const { server, handle } = deferredServer();
  const port = await listenOn(server, options.port ?? 0);
  const url = `http://127.0.0.1:${port}`;
  const state: ProviderB = {
    url,
    port,
    authorizeUrl: `${url}/login/oauth/authorize`,
    tokenUrl: `${url}/login/oauth/access_token`,
    userUrl: `${url}/user`,
    emailsUrl: `${url}/user/emails`,
    misbehave: undefined,
    requirePkce: true,
    tokenRequests: 0,
    close: () => closeServer(server),
  };
  const client = (id: string | null) => options.clients.find((c) => c.clientId === id);
  const numericId = (login: string) => {
    if (!ids.has(login)) ids.set(login, 1000 + ids.size);
    return ids.get(login) as number;
  };
  const back = (redirectUri: string, params: Record<string, string>) => {
    const target = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
    return target.href;
  };

  handle(async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const here = new URL(req.url ?? '/', url);
      if (here.pathname === '/login/oauth/authorize' && req.method === 'GET') {
        const q = here.searchParams;
        const c = client(q.get('client_id'));
        const redirectUri = q.get('redirect_uri') ?? '';
        if (!c?.redirectUris.includes(redirectUri)) return send(res, 400, 'unknown client or redirect_uri', 'text/plain');
        if (q.get('response_type') !== 'code')
          return res.writeHead(302, { location: back(redirectUri, { error: 'unsupported_response_type', state: q.get('state') ?? '' }) }).end();
        const method = q.get('code_challenge_method');
        if (q.get('code_challenge') && method !== 'S256') return send(res, 400, 'only S256', 'text/plain');
        const cancel = back(redirectUri, {
          error: 'access_denied',
          error_description: 'The user has denied your application access.',
          state: q.get('state') ?? '',
        });
        const hidden = ['client_id', 'redirect_uri', 'state', 'code_challenge', 'scope']
          .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(q.get(name) ?? '')}">`)
          .join('');
        return send(
          res,
          200,
          `<!doctype html><title>Provider B</title><h1>Authorize ${escapeHtml(c.clientId)}</h1>
<form method="post" action="/login/oauth/authorize">${hidden}
<input type="text" name="login" required><input type="password" name="password" required>
<button type="submit">Authorize</button></form><a href="${escapeHtml(cancel)}">Cancel</a>`,
          'text/html; charset=utf-8',
        );
      }
      if (here.pathname === '/login/oauth/authorize' && req.method === 'POST') {
        const form = await readForm(req);
        const c = client(form.get('client_id'));
        const redirectUri = form.get('redirect_uri') ?? '';
        if (!c?.redirectUris.includes(redirectUri)) return send(res, 400, 'unknown client', 'text/plain');
        const code = randomBytes(20).toString('hex');
        codes.set(code, {
          clientId: c.clientId,
          redirectUri,
          login: form.get('login') ?? 'anonymous',
          challenge: form.get('code_challenge') || undefined,
          expires: Date.now() + 600_000,
        });
        res.writeHead(302, { location: back(redirectUri, { code, ...(form.get('state') ? { state: form.get('state') as string } : {}) }) }).end();
        return;
      }
      if (here.pathname === '/login/oauth/access_token' && req.method === 'POST') {
        state.tokenRequests += 1;
        if (state.misbehave === 'slow') return; // never answers; the client's timeout must fire
        if (state.misbehave === 'token-garbage') return send(res, 200, '<html>oops</html>', 'text/html');
        if (state.misbehave === 'token-error') return send(res, 400, { error: 'invalid_grant', error_description: 'The code passed is incorrect or expired.' });
        const form = await readForm(req);
        const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        const [basicId, basicSecret] = basic ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent) : [];
        const clientId = basicId ?? form.get('client_id');
        const secret = basicSecret ?? form.get('client_secret');
        const c = client(clientId ?? null);
        if (!c || c.clientSecret !== secret) return send(res, 401, { error: 'invalid_client' });
        const grant = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        if (
          form.get('grant_type') !== 'authorization_code' ||
          !grant ||
          grant.expires < Date.now() ||
          grant.clientId !== c.clientId ||
          grant.redirectUri !== form.get('redirect_uri')
        ) {
          return send(res, 400, { error: 'invalid_grant' });
        }
        const verifier = form.get('code_verifier');
        if (grant.challenge || state.requirePkce) {
          const computed = verifier ? createHash('sha256').update(verifier).digest('base64url') : undefined;
          if (!grant.challenge || computed !== grant.challenge)
            return send(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
        }
        const token = `gho_${randomBytes(20).toString('hex')}`;
        tokens.set(token, grant.login);
        return send(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      if ((here.pathname === '/user' || here.pathname === '/user/emails') && req.method === 'GET') {
        const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
        const login = token ? tokens.get(token) : undefined;
        if (!login) return send(res, 401, { message: 'Bad credentials' });
        if (state.misbehave === 'user-500') return send(res, 500, { message: 'Server Error' });
        const claims = accountClaims(login);
        if (here.pathname === '/user') {
          if (state.misbehave === 'user-garbage') return send(res, 200, { login });
          // GitHub's public `email` is whatever the user chose to show; only /user/emails says "verified".
          return send(res, 200, { id: numericId(login), login, name: claims.name, email: claims.email ?? null });
        }
        return send(res, 200, claims.email ? [{ email: claims.email, primary: true, verified: claims.email_verified === true, visibility: 'public' }] : []);
      }
      send(res, 404, { message: 'Not Found' });
    } catch (error) {
      send(res, 500, { message: String(error) });
    }
  });
  return state;
}
