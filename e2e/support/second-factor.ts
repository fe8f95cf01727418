/**
 * An authenticator app for the browser specs: it scans the QR code the page draws (a screenshot of
 * it, decoded by jsQR, as a phone camera would) and computes codes with Debian's oathtool
 * (test/support/authenticator.ts) — nothing of the web client's own code reads the secret for it.
 */
import { expect, type Page } from '@playwright/test';
import jsqr from 'jsqr';
import { readOtpauthUri, totpCode } from '../../test/support/authenticator.js';

/** The text of the QR code on the page, read from its pixels. */
export async function scanQrCode(page: Page): Promise<string> {
  const png = (await page.getByTestId('totp-qr').screenshot()).toString('base64');
  // The browser decodes its own PNG into RGBA pixels (on a blank page: the product's CSP rightly
  // refuses data: URLs); jsQR reads them here, in Node.
  const scratch = await page.context().newPage();
  const image = await scratch.evaluate(async (data) => {
    const bitmap = await createImageBitmap(await (await fetch(`data:image/png;base64,${data}`)).blob());
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext('2d')!;
    context.drawImage(bitmap, 0, 0);
    // As one base64 string: an array of a number per byte is megabytes of JSON on the protocol,
    // seconds of a loaded machine's CPU.
    const rgba = context.getImageData(0, 0, bitmap.width, bitmap.height).data;
    let binary = '';
    for (let at = 0; at < rgba.length; at += 0x8000) binary += String.fromCharCode(...rgba.subarray(at, at + 0x8000));
    return { width: bitmap.width, height: bitmap.height, pixels: btoa(binary) };
  }, png);
  await scratch.close();
  // jsqr is CommonJS: Node's default import is its module.exports, whose `default` is the decoder.
  const decoded = jsqr.default(new Uint8ClampedArray(Buffer.from(image.pixels, 'base64')), image.width, image.height);
  if (!decoded) throw new Error('the QR code on the page could not be read');
  return decoded.data;
}

export interface BrowserEnrolment {
  secret: string;
  otpauthUri: string;
  recoveryCodes: string[];
  /** When the confirming code was made (ms): its step is spent. */
  confirmedAt: number;
}

/** On the Account page: adds an authenticator app by scanning its QR code, confirms it with oathtool's code, and reads the recovery codes. */
export async function enrolAuthenticator(page: Page): Promise<BrowserEnrolment> {
  await page.getByTestId('add-authenticator').click();
  const otpauthUri = await scanQrCode(page);
  const { secret } = readOtpauthUri(otpauthUri);
  // The key shown for typing by hand is the one in the QR code.
  await page.getByText('Cannot scan it? Enter a key instead').click();
  await expect(page.getByTestId('totp-secret')).toHaveText(secret.replace(/(.{4})(?=.)/g, '$1 '));
  const confirmedAt = Date.now();
  await page.getByLabel('6-digit code from the app').fill(await totpCode(secret, { at: confirmedAt }));
  await page.getByRole('button', { name: 'Turn on' }).click();
  await expect(page.getByTestId('recovery-codes').getByRole('listitem')).toHaveCount(10);
  const recoveryCodes = (await page.getByTestId('recovery-codes').getByRole('listitem').allTextContents()).map((code) => code.trim());
  return { secret, otpauthUri, recoveryCodes, confirmedAt };
}

/** At sign-in's second step: the code oathtool computes `steps` 30-second steps after `at`. */
export async function passSecondStep(page: Page, secret: string, at: number, steps = 1): Promise<void> {
  await expect(page.getByRole('heading', { name: 'Two-step verification' })).toBeVisible();
  await page.getByLabel('6-digit code').fill(await totpCode(secret, { at, steps }));
  await page.getByRole('button', { name: 'Verify' }).first().click();
}
