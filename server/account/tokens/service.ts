/**
 * Everything about the token pair that the routers need: open a session for a signed-in user,
 * refresh (rotate), log out one session or all of them, authenticate an access token, and raise a
 * session to `aal2` once its second factor passed (auth/mfa/).
 */
import { forbidden, unauthorized } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import type { SessionStore } from './sessions.js';
import type { SignedInUser } from '../users/identities.js';
import {
  readRefreshToken,
  signAccessToken,
  signRefreshToken,
  signTokenPair,
  tokenPair,
  verifyAccessToken,
  verifyRefreshToken,
  type AccessClaims,
  type Aal,
  type TokenIssuer,
  type TokenSubject,
} from './jwt.js';
import { promoteAdminEmails } from '../users/roles.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import type { ClientInfo } from '../events/activity.js';
import {
  createSession,
  elevateSession,
  refreshDigest,
  refreshRejected,
  revokeAllSessions,
  revokeIfStolen,
  revokeSession,
  rotateSession,
  SessionStatusCache,
  type SessionOrigin,
} from './sessions.js';
import { SessionUsage } from './usage.js';

/**
 * Access tokens already verified, by their exact text, until their `exp`: a token's signature
 * and claims cannot change, so re-verifying the same bytes on every call only burns CPU (an
 * Ed25519 verify is most of a protected call's cost). Revocation is still checked on every call
 * (SessionStatusCache). Bounded: cleared when full.
 */
class VerifiedAccessTokens {
  private readonly entries = new Map<string, { claims: AccessClaims; exp: number }>();

  constructor(private readonly maxEntries = 20_000) {}

  get(token: string, nowSeconds: number): AccessClaims | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.exp > nowSeconds) return entry.claims;
    this.entries.delete(token);
    return undefined;
  }

  set(token: string, claims: AccessClaims): void {
    const exp = expiryOf(token);
    if (exp === undefined) return;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(token, { claims, exp });
  }
}

/** `exp` of a token whose signature has been verified. */
function expiryOf(token: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof payload.exp === 'number' ? payload.exp : undefined;
  } catch {
    return undefined;
  }
}

/** Whom a verify endpoint attaches a new identity to (auth/sign-in.ts): the caller's account. */
export interface LinkTarget {
  userId: string;
  guest: boolean;
  /** The calling session's level: a method linked from an `aal2` session opens an `aal2` session of the same account. */
  aal?: Aal | undefined;
}

/** 403 MFA_REQUIRED: the session has one factor of two (auth/mfa/). */
export const mfaRequired = (detail = 'This session has not passed the second factor yet: POST /auth/mfa/verify first') => forbidden(detail, 'MFA_REQUIRED');

/** Which sessions `authenticate` lets through. */
export interface AuthenticateOptions {
  /** The request, whose use of the session is noted for the session list (usage.ts). */
  seen?: { readonly client: ClientInfo } | undefined;
  /** Also a session waiting for its second factor (`aal1`): only the second step itself (auth/mfa/). */
  firstFactorOnly?: boolean;
}

/** What a sign-in adds beyond the session (docs/admin.md). */
export interface SignInExtras {
  /** TOKEN_METADATA_CLAIM: access tokens carry the user's operator metadata under this claim. */
  metadataClaim?: string | undefined;
  /** ADMIN_EMAILS: a verified address listed here makes the account an admin when it signs in. */
  adminEmails?: readonly string[];
}

export class TokenService {
  readonly sessions: SessionStatusCache;
  readonly usage: SessionUsage;
  private readonly verified = new VerifiedAccessTokens();
  /**
   * Called after every sign-in's answer (each method, guests included, linking too; `created`: the
   * sign-in made the account): what should be ready before the user's first call. services.ts
   * starts their agent there.
   */
  signedIn: (user: { userId: string; created: boolean }) => void = () => {};

  constructor(
    private readonly store: SessionStore,
    readonly issuer: TokenIssuer,
    private readonly log: Logger,
    private readonly extras: SignInExtras = {},
  ) {
    this.sessions = new SessionStatusCache(store);
    this.usage = new SessionUsage(store, (error) => log.warn({ err: error }, 'writing session last-use failed'));
  }

  /**
   * Opens a session (403 USER_BANNED for a banned user: sessions.ts) and signs its pair; `aal` says
   * whether it waits for its second factor (`aal1`), in which case the caller starts nothing for it.
   */
  async startSession(user: Pick<SignedInUser, 'userId' | 'guest'>, origin: SessionOrigin): Promise<{ pair: TokenPair; aal: Aal | null }> {
    const { sessionId, generation, metadata, aal } = await createSession(this.store, user.userId, origin);
    if (this.extras.adminEmails?.length) await promoteAdminEmails(this.store.db, this.extras.adminEmails, user.userId);
    const pair = await signTokenPair(this.issuer, { userId: user.userId, sessionId, guest: user.guest, aal, metadata: this.metadataOf(metadata) }, generation);
    return { pair, aal };
  }

  /**
   * The session passed its second factor: it moves to `aal2` and gets a new pair (sessions.ts,
   * `elevateSession`); its earlier tokens keep their `aal1` claim, and its earlier refresh token
   * is spent.
   */
  async elevate(session: Pick<AccessClaims, 'userId' | 'sessionId'>): Promise<TokenPair> {
    const elevated = await elevateSession(this.store, session.sessionId, session.userId);
    if (!elevated) throw unauthorized('The session has ended', 'SESSION_REVOKED');
    this.sessions.markLevel([session.sessionId], 'aal2');
    const pair = await signTokenPair(
      this.issuer,
      { userId: session.userId, sessionId: session.sessionId, guest: elevated.guest, aal: 'aal2', metadata: this.metadataOf(elevated.metadata) },
      elevated.generation,
    );
    this.signedIn({ userId: session.userId, created: false });
    return pair;
  }

  private metadataOf(value: unknown): TokenSubject['metadata'] {
    return this.extras.metadataClaim ? { claim: this.extras.metadataClaim, value } : undefined;
  }

  /**
   * Rotation by digest (sessions.ts): a rotated session vouches for its current refresh token by
   * the token's SHA-256, so that token's signature is not verified again; any token no row
   * vouches for is verified before it can rotate a session without a digest or count as a reuse.
   */
  async refresh(refreshToken: string): Promise<TokenPair> {
    const claims = readRefreshToken(this.issuer, refreshToken);
    const neverRotated = claims.generation === 0;
    if (neverRotated) await verifyRefreshToken(this.issuer, refreshToken);
    const next = await signRefreshToken(this.issuer, claims, claims.generation + 1);
    const rotation = { ...claims, next: refreshDigest(next) };
    let outcome = await rotateSession(this.store, { ...rotation, presented: neverRotated ? null : refreshDigest(refreshToken) });
    if (!outcome.ok && !neverRotated) {
      await verifyRefreshToken(this.issuer, refreshToken);
      // A genuine token the row does not vouch for: the session was stored before digests were, or this is a reuse.
      outcome = await rotateSession(this.store, { ...rotation, presented: null });
    }
    if (!outcome.ok) {
      const theft = await revokeIfStolen(this.store, claims.sessionId, claims.generation);
      if (theft) {
        this.sessions.markRevoked([claims.sessionId]);
        this.log.warn({ sid: claims.sessionId, userId: claims.userId }, 'refresh token reused: session revoked');
      }
      throw refreshRejected(theft);
    }
    this.usage.noteActive(claims.userId);
    // The level is the session's (auth/mfa/): a refresh neither raises nor lowers it.
    const accessToken = await signAccessToken(this.issuer, { ...claims, guest: outcome.guest, aal: outcome.aal, metadata: this.metadataOf(outcome.metadata) });
    return tokenPair(accessToken, next);
  }

  /** Unknown, expired or already revoked tokens are fine: logout is idempotent (204 either way). */
  async logout(refreshToken: string): Promise<void> {
    let claims: Awaited<ReturnType<typeof verifyRefreshToken>>;
    try {
      claims = await verifyRefreshToken(this.issuer, refreshToken);
    } catch {
      return;
    }
    await revokeSession(this.store.db, claims.sessionId);
    this.sessions.markRevoked([claims.sessionId]);
  }

  async logoutAll(userId: string, client: ClientInfo): Promise<void> {
    this.sessions.markRevoked(await revokeAllSessions(this.store.db, userId, client));
  }

  /**
   * `Authorization: Bearer <access token>` of a live session, or 401; with the session's
   * assurance level in `aal`. A session waiting for its second factor is 403 MFA_REQUIRED unless
   * `firstFactorOnly` admits it (the second step only). The level is the token's claim when it has
   * one (an `aal1` token stays `aal1` after its session passed), else its session's, read with the
   * session's state (one cached statement: no extra query), so a session that had no level when
   * the account enrolled a factor elsewhere is held at `aal1` too.
   */
  async authenticate(authorization: string | undefined, options: AuthenticateOptions = {}): Promise<AccessClaims> {
    const token = /^Bearer ([\w-]+\.[\w-]+\.[\w-]+)$/.exec(authorization ?? '')?.[1];
    if (!token) throw unauthorized('Missing or malformed Authorization header', 'MISSING_TOKEN');
    let claims = this.verified.get(token, Date.now() / 1000);
    if (!claims) {
      claims = await verifyAccessToken(this.issuer, token);
      this.verified.set(token, claims);
    }
    const session = await this.sessions.status(claims.sessionId);
    if (!session.active) throw unauthorized('The session has ended', 'SESSION_REVOKED');
    const aal = claims.aal ?? session.aal ?? undefined;
    if (aal === 'aal1' && !options.firstFactorOnly) throw mfaRequired();
    if (options.seen) this.usage.note(claims.sessionId, options.seen);
    return aal === claims.aal ? claims : { ...claims, aal };
  }

  /**
   * Guest upgrade and linking (docs/api.md): a verify endpoint called with an access token
   * attaches the new identity to that account, a guest's or a full one's. No header → a plain
   * sign-in; an invalid or revoked token is refused rather than guessed at, and so is a session
   * still waiting for its second factor (403 MFA_REQUIRED).
   */
  async linkTarget(authorization: string | undefined): Promise<LinkTarget | undefined> {
    if (!authorization) return undefined;
    const claims = await this.authenticate(authorization);
    return { userId: claims.userId, guest: claims.guest, aal: claims.aal };
  }

  async close(): Promise<void> {
    await this.usage.close();
  }
}
