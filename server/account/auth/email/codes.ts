/**
 * E-mail sign-in codes (docs/api.md, "E-mail sign-in"). One row per request carries both secrets:
 * the link token (32 random bytes) and the 6-digit code. Rules:
 * - lifetime 10 minutes; single use, and a sign-in with one spends every other code and link of
 *   the address;
 * - a new request does not void the mails already sent: the newest 5 rows of an address stay
 *   valid for their 10 minutes and older ones are dropped. A stranger who asks for mail to
 *   someone's address only adds working codes to that inbox, never takes one away
 *   (docs/security.md, "E-mail codes: no lockout, no guessing");
 * - wrong codes do not kill a row (that let anyone void someone's live code with 5 guesses):
 *   guessing is bounded per address across all its codes, by the caller (ratelimit/policy.ts,
 *   admitCodeGuess), before a code is tried here;
 * - a code or link is consumed by one conditional UPDATE, so of two concurrent verifies of one
 *   code or link exactly one gets a row back.
 *
 * Only keyed hashes are stored: HMAC-SHA256 under a server key kept in the data directory
 * (`email-code-key`), never in the database. A 6-digit code has 20 bits of entropy, so an
 * unkeyed hash would fall to brute force in microseconds for anyone holding a database copy;
 * with the key outside the database, a leaked table alone reveals no live code or link.
 *
 * Plain functions with explicit inputs (db, key, now) so that tests can move time.
 */
import { createHmac, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AccountDb } from '../../store.js';

export const EMAIL_CODE_TTL_MS = 10 * 60 * 1000;
/** Mails of one address whose link and code work at once (the newest ones). */
export const LIVE_CODES_PER_ADDRESS = 5;

export interface EmailCodeConfig {
  /** HMAC key for tokens and codes (see loadEmailCodeKey). */
  key: Buffer;
  ttlMs?: number;
}

export interface IssuedEmailCode {
  token: string;
  code: string;
  expiresAt: Date;
}

/** Addresses are compared and stored lower-case and trimmed (the schema normalises the same way). */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

const hash = (key: Buffer, kind: 'token' | 'code', value: string) => createHmac('sha256', key).update(`${kind}\0${value}`).digest('base64url');
const tokenHash = (key: Buffer, token: string) => hash(key, 'token', token);
/** The address is part of the code's hash: a code only ever matches its own address. */
const codeHash = (key: Buffer, email: string, code: string) => hash(key, 'code', `${email}\0${code}`);

/**
 * Issues a fresh token and code for `email` (already normalised) and drops the rows of the
 * address older than the newest LIVE_CODES_PER_ADDRESS, in one statement (the DELETE sees the
 * rows as they were before the INSERT, so it keeps one fewer).
 * `requestedBy`: the signed-in account that asked, if any (docs/security.md, "Whose account a sign-in joins").
 */
export async function issueEmailCode(
  db: AccountDb,
  config: EmailCodeConfig,
  email: string,
  now = new Date(),
  requestedBy: string | null = null,
): Promise<IssuedEmailCode> {
  const token = randomBytes(32).toString('base64url');
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  const expiresAt = new Date(now.getTime() + (config.ttlMs ?? EMAIL_CODE_TTL_MS));
  await db.$executeRaw`
    WITH dropped AS (
      DELETE FROM email_codes WHERE email = ${email} AND id NOT IN (
        SELECT id FROM email_codes WHERE email = ${email} ORDER BY created_at DESC, id DESC LIMIT ${LIVE_CODES_PER_ADDRESS - 1}))
    INSERT INTO email_codes (id, email, token_hash, code_hash, requested_by, expires_at, created_at)
    VALUES (${randomUUID()}::uuid, ${email}, ${tokenHash(config.key, token)}, ${codeHash(config.key, email, code)}, ${requestedBy}::uuid, ${expiresAt}, ${now})`;
  return { token, code, expiresAt };
}

/**
 * A row is live when unused, unexpired and among the newest LIVE_CODES_PER_ADDRESS of its
 * address (requests racing can each insert before the other prunes; only the newest count).
 */
const LIVE = (alias: 'c') => `
      ${alias}.used_at IS NULL AND ${alias}.expires_at > $1
  AND (SELECT count(*) FROM email_codes AS newer
        WHERE newer.email = ${alias}.email AND (newer.created_at, newer.id) > (${alias}.created_at, ${alias}.id)) < ${LIVE_CODES_PER_ADDRESS}`;

/** A consumed code or link: the address it was issued for, and the account that asked for it (null: nobody signed in). */
export interface ConsumedEmailCode {
  email: string;
  requestedBy: string | null;
}

/**
 * The consuming UPDATE of one row (`where`), and in the same statement every other unused row of
 * its address: a sign-in spends all the mails of the address, so a code or link left in an inbox
 * (or read over someone's shoulder) opens nothing after the owner signed in with another.
 */
const SPEND = (where: string) => `
    WITH hit AS (
      UPDATE email_codes AS c SET used_at = $1 WHERE ${where} AND ${LIVE('c')}
      RETURNING c.id, c.email, c.requested_by),
    rest AS (
      UPDATE email_codes AS o SET used_at = $1
       WHERE o.email IN (SELECT email FROM hit) AND o.used_at IS NULL AND o.id NOT IN (SELECT id FROM hit))
    SELECT email, requested_by::text AS requested_by FROM hit`;

/** Consumes a link token (and every other code and link of its address); returns what it was issued for, or undefined. */
export async function consumeEmailToken(db: AccountDb, config: EmailCodeConfig, token: string, now = new Date()): Promise<ConsumedEmailCode | undefined> {
  const rows = await db.$queryRawUnsafe<Array<{ email: string; requested_by: string | null }>>(SPEND('c.token_hash = $2'), now, tokenHash(config.key, token));
  const row = rows[0];
  return row && { email: row.email, requestedBy: row.requested_by };
}

/**
 * Tries a code for `email` (already normalised) against the live rows of the address and
 * consumes the newest that matches, with every other code and link of the address. The guess is
 * counted by the caller first (admitCodeGuess). Two concurrent right answers cannot both win: the
 * UPDATE re-checks `used_at` on the row it waited for.
 */
export async function consumeEmailCode(
  db: AccountDb,
  config: EmailCodeConfig,
  email: string,
  code: string,
  now = new Date(),
): Promise<ConsumedEmailCode | undefined> {
  const rows = await db.$queryRawUnsafe<Array<{ email: string; requested_by: string | null }>>(
    SPEND('c.id = (SELECT m.id FROM email_codes AS m WHERE m.email = $2 AND m.code_hash = $3 ORDER BY m.created_at DESC, m.id DESC LIMIT 1)'),
    now,
    email,
    codeHash(config.key, email, code),
  );
  const row = rows[0];
  return row ? { email, requestedBy: row.requested_by } : undefined;
}

/**
 * Drops expired rows; returns how many. (Used rows stay until they expire: they still count
 * among the newest of their address, so a used mail never brings an older one back to life.)
 */
export async function sweepEmailCodes(db: AccountDb, now = new Date()): Promise<number> {
  return db.$executeRaw`DELETE FROM email_codes WHERE expires_at <= ${now}`;
}

/**
 * The HMAC key: 32 random bytes generated once into `file` (owner-only, written atomically).
 * Instances that share a database must share this file, as they share the signing keys.
 */
export async function loadEmailCodeKey(file: string): Promise<Buffer> {
  const read = () =>
    readFile(file, 'utf8').then(
      (text) => Buffer.from(text.trim(), 'base64url'),
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      },
    );
  let key = await read();
  if (!key) {
    await mkdir(path.dirname(file), { recursive: true });
    const temp = `${file}.${randomUUID()}.tmp`;
    await writeFile(temp, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
    await rename(temp, file);
    key = await read();
  }
  if (!key || key.length < 32) throw new Error(`${file}: expected at least 32 bytes of base64url key material`);
  return key;
}
