/**
 * What an operator does to users (docs/admin.md, "Users"). Every change is recorded in the audit
 * log with the record before and after.
 */
import { conflict } from '../../common/errors.js';
import type { AdminCaller } from './access.js';

/** An admin never bans, deletes or demotes their own account: the last admin would lock everyone out. */
export function selfActionRefused(caller: AdminCaller, userId: string): void {
  if (caller.adminUserId === userId) throw conflict('An admin cannot ban, delete or demote their own account', 'SELF_ACTION');
}
