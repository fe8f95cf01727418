/**
 * Passkeys (WebAuthn) through @simplewebauthn/server: registration (a signed-in account — a guest
 * to upgrade or a full one — adds a passkey) and sign-in with a discoverable credential.
 *
 * The rules, each an explicit step below:
 * - a challenge is ours: random, stored, 5 minutes, single use — consumed (deleted) before the
 *   response is checked, so a replayed response finds no challenge; a registration challenge is
 *   bound to the account that asked for it;
 * - the response must come from our origin (FRONTEND_URL's) and name our relying party id
 *   (WEBAUTHN_RP_ID), which the library checks with the signature;
 * - user verification is preferred, not required (security keys without a PIN still work); a
 *   sign-in with it proves two factors (the device, and the PIN or biometric that unlocked it),
 *   so its session starts at `aal2` (auth/mfa/), and one without it is a first factor like any;
 * - the signature counter must grow when either side has one (a counter going backwards means
 *   a cloned authenticator): the library refuses it, and the stored counter moves only forwards
 *   in one conditional UPDATE, so two racing uses of one counter value cannot both pass.
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { notFound, unauthorized } from '../../../common/errors.js';
import type { AccountDb } from '../../store.js';
import type { IdentityClaim } from '../../users/identities.js';

export const PASSKEY_CHALLENGE_TTL_MS = 5 * 60 * 1000;

export interface PasskeyConfig {
  rpId: string;
  rpName: string;
  /** The web client's origin: the only one a response may come from. */
  origin: string;
}

type Purpose = 'register' | 'login';

const invalidPasskey = (detail = 'The passkey could not be verified') => unauthorized(detail, 'INVALID_PASSKEY');
const invalidChallenge = () => unauthorized('The passkey challenge is unknown, expired or already used', 'INVALID_CHALLENGE');

async function storeChallenge(db: AccountDb, challenge: string, purpose: Purpose, userId: string | null, now: Date): Promise<void> {
  await db.webauthnChallenge.deleteMany({ where: { expiresAt: { lt: now } } });
  await db.webauthnChallenge.create({ data: { challenge, purpose, userId, expiresAt: new Date(now.getTime() + PASSKEY_CHALLENGE_TTL_MS), createdAt: now } });
}

/** The challenge the client data names, consumed: of two uses of one challenge only the first finds it. */
async function consumeChallenge(db: AccountDb, clientDataJSON: string, purpose: Purpose, userId: string | null, now: Date): Promise<string> {
  let challenge: unknown;
  try {
    challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
  } catch {
    throw invalidPasskey();
  }
  if (typeof challenge !== 'string' || challenge.length > 512) throw invalidPasskey();
  const { count } = await db.webauthnChallenge.deleteMany({ where: { challenge, purpose, userId, expiresAt: { gt: now } } });
  if (count !== 1) throw invalidChallenge();
  return challenge;
}

export async function registrationOptions(db: AccountDb, config: PasskeyConfig, userId: string, now = new Date()) {
  const user = await db.user.findUnique({ where: { id: userId }, select: { email: true, passkeys: { select: { credentialId: true, transports: true } } } });
  const userName = user?.email ?? `account-${userId.slice(0, 8)}`;
  const options = await generateRegistrationOptions({
    rpName: config.rpName,
    rpID: config.rpId,
    userName,
    userDisplayName: userName,
    userID: Buffer.from(userId.replaceAll('-', ''), 'hex'),
    attestationType: 'none',
    timeout: PASSKEY_CHALLENGE_TTL_MS,
    // The same authenticator twice would be one passkey under two names.
    excludeCredentials: (user?.passkeys ?? []).map((p) => ({ id: p.credentialId, transports: transportsOf(p.transports) })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(db, options.challenge, 'register', userId, now);
  return options;
}

export async function verifyRegistration(
  db: AccountDb,
  config: PasskeyConfig,
  input: { userId: string; response: RegistrationResponseJSON; name: string | undefined },
  now = new Date(),
): Promise<IdentityClaim> {
  const expectedChallenge = await consumeChallenge(db, input.response.response.clientDataJSON, 'register', input.userId, now);
  let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verification = await verifyRegistrationResponse({
      response: input.response,
      expectedChallenge,
      expectedOrigin: config.origin,
      expectedRPID: config.rpId,
      requireUserVerification: false,
    });
  } catch (error) {
    throw invalidPasskey(`The passkey could not be verified: ${(error as Error).message}`);
  }
  if (!verification.verified) throw invalidPasskey();
  const { credential } = verification.registrationInfo;
  return {
    provider: 'passkey',
    subject: credential.id,
    passkey: {
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey),
      counter: credential.counter,
      transports: (credential.transports ?? input.response.response.transports ?? []).join(','),
      name: input.name ?? `Passkey of ${now.toISOString().slice(0, 10)}`,
    },
  };
}

export async function loginOptions(db: AccountDb, config: PasskeyConfig, now = new Date()) {
  // No allowCredentials: discoverable credentials, so nobody learns which accounts have passkeys.
  const options = await generateAuthenticationOptions({ rpID: config.rpId, userVerification: 'preferred', timeout: PASSKEY_CHALLENGE_TTL_MS });
  await storeChallenge(db, options.challenge, 'login', null, now);
  return options;
}

export async function verifyLogin(db: AccountDb, config: PasskeyConfig, response: AuthenticationResponseJSON, now = new Date()): Promise<IdentityClaim> {
  const expectedChallenge = await consumeChallenge(db, response.response.clientDataJSON, 'login', null, now);
  const stored = await db.passkeyCredential.findUnique({ where: { credentialId: response.id } });
  if (!stored) throw invalidPasskey('This passkey is not registered here');
  let verification: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    verification = await verifyAuthenticationResponse({
      response,
      expectedChallenge,
      expectedOrigin: config.origin,
      expectedRPID: config.rpId,
      credential: {
        id: stored.credentialId,
        publicKey: new Uint8Array(stored.publicKey),
        counter: Number(stored.counter),
        transports: transportsOf(stored.transports),
      },
      requireUserVerification: false,
    });
  } catch (error) {
    throw invalidPasskey(`The passkey could not be verified: ${(error as Error).message}`);
  }
  if (!verification.verified) throw invalidPasskey();
  const { newCounter } = verification.authenticationInfo;
  const { count } = await db.passkeyCredential.updateMany({
    where: { identityId: stored.identityId, counter: newCounter === 0 ? 0 : { lt: BigInt(newCounter) } },
    data: { counter: BigInt(newCounter) },
  });
  if (count !== 1) throw invalidPasskey('The passkey signature counter did not grow');
  return { provider: 'passkey', subject: stored.credentialId, secondFactor: verification.authenticationInfo.userVerified };
}

export async function renamePasskey(db: AccountDb, userId: string, identityId: string, name: string): Promise<void> {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const { count } = UUID.test(identityId) ? await db.passkeyCredential.updateMany({ where: { identityId, userId }, data: { name } }) : { count: 0 };
  if (count !== 1) throw notFound('No such passkey on this account', 'PASSKEY_NOT_FOUND');
}

const transportsOf = (stored: string): AuthenticatorTransport[] => (stored ? (stored.split(',') as AuthenticatorTransport[]) : []);
