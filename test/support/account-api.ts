/**
 * A small REST client of the account API for tests that sign people in by several methods and
 * then act on their account: e-mail (code issued in-process, as the mail would carry it), wallet
 * (a real SIWE signature), guest.
 */
import { randomBytes } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { TestAccount } from './servers.js';
import type { TokenPair } from '@contracts/account/tokens.js';

export type Pair = TokenPair;

export const newWallet = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());
export const uniqueEmail = (tag: string): string => `${tag}-${randomBytes(4).toString('hex')}@example.com`;
export const bearer = (pair: Pair, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${pair.access_token}`, ...extra });

export function accountApi(account: TestAccount) {
  const base = `${account.url}/api/v1`;
  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async <T>(res: Response, status = 200): Promise<T> => {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected HTTP ${status}, got ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  const api = {
    call,
    json,
    get: (path: string, headers?: Record<string, string>) => call('GET', path, headers),
    post: (path: string, body: unknown, headers?: Record<string, string>) => call('POST', path, headers, body),
    del: (path: string, headers?: Record<string, string>) => call('DELETE', path, headers),

    /** With an `authorization` header, that account asks for the mail (as POST /auth/login/email with it would) and verifies it. */
    async email(email: string, headers: Record<string, string> = {}): Promise<Pair> {
      const requester = await account.services.tokens.linkTarget(headers.authorization);
      const { code } = await account.services.email.request(email, new Date(), requester?.userId);
      return json<Pair>(await call('POST', '/auth/verify-magic-link', headers, { email, code }));
    },
    /** With an `authorization` header, that account asks for the challenge and verifies it. */
    async wallet(signer: PrivateKeyAccount, headers: Record<string, string> = {}): Promise<Pair> {
      const { nonce, message } = await json<{ nonce: string; message: string }>(
        await call('POST', '/auth/wallet/challenge', headers, { address: signer.address }),
      );
      const signature = await signer.signMessage({ message });
      return json<Pair>(await call('POST', '/auth/wallet/verify', headers, { address: signer.address, signature, nonce }));
    },
    walletResponse: async (signer: PrivateKeyAccount, headers: Record<string, string> = {}): Promise<Response> => {
      const { nonce, message } = await json<{ nonce: string; message: string }>(
        await call('POST', '/auth/wallet/challenge', headers, { address: signer.address }),
      );
      return call('POST', '/auth/wallet/verify', headers, { address: signer.address, signature: await signer.signMessage({ message }), nonce });
    },
    async guest(headers: Record<string, string> = {}): Promise<Pair> {
      return json<Pair>(await call('POST', '/auth/guest', headers, { device_id: `device-${randomBytes(12).toString('hex')}` }));
    },
    async me(pair: Pair): Promise<{ user_id: string; session_id: string; guest: boolean }> {
      return json(await call('GET', '/auth/me', bearer(pair)));
    },
  };
  return api;
}
