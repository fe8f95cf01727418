/**
 * Sign-In with Ethereum (EIP-4361), docs/api.md, "Wallet sign-in".
 *
 * Challenge: a message naming our domain and URI (from FRONTEND_URL: the page the user signs
 * in on), WALLET_CHAIN_ID, a login sentence, a random 128-bit nonce, issued-at and a 5-minute
 * expiration. The exact text is stored with the nonce.
 *
 * Verify, in this order:
 * 1. the nonce is consumed (deleted) atomically — of concurrent attempts exactly one gets it,
 *    and a failed attempt has burnt it;
 * 2. the stored challenge must be unexpired, issued for this address, and still exactly the
 *    message this service would build now (domain, URI, chain id, address, nonce, statement,
 *    issued-at → expiry), with issued-at not in the future. The client's copy of the message
 *    is never used: the client sends only address, signature and nonce;
 * 3. the signature over the stored message (signature.ts: EOA offline, smart wallets on chain).
 */
import { randomBytes } from 'node:crypto';
import { getAddress, type Address, type Hex } from 'viem';
import { createSiweMessage, parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { unauthorized } from '../../../common/errors.js';
import type { AccountConfig } from '../../config.js';
import type { AccountDb } from '../../store.js';
import type { WalletRpc } from './rpc.js';
import { checkWalletSignature, type SignatureKind } from './signature.js';
import type { WalletVerifyInput } from './schemas.js';

export const CHALLENGE_TTL_MS = 5 * 60_000;
/** Tolerated clock difference between the instance that issued a challenge and the one verifying it. */
const CLOCK_SKEW_MS = 60_000;
export const SIWE_STATEMENT = 'Sign in to your agent account. Signing proves you own this address; it sends no transaction and costs nothing.';

export type SiweConfig = Pick<AccountConfig, 'frontendUrl' | 'walletChainId'>;

interface SiweOrigin {
  domain: string;
  /** Omitted for https (the EIP-4361 default); `http` for local and test deployments, so wallets compare the right origin. */
  scheme: string | undefined;
  uri: string;
}

function siweOrigin(config: SiweConfig): SiweOrigin {
  const url = new URL(config.frontendUrl);
  return { domain: url.host, scheme: url.protocol === 'https:' ? undefined : url.protocol.slice(0, -1), uri: config.frontendUrl };
}

function buildMessage(config: SiweConfig, fields: { address: string; nonce: string; issuedAt: Date }): string {
  const { domain, scheme, uri } = siweOrigin(config);
  return createSiweMessage({
    address: getAddress(fields.address.toLowerCase()),
    chainId: config.walletChainId,
    domain,
    ...(scheme ? { scheme } : {}),
    uri,
    version: '1',
    statement: SIWE_STATEMENT,
    nonce: fields.nonce,
    issuedAt: fields.issuedAt,
    expirationTime: new Date(fields.issuedAt.getTime() + CHALLENGE_TTL_MS),
  });
}

export interface IssueChallenge {
  db: AccountDb;
  config: SiweConfig;
  /** A valid EVM address in any EIP-55-acceptable case (schemas.ts). */
  address: string;
  now: Date;
  /** The signed-in account that asks, if any: only its verify joins the wallet to it. */
  requestedBy?: string;
}

export async function issueChallenge({ db, config, address, now, requestedBy }: IssueChallenge): Promise<{ nonce: string; message: string }> {
  // 128 bits from the CSPRNG; hex is alphanumeric as EIP-4361 requires. (viem's generateSiweNonce uses Math.random.)
  const nonce = randomBytes(16).toString('hex');
  const message = buildMessage(config, { address, nonce, issuedAt: now });
  // Challenges nobody answered would pile up: each new one sweeps the expired.
  await db.walletNonce.deleteMany({ where: { expiresAt: { lt: now } } });
  await db.walletNonce.create({
    data: { nonce, address: address.toLowerCase(), message, requestedBy: requestedBy ?? null, expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS) },
  });
  return { nonce, message };
}

/** Deletes the nonce and returns its challenge, or undefined when it is unknown or someone else consumed it first. */
async function consumeNonce(db: AccountDb, nonce: string) {
  const challenge = await db.walletNonce.findUnique({ where: { nonce } });
  if (!challenge) return undefined;
  // The row's content never changes; the DELETE decides who owns it (row lock: one count of 1).
  const { count } = await db.walletNonce.deleteMany({ where: { nonce } });
  return count === 1 ? challenge : undefined;
}

/** Is the stored message exactly what this service issues now, and within its lifetime at `now`? */
function challengeHolds(config: SiweConfig, stored: { nonce: string; address: string; message: string }, now: Date): boolean {
  const parsed = parseSiweMessage(stored.message);
  const issuedAt = parsed.issuedAt;
  if (!issuedAt || Number.isNaN(issuedAt.getTime())) return false;
  if (issuedAt.getTime() > now.getTime() + CLOCK_SKEW_MS) return false;
  if (buildMessage(config, { address: stored.address, nonce: stored.nonce, issuedAt }) !== stored.message) return false;
  const { domain, scheme } = siweOrigin(config);
  return (
    parsed.uri === config.frontendUrl &&
    parsed.chainId === config.walletChainId &&
    validateSiweMessage({ message: parsed, address: getAddress(stored.address), domain, nonce: stored.nonce, ...(scheme ? { scheme } : {}), time: now })
  );
}

export interface VerifySignIn {
  db: AccountDb;
  config: SiweConfig;
  input: WalletVerifyInput;
  now: Date;
  /** JSON-RPC for smart-wallet signatures; undefined when RPC_URL is not configured. */
  rpc: WalletRpc | undefined;
}

export interface VerifiedWallet {
  /** Lowercase: the identity subject. */
  address: string;
  kind: SignatureKind;
  /** The account that asked for the challenge (null: nobody signed in). */
  requestedBy: string | null;
}

export async function verifySignIn({ db, config, input, now, rpc }: VerifySignIn): Promise<VerifiedWallet> {
  const challenge = await consumeNonce(db, input.nonce);
  if (!challenge) throw unauthorized('Unknown or already used nonce: request a new challenge', 'INVALID_NONCE');
  if (now.getTime() >= challenge.expiresAt.getTime()) throw unauthorized('The challenge has expired: request a new one', 'NONCE_EXPIRED');
  const address = input.address.toLowerCase();
  if (challenge.address !== address) throw unauthorized('The challenge was issued for another address', 'ADDRESS_MISMATCH');
  if (!challengeHolds(config, challenge, now)) throw unauthorized('The challenge is no longer valid for this service: request a new one', 'CHALLENGE_INVALID');
  const kind = await checkWalletSignature({ address: getAddress(address) as Address, message: challenge.message, signature: input.signature as Hex, rpc });
  if (!kind) throw unauthorized('The signature does not prove ownership of this address', 'INVALID_SIGNATURE');
  return { address, kind, requestedBy: challenge.requestedBy };
}
