/**
 * Admin API helpers for tests: make an admin (as the command line does, in-process), create API
 * keys through the API, and call admin routes with a token or a key.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI_ACTOR } from '../../server/account/events/audit.js';
import { setRole } from '../../server/account/users/roles.js';
import { signAccessToken } from '../../server/account/tokens/jwt.js';
import { accountApi, bearer, uniqueEmail, type Pair } from './account-api.js';
import type { TestAccount } from './servers.js';

export interface Admin {
  pair: Pair;
  userId: string;
  headers: Record<string, string>;
}

export function adminApi(account: TestAccount) {
  const api = accountApi(account);
  return {
    ...api,
    /** A new full account made admin the way `npm run admin -- grant` does. */
    async newAdmin(tag = 'admin'): Promise<Admin> {
      const pair = await api.email(uniqueEmail(tag));
      const { user_id } = await api.me(pair);
      await setRole(account.services.store.db, user_id, 'admin', CLI_ACTOR);
      return { pair, userId: user_id, headers: bearer(pair) };
    },
    async newKey(admin: Admin, scopes: string[], extra: Record<string, unknown> = {}): Promise<{ id: string; key: string; headers: Record<string, string> }> {
      const created = await api.json<{ id: string; key: string }>(
        await api.post('/admin/keys', { name: `key ${scopes.join(' ')}`, scopes, ...extra }, admin.headers),
      );
      return { ...created, headers: { authorization: `Bearer ${created.key}` } };
    },
    /** An access token of a live session whose `exp` has passed. */
    async expiredToken(pair: Pair): Promise<Record<string, string>> {
      const { user_id, session_id, guest } = await api.me(pair);
      const token = await signAccessToken(
        account.services.tokens.issuer,
        { userId: user_id, sessionId: session_id, guest },
        Math.floor(Date.now() / 1000) - 3600,
      );
      return { authorization: `Bearer ${token}` };
    },
    patch: (path: string, body: unknown, headers?: Record<string, string>) => api.call('PATCH', path, headers, body),
  };
}

export const expectError = async (res: Response, status: number, code: string): Promise<void> => {
  const body = (await res.json()) as { code: string };
  if (res.status !== status || body.code !== code) throw new Error(`expected ${status} ${code}, got ${res.status} ${JSON.stringify(body)}`);
};

/** `npm run admin -- <args>` on the account's own store (its DATABASE_URL or data directory): the command line's output. */
export function adminCli(account: TestAccount, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)('npx', ['tsx', 'scripts/admin.ts', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: account.services.config.databaseUrl,
      DATA_DIR: account.dataDir,
      LOG_LEVEL: 'silent',
    },
  });
}
