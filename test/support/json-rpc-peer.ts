/**
 * A tiny JSON-RPC server on loopback, standing in for an Ethereum node in tests: it answers the
 * methods it is given handlers for, records every call, and can be switched into failure modes
 * (HTTP 500, a non-JSON body, a JSON-RPC error, no answer at all) or closed (connection refused).
 *
 * `smartWallets()` builds an `eth_call` handler for contract wallets:
 * - EIP-1271: `isValidSignature(hash, signature)` at a registered wallet address answers the
 *   magic value 0x1626ba7e when the wallet's rule accepts (hash, signature), 0xffffffff
 *   otherwise; an unregistered address has no code and answers `0x`, as a node does;
 * - ERC-6492: the deployless universal validator call (no `to`, validator bytecode + constructor
 *   arguments) is emulated: the wrapped signature's factory must be the wallet's factory, then
 *   the inner signature goes to the wallet's rule; answers 0x01 or 0x00 as the validator does.
 */
import { createServer, type IncomingMessage } from 'node:http';
import {
  decodeAbiParameters,
  decodeFunctionData,
  erc6492SignatureValidatorByteCode,
  isAddressEqual,
  parseErc6492Signature,
  type Address,
  type Hex,
} from 'viem';
import { erc1271Abi as isValidSignatureAbi } from '../../server/account/auth/wallet/signature.js';

export type RpcHandler = (params: unknown[]) => unknown;

/** Throw from a handler to answer a JSON-RPC error object. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export type PeerMode = 'ok' | 'http-500' | 'not-json' | 'rpc-error' | 'hang';

export interface JsonRpcPeer {
  url: string;
  calls: Array<{ method: string; params: unknown[] }>;
  mode: PeerMode;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startJsonRpcPeer(handlers: Record<string, RpcHandler>): Promise<JsonRpcPeer> {
  const peer: JsonRpcPeer = { url: '', calls: [], mode: 'ok', close: async () => undefined };
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (peer.mode === 'hang') return; // never answers; close() cuts it
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (peer.mode === 'http-500') return send(500, 'internal error');
    if (peer.mode === 'not-json') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<html>gateway</html>');
    }
    let request: { id?: unknown; method?: unknown; params?: unknown };
    try {
      request = JSON.parse(raw) as typeof request;
    } catch {
      return send(200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    const id = request.id ?? null;
    const method = String(request.method);
    const params = Array.isArray(request.params) ? request.params : [];
    peer.calls.push({ method, params });
    if (peer.mode === 'rpc-error') return send(200, { jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } });
    const handler = handlers[method];
    if (!handler) return send(200, { jsonrpc: '2.0', id, error: { code: -32601, message: `Method ${method} not found` } });
    try {
      send(200, { jsonrpc: '2.0', id, result: await handler(params) });
    } catch (error) {
      if (error instanceof RpcError) return send(200, { jsonrpc: '2.0', id, error: { code: error.code, message: error.message } });
      send(200, { jsonrpc: '2.0', id, error: { code: -32603, message: String(error) } });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  peer.url = `http://127.0.0.1:${port}/`;
  peer.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return peer;
}

export interface SmartWallet {
  address: Address;
  /** The wallet contract's rule: does it accept `signature` over `hash`? */
  accepts(hash: Hex, signature: Hex): boolean | Promise<boolean>;
  /** For ERC-6492: the factory that would deploy it (counterfactual wallets). */
  factory?: Address;
}

const word = (hex4: string) => `${hex4}${'0'.repeat(56)}` as Hex;
export const MAGIC_WORD = word('0x1626ba7e');
const NOT_MAGIC = word('0xffffffff');

/** An `eth_call` handler for the given contract wallets (see the file comment). */
export function smartWallets(wallets: SmartWallet[]): RpcHandler {
  const find = (address: string) => wallets.find((w) => isAddressEqual(w.address, address as Address));
  return async (params) => {
    const call = params[0] as { to?: Hex; data?: Hex } | undefined;
    const data = call?.data ?? '0x';
    if (call?.to) {
      const wallet = find(call.to);
      if (!wallet) return '0x'; // no code at this address
      let args: readonly [Hex, Hex];
      try {
        ({ args } = decodeFunctionData({ abi: isValidSignatureAbi, data }));
      } catch {
        throw new RpcError(3, 'execution reverted');
      }
      return (await wallet.accepts(args[0], args[1])) ? MAGIC_WORD : NOT_MAGIC;
    }
    if (data.startsWith(erc6492SignatureValidatorByteCode)) {
      const [address, hash, wrapped] = decodeAbiParameters(
        [{ type: 'address' }, { type: 'bytes32' }, { type: 'bytes' }],
        `0x${data.slice(erc6492SignatureValidatorByteCode.length)}`,
      );
      const wallet = find(address);
      if (!wallet) return '0x00';
      const { address: factory, signature } = parseErc6492Signature(wrapped);
      if (factory && (!wallet.factory || !isAddressEqual(factory, wallet.factory))) return '0x00';
      return (await wallet.accepts(hash, signature)) ? '0x01' : '0x00';
    }
    throw new RpcError(3, 'execution reverted');
  };
}
