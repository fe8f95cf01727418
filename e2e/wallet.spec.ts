import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { hexToString, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { parseSiweMessage } from 'viem/siwe';
import { injectWallet } from './support/wallet.js';

const storedTokens = (page: Page) => page.evaluate(() => localStorage.getItem('agent.tokens'));

test('a wallet signs in through SIWE in the web client', async ({ page, baseURL }) => {
  const wallet = privateKeyToAccount(generatePrivateKey());
  let signed: string | undefined;
  const calls = await injectWallet(page, async ({ method, params }) => {
    if (method === 'eth_requestAccounts') return { result: [wallet.address.toLowerCase()] };
    if (method === 'personal_sign') {
      const [data, address] = params as [Hex, string];
      expect(address.toLowerCase()).toBe(wallet.address.toLowerCase());
      signed = hexToString(data);
      return { result: await wallet.signMessage({ message: signed }) };
    }
    return { error: { code: 4200, message: `unsupported method ${method}` } };
  });
  await page.goto('/');
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  await expect(page.getByTestId('signed-in')).toContainText(/Signed in/);
  await expect(page.getByTestId('signed-in')).not.toContainText('guest');
  expect(calls.map((c) => c.method)).toEqual(['eth_requestAccounts', 'personal_sign']);
  // What the wallet was asked to sign: our EIP-4361 message for this origin, chain 1.
  const fields = parseSiweMessage(signed ?? '');
  const origin = new URL(baseURL ?? '');
  expect(fields).toMatchObject({ scheme: 'http', domain: origin.host, uri: origin.origin, chainId: 1, address: wallet.address, version: '1' });
  expect(await storedTokens(page)).toContain('access_token');
  await page.screenshot({ path: 'test-results/screenshots/home-wallet.png' });
});

test('the user rejecting the signature gets a clear message and no tokens', async ({ page }) => {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const calls = await injectWallet(page, async ({ method }) => {
    if (method === 'eth_requestAccounts') return { result: [wallet.address] };
    return { error: { code: 4001, message: 'User rejected the request.' } };
  });
  await page.goto('/');
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  const section = page.getByRole('region', { name: 'Wallet' });
  await expect(section.getByRole('alert')).toHaveText('You declined the request in your wallet, so you are not signed in.');
  expect(calls.map((c) => c.method)).toEqual(['eth_requestAccounts', 'personal_sign']);
  expect(await storedTokens(page)).toBeNull();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Connect wallet' })).toBeEnabled();
});

test('without a wallet the page says so', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  await expect(page.getByRole('region', { name: 'Wallet' }).getByRole('alert')).toContainText('No Ethereum wallet was found');
  expect(await storedTokens(page)).toBeNull();
});
