/**
 * Smart-contract wallets (EIP-1271, ERC-6492) against a real JSON-RPC peer on loopback: the
 * service's own RPC client talks HTTP to it, so the on-chain code path really runs. Then the
 * RPC failing in every way → 502, fail closed; and the wallet rate limits (10/min each).
 */
import { randomBytes } from 'node:crypto';
import { encodeFunctionData, getAddress, hashMessage, isAddressEqual, recoverAddress, serializeErc6492Signature, slice, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JsonRpcClient } from '../../server/account/auth/wallet/rpc.js';
import { issueChallenge, verifySignIn } from '../../server/account/auth/wallet/siwe.js';
import { RpcError, smartWallets, startJsonRpcPeer, type JsonRpcPeer } from '../support/json-rpc-peer.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { erc1271Abi as isValidSignatureAbi } from '../../server/account/auth/wallet/signature.js';

const randomAddress = () => `0x${randomBytes(20).toString('hex')}` as Address;
const newKey = () => privateKeyToAccount(generatePrivateKey());

/** A Safe-like wallet: valid when the first 65 bytes are its owner's ECDSA signature of the hash. */
const ownedBy = (owner: Address) => async (hash: Hex, signature: Hex) => {
  try {
    return isAddressEqual(await recoverAddress({ hash, signature: slice(signature, 0, 65) }), owner);
  } catch {
    return false;
  }
};

describe('smart-wallet signatures through RPC_URL', () => {
  const owner = newKey();
  const stranger = newKey();
  const deployed = randomAddress();
  const counterfactual = randomAddress();
  const factory = randomAddress();
  const reverting = randomAddress();
  let peer: JsonRpcPeer;
  let account: TestAccount;
  let api: string;
  let ip: string;
  let clients = 0;

  const post = (path: string, body: unknown) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify(body) });
  const challenge = async (address: string) => (await (await post('/auth/wallet/challenge', { address })).json()) as { nonce: string; message: string };
  const expectError = async (res: Response, status: number, code: string) => {
    const body = (await res.json()) as { code: string; detail: string };
    expect({ status: res.status, code: body.code }).toEqual({ status, code });
    return body.detail;
  };

  beforeAll(async () => {
    const handleEthCall = smartWallets([
      { address: deployed, accepts: ownedBy(owner.address) },
      { address: counterfactual, factory, accepts: ownedBy(owner.address) },
      {
        address: reverting,
        accepts: () => {
          throw new RpcError(3, 'execution reverted: bad signature');
        },
      },
    ]);
    peer = await startJsonRpcPeer({ eth_call: handleEthCall });
    // Real limits, counted per client IP (each test speaks from an address of its own).
    account = await startTestAccount('pglite', { RPC_URL: peer.url, RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback' });
    api = `${account.url}/api/v1`;
  });
  afterAll(async () => {
    await account.stop();
    await peer.close();
  });
  beforeEach(() => {
    ip = `198.51.100.${++clients}`;
    peer.calls.length = 0;
    peer.mode = 'ok';
  });

  it('EIP-1271: asks the wallet isValidSignature(hash of the issued message, signature) and signs it in', async () => {
    const { nonce, message } = await challenge(deployed);
    const signature = await owner.signMessage({ message });
    const res = await post('/auth/wallet/verify', { address: deployed, signature, nonce });
    expect(res.status).toBe(200);
    const data = encodeFunctionData({ abi: isValidSignatureAbi, functionName: 'isValidSignature', args: [hashMessage(message), signature] });
    // The selector of isValidSignature(bytes32,bytes) is the EIP-1271 magic value: pins the ABI independently of our copy.
    expect(data.slice(0, 10)).toBe('0x1626ba7e');
    expect(peer.calls).toEqual([{ method: 'eth_call', params: [{ to: getAddress(deployed), data }, 'latest'] }]);
    const identity = await account.services.store.db.identity.findFirst({ where: { provider: 'wallet', subject: deployed.toLowerCase() } });
    expect(identity).not.toBeNull();
  });

  it('EIP-1271: a signature longer than 65 bytes goes straight to the wallet', async () => {
    const { nonce, message } = await challenge(deployed);
    const signature = `${await owner.signMessage({ message })}${'cd'.repeat(32)}`;
    expect((await post('/auth/wallet/verify', { address: deployed, signature, nonce })).status).toBe(200);
    expect(peer.calls).toHaveLength(1);
  });

  it('EIP-1271: the wallet refuses a stranger (not the magic value) → 401', async () => {
    const { nonce, message } = await challenge(deployed);
    const signature = await stranger.signMessage({ message });
    await expectError(await post('/auth/wallet/verify', { address: deployed, signature, nonce }), 401, 'INVALID_SIGNATURE');
    expect(peer.calls).toHaveLength(1);
  });

  it('EIP-1271: a signature for another message (wrong hash) → 401', async () => {
    const { nonce } = await challenge(deployed);
    const signature = await owner.signMessage({ message: 'some other message' });
    await expectError(await post('/auth/wallet/verify', { address: deployed, signature, nonce }), 401, 'INVALID_SIGNATURE');
  });

  it('a reverting isValidSignature → 401', async () => {
    const { nonce, message } = await challenge(reverting);
    await expectError(
      await post('/auth/wallet/verify', { address: reverting, signature: await owner.signMessage({ message }), nonce }),
      401,
      'INVALID_SIGNATURE',
    );
  });

  it('an address without code (an EOA) and a wrong signature → the chain says no → 401', async () => {
    const eoa = newKey();
    const { nonce, message } = await challenge(eoa.address);
    await expectError(
      await post('/auth/wallet/verify', { address: eoa.address, signature: await stranger.signMessage({ message }), nonce }),
      401,
      'INVALID_SIGNATURE',
    );
    expect(peer.calls).toHaveLength(1);
  });

  it('EOA signatures verify offline even with RPC_URL set: no call reaches the peer', async () => {
    const eoa = newKey();
    const { nonce, message } = await challenge(eoa.address);
    expect((await post('/auth/wallet/verify', { address: eoa.address, signature: await eoa.signMessage({ message }), nonce })).status).toBe(200);
    expect(peer.calls).toEqual([]);
  });

  it('ERC-6492: a not-yet-deployed wallet verifies through the deployless validator call', async () => {
    const { nonce, message } = await challenge(counterfactual);
    const inner = await owner.signMessage({ message });
    const signature = serializeErc6492Signature({ address: factory, data: '0xdeadbeef', signature: inner });
    expect((await post('/auth/wallet/verify', { address: counterfactual, signature, nonce })).status).toBe(200);
    expect(peer.calls).toHaveLength(1);
    expect((peer.calls[0]?.params[0] as { to?: string } | undefined)?.to).toBeUndefined();
  });

  it('ERC-6492: a wrong factory or a stranger inside the wrapper → 401', async () => {
    for (const [signer, viaFactory] of [
      [owner, randomAddress()],
      [stranger, factory],
    ] as const) {
      const { nonce, message } = await challenge(counterfactual);
      const signature = serializeErc6492Signature({ address: viaFactory, data: '0xdeadbeef', signature: await signer.signMessage({ message }) });
      await expectError(await post('/auth/wallet/verify', { address: counterfactual, signature, nonce }), 401, 'INVALID_SIGNATURE');
    }
  });

  it.each([['http-500'], ['not-json'], ['rpc-error']] as const)('the RPC failing (%s) → 502 WALLET_RPC_FAILED, and the nonce is burnt', async (mode) => {
    const { nonce, message } = await challenge(deployed);
    const signature = await owner.signMessage({ message });
    peer.mode = mode;
    const detail = await expectError(await post('/auth/wallet/verify', { address: deployed, signature, nonce }), 502, 'WALLET_RPC_FAILED');
    expect(detail).toMatch(/RPC/);
    peer.mode = 'ok';
    await expectError(await post('/auth/wallet/verify', { address: deployed, signature, nonce }), 401, 'INVALID_NONCE');
  });

  it('the RPC not answering → 502 after the timeout', async () => {
    const db = account.services.store.db;
    const { nonce, message } = await issueChallenge({ db, config: account.services.config, address: deployed, now: new Date() });
    const input = { address: deployed, nonce, signature: await owner.signMessage({ message }) };
    peer.mode = 'hang';
    const started = Date.now();
    await expect(verifySignIn({ db, config: account.services.config, input, now: new Date(), rpc: new JsonRpcClient(peer.url, 300) })).rejects.toMatchObject({
      status: 502,
      appCode: 'WALLET_RPC_FAILED',
    });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('limits challenges to 10 a minute per client', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await post('/auth/wallet/challenge', { address: deployed })).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(statuses[10]).toBe(429);
  });

  it('limits verifies to 10 a minute per client', async () => {
    const body = { address: deployed, signature: `0x${'ab'.repeat(65)}`, nonce: 'unknownnonce' };
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await post('/auth/wallet/verify', body)).status);
    expect(statuses).toEqual(Array(10).fill(401));
    const limited = await post('/auth/wallet/verify', body);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  // Last: the peer goes away for good.
  it('the RPC down (connection refused) → 502, fail closed', async () => {
    const { nonce, message } = await challenge(deployed);
    const signature = await owner.signMessage({ message });
    await peer.close();
    const detail = await expectError(await post('/auth/wallet/verify', { address: deployed, signature, nonce }), 502, 'WALLET_RPC_FAILED');
    expect(detail).toMatch(/unreachable/);
  });
});
