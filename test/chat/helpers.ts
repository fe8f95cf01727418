/** Shared bits of the chat suites: an agent wired to a scripted model, and REST calls. */
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { openSse, readFrames, withoutKeepalive, type SseFrame, type SseStream } from '../support/sse.js';

export interface ChatRig {
  agent: TestAgent;
  model: ScriptedModel;
  post(chatId: string, message: string): Promise<SseStream>;
  stream(chatId: string, lastEventId?: string): Promise<SseStream>;
  /** POST and read to `done` (keepalives left out; runs.test.ts checks them). */
  chat(chatId: string, message: string): Promise<SseFrame[]>;
  get<T = unknown>(path: string): Promise<{ status: number; body: T }>;
  del<T = unknown>(path: string): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/** Short intervals so the suites stay fast on two shared cores. */
export const FAST_ENV = {
  AGENT_KEEPALIVE_INTERVAL: '5',
  AGENT_STREAM_GRACE: '2',
  AGENT_MODEL_RETRIES: '0',
  AGENT_EXEC_TIMEOUT: '5',
};

export async function startChatRig(env: Record<string, string> = {}): Promise<ChatRig> {
  const model = await startScriptedModel();
  const agent = await startTestAgent({ ...FAST_ENV, MODEL: model.modelSpec, ...env });
  const json = { 'content-type': 'application/json', ...agent.auth };
  const rig: ChatRig = {
    agent,
    model,
    post: (chatId, message) => openSse(`${agent.url}/chat`, { method: 'POST', headers: json, body: JSON.stringify({ message, chat_id: chatId }) }),
    stream: (chatId, lastEventId) =>
      openSse(`${agent.url}/chat/${encodeURIComponent(chatId)}/stream`, {
        headers: { ...agent.auth, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      }),
    async chat(chatId, message) {
      return withoutKeepalive(await readFrames(await rig.post(chatId, message)));
    },
    async get(path) {
      const res = await fetch(`${agent.url}${path}`, { headers: agent.auth });
      return { status: res.status, body: await res.json() };
    },
    async del(path) {
      const res = await fetch(`${agent.url}${path}`, { method: 'DELETE', headers: agent.auth });
      return { status: res.status, body: await res.json() };
    },
    async stop() {
      await agent.stop();
      await model.close();
    },
  };
  return rig;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` holds (bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await sleep(20);
  }
}
