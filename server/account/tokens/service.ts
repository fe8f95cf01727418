/**
 * Everything about the token pair that the routers need: open a session for a signed-in user,
 * refresh (rotate), log out one session or all of them, and authenticate an access token.
 */
import { unauthorized } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { AccountDb } from '../store.js';
import type { SignedInUser } from '../users/identities.js';
import { signTokenPair, verifyAccessToken, verifyRefreshToken, type AccessClaims, type TokenIssuer, type TokenPair } from './jwt.js';
import { createSession, refreshRejected, revokeAllSessions, revokeSession, rotateSession, SessionStatusCache } from './sessions.js';

export class TokenService {
  readonly sessions: SessionStatusCache;

  constructor(
    private readonly db: AccountDb,
    readonly issuer: TokenIssuer,
    private readonly log: Logger,
  ) {
    this.sessions = new SessionStatusCache(db);
  }

  async startSession(user: Pick<SignedInUser, 'userId' | 'guest'>): Promise<TokenPair> {
    const { sessionId, generation } = await createSession(this.db, user.userId);
    return signTokenPair(this.issuer, { userId: user.userId, sessionId, guest: user.guest }, generation);
  }

  async refresh(refreshToken: string): Promise<TokenPair> {
    const claims = await verifyRefreshToken(this.issuer, refreshToken);
    const outcome = await rotateSession(this.db, claims.sessionId, claims.userId, claims.generation);
    if (!outcome.ok) {
      if (outcome.theft) {
        this.sessions.markRevoked([claims.sessionId]);
        this.log.warn({ sid: claims.sessionId, userId: claims.userId }, 'refresh token reused: session revoked');
      }
      throw refreshRejected(outcome.theft);
    }
    return signTokenPair(this.issuer, { userId: claims.userId, sessionId: claims.sessionId, guest: outcome.guest }, outcome.generation);
  }

  /** Unknown, expired or already revoked tokens are fine: logout is idempotent (204 either way). */
  async logout(refreshToken: string): Promise<void> {
    const claims = await verifyRefreshToken(this.issuer, refreshToken).catch(() => undefined);
    if (!claims) return;
    await revokeSession(this.db, claims.sessionId);
    this.sessions.markRevoked([claims.sessionId]);
  }

  async logoutAll(userId: string): Promise<void> {
    this.sessions.markRevoked(await revokeAllSessions(this.db, userId));
  }

  /** `Authorization: Bearer <access token>` of a live session, or 401. */
  async authenticate(authorization: string | undefined): Promise<AccessClaims> {
    const token = /^Bearer ([\w-]+\.[\w-]+\.[\w-]+)$/.exec(authorization ?? '')?.[1];
    if (!token) throw unauthorized('Missing or malformed Authorization header', 'MISSING_TOKEN');
    const claims = await verifyAccessToken(this.issuer, token);
    if (!(await this.sessions.isActive(claims.sessionId))) throw unauthorized('The session has ended', 'SESSION_REVOKED');
    return claims;
  }

  /**
   * Guest upgrade (design.md): sign-in endpoints accept the guest's access token. No header →
   * no upgrade; a valid non-guest token is ignored; an invalid one is refused rather than guessed at.
   */
  async guestToUpgrade(authorization: string | undefined): Promise<string | undefined> {
    if (!authorization) return undefined;
    const claims = await this.authenticate(authorization);
    return claims.guest ? claims.userId : undefined;
  }
}
