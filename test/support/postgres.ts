/**
 * PostgreSQL for tests, when one is reachable: TEST_DATABASE_URL, else the local server that CI
 * machines run on 127.0.0.1:5432. Each test file gets a database of its own, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const serverUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The server the test databases are made on (its maintenance database). */
export const postgresServerUrl = () => serverUrl;

let reachable: Promise<boolean> | undefined;

export function postgresReachable(): Promise<boolean> {
  // Inside the kube suite's private network namespace (scripts/kube/in-netns.sh) no server is
  // reachable: the embedded stores only, without trying.
  if (process.env.KUBE_NETNS === '1') return Promise.resolve(false);
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 1_500 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return reachable;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** The account-store kinds to run a suite against on this machine. */
export async function accountStoreKinds(): Promise<Array<'pglite' | 'postgres'>> {
  return (await postgresReachable()) ? ['pglite', 'postgres'] : ['pglite'];
}
