/**
 * Who may call the admin API (docs/admin.md, "Who may call it"), decided on every call:
 * - an admin: an access token of a live session whose user has the `admin` role *in the store*
 *   now. The role is never read from the token, so a revoke bites on the very next call, with
 *   whatever token the former admin still holds. With ADMIN_REQUIRE_2FA (the default) the session
 *   must also have passed a second factor (`aal2`, auth/mfa/), else 403 MFA_REQUIRED;
 * - an API key (`Bearer ak_…`, keys.ts) holding the procedure's scope. Procedures that manage
 *   admins and keys themselves (permission `admin`) take no key at all, so a leaked key cannot
 *   mint others or make an admin.
 * No credentials → 401; bad credentials → 401 (the token's own code, or INVALID_API_KEY); good
 * credentials without the permission → 403 FORBIDDEN. Every refusal is counted
 * (`admin_refusals_total`).
 */
import type { ErrorCode } from '@contracts/errors.js';
import { Counter, type Registry } from 'prom-client';
import { AppError, forbidden } from '../../common/errors.js';
import type { AccountRequest } from '../request.js';
import type { AccountDb } from '../store.js';
import { mfaRequired, type TokenService } from '../tokens/service.js';
import type { AuditActor } from '../events/audit.js';
import { isApiKey, verifyApiKey, type Scope } from './keys.js';

/** A scope an API key may hold, or `admin`: admins only, never a key. */
/** What every admin route can answer besides the token's own 401s: the refusals of this layer. */
export const REFUSALS = ['FORBIDDEN', 'INVALID_API_KEY', 'MFA_REQUIRED'] as const satisfies ErrorCode[];

export type AdminPermission = Scope | 'admin';

export interface AdminCaller {
  actor: AuditActor;
  /** The calling admin's user id (absent for a key): an admin cannot ban or delete themselves. */
  adminUserId?: string;
  ip: string;
}

export class AdminAccess {
  private readonly refusals: Counter<'reason' | 'credential'>;

  constructor(
    private readonly db: AccountDb,
    private readonly tokens: TokenService,
    registry: Registry,
    private readonly requireSecondFactor = true,
  ) {
    this.refusals = new Counter({
      name: 'admin_refusals_total',
      help: 'Admin API calls refused, by reason (unauthenticated: 401, forbidden: 403) and credential presented (none, token, api_key)',
      labelNames: ['reason', 'credential'],
      registers: [registry],
    });
  }

  async authorize(request: Pick<AccountRequest, 'authorization' | 'ip'>, permission: AdminPermission): Promise<AdminCaller> {
    const { authorization } = request;
    const credential = !authorization ? 'none' : isApiKey(authorization) ? 'api_key' : 'token';
    try {
      return credential === 'api_key' ? await this.byKey(authorization as string, permission, request.ip) : await this.byToken(authorization, request.ip);
    } catch (error) {
      this.refusals.inc({ reason: error instanceof AppError && error.status === 403 ? 'forbidden' : 'unauthenticated', credential });
      throw error;
    }
  }

  private async byKey(authorization: string, permission: AdminPermission, ip: string): Promise<AdminCaller> {
    const key = await verifyApiKey(this.db, authorization);
    if (permission === 'admin' || !key.scopes.includes(permission)) {
      throw forbidden(permission === 'admin' ? 'Only an admin may do this, not an API key' : `The API key lacks the scope ${permission}`);
    }
    return { actor: { type: 'api_key', id: key.id, label: key.name }, ip };
  }

  private async byToken(authorization: string | undefined, ip: string): Promise<AdminCaller> {
    const claims = await this.tokens.authenticate(authorization);
    const user = await this.db.user.findUnique({ where: { id: claims.userId }, select: { role: true, email: true } });
    if (user?.role !== 'admin') throw forbidden('This needs the admin role');
    if (this.requireSecondFactor && claims.aal !== 'aal2')
      throw mfaRequired('The admin role works only in a session that passed a second factor: enrol one on the Account page, then verify it at sign-in');
    return { actor: { type: 'user', id: claims.userId, label: user.email }, adminUserId: claims.userId, ip };
  }
}
