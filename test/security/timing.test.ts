/**
 * Timing side channels, by a statistical test over many interleaved samples (not one stopwatch):
 * - the agent-secret check: a wrong secret sharing a long prefix with the right one vs one that
 *   differs at the first character (and vs one of another length);
 * - e-mail login: a known address vs an unknown one.
 * Each pair is compared with Wilcoxon's signed-rank test over samples taken side by side; "no
 * measurable difference" = p above ALPHA and an effect size near 0.5. A positive control shifts one sample set by a small constant and shows
 * the same test does detect a difference of that size on this machine's noise.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentSecret } from '../../server/agent/auth.js';
import { createHash } from 'node:crypto';
import { signedRank, sampleInterleaved, type Comparison } from '../support/stats.js';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';

const ALPHA = 0.001;
const show = (name: string, c: Comparison) =>
  console.log(`${name}: n=${c.n}, median ${c.medianA.toFixed(3)} vs ${c.medianB.toFixed(3)} ms, p=${c.p.toFixed(4)}, effect ${c.effect.toFixed(3)}`);

/**
 * No difference. A sample counts only when its positive control detects the shift (else the
 * machine's noise swamped a difference of that size and the sample says nothing: take another,
 * twice the size, up to four, since a loaded machine's noise is beaten by more samples, not by
 * the same number again). Of the samples that count, one retry is allowed (a 1-in-1000 false alarm
 * on a shared machine); none counting at all fails too, as "too noisy to judge".
 */
async function expectNoDifference(name: string, take: (n: number) => Promise<{ a: number[]; b: number[] }>, n: number, shift: number) {
  let judged: Comparison | undefined;
  let conclusive = 0;
  for (let attempt = 0; attempt < 4 && conclusive < 2; attempt++) {
    const s = await take(n * 2 ** Math.min(attempt, 2));
    const c = signedRank(s.a, s.b);
    show(name, c);
    // Positive control on the very same samples: a shift of `shift` ms is detected.
    const control = signedRank(
      s.a.map((v) => v + shift),
      s.b,
    );
    show(`${name} (control, +${shift} ms)`, control);
    if (control.p >= ALPHA) continue;
    conclusive++;
    judged = c;
    if (c.p > ALPHA && Math.abs(c.effect - 0.5) < 0.1) return;
  }
  expect(conclusive, `${name}: in no sample did the control detect +${shift} ms (too noisy to judge)`).toBeGreaterThan(0);
  expect(judged!.p).toBeGreaterThan(ALPHA);
}

describe('timing', () => {
  let agent: TestAgent;
  let account: TestAccount;

  beforeAll(async () => {
    [agent, account] = await Promise.all([startTestAgent(), startTestAccount('pglite')]);
  });
  afterAll(() => Promise.all([agent?.stop(), account?.stop()]));

  it('isAgentSecret: near-miss vs far-miss secrets take the same time (in process, 20,000 samples each)', async () => {
    const secret = randomBytes(24).toString('hex');
    const hash = createHash('sha256').update(secret).digest();
    const near = `Bearer ${secret.slice(0, -1)}${secret.endsWith('0') ? '1' : '0'}`;
    const far = `Bearer ${secret.startsWith('0') ? '1' : '0'}${secret.slice(1)}`;
    const batch = (h: string) => async () => {
      for (let i = 0; i < 50; i++) isAgentSecret(h, hash);
    };
    await expectNoDifference('isAgentSecret near vs far', (n) => sampleInterleaved(n, batch(near), batch(far), 20), 400, 0.02);
  });

  it('agent API: a near-miss secret, a far-miss secret and a short one get their 401 in the same time', async () => {
    const near = `${agent.secret.slice(0, -1)}${agent.secret.endsWith('0') ? '1' : '0'}`;
    const far = `${agent.secret.startsWith('0') ? '1' : '0'}${agent.secret.slice(1)}`;
    const call = (secret: string) => async () => {
      const res = await fetch(`${agent.url}/workspace/tree`, { headers: { authorization: `Bearer ${secret}` } });
      if (res.status !== 401) throw new Error(`expected 401, got ${res.status}`);
      await res.arrayBuffer();
    };
    await expectNoDifference('agent 401 near vs far', (n) => sampleInterleaved(n, call(near), call(far)), 600, 0.3);
    await expectNoDifference('agent 401 near vs short', (n) => sampleInterleaved(n, call(near), call('x')), 600, 0.3);
  });

  it('POST /auth/login/email: a known and an unknown address answer in the same time', async () => {
    const api = `${account.url}/api/v1`;
    const post = (p: string, body: unknown) =>
      fetch(`${api}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // A known address: an account that signed in by e-mail.
    const known = 'known-timing@example.com';
    const issued = await account.services.email.request(known);
    expect((await post('/auth/verify-magic-link', { email: known, code: issued.code })).status).toBe(200);
    // The unknown address is asked as often as the known one: a request prunes its address's older
    // codes, so an address asked 400 times has work a first-time address has not, whether an
    // account holds it or not. An enumerating client asks both its addresses alike; what must not
    // show is the account.
    const unknown = `unknown-${randomBytes(3).toString('hex')}@example.com`;
    const ask = (email: string) => async () => {
      const res = await post('/auth/login/email', { email });
      if (res.status !== 200) throw new Error(`expected 200, got ${res.status}`);
      await res.arrayBuffer();
    };
    await expectNoDifference(
      'login/email known vs unknown',
      async (n) => {
        const s = await sampleInterleaved(n, ask(known), ask(unknown), 30);
        await account.services.mail.idle();
        return s;
      },
      400,
      0.5,
    );
  });
});
