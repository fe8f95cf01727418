/**
 * Checks the audit log's hash chain (docs/security.md, "The audit log's hash chain"). The
 * database's insert trigger (migration `audit_chain`) gives every row its `seq`, the `hash` of the
 * row before as `prev_hash`, and its own `hash`; this module recomputes every hash here, outside
 * the database, so a trigger or function replaced by whoever owns the tables cannot vouch for a
 * row. It reads each row as the trigger saw it: the JSON columns as PostgreSQL's text of the
 * jsonb, the time as ISO 8601.
 */
import { createHash } from 'node:crypto';
import type { AccountDb } from '../store.js';

/** The `prev_hash` of the first row. */
export const GENESIS_HASH = '0'.repeat(64);

/** A chain position someone kept outside the database (the last line of an earlier verify). */
export interface ChainAnchor {
  seq: number;
  hash: string;
}

export type ChainVerdict =
  | { intact: true; rows: number; unchained: number; head: ChainAnchor }
  | { intact: false; seq: number; id: string | null; problem: string };

/** A row as the trigger saw it (docs/security.md, "The audit log's hash chain"). */
export interface ChainRow {
  seq: number;
  id: string;
  at: Date;
  actor_type: string;
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  before: string | null;
  after: string | null;
  prev_hash: string | null;
  hash: string | null;
}

/** One field as the trigger writes it: `N` for null, else `S<UTF-8 byte length>:<text>`, so no two rows' fields run together. */
const field = (value: string | null): string => (value === null ? 'N' : `S${Buffer.byteLength(value, 'utf8')}:${value}`);

/** What the trigger stores as `hash`: SHA-256 (hex) over the previous hash and the row's fields, in column order. */
export function auditRowHash(prevHash: string, row: Omit<ChainRow, 'prev_hash' | 'hash'>): string {
  const fields = [
    String(row.seq),
    row.id,
    row.at.toISOString(),
    row.actor_type,
    row.actor_id,
    row.actor_label,
    row.action,
    row.target_type,
    row.target_id,
    row.ip,
    row.before,
    row.after,
  ];
  return createHash('sha256')
    .update(prevHash + fields.map(field).join(''), 'utf8')
    .digest('hex');
}

const PAGE = 1_000;

/** The chained rows with `seq` from `from` to `through`, in order, at most a page of them. */
export const chainRows = (db: AccountDb, from: number, through: number): Promise<ChainRow[]> =>
  db.$queryRaw<ChainRow[]>`
    SELECT "seq", "id"::text AS "id", "at", "actor_type", "actor_id", "actor_label", "action", "target_type", "target_id", "ip",
           "before"::text AS "before", "after"::text AS "after", "prev_hash", "hash"
      FROM "audit_events" WHERE "seq" BETWEEN ${from} AND ${through} ORDER BY "seq" LIMIT ${PAGE}`;

/** `seq` is an `integer` column: the bound of a walk that has no head to stop at. */
const MAX_SEQ = 2_147_483_647;

interface ChainHead {
  seq: number;
  hash: string;
  unchained: number;
}

const readHead = async (db: AccountDb): Promise<ChainHead | undefined> =>
  (await db.$queryRaw<ChainHead[]>`SELECT "seq", "hash", "unchained" FROM "audit_chain_head" WHERE "id" = 1`)[0];

/**
 * Walks the chain from its first row and answers the first broken link: a row whose content no
 * longer gives its hash (altered), a row whose `prev_hash` is not the hash of the row before (that
 * one altered and re-hashed, or replaced), a gap in `seq` (rows removed), a head that does not end
 * where the rows do (the tail removed), a different number of rows from before the chain, or an
 * `anchor` the chain no longer passes through.
 *
 * It reads the head first and walks only up to it: the trigger moves the head in the same
 * transaction as the row, so every row up to the head it read is committed, and a row written
 * while verify runs lands beyond it, left to the next run instead of reading as a removed end.
 */
export async function verifyAuditChain(db: AccountDb, anchor?: ChainAnchor): Promise<ChainVerdict> {
  const head = await readHead(db);
  const through = head?.seq ?? MAX_SEQ;
  let expected = 1;
  let previous = GENESIS_HASH;
  for (;;) {
    const rows = await chainRows(db, expected, through);
    for (const row of rows) {
      const broken = (problem: string): ChainVerdict => ({ intact: false, seq: row.seq, id: row.id, problem });
      if (row.seq !== expected) {
        const missing = row.seq - 1 === expected ? `row ${expected} is` : `rows ${expected} to ${row.seq - 1} are`;
        return broken(`${missing} missing before it: removed from the log`);
      }
      if (row.hash === null || row.prev_hash === null || auditRowHash(row.prev_hash, row) !== row.hash) {
        return broken('its content does not give its hash: the row was altered');
      }
      if (row.prev_hash !== previous) {
        return broken(`its prev_hash is not the hash of row ${expected - 1}: that row was altered and given a new hash, or replaced`);
      }
      if (anchor && row.seq === anchor.seq && row.hash !== anchor.hash) {
        return broken(`its hash is not the anchored ${anchor.hash}: the chain was rewritten up to here`);
      }
      previous = row.hash;
      expected += 1;
    }
    if (rows.length < PAGE) break;
  }
  const last = expected - 1;
  if (!head) return { intact: false, seq: last + 1, id: null, problem: 'the chain head (audit_chain_head) is gone' };
  if (head.seq > last) {
    const missing = head.seq === last + 1 ? `row ${head.seq} is` : `rows ${last + 1} to ${head.seq} are`;
    return { intact: false, seq: last + 1, id: null, problem: `${missing} missing: the end of the log was removed` };
  }
  const [tail] = await db.$queryRaw<[{ unchained: number; top: number | null }]>`
    SELECT count(*) FILTER (WHERE "seq" IS NULL)::int AS "unchained", max("seq") AS "top" FROM "audit_events"`;
  // Rows past the head read first are new ones only if the head has moved past them since (read after them).
  const headRewritten = head.hash !== previous || (tail.top !== null && tail.top > last && tail.top > ((await readHead(db))?.seq ?? 0));
  if (headRewritten) {
    return { intact: false, seq: last, id: null, problem: 'the chain head does not match the last row: the head was rewritten' };
  }
  if (anchor && anchor.seq > last) {
    return {
      intact: false,
      seq: last + 1,
      id: null,
      problem: `the anchored row ${anchor.seq} is missing: the log was cut back to ${last} rows and its head rewritten`,
    };
  }
  if (tail.unchained !== head.unchained) {
    return {
      intact: false,
      seq: 0,
      id: null,
      problem: `${tail.unchained} rows have no place in the chain, where ${head.unchained} were written before it began: rows were added or removed with the chain trigger off`,
    };
  }
  return { intact: true, rows: last, unchained: tail.unchained, head: { seq: last, hash: previous } };
}

/** `SEQ:HASH`, as verify prints a head. */
export function parseAnchor(text: string): ChainAnchor | undefined {
  const match = /^(\d+):([0-9a-f]{64})$/.exec(text.trim());
  return match ? { seq: Number(match[1]), hash: match[2] as string } : undefined;
}
