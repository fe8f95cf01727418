/**
 * The audit log is evidence (fourth security review, Low): the append-only trigger stopped UPDATE
 * and DELETE, but TRUNCATE emptied the table, and whoever owns it (the service's own role) could
 * turn the trigger off and edit or remove rows unseen. Now TRUNCATE is refused too, and every row
 * carries the hash of the one before (migration `audit_chain`, server/account/events/audit-chain.ts):
 * `npm run admin -- audit verify` answers the first broken link. The tampering below is what the
 * owner of the tables can do (triggers turned off); each kind is found at the right row, and the
 * limit is shown too: a removed tail whose head was rewritten is found only with an anchor kept
 * elsewhere. On PGlite and PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditActor, recordAudit } from '../../server/account/events/audit.js';
import { auditRowHash, type ChainAnchor, type ChainRow, type ChainVerdict, chainRows, verifyAuditChain } from '../../server/account/events/audit-chain.js';
import type { AccountDb } from '../../server/account/store.js';
import { adminCli } from '../support/admin-api.js';
import { postgresReachable } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const stores = (await postgresReachable()) ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

const actor: AuditActor = { type: 'user', id: randomUUID(), label: 'Zoë "ops" <ops@example.com>\n\ttab' };

/** Rows with what makes canonical forms differ: non-ASCII, quotes, control characters, key order, numbers, nesting, nulls. */
async function writeRows(db: AccountDb, count: number): Promise<void> {
  for (let n = 0; n < count; n += 1) {
    await recordAudit(db, {
      actor,
      action: 'user.update',
      target: { type: 'user', id: randomUUID() },
      ip: n % 2 ? '::1' : null,
      before: { z: n, a: [1.5, 'ü€😀', { q: '"\\\n\u0001' }], nothing: null, huge: 1.5e300, tiny: -2.5e-7, nested: { b: true, a: false } },
      ...(n % 3 ? { after: { metadata: { plan: `p${n}` } } } : {}),
    });
  }
}

/** Statements run as the tables' owner could: with every trigger of both tables off, then on again. */
async function asOwner(db: AccountDb, ...statements: string[]): Promise<void> {
  await db.$transaction([
    db.$executeRawUnsafe('ALTER TABLE "audit_events" DISABLE TRIGGER USER'),
    db.$executeRawUnsafe('ALTER TABLE "audit_chain_head" DISABLE TRIGGER USER'),
    ...statements.map((sql) => db.$executeRawUnsafe(sql)),
    db.$executeRawUnsafe('ALTER TABLE "audit_events" ENABLE TRIGGER USER'),
    db.$executeRawUnsafe('ALTER TABLE "audit_chain_head" ENABLE TRIGGER USER'),
  ]);
}

/** A row the trigger chained: its chain columns are set. */
type StoredRow = ChainRow & { prev_hash: string; hash: string };

async function chainRow(db: AccountDb, seq: number): Promise<StoredRow> {
  const [row] = await chainRows(db, seq, seq);
  if (!row?.prev_hash || !row.hash) throw new Error(`no chained audit row ${seq}`);
  return row as StoredRow;
}

const literal = (value: string | null): string => (value === null ? 'NULL' : `'${value.replaceAll("'", "''")}'`);

/** The INSERT that puts `row` back exactly as it was (run with the triggers off). */
const reinsert = (row: StoredRow): string =>
  `INSERT INTO "audit_events" ("seq", "id", "at", "actor_type", "actor_id", "actor_label", "action", "target_type", "target_id", "ip", "before", "after", "prev_hash", "hash")
   VALUES (${row.seq}, '${row.id}', '${row.at.toISOString().replace('Z', '')}', ${[row.actor_type, row.actor_id, row.actor_label, row.action, row.target_type, row.target_id, row.ip].map(literal).join(', ')},
           ${literal(row.before)}::jsonb, ${literal(row.after)}::jsonb, '${row.prev_hash}', '${row.hash}')`;

async function intactHead(db: AccountDb): Promise<ChainAnchor & { rows: number }> {
  const verdict = await verifyAuditChain(db);
  if (!verdict.intact) throw new Error(`expected an intact chain, got ${JSON.stringify(verdict)}`);
  return { ...verdict.head, rows: verdict.rows };
}

describe.each(stores)('the audit log cannot be emptied or edited unseen (%s)', (kind) => {
  let account: TestAccount;
  let db: AccountDb;
  let stopped = false;

  beforeAll(async () => {
    account = await startTestAccount(kind);
    db = account.services.store.db;
    await writeRows(db, 6);
  });
  afterAll(async () => {
    if (!stopped) await account?.stop();
  });

  it('TRUNCATE is refused like UPDATE and DELETE, and the chain head is neither changed nor removed but by a new row', async () => {
    const before = await intactHead(db);
    expect(before.rows).toBeGreaterThanOrEqual(6);
    for (const sql of [
      'TRUNCATE "audit_events"',
      'TRUNCATE "audit_events" CASCADE',
      'DELETE FROM "audit_events"',
      `UPDATE "audit_events" SET "actor_label" = 'someone else'`,
      'TRUNCATE "audit_chain_head"',
      'DELETE FROM "audit_chain_head"',
      'UPDATE "audit_chain_head" SET "seq" = 0',
    ]) {
      await expect(db.$executeRawUnsafe(sql), sql).rejects.toThrow(/append-only|changes only with a new audit row/);
    }
    expect(await intactHead(db)).toEqual(before);
  });

  it('every row joins the chain, however it is written: recordAudit, a raw INSERT (the webhook worker), values of its own for the chain columns', async () => {
    const { rows } = await intactHead(db);
    await recordAudit(db, { actor, action: 'key.create', target: { type: 'api_key', id: 'k1' } });
    await db.$executeRawUnsafe(`INSERT INTO "audit_events" ("id", "at", "actor_type", "actor_label", "action", "after")
      VALUES (gen_random_uuid(), now(), 'system', 'webhook delivery worker', 'webhook.disable', jsonb_build_object('enabled', false))`);
    await db.$executeRawUnsafe(`INSERT INTO "audit_events" ("id", "actor_type", "action", "seq", "prev_hash", "hash")
      VALUES (gen_random_uuid(), 'system', 'forged', 1, '${'0'.repeat(64)}', '${'f'.repeat(64)}')`);
    const after = await intactHead(db);
    expect(after.rows).toBe(rows + 3);
    const last = await chainRow(db, after.seq);
    expect(last.action).toBe('forged');
    expect(last.hash).toBe(auditRowHash(last.prev_hash, last));
  });

  /** Puts rows back exactly as the trigger wrote them. */
  const restore = (...rows: StoredRow[]) => asOwner(db, ...rows.map((row) => `DELETE FROM "audit_events" WHERE "seq" = ${row.seq}`), ...rows.map(reinsert));

  it('a row edited with the triggers off is found at its own seq, and one re-hashed too at the row after it', async () => {
    const { seq: last } = await intactHead(db);
    const target = last - 3;
    const original = await chainRow(db, target);
    await asOwner(db, `UPDATE "audit_events" SET "actor_label" = 'nobody' WHERE "seq" = ${target}`);
    expect(await verifyAuditChain(db)).toEqual({ intact: false, seq: target, id: original.id, problem: expect.stringMatching(/altered/) });

    // Given a hash that fits its new content, the edited row passes, and the next one's link breaks.
    const edited = await chainRow(db, target);
    await asOwner(db, `UPDATE "audit_events" SET "hash" = '${auditRowHash(edited.prev_hash, edited)}' WHERE "seq" = ${target}`);
    const next = await chainRow(db, target + 1);
    expect(await verifyAuditChain(db)).toEqual({
      intact: false,
      seq: target + 1,
      id: next.id,
      problem: expect.stringContaining(`not the hash of row ${target}`),
    });
    await restore(original);
    await intactHead(db);

    // A key added to the JSON of an earlier row, a time moved by a millisecond: found at that row.
    const earlier = await chainRow(db, target - 2);
    await asOwner(db, `UPDATE "audit_events" SET "before" = "before" || '{"z": 99}'::jsonb WHERE "seq" = ${earlier.seq}`);
    expect(await verifyAuditChain(db)).toMatchObject({ intact: false, seq: earlier.seq, id: earlier.id });
    await restore(earlier);
    await asOwner(db, `UPDATE "audit_events" SET "at" = "at" + interval '1 millisecond' WHERE "seq" = ${earlier.seq}`);
    expect(await verifyAuditChain(db)).toMatchObject({ intact: false, seq: earlier.seq, id: earlier.id });
    await restore(earlier);
    await intactHead(db);
  });

  /** Moves rows `from` on by `by` places, and the head with them (through negative numbers: `seq` is unique at every row). */
  const renumber = (from: number, by: number) =>
    asOwner(
      db,
      `UPDATE "audit_events" SET "seq" = -("seq" + ${by}) WHERE "seq" >= ${from}`,
      `UPDATE "audit_events" SET "seq" = -"seq" WHERE "seq" < 0`,
      `UPDATE "audit_chain_head" SET "seq" = "seq" + ${by}`,
    );

  it('a row removed from the middle is found at the row after the gap', async () => {
    const { seq: last } = await intactHead(db);
    const removed = await chainRow(db, last - 2);
    await asOwner(db, `DELETE FROM "audit_events" WHERE "seq" = ${removed.seq}`);
    const after = await chainRow(db, removed.seq + 1);
    expect(await verifyAuditChain(db)).toEqual({
      intact: false,
      seq: removed.seq + 1,
      id: after.id,
      problem: `row ${removed.seq} is missing before it: removed from the log`,
    });
    // Renumbered to hide the gap: the link still breaks there.
    await renumber(removed.seq + 1, -1);
    expect(await verifyAuditChain(db)).toMatchObject({ intact: false, seq: removed.seq, id: after.id });
    await renumber(removed.seq, 1);
    await restore(removed);
    await intactHead(db);
  });

  it('a removed tail is found from the head; once the head is rewritten too, only an anchor kept elsewhere finds it', async () => {
    const anchor = await intactHead(db);
    const tail = [await chainRow(db, anchor.seq - 1), await chainRow(db, anchor.seq)];
    await asOwner(db, `DELETE FROM "audit_events" WHERE "seq" >= ${anchor.seq - 1}`);
    expect(await verifyAuditChain(db)).toMatchObject({
      intact: false,
      seq: anchor.seq - 1,
      problem: `rows ${anchor.seq - 1} to ${anchor.seq} are missing: the end of the log was removed`,
    });

    const kept = await chainRow(db, anchor.seq - 2);
    await asOwner(db, `UPDATE "audit_chain_head" SET "seq" = ${kept.seq}, "hash" = '${kept.hash}'`);
    // The honest limit: the database alone now tells a shorter, consistent story.
    expect(await verifyAuditChain(db)).toEqual({ intact: true, rows: kept.seq, unchained: expect.any(Number), head: { seq: kept.seq, hash: kept.hash } });
    expect(await verifyAuditChain(db, anchor)).toMatchObject({ intact: false, problem: expect.stringContaining(`anchored row ${anchor.seq} is missing`) });
    // An anchor also catches a chain rewritten from some row on, hashes and all.
    expect(await verifyAuditChain(db, { seq: kept.seq, hash: 'a'.repeat(64) })).toMatchObject({
      intact: false,
      seq: kept.seq,
      problem: expect.stringContaining('rewritten'),
    });

    await asOwner(db, ...tail.map(reinsert), `UPDATE "audit_chain_head" SET "seq" = ${anchor.seq}, "hash" = '${anchor.hash}'`);
    expect(await verifyAuditChain(db, anchor)).toMatchObject({ intact: true, head: { seq: anchor.seq, hash: anchor.hash } });
  });

  it('a row added with the chain trigger off (no seq) is found', async () => {
    await intactHead(db);
    const id = randomUUID();
    await asOwner(db, `INSERT INTO "audit_events" ("id", "actor_type", "action") VALUES ('${id}', 'cli', 'user.grant')`);
    expect(await verifyAuditChain(db)).toMatchObject({ intact: false, problem: expect.stringMatching(/have no place in the chain/) });
    await asOwner(db, `DELETE FROM "audit_events" WHERE "id" = '${id}'`);
    // One given a place past the head: not taken for a row written while verify runs.
    const { seq } = await intactHead(db);
    await asOwner(db, `INSERT INTO "audit_events" ("id", "actor_type", "action", "seq") VALUES ('${id}', 'cli', 'user.grant', ${seq + 1})`);
    expect(await verifyAuditChain(db)).toMatchObject({ intact: false, seq, problem: expect.stringMatching(/head was rewritten/) });
    await asOwner(db, `DELETE FROM "audit_events" WHERE "id" = '${id}'`);
    await intactHead(db);
  });

  it('concurrent writers, each in its own transaction, keep one unbroken chain', async () => {
    const { rows } = await intactHead(db);
    const writers = 40;
    await Promise.all(
      Array.from({ length: writers }, (_, n) =>
        n % 4 === 0
          ? db.$executeRawUnsafe(`INSERT INTO "audit_events" ("id", "actor_type", "action") VALUES (gen_random_uuid(), 'system', 'webhook.disable')`)
          : db.$transaction(async (tx) => {
              await tx.user.count();
              await recordAudit(tx, { actor, action: 'user.ban', target: { type: 'user', id: String(n) } });
            }),
      ),
    );
    const head = await intactHead(db);
    expect(head.rows).toBe(rows + writers);
    const seqs = await db.$queryRaw<Array<{ seq: number }>>`SELECT "seq" FROM "audit_events" WHERE "seq" IS NOT NULL ORDER BY "seq"`;
    expect(seqs.map((row) => row.seq)).toEqual(Array.from({ length: head.rows }, (_, n) => n + 1));
  });

  it('rows written while verify runs are left to the next run, not taken for a removed end', async () => {
    const { rows } = await intactHead(db);
    let verifying = true;
    let written = 0;
    // Bounded: at most 300 rows, whether or not the verifies are done.
    const writer = (async () => {
      while (verifying && written < 300) {
        await recordAudit(db, { actor, action: 'user.update', target: { type: 'user', id: String(written) } });
        written += 1;
      }
    })();
    const verdicts: ChainVerdict[] = [];
    try {
      for (let n = 0; n < 20; n += 1) verdicts.push(await verifyAuditChain(db));
    } finally {
      verifying = false;
      await writer;
    }
    expect(written).toBeGreaterThan(0);
    expect(verdicts.filter((verdict) => !verdict.intact)).toEqual([]);
    // Each verdict covers the rows up to some moment of the writing, later verdicts more of them.
    const covered = verdicts.map((verdict) => (verdict.intact ? verdict.rows : 0));
    expect(covered).toEqual([...covered].sort((a, b) => a - b));
    expect(Math.min(...covered)).toBeGreaterThanOrEqual(rows);
    expect(Math.max(...covered)).toBeLessThanOrEqual(rows + written);
    expect((await intactHead(db)).rows).toBe(rows + written);
  });

  it('npm run admin -- audit verify: "intact, N rows" and the head to keep; the first broken link and exit code 2 otherwise', async () => {
    const head = await intactHead(db);
    const target = await chainRow(db, head.seq - 1);
    // PGlite serves one process: the command line opens the store once the service is down.
    if (kind === 'pglite') {
      await account.stop({ keepData: true });
      stopped = true;
    }
    const cli = (...args: string[]) =>
      adminCli(account, 'audit', 'verify', ...args).then(
        ({ stdout }) => ({ code: 0, stdout }),
        (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
      );
    expect(await cli()).toEqual({
      code: 0,
      stdout: expect.stringMatching(new RegExp(`^audit log intact, ${head.rows} rows.*\nhead ${head.seq}:${head.hash}\n$`)),
    });
    expect(await cli('--anchor', `${head.seq}:${head.hash}`)).toMatchObject({ code: 0 });
    expect(await cli('--anchor', 'latest')).toMatchObject({ code: 1 });
    if (kind === 'pglite') {
      // Tampered while the service is down, as an owner with the files could.
      const { PGlite } = await import('@electric-sql/pglite');
      const pglite = await PGlite.create(`${account.dataDir}/account-db`);
      await pglite.exec(`ALTER TABLE "audit_events" DISABLE TRIGGER USER; UPDATE "audit_events" SET "ip" = '203.0.113.9' WHERE "seq" = ${target.seq}`);
      await pglite.close();
    } else {
      await asOwner(db, `UPDATE "audit_events" SET "ip" = '203.0.113.9' WHERE "seq" = ${target.seq}`);
    }
    expect(await cli()).toEqual({
      code: 2,
      stdout: `audit log broken at row ${target.seq} (${target.id}): its content does not give its hash: the row was altered\n`,
    });
  });
});
