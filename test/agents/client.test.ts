import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentClient, subscriptionIterable } from '../../server/account/agents/client.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ AGENT_NAME: 'proxied' });
});
afterAll(() => agent.stop());

describe('account → agent client', () => {
  it('calls queries with the agent secret', async () => {
    const client = agentClient({ url: agent.url, secret: agent.secret });
    expect(await client.health.get.query()).toMatchObject({ status: 'ok', agent_name: 'proxied' });
  });

  it('surfaces the agent error code when the secret is wrong', async () => {
    const client = agentClient({ url: agent.url, secret: 'not-the-secret-of-this-agent' });
    const events = subscriptionIterable((callbacks) => client.chat.send.subscribe({ message: 'hi', chat_id: 'c1' }, callbacks));
    const failure = await (async () => {
      for await (const _ of events) return undefined;
      return undefined;
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect((failure as TRPCClientError<never>).data).toMatchObject({ code: 'INVALID_AGENT_SECRET' });
  });

  it('re-yields a subscription event by event until it ends', async () => {
    const client = agentClient({ url: agent.url, secret: agent.secret });
    const seen: unknown[] = [];
    for await (const event of subscriptionIterable((callbacks) => client.chat.send.subscribe({ message: 'hi', chat_id: 'c1' }, callbacks))) {
      seen.push(event);
    }
    // The chat subscription yields tracked events: the client sees `{id, data}`.
    expect(seen.at(-1)).toMatchObject({ id: expect.any(String), data: { type: 'done' } });
  });
});
