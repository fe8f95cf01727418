import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountStore } from '../../server/account/store.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const kinds = await accountStoreKinds();

describe.each(kinds)('account service on %s', (kind) => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount(kind, {}, { freshStore: true });
  });
  afterAll(() => account.stop());

  it('applied the committed migrations at start, on the expected store', () => {
    expect(account.services.store.kind).toBe(kind);
    expect(account.services.store.appliedMigrations.length).toBeGreaterThan(0);
  });

  it('has the tables the migrations create', async () => {
    const rows = await account.services.store.db.$queryRawUnsafe<Array<{ table_name: string }>>(
      `select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(['_prisma_migrations', 'users', 'sessions', 'identities']));
  });

  it('serves the OpenAPI document, JWKS and the API index redirect', async () => {
    const doc = (await (await fetch(`${account.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown>; servers: Array<{ url: string }> };
    expect(Object.keys(doc.paths)).toContain('/auth/logout');
    expect(doc.servers[0]?.url).toMatch(/\/api\/v1$/);
    const jwks = await fetch(`${account.url}/.well-known/jwks.json`);
    expect(jwks.status).toBe(200);
    expect(await jwks.json()).toHaveProperty('keys');
    const index = await fetch(`${account.url}/api/v1`, { redirect: 'manual' });
    expect(index.status).toBe(302);
    expect(index.headers.get('location')).toMatch(/\/api\/v1\/openapi\.json$/);
  });

  it('answers a 204 route with an empty body', async () => {
    const res = await fetch(`${account.url}/api/v1/auth/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: 'unknown' }),
    });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
  });

  it.each([
    ['malformed JSON', { 'content-type': 'application/json' }, '{"refresh_token":', 400, 'MALFORMED_JSON'],
    ['wrong content type', { 'content-type': 'application/x-www-form-urlencoded' }, 'refresh_token=x', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['missing field', { 'content-type': 'application/json' }, '{}', 400, 'VALIDATION_FAILED'],
    ['oversized body', { 'content-type': 'application/json' }, JSON.stringify({ refresh_token: 'x'.repeat(1_200_000) }), 413, 'PAYLOAD_TOO_LARGE'],
  ])('refuses %s', async (_name, headers, body, status, code) => {
    const res = await fetch(`${account.url}/api/v1/auth/logout`, { method: 'POST', headers, body });
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ detail: expect.any(String), code });
  });

  it('answers unknown routes and wrong methods with the error body', async () => {
    const missing = await fetch(`${account.url}/api/v1/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    const wrong = await fetch(`${account.url}/api/v1/auth/logout`);
    expect(wrong.status).toBe(405);
    expect(await wrong.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  });

  it('serves the same procedures over tRPC', async () => {
    const res = await fetch(`${account.url}/trpc/tokens.logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ json: { refresh_token: 'unknown' } }),
    });
    expect(res.status).toBe(200);
  });

  it('reopens its store without re-applying migrations', async () => {
    if (kind === 'pglite') return; // PGlite holds an exclusive lock on its directory while the service runs
    const url = (account.services.config.databaseUrl ?? '') as string;
    const again = await openAccountStore({ databaseUrl: url, dataDir: account.dataDir });
    expect(again.appliedMigrations).toEqual([]);
    await again.close();
  });
});
