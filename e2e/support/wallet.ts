import type { Page } from '@playwright/test';

export interface WalletCall {
  method: string;
  params: unknown[];
}

export type Answer = { result: unknown } | { error: { code: number; message: string } };

/**
 * Installs an EIP-1193 provider as `window.ethereum` before the page loads. Its requests are
 * bridged to `answer` in the test (Node), where a viem local account holds the key.
 */
export async function injectWallet(page: Page, answer: (call: WalletCall) => Promise<Answer>): Promise<WalletCall[]> {
  const calls: WalletCall[] = [];
  await page.exposeFunction('__e2eWallet', async (method: string, params: unknown[]) => {
    const call = { method, params };
    calls.push(call);
    return answer(call);
  });
  await page.addInitScript(() => {
    const bridge = (window as unknown as { __e2eWallet(method: string, params: unknown[]): Promise<Answer> }).__e2eWallet;
    (window as unknown as { ethereum: unknown }).ethereum = {
      async request({ method, params }: { method: string; params?: unknown[] }) {
        const answer = await bridge(method, params ?? []);
        if ('error' in answer) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result;
      },
    };
  });
  return calls;
}
