/**
 * "Connect wallet": Sign-In with Ethereum through the browser's EIP-1193 provider
 * (`window.ethereum`): request the account, fetch the server's challenge, have the wallet
 * `personal_sign` it, send the signature back. A signed-in guest is upgraded in place (api.ts
 * sends the stored access token).
 */
import { api, errorMessage } from '../api.js';
import { alertBox, h } from '../dom.js';
import type { SignInMethod } from './method.js';

interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

/** EIP-1193 errors carry a numeric `code`: 4001 is the user saying no. */
const providerErrorCode = (error: unknown): number | undefined => {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'number' ? code : undefined;
};

export const NO_WALLET = 'No Ethereum wallet was found in this browser. Install a wallet extension (such as MetaMask) and reload the page.';
export const DECLINED = 'You declined the request in your wallet, so you are not signed in.';

function walletFailure(error: unknown): string {
  switch (providerErrorCode(error)) {
    case 4001:
      return DECLINED;
    case -32002:
      return 'Your wallet already has a request waiting: open it to continue.';
    case 4100:
    case 4900:
    case 4901:
      return 'Your wallet is locked or disconnected: unlock it and try again.';
    default:
      return errorMessage(error);
  }
}

/** personal_sign takes the message as hex-encoded UTF-8 bytes. */
const utf8ToHex = (text: string) => `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, '0')).join('')}`;

function provider(): Eip1193Provider | undefined {
  const candidate = (window as { ethereum?: Partial<Eip1193Provider> }).ethereum;
  return typeof candidate?.request === 'function' ? (candidate as Eip1193Provider) : undefined;
}

export const walletMethod: SignInMethod = {
  id: 'wallet',
  render(done) {
    const alert = alertBox();
    const button = h('button', { type: 'button', 'data-testid': 'wallet-signin' }, 'Connect wallet');
    button.onclick = async () => {
      alert.clear();
      const wallet = provider();
      if (!wallet) return alert.show(NO_WALLET);
      button.disabled = true;
      try {
        const accounts = await wallet.request({ method: 'eth_requestAccounts' });
        const address = Array.isArray(accounts) && typeof accounts[0] === 'string' ? accounts[0] : undefined;
        if (!address) return alert.show('Your wallet did not share an account.');
        const { nonce, message } = await api.auth.wallet.challenge.mutate({ address });
        const signature = await wallet.request({ method: 'personal_sign', params: [utf8ToHex(message), address] });
        if (typeof signature !== 'string') return alert.show('Your wallet returned no signature.');
        done(await api.auth.wallet.verify.mutate({ address, signature, nonce }));
      } catch (error) {
        alert.show(walletFailure(error));
      } finally {
        button.disabled = false;
      }
    };
    return h('section', { 'aria-labelledby': 'wallet-title' }, h('h2', { id: 'wallet-title' }, 'Wallet'), button, alert.el);
  },
};
