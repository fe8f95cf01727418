/**
 * Admin API helpers for tests: make an admin (as the command line does, in-process) whose session
 * passed a second factor (ADMIN_REQUIRE_2FA is on by default: test/support/authenticator.ts), create
 * API keys through the API, and call admin routes with a token or a key.
 */
import { execFile } from 'node:child_process';
import { cliEntry } from './entries.js';
import { promisify } from 'node:util';
import { CLI_ACTOR } from '../../server/account/events/audit.js';
import { setRole } from '../../server/account/users/roles.js';
import { signAccessToken } from '../../server/account/tokens/jwt.js';
import { accountApi, bearer, uniqueEmail, type Pair } from './account-api.js';
import { enrolTotp } from './authenticator.js';
import type { TestAccount } from './servers.js';

export interface Admin {
  pair: Pair;
  userId: string;
  email: string;
  headers: Record<string, string>;
  /** Its authenticator app's secret (base32), when it enrolled one. */
  secret?: string | undefined;
}

export function adminApi(account: TestAccount) {
  const api = accountApi(account);
  return {
    ...api,
    /**
     * A new full account made admin the way `npm run admin -- grant` does, signed in with an
     * authenticator app it enrolled (so its session is `aal2`); `secondFactor: false` leaves it without one.
     */
    async newAdmin(tag = 'admin', options: { secondFactor?: boolean } = {}): Promise<Admin> {
      const email = uniqueEmail(tag);
      const pair = await api.email(email);
      const { user_id } = await api.me(pair);
      await setRole(account.services.store.db, user_id, 'admin', CLI_ACTOR);
      const secret = options.secondFactor === false ? undefined : (await enrolTotp(api, pair)).secret;
      return { pair, userId: user_id, email, headers: bearer(pair), secret };
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
  return promisify(execFile)(process.execPath, [...cliEntry('admin'), ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATABASE_URL: account.services.config.databaseUrl,
      DATA_DIR: account.dataDir,
      LOG_LEVEL: 'silent',
    },
  });
}
