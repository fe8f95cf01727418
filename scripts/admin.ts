/**
 * The admin role and API keys from the command line (docs/admin.md), on the same store as the
 * account service (DATABASE_URL / DATA_DIR): works while the service is stopped, and on
 * PostgreSQL while it runs. Every change is in the audit log, by `npm run admin`.
 *   npm run admin -- grant <email or user id>
 *   npm run admin -- revoke <email or user id>
 *   npm run admin -- unban <email or user id>
 *   npm run admin -- key create --name NAME --scopes users:read,audit:read [--expires 2027-01-01]
 *   npm run admin -- audit verify [--anchor SEQ:HASH]   the audit log's hash chain: intact, or its first broken link
 */
import { parseArgs } from 'node:util';
import { CLI_ACTOR, recordAudit } from '../server/account/events/audit.js';
import { parseAnchor, verifyAuditChain } from '../server/account/events/audit-chain.js';
import { createApiKey, SCOPES, type Scope } from '../server/account/admin/keys.js';
import { findUserId, setRole } from '../server/account/users/roles.js';
import { unbanUser } from '../server/account/admin/users.js';
import { loadAccountConfig } from '../server/account/config.js';
import { openAccountStore } from '../server/account/store.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { name: { type: 'string' }, scopes: { type: 'string' }, expires: { type: 'string' }, anchor: { type: 'string' } },
});
const [command, arg] = positionals;
const usage = `usage: npm run admin -- grant|revoke|unban <email or user id> | key create --name NAME --scopes ${SCOPES.join(',')} [--expires ISO-DATE] | audit verify [--anchor SEQ:HASH]`;

// A malformed anchor is refused before the store opens: opening the embedded one costs seconds.
const anchor = values.anchor === undefined ? undefined : parseAnchor(values.anchor);
if (values.anchor !== undefined && !anchor) {
  console.error(`--anchor is SEQ:HASH as verify prints it, not ${values.anchor}`);
  process.exit(1);
}

const config = loadAccountConfig(process.env);
const store = await openAccountStore(config);

try {
  if ((command === 'grant' || command === 'revoke') && arg) {
    const userId = await findUserId(store.db, arg);
    if (!userId) throw new Error(`no account with the id or verified address ${arg}`);
    const changed = await setRole(store.db, userId, command === 'grant' ? 'admin' : 'user', CLI_ACTOR);
    console.log(`${arg} (${userId}) ${changed ? (command === 'grant' ? 'is now an admin' : 'is no longer an admin') : 'was already so: nothing changed'}`);
  } else if (command === 'unban' && arg) {
    // A banned admin's way back in, with the service running or not.
    const userId = await findUserId(store.db, arg);
    if (!userId) throw new Error(`no account with the id or verified address ${arg}`);
    await unbanUser({ store }, { actor: CLI_ACTOR, ip: null }, userId);
    console.log(`${arg} (${userId}) is not banned: they can sign in again`);
  } else if (command === 'key' && arg === 'create' && values.name && values.scopes) {
    const scopes = values.scopes.split(',').map((s) => s.trim());
    const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) throw new Error(`unknown scopes: ${unknown.join(', ')}\n${usage}`);
    const expiresAt = values.expires ? new Date(values.expires) : null;
    if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new Error(`--expires is not a date: ${values.expires}`);
    const { row, key } = await store.db.$transaction(async (tx) => {
      const created = await createApiKey(tx, { name: values.name as string, scopes: scopes as Scope[], expiresAt });
      await recordAudit(tx, {
        actor: CLI_ACTOR,
        action: 'key.create',
        target: { type: 'api_key', id: created.row.id },
        after: { name: created.row.name, scopes: created.row.scopes },
      });
      return created;
    });
    console.log(`created API key ${row.id} (${row.name}; ${row.scopes.join(' ')}). It is shown only now:\n${key}`);
  } else if (command === 'audit' && arg === 'verify') {
    const verdict = await verifyAuditChain(store.db, anchor);
    if (verdict.intact) {
      const before = verdict.unchained ? ` (and ${verdict.unchained} rows from before the chain, which it does not cover)` : '';
      // The last line is the head to keep elsewhere and pass back as --anchor (docs/security.md, "The audit log's hash chain").
      console.log(`audit log intact, ${verdict.rows} rows${before}\nhead ${verdict.head.seq}:${verdict.head.hash}`);
    } else {
      console.log(`audit log broken at row ${verdict.seq}${verdict.id ? ` (${verdict.id})` : ''}: ${verdict.problem}`);
      process.exitCode = 2;
    }
  } else {
    throw new Error(usage);
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await store.close();
}
