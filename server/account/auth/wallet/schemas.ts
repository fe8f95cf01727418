/** Wire shapes of the wallet sign-in (spec: "Wallet challenge", `/auth/wallet/*`). */
import { getAddress } from 'viem';
import { z } from 'zod';

/**
 * EIP-55: an all-lowercase or all-uppercase address carries no checksum and is accepted; a
 * mixed-case one is a checksummed address and must check out (a wrong checksum means a typo).
 * The zero address is refused: no key signs for it.
 */
function eip55Acceptable(address: string): boolean {
  const hex = address.slice(2);
  if (/^0+$/.test(hex)) return false;
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return true;
  try {
    return getAddress(address) === address;
  } catch {
    return false;
  }
}

export const EvmAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address')
  .refine(eip55Acceptable, 'EIP-55 checksum does not match (or the zero address)');

/** EIP-4361 nonces are alphanumeric, at least 8 characters; ours are 32 hex characters. */
export const WalletNonce = z.string().regex(/^[a-zA-Z0-9]{8,128}$/, 'must be 8 to 128 letters or digits');

/** Bytes of a signature: 65 for an ECDSA (EOA) signature; smart wallets sign longer blobs. */
export const SIGNATURE_MIN_BYTES = 65;
export const SIGNATURE_MAX_BYTES = 16 * 1024;

export const WalletSignature = z
  .string()
  .max(2 + 2 * SIGNATURE_MAX_BYTES, `must be at most ${SIGNATURE_MAX_BYTES} bytes`)
  .regex(/^0x[0-9a-fA-F]*$/, 'must be 0x-prefixed hex')
  .refine((s) => s.length % 2 === 0, 'must be whole bytes (an even number of hex digits)')
  .refine((s) => s.length >= 2 + 2 * SIGNATURE_MIN_BYTES, `must be at least ${SIGNATURE_MIN_BYTES} bytes`);

export const WalletChallengeInput = z.object({ address: EvmAddress });

export const WalletChallenge = z.object({
  nonce: z.string(),
  message: z.string().meta({ description: 'EIP-4361 (SIWE) message to sign with personal_sign' }),
});

export const WalletVerifyInput = z.object({ address: EvmAddress, signature: WalletSignature, nonce: WalletNonce });
export type WalletVerifyInput = z.infer<typeof WalletVerifyInput>;
