/**
 * A webhook receiver on loopback for tests: it verifies every delivery with the `standardwebhooks`
 * package (an independent implementation of the spec) against the secrets it is given, records
 * what arrived, and answers what the test asks (a status, or nothing at all: `hang`).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Receipt {
  id: string;
  body: string;
  event: { type: string; timestamp: string; data: { user_id: string } & Record<string, unknown> };
  headers: IncomingHttpHeaders;
  /** The secrets (by index in `secrets`) whose signature verified. */
  verifiedWith: number[];
  at: number;
}

export type Answer = number | 'hang';

export interface WebhookReceiver {
  url: string;
  /** Every request, verified or not, in arrival order. */
  receipts: Receipt[];
  /** Secrets to verify with; a request none of them verifies is recorded in `unverified`. */
  secrets: string[];
  unverified: string[];
  /** What to answer to a request (default 200). */
  answer: (receipt: Receipt) => Answer;
  waitFor(predicate: (receipts: Receipt[]) => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const hung: ServerResponse[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    receipts: [],
    secrets: [],
    unverified: [],
    answer: () => 200,
    async waitFor(predicate, timeoutMs = 20_000, what = 'deliveries') {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(receiver.receipts)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received ${receiver.receipts.map((r) => r.event.type).join(', ')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const verifiedWith = receiver.secrets.flatMap((secret, index) => {
        try {
          new Webhook(secret).verify(body, headers);
          return [index];
        } catch {
          return [];
        }
      });
      const receipt: Receipt = { id: String(req.headers['webhook-id']), body, event: JSON.parse(body), headers: req.headers, verifiedWith, at: Date.now() };
      if (!verifiedWith.length) receiver.unverified.push(body);
      receiver.receipts.push(receipt);
      const answer = receiver.answer(receipt);
      if (answer === 'hang') {
        hung.push(res);
        return;
      }
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'thanks' : `refused with ${answer}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}
