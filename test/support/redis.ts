import { Redis } from 'ioredis';

const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether the local Redis (CI machines run one) answers; suites that need it run only then. */
export async function redisReachable(): Promise<boolean> {
  // Inside the kube suite's private network namespace (scripts/kube/in-netns.sh): none, without trying.
  if (process.env.KUBE_NETNS === '1') return false;
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}
