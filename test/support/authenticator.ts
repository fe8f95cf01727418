/**
 * An authenticator app nobody here wrote: Debian's `oathtool` (OATH Toolkit; scripts/ensure-oathtool.sh
 * installs it) computes the codes, so the service's TOTP (server/account/auth/mfa/totp.ts) is held to
 * an independent implementation. Plus the enrolment every second-factor test starts with.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bearer, type Pair } from './account-api.js';

const run = promisify(execFile);

/**
 * The 6-digit TOTP code of `secret` (base32) at `at` (ms since the epoch; now by default): SHA-1,
 * 30-second steps, as an authenticator app shows it. `steps` moves that many 30-second steps on
 * (the service accepts one either way), for a second code before the clock has moved.
 */
export async function totpCode(secret: string, options: { at?: number; steps?: number } = {}): Promise<string> {
  const seconds = Math.floor((options.at ?? Date.now()) / 1000) + (options.steps ?? 0) * 30;
  const { stdout } = await run('oathtool', ['--totp=sha1', '--digits=6', '--time-step-size=30s', '--base32', `--now=@${seconds}`, secret]);
  return stdout.trim();
}

/** Parameters of an `otpauth://totp/…` URI, as an app reads them from the QR code. */
export function readOtpauthUri(uri: string): { issuer: string; account: string; secret: string; algorithm: string; digits: string; period: string } {
  const url = new URL(uri);
  if (url.protocol !== 'otpauth:' || url.hostname !== 'totp') throw new Error(`not a TOTP URI: ${uri}`);
  const [issuer = '', account = ''] = decodeURIComponent(url.pathname.slice(1)).split(':');
  const param = (name: string) => url.searchParams.get(name) ?? '';
  return { issuer, account, secret: param('secret'), algorithm: param('algorithm'), digits: param('digits'), period: param('period') };
}

interface RestApi {
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  json<T>(res: Response, status?: number): Promise<T>;
}

export interface Enrolled {
  factorId: string;
  secret: string;
  otpauthUri: string;
  recoveryCodes: string[];
  /** The code that confirmed it, and when it was made (ms): that step is spent. */
  confirmedWith: { code: string; at: number };
}

/** Enrols an authenticator app for `pair`'s account and confirms it with oathtool's current code. */
export async function enrolTotp(api: RestApi, pair: Pair): Promise<Enrolled> {
  const started = await api.json<{ factor_id: string; secret: string; otpauth_uri: string }>(await api.post('/account/mfa/totp', undefined, bearer(pair)));
  const at = Date.now();
  const code = await totpCode(started.secret, { at });
  const { recovery_codes } = await api.json<{ recovery_codes: string[] }>(
    await api.post(`/account/mfa/totp/${started.factor_id}/confirm`, { code }, bearer(pair)),
  );
  return { factorId: started.factor_id, secret: started.secret, otpauthUri: started.otpauth_uri, recoveryCodes: recovery_codes, confirmedWith: { code, at } };
}
