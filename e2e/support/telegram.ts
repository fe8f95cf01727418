/**
 * The fake Bot API the e2e product's agents and account service talk to
 * (TELEGRAM_API_ROOT=http://127.0.0.1:<port>), started by playwright.config.ts. Its token is the
 * one e2e/messenger.spec.ts connects.
 */
import { startFakeTelegram } from '../../test/support/fake-telegram.js';

const port = Number(process.env.E2E_TELEGRAM_PORT ?? 3913);
const fake = await startFakeTelegram({ port });
console.log(`fake Telegram at ${fake.apiRoot}`);
