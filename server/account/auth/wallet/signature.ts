/**
 * Does `signature` prove that `address` signed `message` (EIP-191 personal_sign)?
 *
 * 1. A 65-byte ECDSA signature that recovers to the address: yes, offline (EOAs, and
 *    EIP-7702-delegated EOAs). No network, whatever the configuration.
 * 2. Otherwise the address may be a smart-contract wallet, and only the chain can say:
 *    - ERC-6492-wrapped signature (wallet possibly not deployed yet) → one `eth_call` of the
 *      deployless universal validator (it deploys through the factory in the call, then asks
 *      `isValidSignature`);
 *    - anything else → EIP-1271 `isValidSignature(hash, signature)` on the address itself;
 *      an address without code answers `0x`, which is not the magic value.
 *    Without RPC_URL: a 65-byte signature is taken as an ECDSA signature by another key → false
 *    (401); a longer one can only be a smart-wallet signature → 503 SMART_WALLET_UNSUPPORTED.
 *    An RPC failure → 502 WALLET_RPC_FAILED (rpc.ts). Never a guess: closed, not open.
 */
import {
  encodeDeployData,
  encodeFunctionData,
  erc6492SignatureValidatorAbi,
  erc6492SignatureValidatorByteCode,
  hashMessage,
  isAddressEqual,
  isErc6492Signature,
  recoverAddress,
  size,
  type Address,
  type Hex,
} from 'viem';
import { AppError } from '../../../common/errors.js';
import { CallReverted, type WalletRpc } from './rpc.js';

export const ERC1271_MAGIC_VALUE = '0x1626ba7e';

/** EIP-1271: `isValidSignature(bytes32 hash, bytes signature) returns (bytes4 magic)`. */
export const erc1271Abi = [
  {
    type: 'function',
    name: 'isValidSignature',
    stateMutability: 'view',
    inputs: [
      { name: 'hash', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [{ name: '', type: 'bytes4' }],
  },
] as const;

export const smartWalletUnsupported = () =>
  new AppError(
    503,
    'SMART_WALLET_UNSUPPORTED',
    'This is not an ordinary (EOA) wallet signature; smart-contract wallet signatures need an RPC endpoint, which this server does not have configured',
  );

export type SignatureKind = 'eoa' | 'erc1271' | 'erc6492';

export interface SignatureCheck {
  address: Address;
  message: string;
  signature: Hex;
  rpc: WalletRpc | undefined;
}

async function recoversTo(hash: Hex, signature: Hex, address: Address): Promise<boolean> {
  try {
    return isAddressEqual(await recoverAddress({ hash, signature }), address);
  } catch {
    return false; // not a well-formed ECDSA signature (r or s out of range, bad v)
  }
}

/** The magic value, ABI-encoded as bytes4: one 32-byte word starting with it. */
const isMagic = (result: Hex) => result.length === 66 && result.toLowerCase().startsWith(ERC1271_MAGIC_VALUE);

/** The validator's constructor returns a single byte: 0x01 valid, 0x00 not. */
const isTrue = (result: Hex) => /^0x0*1$/.test(result);

async function onChain(rpc: WalletRpc, kind: 'erc1271' | 'erc6492', { address, signature }: SignatureCheck, hash: Hex): Promise<boolean> {
  try {
    if (kind === 'erc6492') {
      const data = encodeDeployData({ abi: erc6492SignatureValidatorAbi, bytecode: erc6492SignatureValidatorByteCode, args: [address, hash, signature] });
      return isTrue(await rpc.ethCall({ data }));
    }
    const data = encodeFunctionData({ abi: erc1271Abi, functionName: 'isValidSignature', args: [hash, signature] });
    return isMagic(await rpc.ethCall({ to: address, data }));
  } catch (error) {
    if (error instanceof CallReverted) return false;
    throw error;
  }
}

/** The kind of signature that proved it, or undefined when it does not. */
export async function checkWalletSignature(check: SignatureCheck): Promise<SignatureKind | undefined> {
  const { address, message, signature, rpc } = check;
  const hash = hashMessage(message);
  const wrapped = isErc6492Signature(signature);
  const ecdsaShaped = !wrapped && size(signature) === 65;
  if (ecdsaShaped && (await recoversTo(hash, signature, address))) return 'eoa';
  if (!rpc) {
    if (ecdsaShaped) return undefined;
    throw smartWalletUnsupported();
  }
  const kind = wrapped ? 'erc6492' : 'erc1271';
  return (await onChain(rpc, kind, check, hash)) ? kind : undefined;
}
