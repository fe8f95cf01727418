/** The messenger suites' rig: a fake Bot API, a scripted model and an agent pointed at both. */
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { FAST_ENV, until } from '../chat/helpers.js';

export { sleep, until } from '../chat/helpers.js';

/** Short poll and backoff so that the suites stay fast on two shared cores. */
export const TELEGRAM_FAST_ENV = {
  TELEGRAM_POLL_TIMEOUT: '1',
  TELEGRAM_RETRY_BASE: '0.02',
  TELEGRAM_RETRY_MAX: '0.2',
};

export interface TelegramRig {
  fake: FakeTelegram;
  model: ScriptedModel;
  agent: TestAgent;
  json<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

export async function startTelegramRig(
  env: Record<string, string> = {},
  opts: { waitConnected?: boolean; beforeAgent?: (fake: FakeTelegram) => void } = {},
): Promise<TelegramRig> {
  const fake = await startFakeTelegram();
  opts.beforeAgent?.(fake);
  const model = await startScriptedModel();
  const agent = await startTestAgent({
    ...FAST_ENV,
    ...TELEGRAM_FAST_ENV,
    MODEL: model.modelSpec,
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    ...env,
  });
  const rig: TelegramRig = {
    fake,
    model,
    agent,
    async json(method, path, body) {
      const res = await fetch(`${agent.url}${path}`, {
        method,
        headers: { ...agent.auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: await res.json() };
    },
    async stop() {
      await agent.stop();
      await model.close();
      await fake.close();
    },
  };
  if (opts.waitConnected !== false) await until(() => agent.services.messenger.status().connected);
  return rig;
}

export const alice = { id: 1001, first_name: 'Alice', last_name: 'Liddell', username: 'alice' };
export const bob = { id: 1002, first_name: 'Bob', username: 'bob' };
export const carol = { id: 1003, first_name: 'Carol' };
