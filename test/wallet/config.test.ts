import { describe, expect, it } from 'vitest';
import { loadAccountConfig } from '../../server/account/config.js';
import { ConfigError } from '../../server/common/config.js';

describe('wallet configuration', () => {
  it('defaults to chain 1 and no RPC (empty counts as unset)', () => {
    expect(loadAccountConfig({})).toMatchObject({ walletChainId: 1, rpcUrl: undefined });
    expect(loadAccountConfig({ WALLET_CHAIN_ID: '', RPC_URL: '' })).toMatchObject({ walletChainId: 1, rpcUrl: undefined });
  });

  it('reads a chain id and an RPC endpoint', () => {
    expect(loadAccountConfig({ WALLET_CHAIN_ID: '8453', RPC_URL: 'https://rpc.example.com/v1' })).toMatchObject({
      walletChainId: 8453,
      rpcUrl: 'https://rpc.example.com/v1',
    });
  });

  it.each([
    [{ WALLET_CHAIN_ID: '0' }, 'WALLET_CHAIN_ID'],
    [{ WALLET_CHAIN_ID: '-1' }, 'WALLET_CHAIN_ID'],
    [{ WALLET_CHAIN_ID: '1.5' }, 'WALLET_CHAIN_ID'],
    [{ WALLET_CHAIN_ID: 'mainnet' }, 'WALLET_CHAIN_ID'],
    [{ RPC_URL: 'ws://127.0.0.1:8546' }, 'RPC_URL'],
    [{ RPC_URL: 'not a url' }, 'RPC_URL'],
  ])('rejects %o naming %s', (env, name) => {
    expect(() => loadAccountConfig(env)).toThrow(ConfigError);
    expect(() => loadAccountConfig(env)).toThrow(new RegExp(`${name}: `));
  });
});
