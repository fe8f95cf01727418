/**
 * A minimal JSON-RPC client for the one thing the wallet sign-in asks of a chain: `eth_call`.
 * Written out instead of a viem client so that every failure is classified on purpose:
 * - the call reverted (JSON-RPC error code 3, or a message saying so) → the signature is
 *   invalid, which the caller answers with 401;
 * - anything else (connection refused, timeout, HTTP error, unparsable answer, any other
 *   JSON-RPC error) → `WalletRpcFailed` (502): we cannot tell, so we fail closed.
 * No retries: a sign-in waits at most `timeoutMs`.
 */
import { AppError } from '../../../common/errors.js';

export const DEFAULT_RPC_TIMEOUT_MS = 5_000;

export class CallReverted extends Error {
  override name = 'CallReverted';
}

export const walletRpcFailed = (why: string) =>
  new AppError(502, 'WALLET_RPC_FAILED', `Smart-wallet signatures are verified on chain, and the chain's RPC endpoint failed (${why}); try again later`);

export interface EthCall {
  to?: `0x${string}`;
  data: `0x${string}`;
}

export interface WalletRpc {
  /** Result of `eth_call` at the latest block; throws CallReverted or a 502 AppError. */
  ethCall(call: EthCall): Promise<`0x${string}`>;
}

export class JsonRpcClient implements WalletRpc {
  private id = 0;

  constructor(
    private readonly url: string,
    private readonly timeoutMs = DEFAULT_RPC_TIMEOUT_MS,
  ) {}

  async ethCall(call: EthCall): Promise<`0x${string}`> {
    const result = await this.request('eth_call', [call, 'latest']);
    if (typeof result !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(result)) throw walletRpcFailed('malformed eth_call result');
    return result as `0x${string}`;
  }

  private async request(method: string, params: unknown[]): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
      throw walletRpcFailed(timedOut ? `no answer within ${this.timeoutMs} ms` : 'unreachable');
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw walletRpcFailed(`HTTP ${response.status}, not JSON`);
    }
    if (typeof body !== 'object' || body === null) throw walletRpcFailed('malformed answer');
    const { result, error } = body as { result?: unknown; error?: { code?: unknown; message?: unknown } };
    if (error !== undefined && error !== null) {
      const message = typeof error.message === 'string' ? error.message : '';
      if (error.code === 3 || /revert/i.test(message)) throw new CallReverted(message || 'execution reverted');
      throw walletRpcFailed(`JSON-RPC error ${String(error.code)}`);
    }
    if (!response.ok) throw walletRpcFailed(`HTTP ${response.status}`);
    if (result === undefined) throw walletRpcFailed('no result');
    return result;
  }
}
