/**
 * No event is lost when the account service dies (docs/admin.md, "Webhooks"): the service runs
 * as its own process; twenty sign-ups commit while the receiver holds every delivery unanswered,
 * the process is killed with SIGKILL, and a new process on the same store delivers all twenty —
 * those never attempted (found in the outbox) and those cut mid-flight (claimed again when their
 * lease ran out) — each verified by `standardwebhooks`, none under two ids.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../server/account/admin/webhooks/endpoints.js';
import { loadSecretBox } from '../../server/account/agents/secrets.js';
import { openAccountStore } from '../../server/account/store.js';
import { serviceEntry } from '../support/entries.js';
import { freePort, tempDir } from '../support/servers.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const SIGN_UPS = 20;

describe('webhooks across a SIGKILL of the account service', () => {
  let dataDir: string;
  let receiver: WebhookReceiver;
  const children: ChildProcess[] = [];

  async function startService(port: number): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
    const child = spawn(process.execPath, serviceEntry('account'), {
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: dataDir,
        AGENT_PROVISIONER: 'static',
        RATE_LIMIT_MULTIPLIER: '1000',
        WEBHOOK_ALLOW_PRIVATE: '1',
        WEBHOOK_POLL: '0.05',
        // A delivery cut by the kill is claimed again 2 × 1 + 5 = 7 s later.
        WEBHOOK_TIMEOUT: '1',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const url = `http://127.0.0.1:${port}`;
    for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
      if (child.exitCode !== null) throw new Error(`the account service exited with ${child.exitCode}`);
      if (
        await fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return { child, url, exited };
      if (Date.now() > deadline) throw new Error('the account service did not become ready');
    }
  }

  beforeAll(async () => {
    dataDir = await tempDir('webhooks-crash');
    receiver = await startWebhookReceiver();
    // The endpoint, registered before the service starts (the admin API is tested elsewhere).
    const store = await openAccountStore({ dataDir });
    try {
      const endpoint = await createEndpoint(store.db, await loadSecretBox(undefined, dataDir), {
        url: receiver.url,
        description: 'crash test',
        event_types: ['user.created'],
        enabled: true,
      });
      receiver.secrets = [endpoint.secret];
    } finally {
      await store.close();
    }
  }, 60_000);
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await receiver?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('receives every event committed before the kill, each once by id, after the service comes back', async () => {
    const port = await freePort();
    receiver.answer = () => 'hang';
    const first = await startService(port);
    const userIds: string[] = [];
    for (let i = 0; i < SIGN_UPS; i++) {
      const res = await fetch(`${first.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: `crash-${randomUUID()}` }),
      });
      expect(res.status).toBe(200);
      const { access_token } = (await res.json()) as { access_token: string };
      userIds.push(JSON.parse(Buffer.from(access_token.split('.')[1]!, 'base64url').toString()).sub);
    }
    // Some deliveries are in flight (held by the receiver), none answered: then the kill.
    await receiver.waitFor((rs) => rs.length > 0, 20_000, 'a first attempt');
    first.child.kill('SIGKILL');
    await first.exited;
    const seenBeforeRestart = receiver.receipts.length;
    expect(seenBeforeRestart).toBeLessThanOrEqual(SIGN_UPS);

    receiver.answer = () => 200;
    await startService(port);
    const delivered = () => new Set(receiver.receipts.filter((r) => receiver.receipts.indexOf(r) >= seenBeforeRestart).map((r) => r.event.data.user_id));
    await receiver.waitFor(() => userIds.every((id) => delivered().has(id)), 60_000, `all ${SIGN_UPS} user.created events`);
    expect(receiver.unverified).toEqual([]);
    const idByUser = new Map<string, string>();
    for (const r of receiver.receipts) {
      expect(r.event.type).toBe('user.created');
      expect(idByUser.get(r.event.data.user_id) ?? r.id).toBe(r.id);
      idByUser.set(r.event.data.user_id, r.id);
    }
    expect(idByUser.size).toBe(SIGN_UPS);
  }, 120_000);
});
